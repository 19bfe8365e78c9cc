"""Attention editing: run a model with chosen attention weights zeroed (and the rows renormalised) or
permuted, in chosen layers and heads, without touching its weights. Used by notebook 06, sections 2-3,
and by the faithfulness lab (:mod:`xaikit.lab.removal`).

* **Erasure** (Serrano & Smith 2019, "Is Attention Interpretable?"): an item is removed by setting its
  attention weight to zero in every query's row and renormalising the row to sum to 1, so no other
  position can read it.
* **Permutation** (Jain & Wallace 2019, "Attention is not Explanation"): the weights of each row are
  shuffled over the (non-padding) keys; the same shuffle is used for every head and query of a text in a
  layer, so the weights move to other tokens.

How: transformers 5.x looks the attention function up by ``config._attn_implementation`` in its
``AttentionInterface``. Inside :func:`edited_attention` xaikit registers its own eager attention under the
name ``"xaikit_edit"`` (with the eager additive mask) and switches the model to it with
:func:`xaikit.models.hooks.attention_implementation`, which switches it back on exit, even after an error. Parameters and buffers are never written.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from xaikit._fn import inputs_to_model, to_cpu
from xaikit._validate import bool_flags, check_int
from xaikit.models.arch import attention_modules, attn_implementation, n_heads, n_layers
from xaikit.models.hooks import attention_implementation

__all__ = ["edited_attention", "run_edited", "AttentionEdit"]

_NAME = "xaikit_edit"
_ACTIVE: dict[int, tuple[int, AttentionEdit]] = {}  # id(attention module) -> (layer index, edit)
_REGISTERED = False


@dataclass
class AttentionEdit:
    """What to change: ``remove`` is a key mask ``(N,)`` or ``(B, N)`` (True = zero that token's weight),
    ``permute`` shuffles the weights; both act only in ``layers`` and ``heads``, and in the query rows
    ``queries`` (empty: every row). ``record`` keeps the edited weights of every layer in ``attentions`` (one
    ``(B, M, N, N)`` CPU tensor per layer)."""

    remove: torch.Tensor | None = None
    permute: bool = False
    layers: tuple[int, ...] = ()
    heads: tuple[int, ...] = ()
    seed: int = 0
    record: bool = False
    attentions: list = field(default_factory=list)
    _generator: torch.Generator | None = None
    queries: tuple[int, ...] = ()


def _edit_attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Eager scaled dot-product attention, with the active edit applied to the weights of this layer."""
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling  # (B, M, N, N)
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + attention_mask
    weights = torch.softmax(scores, dim=-1)  # alpha, (B, M, N_query, N_key)
    entry = _ACTIVE.get(id(module))
    if entry is not None:
        layer, edit = entry
        if layer in edit.layers:
            weights = _apply(weights, edit, attention_mask)
        if edit.record:
            edit.attentions.append(to_cpu(weights))  # a record for the user: on the CPU
    weights = torch.nn.functional.dropout(weights, p=dropout, training=module.training)
    out = torch.matmul(weights, value).transpose(1, 2).contiguous()  # (B, N, M, d_head)
    return out, weights


def _valid_keys(weights: torch.Tensor, attention_mask) -> torch.Tensor:
    """``(B, N)`` True where a key is a real token (not padding)."""
    B, _, _, N = weights.shape
    if attention_mask is None:
        return torch.ones(B, N, dtype=torch.bool, device=weights.device)
    m = attention_mask[:, 0, 0, :] if attention_mask.ndim == 4 else attention_mask
    m = m.expand(B, N) if m.shape[0] == 1 else m
    return m if m.dtype == torch.bool else m > torch.finfo(m.dtype).min / 2


def _apply(weights: torch.Tensor, edit: AttentionEdit, attention_mask) -> torch.Tensor:
    B, M, _, N = weights.shape
    heads = torch.zeros(M, dtype=torch.bool, device=weights.device)
    heads[list(edit.heads)] = True
    edited = weights
    if edit.permute:
        valid = _valid_keys(weights, attention_mask)
        index = torch.arange(N, device=weights.device).repeat(B, 1)  # (B, N)
        for b in range(B):
            keys = valid[b].nonzero().flatten()
            shuffled = keys[torch.randperm(len(keys), generator=edit._generator).to(keys.device)]
            index[b, keys] = shuffled
        gather = index[:, None, None, :].expand(B, M, weights.shape[2], N)
        edited = torch.gather(edited, -1, gather)
    if edit.remove is not None:
        remove = edit.remove.to(weights.device)
        remove = remove.expand(B, N) if remove.ndim == 1 or remove.shape[0] == 1 else remove
        kept = edited.masked_fill(remove[:, None, None, :], 0.0)  # zero the removed keys' weights
        total = kept.sum(dim=-1, keepdim=True)
        edited = torch.where(total > 0, kept / total.clamp_min(torch.finfo(kept.dtype).tiny), kept)  # renormalise
    where = heads[None, :, None, None]
    if edit.queries:  # only these query rows are edited; the shuffle drawn is the same as for every row
        rows = torch.zeros(weights.shape[2], dtype=torch.bool, device=weights.device)
        rows[[q for q in edit.queries if q < weights.shape[2]]] = True
        where = where & rows[None, None, :, None]
    return torch.where(where, edited, weights)


def _register():
    global _REGISTERED
    if _REGISTERED:
        return
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(_NAME, _edit_attention_forward)
    AttentionMaskInterface.register(_NAME, eager_mask)
    _REGISTERED = True


def _as_key_mask(remove, n_tokens: int | None) -> torch.Tensor | None:
    if remove is None:
        return None
    if isinstance(remove, torch.Tensor) and remove.dtype == torch.bool:
        if remove.ndim not in (1, 2):
            raise ValueError(f"remove must be a (N,) or (B, N) bool mask, got shape {tuple(remove.shape)}")
        return remove
    idx = [check_int(i, "remove[i]", 0) for i in list(remove)]
    if n_tokens is None:
        raise ValueError("remove as token indices needs n_tokens; pass a bool mask of shape (N,) instead")
    bad = [i for i in idx if i >= n_tokens]
    if bad:
        raise ValueError(f"remove has token indices {bad} but the text has {n_tokens} tokens (0..{n_tokens - 1})")
    mask = torch.zeros(n_tokens, dtype=torch.bool)
    mask[idx] = True
    return mask


@bool_flags
@contextmanager
def edited_attention(model: torch.nn.Module, remove: torch.Tensor | Sequence[int] | None = None,
                     layers: Sequence[int] | None = None, heads: Sequence[int] | None = None,
                     permute: bool = False, seed: int = 0, record: bool = False, n_tokens: int | None = None,
                     queries: Sequence[int] | None = None) -> Iterator[AttentionEdit]:
    """Within the ``with`` block, ``model``'s attention is edited; on exit everything is as before.

    Args:
        model: a BERT-family model with eager attention (transformers 5.x attention interface).
        remove: tokens whose attention weight is zeroed in every row before renormalising: a bool mask
            ``(N,)`` / ``(B, N)`` or a list of token indices (then give ``n_tokens``). ``None``: nothing.
        layers, heads: where to edit (``None`` = all). Negative layer indices count from the end.
        permute: shuffle each row's weights over the real tokens (Jain & Wallace).
        seed: seeds the shuffles.
        record: keep the (edited) attention of every layer in ``edit.attentions``.
        queries: the query rows (token positions) to edit, ``None`` = every row; e.g. ``(0,)`` edits only
            the ``[CLS]`` row. The shuffles drawn do not depend on it, so with the same ``seed`` the rows it
            edits get the same weights as with ``queries=None``.

    Yields:
        the :class:`AttentionEdit` in force.
    """
    impl = attn_implementation(model)
    if impl not in (None, "eager"):
        raise ValueError(f"edited_attention needs eager attention but the model uses {impl!r}; call "
                         "xaikit.models.ensure_eager(model) first")
    total, n_head = n_layers(model), n_heads(model)
    layers = tuple(range(total)) if layers is None else tuple(
        check_int(i, "layers[i]", -total, total - 1, hint=f"the model has {total} layers") % total for i in layers)
    heads = tuple(range(n_head)) if heads is None else tuple(
        check_int(h, "heads[i]", 0, n_head - 1, hint=f"the model has {n_head} heads per layer") for h in heads)
    queries = () if queries is None else tuple(check_int(q, "queries[i]", 0) for q in queries)
    edit = AttentionEdit(_as_key_mask(remove, n_tokens), bool(permute), layers, heads, seed, record,
                         queries=queries)
    edit._generator = torch.Generator().manual_seed(int(seed))
    _register()
    modules = attention_modules(model)
    for i, module in enumerate(modules):
        if id(module) in _ACTIVE:
            raise RuntimeError("edited_attention blocks cannot be nested on the same model")
        _ACTIVE[id(module)] = (i, edit)
    try:
        with attention_implementation(model, _NAME):
            yield edit
    finally:
        for module in modules:
            _ACTIVE.pop(id(module), None)


def run_edited(model: torch.nn.Module, inputs: dict, **edit_kwargs: object) -> torch.Tensor:
    """Logits ``(B, C)`` of ``model(**inputs)`` under :func:`edited_attention` (no gradients).

    ``inputs`` (a tokenizer's output) are moved to the model's device; the logits come back on the CPU.
    """
    inputs = inputs_to_model(model, inputs)
    with torch.no_grad(), edited_attention(model, **edit_kwargs):
        return to_cpu(model(**inputs).logits)
