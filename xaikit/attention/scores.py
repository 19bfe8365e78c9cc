"""Attention scores side by side: Bahdanau's additive attention, Luong's dot and general scores beside the
additive one, and cross-attention (notebook 03).

Bahdanau, Cho & Bengio (2015), "Neural Machine Translation by Jointly Learning to Align and Translate",
ICLR: additive attention, whose scores come from a network with one hidden layer,
``e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j)`` (Luong et al. 2015 call it "concat"); Vaswani et al. (2017,
section 3.2.1) compare it with dot-product attention.

Luong, Pham & Manning (2015), "Effective Approaches to Attention-based Neural Machine Translation", EMNLP,
section 3.1: three scores of a decoder state ``h_t`` against a source state ``h_s``, *dot* ``h_t^T h_s``,
*general* ``h_t^T W_a h_s`` and *concat* (Bahdanau's additive score); :func:`dot_scores`,
:func:`general_scores` and :func:`additive_scores` return each score matrix with its softmax, and
:func:`cross_attention` lets the queries come from one sequence and the keys and values from another.

The input checks, masks and dtypes follow :mod:`xaikit.attention.scratch`, whose helpers they use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from xaikit._types import Input
from xaikit._validate import bool_flags
from xaikit.attention.scratch import (
    _apply_mask,
    _as_tensor,
    _check_mask,
    _check_qkv,
    _promoted,
    _weigh,
)

__all__ = ["additive_attention", "dot_scores", "general_scores", "additive_scores", "cross_attention",
           "CrossAttentionSteps"]


# -- additive (Bahdanau) attention ----------------------------------------------------------------------------
def additive_attention(q: Input, k: Input, v: Input, w_q: Input, w_k: Input, v_a: Input,
                       mask: Input | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Additive attention: a small network with one tanh layer scores every (query, key) pair.

    ``e_ij = v_a . tanh(q_i W_q + k_j W_k)``, ``weights_i = softmax_j(e_ij)``, ``out_i = sum_j weights_ij v_j``:
    the alignment model ``a(s_{i-1}, h_j) = v_a^T tanh(W_a s_{i-1} + U_a h_j)`` of Bahdanau, Cho & Bengio
    (2015), written, like the rest of this module, with weights that multiply from the right (``w_q`` is
    their ``W_a`` transposed, ``w_k`` their ``U_a`` transposed). Luong et al. (2015) call it "concat".

    Queries and keys may have different widths: each gets its own projection to the ``d_a`` hidden units.
    There is no ``1/sqrt(d)`` factor: tanh keeps every hidden unit in (-1, 1), so ``|e_ij| <= ||v_a||_1``
    however large ``q`` and ``k`` grow. The price is a ``(..., T_q, T_k, d_a)`` hidden tensor, one tanh layer
    per pair, where :func:`scaled_dot_product_attention` needs a single ``(T_q, d_k) @ (d_k, T_k)`` product
    (Vaswani et al. 2017, section 3.2.1). Fine for a lecture's few tokens; not how long texts are handled.

    Args:
        q: queries ``(..., T_q, d_q)``; k: keys ``(..., T_k, d_k)``; v: values ``(..., T_k, d_v)``.
        w_q: ``(d_q, d_a)``, projects the queries; w_k: ``(d_k, d_a)``, projects the keys.
        v_a: ``(d_a,)``, turns the hidden units of a pair into one score.
        mask: optional, as in :func:`scaled_dot_product_attention`: broadcastable to ``(..., T_q, T_k)``,
            boolean (``True`` = may attend) or an additive float mask.

    Returns:
        ``(out, weights)`` as :func:`scaled_dot_product_attention` returns them: ``out`` is ``(..., T_q, d_v)``;
        ``weights`` is ``(..., T_q, T_k)``, each row a probability distribution over the keys (rows of fully
        masked queries are NaN).
    """
    q, k, v = _check_qkv(q, k, v, same_width=False)
    scores, v = _promoted(_additive(q, k, w_q, w_k, v_a), v)  # (..., T_q, T_k), weights' dtype
    return _weigh(scores, v, mask)


def _additive(q: torch.Tensor, k: torch.Tensor, w_q, w_k, v_a) -> torch.Tensor:
    """The additive scores ``e_ij = v_a . tanh(q_i W_q + k_j W_k)`` of checked ``q`` and ``k``, ``(..., T_q, T_k)``."""
    w_q, w_k, v_a = _as_tensor(w_q, "w_q"), _as_tensor(w_k, "w_k"), _as_tensor(v_a, "v_a")
    for name, w, of, width in (("w_q", w_q, "q", q.shape[-1]), ("w_k", w_k, "k", k.shape[-1])):
        if w.dim() != 2 or w.shape[0] != width:
            raise ValueError(f"{name} must be (d_{of}, d_a) with d_{of} = {of}.shape[-1] = {width}, got shape "
                             f"{tuple(w.shape)}; it multiplies from the right ({of} @ {name}), so an "
                             f"nn.Linear's weight is passed as linear.weight.T")
    d_a = w_q.shape[1]
    if w_k.shape[1] != d_a:
        raise ValueError(f"w_q and w_k must project to the same number of hidden units d_a (the two "
                         f"projections are added before the tanh): w_q is {tuple(w_q.shape)}, w_k is "
                         f"{tuple(w_k.shape)}")
    if v_a.dim() != 1 or v_a.shape[0] != d_a:
        raise ValueError(f"v_a must be a vector (d_a,) = ({d_a},), one weight per hidden unit, got shape "
                         f"{tuple(v_a.shape)}; a ({d_a}, 1) column or (1, {d_a}) row can be passed as "
                         f"v_a.reshape(-1)")
    q, k, w_q, w_k, v_a = _promoted(q, k, w_q, w_k, v_a)
    q_a = q @ w_q  # (..., T_q, d_q) @ (d_q, d_a) -> (..., T_q, d_a)
    k_a = k @ w_k  # (..., T_k, d_k) @ (d_k, d_a) -> (..., T_k, d_a)
    hidden = torch.tanh(q_a.unsqueeze(-2) + k_a.unsqueeze(-3))  # (..., T_q, 1, d_a) + (..., 1, T_k, d_a)
    #                                                             -> (..., T_q, T_k, d_a), every pair
    return hidden @ v_a  # (..., T_q, T_k, d_a) @ (d_a,) -> (..., T_q, T_k)


# -- the three scores side by side (Luong et al. 2015, section 3.1) -------------------------------------------
def _check_qk(q, k, same_width: bool) -> tuple[torch.Tensor, torch.Tensor]:
    q, k = _promoted(_as_tensor(q, "q"), _as_tensor(k, "k"))
    for name, t in (("q", q), ("k", k)):
        if t.dim() < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (..., tokens, features), got shape "
                             f"{tuple(t.shape)}; for one token pass {name}.unsqueeze(0)")
    if same_width and q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same last dimension for a dot product: q is {tuple(q.shape)}, "
                         f"k is {tuple(k.shape)}; for queries and keys of different widths use general_scores "
                         f"(q W k^T with W of shape (d_q, d_k)) or additive_scores")
    try:
        torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    except RuntimeError as err:
        raise ValueError(f"q and k must have matching batch dimensions: q is {tuple(q.shape)}, k is "
                         f"{tuple(k.shape)}") from err
    return q, k


def _softmax_of(scores: torch.Tensor, mask) -> tuple[torch.Tensor, torch.Tensor]:
    """``(scores, weights)``: the scores with the mask applied (``-inf`` where masked) and their softmax."""
    if mask is not None:
        scores = _apply_mask(scores, _check_mask(mask, tuple(scores.shape)))  # (..., T_q, T_k)
    return scores, torch.softmax(scores, dim=-1)  # (..., T_q, T_k) each, rows of weights sum to 1


@bool_flags
def dot_scores(q: Input, k: Input, mask: Input | None = None, scaled: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Luong's *dot* score ``score(q_i, k_j) = q_i . k_j`` for every pair, and its softmax over the keys.

    Luong, Pham & Manning (2015), "Effective Approaches to Attention-based Neural Machine Translation", EMNLP,
    section 3.1: ``score(h_t, h_s) = h_t^T h_s``; ``scaled=True`` divides by ``sqrt(d_k)`` as Vaswani et al.
    (2017) do (the scores of :func:`scaled_dot_product_attention`). Notebook 03, section 2b.

    Args:
        q: queries ``(..., T_q, d)``; k: keys ``(..., T_k, d)``, the same width ``d``.
        mask: optional, as in :func:`scaled_dot_product_attention`.
        scaled: divide the scores by ``sqrt(d)``.

    Returns:
        ``(scores, weights)``, both ``(..., T_q, T_k)``: the scores (``-inf`` where masked) and their softmax
        over the keys.
    """
    q, k = _check_qk(q, k, same_width=True)
    scores = q @ k.transpose(-2, -1)  # (..., T_q, d) @ (..., d, T_k) -> (..., T_q, T_k)
    if scaled:
        scores = scores / math.sqrt(q.size(-1))  # (..., T_q, T_k)
    return _softmax_of(scores, mask)


def general_scores(q: Input, k: Input, w: Input, mask: Input | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Luong's *general* (multiplicative) score ``score(q_i, k_j) = q_i W k_j^T``, and its softmax over the keys.

    Luong, Pham & Manning (2015), section 3.1: ``score(h_t, h_s) = h_t^T W_a h_s``, a learned bilinear form
    (written here for row vectors). ``W = I`` gives :func:`dot_scores`; with ``q = X``, ``k = X`` and
    ``W = W_Q W_K^T`` it gives the transformer's unscaled ``Q K^T``: the dot product of projected queries and
    keys is a general score whose ``W`` is factored, of rank at most ``d_k``. Notebook 03, section 2b.

    Args:
        q: queries ``(..., T_q, d_q)``; k: keys ``(..., T_k, d_k)``; the widths may differ.
        w: ``(d_q, d_k)``.
        mask: optional, as in :func:`scaled_dot_product_attention`.

    Returns:
        ``(scores, weights)``, both ``(..., T_q, T_k)``.
    """
    q, k = _check_qk(q, k, same_width=False)
    w = _as_tensor(w, "w")
    if w.dim() != 2 or tuple(w.shape) != (q.shape[-1], k.shape[-1]):
        raise ValueError(f"w must be (d_q, d_k) = ({q.shape[-1]}, {k.shape[-1]}) for q of shape {tuple(q.shape)} "
                         f"and k of shape {tuple(k.shape)}, got {tuple(w.shape)}"
                         + ("; it looks transposed, pass w.T" if tuple(w.shape) == (k.shape[-1], q.shape[-1])
                            else ""))
    q, k, w = _promoted(q, k, w)
    scores = (q @ w) @ k.transpose(-2, -1)  # (..., T_q, d_q) @ (d_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    return _softmax_of(scores, mask)


def additive_scores(q: Input, k: Input, w_q: Input, w_k: Input, v_a: Input,
                    mask: Input | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Bahdanau's additive score ``e_ij = v_a . tanh(q_i W_q + k_j W_k)`` (Luong et al.'s "concat"), and its
    softmax over the keys: the scores of :func:`additive_attention`, whose docstring has the details.

    Args:
        q: queries ``(..., T_q, d_q)``; k: keys ``(..., T_k, d_k)``.
        w_q: ``(d_q, d_a)``; w_k: ``(d_k, d_a)``; v_a: ``(d_a,)``.
        mask: optional, as in :func:`scaled_dot_product_attention`.

    Returns:
        ``(scores, weights)``, both ``(..., T_q, T_k)``. Notebook 03, section 2b.
    """
    q, k = _check_qk(q, k, same_width=False)
    return _softmax_of(_additive(q, k, w_q, w_k, v_a), mask)


@dataclass
class CrossAttentionSteps:
    """The intermediates of one cross-attention: queries from ``x_q``, keys and values from ``x_kv``."""

    q: torch.Tensor  # (T_q, d_k)
    k: torch.Tensor  # (T_k, d_k)
    v: torch.Tensor  # (T_k, d_v)
    scores: torch.Tensor  # (T_q, T_k), masked with -inf
    weights: torch.Tensor  # (T_q, T_k), rows sum to 1
    out: torch.Tensor  # (T_q, d_v)


_CROSS_SCORES = ("scaled_dot", "dot", "general")


def cross_attention(x_q: Input, x_kv: Input, w_q: Input, w_k: Input, w_v: Input, mask: Input | None = None,
                    score: str = "scaled_dot", w: Input | None = None) -> CrossAttentionSteps:
    """Cross-attention: ``Q = X_q W_Q`` from one sequence, ``K = X_kv W_K`` and ``V = X_kv W_V`` from another.

    The encoder-decoder attention of Bahdanau et al. (2015) and Luong et al. (2015), where the decoder's state
    asks and the source sentence answers, and of Vaswani et al. (2017, section 3.2.3). The two sequences may
    have different lengths and widths; the weights are ``(T_q, T_k)``: one row per query, one column per key.
    Notebook 03, section 2b.

    Args:
        x_q: ``(T_q, d_q_in)``, the sequence that asks; x_kv: ``(T_k, d_kv_in)``, the one it reads.
        w_q: ``(d_q_in, d_k)``; w_k: ``(d_kv_in, d_k)``; w_v: ``(d_kv_in, d_v)``.
        mask: optional, broadcastable to ``(T_q, T_k)``, as in :func:`scaled_dot_product_attention`.
        score: ``"scaled_dot"`` (``q . k / sqrt(d_k)``, the transformer's), ``"dot"`` or ``"general"``
            (``q W k^T``, with ``w`` of shape ``(d_q, d_k)``, the output widths of ``w_q`` and ``w_k``).
        w: the matrix of the general score; only with ``score="general"``.
    """
    if score not in _CROSS_SCORES:
        raise ValueError(f"score must be one of {', '.join(map(repr, _CROSS_SCORES))}, got {score!r}")
    if (w is None) == (score == "general"):
        raise ValueError("pass w (the (d_q, d_k) matrix of q W k^T) with score='general', and only then; "
                         f"got score={score!r} and w {'missing' if w is None else 'given'}")
    x_q, x_kv = _as_tensor(x_q, "x_q"), _as_tensor(x_kv, "x_kv")
    for name, x in (("x_q", x_q), ("x_kv", x_kv)):
        if x.dim() != 2:
            raise ValueError(f"{name} must be (tokens, features), got shape {tuple(x.shape)}")
    mats = {}
    for name, m, x, of in (("w_q", w_q, x_q, "x_q"), ("w_k", w_k, x_kv, "x_kv"), ("w_v", w_v, x_kv, "x_kv")):
        m = _as_tensor(m, name)
        if m.dim() != 2 or m.shape[0] != x.shape[1]:
            raise ValueError(f"{name} must be (d_in, d_out) with d_in = {of}.shape[1] = {x.shape[1]}, got shape "
                             f"{tuple(m.shape)}")
        mats[name] = m
    if mats["w_q"].shape[1] != mats["w_k"].shape[1] and score != "general":
        raise ValueError(f"w_q and w_k must project to the same width d_k for a dot product: w_q is "
                         f"{tuple(mats['w_q'].shape)}, w_k is {tuple(mats['w_k'].shape)}")
    x_q, x_kv, w_q, w_k, w_v = _promoted(x_q, x_kv, mats["w_q"], mats["w_k"], mats["w_v"])
    q = x_q @ w_q  # (T_q, d_q_in) @ (d_q_in, d_k) -> (T_q, d_k)
    k = x_kv @ w_k  # (T_k, d_kv_in) @ (d_kv_in, d_k) -> (T_k, d_k)
    v = x_kv @ w_v  # (T_k, d_v)
    if score == "general":
        scores, weights = general_scores(q, k, w, mask=mask)  # (T_q, T_k) each
    else:
        scores, weights = dot_scores(q, k, mask=mask, scaled=score == "scaled_dot")  # (T_q, T_k) each
    weights, v = _promoted(weights, v)  # a float64 w makes float64 weights
    out = weights @ v  # (T_q, T_k) @ (T_k, d_v) -> (T_q, d_v)
    return CrossAttentionSteps(q, k, v, scores, weights, out)
