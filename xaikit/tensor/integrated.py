"""Integrated Gradients, with the path, the steps and the completeness gap in plain view.

Sundararajan, Taly & Yan (2017), "Axiomatic Attribution for Deep Networks", ICML:

    IG_i(x) = (x_i - x'_i) * integral_0^1 dF(x' + alpha (x - x')) / dx_i  d alpha

The integral is a quadrature ``sum_k w_k g(alpha_k)``; the rules and their conventions are those of
Captum's ``approximation_methods`` (Kokhlikyan et al. 2020), so Captum with the same rule and steps gives
the same attributions - with one deliberate exception, the trapezoid rule (see :func:`alphas_and_weights`).
Completeness says ``sum_i IG_i = F(x) - F(x')``; the result carries the gap between the two, which the IG
paper suggests keeping within 5% of ``|F(x) - F(x')|`` by raising the steps (:func:`steps_for_tolerance`).
Used by notebook 02 (sections 1-5) and, through :mod:`xaikit.text.text_ig`, section 8.
"""

from __future__ import annotations

import functools
import numbers
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from xaikit import _aliases
from xaikit._fn import as_baseline, call, check_finite_attributions, entry, select, to_cpu, warn
from xaikit._types import Baseline, Input, ModelFn, Target
from xaikit._validate import bool_flags, check_choice, check_fraction, check_int, check_names
from xaikit.tensor.gradients import gradient_batches
from xaikit.tensor.registry import TensorMethod, register

__all__ = ["RULES", "GAP_TOLERANCE", "CompletenessWarning", "IGResult", "alphas_and_weights",
           "integrated_gradients", "steps_for_tolerance", "path_gradients", "ToleranceSearch", "gap_curves", "integrate_path"]

#: the quadrature rules, in the order the panels list them.
RULES = ("riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid", "gausslegendre")


def alphas_and_weights(rule: str, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """The quadrature nodes ``alpha_k`` in [0, 1] and weights ``w_k`` of ``rule`` with ``steps`` nodes.

    * ``riemann_left``:   alpha_k = k/n,           w_k = 1/n   (k = 0..n-1)
    * ``riemann_right``:  alpha_k = (k+1)/n,       w_k = 1/n   (the IG paper's sum)
    * ``riemann_middle``: alpha_k = (k+1/2)/n,     w_k = 1/n
    * ``riemann_trapezoid``: alpha_k = k/(n-1),    w_k = 1/(n-1), halved at both ends (n >= 2)
    * ``gausslegendre``:  Gauss-Legendre nodes and weights mapped from [-1, 1] to [0, 1]

    Left, right, middle and Gauss-Legendre equal Captum's. Captum's trapezoid uses the same nodes but
    weights ``1/n`` (halved at the ends), which sum to ``(n-1)/n`` instead of 1, so its attributions are
    ``(n-1)/n`` times the trapezoid rule's; xaikit keeps the textbook rule, whose weights sum to 1.
    """
    rule = check_choice(rule, "rule", RULES)
    steps = check_int(steps, "steps", 1, 100_000, hint="use e.g. steps=50; the IG paper uses 20 to 300")
    n = steps
    if rule == "riemann_left":
        alphas = np.arange(n) / n
    elif rule == "riemann_right":
        alphas = np.arange(1, n + 1) / n
    elif rule == "riemann_middle":
        alphas = (np.arange(n) + 0.5) / n
    elif rule == "riemann_trapezoid":
        if n < 2:
            raise ValueError("steps must be >= 2 for rule='riemann_trapezoid' (it needs both end points "
                             "alpha=0 and alpha=1); use steps=2 or more, or another rule")
        alphas = np.arange(n) / (n - 1)
        weights = np.full(n, 1.0 / (n - 1))
        weights[[0, -1]] /= 2
        return alphas, weights
    else:  # gausslegendre
        nodes, w = _legendre(n)
        return 0.5 * (nodes + 1.0), 0.5 * w
    return alphas, np.full(n, 1.0 / n)


def _legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [-1, 1] (fresh arrays; the computation is cached)."""
    nodes, weights = _legendre_cached(n)
    return nodes.copy(), weights.copy()


@functools.lru_cache(maxsize=16)
def _legendre_cached(n: int) -> tuple[np.ndarray, np.ndarray]:
    """numpy's ``leggauss`` up to 100 nodes (Captum's choice, so results match it bit for bit). Beyond, the
    same nodes by Newton's method on the three-term Legendre recurrence, started from Tricomi's
    approximation and vectorised over the nodes: O(n^2) work instead of ``leggauss``'s dense eigenvalue
    problem, O(n^3). The two agree to 1e-15 in the nodes and 1e-8 (relative) in the weights; against
    40-digit arithmetic these weights are within 1e-11 at 1,000 nodes, ``leggauss``'s end weights 1e-8.
    """
    if n <= 100:
        return np.polynomial.legendre.leggauss(n)
    half = (n + 1) // 2  # the nodes are symmetric: compute the non-positive half
    k = np.arange(1, half + 1)
    theta = np.pi * (4 * k - 1) / (4 * n + 2)
    x = -(1 - (n - 1) / (8.0 * n ** 3)) * np.cos(theta)  # Tricomi; ascending, in [-1, 0]

    def legendre(x):  # P_n(x) and P_n'(x)
        p_prev, p = np.ones_like(x), x.copy()
        for j in range(2, n + 1):
            p_prev, p = p, ((2 * j - 1) * x * p - (j - 1) * p_prev) / j
        return p, n * (x * p - p_prev) / (x * x - 1)

    for _ in range(10):
        p, dp = legendre(x)
        step = p / dp
        x = x - step
        if np.abs(step).max() < 1e-15:
            break
    _, dp = legendre(x)
    w = 2.0 / ((1 - x * x) * dp * dp)
    odd = n % 2  # an odd n has the node 0 once
    return np.concatenate([x, -x[::-1][odd:]]), np.concatenate([w, w[::-1][odd:]])


#: numbers (path points times input size) per forward/backward pass when ``batch_size`` is None: bounds
#: the memory a long path takes (a path of 10,000 steps in one pass would hold them all at once).
BATCH_NUMBERS = 2 ** 19
#: a result keeps every path gradient (for figures) only up to this many numbers; beyond, their per-node
#: sums (what :meth:`IGResult.running_sum` needs).
KEEP_NUMBERS = 2 ** 24


def default_batch_size(x: torch.Tensor) -> int:
    """Path points per pass when ``batch_size`` is None: about :data:`BATCH_NUMBERS` numbers, 1 to 1024."""
    return max(1, min(1024, BATCH_NUMBERS // max(1, x.numel())))


@bool_flags
def path_gradients(f: ModelFn, points: torch.Tensor, target: Target, batch_size: int | None = None,
                   progress: bool | None = False) -> tuple[torch.Tensor, torch.Tensor]:
    """``F`` and ``dF/dx`` at every path point, evaluated in batches of at most ``batch_size`` (None:
    :func:`default_batch_size`).

    ``points`` is ``(S, ...)``; returns outputs ``(S,)`` and gradients ``(S, ...)``, both detached.
    """
    S = points.shape[0]
    size = default_batch_size(points[0]) if batch_size is None else batch_size
    size = max(1, min(size, S))
    batches = list(gradient_batches(f, S, lambda i, j: points[i:j], target, size, progress, "IG path"))
    return torch.cat([out for _, out, _ in batches]), torch.cat([g for _, _, g in batches])


@dataclass
class IGResult:
    """What :func:`integrated_gradients` computed, with every intermediate a figure needs (CPU tensors,
    whatever device the model is on).

    Attributes:
        attributions: IG per input feature, the shape of ``x``.
        gap: the completeness gap ``sum(attributions) - (F(x) - F(x'))``.
        f_x, f_baseline: the model output (for ``target``) at the input and at the baseline.
        alphas, weights: the quadrature nodes and weights (``(steps,)`` each).
        outputs: ``F`` at every path point ``x' + alpha_k (x - x')``, shape ``(steps,)``.
        gradients: ``dF/dx`` at every path point, shape ``(steps, *x.shape)``; ``None`` when that is more
            than :data:`KEEP_NUMBERS` numbers (``running_sum`` still works: it keeps per-node sums).
        x, baseline: the input and the baseline.
        target, rule, steps: what was explained and how.
        node_sums: per node, ``sum_i (x_i - x'_i) dF/dx_i(alpha_k)``, shape ``(steps,)`` (the running sum
            of the completeness curve), or ``None`` where the gradients are kept.
        input_ids, baseline_ids: the token ids of the input and the baseline text (text IG only).

    ``output_change`` is ``F(x) - F(x')``, what the attributions should add up to. It is not Captum's
    ``delta``: Captum's convergence delta is our ``gap``.
    """

    attributions: torch.Tensor
    gap: float
    f_x: float
    f_baseline: float
    alphas: np.ndarray
    weights: np.ndarray
    outputs: torch.Tensor
    gradients: torch.Tensor | None
    x: torch.Tensor
    baseline: torch.Tensor
    target: int | None
    rule: str
    steps: int
    node_sums: np.ndarray | None = None
    input_ids: list[int] | None = None
    baseline_ids: list[int] | None = None

    @property
    def output_change(self) -> float:
        """``F(x) - F(x')``, what the attributions should add up to (Captum's ``delta`` is :attr:`gap`)."""
        return self.f_x - self.f_baseline

    @property
    def relative_gap(self) -> float:
        """``|gap| / |F(x) - F(x')|`` (inf when the two outputs are equal and the gap is not zero)."""
        d = abs(self.output_change)
        if d == 0.0:
            return 0.0 if self.gap == 0.0 else float("inf")
        return abs(self.gap) / d

    def points(self) -> torch.Tensor:
        """The path points ``x' + alpha_k (x - x')``, shape ``(steps, *x.shape)``."""
        a = torch.as_tensor(self.alphas, dtype=self.x.dtype, device=self.x.device)
        a = a.reshape(-1, *([1] * self.x.ndim))
        return self.baseline + a * (self.x - self.baseline)

    def running_sum(self) -> np.ndarray:
        """The completeness curve: after node k, ``sum_i (x_i - x'_i) sum_{j<=k} w_j dF/dx_i(alpha_j)``.

        Its last value is ``sum(attributions)``; plotted against ``alphas`` it climbs to ``F(x) - F(x')``.
        """
        per_node = self.node_sums  # (steps,)
        if per_node is None:
            diff = (self.x - self.baseline).reshape(1, -1)  # (1, d)
            per_node = (self.gradients.reshape(self.steps, -1) * diff).sum(1).cpu().double().numpy()
        return np.cumsum(per_node * self.weights)


#: the IG paper's suggested bound on the relative completeness gap (Sundararajan, Taly & Yan 2017, 6.3)
GAP_TOLERANCE = 0.05


class CompletenessWarning(UserWarning):
    """The attributions miss ``F(x) - F(x')`` by more than the IG paper's 5%: too few steps."""


def warn_gap(method: str, gap: float, f_x: float, f_baseline: float, steps: int, rule: str) -> None:
    """Warn when ``|gap| > 5% |F(x) - F(x')|`` (and the gap is more than float rounding), saying what to do."""
    delta = f_x - f_baseline
    if abs(gap) <= GAP_TOLERANCE * abs(delta) or abs(gap) <= 1e-6 * max(1.0, abs(f_x), abs(f_baseline)):
        return
    share = f" ({abs(gap) / abs(delta):.1%} of it)" if delta else ""
    warn(
        f"{method}: the attributions sum to {gap + delta:.4g} but F(x) - F(x') = {delta:.4g}, a completeness gap "
        f"of {gap:.3g}{share}, over the {GAP_TOLERANCE:.0%} the IG paper suggests. Raise steps (now {steps}, "
        f"rule {rule!r}) or use rule='gausslegendre'; xaikit.steps_for_tolerance finds enough steps",
        CompletenessWarning)


@bool_flags
@_aliases.captum_keywords(_aliases.IG)
def integrated_gradients(f: ModelFn, x: Input, baseline: Baseline = None, steps: int = 50,
                         rule: str = "riemann_right", *, target: Target = None,
                         batch_size: int | None = None, progress: bool | None = None) -> IGResult:
    """Integrated Gradients of ``f`` at ``x`` along the straight line from ``baseline``.

    Args:
        f: a function or torch module mapping a batch ``(B, ...)`` to ``(B,)`` or ``(B, C)``.
        x: one input, no batch dimension.
        baseline: the reference input ``x'`` (same shape as ``x``); ``None`` is all zeros, a number is a
            constant input.
        steps: the number of quadrature nodes (gradient evaluations).
        rule: one of :data:`RULES`; ``"riemann_right"`` is the IG paper's sum.
        target: the class to explain (``None``: the predicted class at ``x``).
        batch_size: the most path points per forward/backward pass; bounds memory. ``None``: about
            :data:`BATCH_NUMBERS` numbers per pass (all of a small input's steps at once).
        progress: a tqdm bar over the batches: ``None`` (default) shows it on runs longer than two
            seconds, ``True`` always, ``False`` never.

    Returns:
        An :class:`IGResult`; ``result.gap`` is the completeness gap.

    Sundararajan, Taly & Yan (2017); notebook 02, sections 1-5.
    """
    rule = check_choice(rule, "rule", RULES)
    steps = check_int(steps, "steps", 1, 100_000, hint="use e.g. steps=50; the IG paper uses 20 to 300")
    if batch_size is not None:
        batch_size = check_int(batch_size, "batch_size", 1, hint="or None to evaluate all steps at once")
    with entry(f, x, target, "integrated_gradients") as (x, target):
        b = as_baseline(baseline, x)
        alphas, weights = alphas_and_weights(rule, steps)
        result = integrate_path(f, x, b, alphas, weights, target, batch_size, rule, progress)
        warn_gap("integrated_gradients", result.gap, result.f_x, result.f_baseline, steps, rule)
        return result


def _integrated_gradients_map(f: ModelFn, x: Input, *, target: Target = None, steps: int = 16) -> torch.Tensor:
    """The map of :func:`integrated_gradients` from the black image with ``steps`` Gauss-Legendre nodes, its
    completeness warning silenced: the registry's form, for the sanity checks, which explain a randomised
    network rather than judge it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompletenessWarning)
        return integrated_gradients(f, x, None, steps=steps, rule="gausslegendre", target=target).attributions


register(TensorMethod("Integrated Gradients", _integrated_gradients_map, {"steps": 16}, "Sundararajan et al. 2017",
                      order=3))


def integrate_path(f: ModelFn, x: torch.Tensor, b: torch.Tensor, alphas: np.ndarray, weights: np.ndarray,
                   target: Target, batch_size: int | None, rule: str, progress=None,
                   cache: _PathCache | None = None, ends: tuple[float, float] | None = None) -> IGResult:
    """The quadrature itself, the extension point of every IG variant (text IG, image baselines, step search).

    ``f`` and ``target`` as in :func:`integrated_gradients` (``target`` resolved already); ``x`` and ``b``
    the input and the baseline on ``f``'s device; ``alphas``/``weights`` from :func:`alphas_and_weights`;
    ``cache`` a :class:`_PathCache` that remembers evaluated nodes; ``ends=(F(x'), F(x))`` skips the forward
    pass that would find them. Returns an :class:`IGResult` on the CPU.
    """
    a = torch.as_tensor(alphas, dtype=x.dtype, device=x.device).reshape(-1, *([1] * x.ndim))  # (S, 1..)
    w = torch.as_tensor(weights, dtype=x.dtype, device=x.device).reshape(-1, *([1] * x.ndim))
    diff = x - b  # (...)
    node_sums = None
    if cache is None:
        outputs, weighted, node_sums, grads = _walk(f, b, diff, a, w, target, batch_size, progress)
        node_sums = to_cpu(node_sums).double().numpy()
    else:
        outputs, grads = cache.evaluate(alphas, lambda idx: b + a[idx] * diff)
        weighted = (w * grads).sum(0)
    _check_path(alphas, outputs, grads if grads is not None else node_sums)
    attributions = check_finite_attributions(diff * weighted, x, "Integrated Gradients")  # (...)
    # F at the ends: reuse the path's own evaluations when the rule includes alpha = 0 or 1.
    ends = {} if ends is None else {0.0: float(ends[0]), 1.0: float(ends[1])}
    for value in (0.0, 1.0):
        hit = np.flatnonzero(alphas == value)
        if hit.size and value not in ends:
            ends[value] = float(outputs[hit[0]])
    if len(ends) < 2:
        with torch.no_grad():
            both = select(call(f, torch.stack([b, x])), target)  # (2,)
        ends.setdefault(0.0, float(both[0]))
        ends.setdefault(1.0, float(both[1]))
    f_b, f_x = ends[0.0], ends[1.0]
    _check_path(np.array([0.0, 1.0]), torch.tensor([f_b, f_x]))
    gap = float(attributions.sum()) - (f_x - f_b)
    # computed on the model's device, returned on the CPU (see xaikit._fn)
    return IGResult(to_cpu(attributions), gap, f_x, f_b, np.asarray(alphas), np.asarray(weights), to_cpu(outputs),
                    to_cpu(grads), to_cpu(x), to_cpu(b), target, rule, len(alphas), node_sums)


def _check_path(alphas, outputs: torch.Tensor, grads=None) -> None:
    """Refuse NaN or inf in ``F`` (``outputs``, ``(S,)``) or ``dF/dx`` (``grads``, ``(S, ...)``, or the per-node
    sums) at the path's nodes ``alphas``: the model is undefined there, which no number of steps fixes (the
    completeness warning would say "raise steps")."""
    bad_out = ~torch.isfinite(outputs.reshape(len(outputs), -1)).all(1)
    bad_grad = (torch.zeros_like(bad_out) if grads is None else
                ~torch.isfinite(torch.as_tensor(grads).reshape(len(outputs), -1)).all(1).to(bad_out.device))
    bad = bad_out | bad_grad
    if not bool(bad.any()):
        return
    k = int(bad.nonzero()[0])
    alpha = float(alphas[k])
    where = f"alpha={alpha:.4g}" + (" (the baseline)" if alpha == 0.0 else " (the input)" if alpha == 1.0 else "")
    if bool(bad_out[k]):
        value = float(outputs.reshape(len(outputs), -1)[k].double().sum())
        what = f"the model's output is {'NaN' if value != value else 'inf'}"
    else:
        what = "the model's gradient is NaN or inf"
    raise ValueError(
        f"Integrated Gradients: {what} at {where} on the straight path x' + alpha (x - x') from the baseline to "
        f"the input, so the attributions would be NaN. This is not a matter of steps: the model is not defined "
        f"there (e.g. the log or square root of a negative number, a division by zero, an overflow). Choose a "
        f"baseline whose path stays where the model is defined, or fix the model")


def _walk(f, b, diff, a, w, target, batch_size, progress):
    """The straight path in batches of :func:`default_batch_size` points unless ``batch_size`` is given.

    Returns F at every node ``(S,)``, ``sum_k w_k dF/dx(alpha_k)`` (shaped like x), every node's
    ``sum_i (x_i - x'_i) dF/dx_i`` ``(S,)``, and the gradients ``(S, ...)``, or None when they are more than
    :data:`KEEP_NUMBERS` numbers: memory stays bounded by the batch, however many steps.
    """
    S = a.shape[0]
    size = max(1, min(default_batch_size(diff) if batch_size is None else batch_size, S))
    keep = S * diff.numel() <= KEEP_NUMBERS
    outputs, node_sums, grads = [], [], []
    weighted = torch.zeros_like(diff)
    for start, out, g in gradient_batches(f, S, lambda i, j: b + a[i:j] * diff, target, size, progress, "IG path"):
        weighted += (w[start:start + size] * g).sum(0)
        node_sums.append((g.reshape(len(out), -1) * diff.reshape(1, -1)).sum(1))
        outputs.append(out)
        if keep:
            grads.append(g)
    return torch.cat(outputs), weighted, torch.cat(node_sums), torch.cat(grads) if keep else None


class _PathCache:
    """Remembers ``F`` and ``dF/dx`` by alpha, so a finer grid only evaluates its new nodes."""

    def __init__(self, f, target, batch_size):
        self.f, self.target, self.batch_size = f, target, batch_size
        self.store: dict[float, tuple[torch.Tensor, torch.Tensor]] = {}
        self.evaluations = 0

    def evaluate(self, alphas: np.ndarray, make_points):
        missing = [i for i, a in enumerate(alphas) if float(a) not in self.store]
        if missing:
            idx = torch.as_tensor(missing)
            out, grads = path_gradients(self.f, make_points(idx), self.target, self.batch_size)
            self.evaluations += len(missing)
            for j, i in enumerate(missing):
                self.store[float(alphas[i])] = (out[j], grads[j])
        outs = torch.stack([self.store[float(a)][0] for a in alphas])
        grads = torch.stack([self.store[float(a)][1] for a in alphas])
        return outs, grads


@dataclass
class ToleranceSearch:
    """The answer of :func:`steps_for_tolerance`: the steps found, the IG result there, and the history."""

    steps: int
    result: IGResult
    history: list[tuple[int, float]]
    evaluations: int
    converged: bool


def steps_for_tolerance(f: ModelFn, x: Input, baseline: Baseline = None, rule: str = "riemann_right",
                        tolerance: float = 0.05, start: int = 2, max_steps: int = 1024, *,
                        target: Target = None, batch_size: int | None = None,
                        shared: _PathCache | None = None) -> ToleranceSearch:
    """The fewest steps in a doubling sequence whose relative completeness gap is within ``tolerance``.

    The steps tried are ``start, 2 start, 4 start, ...`` (for the trapezoid rule the intervals double:
    ``n -> 2n - 1`` nodes, so the old nodes stay on the grid). Path evaluations are cached by alpha, so the
    left and right Riemann sums and the trapezoid rule only evaluate the new nodes at each doubling (the
    points at ``n`` are among those at ``2n``); the midpoint and Gauss-Legendre nodes do not nest and are
    evaluated afresh. The IG paper suggests a tolerance of 5% (``tolerance=0.05``). ``evaluations`` counts
    the gradient evaluations spent; ``converged`` is False if ``max_steps`` was reached first.

    ``shared``: a path cache (``_PathCache(f, target, batch_size)``) that searches with other rules on the
    same ``f``, ``x``, baseline and target also use, so a node two rules share is computed once;
    ``evaluations`` still counts every node this search used, as if it ran alone.

    Notebook 02, section 4.
    """
    rule = check_choice(rule, "rule", RULES)
    tolerance = check_fraction(tolerance, "tolerance", what=" of |F(x) - F(x')|")
    start = check_int(start, "start", 2 if rule == "riemann_trapezoid" else 1)
    max_steps = check_int(max_steps, "max_steps", start, hint=f"it must be at least start={start}")
    if batch_size is not None:
        batch_size = check_int(batch_size, "batch_size", 1)
    with entry(f, x, target, "steps_for_tolerance") as (x, target):
        b = as_baseline(baseline, x)
        cache = _PathCache(f, target, batch_size) if shared is None else shared
        used: set[float] = set()  # the nodes this search evaluated (or found in the shared cache)
        history = []
        steps = start
        while True:
            alphas, weights = alphas_and_weights(rule, steps)
            result = integrate_path(f, x, b, alphas, weights, target, batch_size, rule, cache=cache)
            used.update(float(a) for a in alphas)
            history.append((steps, result.relative_gap))
            if result.relative_gap <= tolerance:
                return ToleranceSearch(steps, result, history, len(used), True)
            following = 2 * steps - 1 if rule == "riemann_trapezoid" else 2 * steps
            if following > max_steps:
                return ToleranceSearch(steps, result, history, len(used), False)
            steps = following


def shared_path(f: ModelFn, x: torch.Tensor, b: torch.Tensor, target: Target, batch_size: int | None,
                rules: Sequence[str], steps: Sequence[int]
                ) -> tuple[dict[str, list[tuple[int, np.ndarray, np.ndarray]]], _PathCache,
                           tuple[float, float]]:
    """Every rule's nodes at every step count, evaluated in one pass along the straight path (each node
    once, the ends 0 and 1 included). Returns ``(plan, cache, ends)``: ``plan[rule]`` lists
    ``(steps, alphas, weights)`` (the trapezoid from 2 steps), ``cache`` holds the evaluations for
    :func:`integrate_path`, ``ends`` is ``(F(x'), F(x))``. Used by :func:`gap_curves` and
    :func:`xaikit.tensor.quadrature.quadrature_errors`."""
    plan = {r: [(n, *alphas_and_weights(r, n)) for n in steps if n >= (2 if r == "riemann_trapezoid" else 1)]
            for r in rules}
    union = np.unique(np.concatenate([[0.0, 1.0]] + [a for r in plan for _, a, _ in plan[r]]))
    a = torch.as_tensor(union, dtype=x.dtype, device=x.device).reshape(-1, *([1] * x.ndim))
    cache = _PathCache(f, target, batch_size)
    cache.evaluate(union, lambda idx: b + a[idx] * (x - b))
    return plan, cache, (float(cache.store[0.0][0]), float(cache.store[1.0][0]))


def gap_curves(f: ModelFn, x: Input, baseline: Baseline = None,
               steps: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256), rules: Sequence[str] = RULES, *,
               target: Target = None, batch_size: int | None = None
               ) -> dict[str, tuple[list[int], list[float]]]:
    """The relative completeness gap of every rule at every step count: ``{rule: (steps, gaps)}``.

    All the nodes of all the rules are evaluated in one pass (shared nodes once), so the log-log figure
    of notebook 02, section 4 costs about as much as a single IG with a few thousand steps.
    """
    rules = check_names(rules, "rules", RULES)
    if isinstance(steps, numbers.Integral) or not hasattr(steps, "__iter__"):
        raise TypeError(f"steps must be a list of step counts, one point of each curve, got {type(steps).__name__} "
                        f"{steps!r}; e.g. steps=[1, 2, 4, 8] (or integrated_gradients(..., steps=8) for one count)")
    steps = [check_int(n, f"steps[{i}]", 1) for i, n in enumerate(steps)]
    if not steps:
        raise ValueError("steps is empty; pass at least one step count, e.g. steps=[1, 2, 4, 8]")
    with entry(f, x, target, "gap_curves") as (x, target):
        b = as_baseline(baseline, x)
        plan, cache, ends = shared_path(f, x, b, target, batch_size, rules, steps)
        return {r: ([n for n, _, _ in plan[r]],
                    [integrate_path(f, x, b, al, w, target, batch_size, r, cache=cache, ends=ends).relative_gap
                     for _, al, w in plan[r]])
                for r in rules}
