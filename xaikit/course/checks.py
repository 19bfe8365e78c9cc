"""Self-checks for the homework: ``check_<exercise>(your_function)`` runs your function on fixed small cases,
compares it with xaikit's reference and says plainly what passed, or exactly what differs and where (which
token, layer, head, step, image) and by how much. It also recognises the classic mistakes: a missing
(x - x') factor in Integrated Gradients, a sum over the wrong axis or a missing ReLU in Grad-SAM, a
softmax over the wrong dimension in attention, a CAV pointing the wrong way.

In the spirit of d2l's ``check_shape`` and ARENA's ``test_*`` helpers. Every check prints its report and
returns a :class:`CheckResult`, which is truthy when everything passed, so a notebook cell can say
``assert check_gradsam(my_gradsam)``.

**Exercise sheets run to the end.** A notebook marks each exercise function with the check that grades it,
``@exercise(check_gradsam)``. In an exercise sheet the function's body is a stub that raises
``NotImplementedError``; the check then reports "not written yet" (``result.todo``; the result is still
truthy, so the ``assert`` lets the sheet go on), and every later call of the function runs xaikit's
reference instead and prints a note saying so. "Run All" reaches the end, and each note names a stub left
to write. A function without the decorator keeps the old behaviour: the stub's ``NotImplementedError``
stops the sheet at the check. The exercises and their signatures:

=============================  ========================================================  ==========
check                          your function                                             notebook
=============================  ========================================================  ==========
``check_grad_times_input``     ``fn(f, x) -> attributions (x.shape)``                    01
``check_ig_riemann``           ``fn(f, x, baseline, steps) -> attributions (x.shape)``   02
``check_attention``            ``fn(x, w_q, w_k, w_v) -> (out, weights)`` or             03
                               ``fn(q, k, v) -> (out, weights)``
``check_gradsam``              ``fn(attentions, gradients) -> (N,)``, both (L, M, N, N)  04
``check_cls_share``            ``fn(attentions, gradients) -> (L,)``: per layer, the     04
                               share of Grad-SAM's mass on the [CLS] row (SHAP vs
                               Grad-SAM: why [CLS] tops Grad-SAM)
``check_head_plots``           ``fn(attentions, tokens, picks) -> Figure``, picks =      04
                               ``[(layer, head), (layer, head)]``
``check_cav``                  ``fn(concept_acts, negative_acts) -> cav (D,)``           05
``check_tcav_score``           ``fn(grads (N, D), cav (D,)) -> float``                   05
=============================  ========================================================  ==========
"""

from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass, field

import numpy as np
import torch

__all__ = ["CheckResult", "exercise", "ExerciseFunction", "check_grad_times_input", "check_ig_riemann", "check_attention",
           "check_scaled_dot_product_attention", "check_gradsam", "check_cls_share", "check_head_plots", "check_cav",
           "check_tcav_score"]


# -- the report --------------------------------------------------------------------------------------------
@dataclass
class CheckResult:
    """The outcome of one check: ``passed``, the report ``lines``, and ``mistake``, a short name for a
    recognised classic mistake (``"missing_relu"``, ``"softmax_wrong_dim"``, ...) or ``None``.

    ``todo`` is True when the function is an :func:`exercise` whose body is still a stub: nothing was
    checked (``passed`` is False), yet the result is truthy so that an exercise sheet runs on, on the
    reference. A real mistake is always falsy."""

    name: str
    passed: bool = True
    lines: list[str] = field(default_factory=list)
    mistake: str | None = None
    todo: bool = False

    def __bool__(self) -> bool:
        return self.passed or self.todo

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
        verdict = ("all checks passed" if self.passed else
                   "NOT WRITTEN YET (the cells below use xaikit's reference)" if self.todo else "some checks failed")
        return "\n".join([f"{self.name}: {verdict}", *self.lines])

    def __str__(self) -> str:
        return self.report()


def _finish(result: CheckResult, verbose: bool) -> CheckResult:
    if verbose:
        print(result.report())
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
    """An exercise function and the reference that stands in for it while its body is a stub (see
    :func:`exercise`). Calling it calls the student's function; if that raises ``NotImplementedError``, it
    prints a note and returns the reference's answer instead."""

    def __init__(self, student, check, reference):
        functools.update_wrapper(self, student)
        self.student, self.check, self.reference = student, check, reference
        self.n_fallbacks = 0

    def __call__(self, *args, **kwargs):
        try:
            return self.student(*args, **kwargs)
        except NotImplementedError:
            self.n_fallbacks += 1
            print(f"NOTE: {self.__name__} is not written yet (it raises NotImplementedError), so this cell used "
                  f"xaikit's reference instead. Write it and check it with {self.check.__name__}({self.__name__}).")
            return self.reference(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<exercise {self.__name__}, graded by {self.check.__name__}>"


def exercise(check):
    """Decorator: ``@exercise(check_gradsam)`` above ``def my_gradsam(...)`` names the check that grades the
    function and, through it, the reference that stands in while the body is a stub (module docstring).

    Args:
        check: one of this module's ``check_*`` functions (or its name).
    """
    check = globals().get(check) if isinstance(check, str) else check
    name = getattr(check, "__name__", repr(check))
    if name not in _REFERENCES:
        raise ValueError(f"exercise() takes one of xaikit's checks ({', '.join(sorted(_REFERENCES))}), got {name}")

    def wrap(student):
        if not callable(student):
            raise TypeError(f"@exercise({name}) decorates a function, got {type(student).__name__}")
        return ExerciseFunction(student, check, _REFERENCES[name]())

    return wrap


def _tensor(value, dtype=torch.float64) -> torch.Tensor | None:
    """A student's answer as a CPU tensor (their function may compute on a GPU), or None."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().to(dtype)
    try:
        return torch.as_tensor(np.asarray(value), dtype=dtype)
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


# -- gradient x input (notebook 01) -------------------------------------------------------------------------
def _gxi_cases():
    """The notebook's smooth model at points with a zero, a negative and a large coordinate."""
    from xaikit.tensor.toys import smooth_model

    points = [[0.0, 1.5], [1.0, -0.5], [-2.0, 2.5], [0.7, 0.0]]
    return smooth_model, [torch.tensor(p) for p in points]


def check_grad_times_input(student_fn, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(f, x) -> attributions``: gradient x input, ``x_i * df/dx_i`` at ``x`` (notebook 01),
    on the notebook's two-input model at four points (one coordinate 0 at two of them)."""
    from xaikit.tensor.gradients import gradient

    result = CheckResult("check_grad_times_input")
    f, points = _gxi_cases()
    for x in points:
        g = gradient(f, x).double()
        ref = x.double() * g
        got = _tensor(_call(result, student_fn, f, x.clone()))
        if not result.passed:
            return _finish(result, verbose)
        where = f"x = {[round(float(v), 3) for v in x]}"
        got = _reshaped(result, got, x.shape, where, "one attribution per input")
        if got is None:
            return _finish(result, verbose)
        if _close(got, ref):
            result.ok(f"{where}: gradient x input = {[round(float(v), 5) for v in ref]}")
            continue
        i = int((got - ref).abs().argmax())
        result.fail(f"{where}: input {i} differs: expected {_fmt(float(ref[i]))}, got {_fmt(float(got[i]))}")
        if _close(got, g):
            result.fail("you return the gradient: multiply it by x, input by input", "gradient_only")
        elif _close(got, x.double()):
            result.fail("you return x itself: multiply it by the gradient of f at x", "input_only")
        elif _close(got, torch.full_like(ref, float((x.double() * g).sum()))):
            result.fail("you return the dot product x . gradient for every input: keep one number per input",
                        "summed")
        break
    return _finish(result, verbose)


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


def _ig_case(steps: int):
    from xaikit.tensor.integrated import alphas_and_weights, integrated_gradients

    x = torch.tensor([1.5, -0.8, 0.6])
    baseline = torch.tensor([0.2, 0.3, -0.4])
    refs = {rule: integrated_gradients(_ig_f, x, baseline, steps=steps, rule=rule).attributions.double()
            for rule in ("riemann_right", "riemann_left", "riemann_middle")}
    # the trapezoid rule over m intervals has m + 1 nodes (xaikit's ``steps`` counts nodes)
    refs["riemann_trapezoid"] = integrated_gradients(_ig_f, x, baseline, steps=steps + 1,
                                                     rule="riemann_trapezoid").attributions.double()
    return x, baseline, refs, alphas_and_weights


def check_ig_riemann(student_fn, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(f, x, baseline, steps) -> attributions`` (the Riemann sum of Integrated Gradients,
    Sundararajan et al. 2017; notebook 02): ``(x - x') * (1/m) * sum_k dF(x' + alpha_k (x - x'))/dx`` with
    ``alpha_k = k/m``, the paper's right sum, which the exercise asks for. A left, midpoint or trapezoid sum
    approximates the same integral, but it is not what was asked: it fails, and the report names the rule.

    ``f`` maps a batch ``(B, 3)`` to ``(B,)``; ``x`` and ``baseline`` are ``(3,)`` with a non-zero baseline,
    so a missing ``(x - x')`` factor and a path that starts at zero both show.
    """
    result = CheckResult("check_ig_riemann")
    for steps in (8, 32):
        x, baseline, refs, alphas_and_weights = _ig_case(steps)
        recorder = _Recorder(_ig_f)
        got = _tensor(_call(result, student_fn, recorder, x.clone(), baseline.clone(), steps))
        if not result.passed:
            return _finish(result, verbose)
        got = _reshaped(result, got, x.shape, f"steps={steps}", "one attribution per feature")
        if got is None:
            return _finish(result, verbose)
        matched = next((rule for rule, ref in refs.items() if _close(got, ref)), None)
        if matched == "riemann_right":
            with torch.no_grad():
                f_x, f_b = float(_ig_f(x[None])[0]), float(_ig_f(baseline[None])[0])
            result.ok(f"steps={steps}: equals the right Riemann sum (the IG paper's); sum = "
                      f"{_fmt(float(got.sum()))}, F(x) - F(x') = {_fmt(f_x - f_b)} "
                      f"(gap {_fmt(abs(float(got.sum()) - (f_x - f_b)))})")
            continue
        if matched is not None:
            name, alphas = {"riemann_left": ("left Riemann sum", "(k-1)/m for k = 1..m, i.e. 0 .. (m-1)/m"),
                            "riemann_middle": ("midpoint Riemann sum", "(k - 1/2)/m"),
                            "riemann_trapezoid": ("trapezoid rule", "0 .. 1 with half weight at both ends")}[matched]
            result.fail(f"steps={steps}: you computed the {name} (alphas {alphas}); it approximates the same "
                        f"integral, but the exercise asks for the IG paper's right sum, alpha_k = k/m for "
                        f"k = 1..m", matched.replace("riemann_", "") + "_sum")
            return _finish(result, verbose)
        ref = refs["riemann_right"]
        diff = (got - ref).abs()
        i = int(diff.argmax())
        result.fail(f"steps={steps}: feature {i} differs: expected {_fmt(float(ref[i]))}, got "
                    f"{_fmt(float(got[i]))} (off by {_fmt(float(diff[i]))}); "
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
        return _finish(result, verbose)
    return _finish(result, verbose)


def _grad(f, x: torch.Tensor) -> torch.Tensor:
    z = x.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(f(z[None]).sum(), z)
    return g


def _ig_zero_baseline(x, steps, rule):
    from xaikit.tensor.integrated import integrated_gradients

    return integrated_gradients(_ig_f, x, torch.zeros_like(x), steps=steps, rule=rule).attributions.double()


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


def check_attention(student_fn, verbose: bool = True) -> CheckResult:
    """Check scaled dot-product attention (Vaswani et al. 2017; notebook 03): either
    ``fn(x, w_q, w_k, w_v) -> (out, weights)`` (one self-attention head from the inputs) or
    ``fn(q, k, v) -> (out, weights)``; returning only ``out`` is accepted too. Compared with
    :func:`xaikit.attention.scratch.scaled_dot_product_attention` and ``torch.nn.functional.scaled_dot_product_attention``.
    """
    result = CheckResult("check_attention")
    try:
        n_params = len([p for p in inspect.signature(student_fn).parameters.values()
                        if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
    except (TypeError, ValueError):
        n_params = 4
    from_inputs = n_params >= 4
    for label, x, w_q, w_k, w_v in _attention_cases():
        q, k, v = x @ w_q, x @ w_k, x @ w_v  # (T, d_k), (T, d_k), (T, d_v)
        d_k = q.shape[-1]
        scores = q @ k.T / math.sqrt(d_k)  # (T, T)
        weights = torch.softmax(scores, dim=-1)  # (T, T)
        out = weights @ v  # (T, d_v)
        torch_out = torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None])[0]
        assert torch.allclose(out, torch_out, atol=1e-10)  # the reference itself agrees with torch
        args = (x.clone(), w_q.clone(), w_k.clone(), w_v.clone()) if from_inputs else (q.clone(), k.clone(), v.clone())
        got = _call(result, student_fn, *args)
        if not result.passed:
            return _finish(result, verbose)
        got_out, got_w = (got if isinstance(got, tuple | list) and len(got) == 2 else (got, None))
        got_out, got_w = _tensor(got_out), _tensor(got_w)
        if got_w is not None:
            if got_w.shape != weights.shape:
                result.fail(f"{label}: weights should be (queries, keys) = {tuple(weights.shape)}, got "
                            f"{tuple(got_w.shape)}", "shape")
            elif not _close(got_w, weights):
                diff = (got_w - weights).abs()
                i, j = _where(diff)
                result.fail(f"{label}: weight of query {i} on key {j} differs: expected "
                            f"{_fmt(float(weights[i, j]))}, got {_fmt(float(got_w[i, j]))} (off by "
                            f"{_fmt(float(diff[i, j]))}); your row sums: "
                            f"{[round(float(s), 4) for s in got_w.sum(-1)]}")
                _attention_mistake(result, got_w, scores * math.sqrt(d_k), d_k, v.shape[-1])
            else:
                result.ok(f"{label}: weights match, every row sums to 1")
        if got_out is None or got_out.shape != out.shape:
            result.fail(f"{label}: out should be (queries, d_v) = {tuple(out.shape)}, got "
                        f"{None if got_out is None else tuple(got_out.shape)}", "shape")
        elif not _close(got_out, out):
            diff = (got_out - out).abs()
            i, j = _where(diff)
            result.fail(f"{label}: out[{i}, {j}] (query {i}, feature {j}) differs: expected "
                        f"{_fmt(float(out[i, j]))}, got {_fmt(float(got_out[i, j]))} (off by "
                        f"{_fmt(float(diff[i, j]))})")
            if got_w is None:
                for name, (message, cand) in _attention_variants(scores * math.sqrt(d_k), d_k, v.shape[-1]).items():
                    if _close(got_out, cand @ v):
                        result.fail(message, name)
                        break
            elif _close(got_w, weights) and _close(got_out, weights.T @ v):
                result.fail("out = A^T V: each query's output is sum_j A[i, j] v_j, i.e. A @ V", "transposed")
        else:
            result.ok(f"{label}: out matches xaikit and torch.nn.functional.scaled_dot_product_attention")
        if not result.passed:
            break
    return _finish(result, verbose)


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


# -- Grad-SAM (notebook 04) ----------------------------------------------------------------------------------
def _gradsam_reference(a: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    from xaikit.text.gradsam import gradsam_scores

    return gradsam_scores(a, g)


def _synthetic_attention(seed: int = 0, L: int = 3, M: int = 2, N: int = 5):
    """Random softmax attention and signed gradients; in layer 0 head 0 the gradients are all positive,
    so a missing ReLU shows only in the other heads (and the report can say which)."""
    gen = torch.Generator().manual_seed(seed)
    a = torch.softmax(torch.randn(L, M, N, N, generator=gen, dtype=torch.float64) * 2, dim=-1)
    g = torch.randn(L, M, N, N, generator=gen, dtype=torch.float64)
    g[0, 0] = g[0, 0].abs()
    return a, g


@functools.lru_cache(maxsize=1)
def _bert_case():
    """A tiny seeded BERT, its tokenizer and one sentence: attention, its gradient, and the tokens."""
    from xaikit.models.tiny import tiny_bert, tiny_tokenizer
    from xaikit.text.gradsam import attention_and_gradients

    model, tok = tiny_bert(seed=0), tiny_tokenizer()
    text = "I like the movie"
    enc = tok(text, return_tensors="pt")
    with torch.no_grad():
        target = int(model(**enc).logits[0].argmax())
    a, g, _ = attention_and_gradients(model, dict(enc), target)
    tokens = tok.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    return a.double(), g.double(), tokens


def _gradsam_cases():
    a, g = _synthetic_attention()
    cases = [("random attention (3 layers, 2 heads, 5 tokens)", a, g, [f"t{i}" for i in range(a.shape[-1])])]
    try:
        ba, bg, tokens = _bert_case()
        cases.append(("tiny BERT on 'I like the movie'", ba, bg, tokens))
    except Exception:  # noqa: BLE001, S110 - the synthetic case still runs without transformers
        pass
    return cases


def _gradsam_variants(a, g) -> dict:
    L, M, N, _ = a.shape
    relu = torch.relu(g)
    return {
        "wrong_axis": ("you sum over the queries (dim 2, a column); Grad-SAM sums along token i's own row, "
                       "over the keys j (the last axis)", (a * relu).sum(dim=(0, 1, 2)) / (L * M * N)),
        "missing_relu": ("the ReLU on the gradient is missing: negative gradients must count as 0",
                         (a * g).sum(dim=(0, 1, 3)) / (L * M * N)),
        "abs_not_relu": ("you take |gradient|; Grad-SAM keeps only positive gradients: ReLU",
                         (a * g.abs()).sum(dim=(0, 1, 3)) / (L * M * N)),
        "missing_normalisation": ("the sum is not divided by L * M * N", (a * relu).sum(dim=(0, 1, 3))),
        "normalised_by_lm_only": ("divide by L * M * N (layers, heads and tokens), not only L * M",
                                  (a * relu).sum(dim=(0, 1, 3)) / (L * M)),
    }


def check_gradsam(student_fn, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(attentions, gradients) -> (N,)`` against Grad-SAM (Barkan et al. 2021; notebook 04):
    ``r_i = 1/(L M N) sum_l sum_m sum_j [A^{lm} o ReLU(dS/dA^{lm})]_{ij}``, both inputs ``(L, M, N, N)``
    (layer, head, query, key). Differences are located by token, and by layer and head (your function is
    also run on each single head)."""
    result = CheckResult("check_gradsam")
    for label, a, g, tokens in _gradsam_cases():
        ref = _gradsam_reference(a, g)
        got = _tensor(_call(result, student_fn, a.clone(), g.clone()))
        if not result.passed:
            return _finish(result, verbose)
        got = _reshaped(result, got, ref.shape, label, "one score per token")
        if got is None:
            return _finish(result, verbose)
        if _close(got, ref):
            top = int(ref.argmax())
            result.ok(f"{label}: all {len(ref)} token scores match (top token {tokens[top]!r})")
            continue
        diff = (got - ref).abs()
        i = int(diff.argmax())
        result.fail(f"{label}: token {i} ({tokens[i]!r}) differs: expected {_fmt(float(ref[i]))}, got "
                    f"{_fmt(float(got[i]))} (off by {_fmt(float(diff[i]))})")
        for name, (message, cand) in _gradsam_variants(a, g).items():
            if _close(got, cand):
                result.fail(message, name)
                break
        _locate_heads(result, student_fn, a, g)
        break
    return _finish(result, verbose)


def _locate_heads(result, student_fn, a, g) -> None:
    """Run the student's function on each (layer, head) alone and list where it disagrees."""
    L, M, N, _ = a.shape
    bad = []
    for l in range(L):
        for m in range(M):
            one_a, one_g = a[l:l + 1, m:m + 1].clone(), g[l:l + 1, m:m + 1].clone()
            try:
                got = _tensor(student_fn(one_a, one_g))
            except Exception:  # noqa: BLE001 - a function that only works on full stacks: skip locating
                return
            ref = _gradsam_reference(one_a, one_g)
            if got is None or got.numel() != ref.numel() or not _close(got.reshape(ref.shape), ref):
                bad.append((l, m))
    if bad and len(bad) < L * M:
        result.hint("run on one head at a time, your function differs in "
                    + ", ".join(f"layer {l} head {m}" for l, m in bad)
                    + f" and agrees in the other {L * M - len(bad)} head(s)")
    elif bad:
        result.hint("run on one head at a time, your function differs in every layer and head")


# -- SHAP vs Grad-SAM: the [CLS] question (notebook 04) ---------------------------------------------------
def _cls_share_reference(a, g) -> torch.Tensor:
    h = (a * torch.relu(g)).sum(dim=(1, 3))  # (L, N): each layer's Grad-SAM mass per query row
    total = h.sum(dim=1)  # (L,)
    return torch.where(total > 0, h[:, 0] / total.clamp_min(1e-300), torch.zeros_like(total))


def check_cls_share(student_fn, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(attentions, gradients) -> (L,)``: for each layer, the share of that layer's Grad-SAM
    mass ``sum_m sum_j [A o ReLU(G)]_{ij}`` that falls on the [CLS] row ``i = 0``.

    The point of the exercise (SHAP vs Grad-SAM, notebook 04): the classifier reads only the [CLS] output,
    so in the last layer the gradient reaches the [CLS] row alone and its share is exactly 1, which is why
    [CLS] so often tops Grad-SAM (3 of the lecture's 5 sentences on the embedded model). SHAP's text masker never hides [CLS], so [CLS] has no effect of its
    own; with the lecture's ``fixed_context=1`` it gets only its share of the interactions that the Partition
    explainer hands down to every token of a group (:func:`xaikit.text.shaptext.credit_split`), and 0 with
    ``fixed_context=None``.
    """
    result = CheckResult("check_cls_share")
    for label, a, g, tokens in _gradsam_cases():
        ref = _cls_share_reference(a, g)
        got = _tensor(_call(result, student_fn, a.clone(), g.clone()))
        if not result.passed:
            return _finish(result, verbose)
        got = _reshaped(result, got, ref.shape, label, "one share per layer")
        if got is None:
            return _finish(result, verbose)
        if _close(got, ref):
            result.ok(f"{label}: shares per layer match: {[round(float(s), 3) for s in ref]}")
            if tokens[0] == "[CLS]":
                result.ok(f"{label}: in the last layer the [CLS] row holds {float(ref[-1]):.0%} of the mass: "
                          "only [CLS]'s output reaches the classifier")
            continue
        diff = (got - ref).abs()
        layer = int(diff.argmax())
        result.fail(f"{label}: layer {layer} differs: expected {_fmt(float(ref[layer]))}, got "
                    f"{_fmt(float(got[layer]))} (off by {_fmt(float(diff[layer]))})")
        h_relu, h_raw = a * torch.relu(g), a * g
        column = h_relu.sum(dim=(1, 2))  # attention *to* [CLS]: the column
        variants = {
            "wrong_axis": ("you take the [CLS] column (how much others attend to [CLS]); Grad-SAM's score of "
                           "[CLS] is its own row (what [CLS] attends to, as the query)",
                           column[:, 0] / column.sum(1)),
            "missing_relu": ("the ReLU on the gradient is missing",
                             h_raw.sum(dim=(1, 3))[:, 0] / h_raw.sum(dim=(1, 2, 3))),
            "not_a_share": ("return a share (the [CLS] row's mass divided by the layer's total), not the mass",
                            h_relu.sum(dim=(1, 3))[:, 0]),
        }
        for name, (message, cand) in variants.items():
            if _close(got, cand):
                result.fail(message, name)
                break
        break
    return _finish(result, verbose)


# -- two heads of two layers (notebook 04, homework 3) -------------------------------------------------------
def _images(fig) -> list[tuple[object, np.ndarray]]:
    """(axes, data) for every image-like artist: imshow/matshow images and pcolormesh meshes."""
    from matplotlib.collections import QuadMesh
    from matplotlib.image import AxesImage

    found = []
    for ax in fig.axes:
        for artist in ax.get_children():
            if isinstance(artist, AxesImage):
                found.append((ax, np.asarray(artist.get_array(), dtype=np.float64), artist))
            elif isinstance(artist, QuadMesh):
                data = np.asarray(artist.get_array(), dtype=np.float64)
                coords = artist.get_coordinates()
                data = data.reshape(coords.shape[0] - 1, coords.shape[1] - 1)
                found.append((ax, data, artist))
    return found


def check_head_plots(student_fn, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(attentions, tokens, picks) -> Figure`` (homework: pick two layers, plot one head of
    each). ``attentions`` is ``(L, M, N, N)``, ``picks`` is ``[(layer, head), (layer, head)]``. The figure
    (or an Axes / array of Axes) must hold one heatmap per pick showing exactly ``attentions[layer, head]``
    with queries as rows, token labels on both axes, and a fixed 0-1 colour range so heads can be compared.
    """
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    result = CheckResult("check_head_plots")
    try:
        a, _, tokens = _bert_case()
    except Exception:  # noqa: BLE001 - without transformers: a random stack with made-up tokens
        a, _ = _synthetic_attention(L=2, M=4, N=6)
        tokens = ["[CLS]", "the", "movie", "was", "good", "[SEP]"]
    L, M, N, _ = a.shape
    picks = [(0, 1), (L - 1, M - 1)]
    got = _call(result, student_fn, a.float().clone(), list(tokens), list(picks))
    if not result.passed:
        return _finish(result, verbose)
    if isinstance(got, Axes):
        got = got.figure
    elif isinstance(got, np.ndarray | list | tuple) and len(got) and isinstance(np.ravel(got)[0], Axes):
        got = np.ravel(got)[0].figure
    if not isinstance(got, Figure):
        result.fail(f"return the Matplotlib Figure (or its Axes); got {type(got).__name__}", "no_figure")
        return _finish(result, verbose)
    images = _images(got)
    if len(images) < len(picks):
        result.fail(f"expected {len(picks)} heatmaps (imshow, matshow or pcolormesh), found {len(images)}",
                    "missing_heatmap")
        return _finish(result, verbose)
    used = set()
    for layer, head in picks:
        want = a[layer, head].numpy()
        hit = next((k for k, (_, data, _) in enumerate(images) if k not in used and data.shape == want.shape
                    and np.allclose(data, want, atol=1e-5)), None)
        if hit is not None:
            used.add(hit)
            ax, _, artist = images[hit]
            result.ok(f"layer {layer} head {head}: heatmap shows attentions[{layer}, {head}] (queries as rows)")
            labels = [t.get_text() for t in ax.get_xticklabels()], [t.get_text() for t in ax.get_yticklabels()]
            if labels[0] != list(tokens) or labels[1] != list(tokens):
                result.fail(f"layer {layer} head {head}: label both axes with the tokens {list(tokens)} "
                            f"(got x {labels[0][:N]}, y {labels[1][:N]})", "missing_labels")
            lo, hi = artist.get_clim()
            if not (math.isclose(lo, 0.0, abs_tol=1e-9) and math.isclose(hi, 1.0, abs_tol=1e-9)):
                result.fail(f"layer {layer} head {head}: fix the colour range to 0-1 (vmin=0, vmax=1) so the "
                            f"two heads can be compared; yours is {lo:.3g}-{hi:.3g}", "colour_range")
            continue
        data_list = [data for _, data, _ in images]
        if any(d.shape == want.shape and np.allclose(d, want.T, atol=1e-5) for d in data_list):
            result.fail(f"layer {layer} head {head}: the matrix is transposed: rows must be the queries "
                        "(attentions[layer, head][i, j] = how much token i attends to token j)", "transposed")
        elif any(d.shape == want.shape and np.allclose(d, a[layer].mean(0).numpy(), atol=1e-5) for d in data_list):
            result.fail(f"layer {layer} head {head}: you plot the mean over heads; plot the one head",
                        "mean_of_heads")
        else:
            other = [(l, m) for l in range(L) for m in range(M)
                     if any(d.shape == want.shape and np.allclose(d, a[l, m].numpy(), atol=1e-5) for d in data_list)]
            where = (f"; a heatmap shows layer {other[0][0]} head {other[0][1]} instead (an index off by one?)"
                     if other else "")
            result.fail(f"layer {layer} head {head}: no heatmap shows attentions[{layer}, {head}]{where}",
                        "wrong_head" if other else "wrong_values")
    return _finish(result, verbose)


# -- CAV and TCAV (notebook 05) ------------------------------------------------------------------------------
def _cav_case(seed: int = 0, n: int = 40, d: int = 6):
    """Concept activations shifted along a known direction u; negatives around the origin."""
    rng = np.random.default_rng(seed)
    u = np.zeros(d)
    u[1], u[3] = 0.8, -0.6  # unit
    concept = rng.normal(size=(n, d)) + 2.5 * u
    negative = rng.normal(size=(n, d))
    return concept, negative, u


def check_cav(student_fn, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(concept_acts (N, D), negative_acts (N, D)) -> cav (D,)`` (Kim et al. 2018; notebook
    05): a unit vector normal to a linear boundary between the two sets, pointing towards the concept.
    The concept set is shifted along a known direction, so the check knows where the CAV should point.
    Compared with :func:`xaikit.concepts.tcav.train_cav` (cosine similarity, not exact: solvers differ)."""
    from xaikit.concepts.tcav import train_cav

    result = CheckResult("check_cav")
    concept, negative, u = _cav_case()
    ref = train_cav(concept, negative).vector.astype(np.float64)
    got = _call(result, student_fn, concept.copy(), negative.copy())
    if not result.passed:
        return _finish(result, verbose)
    v = np.asarray(_tensor(got).numpy() if _tensor(got) is not None else [], dtype=np.float64).reshape(-1)
    if v.shape != ref.shape:
        result.fail(f"expected a vector of {ref.shape[0]} numbers (one per activation dimension), got shape "
                    f"{v.shape}", "shape")
        return _finish(result, verbose)
    norm = float(np.linalg.norm(v))
    if norm == 0 or not np.isfinite(norm):
        result.fail(f"the CAV has length {norm}: it must be a direction", "zero_vector")
        return _finish(result, verbose)
    cos_ref, cos_u = float(v @ ref / norm), float(v @ u / norm)
    if cos_ref < -0.9:
        result.fail(f"your CAV points away from the concept (cosine with xaikit's CAV {cos_ref:.3f}): label the "
                    "concept examples 1 and the negatives 0, or flip the sign", "sign_flipped")
    elif cos_ref < 0.9:
        result.fail(f"your CAV is not the normal of a boundary between the sets: cosine with xaikit's CAV "
                    f"{cos_ref:.3f} (want > 0.9), with the true concept direction {cos_u:.3f}", "wrong_direction")
    else:
        result.ok(f"points towards the concept: cosine {cos_ref:.3f} with xaikit's CAV, {cos_u:.3f} with the "
                  "direction the concept was shifted along")
    if not math.isclose(norm, 1.0, rel_tol=1e-3):
        result.fail(f"normalise the CAV to length 1 (yours has length {norm:.4g}): directional derivatives are "
                    "then comparable across concepts and layers", "not_normalised")
    elif result.passed:
        result.ok("unit length")
    return _finish(result, verbose)


def _tcav_case(seed: int = 1, n: int = 12, d: int = 5):
    rng = np.random.default_rng(seed)
    cav = np.zeros(d)
    cav[0] = 1.0
    grads = rng.normal(size=(n, d))
    grads[:, 0] += 0.3
    grads[2, 0] = 0.0  # exactly zero directional derivative: neither positive nor negative
    grads[7, 0] = 0.0
    return grads, cav


def check_tcav_score(student_fn, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(grads (N, D), cav (D,)) -> float``: the TCAV score, the fraction of class images
    whose directional derivative ``S(x) = grad . cav`` is strictly positive (Kim et al. 2018; notebook 05).
    Images whose derivative is exactly zero are included, to catch ``>= 0``; each image is also checked on
    its own, so the report names the images your function counts differently."""
    result = CheckResult("check_tcav_score")
    grads, cav = _tcav_case()
    s = grads @ cav  # (N,)
    ref = float((s > 0).mean())
    got = _call(result, student_fn, grads.copy(), cav.copy())
    if not result.passed:
        return _finish(result, verbose)
    try:
        got = float(np.asarray(_tensor(got).numpy()).reshape(()))
    except (AttributeError, TypeError, ValueError):
        result.fail(f"return one number (the fraction of images with S > 0), got {type(got).__name__}", "shape")
        return _finish(result, verbose)
    if math.isclose(got, ref, abs_tol=1e-9):
        result.ok(f"TCAV score {ref:.4g} = {int((s > 0).sum())} of {len(s)} images with S(x) > 0")
        return _finish(result, verbose)
    result.fail(f"expected {ref:.4g} ({int((s > 0).sum())} of {len(s)} images with S > 0), got {got:.4g}")
    positive = s[s > 0].sum()
    variants = {
        "greater_equal": ("images with S(x) = 0 are counted: TCAV counts only S > 0", float((s >= 0).mean())),
        "count_not_fraction": ("return the fraction of images, not the count", float((s > 0).sum())),
        "sign_flipped": ("you count S < 0: the score counts images whose logit rises along the CAV",
                         float((s < 0).mean())),
        "magnitude": ("this is the magnitude variant (sum of positive S over sum of |S|); the TCAV score is "
                      "the fraction of images with S > 0", float(positive / np.abs(s).sum())),
        "mean_derivative": ("this is the mean directional derivative, not a fraction", float(s.mean())),
    }
    for name, (message, value) in variants.items():
        if math.isclose(got, value, abs_tol=1e-9):
            result.fail(message, name)
            break
    disagree = []
    for i in range(len(s)):
        try:
            one = float(np.asarray(_tensor(student_fn(grads[i:i + 1].copy(), cav.copy())).numpy()).reshape(()))
        except Exception:  # noqa: BLE001 - a function that needs several images: skip locating
            disagree = []
            break
        if not math.isclose(one, float(s[i] > 0), abs_tol=1e-9):
            disagree.append(f"image {i} (S = {s[i]:.3g}): you give {one:.3g}, expected {float(s[i] > 0):.0f}")
    if disagree:
        result.hint("on one image at a time: " + "; ".join(disagree[:4]))
    return _finish(result, verbose)


# -- the references an exercise falls back to while it is a stub ------------------------------------------------
def _ig_reference(f, x, baseline, steps):
    from xaikit.tensor.integrated import integrated_gradients

    return integrated_gradients(f, x, baseline, steps=steps, rule="riemann_right").attributions


def _attention_reference(*args):
    """``(x, w_q, w_k, w_v)`` or ``(q, k, v)`` -> ``(out, weights)``, as the exercise returns them."""
    from xaikit.attention.scratch import scaled_dot_product_attention, self_attention

    if len(args) == 3:
        return scaled_dot_product_attention(*args)
    steps = self_attention(*args)
    return steps.out, steps.weights


def _head_plots_reference(attentions, tokens, picks):
    from matplotlib.figure import Figure

    from xaikit.widgets.attention import draw_attention

    fig = Figure(figsize=(5 * len(picks), 4.4), layout="constrained")
    for ax, (layer, head) in zip(fig.subplots(1, len(picks), squeeze=False)[0], picks, strict=True):
        draw_attention(ax, attentions[layer, head], tokens, title=f"layer {layer}, head {head}")
    return fig


def _cav_reference(concept_acts, negative_acts):
    from xaikit.concepts.tcav import train_cav

    return train_cav(concept_acts, negative_acts).vector


def _tcav_score_reference(grads, cav):
    return float((np.asarray(grads) @ np.asarray(cav) > 0).mean())


def _grad_times_input_reference(f, x):
    from xaikit.tensor.gradients import grad_times_input

    return grad_times_input(f, x)


#: check name -> a function returning the reference an exercise graded by that check falls back to.
_REFERENCES = {
    "check_grad_times_input": lambda: _grad_times_input_reference,
    "check_ig_riemann": lambda: _ig_reference,
    "check_attention": lambda: _attention_reference,
    "check_scaled_dot_product_attention": lambda: _attention_reference,
    "check_gradsam": lambda: _gradsam_reference,
    "check_cls_share": lambda: _cls_share_reference,
    "check_head_plots": lambda: _head_plots_reference,
    "check_cav": lambda: _cav_reference,
    "check_tcav_score": lambda: _tcav_score_reference,
}
