"""Path methods: attributions along any monotone path from the baseline to the input.

Sundararajan, Taly & Yan (2017), section 4 (after Friedman 2004): for a path ``gamma(alpha)`` with
``gamma(0) = x'`` and ``gamma(1) = x``,

    PathIG_i(x) = integral_0^1 dF(gamma(alpha)) / dgamma_i * dgamma_i / dalpha  d alpha.

Every monotone path satisfies sensitivity, implementation invariance and completeness; among them only the
straight line (Integrated Gradients) treats symmetric inputs symmetrically. Three paths are built in:

* ``"straight"``: ``gamma(alpha) = x' + alpha (x - x')``, i.e. Integrated Gradients;
* ``"sequential"``: move ``x_1`` first, then ``x_2``, ... (each coordinate over an equal share of alpha);
* ``"power"``: ``gamma_i(alpha) = x'_i + alpha ** p_i (x_i - x'_i)`` with one exponent per coordinate.

Notebook 02, section 6 (the path picker on the contour plot).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from xaikit import _aliases
from xaikit._fn import as_baseline
from xaikit._types import Baseline, Input, ModelFn, Target
from xaikit._validate import check_choice, check_int
from xaikit.tensor.integrated import RULES, alphas_and_weights, path_gradients, warn_gap

__all__ = ["PATHS", "PathResult", "path_points", "path_integrated_gradients"]

PATHS = ("straight", "sequential", "power")


def path_points(kind: str, x: torch.Tensor, baseline: torch.Tensor, alphas: np.ndarray | Sequence[float],
                order: Sequence[int] | None = None, powers: Sequence[float] | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """``gamma(alpha_k)`` and ``dgamma/dalpha(alpha_k)`` for each alpha, both ``(S, *x.shape)``.

    ``order`` (sequential path) is the order in which the flattened coordinates move (default 0, 1, ...);
    ``powers`` (power path) is one exponent >= 1 per coordinate (default 1, 2, 3, ...).
    """
    kind = check_choice(kind, "path", PATHS)
    for option, value, belongs in (("order", order, "sequential"), ("powers", powers, "power")):
        if value is not None and kind != belongs:  # an option of another path would be ignored
            raise ValueError(f"{option} is an option of path={belongs!r}, not of path={kind!r}, where it would be "
                             f"ignored; pass path={belongs!r}, or leave {option} out")
    a = torch.as_tensor(np.asarray(alphas), dtype=x.dtype, device=x.device)  # (S,)
    diff = (x - baseline).reshape(-1)  # (d,)
    d = diff.numel()
    S = a.numel()
    if kind == "straight":
        s = a[:, None].expand(S, d)  # (S, d): the fraction of the way each coordinate has moved
        ds = torch.ones(S, d, dtype=x.dtype, device=x.device)
    elif kind == "sequential":
        order = list(range(d)) if order is None else list(order)
        for i, item in enumerate(order):  # 0.5 would be truncated to 0 by int()
            check_int(item, f"order[{i}]", hint=f"order is a permutation of the coordinates 0..{d - 1}")
        order = [int(i) for i in order]
        if sorted(order) != list(range(d)):
            raise ValueError(f"order must be a permutation of 0..{d - 1} (the flattened coordinates), got {order}")
        rank = torch.empty(d, dtype=x.dtype, device=x.device)
        rank[torch.as_tensor(order, device=x.device)] = torch.arange(d, dtype=x.dtype, device=x.device)
        u = a[:, None] * d - rank[None, :]  # (S, d): local time of each coordinate's segment
        s = u.clamp(0.0, 1.0)
        ds = ((u >= 0) & (u < 1)).to(x.dtype) * d  # d s / d alpha on the coordinate's own segment
        # the last coordinate at alpha = 1 (exact: 1 is a node as the rule gives it, and u = d - rank an integer)
        ds[(a == 1.0)[:, None].expand(S, d) & (u == 1.0)] = d
    else:
        p = torch.arange(1, d + 1, dtype=x.dtype, device=x.device) if powers is None else \
            torch.as_tensor(powers, dtype=x.dtype, device=x.device).reshape(-1)
        if p.numel() != d or bool((p < 1).any()):
            raise ValueError(f"powers must give one exponent >= 1 per coordinate ({d}), got {p.tolist()}")
        s = a[:, None] ** p[None, :]  # (S, d)
        ds = p[None, :] * a[:, None] ** (p[None, :] - 1)  # (S, d)
    points = baseline.reshape(1, -1) + s * diff[None, :]  # (S, d)
    velocity = ds * diff[None, :]  # (S, d)
    shape = (S, *x.shape)
    return points.reshape(shape), velocity.reshape(shape)


@dataclass
class PathResult:
    """Attributions of a path method, the path itself and the completeness gap (CPU tensors)."""

    attributions: torch.Tensor
    gap: float
    f_x: float
    f_baseline: float
    points: torch.Tensor
    outputs: torch.Tensor
    alphas: np.ndarray
    weights: np.ndarray
    path: str


@_aliases.captum_keywords(_aliases.IG)
def path_integrated_gradients(f: ModelFn, x: Input, baseline: Baseline = None, path: str = "straight",
                              steps: int = 200, rule: str = "riemann_middle", *, target: Target = None,
                              order: Sequence[int] | None = None, powers: Sequence[float] | None = None,
                              batch_size: int | None = None) -> PathResult:
    """Path attributions of ``f`` at ``x`` along ``path`` (see the module docstring).

    ``path="straight"`` equals :func:`xaikit.integrated_gradients` with the same rule and steps. The
    sequential path has kinks where one coordinate stops and the next starts, so the default rule is the
    midpoint rule, whose nodes never fall on a kink when ``steps`` is a multiple of the number of coordinates.

    Sundararajan, Taly & Yan (2017), section 4; notebook 02, section 6.
    """
    from xaikit._fn import call, entry, select, to_cpu

    path = check_choice(path, "path", PATHS)
    rule = check_choice(rule, "rule", RULES)
    steps = check_int(steps, "steps", 1, 100_000)
    with entry(f, x, target, "path_integrated_gradients") as (x, target):
        b = as_baseline(baseline, x)
        alphas, weights = alphas_and_weights(rule, steps)
        points, velocity = path_points(path, x, b, alphas, order, powers)
        outputs, grads = path_gradients(f, points, target, batch_size)
        w = torch.as_tensor(weights, dtype=x.dtype, device=x.device).reshape(-1, *([1] * x.ndim))
        attributions = (w * grads * velocity).sum(0)  # (...)
        with torch.no_grad():
            ends = select(call(f, torch.stack([b, x])), target)  # (2,)
        gap = float(attributions.sum()) - float(ends[1] - ends[0])
        warn_gap("path_integrated_gradients", gap, float(ends[1]), float(ends[0]), steps, rule)
        return PathResult(to_cpu(attributions), gap, float(ends[1]), float(ends[0]), to_cpu(points), to_cpu(outputs),
                          alphas, weights, path)
