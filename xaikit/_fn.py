"""The calling convention every attribution method shares.

``f`` maps a batch ``(B, ...)`` to ``(B,)`` scalars or ``(B, C)`` class scores; ``x`` is one input with no
batch dimension; ``target`` picks the class (``None``: the predicted class, or the only output). These
helpers turn that convention into tensors, validate it once, and put inputs on the model's device.
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
    """``f(batch)`` as a tensor of shape ``(B,)`` or ``(B, C)``, with a clear error for anything else."""
    out = f(batch)
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
