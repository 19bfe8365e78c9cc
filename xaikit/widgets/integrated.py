"""Panels for notebook 02 (Integrated Gradients).

* :class:`IGStepsPanel`: steps slider (1-300) and rule picker; the live completeness gap against the IG
  paper's 5% band, and the log-log plot of the gap against the steps for every rule.
* :class:`IGErrorPanel`: steps slider and rule picker on a model with a closed-form IG: every feature's
  error next to the completeness gap (their sum), and each rule's largest per-feature error against the
  steps on a log-log plot.
* :class:`IGPathPanel`: path picker (straight, x1 first, x2 first, powers of alpha) drawn on the contour
  plot of ``f``, with the attributions each path gives.
* :class:`IGBaselinePanel`: baseline picker with its parameter, on a digit image: the image, the baseline
  and the attribution map (Sturmfels, Lundberg & Lee 2020).
* :class:`IGCompletenessPanel`: the interpolation strip from baseline to input, ``F`` along the path and
  the running sum of attributions climbing to ``F(x) - F(x')``.

By default the image panels use the small digits CNN of :func:`xaikit.tensor.toys.digits_setup` (trained in
seconds on scikit-learn's bundled 8x8 digits). Every number drawn comes from :mod:`xaikit.tensor.integrated`,
:mod:`xaikit.tensor.paths` and :mod:`xaikit.tensor.baselines`. Sundararajan, Taly & Yan (2017).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from xaikit._fn import call, to_cpu
from xaikit.plotting import OKABE_ITO, show_signed, signed_bars
from xaikit.tensor.baselines import BASELINES, PARAMETERS, baseline_attributions
from xaikit.tensor.integrated import RULES, gap_curves, integrated_gradients
from xaikit.tensor.paths import path_integrated_gradients
from xaikit.tensor.quadrature import additive_toy, quadrature_errors
from xaikit.tensor.toys import digits_setup
from xaikit.widgets.base import Panel, dropdown, int_slider, slider

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from xaikit._types import Baseline, Input, ModelFn, Target
    from xaikit.tensor.baselines import BaselineResult
    from xaikit.tensor.integrated import IGResult
    from xaikit.tensor.paths import PathResult

__all__ = ["IGStepsPanel", "IGErrorPanel", "IGPathPanel", "IGBaselinePanel", "IGCompletenessPanel"]

TOLERANCE = 0.05  # the IG paper: attributions should add up to F(x) - F(x') within 5%


def _image(ax, img, title, cmap="gray_r"):
    ax.imshow(np.asarray(img).reshape(8, 8) if np.asarray(img).size == 64 else np.asarray(img).squeeze(),
              cmap=cmap, vmin=0.0, vmax=1.0)
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])



def _with_default_model(who: str, model_name: str, given: dict, defaults: dict) -> dict:
    """The inputs a panel built without ``f``/``model`` explains: the default example's, except those the user
    passed, which are kept when they have the default's shape and refused otherwise (never dropped unsaid)."""
    chosen = dict(defaults)
    for name, value in given.items():
        if value is None:
            continue
        default = defaults[name]
        value_t = torch.as_tensor(np.asarray(value) if not isinstance(value, torch.Tensor) else value)
        many = name in ("images", "data")  # a batch: any number of images of the default's shape
        fits = (value_t.shape == default.shape if not many
                else value_t.dim() == default.dim() and value_t.shape[1:] == default.shape[1:] and len(value_t))
        if not fits:
            raise ValueError(f"{who}: {name} has shape {tuple(value_t.shape)}, but without {model_name}= the panel "
                             f"explains its default model, which takes {name} of shape {tuple(default.shape)}"
                             + (" (any number of images)" if many else "")
                             + f"; pass {model_name}=your model together with {name}, or leave {name} out")
        chosen[name] = value_t.to(default.dtype)
    return chosen


def _required(value, name: str, who: str, model_name: str):
    if value is None:
        raise ValueError(f"{who}: {name} is None; with {model_name}= given, pass {name}= too (the input to explain), "
                         f"or leave {model_name} out for the default example")
    return value


# -- steps and rules ------------------------------------------------------------------------------------------
@dataclass
class StepsView:
    result: object
    curves: dict[str, tuple[list[int], list[float]]]

    @property
    def relative_gap(self) -> float:
        return self.result.relative_gap

    @property
    def within_tolerance(self) -> bool:
        return self.result.relative_gap <= TOLERANCE


class IGStepsPanel(Panel):
    """How many steps are enough? The gap ``|sum IG - (F(x) - F(x'))| / |F(x) - F(x')|`` per rule."""

    figsize = (10.0, 3.4)
    title = "Integrated Gradients: steps and quadrature rule"
    grid = (1, 2, 4, 8, 16, 32, 64, 128, 256)

    def __init__(self, f: ModelFn | None = None, x: Input | None = None, baseline: Baseline = None,
                 target: Target = None, steps: int = 20, rule: str = "riemann_right"):
        if f is None:
            f, dx, dbaseline, _ = digits_setup()
            x, baseline = _with_default_model("IGStepsPanel", "f", {"x": x, "baseline": baseline},
                                              {"x": dx, "baseline": dbaseline}).values()
        x = _required(x, "x", "IGStepsPanel", "f")
        self.f, self.x, self.baseline, self.target = f, x, baseline, target
        self.curves = gap_curves(f, x, baseline, self.grid, RULES,
                                 target=target)  # once: the whole log-log figure
        controls = {"steps": int_slider("steps", steps, 1, 300), "rule": dropdown("rule", RULES, rule)}
        super().__init__(controls)

    def compute(self, steps: int, rule: str) -> StepsView:
        result = integrated_gradients(self.f, self.x, self.baseline, steps, rule, target=self.target)
        return StepsView(result, self.curves)

    def draw(self, fig: Figure, view: StepsView) -> None:
        left, right = fig.subplots(1, 2, width_ratios=(1, 2))
        gap = view.relative_gap
        left.axhspan(1e-8, TOLERANCE, color=OKABE_ITO[2], alpha=0.2, label="within 5%")
        left.bar([0], [max(gap, 1e-8)], color=OKABE_ITO[0] if view.within_tolerance else OKABE_ITO[5])
        left.set_yscale("log")
        left.set_ylim(1e-7, max(2.0, gap * 2))
        left.set_xticks([0], [f"{view.result.rule}\n{view.result.steps} steps"])
        left.set_ylabel("relative gap")
        left.set_title(f"gap {100 * gap:.2f}% of |F(x)-F(x')|", fontsize=10)
        left.legend(loc="upper right", fontsize=8)
        for colour, (rule, (ns, gaps)) in zip(OKABE_ITO, view.curves.items(), strict=False):
            right.loglog(ns, np.maximum(gaps, 1e-9), "o-", color=colour, label=rule, ms=3)
        right.axhline(TOLERANCE, color="0.4", ls="--", lw=1)
        right.plot([view.result.steps], [max(gap, 1e-9)], "k*", ms=12, label="current")
        right.set_xlabel("steps")
        right.set_ylabel("relative gap")
        right.set_title("completeness gap against steps", fontsize=10)
        right.legend(fontsize=7, ncol=2)


# -- per-feature errors against the gap ----------------------------------------------------------------------
@dataclass
class ErrorView:
    """One rule at one step count: the signed per-feature errors, the gap (their sum), and every curve."""

    rule: str
    steps: int
    errors: np.ndarray  # (d,) IG_i(rule, steps) - IG_i(exact)
    gap: float
    output_change: float
    curves: dict

    @property
    def relative_gap(self) -> float:
        return abs(self.gap) / abs(self.output_change)

    @property
    def relative_max_error(self) -> float:
        return float(np.abs(self.errors).max()) / abs(self.output_change)


class IGErrorPanel(Panel):
    """A small gap can hide large per-feature errors: the errors, their sum (the gap), and their decay."""

    figsize = (10.0, 3.6)
    title = "Per-feature error and completeness gap (closed-form IG)"
    grid = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)

    def __init__(self, model: ModelFn | None = None, x: Input | None = None, baseline: Baseline = None,
                 steps: int = 2, rule: str = "riemann_right"):
        if model is None:
            model = additive_toy()
            dx = torch.tensor([1.0, -0.7, 2.0, 0.4], dtype=torch.float64)
            x, chosen = _with_default_model("IGErrorPanel", "model", {"x": x, "baseline": baseline},
                                            {"x": dx, "baseline": torch.zeros_like(dx)}).values()
            baseline = None if baseline is None else chosen
        x = _required(x, "x", "IGErrorPanel", "model")
        if not all(callable(getattr(model, a, None)) for a in ("exact_ig", "__call__")) or \
                not hasattr(model, "names"):
            raise TypeError(f"model must be an additive model with a closed-form IG (exact_ig) and feature names, "
                            f"such as xaikit.tensor.quadrature.additive_toy(), got {type(model).__name__}; this "
                            "panel compares quadrature with the exact integral, which a plain function does not "
                            "give. For any model's IG use xaikit.integrated_gradients")
        self.model, self.x, self.baseline = model, x, baseline
        self.exact = model.exact_ig(x, baseline)
        # once: the log-log curves (Gauss-Legendre also at 1-8 steps, before it reaches round-off)
        self.curves = quadrature_errors(model, self.exact, x, baseline, sorted({*self.grid, *range(1, 9)}), RULES)
        controls = {"steps": int_slider("steps", steps, 1, 300), "rule": dropdown("rule", RULES, rule)}
        super().__init__(controls)

    def compute(self, steps: int, rule: str) -> ErrorView:
        if rule == "riemann_trapezoid" and steps < 2:
            raise ValueError("steps must be >= 2 for rule='riemann_trapezoid' (it needs both end points)")
        errors = quadrature_errors(self.model, self.exact, self.x, self.baseline, [steps], [rule])[rule]
        return ErrorView(rule, steps, errors.errors[0], float(errors.gaps[0]), errors.output_change, self.curves)

    def draw(self, fig: Figure, view: ErrorView) -> None:
        bars, curves = fig.subplots(1, 2, width_ratios=(2, 3))
        labels = [*self.model.names, "gap = sum"]
        values = np.append(view.errors, view.gap)
        signed_bars(bars, labels, values)
        bars.patches[-1].set_hatch("//")
        bars.tick_params(axis="x", labelsize=8, labelrotation=30)
        bars.set_ylabel("IG(rule, n) - exact IG")
        bars.set_title(f"{view.rule}, {view.steps} steps: gap {100 * view.relative_gap:.2f}%, largest feature "
                       f"error {100 * view.relative_max_error:.1f}% of |F(x)-F(x')|", fontsize=8)
        for colour, (rule, errors) in zip(OKABE_ITO, view.curves.items(), strict=False):
            grid = [i for i, n in enumerate(errors.steps) if n in self.grid or rule == "gausslegendre"]
            ns = np.asarray(errors.steps)[grid]
            curves.loglog(ns, np.maximum(errors.relative_max_error[grid], 1e-16), "o-", color=colour, ms=3,
                          label=rule)
            curves.loglog(ns, np.maximum(errors.relative_gap[grid], 1e-16), ":", color=colour, lw=1)
        curves.plot([view.steps], [max(view.relative_max_error, 1e-16)], "k*", ms=12, label="current")
        curves.axhline(TOLERANCE, color="0.4", ls="--", lw=1)
        curves.set_ylim(1e-16, 10)
        curves.set_xlabel("steps (gradient evaluations)")
        curves.set_ylabel("relative to |F(x) - F(x')|")
        curves.set_title("largest per-feature error (solid) and gap (dotted)", fontsize=9)
        curves.legend(fontsize=7, ncol=2, loc="lower left")


# -- paths and symmetry ---------------------------------------------------------------------------------------
PATH_CHOICES = {
    "straight line (IG)": {"path": "straight"},
    "x1 first, then x2": {"path": "sequential", "order": [0, 1]},
    "x2 first, then x1": {"path": "sequential", "order": [1, 0]},
    "powers: (alpha, alpha^3)": {"path": "power", "powers": [1.0, 3.0]},
}


def _sigmoid_sum(z):
    return torch.sigmoid(z[:, 0] + z[:, 1])


class IGPathPanel(Panel):
    """Other monotone paths are complete too, but only the straight line splits a symmetric f equally."""

    figsize = (9.0, 3.6)
    title = "Path methods and symmetry"

    def __init__(self, f: ModelFn | None = None, x: Input = (1.0, 1.0), baseline: Input = (0.0, 0.0),
                 steps: int = 200):
        from xaikit._fn import as_input
        from xaikit._validate import check_int

        self.f = _sigmoid_sum if f is None else f
        self.x, self.baseline = (as_input(v, name).float() for v, name in ((x, "x"), (baseline, "baseline")))
        for name, v in (("x", self.x), ("baseline", self.baseline)):  # the panel draws the plane of two inputs
            if tuple(v.shape) != (2,):
                raise ValueError(f"{name} must be a point of the plane, two numbers such as (1.0, 1.0), got shape "
                                 f"{tuple(v.shape)}: the panel draws f over two inputs")
        self.steps = check_int(steps, "steps", 2, hint="the path's points, e.g. steps=200")
        super().__init__({"path": dropdown("path", list(PATH_CHOICES))})

    def compute(self, path: str) -> PathResult:
        return path_integrated_gradients(self.f, self.x, self.baseline, steps=self.steps, **PATH_CHOICES[path])

    def draw(self, fig: Figure, result: PathResult) -> None:
        ax, bars = fig.subplots(1, 2, width_ratios=(3, 2))
        lo = float(torch.minimum(self.x, self.baseline).min()) - 0.5
        hi = float(torch.maximum(self.x, self.baseline).max()) + 0.5
        g = torch.linspace(lo, hi, 80)
        g1, g2 = torch.meshgrid(g, g, indexing="xy")
        with torch.no_grad():
            z = to_cpu(call(self.f, torch.stack([g1.reshape(-1), g2.reshape(-1)], 1))).reshape(80, 80)
        cs = ax.contourf(g1.numpy(), g2.numpy(), z.numpy(), levels=15, cmap="viridis")
        fig.colorbar(cs, ax=ax, label="f")
        pts = result.points.numpy()
        ax.plot(pts[:, 0], pts[:, 1], color="white", lw=2.5)
        ax.plot(*self.baseline.numpy(), "o", color=OKABE_ITO[1], ms=8, label="baseline x'")
        ax.plot(*self.x.numpy(), "*", color=OKABE_ITO[5], ms=14, label="input x")
        ax.set_xlabel("x1")
        ax.set_ylabel("x2")
        ax.set_aspect("equal")
        ax.legend(fontsize=8, loc="lower right")
        ax.set_title(result.path, fontsize=10)
        signed_bars(bars, ["x1", "x2"], result.attributions.numpy(),
                    title=f"IG sum {float(result.attributions.sum()):.3f}; F(x)-F(x') "
                          f"{result.f_x - result.f_baseline:.3f}")
        bars.title.set_fontsize(9)
        for i, v in enumerate(result.attributions.numpy()):
            bars.annotate(f"{v:.3f}", (i, v), ha="center", va="bottom", fontsize=9)


# -- baselines ------------------------------------------------------------------------------------------------
class IGBaselinePanel(Panel):
    """The baseline is part of the question: the same digit explained against seven baselines."""

    figsize = (9.0, 3.0)
    title = "Baselines (Sturmfels, Lundberg & Lee 2020)"

    def __init__(self, model: ModelFn | None = None, images: Input | None = None, data: Input | None = None,
                 steps: int = 32, target: Target = None):
        if model is None:
            model, _, _, ddata = digits_setup()
            from xaikit.tensor.toys import digits_classifier

            dimages = digits_classifier(progress=False).data.test_x[:20]
            images, data = _with_default_model("IGBaselinePanel", "model", {"images": images, "data": data},
                                               {"images": dimages, "data": ddata}).values()
        images = _required(images, "images", "IGBaselinePanel", "model")
        self.model, self.images, self.data, self.steps, self.target = model, images, data, steps, target
        self.param = slider("parameter", 0.5, 0.0, 1.0, 0.01)
        kind = dropdown("baseline", BASELINES)
        kind.observe(self._retune, names="value")  # before the base class's observer: fires first
        controls = {"baseline": kind, "param": self.param, "image": int_slider("image", 0, 0, len(images) - 1)}
        super().__init__(controls)

    def _retune(self, change):
        """Give the parameter slider the meaning, range and default of the chosen baseline."""
        name, default, lo, hi = PARAMETERS.get(change["new"], ("(none)", 0.0, 0.0, 1.0))
        if change["new"] == "expected" and self.data is not None:  # k <= the number of images to draw from
            hi = max(1, min(hi, len(self.data)))
            default = min(default, hi)
        suspended, self._suspended = self._suspended, True  # inside set(), stay suspended until set() updates
        try:
            self.param.min, self.param.max = -1e9, 1e9
            self.param.min, self.param.max = float(lo), float(hi)
            self.param.step = 1.0 if isinstance(default, int) else 0.01
            self.param.value = float(default)
            self.param.description = name
        finally:
            self._suspended = suspended

    def compute(self, baseline: str, param: float, image: int) -> BaselineResult:
        spec = PARAMETERS.get(baseline)
        value = None if spec is None else (int(round(param)) if isinstance(spec[1], int) else float(param))
        return baseline_attributions(self.model, self.images[image], baseline, value, data=self.data,
                                     steps=self.steps, target=self.target)

    def draw(self, fig: Figure, result: BaselineResult) -> None:
        axes = fig.subplots(1, 3)
        x = result.f_x
        _image(axes[0], self.images[self.values["image"]], f"input (F = {x:.2f})")
        _image(axes[1], result.baselines.mean(0), f"baseline: {result.kind}"
               + (f" (mean of {len(result.baselines)})" if len(result.baselines) > 1 else ""))
        show_signed(axes[2], result.attributions.squeeze().numpy(),
                    title=f"IG (gap {100 * result.relative_gap:.1f}%)")
        axes[2].set_xticks([])
        axes[2].set_yticks([])


# -- interpolation and completeness ---------------------------------------------------------------------------
class IGCompletenessPanel(Panel):
    """From baseline to input: the images on the path, F along it, and the running sum of attributions."""

    figsize = (10.0, 4.2)
    title = "The interpolation path and completeness"

    def __init__(self, model: ModelFn | None = None, x: Input | None = None, baseline: Baseline = None,
                 target: Target = None, steps: int = 50, rule: str = "riemann_right"):
        if model is None:
            model, dx, dbaseline, _ = digits_setup()
            x, baseline = _with_default_model("IGCompletenessPanel", "model", {"x": x, "baseline": baseline},
                                              {"x": dx, "baseline": dbaseline}).values()
        x = _required(x, "x", "IGCompletenessPanel", "model")
        self.model, self.x, self.baseline, self.target = model, x, baseline, target
        super().__init__({"steps": int_slider("steps", steps, 2, 300), "rule": dropdown("rule", RULES, rule)})

    def compute(self, steps: int, rule: str) -> IGResult:
        return integrated_gradients(self.model, self.x, self.baseline, steps, rule, target=self.target)

    def draw(self, fig: Figure, result: IGResult) -> None:
        grid = fig.add_gridspec(2, 6, height_ratios=(1, 1.6))
        points = result.points()
        picks = np.unique(np.linspace(0, result.steps - 1, 6).round().astype(int))
        for j, k in enumerate(picks):
            _image(fig.add_subplot(grid[0, j]), points[k].cpu().numpy(), f"alpha={result.alphas[k]:.2f}")
        ax = fig.add_subplot(grid[1, :3])
        ax.plot(result.alphas, result.outputs.cpu().numpy(), ".-", color=OKABE_ITO[0])
        ax.set_xlabel("alpha")
        ax.set_ylabel("F(x' + alpha (x - x'))")
        ax.set_title("the output along the path (flat where it saturates)", fontsize=9)
        ax2 = fig.add_subplot(grid[1, 3:])
        ax2.plot(result.alphas, result.running_sum(), ".-", color=OKABE_ITO[1], label="running sum of IG")
        ax2.axhline(result.output_change, color=OKABE_ITO[5], ls="--", label="F(x) - F(x')")
        ax2.set_xlabel("alpha")
        ax2.set_title(f"completeness: gap {result.gap:+.4f} ({100 * result.relative_gap:.2f}%)", fontsize=9)
        ax2.legend(fontsize=8)
