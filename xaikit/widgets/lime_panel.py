"""Notebook 04's LIME panel (section 4b): LIME's token scores for a sentence, with the number of samples, the
kernel width and the seed on controls, and the surrogate's fit to the model on its samples (Ribeiro et al.
2016; :mod:`xaikit.text.lime`)."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from xaikit._validate import bool_flags
from xaikit.plotting import SEQUENTIAL
from xaikit.text.tokens import TokenScores
from xaikit.widgets.base import Panel, int_slider, lru_get, slider, text_box

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from torch import nn

    from xaikit._text_input import Tokenizer

__all__ = ["LimePanel", "LimeView"]


@dataclass
class LimeView:
    """What the panel shows: the LIME scores (special tokens dropped when asked), the surrogate's values
    g(z) on the samples beside the model's f(z), and whether the model ran for this update."""

    scores: TokenScores
    surrogate: np.ndarray  # (S,) g(z) = intercept + coef . z on the samples
    computed: bool  # False: the samples and outputs came from the panel's cache (a kernel width change)


class LimePanel(Panel):
    """LIME on one sentence: bars of the surrogate's coefficients (one per word, LIME's features), the token
    heatmap (each piece of a word shaded by the word's coefficient), and the surrogate's
    g(z) against the model's f(z) on the samples, each point shaded by its kernel weight, with the weighted
    R^2 (notebook 04, section 4b).

    Controls: ``text``, ``samples`` (LIME's ``n_samples``), ``kernel_width`` (on 100 * cosine distance; CSS
    class ``xk-kernel-width``), ``seed``. The model runs once per (sentence, samples, seed) and is cached;
    moving the kernel width only refits the surrogate (:func:`xaikit.text.lime.refit`). ``output`` is what the
    surrogate fits: ``"prob"`` (LIME's) or ``"logit"``.
    """

    title = "LIME: a local linear surrogate"
    figsize = (9.0, 3.3)
    cache_size = 16

    @bool_flags
    def __init__(self, model: nn.Module, tokenizer: Tokenizer, text: str = "I like the movie", *, n_samples: int = 300,
                 kernel_width: float = 25.0, seed: int = 0, output: str = "prob", drop_special: bool = True):
        from xaikit._validate import check_choice, check_seed, check_text
        from xaikit.text.lime import OUTPUTS

        self.model, self.tokenizer = model, tokenizer
        check_text(text)
        self.output = check_choice(output, "output", OUTPUTS)
        if not isinstance(drop_special, bool):
            raise TypeError(f"drop_special must be True or False, got {type(drop_special).__name__} {drop_special!r}")
        self.drop_special = drop_special
        seed = check_seed(seed)
        self._cache: OrderedDict = OrderedDict()
        self.n_computed = 0  # LIME runs that went through the model (not refits)
        controls = {
            "text": text_box("sentence", text),
            "samples": int_slider("samples", n_samples, 20, 2000, 20, name="n_samples"),
            "kernel_width": slider("kernel width", kernel_width, 1.0, 100.0, 1.0, readout_format=".0f",
                                   name="kernel_width"),
            "seed": int_slider("seed", seed, 0, 99, name="seed"),
        }
        controls["kernel_width"].add_class("xk-kernel-width")
        super().__init__(controls)

    def compute(self, text: str, samples: int, kernel_width: float, seed: int) -> LimeView:
        from xaikit.text.lime import lime, refit

        def run():
            return lime(self.model, self.tokenizer, text, n_samples=samples, seed=seed, output=self.output,
                        kernel_width=kernel_width)

        first, computed = lru_get(self._cache, (text, samples, seed), self.cache_size, run)
        self.n_computed += computed
        scores = first if first.detail.kernel_width == kernel_width else refit(first, kernel_width=kernel_width)
        d = scores.detail
        surrogate = d.intercept + d.samples @ d.coef  # (S,)
        return LimeView(scores.without() if self.drop_special else scores, surrogate, computed)

    def draw(self, fig: Figure, r: LimeView) -> str:
        from xaikit.text.lime import word_scores

        d = r.scores.detail
        ax_bars, ax_fit = fig.subplots(1, 2, gridspec_kw=dict(width_ratios=(3, 2)))
        word_scores(r.scores).bar(ax_bars, title=f"LIME coefficients per word ({d.output}), {len(d.samples)} "
                                                 f"samples, seed {d.seed}")
        ax_bars.tick_params(axis="x", rotation=45)
        order = np.argsort(d.weights)  # heavy points on top
        points = ax_fit.scatter(d.outputs[order], r.surrogate[order], c=d.weights[order], cmap=SEQUENTIAL,
                                vmin=0, vmax=1, s=12)
        lo = float(min(d.outputs.min(), r.surrogate.min()))
        hi = float(max(d.outputs.max(), r.surrogate.max()))
        ax_fit.plot([lo, hi], [lo, hi], color="0.4", lw=0.8)
        ax_fit.scatter([d.outputs[0]], [r.surrogate[0]], marker="*", s=120, color="black", label="the sentence")
        ax_fit.set_xlabel(f"model f(z) ({d.output})")
        ax_fit.set_ylabel("surrogate g(z)")
        ax_fit.legend(fontsize=8, loc="upper left")
        ax_fit.set_title(f"weighted R^2 = {d.r2:.2f}, kernel width {d.kernel_width:g}", fontsize=9)
        fig.colorbar(points, ax=ax_fit, label="kernel weight")
        note = (f"<small>Surrogate: intercept {d.intercept:.3g}, g(sentence) = {d.prediction:.3g}, f(sentence) = "
                f"{d.fx:.3g}; weighted R<sup>2</sup> = {d.r2:.3f} on its {len(d.samples)} samples "
                f"({d.n_evaluated} distinct of 2<sup>{len(d.words)}</sup> possible).</small>")
        return r.scores.html() + note
