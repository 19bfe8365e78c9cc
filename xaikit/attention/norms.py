"""Attention is not only a weight: the norm of what each head actually moves (notebook 03, section 9).

Kobayashi, Kuribayashi, Yokoi and Inui (2020), "Attention is Not Only a Weight: Analyzing Transformers
with Vector Norms", EMNLP, section 3. A head's contribution to token ``i`` is a weighted sum of
*transformed* vectors, not of the inputs themselves:

    y_i = sum_h sum_j alpha^h_ij f^h(x_j) + b_O,    f^h(x) = (x W_V^h + b_V^h) W_O^h,

where ``W_V^h, b_V^h`` are head ``h``'s slice of the value projection (bias included) and ``W_O^h`` is
head ``h``'s rows of the output dense layer (its ``d_head`` input features). The output bias ``b_O`` is
shared by all heads and depends on no token, so it is kept apart. ``y`` is what the attention-output
dense layer returns, before dropout, the residual and LayerNorm. Kobayashi et al. read a head by
``||alpha_ij f(x_j)||`` instead of ``alpha_ij``; since ``alpha_ij >= 0`` it equals
``alpha_ij ||f(x_j)||``: a large weight on a token whose transformed vector is short moves little.
Their finding: the weight on ``[CLS]``, ``[SEP]`` and punctuation is large but their ``||f(x)||`` is small.

Works for BERT-family text encoders (BERT, RoBERTa, MiniLM, DistilBERT) in transformers 4.x and 5.x; the
parts are found by structure (:mod:`xaikit.models.arch`). The model runs on its own device and dtype;
everything returned is on the CPU (float16/bfloat16 widened to float32).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn

from xaikit._fn import ensure_eval, in_float32, to_cpu
from xaikit._text_input import Tokenizer
from xaikit._validate import check_int
from xaikit.attention.capture import _prepared_text, _run_with_hooks, qkv_projections
from xaikit.models import arch

if TYPE_CHECKING:
    import numpy as np

__all__ = ["AttentionNorms", "attention_norms", "output_projection"]

# the attention-output dense layer: BERT/RoBERTa/MiniLM (attention.output.dense), DistilBERT (out_lin),
# and the names of other families' single attention modules
_OUTPUT_PATHS = ("output.dense", "out_lin", "o_proj", "out_proj", "dense")


def output_projection(model: nn.Module, layer: int) -> nn.Linear:
    """The attention-output dense layer ``W_O, b_O`` of block ``layer`` (before dropout and residual)."""
    layer = arch.check_layer(model, layer)
    block = arch.encoder_layers(model)[layer]
    att = getattr(block, "attention", None)
    for owner in (att, arch.attention_modules(model)[layer]):
        for path in _OUTPUT_PATHS:
            found = owner
            for part in path.split("."):
                found = getattr(found, part, None)
            if isinstance(found, nn.Linear):
                return found
    raise ValueError(f"encoder block {layer} ({type(block).__name__}) has no attention output projection xaikit "
                     f"knows (looked for {', '.join(_OUTPUT_PATHS)}); pass a BERT-family model")


@dataclass
class AttentionNorms:
    """Attention weights and the norms of the weighted transformed vectors, every layer and head (CPU).

    Attributes:
        tokens: the model's tokens (``[CLS] ... [SEP]``).
        weights: ``(n_layers, n_heads, T, T)`` ``alpha_ij``, row = query ``i``, as the model returns them.
        f_norms: ``(n_layers, n_heads, T)`` ``||f^h(x_j)||`` of every key token ``j``.
        transformed: ``(n_layers, n_heads, T, d_model)`` the vectors ``f^h(x_j)`` themselves.
        output_bias: ``(n_layers, d_model)`` ``b_O``, the part of the output no head moves.
        special: ``(T,)`` True for the tokenizer's special tokens (``[CLS]``, ``[SEP]``).
    """

    tokens: list[str]
    weights: torch.Tensor
    f_norms: torch.Tensor
    transformed: torch.Tensor
    output_bias: torch.Tensor
    special: torch.Tensor

    @property
    def n_layers(self) -> int:
        return int(self.weights.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.weights.shape[1])

    @property
    def norms(self) -> torch.Tensor:
        """``(n_layers, n_heads, T, T)`` ``||alpha_ij f(x_j)|| = alpha_ij ||f(x_j)||`` (``alpha >= 0``)."""
        return self.weights * self.f_norms.unsqueeze(-2)

    def _check(self, layer, head) -> tuple[int, int]:
        layer = check_int(layer, "layer", -self.n_layers, self.n_layers - 1,
                          hint=f"the model has {self.n_layers} layers: use 0..{self.n_layers - 1}")
        head = check_int(head, "head", -self.n_heads, self.n_heads - 1,
                         hint=f"the model has {self.n_heads} heads per layer: use 0..{self.n_heads - 1}")
        return layer % self.n_layers, head % self.n_heads

    def head(self, layer: int, head: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(alpha, ||alpha f(x)||)`` of one head, each ``(T, T)``."""
        layer, head = self._check(layer, head)
        w = self.weights[layer, head]  # (T, T)
        return w, w * self.f_norms[layer, head].unsqueeze(0)

    def output(self, layer: int) -> torch.Tensor:
        """``(T, d_model)`` ``sum_h sum_j alpha_ij f^h(x_j) + b_O``: the attention output dense layer's output."""
        layer, _ = self._check(layer, 0)
        w, f = self.weights[layer], self.transformed[layer].to(self.weights.dtype)  # (nh, T, T), (nh, T, d)
        return torch.einsum("hij,hjd->id", w, f) + self.output_bias[layer]

    def shares(self, tokens: torch.Tensor | np.ndarray | Sequence[bool] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Per layer and head, the share of the weight and the share of the norm that go to ``tokens``.

        ``tokens``: a ``(T,)`` boolean mask of key tokens (default: the special tokens). For each query row
        the weight share is ``sum_{j in tokens} alpha_ij`` (rows sum to 1) and the norm share is
        ``sum_{j in tokens} ||alpha_ij f(x_j)|| / sum_j ||alpha_ij f(x_j)||``; both are averaged over the
        query rows. Returns two ``(n_layers, n_heads)`` tensors.
        """
        mask = self.special if tokens is None else torch.as_tensor(tokens, dtype=torch.bool)
        if mask.shape != (len(self.tokens),):
            raise ValueError(f"tokens must be a boolean mask of the {len(self.tokens)} tokens, got shape "
                             f"{tuple(mask.shape)}")
        norms = self.norms  # (L, nh, T, T)
        weight_share = self.weights[..., mask].sum(-1).mean(-1)  # (L, nh)
        norm_share = (norms[..., mask].sum(-1) / norms.sum(-1).clamp_min(1e-30)).mean(-1)  # (L, nh)
        return weight_share, norm_share


@in_float32("model")
def attention_norms(model: nn.Module, tokenizer: Tokenizer, text: str, *,
                    max_length: int | None = None) -> AttentionNorms:
    """Run ``model`` once on ``text`` and return every head's ``alpha`` and ``||alpha f(x)||``.

    Args:
        model: a BERT-family text encoder (task head or bare); switched to eager attention and eval mode
            if needed (with a warning).
        tokenizer: the model's tokenizer.
        text: one sentence; a text longer than the model takes is cut to its first words with a warning.
        max_length: the most tokens; ``None`` is the model's maximum.

    Returns:
        An :class:`AttentionNorms`; ``output(layer)`` rebuilds the attention output dense layer from it.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a transformers model (torch nn.Module), got {type(model).__name__}")
    if arch.is_vision_model(model):
        raise ValueError("attention_norms takes a BERT-family text model; this is an image model (ViT)")
    prepared = _prepared_text(model, tokenizer, text, max_length, "attention_norms")
    arch.ensure_eager(model)
    ensure_eval(model, "attention_norms")

    n_layers, n_heads = arch.n_layers(model), arch.n_heads(model)
    values = [qkv_projections(m)[2] for m in arch.attention_modules(model)]
    outputs = [output_projection(model, i) for i in range(n_layers)]
    special = prepared.special  # (T,)
    inputs = prepared.inputs  # on the model's device

    seen: dict[int, torch.Tensor] = {}

    def keep(i):
        def hook(module, args, output):
            seen[i] = output.detach()[0]  # (T, n_heads * d_head): x W_V + b_V, every head
        return hook

    _, attentions = _run_with_hooks(model, inputs, [(v, keep(i)) for i, v in enumerate(values)])

    transformed, biases = [], []
    with torch.no_grad():
        for i in range(n_layers):
            v = seen[i]  # (T, nh * d_head)
            T = v.shape[0]
            dense = outputs[i]
            w_o = dense.weight.T.reshape(n_heads, -1, dense.out_features)  # (nh, d_head, d_model): W_O^h
            f = torch.bmm(v.view(T, n_heads, -1).transpose(0, 1), w_o)  # (nh, T, d_model): per head v_h W_O^h
            transformed.append(f)
            biases.append(dense.bias if dense.bias is not None else torch.zeros_like(dense.weight[:, 0]))
        f_all = torch.stack(transformed)  # (L, nh, T, d_model)
        f_norms = torch.linalg.vector_norm(f_all, dim=-1)  # (L, nh, T)
    weights = torch.stack([a[0] for a in attentions])  # (L, nh, T, T)
    tokens = list(prepared.tokens)
    return AttentionNorms(tokens=tokens, weights=to_cpu(weights), f_norms=to_cpu(f_norms), transformed=to_cpu(f_all),
                          output_bias=to_cpu(torch.stack(biases).detach()), special=special.cpu())
