"""Self-attention written out by hand: scaled dot-product attention, additive attention, multi-head attention,
Luong's dot and general scores beside Bahdanau's additive one, cross-attention, masks, sinusoidal positional
encodings and the measures of softmax saturation. Used by notebook 03.

Vaswani et al. (2017), "Attention Is All You Need", NeurIPS: ``Attention(Q, K, V) = softmax(Q K^T /
sqrt(d_k)) V``, multi-head attention ``Concat(head_1, ..., head_h) W_O`` and the fixed positional encoding
``PE(pos, 2i) = sin(pos / 10000^(2i/d))``, ``PE(pos, 2i+1) = cos(pos / 10000^(2i/d))``.

Bahdanau, Cho & Bengio (2015), "Neural Machine Translation by Jointly Learning to Align and Translate",
ICLR: additive attention, whose scores come from a network with one hidden layer,
``e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j)`` (Luong et al. 2015 call it "concat"); Vaswani et al. (2017,
section 3.2.1) compare it with dot-product attention.

Luong, Pham & Manning (2015), "Effective Approaches to Attention-based Neural Machine Translation", EMNLP,
section 3.1: three scores of a decoder state ``h_t`` against a source state ``h_s``, *dot* ``h_t^T h_s``,
*general* ``h_t^T W_a h_s`` and *concat* (Bahdanau's additive score); :func:`dot_scores`,
:func:`general_scores` and :func:`additive_scores` return each score matrix with its softmax, and
:func:`cross_attention` lets the queries come from one sequence and the keys and values from another.

The code follows the lecture's notation (``Q = X W_Q``: weights are ``(d_in, d_out)`` matrices that
multiply from the right) and comments the shape of every tensor, in the style of Karpathy's minGPT.
It is the readable reference: the tests check it against ``torch.nn.functional.scaled_dot_product_attention``
and ``torch.nn.MultiheadAttention`` given the same weights, against the attention weights that a real
BERT-family model returns (:mod:`xaikit.attention.capture`), and additive attention against a plain loop over
every (query, key) pair.

Masks are boolean with ``True`` meaning "may attend" (the convention of torch's
``scaled_dot_product_attention``; ``nn.MultiheadAttention`` uses the opposite one), 0/1 integers (as
tokenizers return them), or additive floats (0 keep, ``-inf`` drop). A float mask of only 0s and 1s is refused:
added to the scores it would mask nothing; pass ``mask.bool()``.

Inputs of different float dtypes (a float64 ``q`` with a float32 ``k``, float64 inputs with float32 weights)
are computed in their common dtype (``torch.promote_types``), as :func:`additive_attention` always did.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import torch

from xaikit._validate import bool_flags, check_float, check_int

__all__ = [
    "scaled_dot_product_attention", "additive_attention", "self_attention", "multi_head_attention", "causal_mask", "padding_mask",
    "sinusoidal_positional_encoding", "position_shift", "position_similarity", "row_entropy", "max_weight",
    "softmax_jacobian_norm", "qk_variance", "worked_example", "AttentionSteps", "dot_scores", "general_scores",
    "additive_scores", "cross_attention", "CrossAttentionSteps",
]


# -- input checks -----------------------------------------------------------------------------------------
def _as_tensor(x, name: str) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        t = x
    else:
        try:
            t = torch.as_tensor(x, dtype=torch.get_default_dtype())
        except (TypeError, ValueError, RuntimeError) as err:
            raise TypeError(f"{name} must be a torch tensor or a nested list of numbers, got "
                            f"{type(x).__name__}") from err
    if not t.is_floating_point():
        t = t.to(torch.get_default_dtype())
    return t


def _promoted(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The tensors in their common dtype (``torch.promote_types``): float64 q with float32 k computes in
    float64, as NumPy would, instead of torch's "expected m1 and m2 to have the same dtype"."""
    dtype = _common_dtype(*tensors)
    return tuple(t.to(dtype) for t in tensors)


def _common_dtype(*tensors: torch.Tensor) -> torch.dtype:
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    return dtype


def _check_qkv(q, k, v, same_width: bool = True):
    q, k, v = _promoted(_as_tensor(q, "q"), _as_tensor(k, "k"), _as_tensor(v, "v"))
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (..., tokens, features), got shape "
                             f"{tuple(t.shape)}; for one token pass t.unsqueeze(0)")
    if same_width and q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same last dimension d_k (a query is compared with every key "
                         f"by a dot product): q is {tuple(q.shape)}, k is {tuple(k.shape)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same number of tokens (one value per key): k is "
                         f"{tuple(k.shape)}, v is {tuple(v.shape)}")
    try:
        torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError as err:
        raise ValueError(f"q, k and v must have matching batch dimensions: q is {tuple(q.shape)}, k is "
                         f"{tuple(k.shape)}, v is {tuple(v.shape)}") from err
    return q, k, v


def _check_mask(mask, scores_shape: tuple[int, ...], name: str = "mask") -> torch.Tensor:
    """A boolean (True = may attend) or additive float mask that broadcasts to ``scores_shape``."""
    mask = mask if isinstance(mask, torch.Tensor) else torch.as_tensor(mask)
    t_q, t_k = scores_shape[-2:]
    expected = f"(..., {t_q}, {t_k}) or broadcastable to it, e.g. ({t_q}, {t_k}) or (B, 1, {t_k})"
    if mask.dim() < 1 or mask.dim() > len(scores_shape):
        raise ValueError(f"{name} has shape {tuple(mask.shape)}; the attention scores are {tuple(scores_shape)}, "
                         f"so the mask must be {expected}")
    try:
        shape = torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        shape = None
    # a tokenizer's attention_mask (B, T) passed as is: read as (queries, keys) when B == T_q
    looks_padding = (mask.dim() == 2 and len(scores_shape) >= 3 and mask.shape[0] == scores_shape[0]
                     and mask.shape[1] == t_k)
    padding_fix = (f"If {name} is a tokenizer's attention_mask (B, T) with 1 for real tokens, pass "
                   f"padding_mask({name}), which gives the (B, 1, T) key mask")
    if shape != torch.Size(scores_shape):
        raise ValueError(f"{name} has shape {tuple(mask.shape)}, which does not fit the attention scores "
                         f"{tuple(scores_shape)} (queries x keys); the mask must be {expected}"
                         + (f". {padding_fix}" if looks_padding else ""))
    if looks_padding and mask.dtype != torch.bool and not mask.is_floating_point():
        raise ValueError(f"{name} is a 0/1 integer tensor of shape {tuple(mask.shape)} for attention scores "
                         f"{tuple(scores_shape)} whose batch size is {scores_shape[0]}: it would be read as "
                         f"({t_q} queries, {t_k} keys), the same mask for every batch element, but it looks like "
                         f"a tokenizer's attention_mask (B, T). {padding_fix}; for a (queries, keys) mask shared "
                         f"by the batch pass {name}.bool()")
    if mask.dtype != torch.bool and not mask.is_floating_point():
        mask = mask.bool()  # 0/1 integer masks, as tokenizers return them
    elif mask.is_floating_point() and bool(((mask == 0) | (mask == 1)).all()) and bool((mask == 1).any()):
        # torch.tril(torch.ones(T, T)) is float; added to the scores it shifts them by 0 or 1
        # and masks nothing (the future key kept weight 0.087). Refused rather than guessed.
        raise ValueError(
            f"{name} is a float tensor of only 0s and 1s ({mask.dtype}, e.g. torch.tril(torch.ones(T, T))). A "
            f"float mask is additive: it is added to the scores, so 0 and 1 would mask nothing. For a keep/drop "
            f"mask pass {name}.bool() (True = may attend; see causal_mask and padding_mask), or an additive mask "
            f"with 0 to keep and -inf to drop, e.g. torch.zeros(T, T).masked_fill({name} == 0, float('-inf'))"
        )
    return mask


def _apply_mask(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    if mask is None:
        return scores
    if mask.dtype == torch.bool:
        return scores.masked_fill(~mask, float("-inf"))  # a masked key gets weight exp(-inf) = 0
    return scores + mask.to(scores.dtype)  # additive mask (0 keep, large negative drop), as BERT builds it


# -- the two core functions -------------------------------------------------------------------------------
def _weigh(scores: torch.Tensor, v: torch.Tensor, mask) -> tuple[torch.Tensor, torch.Tensor]:
    """The step every attention shares once its (..., T_q, T_k) scores exist: mask, softmax over the keys,
    weighted sum of the values. Returns ``(out, weights)``."""
    if scores.shape[-1] == 0:
        raise ValueError("k has no keys (T_k = 0): each query needs at least one key to attend to")
    if not bool(torch.isfinite(scores).all()):
        raise ValueError("the scores are not finite (inf or NaN): q or k holds NaN or inf, or their products "
                         "overflow float32; check the inputs, or scale q and k down (e.g. q / q.abs().max())")
    if mask is not None:
        mask = _check_mask(mask, tuple(scores.shape))
    scores = _apply_mask(scores, mask)  # (..., T_q, T_k)
    weights = torch.softmax(scores, dim=-1)  # (..., T_q, T_k), rows sum to 1
    empty = int(torch.isneginf(scores).all(-1).sum())
    if empty:
        warnings.warn(f"mask: {empty} query row(s) may attend to no key, so their weights and outputs are NaN "
                      "(as in torch); let every query see at least one key (a causal mask keeps the diagonal)",
                      stacklevel=3)
    out = weights @ v  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    return out, weights


def scaled_dot_product_attention(q, k, v, mask=None, scale: float | None = None):
    """``softmax(q k^T * scale) v`` with ``scale = 1 / sqrt(d_k)`` by default.

    Args:
        q: queries ``(..., T_q, d_k)``; k: keys ``(..., T_k, d_k)``; v: values ``(..., T_k, d_v)``.
        mask: optional, broadcastable to ``(..., T_q, T_k)``: boolean (``True`` = may attend) or an
            additive float mask. See :func:`causal_mask` and :func:`padding_mask`; a tokenizer's ``(B, T)``
            ``attention_mask`` goes through :func:`padding_mask` (passed as is with ``B == T`` it is refused,
            as it would be read as queries x keys).
        scale: the factor on the scores; ``1 / temperature``. Default ``1 / sqrt(d_k)`` (Vaswani et al.).

    Returns:
        ``(out, weights)``: ``out`` is ``(..., T_q, d_v)``; ``weights`` is ``(..., T_q, T_k)``, each row a
        probability distribution over the keys (rows of fully masked queries are NaN, as in torch).
    """
    q, k, v = _check_qkv(q, k, v)
    d_k = q.size(-1)
    if scale is None:
        scale = 1.0 / math.sqrt(d_k)
    else:
        scale = float(scale)
        if not math.isfinite(scale):
            raise ValueError(f"scale must be a finite number (1 / temperature), got {scale}")
    scores = (q @ k.transpose(-2, -1)) * scale  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    return _weigh(scores, v, mask)


@dataclass
class AttentionSteps:
    """Every intermediate of one self-attention, for figures: ``q = x W_Q`` ... ``out = weights v``."""

    x: torch.Tensor  # (T, d_model) inputs
    q: torch.Tensor  # (T, d_k)
    k: torch.Tensor  # (T, d_k)
    v: torch.Tensor  # (T, d_v)
    scores: torch.Tensor  # (T, T) scaled and masked scores (-inf where masked)
    weights: torch.Tensor  # (T, T) attention weights
    out: torch.Tensor  # (T, d_v)
    scale: float


def self_attention(x, w_q, w_k, w_v, mask=None, scale: float | None = None) -> AttentionSteps:
    """One attention head on inputs ``x``: ``Q = X W_Q, K = X W_K, V = X W_V``, then
    :func:`scaled_dot_product_attention`. Returns all intermediates (notebook 03, section 2)."""
    x = _as_tensor(x, "x")
    w_q, w_k, w_v = (_as_tensor(w, n) for w, n in ((w_q, "w_q"), (w_k, "w_k"), (w_v, "w_v")))
    if x.dim() != 2:
        raise ValueError(f"x must be (tokens, features), got shape {tuple(x.shape)}")
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v)):
        if w.dim() != 2 or w.shape[0] != x.shape[1]:
            raise ValueError(f"{name} must be (d_model, d_out) with d_model = x.shape[1] = {x.shape[1]}, got "
                             f"{tuple(w.shape)}")
    x, w_q, w_k, w_v = _promoted(x, w_q, w_k, w_v)
    q = x @ w_q  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
    k = x @ w_k  # (T, d_k)
    v = x @ w_v  # (T, d_v)
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)  # (T, d_v), (T, T)
    used = 1.0 / math.sqrt(q.size(-1)) if scale is None else float(scale)
    scores = (q @ k.T) * used  # (T, T)
    if mask is not None:
        scores = _apply_mask(scores, _check_mask(mask, tuple(scores.shape)))  # (T, T)
    return AttentionSteps(x, q, k, v, scores, weights, out, used)


def multi_head_attention(x, w_q, w_k, w_v, w_o, n_heads: int, mask=None, b_q=None, b_k=None, b_v=None,
                         b_o=None):
    """Multi-head self-attention: split into heads, attend, concatenate, project with ``W_O``.

    ``head_i = softmax(Q_i K_i^T / sqrt(d_head)) V_i`` with ``Q = X W_Q + b_q`` cut into ``n_heads``
    slices of ``d_head = d_model / n_heads`` features, and ``out = Concat(head_1..head_h) W_O + b_o``
    (Vaswani et al. 2017, section 3.2.2).

    Args:
        x: ``(B, T, d_model)`` or ``(T, d_model)``.
        w_q, w_k, w_v, w_o: ``(d_model, d_model)`` matrices multiplying from the right (``Q = X W_Q``);
            ``nn.Linear`` stores the transpose, so pass ``linear.weight.T``.
        n_heads: number of heads; must divide ``d_model``.
        mask: boolean (True = may attend) or additive; ``(T, T)``, ``(B, 1, T)`` (padding, see
            :func:`padding_mask`), ``(B, T, T)`` or ``(B, n_heads, T, T)``.
        b_q, b_k, b_v, b_o: optional biases ``(d_model,)`` (BERT has them).

    Returns:
        ``(out, weights)``: ``out`` ``(B, T, d_model)`` and per-head ``weights`` ``(B, n_heads, T, T)``
        (without the batch dimension when ``x`` had none).
    """
    x = _as_tensor(x, "x")
    if x.dim() not in (2, 3):
        raise ValueError(f"x must be (B, T, d_model) or (T, d_model), got shape {tuple(x.shape)}")
    unbatched = x.dim() == 2
    if unbatched:
        x = x.unsqueeze(0)  # (1, T, C)
    B, T, C = x.size()
    n_heads = check_int(n_heads, "n_heads", 1, hint="use 1, 2, 4, ... heads")
    if C % n_heads != 0:
        divisors = [h for h in range(1, C + 1) if C % h == 0]
        raise ValueError(f"d_model = {C} is not divisible by n_heads = {n_heads}: each head gets d_model / "
                         f"n_heads features; choose n_heads from {divisors}")
    weights_in = {}
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v), ("w_o", w_o)):
        w = _as_tensor(w, name)
        if tuple(w.shape) != (C, C):
            raise ValueError(f"{name} must be (d_model, d_model) = ({C}, {C}), got {tuple(w.shape)}; an "
                             f"nn.Linear's weight is stored transposed, pass linear.weight.T")
        weights_in[name] = w
    biases = {}
    for name, b in (("b_q", b_q), ("b_k", b_k), ("b_v", b_v), ("b_o", b_o)):
        if b is not None:
            b = _as_tensor(b, name)
            if tuple(b.shape) != (C,):
                raise ValueError(f"{name} must have shape (d_model,) = ({C},), got {tuple(b.shape)}")
        biases[name] = b
    dtype = _common_dtype(x, *weights_in.values(), *(b for b in biases.values() if b is not None))
    x = x.to(dtype)
    weights_in = {name: w.to(dtype) for name, w in weights_in.items()}
    biases = {name: None if b is None else b.to(dtype) for name, b in biases.items()}
    hs = C // n_heads  # features per head, d_head

    def project(w, b):
        y = x @ w  # (B, T, C) @ (C, C) -> (B, T, C)
        return y if b is None else y + b  # (B, T, C)

    q = project(weights_in["w_q"], biases["b_q"]).view(B, T, n_heads, hs).transpose(1, 2)  # (B, nh, T, hs)
    k = project(weights_in["w_k"], biases["b_k"]).view(B, T, n_heads, hs).transpose(1, 2)  # (B, nh, T, hs)
    v = project(weights_in["w_v"], biases["b_v"]).view(B, T, n_heads, hs).transpose(1, 2)  # (B, nh, T, hs)
    if mask is not None:
        mask = mask if isinstance(mask, torch.Tensor) else torch.as_tensor(mask)
        if mask.dim() in (2, 3):
            mask = mask.unsqueeze(-3)  # (T, T) -> (1, T, T); (B, T, T) -> (B, 1, T, T): same for every head
        if mask.dim() == 3:
            mask = mask.unsqueeze(0)  # (1, 1, T, T)
        mask = _check_mask(mask, (B, n_heads, T, T))  # broadcastable to (B, nh, T, T)
    y, att = scaled_dot_product_attention(q, k, v, mask=mask)  # (B, nh, T, hs), (B, nh, T, T)
    y = y.transpose(1, 2).contiguous().view(B, T, C)  # concatenate the heads: (B, T, C)
    out = y @ weights_in["w_o"]  # (B, T, C)
    if biases["b_o"] is not None:
        out = out + biases["b_o"]  # (B, T, C)
    if unbatched:
        return out[0], att[0]  # (T, C), (nh, T, T)
    return out, att


# -- additive (Bahdanau) attention ----------------------------------------------------------------------------
def additive_attention(q, k, v, w_q, w_k, v_a, mask=None):
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
def dot_scores(q, k, mask=None, scaled: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
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


def general_scores(q, k, w, mask=None) -> tuple[torch.Tensor, torch.Tensor]:
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


def additive_scores(q, k, w_q, w_k, v_a, mask=None) -> tuple[torch.Tensor, torch.Tensor]:
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


def cross_attention(x_q, x_kv, w_q, w_k, w_v, mask=None, score: str = "scaled_dot",
                    w=None) -> CrossAttentionSteps:
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


# -- masks -------------------------------------------------------------------------------------------------
def causal_mask(n_tokens: int) -> torch.Tensor:
    """``(T, T)`` boolean, True on and below the diagonal: token t sees tokens 0..t only (GPT)."""
    n_tokens = check_int(n_tokens, "n_tokens", 1)
    return torch.ones(n_tokens, n_tokens, dtype=torch.bool).tril()  # (T, T)


def padding_mask(attention_mask) -> torch.Tensor:
    """From a tokenizer's ``attention_mask`` (``(B, T)`` or ``(T,)``, 1 = real token, 0 = padding) to a
    boolean key mask ``(B, 1, T)`` that broadcasts over queries (and over heads in
    :func:`multi_head_attention`): no query attends to a padding token."""
    if isinstance(attention_mask, (str, bytes)):
        raise TypeError(f"attention_mask must be a tensor or a list of 0s and 1s, got {type(attention_mask).__name__} "
                        f"{attention_mask!r}; write it as a list, e.g. [1, 1, 0, 1], or take the tokenizer's "
                        f"inputs['attention_mask']")
    try:
        m = attention_mask if isinstance(attention_mask, torch.Tensor) else torch.as_tensor(attention_mask)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"attention_mask must be a tensor or a list of 0s and 1s, got "
                        f"{type(attention_mask).__name__}; e.g. [1, 1, 0, 1], or the tokenizer's "
                        f"inputs['attention_mask']") from err
    if m.dim() == 1:
        m = m.unsqueeze(0)  # (1, T)
    if m.dim() != 2:
        raise ValueError(f"attention_mask must be (B, T) or (T,) with 1 for real tokens and 0 for padding, got "
                         f"shape {tuple(m.shape)}")
    if not bool(((m == 0) | (m == 1)).all()):
        raise ValueError("attention_mask must contain only 0 (padding) and 1 (real token)")
    return m.bool().unsqueeze(1)  # (B, 1, T)


# -- positions ----------------------------------------------------------------------------------------------
def sinusoidal_positional_encoding(n_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The fixed encoding of Vaswani et al. (2017): ``(n_positions, d_model)``, with
    ``PE[pos, 2i] = sin(pos / base^(2i/d))`` and ``PE[pos, 2i+1] = cos(pos / base^(2i/d))``."""
    n_positions = check_int(n_positions, "n_positions", 1)
    d_model = check_int(d_model, "d_model", 2, hint="use an even number such as 16 or 64")
    base = _check_base(base)
    pos = torch.arange(n_positions, dtype=torch.float64).unsqueeze(1)  # (P, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d/2),)
    angle = pos / base ** (two_i / d_model)  # (P, ceil(d/2)); wavelengths from 2*pi to base*2*pi
    pe = torch.zeros(n_positions, d_model, dtype=torch.float64)  # (P, d)
    pe[:, 0::2] = torch.sin(angle)  # even features
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])  # odd features
    return pe.to(torch.get_default_dtype())


def _check_base(base) -> float:
    """The wavelength base: > 1, so the wavelengths grow from 2 pi to base * 2 pi (0 or less gives NaN, 1 the same
    frequency in every column)."""
    return check_float(base, "base", 1.0, strict_min=True,
                       hint="base sets the longest wavelength, base * 2 pi; the usual value is 10000")


def position_shift(k: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The ``(d_model, d_model)`` matrix ``M_k`` with ``PE[p + k] = M_k @ PE[p]`` for *every* position ``p``
    (Vaswani et al. 2017, section 3.5: "for any fixed offset k, PE_{pos+k} can be represented as a linear
    function of PE_pos").

    Each (sin, cos) feature pair of frequency ``w_i = base^(-2i/d)`` turns by the angle ``k * w_i``:
    ``sin((p+k)w) = sin(pw)cos(kw) + cos(pw)sin(kw)`` and ``cos((p+k)w) = cos(pw)cos(kw) - sin(pw)sin(kw)``,
    so ``M_k`` is block diagonal with 2x2 rotations (``[[cos, sin], [-sin, cos]]``, since the features are
    stored as (sin, cos)), orthogonal, and ``M_a @ M_b = M_(a+b)``. It depends on the offset only: what
    Vaswani et al. hypothesised would let attention learn relative positions with one linear map. It holds
    for the bare sinusoidal table, not once token embeddings are added. Notebook 03.
    """
    k = check_int(k, "k", None)
    d_model = check_int(d_model, "d_model", 2)
    if d_model % 2:
        raise ValueError(f"d_model must be even for the shift to be a rotation, got {d_model}: the last sine "
                         "feature of an odd d_model has no cosine partner; use e.g. 64")
    base = _check_base(base)
    w = 1.0 / base ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (d/2,) frequencies
    c, s = torch.cos(k * w), torch.sin(k * w)  # (d/2,)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    even, odd = torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)
    m[even, even], m[even, odd] = c, s  # new sin =  cos(kw) sin + sin(kw) cos
    m[odd, even], m[odd, odd] = -s, c  # new cos = -sin(kw) sin + cos(kw) cos
    return m.to(torch.get_default_dtype())


@bool_flags
def position_similarity(pe: torch.Tensor, normalize: bool = True) -> torch.Tensor:
    """``(P, P)`` dot products between position vectors (cosine similarity when ``normalize``): nearby
    positions are similar, and the similarity depends only on the offset between two positions."""
    pe = _as_tensor(pe, "pe")
    if pe.dim() != 2:
        raise ValueError(f"pe must be (positions, d_model), got shape {tuple(pe.shape)}")
    if normalize:
        norms = pe.norm(dim=-1, keepdim=True)  # (P, 1)
        if bool((norms == 0).any()):
            zero = [int(i) for i in torch.nonzero(norms.squeeze(-1) == 0).ravel()]
            raise ValueError(f"position_similarity: row(s) {zero} of pe are all zero, and a zero vector has no "
                             f"direction, so its cosine similarity is undefined (NaN); pass normalize=False for the "
                             f"plain dot products, or leave the zero rows out")
        pe = pe / norms  # (P, d), unit rows
    return pe @ pe.T  # (P, P)


# -- saturation -------------------------------------------------------------------------------------------
def row_entropy(weights: torch.Tensor) -> torch.Tensor:
    """Entropy in nats of each attention row, ``(..., T_q)``: log(T_k) for uniform rows, 0 for one-hot."""
    w = _check_weight_rows(_as_tensor(weights, "weights"), "row_entropy")
    return -(w * torch.log(w.clamp_min(1e-30))).sum(-1)  # (..., T_q); 0 * log 0 taken as 0


def _check_weight_rows(w: torch.Tensor, method: str) -> torch.Tensor:
    """Refuse rows that are not probability distributions (a negative weight, or a row not summing to 1):
    an entropy of such a row is a number with no meaning (``[2, -1]`` gives -70 nats). A row that is all NaN
    (a query that sees no key, see :func:`scaled_dot_product_attention`) is let through and gives NaN."""
    if w.dim() == 0:
        raise ValueError(f"{method}: weights must have at least one dimension (..., T_q, T_k), got a scalar")
    finite_rows = torch.isfinite(w).all(-1)  # (...,)
    rows = w[finite_rows]  # (n, T_k)
    if rows.numel() == 0:
        return w
    tol = 1e-3 if w.dtype in (torch.float16, torch.bfloat16) else 1e-5
    if bool((rows < -tol).any()):
        raise ValueError(f"{method}: weights holds a negative value ({float(rows.min()):.4g}); attention weights are "
                         f"a softmax, each row a probability distribution. Pass the weights "
                         f"(torch.softmax(scores, -1)), not the scores")
    sums = rows.double().sum(-1)
    worst = float((sums - 1).abs().max())
    if worst > max(tol, 1e-6 * rows.shape[-1]) * 10:
        raise ValueError(f"{method}: a row of weights sums to {float(sums[(sums - 1).abs().argmax()]):.4g}, not 1; "
                         f"each row of attention weights is a probability distribution over the keys. Pass the "
                         f"softmax weights, or normalise the rows (w / w.sum(-1, keepdim=True))")
    return w


def max_weight(weights: torch.Tensor) -> torch.Tensor:
    """The largest weight of each attention row, ``(..., T_q)``: 1 means the softmax is saturated."""
    return _check_weight_rows(_as_tensor(weights, "weights"), "max_weight").amax(-1)  # (..., T_q)


def softmax_jacobian_norm(weights: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of the softmax Jacobian ``d p / d s = diag(p) - p p^T`` for each row ``p``,
    ``(..., T_q)``: how strongly the weights still react to the scores. It goes to 0 as the softmax
    saturates, so gradients through a saturated attention vanish (the reason for ``1/sqrt(d_k)``)."""
    p = _check_weight_rows(_as_tensor(weights, "weights"), "softmax_jacobian_norm")
    jac = torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)  # (..., T_k, T_k)
    return jac.pow(2).sum((-2, -1)).sqrt()  # (..., T_q)


def qk_variance(d_ks=(1, 4, 16, 64, 256), n_samples: int = 20000, seed: int = 0) -> dict[str, list[float]]:
    """Measured variance of ``q . k`` for ``q, k ~ N(0, I_{d_k})``, raw and divided by ``sqrt(d_k)``.

    The raw variance grows like ``d_k`` (a sum of ``d_k`` unit-variance products); the scaled one stays
    near 1 (Vaswani et al. 2017, footnote 4). Returns ``{"d_k", "raw", "scaled"}`` lists.
    """
    n_samples = check_int(n_samples, "n_samples", 2)
    gen = torch.Generator().manual_seed(check_int(seed, "seed", 0))
    raw, scaled = [], []
    for d_k in d_ks:
        d_k = check_int(d_k, "d_k", 1)
        q = torch.randn(n_samples, d_k, generator=gen, dtype=torch.float64)  # (N, d_k)
        k = torch.randn(n_samples, d_k, generator=gen, dtype=torch.float64)  # (N, d_k)
        dots = (q * k).sum(-1)  # (N,)
        raw.append(float(dots.var()))
        scaled.append(float((dots / math.sqrt(d_k)).var()))
    return {"d_k": [int(d) for d in d_ks], "raw": raw, "scaled": scaled}


# -- the lecture's worked example ------------------------------------------------------------------------
def worked_example() -> dict[str, torch.Tensor]:
    """The three-input example of the lecture (after R. Karim, "Illustrated: Self-Attention", 2019):
    inputs ``[1,0,1,0], [0,2,0,2], [1,1,1,1]`` with 4x3 weight matrices ``w_q, w_k, w_v``."""
    x = torch.tensor([[1.0, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]])  # (3, 4)
    w_k = torch.tensor([[0.0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]])  # (4, 3)
    w_q = torch.tensor([[1.0, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]])  # (4, 3)
    w_v = torch.tensor([[0.0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]])  # (4, 3)
    return {"x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v}
