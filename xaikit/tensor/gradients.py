"""Gradient explanations and how to make them less fragile (notebook 01).

* :func:`gradient` — the saliency map dF/dx (Simonyan, Vedaldi & Zisserman 2014, "Deep inside
  convolutional networks").
* :func:`grad_times_input` — x * dF/dx (Shrikumar et al. 2016/2017, "Learning important features through
  propagating activation differences"): a first-order Taylor share of F(x) - F(0).
* :func:`occlusion` — F(x) - F(x with a window replaced by a baseline), averaged over the windows that
  cover each element (Zeiler & Fergus 2014, "Visualizing and understanding convolutional networks").
* :func:`smoothgrad` — the gradient averaged over n noisy copies x + N(0, sigma^2), sigma a fraction of
  the input range (Smilkov et al. 2017, "SmoothGrad: removing noise by adding noise"), with the
  SmoothGrad-squared (Hooker et al. 2019) and VarGrad (Adebayo et al. 2018) variants.
  :func:`noisy_gradients` returns the per-sample gradients a figure needs; :func:`smoothgrad` reduces them.

Every function follows :mod:`xaikit._fn`: ``f`` maps a batch ``(B, ...)`` to ``(B,)`` or ``(B, C)``, ``x`` is
one input without the batch dimension, ``target`` picks the class (``None``: the predicted class). Each
returns a tensor shaped like ``x`` (on CPU, detached); :func:`noisy_gradients` returns a
:class:`NoisyGradients` with the samples.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import torch

from xaikit import _aliases, _fn
from xaikit._types import Baseline, Input, ModelFn, Target
from xaikit._validate import bool_flags, check_choice, check_float, check_int, check_same_shape, check_seed
from xaikit.tensor.registry import TensorMethod, register

__all__ = ["gradient", "grad_times_input", "occlusion", "smoothgrad", "noisy_gradients", "NoisyGradients",
           "relative_change", "KINDS"]

#: the SmoothGrad variants: mean of gradients, mean of squared gradients, variance of gradients.
KINDS = ("smoothgrad", "squared", "vargrad")
_DEFAULT_BATCH = 64


# -- the one backward pass and the one batch loop every tensor method uses ---------------------------
def outputs_and_gradients(f: ModelFn, xs: torch.Tensor, target: Target) -> tuple[torch.Tensor, torch.Tensor]:
    """``F_target`` ``(B,)`` and ``dF_target/dx`` ``(B, ...)`` at every row of a batch ``xs`` ``(B, ...)``, in one
    forward and one backward pass, both detached.

    Rows do not interact (the model is in eval mode), so the gradient of the summed outputs with respect
    to the batch is the stack of per-row gradients.
    """
    xs = xs.detach().requires_grad_(True)
    with torch.enable_grad():
        out = _fn.select(_fn.call(f, xs), target)  # (B,)
        if not out.requires_grad:
            raise TypeError("f must be differentiable with torch operations (its output does not depend on x "
                            "through autograd); write f with torch functions, not NumPy")
        (grads,) = torch.autograd.grad(out.sum(), xs, allow_unused=True)
    return out.detach(), torch.zeros_like(xs) if grads is None else grads.detach()


def batch_gradients(f: ModelFn, xs: torch.Tensor, target: Target) -> torch.Tensor:
    """dF_target/dx for every row of a batch ``xs`` (B, ...) in one backward pass; returns (B, ...)."""
    return outputs_and_gradients(f, xs, target)[1]


@bool_flags
def gradient_batches(f: ModelFn, total: int, make_batch: Callable[[int, int], torch.Tensor], target: Target,
                     batch_size: int, progress: bool | None = False, desc: str = "gradients"
                     ) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
    """The batched-gradient loop of every tensor method (SmoothGrad's noisy copies, IG's path points):
    yields ``(start, outputs (b,), gradients (b, ...))`` for the inputs ``make_batch(start, stop)`` of the
    batches ``[0, batch_size), [batch_size, 2 batch_size), ...`` of ``total`` inputs. The caller keeps or
    reduces each batch, so memory stays bounded by the batch if it wants."""
    for start in batch_starts(total, batch_size, progress, desc):
        stop = min(start + batch_size, total)
        yield (start, *outputs_and_gradients(f, make_batch(start, stop), target))


@bool_flags
def batch_starts(total: int, size: int, progress: bool | None, desc: str) -> Iterable[int]:
    """Batch start indices, with a tqdm bar: always (``progress=True``, more than one batch), never
    (``False``), or on runs that last over two seconds (``None``)."""
    starts = range(0, total, size)
    if progress is False or len(starts) < 2:
        return starts
    from tqdm.auto import tqdm

    return tqdm(starts, desc=desc, unit="batch", leave=False, delay=0 if progress else 2.0)


def gradient(f: ModelFn, x: Input, *, target: Target = None) -> torch.Tensor:
    """The gradient dF_target/dx at ``x``: how much the output moves when one input moves a little.

    The plain saliency map of Simonyan et al. (2014). One backward pass; shaped like ``x``.
    Notebook 01, sections 1-4.

    >>> gradient(lambda b: (b ** 2).sum(1), [1.0, -2.0])
    tensor([ 2., -4.])
    """
    with _fn.entry(f, x, target, "gradient") as (x, target):
        return _fn.check_finite_attributions(batch_gradients(f, x.unsqueeze(0), target)[0], x, "gradient").cpu()


def grad_times_input(f: ModelFn, x: Input, *, target: Target = None) -> torch.Tensor:
    """Gradient times input, ``x * dF/dx`` (Shrikumar et al. 2017), shaped like ``x``.

    For a linear model F(x) = w.x + b it is exactly each input's share w_i x_i of F(x) - F(0). Notebook 01.
    """
    with _fn.entry(f, x, target, "grad_times_input") as (x, target):
        return _fn.check_finite_attributions(x * batch_gradients(f, x.unsqueeze(0), target)[0], x,
                                             "grad_times_input").cpu()


# -- occlusion -------------------------------------------------------------------------------------------
@bool_flags
def occlusion(f: ModelFn, x: Input, window: int | tuple[int, ...] = 1,
              stride: int | tuple[int, ...] | None = None, baseline: Baseline = 0.0, *,
              target: Target = None, batch_size: int | None = None, progress: bool = False) -> torch.Tensor:
    """Occlusion: the drop F(x) - F(x with a window set to ``baseline``), spread over the window.

    Slides a window over ``x`` with corners at 0, stride, 2 stride, ... until a window reaches the end (the
    last may be cut by the edge, so every element is covered); each element's attribution is the mean drop
    over the windows that cover it (Zeiler & Fergus 2014; the same rule as Captum's ``Occlusion``).
    Notebook 01, section 2.

    Args:
        f, x, target: the :mod:`xaikit._fn` convention.
        window: the window size. An int ``k`` means ``(k,)`` for a 1-D ``x``, ``(k, k)`` for an image
            ``(H, W)`` and ``(C, k, k)`` for an image ``(C, H, W)`` (all channels occluded together). A tuple
            gives one size per dimension of ``x`` (or per trailing dimension for ``(C, H, W)``).
        stride: the step between windows, same forms as ``window``, at most ``window`` in each dimension
            (a larger step would leave elements uncovered); ``None`` uses ``window`` (non-overlapping windows,
            each element covered once).
        baseline: the value an occluded element takes: a number, a tensor shaped like ``x``, or ``None``
            (zeros), as every tensor method reads it (:func:`xaikit._fn.as_baseline`).
        batch_size: occluded copies evaluated per call of ``f`` (default 64).
        progress: show a tqdm bar over the batches (for large images and models).

    Returns:
        A tensor shaped like ``x``. On a linear model with ``window=1`` it is ``w * (x - baseline)``.
    """
    _check_image_layout(x, window)
    with _fn.entry(f, x, target, "occlusion") as (x, target):
        shape = tuple(x.shape)
        win = _window(window, shape, "window")
        step = win if stride is None else _window(stride, shape, "stride", full_leading=win)
        if any(s > w for s, w in zip(step, win, strict=True)):
            raise ValueError(f"stride {step} is larger than window {win} in some dimension, so the elements between "
                             f"two windows would be occluded by none and get attribution 0; pass a stride <= window "
                             f"(e.g. stride=None: stride = window, each element covered once)")
        base = _fn.as_baseline(baseline, x)
        batch_size = check_int(_DEFAULT_BATCH if batch_size is None else batch_size, "batch_size", 1)

        # window corners 0, s, 2s, ... until a window reaches the end; the last one may be cut by the edge
        starts = [range(0, s * (math.ceil((n - w) / s) + 1), s) for n, w, s in zip(shape, win, step, strict=True)]
        windows = [tuple(slice(a, a + w) for a, w in zip(corner, win, strict=True)) for corner in itertools.product(*starts)]
        with torch.no_grad():
            f_x = _fn.select(_fn.call(f, x.unsqueeze(0)), target)[0]
            total = torch.zeros_like(x)
            count = torch.zeros_like(x)
            for i in batch_starts(len(windows), batch_size, progress, "occlusion"):
                chunk = windows[i:i + batch_size]
                mask = torch.zeros((len(chunk), *shape), dtype=torch.bool, device=x.device)  # (b, *x.shape)
                for k, sl in enumerate(chunk):
                    mask[(k, *sl)] = True
                occluded = torch.where(mask, base, x)  # (b, *x.shape)
                drop = f_x - _fn.select(_fn.call(f, occluded), target)  # (b,)
                m = mask.to(x.dtype)
                total += (m * drop.view(-1, *([1] * len(shape)))).sum(0)
                count += m.sum(0)
        result = torch.where(count > 0, total / count.clamp(min=1), torch.zeros_like(total))
        return _fn.check_finite_attributions(result, x, "occlusion").cpu()


_CHANNELS = (1, 3, 4)  # grey, RGB, RGBA


def _check_image_layout(x, window) -> None:
    """Refuse a channels-last image ``(H, W, C)`` where occlusion reads a 3-D ``x`` as ``(C, H, W)``.

    A NumPy or PIL image is ``(H, W, 3)``: read as ``(C, H, W)`` its rows become "channels", and an int
    ``window`` occludes a strip of rows across every column instead of a square patch, with no error when
    ``f`` accepts any shape. A window given per dimension (a 3-tuple) says the caller chose the layout."""
    shape = tuple(getattr(x, "shape", ()))
    if len(shape) != 3 or shape[-1] not in _CHANNELS or shape[0] in _CHANNELS:
        return
    if isinstance(window, (tuple, list)) and len(window) == 3:
        return
    dtype = str(getattr(x, "dtype", ""))
    integer = "uint8" in dtype or "int" in dtype
    scale = " / 255" if integer else ""
    raise ValueError(
        f"x looks like a channels-last image (H, W, C) = {shape}{' of ' + dtype.replace('torch.', '') if integer else ''}, "
        f"but occlusion reads a 3-D x as (C, H, W) (channels first, as torch models take images), so its "
        f"{shape[0]} rows would be taken for channels. Pass the image channels first, as floats if the model "
        f"takes floats: torch.as_tensor(x).permute(2, 0, 1).float(){scale} (NumPy: x.transpose(2, 0, 1)); "
        f"or give window one size per dimension, e.g. window=(k, k, {shape[-1]}), if f really takes (H, W, C)")


def _window(value, shape: tuple[int, ...], name: str,
            full_leading: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """Normalise an occlusion window or stride to one int per dimension of ``x`` and check it fits."""
    d = len(shape)
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int or a tuple of ints, got {value!r}")
    if isinstance(value, numbers.Integral):  # an int, or a NumPy / torch integer scalar
        value = int(value)
        if d <= 2:
            sizes = (value,) * d
        elif d == 3:  # (C, H, W): every channel at once
            sizes = (shape[0] if full_leading is None else 1, value, value)
        else:
            raise ValueError(f"{name} must be a tuple with one size per dimension for an x of shape {shape}")
    elif isinstance(value, (tuple, list)):
        sizes = tuple(int(s) if isinstance(s, numbers.Integral) and not isinstance(s, bool) else s for s in value)
        if d == 3 and len(sizes) == 2:
            sizes = (shape[0] if full_leading is None else 1, *sizes)
        if len(sizes) != d:
            raise ValueError(f"{name} must have one size per dimension of x (shape {shape}), got {tuple(value)}")
    else:
        raise TypeError(f"{name} must be an int or a tuple of ints, got {type(value).__name__}")
    for n, s in zip(shape, sizes, strict=True):
        check_int(s, name, 1, n, hint=f"x has shape {shape}")
    return tuple(int(s) for s in sizes)


# -- SmoothGrad ----------------------------------------------------------------------------------------------
@dataclass
class NoisyGradients:
    """Gradients at ``n`` noisy copies of ``x``: what SmoothGrad and its variants average.

    Attributes:
        x: the input (CPU).
        grads: ``(n, *x.shape)``, the gradient at each noisy copy.
        noise_std: the absolute noise standard deviation, ``sigma * value range``.
        sigma: the noise level as a fraction of the value range.
        target: the class explained (``None`` for a scalar ``f``).
        gradient: the plain gradient at ``x`` itself, for comparison.
        example: the first noisy copy ``x + noise``, to show what the model sees.
    """

    x: torch.Tensor
    grads: torch.Tensor
    noise_std: float
    sigma: float
    target: int | None
    gradient: torch.Tensor
    example: torch.Tensor

    @property
    def n(self) -> int:
        return self.grads.shape[0]

    def reduce(self, kind: str = "smoothgrad") -> torch.Tensor:
        """``"smoothgrad"``: mean of the gradients; ``"squared"``: mean of their squares; ``"vargrad"``:
        their (population) variance, i.e. mean of squares minus squared mean. Captum's ``"smoothgrad_sq"``
        is read as ``"squared"``."""
        kind = check_choice(_aliases.smoothgrad_kind(kind), "kind", KINDS)
        if kind == "vargrad":
            _check_vargrad_n(self.n)
        if kind == "smoothgrad":
            return self.grads.mean(0)
        if kind == "squared":
            return (self.grads ** 2).mean(0)
        return self.grads.var(0, correction=0)


@bool_flags
@_aliases.captum_keywords({k: a for k, a in _aliases.NOISE_TUNNEL.items() if a.name != "kind"},
                         refused={"stdevs": _aliases.STDEVS})
def noisy_gradients(f: ModelFn, x: Input, sigma: float = 0.15, n: int = 50, *, target: Target = None,
                    seed: int | None = None, batch_size: int | None = None,
                    value_range: float | tuple[float, float] | None = None,
                    progress: bool = False) -> NoisyGradients:
    """The gradient at ``n`` copies ``x + N(0, (sigma * range)^2)``, batched; see :func:`smoothgrad`."""
    with _fn.entry(f, x, target, "smoothgrad") as (x, target):
        sigma = check_float(sigma, "sigma", 0.0, hint="sigma is the noise level as a fraction of the input range, "
                            "e.g. 0.15")
        if sigma > 1.0:  # 15 meant as 15%: noise fifteen times the input's range buries the gradient
            raise ValueError(f"sigma must be a fraction of the input range, at most 1: 0.15 for 15%; got {sigma:g}. "
                             f"SmoothGrad's noise is sigma * (max - min), and the paper finds 0.1-0.2 works best")
        n = check_int(n, "n", 1, hint="n is the number of noisy samples, e.g. 50")
        batch_size = check_int(n if batch_size is None else batch_size, "batch_size", 1)
        if seed is not None:
            seed = check_seed(seed)
        spread = _value_range(x, value_range)
        if value_range is None and spread == 0.0 and sigma > 0.0:  # exact: max - min of a constant input
            raise ValueError(f"x is constant (every value {float(x.flatten()[0]):.4g}), so its range max - min is 0 and "
                             f"noise of sigma={sigma:g} times it would be no noise: SmoothGrad would return the plain "
                             f"gradient. Pass value_range, the range the input can take, e.g. value_range=(0, 1) for "
                             f"images in [0, 1]")
        noise_std = sigma * spread

        generator = torch.Generator()  # on CPU, so a seed gives the same noise on every device
        generator.manual_seed(seed if seed is not None else int(torch.randint(0, 2**62, (1,))))
        # all the noise in one draw, so the result does not depend on batch_size
        noise = torch.randn((n, *x.shape), generator=generator, dtype=x.dtype) * noise_std  # (n, *x.shape)
        grads = [g.cpu() for _, _, g in gradient_batches(
            f, n, lambda i, j: x.unsqueeze(0) + noise[i:j].to(x.device), target, batch_size, progress, "smoothgrad")]
        plain = batch_gradients(f, x.unsqueeze(0), target)[0].cpu()
        _fn.check_finite_attributions(plain, x, "smoothgrad")
        for g in grads:
            _fn.check_finite_attributions(g, x, "smoothgrad")
        return NoisyGradients(x=x.cpu(), grads=torch.cat(grads), noise_std=noise_std, sigma=sigma, target=target,
                              gradient=plain, example=x.cpu() + noise[0])


@bool_flags
@_aliases.captum_keywords(_aliases.NOISE_TUNNEL, refused={"stdevs": _aliases.STDEVS})
def smoothgrad(f: ModelFn, x: Input, sigma: float = 0.15, n: int = 50, kind: str = "smoothgrad", *,
               target: Target = None, seed: int | None = None, batch_size: int | None = None,
               value_range: float | tuple[float, float] | None = None,
               progress: bool = False) -> torch.Tensor:
    """SmoothGrad (Smilkov et al. 2017): average the gradient over ``n`` noisy copies of ``x``.

    The noise is Gaussian with standard deviation ``sigma * (max - min)``: ``sigma`` is a fraction of the
    input's value range, the paper's convention (they found 10-20% works best). The target class is the
    one predicted on the clean ``x``. Notebook 01, section 4.

    Args:
        f, x, target: the :mod:`xaikit._fn` convention.
        sigma: noise level as a fraction of the value range, >= 0 (0 gives the plain gradient).
        n: number of noisy samples, >= 1 (>= 2 for ``"vargrad"``, a variance).
        kind: ``"smoothgrad"`` (mean gradient), ``"squared"`` (mean squared gradient, SmoothGrad-squared of
            Hooker et al. 2019; Captum's ``"smoothgrad_sq"`` is accepted for it) or ``"vargrad"`` (variance of
            the gradients, Adebayo et al. 2018).
        seed: seeds the noise (a private generator: the global torch RNG is untouched); ``None``: fresh noise.
        batch_size: noisy copies per backward pass (default: all ``n`` at once).
        value_range: the range the noise is a fraction of: a number ``hi - lo`` or a pair ``(lo, hi)``;
            ``None`` uses ``x.max() - x.min()``. Pass it when ``x`` is (nearly) constant.
        progress: show a tqdm bar over the batches (for large models and many samples).

    Returns:
        A tensor shaped like ``x``. Use :func:`noisy_gradients` to get the samples themselves.
    """
    kind = check_choice(_aliases.smoothgrad_kind(kind), "kind", KINDS)
    if kind == "vargrad":
        _check_vargrad_n(n)
    return noisy_gradients(f, x, sigma=sigma, n=n, target=target, seed=seed, batch_size=batch_size,
                           value_range=value_range, progress=progress).reduce(kind)


def _check_vargrad_n(n) -> None:
    """VarGrad is a variance over the samples: with one sample it is 0 everywhere, whatever the model."""
    if not isinstance(n, bool) and isinstance(n, int) and n < 2:
        raise ValueError(f"n must be an int >= 2 for kind='vargrad', got {n}: the variance of {n} gradient is 0 "
                         f"everywhere, whatever the model; pass n=50 (or more) noisy samples")


def _value_range(x: torch.Tensor, value_range) -> float:
    """The spread the noise is a fraction of. A given range that x lies far outside (a 0..255 image with
    ``value_range=(0, 1)``) is refused: the noise would be a fraction of the wrong scale, too small to smooth."""
    lo_x, hi_x = float(x.min()), float(x.max())
    if value_range is None:
        return hi_x - lo_x
    if isinstance(value_range, (tuple, list)):
        if len(value_range) != 2:
            raise ValueError(f"value_range must be a number or a pair (lo, hi), got {value_range!r}")
        lo = check_float(value_range[0], "value_range[0]")
        hi = check_float(value_range[1], "value_range[1]", lo)
        if lo_x < lo - (hi - lo) or hi_x > hi + (hi - lo):  # farther outside than the range is wide
            raise ValueError(f"x has values in [{lo_x:.4g}, {hi_x:.4g}], far outside value_range=({lo:g}, {hi:g}), "
                             f"so the noise (a fraction of {hi - lo:g}) would be on the wrong scale for x; pass "
                             f"the range x's values can take (e.g. value_range=(0, 255) for a 0..255 image), or "
                             f"rescale x")
        return hi - lo
    # a number is a spread, not a place (Captum's absolute stdevs is value_range=1): nothing to compare x with
    return check_float(value_range, "value_range", 0.0)


def relative_change(a: Input, b: Input) -> float:
    """``||a - b|| / ||a||``: how much an attribution map moved (0: not at all, 1: as much as its size).

    ``inf`` when ``a`` is all zeros and ``b`` is not (0 when both are). Notebook 01 uses it to measure that a tiny input change moves the raw gradient a lot and SmoothGrad little.
    """
    a = _fn.as_input(a, "a")
    b = _fn.as_input(b, "b").to(a.dtype)
    check_same_shape(a, b, "a", "b")
    norm_a, diff = a.norm(), (a - b).norm()
    if norm_a == 0:  # relative to a zero map: no change is 0, any change is infinitely large
        return 0.0 if diff == 0 else math.inf
    return float(diff / norm_a)


register(TensorMethod("gradient", gradient, (), "Simonyan et al. 2014", order=0))
register(TensorMethod("gradient x input", grad_times_input, (), "Shrikumar et al. 2017", order=1))
register(TensorMethod("SmoothGrad", smoothgrad, {"n": 20, "sigma": 0.15, "seed": 0}, "Smilkov et al. 2017",
                      fixed={"value_range": (0.0, 1.0)}, order=2))  # noise as a fraction of the pixel range [0, 1]
