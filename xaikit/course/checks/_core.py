"""What every check of :mod:`xaikit.course.checks` shares: the report (:class:`CheckResult`), calling the
student's function (:func:`_call`), the exercise wrapper that falls back to the reference while a body is a stub
(:class:`ExerciseFunction`), the comparison helpers, and the skeleton every check runs (:func:`_run_check`).
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

__all__ = ["CheckResult", "ExerciseFunction"]


# -- the report --------------------------------------------------------------------------------------------
@dataclass
class CheckResult:
    """The outcome of one check: ``passed``, the report ``lines``, and ``mistake``, a short name for a
    recognised classic mistake (``"missing_relu"``, ``"softmax_wrong_dim"``, ...) or ``None``.

    ``todo`` is True when the function is an :func:`exercise` whose body is still a stub: nothing was
    checked (``passed`` is False), yet the result is truthy so that an exercise sheet runs on, on the
    reference. ``fallback`` is True when the function is an :func:`exercise` written wrong: it failed
    (``passed`` is False, the report names the mistake and is written to stderr, which nbgrader counts as a
    failed grade cell), yet the result is truthy and every later call of the function runs the reference,
    so the sheet still runs to its end. A plain function's mistake is always falsy; grade with ``.passed``."""

    name: str
    passed: bool = True
    lines: list[str] = field(default_factory=list)
    mistake: str | None = None
    todo: bool = False
    fallback: bool = False

    def __bool__(self) -> bool:
        return self.passed or self.todo or self.fallback

    def ok(self, text: str) -> None:
        self.lines.append(f"  ok    {text}")

    def fail(self, text: str, mistake: str | None = None) -> None:
        self.passed = False
        self.lines.append(f"  FAIL  {text}")
        if mistake and self.mistake is None:
            self.mistake = mistake

    def hint(self, text: str) -> None:
        self.lines.append(f"        hint: {text}")

    def report(self) -> str:
        if self.passed:
            verdict = "all checks passed"
        elif self.todo:
            verdict = "NOT WRITTEN YET (the cells below use xaikit's reference)"
        else:
            verdict = "some checks failed" + (f" (mistake: {self.mistake})" if self.mistake else "")
            if self.fallback:
                verdict += "; until it passes, the cells below use xaikit's reference"
        return "\n".join([f"{self.name}: {verdict}", *self.lines])

    def __str__(self) -> str:
        return self.report()


def _finish(result: CheckResult, verbose: bool) -> CheckResult:
    if verbose:  # a failed exercise goes to stderr: shown in red, and a failed grade cell to nbgrader
        print(result.report(), file=sys.stderr if result.fallback else sys.stdout)
    return result


def _call(result: CheckResult, fn, *args):
    """Run the student's function; on an exception, record it and return None.

    ``NotImplementedError`` (an exercise stub not filled in yet): for an :func:`exercise` function the result
    is marked ``todo`` (and not passed) and None is returned, so the check stops there and the sheet runs on;
    for a plain function it is re-raised after one line of report, so the sheet stops at the stub itself,
    not at a failed check further on.
    """
    student = fn.student if isinstance(fn, ExerciseFunction) else fn
    try:
        return student(*args)
    except NotImplementedError:
        if isinstance(fn, ExerciseFunction):
            result.passed, result.todo = False, True
            result.lines.append(f"  TODO  {fn.__name__} still raises NotImplementedError: replace the stub with "
                                "your code and run this cell again")
            return None
        print(f"{result.name}: your function still raises NotImplementedError: replace the stub with your code")
        raise
    except Exception as err:  # noqa: BLE001 - reported to the student, never swallowed silently
        result.fail(f"your function raised {type(err).__name__}: {err}", "raised")
    return None


class ExerciseFunction:
    """An exercise function and the reference that stands in for it (see :func:`exercise`) while its body is a
    stub or after its check failed. Calling it calls the student's function; if that raises
    ``NotImplementedError``, or its own check's last run failed (:attr:`failed` names the mistake), it prints
    a note and returns the reference's answer instead. A check that passes hands the calls back to the
    student's function."""

    def __init__(self, student: Callable, check: Callable, reference: Callable):
        functools.update_wrapper(self, student)
        self.student, self.check, self.reference = student, check, reference
        self.n_fallbacks = 0
        self.failed: str | None = None  # the mistake its check's last run found (or "a wrong answer")

    def _graded(self, result: CheckResult) -> None:
        """Record the outcome of a run of this function's own check on it (called by :func:`_run_check`)."""
        if result.name != self.check.__name__:
            return
        self.failed = None if result.passed or result.todo else (result.mistake or "a wrong answer")
        result.fallback = self.failed is not None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name, check = self.__name__, self.check.__name__
        if self.failed is not None:
            self.n_fallbacks += 1
            print(f"NOTE: {name} failed {check}({name}) ({self.failed}), so this cell used xaikit's reference "
                  f"instead. Fix it, then run {check}({name}) again.")
            return self.reference(*args, **kwargs)
        try:
            return self.student(*args, **kwargs)
        except NotImplementedError:
            self.n_fallbacks += 1
            print(f"NOTE: {name} is not written yet (it raises NotImplementedError), so this cell used "
                  f"xaikit's reference instead. Write it and check it with {check}({name}).")
            return self.reference(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<exercise {self.__name__}, graded by {self.check.__name__}>"


def _own(fn):
    """The student's own function: an :class:`ExerciseFunction`'s, without its fallback, or ``fn`` itself."""
    return fn.student if isinstance(fn, ExerciseFunction) else fn


def _tensor(value, dtype=torch.float64) -> torch.Tensor | None:
    """A student's answer as a CPU tensor (their function may compute on a GPU), or None."""
    if value is None:
        return None
    if not isinstance(value, (torch.Tensor, np.ndarray)) and isinstance(getattr(value, "attributions", None),
                                                                         (torch.Tensor, np.ndarray)):
        value = value.attributions  # a result object (xaikit's IGResult, Captum-style): its attributions
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().to(dtype)
    try:
        return torch.as_tensor(np.ascontiguousarray(value), dtype=dtype)  # a reversed view (x[::-1]) too
    except (TypeError, ValueError):
        return None


def _reshaped(result, got: torch.Tensor | None, shape, where: str, what: str) -> torch.Tensor | None:
    """``got`` reshaped to ``shape``, or ``None`` after recording a "shape" failure on ``result`` (with
    ``where``: which case, ``what``: e.g. "one attribution per input")."""
    shape = tuple(shape)
    if got is None or got.numel() != math.prod(shape):
        result.fail(f"{where}: expected {what}, shape {shape}; got {None if got is None else tuple(got.shape)}",
                    "shape")
        return None
    return got.reshape(shape)


def _close(a: torch.Tensor | None, b: torch.Tensor, rtol: float = 1e-4, atol: float = 1e-6) -> bool:
    return a is not None and a.shape == b.shape and bool(torch.allclose(a, b.to(a.dtype), rtol=rtol, atol=atol))


def _where(diff: torch.Tensor) -> tuple:
    idx = np.unravel_index(int(diff.argmax()), tuple(diff.shape))
    return tuple(int(i) for i in idx)


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def _largest_gap(got: torch.Tensor, want: torch.Tensor) -> tuple[tuple[int, ...], str]:
    """Where ``got`` is furthest from ``want`` (an index tuple) and the words every check uses for it:
    ``"expected <want>, got <got> (off by <gap>)"``."""
    diff = (got - want).abs()
    at = _where(diff)
    return at, f"expected {_fmt(float(want[at]))}, got {_fmt(float(got[at]))} (off by {_fmt(float(diff[at]))})"


def _run_check(name: str, student_fn, cases: Iterable[tuple[tuple, tuple]], grade: Callable[..., None],
               verbose: bool) -> CheckResult:
    """The skeleton of every check. ``cases`` yields ``(args, context)``, one pair per case, built lazily (a
    case is only set up once the cases before it passed). The student's function is called on ``args``
    (:func:`_call`: an exception is reported as a failure, an exercise stub marks the result ``todo``); if that
    went through, ``grade(result, answer, *context)`` compares the answer with the reference and records its
    ``ok``, ``fail`` and ``hint`` lines. The check stops at the first case that fails, and the report is
    printed when ``verbose``. An :class:`ExerciseFunction` graded by its own check learns the outcome: failed,
    its later calls run the reference (and the result is truthy, ``fallback``)."""
    result = CheckResult(name)
    for args, context in cases:
        answer = _call(result, student_fn, *args)
        if result.passed:
            grade(result, answer, *context)
        if not result.passed:
            break
    if isinstance(student_fn, ExerciseFunction):
        student_fn._graded(result)
    return _finish(result, verbose)
