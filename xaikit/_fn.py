"""The calling convention every attribution method shares, and where tensors live.

``f`` maps a batch ``(B, ...)`` to ``(B,)`` scalars or ``(B, C)`` class scores; ``x`` is one input with no
batch dimension; ``target`` picks the class (``None``: the predicted class, or the only output). These
helpers turn that convention into tensors, validate it once, and put inputs on the model's device.

**Devices and dtypes.** A model may sit on a GPU (``xaikit.device()``) and may hold float64, float16 or
bfloat16 weights. Everything xaikit builds for a model (token ids, masks, path points, noisy copies) is
moved to the model's device, and floating inputs to its dtype, just before the model sees them
(:func:`call`, :func:`to_model`). Every tensor xaikit *returns* is on the CPU (:func:`to_cpu`), so
plotting and NumPy code work the same on every machine; results keep the precision they were computed in,
except float16/bfloat16, which come back as float32 (NumPy has no bfloat16). Pure tensor functions
(``xaikit.attention``, ``gradsam_scores``) compute where their inputs are, as torch functions do.
"""

from __future__ import annotations

import warnings

import torch

from xaikit._validate import check_callable, check_finite, check_int


def as_input(x, name: str = "x") -> torch.Tensor:
    """A floating tensor (float32 unless it already is float64), detached, NaN-free."""
    if isinstance(x, torch.Tensor):
        t = x.detach()
    else:
        try:
            t = torch.as_tensor(x)
        except (TypeError, ValueError, RuntimeError) as err:
            raise TypeError(f"{name} must be a tensor or array of numbers, got {type(x).__name__}") from err
    if t.ndim == 0:
        raise ValueError(f"{name} must have at least one dimension (one input, no batch), got a scalar; "
                         f"wrap it as [{float(t)}]")
    if t.numel() == 0:
        raise ValueError(f"{name} is empty (shape {tuple(t.shape)})")
    if t.dtype != torch.float64:
        t = t.to(torch.float32)
    check_finite(t, name)
    return t


def model_device(f) -> torch.device | None:
    """The device of ``f``'s parameters if it is a module with any, else ``None``."""
    if isinstance(f, torch.nn.Module):
        for p in f.parameters():
            return p.device
    return None


def model_dtype(f) -> torch.dtype | None:
    """The dtype of ``f``'s first floating-point parameter if it is a module with one, else ``None``."""
    if isinstance(f, torch.nn.Module):
        for p in f.parameters():
            if p.is_floating_point():
                return p.dtype
    return None


def to_model(f, t: torch.Tensor) -> torch.Tensor:
    """``t`` on ``f``'s device, and in ``f``'s dtype if ``t`` is floating point (unchanged for a plain function).

    The cast is differentiable, so a gradient taken with respect to ``t`` comes back in ``t``'s own dtype.
    """
    dev, dtype = model_device(f), model_dtype(f)
    if dev is None:
        return t
    if dtype is not None and t.is_floating_point():
        return t.to(device=dev, dtype=dtype)
    return t.to(dev)


def inputs_to_model(model, inputs) -> dict:
    """A tokenizer's or image processor's output (a dict of tensors) ready for ``model(**inputs)``: every
    tensor on the model's device, floating ones (pixel values) in its dtype; token ids stay integers."""
    return {k: (to_model(model, v) if isinstance(v, torch.Tensor) else v) for k, v in dict(inputs).items()}


#: dtypes NumPy cannot hold (or holds poorly): results in these come back as float32.
_LOW_PRECISION = (torch.float16, torch.bfloat16)


def to_cpu(t, dtype: torch.dtype | None = None):
    """A result as xaikit returns it: detached, on the CPU, float16/bfloat16 widened to float32.

    ``dtype`` casts a floating result to that dtype instead (e.g. the dtype of the user's input). Anything
    that is not a tensor is returned unchanged, so dataclass fields can be passed through blindly.
    """
    if not isinstance(t, torch.Tensor):
        return t
    t = t.detach()
    if t.is_floating_point():
        if dtype is not None:
            t = t.to(dtype)
        elif t.dtype in _LOW_PRECISION:
            t = t.float()
    return t.cpu()


def ensure_eval(f, method: str = "this method") -> None:
    """Switch a torch module in training mode to eval mode, and say so (dropout makes attributions random)."""
    if isinstance(f, torch.nn.Module) and f.training:
        warnings.warn(
            f"{method}: the model was in training mode (dropout makes attributions random); "
            "xaikit switched it to eval mode with model.eval().",
            UserWarning,
            stacklevel=3,
        )
        f.eval()


def call(f, batch: torch.Tensor) -> torch.Tensor:
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


def resolve_target(f, x: torch.Tensor, target) -> int | None:
    """Validate ``target`` against ``f``'s output on ``x``; ``None`` becomes the predicted class.

    Returns ``None`` for a scalar-output ``f`` (shape ``(B,)``).
    """
    with torch.no_grad():
        try:
            out = call(f, x.unsqueeze(0))
        except (RuntimeError, IndexError) as err:  # a shape mismatch deep inside f: name x and its shape
            raise ValueError(
                f"f could not be evaluated on x of shape {tuple(x.shape)} (as a batch of one, "
                f"{(1, *x.shape)}): {err}. Pass x as one input without the batch dimension, "
                "shaped as f expects"
            ) from err
    if out.ndim == 1:
        if target not in (None, 0):
            raise ValueError(f"target must be None for f with one output per input (shape (B,)), got {target!r}")
        return None
    n_classes = out.shape[1]
    if target is None:
        return int(out[0].argmax()) if n_classes > 1 else 0
    return check_int(target, "target", 0, n_classes - 1, hint=f"f has {n_classes} classes (0..{n_classes - 1})")


def select(out: torch.Tensor, target: int | None) -> torch.Tensor:
    """Pick the target column: ``(B, C) -> (B,)``; ``(B,)`` passes through."""
    return out if target is None else out[:, target]


def setup(f, x, target, method: str):
    """Common entry of every method: returns ``(x on f's device, resolved target, device)``."""
    check_callable(f, "f")
    ensure_eval(f, method)
    x = as_input(x, "x")
    dev = model_device(f)
    if dev is not None:
        x = x.to(dev)
    return x, resolve_target(f, x, target), dev
