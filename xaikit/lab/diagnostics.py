"""Wiegreffe & Pinter's diagnostic: does a model's attention carry task information a context-free model can
use? (notebook 06, section 4, "Wiegreffe & Pinter: attention as a guide for a model without context").

Wiegreffe & Pinter (2019, "Attention is not not Explanation", EMNLP, section 4 and Table 3) answer Jain &
Wallace's permutations with a *diagnostic model*: a classifier that sees every token on its own, with no
access to its neighbours, and pools the tokens with weights imposed from outside. If the trained model's
attention weights help such a model more than uniform weights do, they say something about which tokens
matter that does not depend on the rest of the trained model. The diagnostic here:

* **token encoder** (non-contextual): the classifier's own word embeddings e_t, frozen, then one trained
  layer h_t = tanh(W e_t + b) per token;
* **pooling** with weights alpha over the word tokens: c = sum_t alpha_t h_t / sum_t alpha_t, where alpha is
  (a) **uniform** (the plain mean), (b) the **model's attention** (by default the last layer's [CLS] row,
  mean of the heads, renormalised over the word tokens; see :func:`diagnostic_data`), or (c) **learned** by
  the diagnostic itself (alpha = softmax_t(v . h_t), trained with everything else, Wiegreffe & Pinter's
  "trained MLP");
* **classifier**: logits = U c + u.

Only the weights differ between (a), (b) and (c): same data, same seed, same training. [CLS] and [SEP]
are left out of the pooling: without context their embeddings are the same for every sentence, so weight
on them only scales the word tokens down.

:func:`diagnostic_data` reads the model's attention for a set of sentences (one forward pass, batched,
cached on disk), :func:`run_diagnostic` runs the whole comparison over several training seeds and returns a
:class:`DiagnosticResult`. The diagnostic model itself (:func:`pool`, :class:`DiagnosticMLP`,
:func:`train_diagnostic`) is :mod:`xaikit.lab.diagnostic_model`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from xaikit._fn import inputs_to_model, to_cpu
from xaikit._text_input import Tokenizer, check_model, check_texts, max_tokens
from xaikit._validate import bool_flags, check_choice, check_float, check_int
from xaikit.lab.diagnostic_model import (  # noqa: F401 - the model's names, reachable from the experiment
    WEIGHTINGS,
    DiagnosticMLP,
    _class_labels,
    _scores,
    _train_stacked,
    evaluate_diagnostic,
    pool,
    train_diagnostic,
)
from xaikit.models.arch import check_layer
from xaikit.policies import method_threads

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["WEIGHTINGS", "pool", "DiagnosticMLP", "DiagnosticData", "diagnostic_data", "train_diagnostic",
           "evaluate_diagnostic", "DiagnosticResult", "run_diagnostic", "notebook_sentences", "warm_notebook_cache"]


# ------------------------------------------------------------------------------- the model's attention

@dataclass
class DiagnosticData:
    """Sentences ready for the diagnostic: token ids ``(N, T)`` padded, ``mask`` ``(N, T)`` True at the word
    tokens (not [CLS], [SEP] or padding), ``labels`` ``(N,)``, the model's ``attention`` ``(N, T)`` (the chosen
    layer's [CLS] row, mean of the heads, renormalised over the word tokens; 0 elsewhere) and the model's own
    predictions ``predicted`` ``(N,)``. All on the CPU."""

    texts: list[str]
    ids: torch.Tensor
    mask: torch.Tensor
    labels: torch.Tensor
    attention: torch.Tensor
    predicted: torch.Tensor
    layer: int

    def __len__(self) -> int:
        return len(self.texts)

    def weights(self, weighting: str) -> torch.Tensor | None:
        """The pooling weights ``(N, T)`` of one of :data:`WEIGHTINGS` (``None`` for "learned")."""
        check_choice(weighting, "weighting", WEIGHTINGS)
        if weighting == "uniform":
            return self.mask.float()
        return self.attention if weighting == "model attention" else None


@bool_flags
def diagnostic_data(model: torch.nn.Module, tokenizer: Tokenizer, pairs: Sequence[tuple[str, int]],
                    layer: int = -1, batch_size: int = 64, progress: bool = False,
                    cache: bool = False) -> DiagnosticData:
    """Tokenize ``(sentence, label)`` pairs and read the model's attention for each, in one batched forward pass.

    The attention is the ``layer``'s [CLS] row, mean of the heads: in the last layer (the default) it is the
    one distribution over the tokens that forms what the classification head reads, the transformer's
    counterpart of the single attention layer of Wiegreffe & Pinter's LSTMs. It is renormalised over the
    word tokens (the pooling leaves [CLS] and [SEP] out). Sentences of similar length share a batch;
    padding changes nothing (the mask drops it). Notebook 06, section 4.

    ``cache=True`` keeps the result on disk in ``xaikit.cache_dir()/diagnostics/`` (:mod:`xaikit.policies`),
    keyed by the sentences, labels, layer, tokenizer and a fingerprint of every weight of the model (so a
    model trained further, or cast to another dtype, reads its own attention again): thousands of
    sentences cost half a minute of forward passes on a busy CPU, a cached set a fraction of a second.
    """
    if cache:
        return _cached(model, tokenizer, pairs, layer, batch_size, progress)
    return _diagnostic_data(model, tokenizer, pairs, layer, batch_size, progress)


def _fingerprint(model) -> str:
    """A fingerprint of the weights: SHA-256 of every byte of every parameter and buffer, with names, shapes
    and dtypes (one edited value changes it; half a second for MiniLM's 90 MB)."""
    import hashlib

    h = hashlib.sha256()
    with torch.no_grad():
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            t = t.detach().cpu().contiguous()
            h.update(f"{name}|{tuple(t.shape)}|{t.dtype}|".encode())
            h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def _cache_key(model, tokenizer, pairs, layer: int, prints=None) -> str:
    """The attention cache's key; ``prints``: the model's :func:`_fingerprint` if taken already (a second
    set of sentences for the same weights need not hash every weight again)."""
    import hashlib
    import json

    prints = _fingerprint(model) if prints is None else prints
    # what the attention depends on: the weights, the tokenizer's vocabulary and the sentences. No path: a
    # model loaded from a cache that moved (XAIKIT_CACHE) is the same model and finds its attention again.
    vocab = hashlib.sha256(json.dumps(sorted(tokenizer.get_vocab().items())).encode()).hexdigest()
    what = {"model": type(model).__name__, "dtype": str(model.dtype), "layer": layer, "weights": prints,
            "tokenizer": [type(tokenizer).__name__, vocab, bool(getattr(tokenizer, "do_lower_case", True))],
            "pairs": [[t, int(y)] for t, y in pairs], "version": 3}
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:24]


def _cached(model, tokenizer, pairs, layer, batch_size, progress, prints=None) -> DiagnosticData:
    """:func:`_diagnostic_data` through the model cache's safety net (:func:`xaikit.models.cache.ensure`): a
    folder per key with a checksum manifest, built under a lock in a temporary folder renamed into place, so a
    half-written or damaged file is detected and rebuilt, never loaded."""
    from xaikit._config import cache_dir
    from xaikit.models import cache

    check_model(model, tokenizer, "diagnostic_data")
    layer = check_layer(model, layer)
    folder = cache_dir() / "diagnostics" / f"attention-{_cache_key(model, tokenizer, _check_pairs(pairs), layer, prints)}"
    built: list[DiagnosticData] = []

    def build(tmp):
        data = _diagnostic_data(model, tokenizer, pairs, layer, batch_size, progress)
        torch.save({"texts": data.texts, "ids": data.ids.int(), "mask": data.mask, "labels": data.labels,
                    "attention": data.attention, "predicted": data.predicted, "layer": data.layer},
                   tmp / _ATTENTION_FILE)
        built.append(data)

    folder = cache.ensure(folder, build, required=(_ATTENTION_FILE,), what="attention cache", progress=progress)
    if built:
        return built[0]
    d = torch.load(folder / _ATTENTION_FILE, weights_only=True)
    return DiagnosticData(d["texts"], d["ids"].long(), d["mask"], d["labels"], d["attention"], d["predicted"],
                          d["layer"])


_ATTENTION_FILE = "attention.pt"


def _check_pairs(pairs) -> list[tuple[str, int]]:
    if isinstance(pairs, (str, tuple)) or not isinstance(pairs, list) or not pairs:
        raise ValueError("pairs must be a non-empty list of (sentence, label) pairs, e.g. "
                         "xaikit.models.sentiment.load_movie_reviews('test')")
    if not all(isinstance(p, (tuple, list)) and len(p) == 2 for p in pairs):
        raise ValueError("pairs must hold (sentence, label) pairs; got an item that is not a pair")
    texts = check_texts([p[0] for p in pairs], "pairs' sentences")
    return [(t, check_int(p[1], "label", 0)) for t, p in zip(texts, pairs, strict=True)]


def _diagnostic_data(model, tokenizer, pairs, layer, batch_size, progress) -> DiagnosticData:
    from tqdm.auto import tqdm

    pairs = _check_pairs(pairs)
    texts = [t for t, _ in pairs]
    labels = torch.tensor([y for _, y in pairs])  # (N,)
    check_model(model, tokenizer, "diagnostic_data")
    layer = check_layer(model, layer)
    batch_size = check_int(batch_size, "batch_size", 1)
    limit = max_tokens(model, tokenizer)
    special = torch.tensor(sorted(set(getattr(tokenizer, "all_special_ids", []) or [])), dtype=torch.long)
    encoded = tokenizer(texts, truncation=True, max_length=limit)["input_ids"]
    T = max(len(e) for e in encoded)
    N = len(texts)
    pad = getattr(tokenizer, "pad_token_id", None) or 0
    ids = torch.full((N, T), int(pad), dtype=torch.long)  # (N, T)
    attention = torch.zeros(N, T)  # (N, T)
    predicted = torch.zeros(N, dtype=torch.long)  # (N,)
    order = sorted(range(N), key=lambda i: len(encoded[i]))  # similar lengths together: little padding
    batches = [order[s:s + batch_size] for s in range(0, N, batch_size)]
    with method_threads(model, heavy=True), torch.no_grad():  # thousands of sentences
        for rows in tqdm(batches, desc="attention", disable=not progress):
            width = max(len(encoded[i]) for i in rows)
            b_ids = torch.full((len(rows), width), int(pad), dtype=torch.long)  # (b, width)
            b_mask = torch.zeros(len(rows), width, dtype=torch.long)  # (b, width)
            for j, i in enumerate(rows):
                b_ids[j, :len(encoded[i])] = torch.tensor(encoded[i])
                b_mask[j, :len(encoded[i])] = 1
            inputs = {"input_ids": b_ids, "attention_mask": b_mask, "token_type_ids": torch.zeros_like(b_ids)}
            if "token_type_ids" not in getattr(tokenizer, "model_input_names", ("token_type_ids",)):
                inputs.pop("token_type_ids")
            out = model(**inputs_to_model(model, inputs), output_attentions=True)
            a = to_cpu(out.attentions[layer]).float()[:, :, 0, :].mean(1)  # (b, width): [CLS] row, mean of heads
            ids[rows, :width] = b_ids
            attention[rows, :width] = a
            predicted[rows] = to_cpu(out.logits).argmax(-1)
    mask = (ids.unsqueeze(-1) != special).all(-1) if special.numel() else torch.ones_like(ids, dtype=torch.bool)
    mask &= torch.arange(T) < torch.tensor([len(e) for e in encoded])[:, None]  # (N, T): word tokens only
    attention = torch.where(mask, attention, torch.zeros_like(attention))
    total = attention.sum(-1, keepdim=True)
    attention = torch.where(total > 0, attention / total.clamp_min(1e-30), mask.float() / mask.sum(-1, keepdim=True).clamp_min(1))
    return DiagnosticData(texts, ids, mask, labels, attention, predicted, layer)


# ---------------------------------------------------------------------------------------- the comparison

@dataclass
class DiagnosticResult:
    """Held-out accuracy and macro-F1 of the diagnostic per training seed (rows) and weighting (columns,
    :data:`WEIGHTINGS`), and the transformer's own accuracy on the same sentences. Notebook 06, section 4."""

    weightings: tuple[str, ...]
    seeds: tuple[int, ...]
    accuracy: np.ndarray  # (seeds, weightings)
    f1: np.ndarray  # (seeds, weightings)
    model_accuracy: float
    layer: int
    n_train: int
    n_test: int
    seconds: float

    def column(self, weighting: str, metric: str = "accuracy") -> np.ndarray:
        """One weighting's scores, one per seed."""
        check_choice(weighting, "weighting", self.weightings)
        check_choice(metric, "metric", ("accuracy", "f1"))
        return getattr(self, metric)[:, self.weightings.index(weighting)]

    def gain(self, a: str = "model attention", b: str = "uniform", metric: str = "accuracy") -> np.ndarray:
        """Per seed, how much weighting ``a`` beats ``b`` (same seed, same data)."""
        return self.column(a, metric) - self.column(b, metric)

    def table(self) -> str:
        """The per-seed table as text, one row per seed, then the mean."""
        width = [max(len(w) + 6, 10) for w in self.weightings]
        head = f"{'seed':>6} " + "".join(f"{w + ' acc':>{n}}{'F1':>7}" for w, n in zip(self.weightings, width, strict=True))
        rows = [head]
        for i, s in enumerate(self.seeds):
            rows.append(f"{s:>6} " + "".join(f"{self.accuracy[i, j]:{n}.3f}{self.f1[i, j]:7.3f}"
                                            for j, n in enumerate(width)))
        rows.append(f"{'mean':>6} " + "".join(f"{self.accuracy[:, j].mean():{n}.3f}{self.f1[:, j].mean():7.3f}"
                                              for j, n in enumerate(width)))
        return "\n".join(rows)

    def plot(self, ax: Axes, metric: str = "accuracy") -> Axes:
        """One dot per seed for each weighting, the seeds joined by thin lines, the transformer's own accuracy
        and chance as reference lines."""
        from xaikit.plotting import OKABE_ITO

        values = getattr(self, check_choice(metric, "metric", ("accuracy", "f1")))
        x = np.arange(len(self.weightings))
        for i in range(len(self.seeds)):
            ax.plot(x, values[i], color="0.75", lw=0.8, zorder=1)
            for j in x:
                ax.scatter(j, values[i, j], color=OKABE_ITO[j % len(OKABE_ITO)], s=30, zorder=2,
                           label=self.weightings[j] if i == 0 else None)
        if metric == "accuracy":
            ax.axhline(self.model_accuracy, color=OKABE_ITO[7], ls="--", lw=1,
                       label=f"the transformer itself ({self.model_accuracy:.2f})")
        ax.axhline(0.5, color="0.5", ls=":", lw=1, label="chance")
        ax.set_xticks(x, [f"{w}\n(mean {values[:, j].mean():.3f})" for j, w in enumerate(self.weightings)])
        ax.set(ylabel=f"held-out {metric}", xlim=(-0.5, len(x) - 0.5),
               title=f"Diagnostic model, {len(self.seeds)} training seeds (Wiegreffe & Pinter 2019)")
        ax.legend(fontsize="small", loc="lower right")
        return ax


@bool_flags
def run_diagnostic(model: torch.nn.Module, tokenizer: Tokenizer, train_pairs: Sequence[tuple[str, int]],
                   test_pairs: Sequence[tuple[str, int]], seeds: int | Sequence[int] = (0, 1, 2),
                   weightings: Sequence[str] = WEIGHTINGS,
                   layer: int = -1, hidden: int = 64, epochs: int = 8, lr: float = 3e-3, batch_size: int = 64,
                   progress: bool = True, cache: bool = True, controls: dict | None = None) -> DiagnosticResult:
    """Wiegreffe & Pinter's diagnostic (2019, section 4, Table 3) on a transformer classifier: train the
    context-free :class:`DiagnosticMLP` on ``train_pairs`` with each weighting, once per seed, and score it on
    ``test_pairs``. The model's attention is read once (:func:`diagnostic_data`, kept on disk with
    ``cache=True``); every seed and weighting trains on the same data. Notebook 06, section 4.

    ``controls``: other models that share the tokenizer, by name (e.g. ``{"pretrained": encoder}``, the
    encoder before fine-tuning); each adds the weighting ``"<name> attention"``, read the same way.
    """
    seeds = tuple(check_int(s, "seeds[i]", 0) for s in (seeds if isinstance(seeds, (list, tuple)) else [seeds]))
    hidden, epochs = check_int(hidden, "hidden", 1), check_int(epochs, "epochs", 1)
    batch_size, lr = check_int(batch_size, "batch_size", 1), check_float(lr, "lr", 0.0, strict_min=True)
    if not seeds:
        raise ValueError("seeds is empty; pass at least one training seed, e.g. seeds=(0, 1, 2)")
    weightings = tuple(check_choice(w, "weightings[i]", WEIGHTINGS) for w in weightings)
    controls = dict(controls or {})
    if not all(isinstance(k, str) and k for k in controls):
        raise ValueError("controls must map a name (a str, e.g. 'pretrained') to a model that shares the tokenizer")
    for name, other in controls.items():  # before any forward pass, so the error names the entry
        if not isinstance(other, torch.nn.Module) or not callable(getattr(other, "get_input_embeddings", None)):
            raise TypeError(f"controls[{name!r}] must be a transformers model that shares the tokenizer (e.g. "
                            f"xaikit.models.sentiment.pretrained_encoder()); got {type(other).__name__}")
    start = time.perf_counter()

    prints = {}  # the train and test sets of one model share its weights' fingerprint, taken once

    def data(m, pairs):
        if not cache:
            return diagnostic_data(m, tokenizer, pairs, layer, progress=progress)
        check_model(m, tokenizer, "diagnostic_data")
        if id(m) not in prints:
            prints[id(m)] = _fingerprint(m)
        return _cached(m, tokenizer, pairs, layer, 64, progress, prints[id(m)])

    train, test = data(model, train_pairs), data(model, test_pairs)
    weights = {w: (train.weights(w), test.weights(w)) for w in weightings}
    for name, other in controls.items():
        a, b = data(other, train_pairs), data(other, test_pairs)
        if not (torch.equal(a.ids, train.ids) and torch.equal(b.ids, test.ids)):
            raise ValueError(f"controls[{name!r}] reads other token ids: pass models that share the tokenizer")
        weights[f"{name} attention"] = (a.attention, b.attention)
    weightings = tuple(weights)
    embedding = model.get_input_embeddings().weight
    n_classes = int(model.config.num_labels)
    for name, data in (("train_pairs", train), ("test_pairs", test)):
        if int(data.labels.max()) >= n_classes:  # the model's accuracy on them would mean nothing
            raise ValueError(f"{name} hold label {int(data.labels.max())}, but the model has {n_classes} classes "
                             f"(0..{n_classes - 1}); pass labels the model predicts, e.g. "
                             f"xaikit.models.sentiment.load_movie_reviews('test')")
    # every (seed, weighting) pair at once: the same numbers as train_diagnostic and evaluate_diagnostic per
    # pair (tests/test_diagnostics.py compares them), in a fraction of the time
    logits = _train_stacked(embedding, train, test, weights, seeds, hidden, epochs, lr, batch_size, n_classes,
                            progress)
    acc, f1 = np.zeros((len(seeds), len(weightings))), np.zeros((len(seeds), len(weightings)))
    for i in range(len(seeds)):
        for j in range(len(weightings)):
            scores = _scores(logits[i, j].argmax(-1).numpy(), test.labels.numpy(), n_classes)
            acc[i, j], f1[i, j] = scores["accuracy"], scores["f1"]
    model_acc = float((test.predicted == test.labels).float().mean())
    return DiagnosticResult(weightings, seeds, acc, f1, model_acc, train.layer, len(train), len(test),
                            time.perf_counter() - start)


# ------------------------------------------------------------------------------------- notebook 06's sets

@bool_flags
def notebook_sentences(fast: bool | None = None) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """Notebook 06 section 4's ``(train_pairs, test_pairs)``: training sentences drawn once with
    ``random.Random(0)`` (the same for every diagnostic seed) and the first held-out movie sentences;
    2,000 and 500, or 1,000 and 400 in fast mode (``fast=None``: :func:`xaikit.fast_mode`)."""
    import random

    from xaikit._config import fast_mode
    from xaikit.models.sentiment import load_movie_reviews, training_pairs

    fast = fast_mode() if fast is None else bool(fast)
    n_train, n_test = (1000, 400) if fast else (2000, 500)
    train = random.Random(0).sample(training_pairs(progress=False), n_train)
    return train, load_movie_reviews("test", progress=False)[:n_test]


@bool_flags
def warm_notebook_cache(progress: bool = True, fast: bool | None = None, seed: int | None = None) -> Path:
    """Read the attention that notebook 06's section 4 needs (the embedded model's and the pretrained
    encoder's, on :func:`notebook_sentences`) into the disk cache, so the notebook's first run after
    ``python -m xaikit prepare`` trains its diagnostics at once instead of spending half a minute on forward
    passes. ``seed``: the training seed of the embedded model (default: the cache's). Called by ``prepare``;
    returns the cache folder."""
    import os

    from xaikit._config import SEED_ENV, cache_dir
    from xaikit.models import load_sentiment
    from xaikit.models.sentiment import pretrained_encoder

    saved = os.environ.get(SEED_ENV)
    if seed is not None:  # prepare --seed N records N only at its end
        os.environ[SEED_ENV] = str(check_int(seed, "seed", 0))
    try:
        model, tokenizer = load_sentiment("embedded", cache=False)
    finally:
        if saved is None:
            os.environ.pop(SEED_ENV, None)
        else:
            os.environ[SEED_ENV] = saved
    train, test = notebook_sentences(fast)
    for m in (model, pretrained_encoder()):
        prints = _fingerprint(m)
        for pairs in (train, test):
            _cached(m, tokenizer, pairs, -1, 64, progress, prints)
    return cache_dir() / "diagnostics"
