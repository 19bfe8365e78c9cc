"""Find the parts of a Hugging Face encoder that the explanation methods hook into.

Module names move between transformers releases: a ViT's blocks are ``model.vit.encoder.layer`` in 4.x
and ``model.vit.layers`` in 5.x, so the lecture's ``vit.vit.encoder.layer[10]`` breaks on 5.x. These
helpers look the parts up by structure, for BERT-family text encoders (BERT, RoBERTa, MiniLM,
DistilBERT, ...) and ViT, in both major versions. Used by notebooks 02-05.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import torch
from torch import nn

from xaikit._validate import bool_flags

__all__ = [
    "base_model", "encoder_layers", "embeddings_module", "attention_modules", "n_layers", "n_heads",
    "is_vision_model", "ensure_eager", "check_layer",
]

_LAYER_PATHS = ("encoder.layer", "encoder.layers", "layers", "layer", "transformer.layer", "encoder.block")


def _get(obj, dotted: str):
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def base_model(model: nn.Module) -> nn.Module:
    """The bare encoder inside a task model (``model.bert``, ``model.vit``, ...), or the model itself."""
    base = getattr(model, "base_model", None)
    return base if isinstance(base, nn.Module) else model


def encoder_layers(model: nn.Module) -> list[nn.Module]:
    """The encoder blocks in order (``BertLayer``, ``ViTLayer``, ...), whatever the release calls them."""
    base = base_model(model)
    for path in _LAYER_PATHS:
        layers = _get(base, path)
        if isinstance(layers, (nn.ModuleList, list, tuple)) and len(layers) > 0:
            return list(layers)
    raise ValueError(
        f"model ({type(model).__name__}) has no encoder blocks xaikit can find (looked for "
        f"{', '.join(_LAYER_PATHS)} under {type(base).__name__}); pass a BERT-family or ViT model"
    )


def embeddings_module(model: nn.Module) -> nn.Module:
    """The module whose output is the input of encoder block 0 (``BertEmbeddings``, ``ViTEmbeddings``)."""
    base = base_model(model)
    emb = getattr(base, "embeddings", None)
    if isinstance(emb, nn.Module):
        return emb
    raise ValueError(f"model ({type(model).__name__}) has no `embeddings` module under {type(base).__name__}")


def attention_modules(model: nn.Module) -> list[nn.Module]:
    """Per block, the module that computes the attention probabilities (where a hook sees Q, K, V)."""
    found = []
    for i, layer in enumerate(encoder_layers(model)):
        att = getattr(layer, "attention", None)
        if att is None:
            raise ValueError(f"encoder block {i} ({type(layer).__name__}) has no `attention` submodule")
        # BERT: BertAttention.self ; ViT 4.x: ViTAttention.attention ; ViT 5.x / DistilBERT: the module itself
        inner = getattr(att, "self", None) or getattr(att, "attention", None)
        found.append(inner if isinstance(inner, nn.Module) else att)
    return found


def n_layers(model: nn.Module) -> int:
    return len(encoder_layers(model))


def n_heads(model: nn.Module) -> int:
    config = getattr(model, "config", None)
    heads = getattr(config, "num_attention_heads", None) or getattr(config, "n_heads", None)
    if heads is None:
        raise ValueError(f"cannot tell the number of attention heads of {type(model).__name__} from its config")
    return int(heads)


def is_vision_model(model: nn.Module) -> bool:
    """True for image models (a ViT-style patch embedding), False for text encoders."""
    emb = getattr(base_model(model), "embeddings", None)
    return emb is not None and hasattr(emb, "patch_embeddings")


def check_layer(model: nn.Module, layer: int, name: str = "layer") -> int:
    """A valid block index (negative counts from the end), with an error that gives the range."""
    from xaikit._validate import check_int

    total = n_layers(model)
    layer = check_int(layer, name, -total, total - 1,
                      hint=f"the model has {total} encoder blocks: use 0..{total - 1} (or -1 for the last)")
    return layer % total


def attn_implementation(model: nn.Module) -> str | None:
    """The attention implementation ``model`` runs (``"eager"``, ``"sdpa"``, ...), ``None`` for a model
    without a transformers config (:func:`xaikit.models.hooks.implementation_of`)."""
    from xaikit.models.hooks import implementation_of

    return implementation_of(model)


@bool_flags
def ensure_eager(model: nn.Module, strict: bool = False) -> nn.Module:
    """Make ``model`` return attention weights: switch SDPA / flash attention to ``"eager"``.

    transformers defaults to SDPA, which returns no weights (an empty tuple on 5.x, ``None`` on 4.x), so
    Grad-SAM, rollout and the attention explorer would see nothing. The switch changes how attention is
    computed, not the weights, and the outputs agree to float precision. With ``strict=True`` a model that
    is not eager raises instead of being switched.
    """
    impl = attn_implementation(model)
    if impl in (None, "eager"):
        return model
    fix = ('load it with attn_implementation="eager", e.g. '
           'AutoModelForSequenceClassification.from_pretrained(name, attn_implementation="eager"), '
           'or call xaikit.models.ensure_eager(model)')
    if strict:
        raise ValueError(f"model uses {impl!r} attention, which returns no attention weights; {fix}")
    from xaikit.models.hooks import set_attention_implementation

    if not set_attention_implementation(model, "eager"):
        raise ValueError(f"could not switch the model from {impl!r} to eager attention "
                         f"(it still uses {attn_implementation(model)!r}); {fix}")
    warnings.warn(f"xaikit switched the model from {impl!r} to eager attention so that it returns "
                  "attention weights (the outputs are unchanged).", UserWarning, stacklevel=2)
    return model


def assert_attentions(attentions: Sequence[torch.Tensor | None] | None,
                      model: nn.Module | None = None) -> tuple[torch.Tensor, ...]:
    """Raise a clear error when a forward pass returned no attention weights (an SDPA model)."""
    if attentions is None or len(attentions) == 0 or any(a is None for a in attentions):
        impl = attn_implementation(model) if model is not None else "unknown"
        raise ValueError(
            f"the model returned no attention weights (attention implementation {impl!r}); load it with "
            'attn_implementation="eager" or call xaikit.models.ensure_eager(model)'
        )
    return tuple(attentions)
