"""More views of one sentence, all as :class:`~xaikit.text.tokens.TokenScores` so any two can be drawn side
by side and rank-correlated (notebook 04, sections 5-7):

* **raw attention**: the [CLS] row of one layer, mean of the heads (the "last attention layer" view);
* **attention rollout** (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers"): each layer's
  head-mean attention plus the residual identity, rows renormalised, multiplied through the layers;
* **gradient-weighted attention** (Chefer, Gur & Wolf 2021, "Generic Attention-model Explainability"):
  A_bar = mean_h ReLU(dS/dA o A), accumulated as R <- R + A_bar R from R = I;
* **attention gradient** and **gradient x attention** of the last layer's [CLS] row (the rankings of
  Serrano & Smith 2019);
* **relevance propagation** (Chefer, Gur & Wolf 2021, "Transformer Interpretability Beyond Attention
  Visualization", CVPR): the same accumulation with the LRP relevance of the attention in place of A
  (:mod:`xaikit.text.lrp`);
* **Grad-SAM** (:mod:`xaikit.text.gradsam`), **SHAP** (:mod:`xaikit.text.shaptext`) and **Integrated Gradients**
  (notebook 02's engine, :mod:`xaikit.text.text_ig`).

:func:`all_views` computes them from one forward/backward pass (plus SHAP's and IG's own passes). The
views are computed on the model's device and returned on the CPU (:class:`TokenScores` holds NumPy arrays).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from xaikit._fn import in_float32, to_cpu
from xaikit._validate import check_choice, check_int, check_names, check_text
from xaikit.models.arch import check_layer
from xaikit.policies import method_threads
from xaikit.text.encoding import check_model, encode_one, fit_text
from xaikit.text.gradsam import _attention_and_gradients
from xaikit.text.registry import TEXT_METHODS, method_names
from xaikit.text.tokens import TokenScores

__all__ = ["METHODS", "rollout_matrix", "grad_attention_matrix", "raw_attention", "rollout",
           "grad_weighted_attention", "attention_gradient", "explain", "all_views"]

#: every method name :func:`explain` knows, in the order the notebook shows them (:mod:`xaikit.text.registry`).
METHODS = method_names()


def rollout_matrix(attentions: torch.Tensor, residual: bool = True) -> torch.Tensor:
    """Attention rollout ``(N, N)`` from per-layer attention ``(L, M, N, N)`` or head means ``(L, N, N)``.

    With ``residual``, each layer's matrix is 0.5 * A + 0.5 * I with rows renormalised (the residual
    connection carries the token itself forward); the product runs from the first layer to the last,
    R = A_L ... A_2 A_1, so ``R[i, j]`` is how much input token j flows into position i at the top.
    """
    a = attentions.mean(dim=1) if attentions.ndim == 4 else attentions  # (L, N, N)
    n = a.shape[-1]
    eye = torch.eye(n, dtype=a.dtype, device=a.device)
    r = eye.clone()
    for layer in a:
        step = 0.5 * layer + 0.5 * eye if residual else layer
        step = step / step.sum(dim=-1, keepdim=True)  # rows sum to 1
        r = step @ r
    return r


def grad_attention_matrix(attentions: torch.Tensor, gradients: torch.Tensor) -> torch.Tensor:
    """Chefer et al.'s relevance ``(N, N)``: R = I, then R <- R + mean_h ReLU(G o A) R for each layer."""
    n = attentions.shape[-1]
    r = torch.eye(n, dtype=attentions.dtype, device=attentions.device)
    for a, g in zip(attentions, gradients, strict=False):  # (M, N, N) each
        a_bar = torch.relu(g * a).mean(dim=0)  # (N, N)
        r = r + a_bar @ r
    return r


@dataclass
class AttentionDetail:
    """What an attention view read besides its scores: the ``layer`` whose attention it shows (raw
    attention), and the full ``(N, N)`` relevance ``matrix`` whose [CLS] row it is (rollout, Chefer et al.)."""

    layer: int | None = None
    matrix: np.ndarray | None = None


def _scores(enc, values, method: str, signed: bool = False, layer: int | None = None, matrix=None) -> TokenScores:
    detail = AttentionDetail(layer, None if matrix is None else to_cpu(matrix).numpy())
    return TokenScores(enc.tokens, to_cpu(values), method, enc.target, signed, detail)


def _check_row(row, enc) -> int:
    """``row``, a token position of the encoded text (Python's negative indices included), or an error naming it."""
    row = check_int(row, "row", hint="the position of the token whose row is shown; 0 is [CLS]")
    n = enc.n_tokens
    if not -n <= row < n:
        raise ValueError(f"row must be a token position 0..{n - 1}: {enc.text!r} has {n} tokens ([CLS] is 0); got "
                         f"{row}")
    return row


@in_float32("model")
def raw_attention(model, tokenizer, text: str, layer: int = -1, row: int = 0) -> TokenScores:
    """Where token ``row`` ([CLS] by default) looks in ``layer``, averaged over the heads."""
    enc = encode_one(model, tokenizer, text, None, method="raw_attention")
    layer = check_layer(model, layer)
    row = _check_row(row, enc)
    with torch.no_grad():
        out = model(**enc.inputs, output_attentions=True)
    a = out.attentions[layer][0].mean(dim=0)  # (N, N)
    return _scores(enc, a[row], f"attention (layer {layer})", layer=layer)


@in_float32("model")
def rollout(model, tokenizer, text: str, residual: bool = True, row: int = 0) -> TokenScores:
    """Attention rollout's [CLS] row (Abnar & Zuidema 2020)."""
    enc = encode_one(model, tokenizer, text, None, method="rollout")
    row = _check_row(row, enc)
    with torch.no_grad():
        out = model(**enc.inputs, output_attentions=True)
    a = torch.stack([t[0] for t in out.attentions])  # (L, M, N, N)
    r = rollout_matrix(a, residual)
    return _scores(enc, r[row], "rollout", matrix=r)


@in_float32("model")
def grad_weighted_attention(model, tokenizer, text: str, target: int | None = None, row: int = 0) -> TokenScores:
    """Gradient-weighted attention relevance of the [CLS] row (Chefer et al. 2021)."""
    enc = encode_one(model, tokenizer, text, target, method="grad_weighted_attention")
    row = _check_row(row, enc)
    a, g, _ = _attention_and_gradients(model, enc.inputs, enc.target)
    r = grad_attention_matrix(a, g)
    return _scores(enc, r[row], "grad-weighted attention", matrix=r)


@in_float32("model")
def attention_gradient(model, tokenizer, text: str, target: int | None = None, layer: int = -1,
                       times_attention: bool = False) -> TokenScores:
    """dS/d(alpha) of the [CLS] row in ``layer`` (mean of heads), or alpha * dS/d(alpha) (Serrano & Smith)."""
    enc = encode_one(model, tokenizer, text, target, method="attention_gradient")
    layer = check_layer(model, layer)
    a, g, _ = _attention_and_gradients(model, enc.inputs, enc.target)
    if times_attention:  # per head, then the mean of heads
        return _scores(enc, (g[layer, :, 0, :] * a[layer, :, 0, :]).mean(dim=0), "gradient x attention", signed=True)
    return _scores(enc, g[layer, :, 0, :].mean(dim=0), "gradient", signed=True)


@in_float32("model")
def explain(model, tokenizer, text: str, method: str, target: int | None = None, **kwargs) -> TokenScores:
    """One method by name (see :data:`METHODS`, read from :mod:`xaikit.text.registry`); ``target=None``
    explains the predicted class.

    A text longer than the model takes is cut once, here, to its first words (one warning), so every
    method explains the same tokens (:func:`xaikit.text.encoding.fit_text`).
    """
    method = check_choice(method, "method", method_names())
    check_model(model, tokenizer, "explain")
    text = fit_text(model, tokenizer, check_text(text), "text")
    return TEXT_METHODS[method].explain(model, tokenizer, text, target, **kwargs)


@in_float32("model")
def all_views(model, tokenizer, text: str, target: int | None = None, methods=None, layer: int = -1,
              shap_evals: int = 500, ig_steps: int = 32) -> dict[str, TokenScores]:
    """Every view in ``methods`` (default: every registered one) of one sentence, sharing one
    forward/backward pass for the methods that read it (``from_pass`` in the registry).

    ``shap_evals`` and ``ig_steps`` set the cost of the methods whose cost is ``max_evals`` or ``steps``.
    """
    shap_evals = check_int(shap_evals, "shap_evals", 2, hint="SHAP's model evaluations, e.g. 500")
    ig_steps = check_int(ig_steps, "ig_steps", 1, hint="IG's steps, e.g. 32")
    with method_threads():
        return _all_views(model, tokenizer, text, target, method_names() if methods is None else methods, layer,
                          {"max_evals": shap_evals, "steps": ig_steps})


def _all_views(model, tokenizer, text, target, methods, layer, costs) -> dict[str, TokenScores]:
    methods = check_names(methods, "methods", method_names())
    enc = encode_one(model, tokenizer, text, target, method="all_views")
    layer = check_layer(model, layer)
    a, g, logits = _attention_and_gradients(model, enc.inputs, enc.target)  # on the model's device
    out: dict[str, TokenScores] = {}
    for m in methods:
        entry = TEXT_METHODS[m]
        if entry.from_pass is not None:
            out[m] = _scores(enc, entry.from_pass(a, g, layer), m, entry.signed, layer=layer)
        else:  # enc.text: the text as cut to the model's limit, so no second warning
            options = {entry.cost: costs[entry.cost]} if entry.cost in costs else {}
            out[m] = explain(model, tokenizer, enc.text, m, enc.target, **options)
    return out
