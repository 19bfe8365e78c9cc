"""Checks of notebooks 01 and 02: gradient x input (``check_grad_times_input``) and the Riemann sum of
Integrated Gradients (``check_ig_riemann``, Sundararajan et al. 2017), with the references an exercise falls
back to while it is a stub. The skeleton they share is :func:`xaikit.course.checks._core._run_check`.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable

import torch

from xaikit.course.checks._core import CheckResult, _close, _fmt, _largest_gap, _reshaped, _run_check, _tensor

__all__ = ["check_grad_times_input", "check_ig_riemann"]


# -- gradient x input (notebook 01) -------------------------------------------------------------------------
def _gxi_cases():
    """The notebook's smooth model at points with a zero, a negative and a large coordinate."""
    from xaikit.tensor.toys import smooth_model

    points = [[0.0, 1.5], [1.0, -0.5], [-2.0, 2.5], [0.7, 0.0]]
    return smooth_model, [torch.tensor(p) for p in points]


def check_grad_times_input(student_fn: Callable, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(f, x) -> attributions``: gradient x input, ``x_i * df/dx_i`` at ``x`` (notebook 01),
    on the notebook's two-input model at four points (one coordinate 0 at two of them)."""
    from xaikit.tensor.gradients import gradient

    f, points = _gxi_cases()
    cases = (((f, x.clone()), (x, gradient(f, x).double())) for x in points)
    return _run_check("check_grad_times_input", student_fn, cases, _grade_grad_times_input, verbose)


def _grade_grad_times_input(result: CheckResult, answer, x: torch.Tensor, g: torch.Tensor) -> None:
    """One point ``x`` with the gradient ``g`` of f there."""
    ref = x.double() * g
    where = f"x = {[round(float(v), 3) for v in x]}"
    got = _reshaped(result, _tensor(answer), x.shape, where, "one attribution per input")
    if got is None:
        return
    if _close(got, ref):
        result.ok(f"{where}: gradient x input = {[round(float(v), 5) for v in ref]}")
        return
    i = int((got - ref).abs().argmax())
    result.fail(f"{where}: input {i} differs: expected {_fmt(float(ref[i]))}, got {_fmt(float(got[i]))}")
    if _close(got, g):
        result.fail("you return the gradient: multiply it by x, input by input", "gradient_only")
    elif _close(got, x.double()):
        result.fail("you return x itself: multiply it by the gradient of f at x", "input_only")
    elif _close(got, torch.full_like(ref, float((x.double() * g).sum()))):
        result.fail("you return the dot product x . gradient for every input: keep one number per input",
                    "summed")


# -- Integrated Gradients (notebook 02) ----------------------------------------------------------------------
class _Recorder:
    """Wraps ``f`` and remembers every input row it is called with (to find the alphas a student used)."""

    def __init__(self, f):
        self.f = f
        self.rows: list[torch.Tensor] = []

    def __call__(self, batch):
        self.rows.extend(batch.detach().cpu().reshape(batch.shape[0], -1).to(torch.float64))
        return self.f(batch)


@functools.lru_cache(maxsize=1)
def _ig_model() -> torch.nn.Module:
    gen = torch.Generator().manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    return net.eval()


def _ig_f(batch: torch.Tensor) -> torch.Tensor:
    """The fixed small model of the IG check: a seeded 3-8-1 tanh network, ``(B, 3) -> (B,)``."""
    return _ig_model()(batch).squeeze(-1)


def _quiet_ig(*args, **kwargs) -> torch.Tensor:
    """xaikit's IG attributions without its CompletenessWarning: the checks use few steps on purpose, and a
    warning would reach stderr, where nbgrader takes it for a failed grade cell (``determine_grade``)."""
    from xaikit.tensor.integrated import CompletenessWarning, integrated_gradients

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompletenessWarning)
        return integrated_gradients(*args, **kwargs).attributions.double()


def _ig_case(steps: int):
    from xaikit.tensor.integrated import alphas_and_weights

    x = torch.tensor([1.5, -0.8, 0.6])
    baseline = torch.tensor([0.2, 0.3, -0.4])
    refs = {rule: _quiet_ig(_ig_f, x, baseline, steps=steps, rule=rule)
            for rule in ("riemann_right", "riemann_left", "riemann_middle")}
    # the trapezoid rule over m intervals has m + 1 nodes (xaikit's ``steps`` counts nodes)
    refs["riemann_trapezoid"] = _quiet_ig(_ig_f, x, baseline, steps=steps + 1, rule="riemann_trapezoid")
    return x, baseline, refs, alphas_and_weights


def check_ig_riemann(student_fn: Callable, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(f, x, baseline, steps) -> attributions`` (the Riemann sum of Integrated Gradients,
    Sundararajan et al. 2017; notebook 02): ``(x - x') * (1/m) * sum_k dF(x' + alpha_k (x - x'))/dx`` with
    ``alpha_k = k/m``, the paper's right sum, which the exercise asks for. A left, midpoint or trapezoid sum
    approximates the same integral, but it is not what was asked: it fails, and the report names the rule.

    ``f`` maps a batch ``(B, 3)`` to ``(B,)``; ``x`` and ``baseline`` are ``(3,)`` with a non-zero baseline,
    so a missing ``(x - x')`` factor and a path that starts at zero both show.
    """

    def cases():
        for steps in (8, 32):
            x, baseline, refs, alphas_and_weights = _ig_case(steps)
            recorder = _Recorder(_ig_f)
            yield (recorder, x.clone(), baseline.clone(), steps), (steps, x, baseline, refs, alphas_and_weights,
                                                                   recorder)

    return _run_check("check_ig_riemann", student_fn, cases(), _grade_ig_riemann, verbose)


def _grade_ig_riemann(result: CheckResult, answer, steps: int, x: torch.Tensor, baseline: torch.Tensor, refs: dict,
                      alphas_and_weights, recorder: _Recorder) -> None:
    """One number of steps; ``refs`` holds the four Riemann rules' attributions, ``recorder`` the points the
    student's function evaluated f at."""
    got = _reshaped(result, _tensor(answer), x.shape, f"steps={steps}", "one attribution per feature")
    if got is None:
        return
    matched = next((rule for rule, ref in refs.items() if _close(got, ref)), None)
    if matched == "riemann_right":
        with torch.no_grad():
            f_x, f_b = float(_ig_f(x[None])[0]), float(_ig_f(baseline[None])[0])
        result.ok(f"steps={steps}: equals the right Riemann sum (the IG paper's); sum = "
                  f"{_fmt(float(got.sum()))}, F(x) - F(x') = {_fmt(f_x - f_b)} "
                  f"(gap {_fmt(abs(float(got.sum()) - (f_x - f_b)))})")
        return
    if matched is not None:
        name, alphas = {"riemann_left": ("left Riemann sum", "(k-1)/m for k = 1..m, i.e. 0 .. (m-1)/m"),
                        "riemann_middle": ("midpoint Riemann sum", "(k - 1/2)/m"),
                        "riemann_trapezoid": ("trapezoid rule", "0 .. 1 with half weight at both ends")}[matched]
        result.fail(f"steps={steps}: you computed the {name} (alphas {alphas}); it approximates the same "
                    f"integral, but the exercise asks for the IG paper's right sum, alpha_k = k/m for "
                    f"k = 1..m", matched.replace("riemann_", "") + "_sum")
        return
    ref = refs["riemann_right"]
    (i,), gap = _largest_gap(got, ref)
    result.fail(f"steps={steps}: feature {i} differs: {gap}; "
                f"all features: expected {[round(float(v), 5) for v in ref]}, got "
                f"{[round(float(v), 5) for v in got]}")
    xd, bd = x.double(), baseline.double()
    delta = xd - bd
    grad_at_x = _grad(_ig_f, x).double()
    if _close(got * delta, ref):
        result.fail("you return the average gradient along the path: multiply by (x - x')",
                    "missing_x_minus_baseline")
    elif _close(got * delta / xd, ref):
        result.fail("you multiply by x instead of (x - x'): with a non-zero baseline the two differ",
                    "times_x_not_difference")
    elif _close(got / steps, ref) or any(_close(got / steps, r) for r in refs.values()):
        result.fail(f"your sum is {steps} times too large: divide by the number of steps m",
                    "missing_divide_by_steps")
    elif _close(got, grad_at_x * delta) or _close(got, grad_at_x * xd):
        result.fail("you use the gradient at x only (gradient x input): IG averages the gradient over "
                    "the whole path from x' to x", "gradient_at_x_only")
    else:
        zero_path = {r: _ig_zero_baseline(x, steps, r) for r in refs}
        if any(_close(got, z) for z in zero_path.values()):
            result.fail("your path starts at 0, not at the baseline x': use x' + alpha (x - x')",
                        "path_from_zero")
    _report_alphas(result, recorder, bd, delta, steps, alphas_and_weights)


def _grad(f, x: torch.Tensor) -> torch.Tensor:
    z = x.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(f(z[None]).sum(), z)
    return g


def _ig_zero_baseline(x, steps, rule):
    return _quiet_ig(_ig_f, x, torch.zeros_like(x), steps=steps, rule=rule)


def _report_alphas(result, recorder, baseline, delta, steps, alphas_and_weights) -> None:
    """Project the points the student evaluated onto the path and compare with the rule's alphas."""
    if not recorder.rows:
        result.hint("your function never called f: IG evaluates the gradient of f at points on the path")
        return
    rows = torch.stack(recorder.rows)  # (P, 3)
    alphas = ((rows - baseline) @ delta) / (delta @ delta)  # (P,)
    off_path = float(((baseline + alphas[:, None] * delta) - rows).abs().max())
    if off_path > 1e-4:
        result.hint(f"some points you evaluated are not on the straight line from x' to x (up to "
                    f"{_fmt(off_path)} away): the path is x' + alpha (x - x')")
        return
    used = sorted({round(float(a), 6) for a in alphas})
    right, _ = alphas_and_weights("riemann_right", steps)
    expected = [round(float(a), 6) for a in right]
    if used == expected:
        result.hint(f"you evaluated f at the right alphas k/{steps}, k = 1..{steps}: the mistake is in how "
                    "you combine the gradients")
        return
    extra = [a for a in used if a not in expected]
    missing = [a for a in expected if a not in used]
    step_info = f"step k = {expected.index(missing[0]) + 1} (alpha = {missing[0]})" if missing else ""
    result.hint(f"you evaluated f at {len(used)} alphas from {used[0]} to {used[-1]}; the IG sum uses "
                f"alpha_k = k/{steps} for k = 1..{steps}. Not expected: {extra[:4]}; missing: "
                f"{missing[:4]} {step_info}".rstrip())


# -- the references an exercise falls back to while it is a stub ------------------------------------------------
def _grad_times_input_reference(f, x):
    from xaikit.tensor.gradients import grad_times_input

    return grad_times_input(f, x)


def _ig_reference(f, x, baseline, steps):
    from xaikit.tensor.integrated import integrated_gradients

    return integrated_gradients(f, x, baseline, steps=steps, rule="riemann_right").attributions
