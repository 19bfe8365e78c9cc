"""Is attention explanation? A small lab on held-out sentences (notebook 04, sections 7-8).

Removing an item means zeroing its attention weight in every row of every layer and head and
renormalising the rows (:mod:`xaikit.editing`), so no position can read it; the text itself is unchanged.
Only word tokens are ranked and removed ([CLS] and [SEP] always stay).

* **Single-item erasure** (Serrano & Smith 2019, "Is Attention Interpretable?", ACL): remove the most
  attended token (last layer, [CLS] row, mean of heads) versus a random other token; the Jensen-Shannon
  divergence (base 2, so in [0, 1]) of the output distributions, and the 2x2 table of decision flips.
* **Fraction removed before the first decision flip**: remove tokens from the top of a ranking down until
  the predicted class changes; rankings by attention, gradient, gradient x attention, Grad-SAM, SHAP, IG and
  a random order (1.0 when it never flips).
* **Permutation** (Jain & Wallace 2019, "Attention is not Explanation", NAACL): shuffle the last layer's
  attention weights over the tokens and measure the total variation distance of the outputs (median over
  ``n_permutations`` shuffles).
* **Comprehensiveness and sufficiency** (DeYoung et al. 2020, "ERASER", ACL): the drop in the predicted
  class's probability when the top k% tokens are removed (comprehensiveness; high = faithful) or when all
  but them are removed (sufficiency; low = faithful), averaged over k in ``bins`` (AOPC).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from xaikit._textio import check_model, check_texts, encode_one, fitting_threads
from xaikit._validate import check_choice, check_int
from xaikit.editing import run_edited
from xaikit.tokens import TokenScores

__all__ = ["RANKINGS", "js_divergence", "content_positions", "erasure", "flip_fraction", "aopc",
           "permutation_change", "LabResult", "run_lab"]

#: the rankings compared by the lab (SHAP and IG are the slow ones).
RANKINGS = ("attention", "gradient", "gradient x attention", "Grad-SAM", "SHAP", "IG", "random")


def js_divergence(p, q) -> np.ndarray:
    """Jensen-Shannon divergence in bits between rows of ``p`` and ``q`` (probabilities, last axis)."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    m = 0.5 * (p + q)

    def kl(a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a > 0, a * np.log2(a / b), 0.0).sum(axis=-1)

    return 0.5 * kl(p, m) + 0.5 * kl(q, m)


def content_positions(enc, tokenizer) -> list[int]:
    """Positions of the word tokens (not [CLS], [SEP], padding)."""
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    ids = enc.inputs["input_ids"][0].tolist()
    return [i for i, t in enumerate(ids) if t not in special]


def _probs_removed(model, enc, masks: torch.Tensor) -> np.ndarray:
    """Output probabilities ``(B, C)`` with the tokens of each mask row ``(B, N)`` removed."""
    b = masks.shape[0]
    inputs = {k: v.expand(b, *v.shape[1:]) for k, v in enc.inputs.items()}
    logits = run_edited(model, inputs, remove=masks)
    return torch.softmax(logits.double(), dim=-1).cpu().numpy()


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


def flip_fraction(model, enc, tokenizer, scores: TokenScores) -> tuple[float, bool]:
    """Fraction of word tokens removed (top of the ranking first) when the decision first flips."""
    positions = content_positions(enc, tokenizer)
    order = _order(scores, positions)
    probs = _probs_removed(model, enc, _cumulative_masks(order, enc.n_tokens))
    pred = int(enc.logits.argmax())
    flips = np.nonzero(probs.argmax(-1) != pred)[0]
    if len(flips) == 0:
        return 1.0, False
    return (int(flips[0]) + 1) / len(positions), True


def aopc(model, enc, tokenizer, scores: TokenScores, bins=(0.1, 0.2, 0.3, 0.4, 0.5)) -> tuple[float, float]:
    """(comprehensiveness, sufficiency) AOPC of one ranking for the predicted class (DeYoung et al. 2020)."""
    positions = content_positions(enc, tokenizer)
    order = _order(scores, positions)
    ks = [max(1, math.ceil(b * len(positions))) for b in bins]
    comp = _probs_removed(model, enc, _cumulative_masks(order, enc.n_tokens, ks=ks))
    suff = _probs_removed(model, enc, _cumulative_masks(order, enc.n_tokens, True, ks, positions))
    c = int(enc.logits.argmax())
    p = float(torch.softmax(enc.logits.double(), -1)[c])
    return float(np.mean(p - comp[:, c])), float(np.mean(p - suff[:, c]))


def erasure(model, enc, tokenizer, attention: TokenScores, rng: np.random.Generator) -> dict:
    """Remove the most attended word vs a random other word: JS divergences, flips, attention gap."""
    positions = content_positions(enc, tokenizer)
    top = _order(attention, positions)[0]
    others = [p for p in positions if p != top] or [top]
    rand = int(rng.choice(others))
    masks = torch.zeros(2, enc.n_tokens, dtype=torch.bool)
    masks[0, top], masks[1, rand] = True, True
    probs = _probs_removed(model, enc, masks)
    p = torch.softmax(enc.logits.double(), -1).cpu().numpy()
    pred = int(p.argmax())
    js = js_divergence(p[None], probs)
    return {"top": top, "random": rand, "js_top": float(js[0]), "js_random": float(js[1]),
            "flip_top": bool(probs[0].argmax() != pred), "flip_random": bool(probs[1].argmax() != pred),
            "attention_gap": float(attention.scores[top] - attention.scores[rand])}


def permutation_change(model, enc, n_permutations: int = 16, layers=(-1,), seed: int = 0) -> dict:
    """Median total variation distance of the outputs over random shuffles of the attention weights."""
    b = check_int(n_permutations, "n_permutations", 1)
    inputs = {k: v.expand(b, *v.shape[1:]) for k, v in enc.inputs.items()}
    logits = run_edited(model, inputs, permute=True, layers=layers, seed=seed)
    q = torch.softmax(logits.double(), -1).cpu().numpy()
    p = torch.softmax(enc.logits.double(), -1).cpu().numpy()
    tvd = 0.5 * np.abs(q - p[None]).sum(-1)
    return {"median_tvd": float(np.median(tvd)), "flips": float(np.mean(q.argmax(-1) != p.argmax()))}


@dataclass
class LabResult:
    """Everything the lab measured, one entry per sentence (arrays) or per ranking (dicts of arrays)."""

    sentences: list[str]
    rankings: tuple[str, ...]
    js_top: np.ndarray
    js_random: np.ndarray
    attention_gap: np.ndarray
    flip_top: np.ndarray
    flip_random: np.ndarray
    fraction: dict[str, np.ndarray]
    flipped: dict[str, np.ndarray]
    comprehensiveness: dict[str, np.ndarray]
    sufficiency: dict[str, np.ndarray]
    permutation_tvd: np.ndarray
    max_attention: np.ndarray
    seconds: float = 0.0
    extras: dict = field(default_factory=dict)

    @property
    def flip_table(self) -> np.ndarray:
        """Percent of sentences: rows = removing the top item flips (yes, no), columns = removing a random one
        flips (yes, no), as in Serrano & Smith's Table 2."""
        t, r = self.flip_top, self.flip_random
        cells = [[t & r, t & ~r], [~t & r, ~t & ~r]]
        return np.array([[100.0 * c.mean() for c in row] for row in cells])

    def summary(self) -> dict[str, dict[str, float]]:
        """Per ranking: median fraction removed before a flip, share of sentences that flipped, AOPCs."""
        return {m: {"median fraction removed": float(np.median(self.fraction[m])),
                    "flipped (%)": 100.0 * float(np.mean(self.flipped[m])),
                    "comprehensiveness": float(np.mean(self.comprehensiveness[m])),
                    "sufficiency": float(np.mean(self.sufficiency[m]))} for m in self.rankings}

    def table_html(self) -> str:
        rows = "".join(
            f"<tr><td>{m}</td>" + "".join(f"<td>{v:.3f}</td>" for v in s.values()) + "</tr>"
            for m, s in self.summary().items())
        head = "".join(f"<th>{h}</th>" for h in ["ranking", *next(iter(self.summary().values()))])
        return f'<table class="xk-lab-table"><tr>{head}</tr>{rows}</table>'


def run_lab(model, tokenizer, sentences, rankings=RANKINGS, n_permutations: int = 16, shap_evals: int = 200,
            ig_steps: int = 16, seed: int = 0, progress: bool = True) -> LabResult:
    """Run every experiment of the lab over ``sentences`` (notebook 04 §7-8)."""
    sentences = check_texts(sentences, "sentences")
    for r in rankings:
        check_choice(r, "rankings[i]", RANKINGS)
    check_model(model, tokenizer, "run_lab")
    rng = np.random.default_rng(seed)
    view_names = tuple(r for r in rankings if r != "random")
    if "attention" not in view_names:
        view_names = ("attention", *view_names)
    start = time.perf_counter()
    with fitting_threads():
        rows, kept = _lab_rows(model, tokenizer, sentences, rankings, view_names, rng, n_permutations, shap_evals,
                               ig_steps, progress)
    if not rows:
        raise ValueError("no sentence had at least two word tokens; pass real sentences")

    def col(fn, dtype=float):
        return np.array([fn(r) for r in rows], dtype=dtype)

    return LabResult(
        kept, tuple(rankings), col(lambda r: r["erasure"]["js_top"]), col(lambda r: r["erasure"]["js_random"]),
        col(lambda r: r["erasure"]["attention_gap"]), col(lambda r: r["erasure"]["flip_top"], bool),
        col(lambda r: r["erasure"]["flip_random"], bool),
        {m: col(lambda r, m=m: r[m][0]) for m in rankings}, {m: col(lambda r, m=m: r[m][1], bool) for m in rankings},
        {m: col(lambda r, m=m: r[m][2]) for m in rankings}, {m: col(lambda r, m=m: r[m][3]) for m in rankings},
        col(lambda r: r["perm"]["median_tvd"]), col(lambda r: r["max_attention"]),
        seconds=time.perf_counter() - start)


def _lab_rows(model, tokenizer, sentences, rankings, view_names, rng, n_permutations, shap_evals, ig_steps,
              progress):
    from tqdm.auto import tqdm

    from xaikit.views import all_views

    rows, kept = [], []
    for text in tqdm(sentences, desc="attention lab", disable=not progress):
        enc = encode_one(model, tokenizer, text, None, method="run_lab")
        positions = content_positions(enc, tokenizer)
        if len(positions) < 2:  # nothing to compare on a one-word text
            continue
        views = all_views(model, tokenizer, text, enc.target, view_names, shap_evals=shap_evals, ig_steps=ig_steps)
        if "random" in rankings:
            order = rng.permutation(positions)
            rand = np.zeros(enc.n_tokens)
            rand[order] = np.arange(len(order), 0, -1)
            views["random"] = TokenScores(enc.tokens, rand, "random", enc.target, signed=False)
        row = _one_sentence(model, enc, tokenizer, views, rankings, rng)
        row["perm"] = permutation_change(model, enc, n_permutations, seed=int(rng.integers(1 << 30)))
        row["max_attention"] = float(views["attention"].scores[positions].max())
        rows.append(row)
        kept.append(text)
    return rows, kept


def _one_sentence(model, enc, tokenizer, views: dict, rankings, rng, bins=(0.1, 0.2, 0.3, 0.4, 0.5)) -> dict:
    """Erasure, flip fraction and AOPC of every ranking from ONE batched forward pass.

    The same numbers as :func:`erasure`, :func:`flip_fraction` and :func:`aopc` (the tests check it): the
    comprehensiveness masks are a subset of the flip masks (top-k removed), so only the sufficiency masks
    and the two erasure masks are added.
    """
    positions = content_positions(enc, tokenizer)
    n, n_words = enc.n_tokens, len(positions)
    ks = [max(1, math.ceil(b * n_words)) for b in bins]
    top = _order(views["attention"], positions)[0]
    others = [p for p in positions if p != top] or [top]
    rand = int(rng.choice(others))
    erase = torch.zeros(2, n, dtype=torch.bool)
    erase[0, top], erase[1, rand] = True, True
    blocks, orders = [erase], {}
    for r in rankings:
        orders[r] = _order(views[r], positions)
        blocks.append(_cumulative_masks(orders[r], n))  # n_words rows: top-1 .. top-all removed
        blocks.append(_cumulative_masks(orders[r], n, True, ks, positions))  # len(ks) rows: only top-k kept
    masks = torch.cat(blocks)
    probs = np.concatenate([_probs_removed(model, enc, chunk) for chunk in masks.split(256)])
    p = torch.softmax(enc.logits.double(), -1).cpu().numpy()
    pred = int(p.argmax())
    js = js_divergence(p[None], probs[:2])
    row = {"erasure": {"top": top, "random": rand, "js_top": float(js[0]), "js_random": float(js[1]),
                       "flip_top": bool(probs[0].argmax() != pred), "flip_random": bool(probs[1].argmax() != pred),
                       "attention_gap": float(views["attention"].scores[top] - views["attention"].scores[rand])}}
    at = 2
    for r in rankings:
        removed, kept = probs[at:at + n_words], probs[at + n_words:at + n_words + len(ks)]
        at += n_words + len(ks)
        flips = np.nonzero(removed.argmax(-1) != pred)[0]
        fraction, flipped = ((int(flips[0]) + 1) / n_words, True) if len(flips) else (1.0, False)
        comp = float(np.mean(p[pred] - removed[[k - 1 for k in ks], pred]))
        suff = float(np.mean(p[pred] - kept[:, pred]))
        row[r] = (fraction, flipped, comp, suff)
    return row
