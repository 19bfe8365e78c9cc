"""Panels of notebook 01, "Gradients as explanations, and how they fail".

* :class:`GradientPanel` (§1): contour of a smooth 2-input model, the gradient arrow at (x1, x2), bars of
  gradient and gradient x input.
* :class:`GradientSaturationPanel` (§2): min(1, x1 + x2) along x1 + x2 with the point; gradient, gradient x
  input, occlusion and an Integrated Gradients preview side by side (Shrikumar et al. 2017).
* :class:`ThresholdPanel` (§3): max(0, x - 10) against its softplus(beta) replacement and their gradients.
* :class:`SmoothGradPanel` (§4): raw gradient against SmoothGrad / SmoothGrad-squared / VarGrad on a digits
  CNN (Smilkov et al. 2017).
* :class:`OcclusionPanel` (§4): occlusion of a digit (Zeiler & Fergus 2014), a patch-size slider, beside its
  gradient and gradient x input.

Each ``compute`` returns a small dataclass; tests and the notebook read ``panel.result``.

Speed: these panels lay their axes out once (``draw``) and each change only updates the artists' data
(``update_artists``, the fast-redraw hook of :class:`~xaikit.widgets.base.Panel`), with no layout engine;
the toy models run on one torch thread, since thread hand-offs cost more than they give for models this
small. ``benchmarks/panel_latency.py`` times them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

from xaikit import _fn
from xaikit.plotting import DIVERGING, OKABE_ITO, SEQUENTIAL, symmetric_limit
from xaikit.tensor import gradients as G
from xaikit.tensor import toys
from xaikit.tensor.integrated import integrated_gradients
from xaikit.widgets.base import dropdown, int_slider, log_slider, slider, toggle
from xaikit.widgets.toy import ToyPanel

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["GradientPanel", "GradientSaturationPanel", "ThresholdPanel", "SmoothGradPanel"]


@dataclass
class PointAttributions:
    """Attributions of a 2-input function at one point, by method name."""

    x: torch.Tensor
    value: float
    attributions: dict[str, torch.Tensor] = field(default_factory=dict)
    baseline_value: float | None = None


class _Bars:
    """Grouped bars (one colour per method, one group per input) whose heights and labels are updated.

    The y range is fixed (``ylim``) so the axis stays static between updates; bars beyond it are clipped.
    """

    def __init__(self, ax: Axes, inputs: list[str], methods: list[str], ylim: tuple[float, float]):
        self.ax = ax
        width = 0.8 / len(methods)
        pos = np.arange(len(inputs))
        self.bars = []
        for i, name in enumerate(methods):
            bars = ax.bar(pos + (i - (len(methods) - 1) / 2) * width, np.zeros(len(inputs)), width, label=name,
                          color=OKABE_ITO[i])
            self.bars.append(bars)
        self.labels = [[ax.text(b.get_x() + b.get_width() / 2, 0, "", ha="center", fontsize=7) for b in bars]
                       for bars in self.bars]
        ax.set_xticks(pos, inputs)
        ax.axhline(0, color="0.3", lw=0.8)
        ax.legend(fontsize=7, loc="lower left")
        ax.set_ylim(*ylim)
        self.span = ylim[1] - ylim[0]

    @property
    def artists(self) -> list:
        return [b for bars in self.bars for b in bars] + [t for labels in self.labels for t in labels]

    def set(self, values: list[np.ndarray], adapt: bool = False) -> bool:
        """Update the bars. With ``adapt``, rescale the symmetric y range when the values leave it or use less
        than a quarter of it; returns True when the range changed (the caller redraws the background)."""
        changed = False
        if adapt:
            m = max(max(float(np.abs(v).max()) for v in values), 1e-3)
            top = self.ax.get_ylim()[1]
            if m > top or m < top / 4:
                self.ax.set_ylim(-1.3 * m, 1.3 * m)
                self.span = 2.6 * m
                changed = True
        for bars, labels, v in zip(self.bars, self.labels, values, strict=True):
            for bar, label, h in zip(bars, labels, v, strict=True):
                bar.set_height(h)
                label.set_text(f"{h:.2f}")
                label.set_y(h + (0.015 * self.span if h >= 0 else -0.05 * self.span))
        return changed


# -- §1 -----------------------------------------------------------------------------------------------------
def _name_of(f) -> str:
    """A function's name for a title: its ``__name__`` unless a lambda, a module's class name, else ``f``."""
    name = getattr(f, "__name__", None) or (type(f).__name__ if isinstance(f, torch.nn.Module) else None)
    return "f" if not name or name == "<lambda>" else name


def _check_trained(trained, panel: str):
    """``trained``: None (the cached digits CNN) or what :func:`~xaikit.tensor.toys.digits_classifier` returns
    (it has ``.model`` and ``.data``); a name such as ``"digits"`` is refused, naming the fix."""
    if trained is not None and not (hasattr(trained, "model") and hasattr(trained, "data")):
        raise TypeError(f"{panel}: trained must be None (the digits CNN) or what digits_classifier() returns "
                        f"(with .model and .data), got {type(trained).__name__} {trained!r:.60}; e.g. "
                        f"{panel}(trained=xaikit.tensor.toys.digits_classifier()) or {panel}()")
    return trained


class GradientPanel(ToyPanel):
    """§1: gradient and gradient x input of a smooth model of two inputs at the point (x1, x2)."""

    title = "Gradient and gradient x input"
    figsize = (8.4, 3.4)
    methods = ("gradient", "gradient x input")

    def __init__(self, f: toys.Toy = toys.smooth_model, x1: float = 1.0, x2: float = -0.5, lim: float = 3.0):
        from xaikit._validate import check_callable, check_float

        self.f = check_callable(f, "f")
        # a toy names its formula; any other f of two inputs (a lambda, a module) is titled by its name
        self._formula = getattr(f, "formula", None) or f"{_name_of(f)}(x1, x2)"
        lim = self.lim = check_float(lim, "lim", 0.0, strict_min=True,
                                     hint="the half-width of the square the panel draws, e.g. lim=3.0")
        grid = np.linspace(-lim, lim, 81)
        self._g1, self._g2 = np.meshgrid(grid, grid)
        pts = torch.tensor(np.stack([self._g1.ravel(), self._g2.ravel()], 1), dtype=torch.float32)
        with torch.no_grad():
            self._gz = _fn.to_cpu(_fn.call(f, pts)).numpy().reshape(self._g1.shape)  # computed once
        super().__init__({"x1": slider("x1", x1, -lim, lim, 0.1), "x2": slider("x2", x2, -lim, lim, 0.1)})

    def compute(self, x1: float, x2: float) -> PointAttributions:
        x = torch.tensor([x1, x2], dtype=torch.float32)
        with torch.no_grad():
            value = float(_fn.call(self.f, x[None])[0])
        return PointAttributions(x, value, {"gradient": G.gradient(self.f, x),
                                            "gradient x input": G.grad_times_input(self.f, x)})

    def draw(self, fig: Figure, r: PointAttributions) -> None:
        ax, bx = fig.subplots(1, 2, width_ratios=[1.2, 1], gridspec_kw=dict(left=0.07, right=0.98, bottom=0.14,
                                                                            top=0.86, wspace=0.4))
        cs = ax.contourf(self._g1, self._g2, self._gz, levels=15, cmap=SEQUENTIAL)
        fig.colorbar(cs, ax=ax, fraction=0.046, pad=0.04, label="f(x)")
        (self._point,) = ax.plot([0], [0], "o", color="white", mec="black", zorder=3)
        self._arrow = ax.quiver([0], [0], [1], [0], color="white", edgecolor="black", linewidth=0.5, angles="xy",
                                scale_units="xy", scale=1.0, width=0.012, zorder=3)
        ax.set(xlabel="x1", ylabel="x2")
        ax.set_title("f\nf(x)", fontsize=9)
        self._ax = ax
        self._bars = _Bars(bx, ["x1", "x2"], list(self.methods), (-1.0, 1.0))
        bx.set_title("attributions", fontsize=10)
        self.animated = [self._point, self._arrow, ax.title, *self._bars.artists]
        return self.update_artists(fig, r)

    def update_artists(self, fig: Figure, r: PointAttributions) -> None:
        g = r.attributions["gradient"].numpy()
        x = r.x.numpy()
        self._point.set_data([x[0]], [x[1]])
        self._arrow.set_offsets(x[None])
        length = 0.3 * self.lim / max(float(np.linalg.norm(g)), 1e-9)  # the arrow shows the direction
        self._arrow.set_UVC(g[0] * length, g[1] * length)
        self._ax.set_title(f"f = {self._formula}\nf(x) = {r.value:.3f}, arrow: gradient direction", fontsize=9)
        if self._bars.set([r.attributions[m].numpy() for m in self.methods], adapt=True):
            self.invalidate()  # the bar axis was rescaled: its ticks are part of the background


# -- §2 -----------------------------------------------------------------------------------------------------
class GradientSaturationPanel(ToyPanel):
    """§2: on min(1, x1 + x2), gradients vanish once x1 + x2 >= 1 although both inputs matter.

    Occlusion (each input set to 0) also gives 0 at (1, 1): either input alone keeps f at 1. The IG
    preview (Sundararajan et al. 2017; notebook 02 does it properly) is
    :func:`~xaikit.tensor.integrated.integrated_gradients` with the midpoint Riemann rule from the baseline 0,
    ``(x - x') * mean_k grad F(x' + (k - 1/2)/m (x - x'))`` for k = 1..m; it splits f(x) - f(0) between
    the inputs.
    """

    title = "Saturation: f = min(1, x1 + x2)"
    figsize = (8.4, 3.4)

    def __init__(self, x1: float = 1.0, x2: float = 1.0, ig_steps: int = 64):
        from xaikit._validate import check_int

        self.f = toys.saturating
        self.ig_steps = check_int(ig_steps, "ig_steps", 1, hint="the IG preview's steps, e.g. ig_steps=64")
        self.methods = ("gradient", "gradient x input", "occlusion (to 0)", f"IG preview ({ig_steps} steps)")
        super().__init__({"x1": slider("x1", x1, 0.0, 1.5, 0.05), "x2": slider("x2", x2, 0.0, 1.5, 0.05)})

    def compute(self, x1: float, x2: float) -> PointAttributions:
        x = torch.tensor([x1, x2], dtype=torch.float32)
        baseline = torch.zeros(2)
        with torch.no_grad():
            value, base_value = (float(v) for v in self.f(torch.stack([x, baseline])))
        values = (G.gradient(self.f, x), G.grad_times_input(self.f, x),
                  G.occlusion(self.f, x, window=1, baseline=0.0),
                  integrated_gradients(self.f, x, baseline, self.ig_steps, "riemann_middle").attributions)
        return PointAttributions(x, value, dict(zip(self.methods, values, strict=True)), base_value)

    def draw(self, fig: Figure, r: PointAttributions) -> None:
        ax, bx = fig.subplots(1, 2, width_ratios=[1, 1.4], gridspec_kw=dict(left=0.07, right=0.98, bottom=0.14,
                                                                            top=0.9, wspace=0.2))
        s = np.linspace(0, 3, 301)
        ax.plot(s, np.minimum(1, s), color=OKABE_ITO[0])
        (self._point,) = ax.plot([0], [0], "o", color=OKABE_ITO[5], ms=8)
        ax.axvspan(1, 3, color="0.9", zorder=0)
        ax.text(2.0, 0.5, "saturated:\ngradient 0", ha="center", fontsize=8)
        ax.set(xlabel="x1 + x2", ylabel="f", ylim=(-0.05, 1.2), xlim=(0, 3))
        ax.set_title(" ", fontsize=10)
        bx.set_title(" ", fontsize=10)
        self._ax, self._bx = ax, bx
        # every attribution here lies in [0, 1.5] for x in [0, 1.5]^2: a fixed range keeps the axis static
        self._bars = _Bars(bx, ["x1", "x2"], list(self.methods), (-0.15, 1.75))
        self.animated = [self._point, ax.title, bx.title, *self._bars.artists]
        return self.update_artists(fig, r)

    def update_artists(self, fig: Figure, r: PointAttributions) -> None:
        self._point.set_data([float(r.x.sum())], [r.value])
        self._ax.set_title(f"f(x) - f(0) = {r.value - r.baseline_value:.2f}", fontsize=10)
        self._bx.set_title(f"attributions at ({r.x[0]:.2f}, {r.x[1]:.2f})", fontsize=10)
        self._bars.set([r.attributions[m].numpy() for m in self.methods])


# -- §3 -----------------------------------------------------------------------------------------------------
@dataclass
class ThresholdResult:
    x: float
    beta: float
    relu: float
    softplus: float
    grad_relu: float
    grad_softplus: float
    grid: np.ndarray
    curves: dict[str, np.ndarray]
    max_gap: float  # max over the grid of softplus - relu (theory: log(2) / beta at x = 10)


class ThresholdPanel(ToyPanel):
    """§3: the thresholded max(0, x - 10) and its softplus(beta) replacement, values and gradients."""

    title = "Thresholding: max(0, x - 10) and softplus"
    figsize = (8.4, 3.2)

    def __init__(self, x: float = 10.5, beta: float = 1.0, lo: float = 5.0, hi: float = 15.0):
        from xaikit._validate import check_float

        lo = check_float(lo, "lo", hint="the left end of the x axis, e.g. 5.0")
        hi = check_float(hi, "hi", hint="the right end of the x axis, e.g. 15.0")
        if not lo < hi:
            raise ValueError(f"lo must be below hi (the x axis runs from lo to hi), got lo={lo:g}, hi={hi:g}; "
                             f"e.g. lo=5.0, hi=15.0 (the threshold is at 10)")
        self.grid = torch.linspace(lo, hi, 401)
        super().__init__({"x": slider("x", x, lo, hi, 0.1), "beta": log_slider("beta", beta, -0.5, 2.0)})

    def compute(self, x: float, beta: float) -> ThresholdResult:
        soft = toys.softplus_relu(beta)
        hard = toys.thresholded
        pts = self.grid[:, None]  # (N, 1)
        with torch.no_grad():
            relu_curve, soft_curve = hard(pts).numpy(), soft(pts).numpy()
        grads_hard = G.batch_gradients(hard, pts, None)[:, 0].numpy()  # (N,)
        grads_soft = G.batch_gradients(soft, pts, None)[:, 0].numpy()
        xt = torch.tensor([x])
        with torch.no_grad():
            r, s = float(hard(xt[None])[0]), float(soft(xt[None])[0])
        return ThresholdResult(x, beta, r, s, float(G.gradient(hard, xt)[0]), float(G.gradient(soft, xt)[0]),
                               self.grid.numpy(), {"relu": relu_curve, "softplus": soft_curve,
                                                   "grad relu": grads_hard, "grad softplus": grads_soft},
                               float((soft_curve - relu_curve).max()))

    def draw(self, fig: Figure, r: ThresholdResult) -> None:
        ax, bx = fig.subplots(1, 2, gridspec_kw=dict(left=0.06, right=0.98, bottom=0.15, top=0.9, wspace=0.18))
        g = self.grid.numpy()
        lines = {}
        lines["relu"] = ax.plot(g, g * 0, color=OKABE_ITO[0], label="max(0, x - 10)")[0]
        lines["softplus"] = ax.plot(g, g * 0, color=OKABE_ITO[1], ls="--", label="softplus_beta(x - 10)")[0]
        lines["grad relu"] = bx.plot(g, g * 0, color=OKABE_ITO[0], label="d relu / dx (jumps)")[0]
        lines["grad softplus"] = bx.plot(g, g * 0, color=OKABE_ITO[1], ls="--",
                                         label="d softplus / dx = sigmoid")[0]
        self._lines = lines
        (self._pt_f,) = ax.plot([0, 0], [0, 0], "o", color=OKABE_ITO[5])
        (self._pt_g,) = bx.plot([0, 0], [0, 0], "o", color=OKABE_ITO[5])
        # fixed ranges keep the axes static: softplus on [5, 15] stays below 6 for every beta >= 10^-0.5
        ax.set(xlabel="x", ylabel="f", xlim=(g[0], g[-1]), ylim=(-0.3, 6.0))
        bx.set(xlabel="x", ylabel="df/dx", ylim=(-0.05, 1.1), xlim=(g[0], g[-1]))
        ax.legend(fontsize=7, loc="upper left")
        bx.legend(fontsize=7, loc="upper left")
        ax.set_title(" ", fontsize=9)
        bx.set_title(" ", fontsize=9)
        self._ax, self._bx = ax, bx
        self.animated = [*lines.values(), self._pt_f, self._pt_g, ax.title, bx.title]
        return self.update_artists(fig, r)

    def update_artists(self, fig: Figure, r: ThresholdResult) -> None:
        for name, line in self._lines.items():
            line.set_ydata(r.curves[name])
        self._pt_f.set_data([r.x, r.x], [r.relu, r.softplus])
        self._pt_g.set_data([r.x, r.x], [r.grad_relu, r.grad_softplus])
        self._ax.set_title(f"beta = {r.beta:.3g}: largest gap {r.max_gap:.3f} (log 2 / beta = "
                           f"{np.log(2) / r.beta:.3f})", fontsize=9)
        self._bx.set_title(f"at x = {r.x:.2f}: {r.grad_relu:.2f} (relu) vs {r.grad_softplus:.2f} (softplus)",
                           fontsize=9)


# -- §4 -----------------------------------------------------------------------------------------------------
@dataclass
class SmoothGradResult:
    index: int
    label: int
    predicted: int
    probability: float
    image: torch.Tensor
    noisy: G.NoisyGradients
    kind: str
    smoothed: torch.Tensor


class SmoothGradPanel(ToyPanel):
    """§4: the raw saliency map of a digit against SmoothGrad and its variants (Smilkov et al. 2017).

    Controls: image (a test digit), sigma (noise as a fraction of the pixel range [0, 1]), n (samples),
    kind. The noise is seeded (``seed``), so a change of image or sigma is not confounded with new noise.
    Maps are shown divided by their largest absolute value (printed in the title): the raw gradient and
    SmoothGrad are signed (diverging map on [-1, 1]); SmoothGrad-squared and VarGrad are non-negative
    (sequential map on [0, 1]).
    """

    title = "SmoothGrad on 8x8 digits"
    figsize = (9.0, 2.7)

    def __init__(self, trained: toys.TrainedDigits | None = None, n_images: int = 12, sigma: float = 0.15,
                 n: int = 50, kind: str = "smoothgrad", seed: int = 0):
        from xaikit._validate import check_int, check_seed

        n_images = check_int(n_images, "n_images", 1, hint="how many test digits the image menu offers, e.g. 12")
        self.seed = check_seed(seed)
        self.trained = _check_trained(trained, type(self).__name__) or toys.digits_classifier()
        data = self.trained.data
        options = [(f"test #{i}: a {int(data.test_y[i])}", i) for i in range(min(n_images, len(data.test_y)))]
        super().__init__({
            "image": dropdown("image", options),
            "sigma": slider("sigma", sigma, 0.0, 0.5, 0.01),
            "n": int_slider("n", n, 1, 200),
            "kind": toggle("kind", list(G.KINDS), kind),
        })

    def compute(self, image: int, sigma: float, n: int, kind: str) -> SmoothGradResult:
        model, data = self.trained.model, self.trained.data
        x = data.test_x[image]  # (1, 8, 8)
        with torch.no_grad():
            p = torch.softmax(model(x[None]), 1)[0]  # (10,)
        noisy = G.noisy_gradients(model, x, sigma=sigma, n=n, seed=self.seed, value_range=(0.0, 1.0))
        return SmoothGradResult(image, int(data.test_y[image]), int(p.argmax()), float(p.max()), x, noisy, kind,
                                noisy.reduce(kind))

    def draw(self, fig: Figure, r: SmoothGradResult) -> None:
        axes = fig.subplots(1, 4, gridspec_kw=dict(left=0.01, right=0.94, bottom=0.03, top=0.8, wspace=0.3))
        blank = np.zeros((8, 8))
        self._ims = [axes[0].imshow(blank, cmap="gray_r", vmin=0, vmax=1),
                     axes[1].imshow(blank, cmap="gray_r", vmin=0, vmax=1),
                     axes[2].imshow(blank, cmap=DIVERGING, vmin=-1, vmax=1),
                     axes[3].imshow(blank, cmap=DIVERGING, vmin=-1, vmax=1)]
        for ax in axes:
            ax.set_xticks([])
            ax.set_yticks([])
        for ax, im in zip(axes[2:], self._ims[2:], strict=True):
            fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
            ax.set_title(" \n ", fontsize=9)
        for ax in axes[:2]:
            ax.set_title(" \n ", fontsize=9)
        self._axes = axes
        self._shown_kind = None
        self.animated = [*self._ims, *(ax.title for ax in axes)]
        return self.update_artists(fig, r)

    def update_artists(self, fig: Figure, r: SmoothGradResult) -> None:
        a0, a1, a2, a3 = self._axes
        im0, im1, im2, im3 = self._ims
        im0.set_data(r.image[0].numpy())
        a0.set_title(f"digit {r.label}, predicted {r.predicted}\n(p = {r.probability:.2f})", fontsize=9)
        im1.set_data(r.noisy.example[0].clamp(0, 1).numpy())
        a1.set_title(f"one noisy copy\n(sigma = {r.noisy.sigma:.2f} of the range)", fontsize=9)
        m = symmetric_limit(r.noisy.gradient)
        im2.set_data(r.noisy.gradient[0].numpy() / m)
        a2.set_title(f"raw gradient, class {r.predicted}\n/ {m:.3g}", fontsize=9)
        signed = r.kind == "smoothgrad"
        if signed != self._shown_kind:  # the colour bar of the last map changes: redraw the background
            im3.set_cmap(DIVERGING if signed else SEQUENTIAL)
            im3.set_clim(-1 if signed else 0, 1)
            self._shown_kind = signed
            self.invalidate()
        m = symmetric_limit(r.smoothed)
        im3.set_data(r.smoothed[0].numpy() / m)
        a3.set_title(f"{'SmoothGrad' if signed else r.kind}, n = {r.noisy.n}\n/ {m:.3g}", fontsize=9)


# -- §4, perturbation -----------------------------------------------------------------------------------------
@dataclass
class OcclusionResult:
    index: int
    label: int
    predicted: int
    probability: float
    image: torch.Tensor  # (1, 8, 8)
    gradient: torch.Tensor  # (1, 8, 8) dF/dx of the predicted class's logit
    grad_x_input: torch.Tensor  # (1, 8, 8)
    occlusion: torch.Tensor  # (1, 8, 8) mean drop of the logit over the patches covering each pixel
    patch: int
    stride: int


class OcclusionPanel(ToyPanel):
    """§4, perturbation instead of gradients: occlusion (Zeiler & Fergus 2014) of a digit beside its gradient
    maps. A ``patch`` x ``patch`` square slides over the image (``stride`` pixels per step, 1 by default),
    is set to ``baseline`` (0, the blank background), and each pixel gets the mean drop of the predicted
    class's logit over the squares that cover it (:func:`xaikit.tensor.gradients.occlusion`). Controls:
    image, patch (CSS class ``xk-patch``). Every map is divided by its largest absolute value (printed in
    its title) on the diverging map."""

    title = "Occlusion on 8x8 digits"
    figsize = (9.0, 2.7)

    def __init__(self, trained: toys.TrainedDigits | None = None, n_images: int = 12, patch: int = 2,
                 stride: int = 1, baseline: float = 0.0):
        from xaikit._validate import check_float, check_int

        n_images = check_int(n_images, "n_images", 1, hint="how many test digits the image menu offers, e.g. 12")
        self.stride = check_int(stride, "stride", 1, 8, hint="pixels between two patches; 1 slides the patch "
                                                             "one pixel at a time")
        self.baseline = check_float(baseline, "baseline", hint="the value an occluded pixel takes, e.g. 0.0")
        self.trained = _check_trained(trained, type(self).__name__) or toys.digits_classifier()
        data = self.trained.data
        options = [(f"test #{i}: a {int(data.test_y[i])}", i) for i in range(min(n_images, len(data.test_y)))]
        super().__init__({
            "image": dropdown("image", options),
            "patch": int_slider("patch", patch, 1, 8, name="patch"),
        })

    def compute(self, image: int, patch: int) -> OcclusionResult:
        model, data = self.trained.model, self.trained.data
        x = data.test_x[image]  # (1, 8, 8)
        with torch.no_grad():
            p = torch.softmax(model(x[None]), 1)[0]  # (10,)
        c = int(p.argmax())
        grad = G.gradient(model, x, target=c)  # (1, 8, 8)
        occ = G.occlusion(model, x, window=patch, stride=min(self.stride, patch), baseline=self.baseline,
                          target=c)  # (1, 8, 8)
        return OcclusionResult(image, int(data.test_y[image]), c, float(p[c]), x, grad, grad * x, occ, patch,
                               min(self.stride, patch))

    def draw(self, fig: Figure, r: OcclusionResult) -> None:
        axes = fig.subplots(1, 4, gridspec_kw=dict(left=0.01, right=0.94, bottom=0.03, top=0.8, wspace=0.3))
        blank = np.zeros((8, 8))
        self._ims = [axes[0].imshow(blank, cmap="gray_r", vmin=0, vmax=1),
                     *(ax.imshow(blank, cmap=DIVERGING, vmin=-1, vmax=1) for ax in axes[1:])]
        for ax in axes:
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(" \n ", fontsize=9)
        fig.colorbar(self._ims[-1], ax=axes[-1], fraction=0.046, pad=0.04)
        self._axes = axes
        self.animated = [*self._ims, *(ax.title for ax in axes)]
        return self.update_artists(fig, r)

    def update_artists(self, fig: Figure, r: OcclusionResult) -> None:
        self._ims[0].set_data(r.image[0].numpy())
        self._axes[0].set_title(f"digit {r.label}, predicted {r.predicted}\n(p = {r.probability:.2f})", fontsize=9)
        maps = ((r.gradient, "gradient"), (r.grad_x_input, "gradient x input"),
                (r.occlusion, f"occlusion, {r.patch}x{r.patch} patch"))
        for ax, im, (values, name) in zip(self._axes[1:], self._ims[1:], maps, strict=True):
            m = symmetric_limit(values)
            im.set_data(values[0].numpy() / m)
            ax.set_title(f"{name}\n/ {m:.3g}", fontsize=9)
