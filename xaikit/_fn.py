"""The calling convention every attribution method shares, and where tensors live.

``f`` maps a batch ``(B, ...)`` to ``(B,)`` scalars or ``(B, C)`` class scores; ``x`` is one input with no
batch dimension; ``target`` picks the class (``None``: the predicted class, or the only output). These
helpers turn that convention into tensors, validate it once, and put inputs on the model's device;
:func:`entry` is the one entry of every tensor method.

**Devices and dtypes.** A model may sit on a GPU (``xaikit.device()``) and may hold float64, float16 or
bfloat16 weights. Everything xaikit builds for a model (token ids, masks, path points, noisy copies) is
moved to the model's device, and floating inputs to its dtype, just before the model sees them
(:func:`call`, :func:`to_model`). Methods take gradients of a float16/bfloat16 model in float32
(:func:`computing`, applied once by each family's entry): its weights are widened for the call and put back
exactly afterwards. Every tensor xaikit *returns* is on the CPU (:func:`to_cpu`), so
plotting and NumPy code work the same on every machine; results keep the precision they were computed in,
except float16/bfloat16, which come back as float32 (NumPy has no bfloat16). Pure tensor functions
(``xaikit.attention.scratch``, ``gradsam_scores``) compute where their inputs are, as torch functions do.
"""

from __future__ import annotations

import functools
import inspect
import numbers
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import torch

from xaikit._reach import reachable_modules
from xaikit._types import Input, ModelFn, Target
from xaikit._validate import check_callable, check_finite, check_float, check_int, check_same_shape
from xaikit.policies import check_thread_setting, float64_device, method_threads


def as_input(x: Input, name: str = "x") -> torch.Tensor:
    """A floating tensor (float32 unless it already is float64), detached, NaN-free."""
    if isinstance(x, torch.Tensor):
        t = x.detach()
    else:
        try:
            t = torch.as_tensor(x)
        except (TypeError, ValueError, RuntimeError) as err:
            raise TypeError(f"{name} must be a tensor or array of numbers, got {type(x).__name__}") from err
    if t.is_complex():
        raise TypeError(f"{name} is complex ({_dtype_name(t.dtype)}); attributions are defined for real inputs, "
                        f"and a cast to a real dtype would drop the imaginary part. Pass {name}.real, {name}.abs(), "
                        f"or the real and imaginary parts as two real inputs")
    if t.device.type == "meta":
        raise ValueError(f"{name} is on the meta device: it has a shape but no values, so nothing can be "
                         f"computed from it. Pass a tensor with data (e.g. torch.zeros({tuple(t.shape)}))")
    if t.ndim == 0:
        raise ValueError(f"{name} must have at least one dimension (one input, no batch), got a scalar; "
                         f"wrap it as [{float(t)}]")
    if t.numel() == 0:
        raise ValueError(f"{name} is empty (shape {tuple(t.shape)})")
    if t.dtype != torch.float64:
        t = t.to(torch.float32)
    check_finite(t, name)
    return t


def as_baseline(baseline: float | Input | None, x: torch.Tensor) -> torch.Tensor:
    """The baseline ``x'`` of every tensor method, on ``x``'s device and dtype: ``None`` is all zeros, a
    number is a constant input (a NumPy scalar, or a 0-d array or tensor, too), anything else a tensor of
    ``x``'s shape (checked like ``x``)."""
    if baseline is None:
        return torch.zeros_like(x)
    if getattr(baseline, "ndim", None) == 0 and hasattr(baseline, "item"):  # np.float32(0), np.array(0), tensor(0)
        baseline = baseline.item()
    if isinstance(baseline, numbers.Real) and not isinstance(baseline, bool):
        value = check_float(baseline, "baseline", hint="a number baseline is a constant input, e.g. 0.0")
        return torch.full_like(x, value)
    b = as_input(baseline, "baseline")
    check_same_shape(x, b, "x", "baseline")
    return b.to(device=x.device, dtype=x.dtype)


def model_device(f: ModelFn) -> torch.device | None:
    """The device of ``f``'s parameters if it is a module with any, else ``None``."""
    if isinstance(f, torch.nn.Module):
        for p in f.parameters():
            return p.device
    return None


def model_dtype(f: ModelFn) -> torch.dtype | None:
    """The dtype of ``f``'s first floating-point parameter if it is a module with one, else ``None``."""
    if isinstance(f, torch.nn.Module):
        for p in f.parameters():
            if p.is_floating_point():
                return p.dtype
    return None


def to_model(f: ModelFn, t: torch.Tensor) -> torch.Tensor:
    """``t`` on ``f``'s device, and in ``f``'s dtype if ``t`` is floating point (unchanged for a plain function).

    The cast is differentiable, so a gradient taken with respect to ``t`` comes back in ``t``'s own dtype.
    """
    dev, dtype = model_device(f), model_dtype(f)
    if dev is None:
        return t
    if dtype is not None and t.is_floating_point():
        return t.to(device=dev, dtype=dtype)
    return t.to(dev)


def inputs_to_model(model: torch.nn.Module, inputs: Mapping[str, Any]) -> dict:
    """A tokenizer's or image processor's output (a dict of tensors) ready for ``model(**inputs)``: every
    tensor on the model's device, floating ones (pixel values) in its dtype; token ids stay integers."""
    return {k: (to_model(model, v) if isinstance(v, torch.Tensor) else v) for k, v in dict(inputs).items()}


#: dtypes NumPy cannot hold (or holds poorly): results in these come back as float32.
_LOW_PRECISION = (torch.float16, torch.bfloat16)


def to_cpu(t: Any, dtype: torch.dtype | None = None) -> Any:
    """A result as xaikit returns it: detached, on the CPU, float16/bfloat16 widened to float32.

    ``dtype`` casts a floating result to that dtype instead (e.g. the dtype of the user's input). Anything
    that is not a tensor is returned unchanged, so dataclass fields can be passed through blindly.
    """
    if not isinstance(t, torch.Tensor):
        return t
    t = t.detach().cpu()  # moved first: a float64 cast on Apple's MPS raises (xaikit.policies.float64_device)
    if t.is_floating_point():
        if dtype is not None:
            t = t.to(dtype)
        elif t.dtype in _LOW_PRECISION:
            t = t.float()
    return t


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` pointing at the first caller outside xaikit (the user's line, however deep the call)."""
    import sys

    level, frame = 2, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "xaikit":
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level)


@contextmanager
def computing_in_float32(model: ModelFn) -> Iterator[ModelFn]:
    """Run the block with a float16/bfloat16 model's weights in float32, then put them back exactly.

    Gradients in reduced precision underflow and round: on a float16 model, Grad-SAM's small scores come out
    0 and text IG is 17% off with an 18% completeness gap. Every float16/bfloat16 parameter and
    buffer is widened to float32 for the block (the same ``Parameter`` objects, so optimizers and hooks keep
    working) and narrowed back afterwards, also on an exception; float32 holds every float16 and bfloat16
    value exactly, so the round trip leaves the weights bit for bit as they were. The block needs the
    float32 copy's memory (twice the model's) while it runs. Anything else (a plain function, a float32 or
    float64 model) is left alone.
    """
    low = []
    if isinstance(model, torch.nn.Module):
        low = [(t, t.dtype) for t in (*model.parameters(), *model.buffers()) if t.dtype in _LOW_PRECISION]
    for t, _ in low:
        t.data = t.data.float()
    try:
        yield model
    finally:
        for t, dtype in low:
            t.data = t.data.to(dtype)


def in_float32(arg: str = "f") -> Callable[[Callable], Callable]:
    """Decorate a method so that its model argument ``arg`` computes in float32 (:func:`computing_in_float32`)."""
    def wrap(fn):
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def inner(*args, **kwargs):
            try:
                model = signature.bind_partial(*args, **kwargs).arguments.get(arg)
            except TypeError:  # a wrong call: let fn raise its own error
                model = None
            with computing_in_float32(model):
                return fn(*args, **kwargs)

        return inner

    return wrap


def ensure_eval(f: ModelFn, method: str = "this method") -> None:
    """Switch every torch module that ``f`` computes with and that is in training mode to eval mode, and say so.

    Dropout (and BatchNorm's batch statistics) in training mode make every attribution random: the gradient
    map changes from call to call, and integrated gradients shows a completeness gap that more steps cannot
    close. The modules looked at are ``f`` itself and those reachable from it (:func:`reachable_modules`): a
    ``lambda b: model(b)`` closure, a bound method, a ``functools.partial``, a callable object. A module found
    in training mode is switched with ``model.eval()`` and a warning names it, rather than an error: eval mode
    is what every attribution method assumes (Captum's tutorials and the lecture notebooks call
    ``model.eval()`` first), switching is what this function already did for a module passed directly, and
    the student gets the right map with a line saying why. A random ``f`` that holds no module (noise added
    inside the function) cannot be switched; :func:`check_deterministic` refuses it.

    The one eval-mode switch of every method (tensor, text, attention and concept families)."""
    for name, module in reachable_modules(f):
        if any(m.training and _mode_matters(m) for m in module.modules()):
            shown = "the model" if module is f else f"the model {name!r} that f calls"
            warn(f"{method}: {shown} was in training mode (dropout makes attributions random); "
                 f"xaikit switched it to eval mode with {name if module is not f else 'model'}.eval(). "
                 "Call model.eval() before explaining a model.")
            module.eval()


def _mode_matters(m: torch.nn.Module) -> bool:
    """Whether ``m`` may compute differently in training mode: dropout and batch/instance norm layers, an
    attention layer with dropout, and any module not from ``torch.nn`` itself (a transformers model or the
    user's own class may read ``self.training``). A ``Linear`` or ``Conv2d`` left in training mode, as a
    fresh module is, computes the same either way and is left alone."""
    nn = torch.nn
    if isinstance(m, (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._NormBase)):
        return True
    if isinstance(m, nn.MultiheadAttention):
        return m.dropout > 0
    return not type(m).__module__.startswith("torch.nn")


def check_deterministic(f: ModelFn, batch: torch.Tensor, out: torch.Tensor) -> None:
    """Refuse an ``f`` that gives two different outputs for the same input batch.

    Every attribution method assumes ``f`` is a function: a random ``f`` (dropout left on in a model xaikit
    cannot see, noise added inside ``f``) gives a different map on every call, and a completeness gap that no
    number of steps closes. ``out`` is ``f(batch)`` already computed; ``f`` is evaluated once more and the
    two are compared (within float rounding). An error, not a warning: xaikit cannot make such an ``f``
    deterministic, only its author can (``model.eval()``, or a fixed seed inside ``f``).
    """
    check_finite_outputs(out, batch)
    again = call(f, batch)
    if again.shape == out.shape and torch.allclose(again.float(), out.float(), rtol=1e-4, atol=1e-6):
        return
    diff = float((again.float() - out.float()).abs().max()) if again.shape == out.shape else float("nan")
    raise ValueError(
        f"f gave different outputs for the same input (largest difference {diff:.3g}): attributions of a random "
        "function change on every call. If f calls a model, call model.eval() first (dropout is on in "
        "training mode); if f adds noise, fix its seed inside f or take the noise out")


def check_finite_outputs(out: torch.Tensor, batch: torch.Tensor, name: str = "f") -> None:
    """Refuse NaN or inf in ``f``'s output on an input that is itself finite: no attribution of such an output
    means anything, and two NaN outputs compare unequal, which would read as a random ``f``."""
    bad = ~torch.isfinite(out.detach().float())
    if bool(bad.any()):
        where = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(
            f"{name} returned NaN or inf (first at output index {where}) on a finite input whose largest magnitude "
            f"is {float(batch.detach().abs().max()):.3g}: nothing can be attributed to a non-finite output. Check "
            f"{name} (a division by zero, a log of 0, a NaN weight) or rescale the input")


def check_finite_attributions(a: torch.Tensor, x: torch.Tensor, method: str) -> torch.Tensor:
    """Refuse attributions with NaN or inf computed from a finite ``x``, naming ``x``'s scale.

    At inputs near float32's limit (about 3.4e38) a gradient or a product ``x * dF/dx`` overflows to inf: the
    map would look like "everything infinitely important". Returns ``a`` unchanged when it is finite."""
    bad = ~torch.isfinite(a)
    if bool(bad.any()):
        where = tuple(int(i) for i in bad.nonzero()[0])
        scale = float(x.detach().abs().max())
        limit = torch.finfo(a.dtype).max if a.is_floating_point() else float("inf")
        raise ValueError(
            f"{method}: the attributions are not finite (NaN or inf, first at index {where}) although x is: x's "
            f"largest magnitude is {scale:.3g}, and f's gradients or their products with x overflow "
            f"{_dtype_name(a.dtype)} (largest number {limit:.3g}). Rescale x (e.g. standardise it, or divide it by "
            f"{scale:.3g}), or pass x as float64 if f computes in float64")
    return a


def call(f: ModelFn, batch: torch.Tensor) -> torch.Tensor:
    """``f(batch)`` as a tensor of shape ``(B,)`` or ``(B, C)``, with a clear error for anything else.

    For a torch module the batch is moved to its device and dtype first (:func:`to_model`); the output
    stays where the module computed it.
    """
    out = f(to_model(f, batch))
    if hasattr(out, "logits"):  # a transformers ModelOutput
        out = out.logits
    if not isinstance(out, torch.Tensor):
        out = torch.as_tensor(out)
    if out.ndim == 0 or out.shape[0] != batch.shape[0] or out.ndim > 2:
        raise ValueError(
            f"f must return shape (B,) or (B, C) for a batch of B inputs; for a batch of shape "
            f"{tuple(batch.shape)} it returned {tuple(out.shape)}"
        )
    return out


def resolve_target(f: ModelFn, x: torch.Tensor, target: Target, method: str = "the method") -> int | None:
    """Validate ``target`` against ``f``'s output on ``x``; ``None`` becomes the predicted class.

    Returns ``None`` for a scalar-output ``f`` (shape ``(B,)``).
    """
    with torch.no_grad():
        try:
            out = call(f, x.unsqueeze(0))
        except (RuntimeError, IndexError) as err:  # a mismatch deep inside f: name x, its shape and dtype
            raise ValueError(
                f"f could not be evaluated on x of shape {tuple(x.shape)}, dtype {_dtype_name(x.dtype)} (as a "
                f"batch of one, {(1, *x.shape)}): {err}. {_call_hint(f, x, err)}"
            ) from err
        except ValueError as err:
            if x.ndim >= 2 and x.shape[0] == 1 and str(err).startswith("f must return shape"):
                raise ValueError(f"{err}. x has shape {tuple(x.shape)}: if its leading 1 is a batch dimension, "
                                 f"pass x[0] (shape {tuple(x.shape[1:])}); xaikit's convention is one input x "
                                 "without the batch dimension") from err
            raise
        check_deterministic(f, x.unsqueeze(0), out)
        _check_not_batched(f, x, out)
        _check_not_a_batch_of_many(f, x, out, method)
    if out.ndim == 1:
        if target not in (None, 0):
            raise ValueError(f"target must be None for f with one output per input (shape (B,)), got {target!r}")
        return None
    n_classes = out.shape[1]
    if target is None:
        return int(out[0].argmax()) if n_classes > 1 else 0
    return check_int(target, "target", 0, n_classes - 1, hint=f"f has {n_classes} classes (0..{n_classes - 1})")


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


_DTYPE_ERROR = re.compile(r"dtype|scalar ?type|Double|Float|Half|BFloat16", re.IGNORECASE)


def _call_hint(f, x: torch.Tensor, err: BaseException) -> str:
    """What to do when ``f`` fails on ``x``: fix the dtype when the error is about dtypes, else the shape."""
    if _DTYPE_ERROR.search(str(err)):
        wanted = model_dtype(f)
        if x.dtype == torch.float64 and wanted != torch.float64:
            return ("x is float64 (NumPy arrays are float64 by default) but f computes in float32: pass x as "
                    "float32, e.g. torch.as_tensor(x, dtype=torch.float32) or x.astype('float32')")
        return (f"x is {_dtype_name(x.dtype)}; pass x in the dtype f's weights have "
                f"({_dtype_name(wanted) if wanted is not None else 'usually float32'})")
    return "Pass x as one input without the batch dimension, shaped as f expects"


def _check_not_batched(f, x: torch.Tensor, out: torch.Tensor) -> None:
    """Raise when ``x`` still carries a batch dimension of one.

    ``x`` of shape ``(1, *s)`` looks batched when ``f`` evaluated on ``x`` itself, read as a batch of one
    input of shape ``s``, gives a well-formed output of a different shape than on ``x[None]``, where the
    extra dimension reaches the output as ``C > 1`` "classes" (``(b ** 2).sum(1)`` on ``[[1., -2.]]``
    returns ``(1, 2)``). Attributions computed that way would silently be those of a wrong output.
    """
    if x.ndim < 2 or x.shape[0] != 1 or out.ndim != 2 or out.shape[1] < 2:
        return
    try:
        as_batch = call(f, x)
    except (RuntimeError, IndexError, ValueError, TypeError):
        return  # f does not take x as a batch: x is one input, as it should be
    if as_batch.shape == out.shape:
        return
    raise ValueError(
        f"x looks like it still has a batch dimension: x has shape {tuple(x.shape)}, and f reads x itself as a "
        f"batch of one input (output {tuple(as_batch.shape)}), while one input x gives output {tuple(out.shape)}, "
        f"which would be read as {out.shape[1]} classes. xaikit's convention: x is ONE input without the batch "
        f"dimension, f maps a batch (B, ...) to (B,) or (B, C). Pass x[0] (shape {tuple(x.shape[1:])}) instead"
    )


def _check_not_a_batch_of_many(f, x: torch.Tensor, out: torch.Tensor, method: str) -> None:
    """Raise when ``x`` is a batch of N > 1 inputs rather than one input.

    ``xaikit.gradient(lambda b: (b ** 2).sum(1), X)`` with ``X`` of shape ``(3, 2)`` read ``X`` as one input:
    ``f`` on ``X[None]`` sums over the 3 rows and returns ``(1, 2)``, whose columns became "classes". ``x`` is
    taken for a batch when all of these hold, so that a real one input is not refused:

    - ``f`` on ``x[None]`` gives ``(1, C)`` with ``C >= 2`` "classes", and ``C`` is one of ``x``'s own sizes
      (``N = x.shape[0]``, as in ``b @ w``, or the size of one row, as in ``b.sum(1)``);
    - ``f`` on ``x`` itself is a well-formed output for a batch of N, ``(N,)`` or ``(N, C')``;
    - ``f`` on ``x[:1]`` is the same output for a batch of one, ``(1,)`` or ``(1, C')``.

    A model with a fixed input shape fails one of the last two (an RGB image ``(3, H, W)`` is not three
    ``(H, W)`` inputs to it), so only a function that reads ``x`` either way is tested further.
    """
    n = x.shape[0] if x.ndim >= 2 else 1
    if n < 2 or out.ndim != 2 or out.shape[1] < 2:
        return
    row = int(torch.Size(x.shape[1:]).numel())
    if out.shape[1] not in (n, row):
        return
    try:
        as_batch = call(f, x)
        first = call(f, x[:1])
    except Exception:  # noqa: BLE001 - any failure means f does not read x as a batch: x is one input
        return
    if as_batch.shape[1:] != first.shape[1:]:
        return
    per_input = "one value" if as_batch.ndim == 1 else f"one row of {as_batch.shape[1]} scores"
    raise ValueError(
        f"x looks like a batch of {n} inputs, not one input: x has shape {tuple(x.shape)}, and f reads it as "
        f"{n} inputs of shape {tuple(x.shape[1:])} (output {tuple(as_batch.shape)}, {per_input} per input), "
        f"while x as one input gives output {tuple(out.shape)}, which would be read as {out.shape[1]} "
        f"classes. xaikit explains ONE input at a time (x without the batch dimension; f maps a batch (B, ...) to "
        f"(B,) or (B, C)). Explain each input in a loop, e.g. [{method}(f, x[i]) for i in range({n})], or pass "
        f"one input such as x[0] (shape {tuple(x.shape[1:])})"
    )


def select(out: torch.Tensor, target: Target) -> torch.Tensor:
    """Pick the target column: ``(B, C) -> (B,)``; ``(B,)`` passes through."""
    return out if target is None else out[:, target]


@contextmanager
def computing(model: ModelFn, heavy: bool = False) -> Iterator[None]:
    """What an entry applies once for the whole call of a method: ``model``'s float16/bfloat16 weights widened
    to float32 (:func:`computing_in_float32`) and the thread policy (:func:`xaikit.policies.method_threads`,
    ``heavy`` for work worth the idle cores). ``model`` may be a plain function (its modules are found by
    :func:`reachable_modules` for the thread policy; its weights are left as they are)."""
    sized = model if isinstance(model, torch.nn.Module) else next((m for _, m in reachable_modules(model)), None)
    with computing_in_float32(model), method_threads(sized, heavy):
        yield


@contextmanager
def entry(f: ModelFn, x: Input, target: Target, method: str) -> Iterator[tuple[torch.Tensor, int | None]]:
    """The entry of every tensor method (notebooks 01 and 02): the block of its work runs in float32 with the
    thread policy (:func:`computing`), ``f`` in eval mode, after ``f``, ``x`` and ``target`` are checked once.

    ``with entry(f, x, target, "gradient") as (x, target):`` gives ``x`` as a checked tensor on ``f``'s device
    and ``target`` resolved (``None``: the predicted class; :func:`resolve_target`). The method's own code in
    the block trusts both, as Captum's ``_attribute`` trusts what ``attribute`` checked.
    """
    with computing(f):
        x, target, _ = setup(f, x, target, method)
        yield x, target


def setup(f: ModelFn, x: Input, target: Target, method: str
          ) -> tuple[torch.Tensor, int | None, torch.device | None]:
    """The checks of :func:`entry`: returns ``(x on f's device, resolved target, device)``."""
    check_callable(f, "f")
    check_thread_setting()  # XAIKIT_THREADS is read (and a bad value refused) by every method
    ensure_eval(f, method)
    x = as_input(x, "x")
    dev = model_device(f)
    if dev is not None:  # a float64 x stays on the CPU where dev holds no float64 (Apple's MPS): the method
        # computes on x's device, and to_model casts each batch to the model's dtype on its way there
        x = x.to(dev if x.dtype != torch.float64 else float64_device(dev))
    return x, resolve_target(f, x, target, method), dev
