"""Self-attention written out by hand: scaled dot-product attention, self-attention step by step, multi-head
attention, masks and the lecture's worked example (notebook 03). The other scores (Bahdanau's additive, Luong's
dot and general, cross-attention) are in :mod:`xaikit.attention.scores`, positional encodings in
:mod:`xaikit.attention.positions`, the measures of softmax saturation in :mod:`xaikit.attention.saturation`;
they share this module's input checks.

Vaswani et al. (2017), "Attention Is All You Need", NeurIPS: ``Attention(Q, K, V) = softmax(Q K^T /
sqrt(d_k)) V``, multi-head attention ``Concat(head_1, ..., head_h) W_O``.

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
are computed in their common dtype (``torch.promote_types``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import torch

from xaikit._moved import moved_name
from xaikit._types import Input
from xaikit._validate import check_int

__all__ = ["scaled_dot_product_attention", "self_attention", "multi_head_attention", "causal_mask", "padding_mask",
           "worked_example", "AttentionSteps"]


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


def scaled_dot_product_attention(q: Input, k: Input, v: Input, mask: Input | None = None,
                                 scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
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


def self_attention(x: Input, w_q: Input, w_k: Input, w_v: Input, mask: Input | None = None,
                   scale: float | None = None) -> AttentionSteps:
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


def multi_head_attention(x: Input, w_q: Input, w_k: Input, w_v: Input, w_o: Input, n_heads: int,
                         mask: Input | None = None, b_q: Input | None = None, b_k: Input | None = None,
                         b_v: Input | None = None, b_o: Input | None = None) -> tuple[torch.Tensor, torch.Tensor]:
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


# -- masks -------------------------------------------------------------------------------------------------
def causal_mask(n_tokens: int) -> torch.Tensor:
    """``(T, T)`` boolean, True on and below the diagonal: token t sees tokens 0..t only (GPT)."""
    n_tokens = check_int(n_tokens, "n_tokens", 1)
    return torch.ones(n_tokens, n_tokens, dtype=torch.bool).tril()  # (T, T)


def padding_mask(attention_mask: Input) -> torch.Tensor:
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


# -- the lecture's worked example ------------------------------------------------------------------------
def worked_example() -> dict[str, torch.Tensor]:
    """The three-input example of the lecture (after R. Karim, "Illustrated: Self-Attention", 2019):
    inputs ``[1,0,1,0], [0,2,0,2], [1,1,1,1]`` with 4x3 weight matrices ``w_q, w_k, w_v``."""
    x = torch.tensor([[1.0, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]])  # (3, 4)
    w_k = torch.tensor([[0.0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]])  # (4, 3)
    w_q = torch.tensor([[1.0, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]])  # (4, 3)
    w_v = torch.tensor([[0.0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]])  # (4, 3)
    return {"x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v}


def __getattr__(name: str) -> object:  # the names that moved to scores, positions and saturation, for one release
    return moved_name(__name__, name)
