"""The quadrature error of Integrated Gradients, feature by feature, against a closed-form IG.

Sundararajan, Taly & Yan (2017), "Axiomatic Attribution for Deep Networks", approximate the IG integral by
a right Riemann sum and suggest raising the steps (20 to 300) until the attributions add up to
``F(x) - F(x')`` within 5%. That completeness gap is the *sum* of the per-feature errors (the exact IG is
complete, so ``gap = sum_i (IG_i(rule, n) - IG_i)``), and errors of opposite sign cancel in a sum: a small
gap can hide large errors in single features. Measuring them needs the exact IG, which a model with a
closed-form IG provides without any quadrature:

* :class:`AdditiveModel`, ``F(x) = sum_i g_i(x_i)``: ``dF/dx_i`` depends on ``x_i`` alone, so the integral
  is ``g_i``'s own increment and ``IG_i = g_i(x_i) - g_i(x'_i)``.

Why the errors have signs (the Euler-Maclaurin formula). Write ``phi_i(alpha) = (x_i - x'_i) dF/dx_i`` at
the path point ``x' + alpha (x - x')``, so ``IG_i`` is the integral of ``phi_i`` over [0, 1]. With ``n``
nodes the leading error of feature ``i`` is

* right Riemann sum: ``+(phi_i(1) - phi_i(0)) / (2n)``; left: the same with a minus sign (order 1);
* midpoint: ``-(phi_i'(1) - phi_i'(0)) / (24 n^2)``; trapezoid: ``+(phi_i'(1) - phi_i'(0)) / (12 (n-1)^2)``
  (order 2);
* Gauss-Legendre: exact for polynomials of degree ``2n - 1``; for an analytic integrand the error falls
  faster than any power of ``n``.

A feature whose slope grows along the path and one whose slope shrinks get errors of opposite sign, and
the gap sees only their difference. :func:`riemann_end_term` computes the right Riemann sum's leading
term for any model (two gradients: at ``x'`` and at ``x``). Notebook 02, section 4.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from xaikit._fn import as_baseline, entry, to_cpu
from xaikit._types import Baseline, Input, ModelFn, Target
from xaikit._validate import check_int, check_labels, check_names
from xaikit.tensor.integrated import RULES, integrate_path, path_gradients, shared_path

if TYPE_CHECKING:
    from xaikit.tensor.integrated import IGResult

__all__ = ["AdditiveModel", "additive_toy", "RuleErrors", "quadrature_errors", "convergence_slope",
           "riemann_end_term", "path_slopes"]


class AdditiveModel:
    """``F(x) = sum_i g_i(x_i)`` on a batch ``(B, d) -> (B,)``, with its exact IG (:meth:`exact_ig`).

    ``terms`` are elementwise torch functions ``g_i``, one per feature; ``names`` label them in figures.
    """

    def __init__(self, terms: Sequence[Callable[[torch.Tensor], torch.Tensor]],
                 names: Sequence[str] | None = None):
        self.terms = tuple(terms)
        self.names = (tuple(check_labels(names, "names")) if names is not None
                      else tuple(f"x{i + 1}" for i in range(len(self.terms))))
        if len(self.names) != len(self.terms):
            raise ValueError(f"names must have one entry per term: {len(self.names)} names, {len(self.terms)} terms")

    def __call__(self, z: torch.Tensor) -> torch.Tensor:  # (B, d) -> (B,)
        if z.ndim != 2 or z.shape[1] != len(self.terms):
            raise ValueError(f"AdditiveModel takes a batch (B, {len(self.terms)}), got shape {tuple(z.shape)}")
        return sum(g(z[:, i]) for i, g in enumerate(self.terms))

    def exact_ig(self, x: torch.Tensor, baseline: float | Input | None = None) -> torch.Tensor:
        """``IG_i = g_i(x_i) - g_i(x'_i)``, from the terms alone: no gradient, no quadrature."""
        x = torch.as_tensor(x)
        b = as_baseline(baseline, x)
        return torch.stack([g(x[i:i + 1]) - g(b[i:i + 1]) for i, g in enumerate(self.terms)]).reshape(x.shape)


def _cube(t):
    return t ** 3


def _exp_half(t):
    return torch.exp(0.5 * t) - 1


def _minus_two(t):
    return -2 * t


def additive_toy() -> AdditiveModel:
    """The additive model of notebook 02, section 5: ``sin(x1) + x2^3 + (exp(x3 / 2) - 1) - 2 x4``.

    A saturating term, an accelerating one, a convex one and a linear one: their slopes move in
    different directions along a path, which is what makes the per-feature errors cancel in the gap.
    """
    return AdditiveModel((torch.sin, _cube, _exp_half, _minus_two), ("sin x1", "x2^3", "exp(x3/2)-1", "-2 x4"))


@dataclass
class RuleErrors:
    """Per-feature errors of one rule at several step counts (CPU, float64).

    Attributes:
        rule: the quadrature rule.
        steps: the step counts, ascending.
        errors: ``IG_i(rule, n) - IG_i(exact)``, shape ``(len(steps), *x.shape)``.
        gaps: the completeness gaps ``sum(IG(rule, n)) - (F(x) - F(x'))``, shape ``(len(steps),)``.
        output_change: ``F(x) - F(x')``.
    """

    rule: str
    steps: list[int]
    errors: np.ndarray
    gaps: np.ndarray
    output_change: float

    @property
    def max_error(self) -> np.ndarray:
        """The largest per-feature error ``max_i |IG_i(rule, n) - IG_i|`` at each step count."""
        return np.abs(self.errors.reshape(len(self.steps), -1)).max(1)

    @property
    def relative_gap(self) -> np.ndarray:
        """``|gap| / |F(x) - F(x')|`` at each step count."""
        return np.abs(self.gaps) / abs(self.output_change)

    @property
    def relative_max_error(self) -> np.ndarray:
        """``max_i |error_i| / |F(x) - F(x')|``: on the gap's scale."""
        return self.max_error / abs(self.output_change)

    def at(self, steps: int) -> int:
        """The row of ``steps``."""
        return self.steps.index(steps)


def quadrature_errors(f: ModelFn, exact: Input, x: Input, baseline: Baseline = None,
                      steps: Sequence[int] = (2, 4, 8, 16, 32, 64, 128, 256), rules: Sequence[str] = RULES,
                      *, target: Target = None) -> dict[str, RuleErrors]:
    """Every rule's per-feature error and completeness gap at every step count: ``{rule: RuleErrors}``.

    ``exact`` is the exact IG of ``f`` at ``x`` (from a closed form such as :meth:`AdditiveModel.exact_ig`,
    never from a quadrature). Use float64 inputs so that round-off stays far below the errors measured.
    All the nodes of all the rules are evaluated once, in one pass (as :func:`~xaikit.tensor.integrated.gap_curves`).
    """
    rules = check_names(rules, "rules", RULES)
    steps = sorted(check_int(n, "steps", 1) for n in steps)
    with entry(f, x, target, "quadrature_errors") as (x, target):
        b = as_baseline(baseline, x)
        exact = torch.as_tensor(exact, dtype=x.dtype, device=x.device)
        if exact.shape != x.shape:
            raise ValueError(f"exact must have x's shape {tuple(x.shape)}, got {tuple(exact.shape)}")
        plan, cache, ends = shared_path(f, x, b, target, None, rules, steps)
        out = {}
        for r, runs in plan.items():
            results = [integrate_path(f, x, b, al, w, target, None, r, cache=cache, ends=ends) for _, al, w in runs]
            errors = np.stack([(res.attributions - to_cpu(exact)).double().numpy() for res in results])
            out[r] = RuleErrors(r, [n for n, _, _ in runs], errors, np.array([res.gap for res in results]),
                                ends[1] - ends[0])
        return out


def convergence_slope(steps: Sequence[int], errors: Sequence[float] | np.ndarray) -> float:
    """The least-squares slope of ``log(error)`` against ``log(steps)``: ``-p`` for an error ``C / n^p``."""
    n, e = np.asarray(steps, dtype=float), np.asarray(errors, dtype=float)
    if n.shape != e.shape or n.size < 2 or (e <= 0).any():
        raise ValueError("convergence_slope needs two or more step counts with positive errors, one per step count")
    return float(np.polyfit(np.log(n), np.log(e), 1)[0])


def riemann_end_term(f: ModelFn, x: Input, baseline: Baseline = None, *,
                     target: Target = None) -> torch.Tensor:
    """The right Riemann sum's leading per-feature error times ``n``: ``(phi_i(1) - phi_i(0)) / 2``.

    ``phi_i(alpha) = (x_i - x'_i) dF/dx_i(x' + alpha (x - x'))``, so this is
    ``(x - x') * (grad F(x) - grad F(x')) / 2`` (shape of ``x``), from two gradients. With ``n`` steps
    the right sum's error in feature ``i`` is about this divided by ``n`` once ``n`` resolves the path;
    its sum over features is the gap's leading term (the left sum's is its negative).
    """
    with entry(f, x, target, "riemann_end_term") as (x, target):
        b = as_baseline(baseline, x)
        _, grads = path_gradients(f, torch.stack([b, x]), target)  # (2, ...)
        return to_cpu((x - b) * (grads[1].to(x.device) - grads[0].to(x.device)) / 2)


def path_slopes(result: IGResult) -> np.ndarray:
    """``dF/d alpha = sum_i (x_i - x'_i) dF/dx_i`` at each node of an :class:`~xaikit.tensor.integrated.IGResult`
    (``(steps,)``): the slope of the output along the path, whose values at ``alpha = 0`` and ``1`` set the
    Riemann sums' leading error ``(slope(1) - slope(0)) / (2n)``.
    """
    if result.node_sums is not None:
        return np.asarray(result.node_sums, dtype=float)
    diff = (result.x - result.baseline).reshape(1, -1)  # (1, d)
    return (result.gradients.reshape(result.steps, -1) * diff).sum(1).double().numpy()
