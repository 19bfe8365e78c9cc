"""Baselines for Integrated Gradients on images, after Sturmfels, Lundberg & Lee (2020), "Visualizing the
Impact of Feature Attribution Baselines", Distill.

IG explains ``F(x) - F(x')``: the baseline ``x'`` is part of the question. A pixel equal to its baseline
value gets no attribution whatever its role ("baseline blindness": a black baseline cannot see black
pixels). The baselines here:

* ``"zero"``: all zeros (black);
* ``"constant"``: one grey level / colour ``param`` everywhere;
* ``"uniform"``: uniform noise in ``[low, high]``;
* ``"gaussian"``: the input plus Gaussian noise of standard deviation ``param``, clipped to the range;
* ``"blurred"``: the input blurred by a Gaussian filter of width ``param`` pixels;
* ``"max_distance"``: per pixel the value in ``[low, high]`` farthest from the input;
* ``"expected"``: expected gradients (Erion et al. 2021): IG averaged over ``k`` baselines drawn from a
  dataset, which explains ``F(x) - E[F(x')]``.

Noisy baselines may be averaged over ``samples`` draws (the article's "integrate over a distribution").
Notebook 02, section 7.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from xaikit import _aliases
from xaikit._fn import as_input, entry, to_cpu
from xaikit._types import Input, ModelFn, Target
from xaikit._validate import check_choice, check_float, check_int, check_seed
from xaikit.tensor.integrated import RULES, alphas_and_weights, integrate_path, warn_gap

__all__ = ["BASELINES", "BaselineResult", "image_baseline", "baseline_attributions"]

BASELINES = ("zero", "constant", "uniform", "gaussian", "blurred", "max_distance", "expected")
#: the parameter each baseline takes, its default and a slider range (for the panel).
PARAMETERS = {
    "constant": ("level", 0.5, 0.0, 1.0),
    "gaussian": ("sigma", 0.2, 0.01, 1.0),
    "blurred": ("sigma", 1.0, 0.1, 4.0),
    "uniform": ("samples", 1, 1, 16),
    "expected": ("k", 8, 1, 64),
}


def image_baseline(x: Input, kind: str = "zero", param: float | None = None, low: float = 0.0,
                   high: float = 1.0,
                   seed: int = 0) -> torch.Tensor:
    """One baseline image for ``x`` (shape ``(H, W)`` or ``(C, H, W)``, values in ``[low, high]``), on
    ``x``'s device and in its dtype. ``x`` must lie in ``[low, high]`` for the kinds built from that range
    (``"constant"``, ``"uniform"``, ``"gaussian"``, ``"max_distance"``): pass ``high=255`` for a 0..255 image.

    ``"expected"`` needs a dataset; use :func:`baseline_attributions` for it. The noise is drawn on the CPU
    (a seed gives the same baseline on every device) and then moved next to ``x``.
    """
    kind = check_choice(kind, "kind", BASELINES)
    x = as_input(x, "x")
    if x.ndim < 2:
        raise ValueError(f"x must be an image of shape (H, W) or (C, H, W), got shape {tuple(x.shape)}")
    low = check_float(low, "low")
    high = check_float(high, "high", low, strict_min=True, hint="the pixel range must have low < high")
    gen = torch.Generator().manual_seed(check_seed(seed))
    if kind in _USES_RANGE:
        _check_in_range(x, kind, low, high)
    if kind == "zero":
        return torch.zeros_like(x)
    if kind == "constant":
        level = check_float(0.5 if param is None else param, "param", low, high,
                            hint=f"a constant baseline is a grey level in [{low}, {high}]")
        return torch.full_like(x, level)
    if kind == "uniform":
        return (low + (high - low) * torch.rand(x.shape, generator=gen, dtype=x.dtype)).to(x.device)
    if kind == "gaussian":
        sigma = check_float(0.2 if param is None else param, "param", 0.0, strict_min=True,
                            hint="sigma, the noise standard deviation in pixel units")
        noise = (torch.randn(x.shape, generator=gen, dtype=x.dtype) * sigma * (high - low)).to(x.device)
        return (x + noise).clamp(low, high)
    if kind == "blurred":
        from scipy.ndimage import gaussian_filter

        sigma = check_float(1.0 if param is None else param, "param", 0.0, strict_min=True,
                            hint="sigma, the blur width in pixels")
        widths = (0.0,) * (x.ndim - 2) + (sigma, sigma)
        return torch.as_tensor(gaussian_filter(x.cpu().numpy(), sigma=widths, mode="nearest"), dtype=x.dtype,
                               device=x.device)
    if kind == "max_distance":
        return torch.where(x > (low + high) / 2, torch.full_like(x, low), torch.full_like(x, high))
    raise ValueError("kind='expected' averages over a dataset; call baseline_attributions(f, x, 'expected', "
                     "data=...) instead")


#: the baselines built from the pixel range [low, high]: wrong for an x outside it (a 0..255 image)
_USES_RANGE = ("constant", "uniform", "gaussian", "max_distance")


def _check_in_range(x: torch.Tensor, kind: str, low: float, high: float) -> None:
    """x must lie in [low, high]: a 0..255 image against the default [0, 1] gets a black max-distance baseline
    and a Gaussian one clamped to near black."""
    lo, hi = float(x.min()), float(x.max())
    slack = 1e-6 * (high - low)
    if lo < low - slack or hi > high + slack:
        guess = " (a 0..255 image: pass low=0, high=255, or divide x by 255)" if hi > 1.5 and lo >= 0 else ""
        raise ValueError(f"x has values in [{lo:.4g}, {hi:.4g}], outside the pixel range low={low:g}, high={high:g} "
                         f"that the {kind!r} baseline is built from{guess}; pass low= and high=, the range x's "
                         f"pixels can take")


@dataclass
class BaselineResult:
    """IG averaged over one or more baselines: ``sum(attributions) ~ F(x) - mean_k F(x'_k)`` (CPU tensors)."""

    attributions: torch.Tensor
    baselines: torch.Tensor
    gap: float
    f_x: float
    f_baselines: np.ndarray
    kind: str
    param: object

    @property
    def relative_gap(self) -> float:
        d = abs(self.f_x - float(self.f_baselines.mean()))
        return abs(self.gap) / d if d > 0 else float("inf") if self.gap else 0.0


@_aliases.captum_keywords(_aliases.IG_STEPS)
def baseline_attributions(f: ModelFn, x: Input, kind: str = "zero", param: float | None = None,
                          data: Input | None = None, steps: int = 32,
                          rule: str = "gausslegendre", *, target: Target = None, low: float = 0.0,
                          high: float = 1.0, seed: int = 0, batch_size: int | None = None) -> BaselineResult:
    """IG of ``f`` at image ``x`` with the baseline ``kind`` (averaged over draws for noisy kinds).

    ``param`` is the baseline's parameter (see :data:`PARAMETERS`): the grey level, sigma, the number of
    uniform samples, or ``k`` dataset samples for ``"expected"`` (then ``data`` is a tensor of images
    ``(N, *x.shape)``, e.g. training images).

    Sturmfels, Lundberg & Lee (2020); notebook 02, section 7.
    """
    kind = check_choice(kind, "kind", BASELINES)
    rule = check_choice(rule, "rule", RULES)
    seed = check_seed(seed)
    with entry(f, x, target, "baseline_attributions") as (x, target):
        if kind == "expected":
            if data is None:
                raise ValueError("kind='expected' needs data=, a tensor of images (N, *x.shape) to draw baselines from")
            pool = as_input(data, "data")
            if tuple(pool.shape[1:]) != tuple(x.shape):
                raise ValueError(f"data must have shape (N, {', '.join(map(str, x.shape))}) like x, got {tuple(pool.shape)}")
            k = check_int(8 if param is None else param, "param", 1, hint="k, the number of dataset samples")
            if k > pool.shape[0]:
                raise ValueError(f"param (k, the number of dataset samples) is {k} but data holds {pool.shape[0]} "
                                 f"images; pass param <= {pool.shape[0]}, or more images in data")
            pick = torch.randperm(pool.shape[0], generator=torch.Generator().manual_seed(int(seed)))[:k]
            baselines = pool[pick].to(x)
        elif kind == "uniform":
            n = check_int(1 if param is None else param, "param", 1, hint="the number of uniform noise samples")
            baselines = torch.stack([image_baseline(x, kind, None, low, high, seed + i) for i in range(n)])
        else:
            baselines = image_baseline(x, kind, param, low, high, seed)[None]
        alphas, weights = alphas_and_weights(rule, steps)
        attributions, gaps, f_bs = torch.zeros(x.shape, dtype=x.dtype), [], []  # on the CPU, like each result
        for base in baselines:
            result = integrate_path(f, x, base, alphas, weights, target, batch_size, rule)
            attributions += result.attributions / len(baselines)
            gaps.append(result.gap)
            f_bs.append(result.f_baseline)
            f_x = result.f_x
        # the averaged attributions' completeness, as every other IG entry point checks it
        warn_gap("baseline_attributions", float(np.mean(gaps)), f_x, float(np.mean(f_bs)), steps, rule)
        return BaselineResult(attributions, to_cpu(baselines), float(np.mean(gaps)), f_x, np.asarray(f_bs), kind,
                              param)
