"""Layer-wise relevance propagation rules that know no architecture, shared by the text and image families.

Chefer, Gur & Wolf 2021, "Transformer Interpretability Beyond Attention Visualization", CVPR: the rules their
method propagates relevance with (the z+ rule for linear layers, the non-parametric rule with rescaling for
the residual adds and the two attention matmuls, eq. 5-8) and its aggregation over blocks (eq. 13-14). Used
by :mod:`xaikit.text.lrp` (BERT, notebook 06) and :mod:`xaikit.image.lrp` (ViT, notebook
07 section 4), which re-export the public names; the modules of each family hold the forward pass and the
order in which the rules are applied. See :mod:`xaikit.text.lrp` for the rules in words.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from xaikit._validate import check_choice

__all__ = ["LRPDetail", "LINEAR_RULES", "lrp_linear", "lrp_add", "lrp_matmul", "chefer_matrix", "propagate_blocks"]

#: the rules :func:`lrp_linear` knows: ``"z+"`` (alpha1-beta0, the paper's) and ``"0"`` (LRP-0).
LINEAR_RULES = ("z+", "0")
_TINY = 1e-12  # denominators smaller than this in magnitude pass no relevance. The paper's safe_divide instead
# adds 1e-9 to every denominator (and passes nothing where it is exactly 0): its R^A differs from this one by
# about 5e-7 relative on a tiny random BERT, every other step of its BERT code agreeing to float64 precision.


def _safe_div(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a / b`` where ``|b| > 1e-12``, else 0."""
    ok = b.abs() > _TINY
    return torch.where(ok, a / torch.where(ok, b, torch.ones_like(b)), torch.zeros_like(a))


def lrp_linear(x: torch.Tensor, weight: torch.Tensor, relevance: torch.Tensor, rule: str = "z+",
               bias: torch.Tensor | None = None, parts: tuple | None = None) -> torch.Tensor:
    """Relevance of the inputs ``x`` ``(..., I)`` of ``y = x W^T + b`` given the outputs' ``relevance`` ``(..., O)``.

    ``rule="z+"``: R_j = sum_i (x_j^+ w_ij^+ + x_j^- w_ij^-) / z_i^+ R_i (the bias is ignored; conserves
    relevance where z_i^+ > 0). ``rule="0"``: R_j = sum_i x_j w_ij / z_i R_i with z_i = sum_j x_j w_ij + b_i
    (LRP-0; a bias takes its share b_i / z_i R_i). ``parts``: ``(W^+, W^-)`` computed once beforehand (z+ only).
    """
    rule = check_choice(rule, "rule", LINEAR_RULES)
    if rule == "0":
        z = x @ weight.T + (0 if bias is None else bias)
        return x * (_safe_div(relevance, z) @ weight)
    wp, wn = (weight.clamp(min=0), weight.clamp(max=0)) if parts is None else parts
    xp, xn = x.clamp(min=0), x.clamp(max=0)
    s = _safe_div(relevance, xp @ wp.T + xn @ wn.T)
    return xp * (s @ wp) + xn * (s @ wn)


def _rescale(r_u: torch.Tensor, r_v: torch.Tensor, total: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The paper's eq. 8: scale the two operands' relevance so that they sum to ``total``, shared in the ratio
    |sum R^u| : |sum R^v|."""
    su, sv = r_u.sum(), r_v.sum()
    den = su.abs() + sv.abs()
    fu, fv = _safe_div(su.abs(), den) * total, _safe_div(sv.abs(), den) * total
    return r_u * _safe_div(fu, su), r_v * _safe_div(fv, sv)


def lrp_add(u: torch.Tensor, v: torch.Tensor, relevance: torch.Tensor, normalize: bool = True
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """Split the relevance of ``y = u + v`` (a residual add) between ``u`` and ``v``: R^u = u R / y, R^v = v R / y,
    then rescaled (eq. 8) so that R^u + R^v carries exactly the relevance of ``y`` (``normalize=False``: not)."""
    s = _safe_div(relevance, u + v)
    r_u, r_v = u * s, v * s
    return _rescale(r_u, r_v, relevance.sum()) if normalize else (r_u, r_v)


def lrp_matmul(a: torch.Tensor, b: torch.Tensor, relevance: torch.Tensor, scale: float = 1.0,
               normalize: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Split the relevance of ``y = scale * a @ b`` (batched over leading dimensions) between both operands.

    R^a_ik = a_ik sum_j scale b_kj R_ij / y_ij and R^b_kj = b_kj sum_i scale a_ik R_ij / y_ij (eq. 5-6); each
    alone carries all of R where y != 0, so the rescaling (eq. 8) halves them (``normalize=False``: not).
    """
    s = _safe_div(relevance, scale * (a @ b)) * scale
    r_a, r_b = a * (s @ b.transpose(-1, -2)), b * (a.transpose(-1, -2) @ s)
    return _rescale(r_a, r_b, relevance.sum()) if normalize else (r_a, r_b)


def propagate_blocks(blocks: Sequence[Any], params: Sequence[Any], r_top: torch.Tensor,
                     block_relevance: Callable[..., tuple[torch.Tensor, torch.Tensor]], scale: float,
                     heads: int
                     ) -> tuple[list[torch.Tensor], torch.Tensor, list[float]]:
    """Relevance from the top block's output ``r_top`` ``(N, D)`` down to block 0's input, one block at a time
    by ``block_relevance(block, its params, r_out, scale, heads) -> (r_in, r_attention)`` (each model family
    knows its own block; the heads above the blocks stay with it too).

    Returns the relevance of each block's attention probabilities (in block order), the relevance of block 0's
    input, and the total relevance at every boundary from the top block's output down to block 0's input
    (``len(blocks) + 1`` floats): the conservation check's numbers.
    """
    totals, r_attention, r = [], [], r_top
    for blk, b in zip(reversed(blocks), reversed(params), strict=True):
        totals.append(float(r.sum()))
        r, r_a = block_relevance(blk, b, r, scale, heads)
        r_attention.append(r_a)
    totals.append(float(r.sum()))
    return r_attention[::-1], r, totals


def chefer_matrix(attention_relevance: torch.Tensor | Sequence[torch.Tensor],
                  attention_gradients: torch.Tensor | Sequence[torch.Tensor]) -> torch.Tensor:
    """C = Abar_L ... Abar_1 with Abar_b = I + mean_h (nabla A_b o R^{A_b})^+ (the paper's eq. 13-14).

    Both arguments are ``(L, M, N, N)`` (or a list of ``(M, N, N)``); returns ``(N, N)``, whose row i says
    how much each token contributes to position i at the top.
    """
    r_a = torch.stack(list(attention_relevance)) if not isinstance(attention_relevance, torch.Tensor) \
        else attention_relevance
    grads = torch.stack(list(attention_gradients)) if not isinstance(attention_gradients, torch.Tensor) \
        else attention_gradients
    n = r_a.shape[-1]
    eye = torch.eye(n, dtype=r_a.dtype, device=r_a.device)
    c = eye.clone()
    for r_b, g_b in zip(r_a, grads, strict=True):
        c = (eye + (g_b * r_b).clamp(min=0).mean(dim=0)) @ c
    return c


@dataclass
class LRPDetail:
    """What Chefer et al.'s LRP computed besides the map, as NumPy arrays on the CPU (float64): the one record of
    both families' LRP, :func:`xaikit.text.lrp.chefer_lrp` (its scores' ``detail``) and
    :func:`xaikit.image.lrp.chefer_lrp` (whose :class:`~xaikit.image.lrp.ViTLRP` adds the map and the class).

    Attributes:
        matrix: C ``(N, N)``; the scores (text) or the map (image) are read from its [CLS] row.
        attention_relevance: R^{A_b} ``(L, M, N, N)``; gradients: nabla A_b ``(L, M, N, N)``.
        input_relevance: relevance of each token at block 0's input ``(N,)`` (summed over the hidden units).
        totals: total relevance at the logits, after each block from the last down, and at block 0's input
            ``(L + 2,)``; conservation makes them all equal (1).
        logits: ``(C,)`` of the float64 re-run.
    """

    matrix: np.ndarray
    attention_relevance: np.ndarray
    gradients: np.ndarray
    input_relevance: np.ndarray
    totals: np.ndarray
    logits: np.ndarray

    @property
    def conservation_error(self) -> float:
        """The largest relative change of the total relevance from one boundary to the next."""
        t = self.totals
        return float(np.max(np.abs(np.diff(t)) / np.maximum(np.abs(t[:-1]), 1e-300)))
