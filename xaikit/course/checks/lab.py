"""Checks of notebook 06, the attention lab: attention rollout (``check_rollout``; Abnar & Zuidema 2020,
"Quantifying Attention Flow in Transformers", ACL), with the reference an exercise falls back to while it is a
stub. The skeleton every check shares is :func:`xaikit.course.checks._core._run_check`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from xaikit.course.checks._core import CheckResult, _close, _largest_gap, _reshaped, _run_check, _tensor

__all__ = ["check_rollout"]


def _rollout_reference(attentions: torch.Tensor) -> torch.Tensor:
    """The rollout matrix ``(N, N)`` of attention ``(L, M, N, N)``: :func:`xaikit.attention.relevance.rollout_matrix`."""
    from xaikit.attention.relevance import rollout_matrix

    return rollout_matrix(attentions)


def _rollout_cases():
    """Random softmax attention of different sizes, and one stack whose heads differ a lot (so a head that is
    summed instead of averaged, or one layer read alone, shows)."""
    for seed, (L, M, N) in enumerate(((3, 2, 5), (4, 3, 6))):
        gen = torch.Generator().manual_seed(seed)
        a = torch.softmax(torch.randn(L, M, N, N, generator=gen, dtype=torch.float64) * 2, dim=-1)
        yield (a.clone(),), (f"random attention ({L} layers, {M} heads, {N} tokens)", a)


def _steps(a: torch.Tensor, residual: bool = True, mean: bool = True) -> list[torch.Tensor]:
    eye = torch.eye(a.shape[-1], dtype=a.dtype)
    heads = a.mean(dim=1) if mean else a.sum(dim=1)  # (L, N, N)
    out = []
    for layer in heads:
        step = 0.5 * layer + 0.5 * eye if residual else layer
        out.append(step / step.sum(dim=-1, keepdim=True))
    return out


def _product(steps: list[torch.Tensor], first_on_the_left: bool = False) -> torch.Tensor:
    r = torch.eye(steps[0].shape[-1], dtype=steps[0].dtype)
    for step in steps:
        r = r @ step if first_on_the_left else step @ r
    return r


def check_rollout(student_fn: Callable, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(attentions) -> (N, N)``: attention rollout (Abnar & Zuidema 2020; notebook 06,
    section 1) of attention ``(L, M, N, N)``: per layer the mean over the heads, plus the identity for the
    residual connection (0.5 A + 0.5 I, rows renormalised), multiplied from the first layer to the last,
    R = A_L ... A_2 A_1, so that ``R[i, j]`` is how much input token j flows into position i at the top."""
    return _run_check("check_rollout", student_fn, _rollout_cases(), _grade_rollout, verbose)


def _grade_rollout(result: CheckResult, answer, label: str, a: torch.Tensor) -> None:
    ref = _rollout_reference(a)
    got = _reshaped(result, _tensor(answer), ref.shape, label, "one (N, N) matrix")
    if got is None:
        return
    if _close(got, ref):
        result.ok(f"{label}: rollout matches; each row sums to 1 ({float(ref.sum(-1).max()):.6f} at most)")
        return
    (i, j), gap = _largest_gap(got, ref)
    result.fail(f"{label}: entry [{i}, {j}] differs: {gap}")
    variants = {
        "wrong_order": ("you multiply the layers the other way round: the first layer acts first, so it stands "
                        "on the right, R = A_L ... A_2 A_1", _product(_steps(a), first_on_the_left=True)),
        "missing_residual": ("the residual connection is missing: use 0.5 A + 0.5 I for each layer (the token "
                             "carries itself forward), rows renormalised", _product(_steps(a, residual=False))),
        "summed_heads": ("you sum the heads: average them (mean over the head axis, dim 1)",
                         _product(_steps(a, mean=False))),
        "last_layer_only": ("you use the last layer alone: rollout multiplies every layer's matrix",
                            _steps(a)[-1]),
    }
    for name, (message, cand) in variants.items():
        if _close(got, cand):
            result.fail(message, name)
            break
