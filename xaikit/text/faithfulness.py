"""Is attention explanation? A small lab on held-out sentences (notebook 04, sections 7-8).

Only word tokens are ranked and removed; [CLS] and [SEP] always stay. A token is removed in one of two ways,
and the two are different experiments:

* **Erasure in one attention layer** (Serrano & Smith 2019, "Is Attention Interpretable?", ACL): the token's
  attention weight is set to zero in the one attention layer whose weights gave the ranking, in every head,
  and each row is renormalised to sum to 1; every other layer runs as it is (:mod:`xaikit.text.editing`). The
  rankings by attention, attention gradient and gradient x attention read the last layer's [CLS] row, so
  the erasure acts on the last layer (``layer=-1``). There the classifier reads only the [CLS] position, so
  the erasure changes exactly the [CLS] row's weights that were ranked. The token stays in the input, and
  the layers below have already mixed it into every position, [CLS] included.
* **Deletion** (as in ERASER, DeYoung et al. 2020): the token is deleted from the input ids and the tokens
  after it move up one position, so no layer ever sees it.

The experiments:

* **Single-item erasure** (Serrano & Smith): erase the most attended word versus a random other word; the
  Jensen-Shannon divergence (base 2, so in [0, 1]) of the output distributions and the 2x2 table of decision
  flips.
* **Fraction removed before the first decision flip** (Serrano & Smith): remove words from the top of a
  ranking down until the predicted class changes, by erasure and, separately, by deletion; rankings by
  attention, attention gradient, gradient x attention, Grad-SAM, SHAP, IG and a random order (1.0 and
  ``flipped=False`` when removing every word never flips the decision).
* **Permutation** (Jain & Wallace 2019, "Attention is not Explanation", NAACL): shuffle one layer's
  attention weights over the tokens and measure the total variation distance of the outputs (median over
  ``n_permutations`` shuffles), for the last layer and, one at a time, for every layer.
* **Comprehensiveness and sufficiency** (DeYoung et al. 2020, "ERASER", ACL): the drop in the predicted
  class's probability when the top k% of the words are deleted (comprehensiveness; high = faithful) or when
  all but them are deleted (sufficiency; low = faithful), averaged over ERASER's bins k = 1, 5, 10, 20 and
  50% (AOPC; at least one word per bin, ``ceil(k * n_words)`` as in ERASER's scorer).
* **Rank agreement** (Jain & Wallace 2019, section 4.1): per sentence, Kendall's tau-b between the
  attention ranking and (a) the input gradient, (b) leave-one-out deletion, and (c) between those two
  (:func:`rank_agreement`, and ``LabResult.agreement`` in the lab).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from xaikit._fn import in_float32, inputs_to_model
from xaikit._validate import check_choice, check_float, check_int, check_names, check_seed
from xaikit.models.arch import attention_modules, check_layer
from xaikit.policies import method_threads, to_float64
from xaikit.text.editing import run_edited
from xaikit.text.encoding import check_model, check_texts, encode_one
from xaikit.text.registry import TEXT_METHODS, lab_rankings
from xaikit.text.tokens import TokenScores

__all__ = ["RANKINGS", "EXTRA_VIEWS", "ERASER_BINS", "TAU_PAIRS", "js_divergence", "content_positions", "erasure", "flip_fraction",
           "aopc", "permutation_change", "word_tau", "input_gradient", "leave_one_out", "RankAgreement",
           "rank_agreement", "LabResult", "run_lab"]

#: the rankings compared by the lab (SHAP and IG are the slow ones), read from :mod:`xaikit.text.registry`.
RANKINGS = lab_rankings()
#: views the lab keeps per sentence besides its rankings (``LabResult.scores``), read from the forward/backward
#: pass the attention rankings share: notebook 04 (section 8) ranks Chefer et al.'s relevance against them.
EXTRA_VIEWS = ("grad-weighted attention",)
#: ERASER's bins for the area over the perturbation curve: 1, 5, 10, 20 and 50% of the words.
ERASER_BINS = (0.01, 0.05, 0.1, 0.2, 0.5)
#: Jain & Wallace's three comparisons (section 4.1): attention with the gradient, attention with leave-one-out,
#: and the gradient with leave-one-out, by the names :class:`RankAgreement` keys them with.
TAU_PAIRS = ("attention-gradient", "attention-LOO", "gradient-LOO")


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


def _probs_erased(model, enc, masks: torch.Tensor, layer: int) -> np.ndarray:
    """Output probabilities ``(B, C)`` with the tokens of each mask row ``(B, N)`` erased from the attention of
    ``layer`` alone (Serrano & Smith): their weights zeroed in every head and row, the rows renormalised."""
    b = masks.shape[0]
    inputs = {k: v.expand(b, *v.shape[1:]) for k, v in enc.inputs.items()}
    logits = run_edited(model, inputs, remove=masks, layers=(layer,))
    return torch.softmax(logits.cpu().double(), dim=-1).numpy()


def _probs_deleted(model, enc, masks: torch.Tensor, pad_id: int, batch_size: int = 64) -> np.ndarray:
    """Output probabilities ``(B, C)`` with the tokens of each mask row ``(B, N)`` deleted from the input ids
    (the rest move up). Rows of similar length share a batch, padded to its longest and masked as padding."""
    ids = enc.inputs["input_ids"][0].cpu()  # (N,)
    kept = [ids[~row] for row in masks.cpu()]
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
    return probs


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


def flip_fraction(model, enc, tokenizer, scores: TokenScores, how: str = "erase", layer: int = -1) -> tuple[float, bool]:
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


def aopc(model, enc, tokenizer, scores: TokenScores, bins=ERASER_BINS) -> tuple[float, float]:
    """(comprehensiveness, sufficiency) AOPC of one ranking for the predicted class (DeYoung et al. 2020):
    the top ``ceil(k * n_words)`` words deleted from the input, or all but them, averaged over ``bins``."""
    positions = content_positions(enc, tokenizer)
    order = _order(scores, positions)
    ks = _bin_sizes(bins, len(positions))
    pad = _pad_id(model, tokenizer)
    comp = _probs_deleted(model, enc, _cumulative_masks(order, enc.n_tokens, ks=ks), pad)
    suff = _probs_deleted(model, enc, _cumulative_masks(order, enc.n_tokens, True, ks, positions), pad)
    c = int(enc.logits.argmax())
    p = float(torch.softmax(enc.logits.cpu().double(), -1)[c])
    return float(np.mean(p - comp[:, c])), float(np.mean(p - suff[:, c]))


def erasure(model, enc, tokenizer, attention: TokenScores, rng: np.random.Generator, layer: int = -1) -> dict:
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
    return {"top": top, "random": rand, "js_top": float(js[0]), "js_random": float(js[1]),
            "flip_top": bool(probs[0].argmax() != pred), "flip_random": bool(probs[1].argmax() != pred),
            "attention_gap": float(attention.scores[top] - attention.scores[rand])}


def permutation_change(model, enc, n_permutations: int = 16, layers=(-1,), seed: int = 0, queries=None) -> dict:
    """Jain & Wallace: shuffle the attention weights of ``layers`` (each row over the real tokens, the same
    shuffle for every head and query) ``n_permutations`` times; the median total variation distance of the
    outputs from the unshuffled ones, and the share of shuffles that flip the decision.

    ``queries``: shuffle only these query rows (``(0,)``: the ``[CLS]`` row alone), ``None``: every row. The
    shuffles drawn are the same either way for the same ``seed``.
    """
    b = check_int(n_permutations, "n_permutations", 1)
    inputs = {k: v.expand(b, *v.shape[1:]) for k, v in enc.inputs.items()}
    logits = run_edited(model, inputs, permute=True, layers=layers, seed=seed, queries=queries)
    q = torch.softmax(logits.cpu().double(), -1).numpy()
    p = torch.softmax(enc.logits.cpu().double(), -1).numpy()
    tvd = 0.5 * np.abs(q - p[None]).sum(-1)
    return {"median_tvd": float(np.median(tvd)), "flips": float(np.mean(q.argmax(-1) != p.argmax()))}


def word_tau(a, b, positions) -> float:
    """Kendall's tau-b between ``|a|`` and ``|b|`` over the token ``positions`` only (the word tokens).

    ``a`` and ``b`` are one score per token, ``(N,)``; the other positions ([CLS], [SEP]) are left out
    whatever they hold. Ties are handled as tau-b does (:func:`scipy.stats.kendalltau`); the result is NaN
    when either ranking is all ties (no order to compare), as scipy gives it.
    """
    from scipy.stats import kendalltau

    a = np.asarray(a, dtype=float).reshape(-1)
    b = np.asarray(b, dtype=float).reshape(-1)
    if len(a) != len(b):
        raise ValueError(f"a and b must score the same tokens: a has {len(a)} scores, b has {len(b)}")
    idx = [int(i) for i in positions]
    if len(idx) < 2:
        raise ValueError(f"positions must name at least 2 tokens to rank, got {len(idx)}")
    if len(set(idx)) != len(idx) or min(idx) < 0 or max(idx) >= len(a):
        raise ValueError(f"positions must be distinct token indices in 0..{len(a) - 1}, got {idx}")
    x, y = np.abs(a[idx]), np.abs(b[idx])
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("a and b must be finite at the word positions")
    with warnings.catch_warnings():  # a constant input: scipy warns and returns NaN, which is the answer
        warnings.simplefilter("ignore")
        return float(kendalltau(x, y).statistic)


@in_float32("model")
def input_gradient(model, enc) -> np.ndarray:
    """Jain & Wallace's gradient importance of every token, ``(N,)``, signed (their tau uses ``|g|``).

    The derivative of the explained class's probability (``enc.target``) with respect to the token's one-hot
    input, taken at the token's own word: since the word embedding is linear in the one-hot vector, that
    is ``e_t . dp/de_t``, the word embedding row times the gradient at it (before position embeddings).
    Unlike Jain & Wallace's BiLSTM, where the single attention layer was cut from the gradient, every path
    is kept: in a transformer attention is in every layer, so there is no one module to cut.
    """
    captured = []

    def keep(module, args, output):  # the word embeddings become the leaf the gradient is taken at
        leaf = output.detach().requires_grad_(True)
        captured.append(leaf)
        return leaf

    handle = model.get_input_embeddings().register_forward_hook(keep)
    try:
        with torch.enable_grad():
            logits = model(**inputs_to_model(model, enc.inputs)).logits[0]  # (C,)
            p = torch.softmax(to_float64(logits), dim=-1)[int(enc.target)]
            (grad,) = torch.autograd.grad(p, captured[0])
    finally:
        handle.remove()
    e = captured[0][0].detach()  # (N, d)
    return (grad[0].cpu().double() * e.cpu().double()).sum(-1).numpy()


def leave_one_out(model, enc, tokenizer, batch_size: int = 64) -> np.ndarray:
    """Leave-one-out importance ``(N,)``: ``p(x) - p(x without token t)`` for the explained class
    (``enc.target``), each word token deleted from the input ids on its own (the rest move up), all of a
    sentence's deletions in one batched pass. Special tokens are never deleted: NaN there.
    """
    positions = content_positions(enc, tokenizer)
    masks = torch.zeros(len(positions), enc.n_tokens, dtype=torch.bool)
    masks[torch.arange(len(positions)), positions] = True
    probs = _probs_deleted(model, enc, masks, _pad_id(model, tokenizer), batch_size)  # (words, C)
    c = int(enc.target)
    p = float(torch.softmax(enc.logits.cpu().double(), -1)[c])
    out = np.full(enc.n_tokens, np.nan)
    out[positions] = p - probs[:, c]
    return out


def _agreement_row(model, enc, tokenizer, attention: TokenScores, keep: dict | None = None) -> dict[str, float]:
    """The three taus of one sentence, over its word tokens; ``keep``: a dict that gets the input gradient and
    the leave-one-out scores, ``(N,)`` each, under "input gradient" and "LOO"."""
    positions = content_positions(enc, tokenizer)
    grad = input_gradient(model, enc)
    loo = leave_one_out(model, enc, tokenizer)
    if keep is not None:
        keep.update({"input gradient": grad, "LOO": loo})
    att = attention.scores
    return {"attention-gradient": word_tau(att, grad, positions), "attention-LOO": word_tau(att, loo, positions),
            "gradient-LOO": word_tau(grad, loo, positions)}


@dataclass
class RankAgreement:
    """Jain & Wallace's rank agreement (section 4.1), one Kendall tau-b per sentence and comparison.

    ``tau[pair]`` ``(sentences,)`` for each pair of :data:`TAU_PAIRS`: attention (the [CLS] row of attention
    layer ``layer``, mean of the heads), the input gradient (:func:`input_gradient`) and leave-one-out
    (:func:`leave_one_out`), ranked by magnitude over the word tokens ([CLS] and [SEP] excluded: they are
    never deleted, and [CLS]'s attention to itself is not a word's importance). ``n_words``: word tokens
    per sentence. NaN where a ranking was all ties. ``seconds``: the time the gradients and deletions took.
    """

    sentences: list[str]
    tau: dict[str, np.ndarray]
    n_words: np.ndarray
    layer: int = -1
    seconds: float = 0.0

    def medians(self) -> dict[str, float]:
        """The median tau of each comparison over the sentences (NaN ones left out)."""
        return {k: float(np.nanmedian(v)) for k, v in self.tau.items()}


def _agreement(rows: list[dict], kept: list[str], n_words: list[int], layer: int, seconds: float) -> RankAgreement:
    tau = {k: np.array([r[k] for r in rows], dtype=float) for k in TAU_PAIRS}
    return RankAgreement(list(kept), tau, np.array(n_words, dtype=int), layer, seconds)


def rank_agreement(model, tokenizer, sentences, layer: int = -1, progress: bool = False) -> RankAgreement:
    """Jain & Wallace's correlation analysis over ``sentences``: per sentence, Kendall's tau-b of attention
    (``layer``'s [CLS] row) with the input gradient, of attention with leave-one-out, and of the gradient
    with leave-one-out.

    The same numbers :func:`run_lab` keeps in ``LabResult.agreement``. Sentences with fewer than two word
    tokens are skipped (nothing to rank); all arrays are NumPy, on the CPU.
    """
    from tqdm.auto import tqdm

    from xaikit.text.views import all_views

    sentences = check_texts(sentences, "sentences")
    check_model(model, tokenizer, "rank_agreement")
    layer = check_layer(model, layer)
    rows, kept, n_words, spent = [], [], [], 0.0
    with method_threads():
        for text in tqdm(sentences, desc="rank agreement", disable=not progress):
            enc = encode_one(model, tokenizer, text, None, method="rank_agreement")
            positions = content_positions(enc, tokenizer)
            if len(positions) < 2:
                continue
            attention = all_views(model, tokenizer, enc.text, enc.target, ("attention",), layer=layer)["attention"]
            start = time.perf_counter()
            rows.append(_agreement_row(model, enc, tokenizer, attention))
            spent += time.perf_counter() - start
            kept.append(text)
            n_words.append(len(positions))
    if not rows:
        raise ValueError("sentences: none had at least two word tokens; pass real sentences")
    return _agreement(rows, kept, n_words, layer, spent)


@dataclass
class LabResult:
    """Everything the lab measured, one entry per sentence (arrays) or per ranking (dicts of arrays).

    ``fraction``/``flipped``: words erased (Serrano & Smith, attention layer ``layer``) before the first
    decision flip; ``fraction_deleted``/``flipped_deleted``: the same with the words deleted from the input.
    ``permutation_tvd``: Jain & Wallace's output change when the last layer is shuffled;
    ``permutation_by_layer`` ``(sentences, layers)``: the same with one layer at a time shuffled (every query
    row); ``permutation_by_layer_cls``: the same shuffles applied to the ``[CLS]`` query row alone, the one row
    that reaches the classifier from the last layer, so that every depth is compared on the same row.
    ``predicted``: each sentence's predicted class; ``empty_probs``: the output probabilities ``(C,)`` for the
    input with every word deleted (``[CLS] [SEP]``), where deleting a whole sentence ends.
    ``ig_relative_gap``: IG's relative completeness gap per sentence, or ``None`` without an IG ranking (the
    IG ranking uses only its order).
    ``agreement``: Jain & Wallace's Kendall taus between attention, the input gradient and leave-one-out
    (:class:`RankAgreement`).
    ``scores``: every sentence's token scores ``(N,)`` by name, one list entry per sentence: each ranking
    (``"random"``: its order, highest first), the views of :data:`EXTRA_VIEWS` (or ``run_lab``'s
    ``extra_views``), and ``"input gradient"`` and ``"LOO"`` (:func:`input_gradient`, :func:`leave_one_out`,
    NaN at the special tokens) of the agreement. ``positions``: each sentence's word-token positions, the
    only ones ranked (:func:`content_positions`), so ``word_tau(scores[a][i], scores[b][i], positions[i])``
    compares two of them on sentence ``i`` without running anything again.
    """

    sentences: list[str]
    rankings: tuple[str, ...]
    js_top: np.ndarray
    js_random: np.ndarray
    attention_gap: np.ndarray
    flip_top: np.ndarray
    flip_random: np.ndarray
    fraction: dict[str, np.ndarray]
    flipped: dict[str, np.ndarray]
    fraction_deleted: dict[str, np.ndarray]
    flipped_deleted: dict[str, np.ndarray]
    comprehensiveness: dict[str, np.ndarray]
    sufficiency: dict[str, np.ndarray]
    permutation_tvd: np.ndarray
    permutation_by_layer: np.ndarray
    max_attention: np.ndarray
    layer: int = -1
    bins: tuple[float, ...] = ERASER_BINS
    seconds: float = 0.0
    ig_relative_gap: np.ndarray | None = None
    agreement: RankAgreement | None = None
    scores: dict[str, list[np.ndarray]] | None = None
    positions: list[list[int]] | None = None
    permutation_by_layer_cls: np.ndarray | None = None
    predicted: np.ndarray | None = None
    empty_probs: np.ndarray | None = None

    def flipped_within(self, ranking: str, budget: float, how: str = "deleted") -> np.ndarray:
        """Per sentence, did the decision flip with at most ``ceil(budget * n_words)`` words (at least one)
        removed from the top of ``ranking``? ``how``: ``"deleted"`` or ``"erased"``."""
        how = check_choice(how, "how", ("deleted", "erased"))
        check_choice(ranking, "ranking", self.rankings)
        budget = check_float(budget, "budget", 0.0, 1.0, strict_min=True)
        fraction, flipped = ((self.fraction_deleted, self.flipped_deleted) if how == "deleted"
                             else (self.fraction, self.flipped))
        n_words = np.array([len(p) for p in self.positions], dtype=float)
        allowed = np.maximum(1, np.ceil(budget * n_words - 1e-9))
        return flipped[ranking] & (np.rint(fraction[ranking] * n_words) <= allowed)

    @property
    def flip_table(self) -> np.ndarray:
        """Percent of sentences: rows = erasing the top item flips (yes, no), columns = erasing a random one
        flips (yes, no), as in Serrano & Smith's Table 2."""
        t, r = self.flip_top, self.flip_random
        cells = [[t & r, t & ~r], [~t & r, ~t & ~r]]
        return np.array([[100.0 * c.mean() for c in row] for row in cells])

    def summary(self) -> dict[str, dict[str, float]]:
        """Per ranking: mean fraction of the words removed before a flip and the share of sentences that
        flipped at all, by erasure and by deletion; mean comprehensiveness and sufficiency (AOPC)."""
        return {m: {"erased before a flip": float(np.mean(self.fraction[m])),
                    "flipped by erasure (%)": 100.0 * float(np.mean(self.flipped[m])),
                    "deleted before a flip": float(np.mean(self.fraction_deleted[m])),
                    "flipped by deletion (%)": 100.0 * float(np.mean(self.flipped_deleted[m])),
                    "comprehensiveness": float(np.mean(self.comprehensiveness[m])),
                    "sufficiency": float(np.mean(self.sufficiency[m]))} for m in self.rankings}

    def table_html(self) -> str:
        rows = "".join(
            f"<tr><td>{m}</td>" + "".join(f"<td>{v:.3f}</td>" for v in s.values()) + "</tr>"
            for m, s in self.summary().items())
        head = "".join(f"<th>{h}</th>" for h in ["ranking", *next(iter(self.summary().values()))])
        return f'<table class="xk-lab-table"><tr>{head}</tr>{rows}</table>'


def run_lab(model, tokenizer, sentences, rankings=RANKINGS, n_permutations: int = 16, shap_evals: int = 200,
            ig_steps: int = 16, seed: int = 0, layer: int = -1, bins=ERASER_BINS, progress: bool = True,
            extra_views=EXTRA_VIEWS, allow_long: bool = False) -> LabResult:
    """Run every experiment of the lab over ``sentences`` (notebook 04 §7-8).

    ``layer``: the attention layer whose [CLS] row gives the attention rankings and in which Serrano &
    Smith's erasure acts (the last by default). ``bins``: the AOPC bins (ERASER's by default).
    ``progress``: a progress bar over the sentences. ``extra_views``: views of each sentence kept in
    ``LabResult.scores`` besides the rankings' (by :func:`xaikit.text.views.all_views`, with ``layer``),
    ranked nowhere. ``allow_long``: let SHAP explain sentences of more than
    :data:`xaikit.text.shaptext.LONG_TEXT` tokens (refused by default, before any work: each costs minutes).
    """
    from xaikit.text.registry import method_names

    sentences = check_texts(sentences, "sentences")
    rankings = tuple(check_names(rankings, "rankings", RANKINGS))
    extra = tuple(check_names(extra_views, "extra_views", method_names()))
    n_permutations = check_int(n_permutations, "n_permutations", 1, hint="shuffles per sentence and layer, e.g. 16")
    shap_evals = check_int(shap_evals, "shap_evals", 2, hint="SHAP's model evaluations per sentence, e.g. 200")
    ig_steps = check_int(ig_steps, "ig_steps", 1, hint="IG's steps per sentence, e.g. 16")
    seed = check_seed(seed)
    check_model(model, tokenizer, "run_lab")
    layer = check_layer(model, layer)
    if isinstance(bins, (str, bytes)) or not hasattr(bins, "__iter__"):
        raise TypeError(f"bins must be a list of fractions in (0, 1], e.g. bins=(0.1, 0.2, 0.5), got {bins!r}")
    bins = tuple(check_float(b, f"bins[{i}]", 0.0, 1.0, strict_min=True) for i, b in enumerate(bins))
    if not bins:
        raise ValueError("bins must hold at least one fraction of the words to remove (AOPC averages over them), "
                         "e.g. bins=(0.1, 0.2, 0.5), or leave it out for ERASER's bins")
    if not isinstance(allow_long, bool):
        raise TypeError(f"allow_long must be True or False, got {type(allow_long).__name__} {allow_long!r}")
    if "SHAP" in (*rankings, *extra) and not allow_long:
        _check_lengths(model, tokenizer, sentences, shap_evals)  # every sentence, before any work (item 15)
    rng = np.random.default_rng(seed)
    view_names = tuple(r for r in rankings if r != "random")
    if "attention" not in view_names:
        view_names = ("attention", *view_names)
    view_names += tuple(v for v in extra if v not in view_names)
    start = time.perf_counter()
    with method_threads():
        rows, kept, ig_gaps, agreement = _lab_rows(model, tokenizer, sentences, rankings, view_names, rng,
                                                   n_permutations, shap_evals, ig_steps, layer, bins, progress,
                                                   allow_long)
    if not rows:
        raise ValueError("no sentence had at least two word tokens; pass real sentences")

    def col(fn, dtype=float):
        return np.array([fn(r) for r in rows], dtype=dtype)

    def per_ranking(key, i, dtype=float):
        return {m: col(lambda r, m=m: r[key][m][i], dtype) for m in rankings}

    return LabResult(
        kept, tuple(rankings), col(lambda r: r["erasure"]["js_top"]), col(lambda r: r["erasure"]["js_random"]),
        col(lambda r: r["erasure"]["attention_gap"]), col(lambda r: r["erasure"]["flip_top"], bool),
        col(lambda r: r["erasure"]["flip_random"], bool),
        per_ranking("erased", 0), per_ranking("erased", 1, bool), per_ranking("deleted", 0),
        per_ranking("deleted", 1, bool), per_ranking("aopc", 0), per_ranking("aopc", 1),
        col(lambda r: r["perm"]["median_tvd"]), np.array([r["perm_by_layer"] for r in rows]),
        col(lambda r: r["max_attention"]), layer=layer, bins=bins, seconds=time.perf_counter() - start,
        ig_relative_gap=np.array(ig_gaps) if ig_gaps else None, agreement=agreement,
        scores={k: [r["scores"][k] for r in rows] for k in rows[0]["scores"]},
        positions=[r["positions"] for r in rows],
        permutation_by_layer_cls=np.array([r["perm_by_layer_cls"] for r in rows]),
        predicted=col(lambda r: r["predicted"], int), empty_probs=_empty_probs(model, tokenizer))


def _empty_probs(model, tokenizer) -> np.ndarray:
    """Output probabilities ``(C,)`` for the empty text, ``[CLS] [SEP]``: every word deleted."""
    enc = tokenizer("", return_tensors="pt")
    with torch.no_grad():
        logits = model(**inputs_to_model(model, dict(enc))).logits[0]
    return torch.softmax(logits.cpu().double(), dim=-1).numpy()


def _check_lengths(model, tokenizer, sentences, shap_evals) -> None:
    """Refuse, before any work, a sentence too long for SHAP without ``allow_long`` (as cut to the model)."""
    from xaikit.text.encoding import max_tokens
    from xaikit.text.shaptext import LONG_TEXT

    limit = max_tokens(model, tokenizer)
    for i, text in enumerate(sentences):
        n = min(len(tokenizer(text, verbose=False)["input_ids"]), limit)
        if n > LONG_TEXT:
            raise ValueError(
                f"sentences[{i}] has {n} tokens; SHAP would run about shap_evals={shap_evals} forward passes of up "
                f"to {n} tokens for it (300 words took 101 s on 2 CPU cores). Pass run_lab(..., allow_long=True) "
                f"to run it anyway, shorten it to at most {LONG_TEXT} tokens, or leave 'SHAP' out of rankings")


def _lab_rows(model, tokenizer, sentences, rankings, view_names, rng, n_permutations, shap_evals, ig_steps, layer,
              bins, progress, allow_long=False):
    from tqdm.auto import tqdm

    from xaikit.tensor.integrated import CompletenessWarning
    from xaikit.text.views import all_views, explain

    rows, kept, ig_gaps, taus, n_words, spent = [], [], [], [], [], 0.0
    n_layers = len(attention_modules(model))
    for text in tqdm(sentences, desc="attention lab", disable=not progress):
        enc = encode_one(model, tokenizer, text, None, method="run_lab")
        positions = content_positions(enc, tokenizer)
        if len(positions) < 2:  # nothing to compare on a one-word text
            continue
        own = tuple(v for v in view_names  # explained with the lab's options
                    if TEXT_METHODS[v].lab_options or (allow_long and v == "SHAP"))
        views = all_views(model, tokenizer, text, enc.target, tuple(v for v in view_names if v not in own),
                          layer=layer, shap_evals=shap_evals)
        for name in own:  # a ranking needs IG's order, not its exact sum: the gap is kept, not warned about
            entry = TEXT_METHODS[name]
            costs = {"steps": ig_steps, "max_evals": shap_evals}
            options = {**({entry.cost: costs[entry.cost]} if entry.cost in costs else {}), **entry.lab_options,
                       **({"allow_long": True} if name == "SHAP" else {})}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CompletenessWarning)
                views[name] = explain(model, tokenizer, text, name, enc.target, **options)
            if name == "IG":
                ig_gaps.append(float(views[name].detail.relative_gap))
        if "random" in rankings:
            order = rng.permutation(positions)
            rand = np.zeros(enc.n_tokens)
            rand[order] = np.arange(len(order), 0, -1)
            views["random"] = TokenScores(enc.tokens, rand, "random", enc.target, signed=False)
        row = _one_sentence(model, enc, tokenizer, views, rankings, rng, layer, bins)
        seed = int(rng.integers(1 << 30))
        by_layer = [permutation_change(model, enc, n_permutations, layers=(i,), seed=seed)["median_tvd"]
                    for i in range(n_layers)]
        row["perm"] = {"median_tvd": by_layer[layer]}
        row["perm_by_layer"] = by_layer
        row["perm_by_layer_cls"] = [  # the same shuffles, the [CLS] query row alone
            permutation_change(model, enc, n_permutations, layers=(i,), seed=seed, queries=(0,))["median_tvd"]
            for i in range(n_layers)]
        row["predicted"] = int(enc.logits.argmax())
        row["max_attention"] = float(views["attention"].scores[positions].max())
        start = time.perf_counter()
        kept_scores = {k: np.asarray(v.scores, dtype=float).copy() for k, v in views.items()}
        taus.append(_agreement_row(model, enc, tokenizer, views["attention"], kept_scores))
        spent += time.perf_counter() - start
        row["scores"], row["positions"] = kept_scores, list(positions)
        n_words.append(len(positions))
        rows.append(row)
        kept.append(text)
    agreement = _agreement(taus, kept, n_words, layer, spent) if rows else None
    return rows, kept, ig_gaps, agreement


def _one_sentence(model, enc, tokenizer, views: dict, rankings, rng, layer: int = -1, bins=ERASER_BINS) -> dict:
    """Erasure, flip fractions and AOPC of every ranking from two batched forward passes, one with erased
    attention and one with deleted tokens.

    The same numbers as :func:`erasure`, :func:`flip_fraction` and :func:`aopc` (the tests check it): the
    comprehensiveness rows are among the deletion flip rows (top-k deleted), so only the sufficiency rows
    are added to them.
    """
    positions = content_positions(enc, tokenizer)
    n, n_words = enc.n_tokens, len(positions)
    ks = _bin_sizes(bins, n_words)
    top = _order(views["attention"], positions)[0]
    others = [p for p in positions if p != top] or [top]
    rand = int(rng.choice(others))
    erase = torch.zeros(2, n, dtype=torch.bool)
    erase[0, top], erase[1, rand] = True, True
    removed, kept = {}, {}
    for r in rankings:
        order = _order(views[r], positions)
        removed[r] = _cumulative_masks(order, n)  # n_words rows: top-1 .. top-all removed
        kept[r] = _cumulative_masks(order, n, True, ks, positions)  # len(ks) rows: only the top-k kept
    erased_masks = torch.cat([erase, *removed.values()])
    deleted_masks = torch.cat([m for r in rankings for m in (removed[r], kept[r])])
    erased = np.concatenate([_probs_erased(model, enc, c, layer) for c in erased_masks.split(256)])
    pad = _pad_id(model, tokenizer)
    deleted = _probs_deleted(model, enc, deleted_masks, pad)
    p = torch.softmax(enc.logits.cpu().double(), -1).numpy()
    pred = int(p.argmax())
    js = js_divergence(p[None], erased[:2])
    row = {"erasure": {"top": top, "random": rand, "js_top": float(js[0]), "js_random": float(js[1]),
                       "flip_top": bool(erased[0].argmax() != pred), "flip_random": bool(erased[1].argmax() != pred),
                       "attention_gap": float(views["attention"].scores[top] - views["attention"].scores[rand])},
           "erased": {}, "deleted": {}, "aopc": {}}
    at_e, at_d = 2, 0
    for r in rankings:
        row["erased"][r] = _first_flip(erased[at_e:at_e + n_words], pred, n_words)
        gone, only = deleted[at_d:at_d + n_words], deleted[at_d + n_words:at_d + n_words + len(ks)]
        at_e, at_d = at_e + n_words, at_d + n_words + len(ks)
        row["deleted"][r] = _first_flip(gone, pred, n_words)
        comp = float(np.mean(p[pred] - gone[[k - 1 for k in ks], pred]))
        suff = float(np.mean(p[pred] - only[:, pred]))
        row["aopc"][r] = (comp, suff)
    return row
