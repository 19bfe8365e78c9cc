"""Relevance read from a transformer's attention, layer by layer: the one rollout and the one gradient rule,
used by the text views (:mod:`xaikit.text.attention_views`, notebooks 04 and 06) and the image methods
(:mod:`xaikit.image.relevance`, notebook 07).

* **Attention rollout** (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers"): each layer's
  head-mean attention plus the residual identity, rows renormalised, multiplied from the first layer to the
  last.
* **Chefer et al.'s gradient rule** (Chefer, Gur & Wolf 2021, "Generic Attention-model Explainability for
  Interpreting Bi-Modal and Encoder-Decoder Transformers", ICCV, Eqs. 5-6): R starts as the identity and each
  layer adds mean_h ReLU(dy/dA o A) R.

Both work on the attention of any encoder (BERT's tokens, a ViT's [CLS] and patches) and return the
``(N, N)`` matrix whose [CLS] row is the view.
"""

from __future__ import annotations

import torch

from xaikit._validate import bool_flags

__all__ = ["rollout_matrix", "grad_attention_matrix"]


@bool_flags
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
    """Chefer et al.'s relevance ``(N, N)``: R = I, then R <- R + mean_h ReLU(G o A) R for each layer, from
    attention and its gradient ``(L, M, N, N)`` (or sequences of per-layer ``(M, N, N)``)."""
    n = attentions[0].shape[-1]
    r = torch.eye(n, dtype=attentions[0].dtype, device=attentions[0].device)
    for a, g in zip(attentions, gradients, strict=False):  # (M, N, N) each
        a_bar = torch.relu(g * a).mean(dim=0)  # (N, N)
        r = r + a_bar @ r
    return r
