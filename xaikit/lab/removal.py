"""Removing words from a sentence, two ways, and what the classifier does then (notebook 06, sections 2 and 6):
the experiments of the faithfulness lab (:mod:`xaikit.lab.faithfulness`) one sentence at a time.

Only word tokens are ranked and removed; [CLS] and [SEP] always stay. A token is removed in one of two ways,
and the two are different experiments:

* **Erasure in one attention layer** (Serrano & Smith 2019, "Is Attention Interpretable?", ACL): the token's
  attention weight is set to zero in the one attention layer whose weights gave the ranking, in every head,
  and each row is renormalised to sum to 1; every other layer runs as it is (:mod:`xaikit.lab.editing`).
  The token stays in the input, and the layers below have already mixed it into every position.
* **Deletion** (as in ERASER, DeYoung et al. 2020): the token is deleted from the input ids and the tokens
  after it move up one position, so no layer ever sees it.

:func:`erasure` (the most attended word against a random one: Jensen-Shannon divergence, base 2, and
decision flips), :func:`flip_fraction` (words removed before the decision flips), :func:`aopc` (ERASER's
comprehensiveness and sufficiency) and :func:`permutation_change` (Jain & Wallace 2019, "Attention is not
Explanation": shuffled attention weights). ``enc`` is a prepared text
(:func:`xaikit._text_input.prepare_text`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from xaikit._fn import inputs_to_model
from xaikit._text_input import PreparedText, Tokenizer
from xaikit._validate import check_choice, check_fraction, check_int
from xaikit.lab.editing import run_edited
from xaikit.models.arch import embeddings_module, encoder_layers
from xaikit.models.hooks import forward_hooks
from xaikit.text.tokens import TokenScores

__all__ = ["ERASER_BINS", "js_divergence", "content_positions", "Erasure", "erasure", "flip_fraction", "aopc",
           "PermutationChange", "permutation_change"]

#: ERASER's bins for the area over the perturbation curve: 1, 5, 10, 20 and 50% of the words.
ERASER_BINS = (0.01, 0.05, 0.1, 0.2, 0.5)


class _Keyed:
    """``result["field"]`` reads a field, as the dicts these results once were."""

    def __getitem__(self, key: str):
        if key not in self.__dataclass_fields__:
            raise KeyError(key)
        return getattr(self, key)


@dataclass(frozen=True)
class Erasure(_Keyed):
    """Serrano & Smith's single-item erasure of one sentence: the most attended word (position ``top``)
    against a random other word (``random``), each erased alone; the Jensen-Shannon divergences (bits) of
    the outputs from the unedited ones, whether each flips the decision, and attention(top) - attention(random)."""

    top: int
    random: int
    js_top: float
    js_random: float
    flip_top: bool
    flip_random: bool
    attention_gap: float


@dataclass(frozen=True)
class PermutationChange(_Keyed):
    """Jain & Wallace's permutation of one sentence: the median total variation distance of the outputs
    over the shuffles, and the share of the shuffles that flip the decision."""

    median_tvd: float
    flips: float


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence in bits between rows of ``p`` and ``q`` (probabilities, last axis)."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    for name, rows in (("p", p), ("q", q)):  # logits give NaN (log of a negative): refuse them by name
        sums = rows.sum(-1) if rows.ndim else rows
        if rows.ndim == 0 or not np.isfinite(rows).all() or (rows < -1e-9).any() or np.abs(sums - 1).max() > 1e-6:
            raise ValueError(f"js_divergence: {name} must hold probability rows (non-negative, each summing to 1 "
                             f"over the last axis); got values in [{np.nanmin(rows):.4g}, {np.nanmax(rows):.4g}] "
                             f"and row sums up to {np.nanmax(np.abs(sums)):.4g}. Pass softmax(logits), not logits")
    m = 0.5 * (p + q)

    def kl(a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a > 0, a * np.log2(a / b), 0.0).sum(axis=-1)

    return 0.5 * kl(p, m) + 0.5 * kl(q, m)


def content_positions(enc: PreparedText, tokenizer: Tokenizer) -> list[int]:
    """Positions of the word tokens (not [CLS], [SEP], padding)."""
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    ids = enc.inputs["input_ids"][0].tolist()
    return [i for i, t in enumerate(ids) if t not in special]


def _probs_erased(model, enc, masks: torch.Tensor, layer: int) -> np.ndarray:
    """Output probabilities ``(B, C)`` with the tokens of each mask row ``(B, N)`` erased from the attention of
    ``layer`` alone (Serrano & Smith): their weights zeroed in every head and row, the rows renormalised."""
    masks, back = torch.unique(masks.cpu(), dim=0, return_inverse=True)  # rankings share rows: each runs once
    with _rows_from(model, (layer,), masks.shape[0]):
        logits = run_edited(model, dict(enc.inputs), remove=masks, layers=(layer,))
    return torch.softmax(logits.cpu().double(), dim=-1).numpy()[back.numpy()]


def _probs_deleted(model, enc, masks: torch.Tensor, pad_id: int, batch_size: int = 64) -> np.ndarray:
    """Output probabilities ``(B, C)`` with the tokens of each mask row ``(B, N)`` deleted from the input ids
    (the rest move up). Rows of similar length share a batch, padded to its longest and masked as padding."""
    masks, back = torch.unique(masks.cpu(), dim=0, return_inverse=True)  # rankings share rows: each runs once
    ids = enc.inputs["input_ids"][0].cpu()  # (N,)
    kept = [ids[~row] for row in masks]
    order = sorted(range(len(kept)), key=lambda r: len(kept[r]))  # short rows together: little padding
    probs = np.zeros((len(kept), int(enc.logits.shape[-1])))
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        width = max(len(kept[r]) for r in rows)
        input_ids = torch.full((len(rows), width), int(pad_id), dtype=ids.dtype)  # (b, width)
        attention_mask = torch.zeros(len(rows), width, dtype=torch.long)  # (b, width)
        for i, r in enumerate(rows):
            input_ids[i, :len(kept[r])] = kept[r]
            attention_mask[i, :len(kept[r])] = 1
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if "token_type_ids" in enc.inputs:
            inputs["token_type_ids"] = torch.zeros_like(input_ids)
        with torch.no_grad():
            logits = model(**inputs_to_model(model, inputs)).logits  # (b, C)
        probs[rows] = torch.softmax(logits.cpu().double(), dim=-1).numpy()
    return probs[back.numpy()]


def _pad_id(model, tokenizer) -> int:
    pad = getattr(tokenizer, "pad_token_id", None)
    pad = getattr(model.config, "pad_token_id", None) if pad is None else pad
    return 0 if pad is None else int(pad)


def _order(scores: TokenScores, positions: list[int]) -> list[int]:
    """Word positions from most to least important (by |score| if signed)."""
    s = np.abs(scores.scores) if scores.signed else scores.scores
    return sorted(positions, key=lambda i: -s[i])


def _cumulative_masks(order: list[int], n: int, keep_instead: bool = False,
                      ks=None, positions=None) -> torch.Tensor:
    ks = list(range(1, len(order) + 1)) if ks is None else ks
    masks = torch.zeros(len(ks), n, dtype=torch.bool)
    for row, k in enumerate(ks):
        if keep_instead:
            masks[row, [p for p in positions if p not in order[:k]]] = True
        else:
            masks[row, order[:k]] = True
    return masks


def _first_flip(probs: np.ndarray, pred: int, n_words: int) -> tuple[float, bool]:
    """Fraction of the words removed at the first row whose decision differs from ``pred`` (1.0, False: never)."""
    flips = np.nonzero(probs.argmax(-1) != pred)[0]
    if len(flips) == 0:
        return 1.0, False
    return (int(flips[0]) + 1) / n_words, True


def _bin_sizes(bins, n_words: int) -> list[int]:
    """Words removed at each bin: ``ceil(k * n_words)``, at least one (ERASER's scorer)."""
    return [max(1, math.ceil(b * n_words)) for b in bins]


def flip_fraction(model: torch.nn.Module, enc: PreparedText, tokenizer: Tokenizer, scores: TokenScores,
                  how: str = "erase", layer: int = -1) -> tuple[float, bool]:
    """Fraction of the words removed (top of the ranking first) when the decision first flips.

    ``how="erase"``: Serrano & Smith's erasure in attention layer ``layer`` only; ``"delete"``: deleted from
    the input ids.
    """
    how = check_choice(how, "how", ("erase", "delete"))
    positions = content_positions(enc, tokenizer)
    masks = _cumulative_masks(_order(scores, positions), enc.n_tokens)
    probs = (_probs_erased(model, enc, masks, layer) if how == "erase"
             else _probs_deleted(model, enc, masks, _pad_id(model, tokenizer)))
    return _first_flip(probs, int(enc.logits.argmax()), len(positions))


def aopc(model: torch.nn.Module, enc: PreparedText, tokenizer: Tokenizer, scores: TokenScores,
         bins: Sequence[float] = ERASER_BINS) -> tuple[float, float]:
    """(comprehensiveness, sufficiency) AOPC of one ranking for the predicted class (DeYoung et al. 2020):
    the top ``ceil(k * n_words)`` words deleted from the input, or all but them, averaged over ``bins``."""
    if isinstance(bins, (str, bytes)) or not hasattr(bins, "__iter__"):
        raise TypeError(f"bins must be a list of fractions in (0, 1], e.g. bins=(0.1, 0.2, 0.5), got {bins!r}")
    bins = [check_fraction(b, f"bins[{i}]", 0.1, " of the words") for i, b in enumerate(bins)]
    if not bins:
        raise ValueError("bins must hold at least one fraction of the words to remove, e.g. bins=(0.1, 0.2, 0.5)")
    positions = content_positions(enc, tokenizer)
    order = _order(scores, positions)
    ks = _bin_sizes(bins, len(positions))
    pad = _pad_id(model, tokenizer)
    comp = _probs_deleted(model, enc, _cumulative_masks(order, enc.n_tokens, ks=ks), pad)
    suff = _probs_deleted(model, enc, _cumulative_masks(order, enc.n_tokens, True, ks, positions), pad)
    c = int(enc.logits.argmax())
    p = float(torch.softmax(enc.logits.cpu().double(), -1)[c])
    return float(np.mean(p - comp[:, c])), float(np.mean(p - suff[:, c]))


def erasure(model: torch.nn.Module, enc: PreparedText, tokenizer: Tokenizer, attention: TokenScores,
            rng: np.random.Generator, layer: int = -1) -> Erasure:
    """Erase the most attended word vs a random other word in attention layer ``layer`` (Serrano & Smith):
    JS divergences of the outputs, decision flips, and the attention gap between the two words."""
    positions = content_positions(enc, tokenizer)
    top = _order(attention, positions)[0]
    others = [p for p in positions if p != top] or [top]
    rand = int(rng.choice(others))
    masks = torch.zeros(2, enc.n_tokens, dtype=torch.bool)
    masks[0, top], masks[1, rand] = True, True
    probs = _probs_erased(model, enc, masks, layer)
    p = torch.softmax(enc.logits.cpu().double(), -1).numpy()
    pred = int(p.argmax())
    js = js_divergence(p[None], probs)
    return Erasure(top=top, random=rand, js_top=float(js[0]), js_random=float(js[1]),
                   flip_top=bool(probs[0].argmax() != pred), flip_random=bool(probs[1].argmax() != pred),
                   attention_gap=float(attention.scores[top] - attention.scores[rand]))


def _rows_from(model, layers, b: int):
    """Within the block, a one-row input becomes ``b`` rows where it enters the lowest of ``layers`` (the
    encoder blocks whose attention an edit changes). The blocks below see ``b`` copies of one sentence and
    would compute ``b`` equal rows: they run once, on the sentence, and their output is copied ``b`` times
    on its way into the first edited block. The same numbers (to float rounding) for a fraction of the work."""
    blocks = encoder_layers(model)
    first = min(check_int(i, "layers[i]", -len(blocks), len(blocks) - 1) % len(blocks) for i in layers)
    feeder = embeddings_module(model) if first == 0 else blocks[first - 1]
    return forward_hooks((feeder, lambda module, args, out: _copies(out, b)))


def _copies(out, b: int):
    """A module's output (a tensor, or a tuple whose first item is the hidden states) with its one row
    repeated ``b`` times."""
    if isinstance(out, torch.Tensor):
        return out.expand(b, *out.shape[1:]).contiguous()
    return (out[0].expand(b, *out[0].shape[1:]).contiguous(), *out[1:])


def permutation_change(model: torch.nn.Module, enc: PreparedText, n_permutations: int = 16,
                       layers: Sequence[int] = (-1,), seed: int = 0,
                       queries: Sequence[int] | None = None) -> PermutationChange:
    """Jain & Wallace: shuffle the attention weights of ``layers`` (each row over the real tokens, the same
    shuffle for every head and query) ``n_permutations`` times; the median total variation distance of the
    outputs from the unshuffled ones, and the share of shuffles that flip the decision.

    ``queries``: shuffle only these query rows (``(0,)``: the ``[CLS]`` row alone), ``None``: every row. The
    shuffles drawn are the same either way for the same ``seed``.
    """
    b = check_int(n_permutations, "n_permutations", 1)
    with _rows_from(model, layers, b):
        logits = run_edited(model, dict(enc.inputs), permute=True, layers=layers, seed=seed, queries=queries)
    q = torch.softmax(logits.cpu().double(), -1).numpy()
    p = torch.softmax(enc.logits.cpu().double(), -1).numpy()
    tvd = 0.5 * np.abs(q - p[None]).sum(-1)
    return PermutationChange(median_tvd=float(np.median(tvd)), flips=float(np.mean(q.argmax(-1) != p.argmax())))


