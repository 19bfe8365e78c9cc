"""Views of one sentence read from the attention weights and their gradients, all as
:class:`~xaikit.text.tokens.TokenScores` so any two can be drawn side by side and rank-correlated (notebooks 04 and 06,
sections 5-7):

* **raw attention**: the [CLS] row of one layer, mean of the heads (the "last attention layer" view);
* **attention rollout** (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers"): each layer's
  head-mean attention plus the residual identity, rows renormalised, multiplied through the layers;
* **gradient-weighted attention** (Chefer, Gur & Wolf 2021, "Generic Attention-model Explainability"):
  A_bar = mean_h ReLU(dS/dA o A), accumulated as R <- R + A_bar R from R = I;
* **attention gradient** and **gradient x attention** of the last layer's [CLS] row (the rankings of
  Serrano & Smith 2019).

Each view registers its entry (:mod:`xaikit.text.registry`) with the function that reads it from the one
forward/backward pass :func:`xaikit.text.views.all_views` shares. The views are computed on the model's
device and returned on the CPU (:class:`TokenScores` holds NumPy arrays).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from xaikit._fn import to_cpu
from xaikit._text_input import PreparedText, Tokenizer, run_text
from xaikit._types import Target
from xaikit._validate import bool_flags, check_int
from xaikit.attention.relevance import grad_attention_matrix, rollout_matrix
from xaikit.models.arch import check_layer
from xaikit.text.gradsam import _attention_and_gradients
from xaikit.text.registry import TextMethod, register
from xaikit.text.tokens import TokenScores

__all__ = ["AttentionDetail", "raw_attention", "rollout",
           "grad_weighted_attention", "attention_gradient"]


@dataclass
class AttentionDetail:
    """What an attention view read besides its scores: the ``layer`` whose attention it shows (raw
    attention), and the full ``(N, N)`` relevance ``matrix`` whose [CLS] row it is (rollout, Chefer et al.)."""

    layer: int | None = None
    matrix: np.ndarray | None = None


@bool_flags
def view_scores(prepared: PreparedText, values, method: str, signed: bool = False, layer: int | None = None,
                matrix=None) -> TokenScores:
    """``values`` ``(N,)`` as the :class:`TokenScores` of a view of ``prepared``, with its :class:`AttentionDetail`."""
    detail = AttentionDetail(layer, None if matrix is None else to_cpu(matrix).numpy())
    return TokenScores(prepared.tokens, to_cpu(values), method, prepared.target, signed, detail)


def _check_row(row, prepared: PreparedText) -> int:
    """``row``, a token position of the prepared text (Python's negative indices included), or an error naming it."""
    row = check_int(row, "row", hint="the position of the token whose row is shown; 0 is [CLS]")
    n = prepared.n_tokens
    if not -n <= row < n:
        raise ValueError(f"row must be a token position 0..{n - 1}: {prepared.text!r} has {n} tokens ([CLS] is 0); "
                         f"got {row}")
    return row


def _attentions(prepared: PreparedText) -> tuple:
    with torch.no_grad():
        return prepared.model(**prepared.inputs, output_attentions=True).attentions


def raw_attention(model: torch.nn.Module, tokenizer: Tokenizer, text: str, layer: int = -1,
                  row: int = 0) -> TokenScores:
    """Where token ``row`` ([CLS] by default) looks in ``layer``, averaged over the heads."""
    return run_text(_raw_attention, model, tokenizer, text, method="raw_attention", layer=layer, row=row)


def _raw_attention(prepared: PreparedText, *, layer: int = -1, row: int = 0) -> TokenScores:
    layer = check_layer(prepared.model, layer)
    row = _check_row(row, prepared)
    a = _attentions(prepared)[layer][0].mean(dim=0)  # (N, N)
    return view_scores(prepared, a[row], f"attention (layer {layer})", layer=layer)


@bool_flags
def rollout(model: torch.nn.Module, tokenizer: Tokenizer, text: str, residual: bool = True,
            row: int = 0) -> TokenScores:
    """Attention rollout's [CLS] row (Abnar & Zuidema 2020)."""
    return run_text(_rollout, model, tokenizer, text, method="rollout", residual=residual, row=row)


def _rollout(prepared: PreparedText, *, residual: bool = True, row: int = 0) -> TokenScores:
    row = _check_row(row, prepared)
    a = torch.stack([t[0] for t in _attentions(prepared)])  # (L, M, N, N)
    r = rollout_matrix(a, residual)
    return view_scores(prepared, r[row], "rollout", matrix=r)


def grad_weighted_attention(model: torch.nn.Module, tokenizer: Tokenizer, text: str, *, target: Target = None,
                            row: int = 0) -> TokenScores:
    """Gradient-weighted attention relevance of the [CLS] row (Chefer et al. 2021)."""
    return run_text(_grad_weighted_attention, model, tokenizer, text, target, method="grad_weighted_attention",
                    row=row)


def _grad_weighted_attention(prepared: PreparedText, *, row: int = 0) -> TokenScores:
    row = _check_row(row, prepared)
    a, g, _ = _attention_and_gradients(prepared.model, prepared.inputs, prepared.target)
    r = grad_attention_matrix(a, g)
    return view_scores(prepared, r[row], "grad-weighted attention", matrix=r)


@bool_flags
def attention_gradient(model: torch.nn.Module, tokenizer: Tokenizer, text: str, *, target: Target = None,
                       layer: int = -1, times_attention: bool = False) -> TokenScores:
    """dS/d(alpha) of the [CLS] row in ``layer`` (mean of heads), or alpha * dS/d(alpha) (Serrano & Smith)."""
    return run_text(_attention_gradient, model, tokenizer, text, target, method="attention_gradient", layer=layer,
                    times_attention=times_attention)


def _attention_gradient(prepared: PreparedText, *, layer: int = -1,
                        times_attention: bool = False) -> TokenScores:
    layer = check_layer(prepared.model, layer)
    a, g, _ = _attention_and_gradients(prepared.model, prepared.inputs, prepared.target)
    if times_attention:  # per head, then the mean of heads
        return view_scores(prepared, (g[layer, :, 0, :] * a[layer, :, 0, :]).mean(dim=0), "gradient x attention",
                           signed=True)
    return view_scores(prepared, g[layer, :, 0, :].mean(dim=0), "gradient", signed=True)


def _gradient(prepared: PreparedText, *, layer: int = -1) -> TokenScores:
    return _attention_gradient(prepared, layer=layer)


def _gradient_x_attention(prepared: PreparedText, *, layer: int = -1) -> TokenScores:
    return _attention_gradient(prepared, layer=layer, times_attention=True)


register(TextMethod("attention", _raw_attention, lambda a, g, layer: a[layer, :, 0, :].mean(0), order=3))
register(TextMethod("rollout", _rollout, lambda a, g, layer: rollout_matrix(a)[0], order=4))
register(TextMethod("grad-weighted attention", _grad_weighted_attention,
                    lambda a, g, layer: grad_attention_matrix(a, g)[0], order=5))
register(TextMethod("gradient", _gradient, lambda a, g, layer: g[layer, :, 0, :].mean(0), signed=True, order=6))
register(TextMethod("gradient x attention", _gradient_x_attention,
                    lambda a, g, layer: (g[layer, :, 0, :] * a[layer, :, 0, :]).mean(0), signed=True, order=7))
