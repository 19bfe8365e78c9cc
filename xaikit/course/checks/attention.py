"""The check of notebook 03: scaled dot-product attention (``check_attention``, Vaswani et al. 2017), with
the reference an exercise falls back to while it is a stub. The skeleton it shares with the other checks is
:func:`xaikit.course.checks._core._run_check`.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable

import torch

from xaikit.course.checks._core import CheckResult, _close, _largest_gap, _run_check, _tensor

__all__ = ["check_attention", "check_scaled_dot_product_attention"]


# -- scaled dot-product attention (notebook 03) ---------------------------------------------------------------
def _attention_cases():
    from xaikit.attention.scratch import worked_example

    ex = worked_example()
    cases = [("the lecture's worked example", ex["x"].double(), ex["w_q"].double(), ex["w_k"].double(),
              ex["w_v"].double())]
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(5, 6, generator=gen, dtype=torch.float64)
    w_q, w_k = (torch.randn(6, 4, generator=gen, dtype=torch.float64) for _ in range(2))
    w_v = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    cases.append(("5 random tokens, d_k = 4, d_v = 3", x, w_q, w_k, w_v))
    return cases


def check_attention(student_fn: Callable, verbose: bool = True) -> CheckResult:
    """Check scaled dot-product attention (Vaswani et al. 2017; notebook 03): either
    ``fn(x, w_q, w_k, w_v) -> (out, weights)`` (one self-attention head from the inputs) or
    ``fn(q, k, v) -> (out, weights)``; returning only ``out`` is accepted too. Compared with
    :func:`xaikit.attention.scratch.scaled_dot_product_attention` and ``torch.nn.functional.scaled_dot_product_attention``.
    """
    try:
        n_params = len([p for p in inspect.signature(student_fn).parameters.values()
                        if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
    except (TypeError, ValueError):  # a builtin with no signature (torch's own scaled_dot_product_attention)
        n_params = 4 if _fails_on_qkv(student_fn) else 3
    from_inputs = n_params >= 4

    def cases():
        for label, x, w_q, w_k, w_v in _attention_cases():
            q, k, v = x @ w_q, x @ w_k, x @ w_v  # (T, d_k), (T, d_k), (T, d_v)
            d_k = q.shape[-1]
            scores = q @ k.T / math.sqrt(d_k)  # (T, T)
            weights = torch.softmax(scores, dim=-1)  # (T, T)
            out = weights @ v  # (T, d_v)
            torch_out = torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None])[0]
            assert torch.allclose(out, torch_out, atol=1e-10)  # the reference itself agrees with torch
            args = (x.clone(), w_q.clone(), w_k.clone(), w_v.clone()) if from_inputs else (q.clone(), k.clone(), v.clone())
            yield args, (label, v, d_k, scores, weights, out)

    return _run_check("check_attention", student_fn, cases(), _grade_attention, verbose)


def _fails_on_qkv(fn) -> bool:
    """Whether ``fn``, whose signature cannot be read, fails when called as ``fn(q, k, v)``: then it is taken to
    be ``fn(x, w_q, w_k, w_v)``. ``torch.nn.functional.scaled_dot_product_attention`` takes ``(q, k, v)``."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 4, generator=g, dtype=torch.float64) for _ in range(3))
    try:
        fn(q, k, v)
    except Exception:  # noqa: BLE001 - any failure: not the (q, k, v) form
        return True
    return False


def _grade_attention(result: CheckResult, got, label: str, v: torch.Tensor, d_k: int, scores: torch.Tensor,
                     weights: torch.Tensor, out: torch.Tensor) -> None:
    """One case: the student's ``(out, weights)`` (or ``out`` alone) against the reference's."""
    got_out, got_w = (got if isinstance(got, tuple | list) and len(got) == 2 else (got, None))
    got_out, got_w = _tensor(got_out), _tensor(got_w)
    if got_w is not None:
        if got_w.shape != weights.shape:
            result.fail(f"{label}: weights should be (queries, keys) = {tuple(weights.shape)}, got "
                        f"{tuple(got_w.shape)}", "shape")
        elif not _close(got_w, weights):
            (i, j), gap = _largest_gap(got_w, weights)
            result.fail(f"{label}: weight of query {i} on key {j} differs: {gap}; your row sums: "
                        f"{[round(float(s), 4) for s in got_w.sum(-1)]}")
            _attention_mistake(result, got_w, scores * math.sqrt(d_k), d_k, v.shape[-1])
        else:
            result.ok(f"{label}: weights match, every row sums to 1")
    if got_out is None or got_out.shape != out.shape:
        result.fail(f"{label}: out should be (queries, d_v) = {tuple(out.shape)}, got "
                    f"{None if got_out is None else tuple(got_out.shape)}", "shape")
    elif not _close(got_out, out):
        (i, j), gap = _largest_gap(got_out, out)
        result.fail(f"{label}: out[{i}, {j}] (query {i}, feature {j}) differs: {gap}")
        if got_w is None:
            for name, (message, cand) in _attention_variants(scores * math.sqrt(d_k), d_k, v.shape[-1]).items():
                if _close(got_out, cand @ v):
                    result.fail(message, name)
                    break
        elif _close(got_w, weights) and _close(got_out, weights.T @ v):
            result.fail("out = A^T V: each query's output is sum_j A[i, j] v_j, i.e. A @ V", "transposed")
    else:
        result.ok(f"{label}: out matches xaikit and torch.nn.functional.scaled_dot_product_attention")


def _attention_variants(raw: torch.Tensor, d_k: int, d_v: int) -> dict:
    """Classic wrong attention weights from the raw scores q k^T: name -> (message, weights)."""
    s = raw / math.sqrt(d_k)
    return {
        "softmax_wrong_dim": ("softmax over the wrong dimension: each row (one query) must sum to 1 over the "
                              "keys, so use softmax(..., dim=-1)", torch.softmax(s, dim=0)),
        "missing_scale": ("the scores are not divided by sqrt(d_k)", torch.softmax(raw, dim=-1)),
        "scale_by_d_k": ("the scores are divided by d_k instead of sqrt(d_k)", torch.softmax(raw / d_k, dim=-1)),
        "scale_by_d_v": ("the scores are divided by sqrt(d_v): the scale uses the key size d_k",
                         torch.softmax(raw / math.sqrt(d_v), dim=-1)),
        "transposed": ("scores are k q^T instead of q k^T (rows must be queries)", torch.softmax(s.T, dim=-1)),
        "missing_softmax": ("no softmax: the weights must be softmax(q k^T / sqrt(d_k))", s),
    }


def _attention_mistake(result, got_w, raw, d_k, d_v) -> None:
    for name, (message, cand) in _attention_variants(raw, d_k, d_v).items():
        if _close(got_w, cand):
            result.fail(message, name)
            return


check_scaled_dot_product_attention = check_attention


# -- the reference an exercise falls back to while it is a stub ------------------------------------------------
def _attention_reference(*args):
    """``(x, w_q, w_k, w_v)`` or ``(q, k, v)`` -> ``(out, weights)``, as the exercise returns them."""
    from xaikit.attention.scratch import scaled_dot_product_attention, self_attention

    if len(args) == 3:
        return scaled_dot_product_attention(*args)
    steps = self_attention(*args)
    return steps.out, steps.weights
