"""Jain & Wallace's rank agreement (2019, "Attention is not Explanation", NAACL, section 4.1): per sentence,
Kendall's tau-b between the attention ranking and (a) the input gradient, (b) leave-one-out deletion, and
(c) between those two, over the word tokens (notebook 06, section 3; ``LabResult.agreement`` in the lab).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from xaikit._fn import in_float32, inputs_to_model
from xaikit._text_input import PreparedText, Tokenizer, check_model, check_texts, prepare_text
from xaikit._types import Input
from xaikit._validate import bool_flags
from xaikit.lab.removal import _pad_id, _probs_deleted, content_positions
from xaikit.models.arch import check_layer
from xaikit.models.hooks import forward_hooks
from xaikit.policies import method_threads, to_float64
from xaikit.text.tokens import TokenScores

__all__ = ["TAU_PAIRS", "word_tau", "input_gradient", "leave_one_out", "RankAgreement", "rank_agreement"]

#: Jain & Wallace's three comparisons (section 4.1): attention with the gradient, attention with leave-one-out,
#: and the gradient with leave-one-out, by the names :class:`RankAgreement` keys them with.
TAU_PAIRS = ("attention-gradient", "attention-LOO", "gradient-LOO")


def word_tau(a: Input, b: Input, positions: Sequence[int]) -> float:
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
def input_gradient(model: torch.nn.Module, enc: PreparedText) -> np.ndarray:
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

    with forward_hooks((model.get_input_embeddings(), keep)), torch.enable_grad():
        logits = model(**inputs_to_model(model, enc.inputs)).logits[0]  # (C,)
        p = torch.softmax(to_float64(logits), dim=-1)[int(enc.target)]
        (grad,) = torch.autograd.grad(p, captured[0])
    e = captured[0][0].detach()  # (N, d)
    return (grad[0].cpu().double() * e.cpu().double()).sum(-1).numpy()


def leave_one_out(model: torch.nn.Module, enc: PreparedText, tokenizer: Tokenizer,
                  batch_size: int = 64) -> np.ndarray:
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


def _agreement(rows: list[dict], kept: list[str], n_words: list[int], layer: int,
               seconds: float) -> RankAgreement:
    tau = {k: np.array([r[k] for r in rows], dtype=float) for k in TAU_PAIRS}
    return RankAgreement(list(kept), tau, np.array(n_words, dtype=int), layer, seconds)


@bool_flags
def rank_agreement(model: torch.nn.Module, tokenizer: Tokenizer, sentences: str | Sequence[str],
                   layer: int = -1, progress: bool = False) -> RankAgreement:
    """Jain & Wallace's correlation analysis over ``sentences``: per sentence, Kendall's tau-b of attention
    (``layer``'s [CLS] row) with the input gradient, of attention with leave-one-out, and of the gradient
    with leave-one-out.

    The same numbers :func:`run_lab` keeps in ``LabResult.agreement``. Sentences with fewer than two word
    tokens are skipped (nothing to rank); all arrays are NumPy, on the CPU.
    """
    from tqdm.auto import tqdm

    from xaikit.text.views import _all_views

    sentences = check_texts(sentences, "sentences")
    check_model(model, tokenizer, "rank_agreement")
    layer = check_layer(model, layer)
    rows, kept, n_words, spent = [], [], [], 0.0
    with method_threads(model):
        for text in tqdm(sentences, desc="rank agreement", disable=not progress):
            enc = prepare_text(model, tokenizer, text, method="rank_agreement")
            positions = content_positions(enc, tokenizer)
            if len(positions) < 2:
                continue
            attention = _all_views(enc, ("attention",), layer, {})["attention"]
            start = time.perf_counter()
            rows.append(_agreement_row(model, enc, tokenizer, attention))
            spent += time.perf_counter() - start
            kept.append(text)
            n_words.append(len(positions))
    if not rows:
        raise ValueError("sentences: none had at least two word tokens; pass real sentences")
    return _agreement(rows, kept, n_words, layer, spent)


