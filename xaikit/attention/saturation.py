"""How saturated a softmax is (notebook 03): the entropy and the largest weight of each row of attention
weights, the norm of the softmax's Jacobian (how much gradient passes), and the variance of q.k with and without
Vaswani et al.'s 1/sqrt(d_k) scaling (their section 3.2.1: the reason for the scaling).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from xaikit._validate import check_int
from xaikit.attention.scratch import _as_tensor

__all__ = ["row_entropy", "max_weight", "softmax_jacobian_norm", "qk_variance"]


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


def qk_variance(d_ks: Sequence[int] = (1, 4, 16, 64, 256), n_samples: int = 20000, seed: int = 0) -> dict[str, list[float]]:
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
