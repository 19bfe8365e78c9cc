"""Notebooks 04's and 06's panels: two explanation methods side by side with their rank correlation, and the
"is attention explanation?" lab. The attention explorer is :class:`xaikit.widgets.explorer.AttentionExplorer`.
"""

from __future__ import annotations

import html
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from xaikit._validate import bool_flags
from xaikit.plotting import OKABE_ITO
from xaikit.text.tokens import TokenScores, rank_correlation
from xaikit.widgets.base import Panel, checkbox, dropdown, text_box

if TYPE_CHECKING:
    from collections.abc import Sequence

    from matplotlib.figure import Figure
    from torch import nn

    from xaikit._text_input import Tokenizer

if TYPE_CHECKING:
    from xaikit.models.passes import Cost

__all__ = ["MethodComparisonPanel", "LabPanel", "ComparisonResult", "LabView", "cost_table_html"]


@dataclass
class ComparisonResult:
    a: TokenScores
    b: TokenScores
    correlation: dict[str, float]  # spearman, kendall on |scores|
    cost_a: Cost | None = None  # what computing a cost (count_passes), also when it came from the cache
    cost_b: Cost | None = None
    cached_a: bool = False  # taken from the panel's cache this time: no passes ran for it now
    cached_b: bool = False


def cost_table_html(rows: Sequence[tuple], caption: str = "") -> str:
    """An HTML table of what explanations cost: ``rows`` of ``(name, Cost, note)``; the passes
    are equivalent full passes as :func:`xaikit.models.passes.count_passes` counts them."""
    head = "".join(f"<th>{h}</th>" for h in ("method", "forward passes", "backward passes", "wall time", ""))
    body = "".join(f"<tr><td>{html.escape(name)}</td><td>{c.forward:g}</td><td>{c.backward:g}</td>"
                   f"<td>{1000 * c.seconds:.0f} ms</td><td><small>{html.escape(note)}</small></td></tr>"
                   for name, c, note in rows)
    cap = f"<caption><small>{html.escape(caption)}</small></caption>" if caption else ""
    return f'<table class="xk-cost-table">{cap}<tr>{head}</tr>{body}</table>'


class MethodComparisonPanel(Panel):
    """A sentence, two methods (Grad-SAM, SHAP, IG, attention, rollout, ...), bars side by side and their
    Spearman / Kendall rank correlation on |score| (notebook 04, section 5; notebook 06, section 1).

    ``MethodComparisonPanel(model, tokenizer, text="I like the movie", a="Grad-SAM", b="SHAP")``. Each
    (sentence, method) is computed once and cached, so switching back is instant. Under the bars, each method's
    cost on the sentence shown: its forward and backward passes, counted by hooks on the encoder
    blocks around its computation (:func:`xaikit.models.passes.count_passes`; the forward pass that prepares
    the text included, since each method prepares its own), and its wall time; a result from the cache shows
    what computing it cost, marked "cached". The two methods never share a pass here (each runs on its own).
    A text longer than the
    model takes is cut the same way for both methods (noted in the panel); a method with a length limit
    (SHAP and LIME: 200 tokens, ``LONG_TEXT``) refuses longer texts unless ``allow_long=True``. The menus
    list every registered method (:mod:`xaikit.text.registry`), read when the panel is built.
    """

    title = "Compare two explanations"
    figsize = (9.0, 3.4)
    cache_size = 32

    @bool_flags
    def __init__(self, model: nn.Module, tokenizer: Tokenizer, text: str = "I like the movie", a: str = "Grad-SAM", b: str = "SHAP",
                 drop_special: bool = True, allow_long: bool = False):
        from xaikit._validate import check_choice, check_text
        from xaikit.text.registry import method_names

        methods = method_names()
        self.model, self.tokenizer = model, tokenizer
        if not isinstance(allow_long, bool):  # bool('False') is True: refused as run_lab refuses it
            raise TypeError(f"allow_long must be True or False, got {type(allow_long).__name__} {allow_long!r}")
        self.allow_long = allow_long  # methods with a length limit (SHAP) on longer texts (slow)
        self._cache: OrderedDict = OrderedDict()
        self.n_computed = 0
        check_text(text)
        check_choice(a, "a", methods)
        check_choice(b, "b", methods)
        controls = {
            "text": text_box("sentence", text),
            "a": dropdown("method A", methods, a),
            "b": dropdown("method B", methods, b),
            "drop_special": checkbox("hide [CLS]/[SEP]", drop_special),
        }
        super().__init__(controls)

    def _explain(self, text, method) -> tuple[TokenScores, Cost, bool]:
        """The method's scores, what computing them cost (counted by hooks) and whether they came from the
        cache."""
        from xaikit.models.passes import count_passes
        from xaikit.text.registry import entry
        from xaikit.text.views import explain

        key = (text, method)
        cached = key in self._cache
        if cached:
            self._cache.move_to_end(key)
        else:
            long_option = entry(method).long_option
            extra = {long_option: True} if long_option and self.allow_long else {}
            with count_passes(self.model) as passes:
                scores = explain(self.model, self.tokenizer, text, method, **extra)
            self._cache[key] = (scores, passes.cost)
            self.n_computed += 1
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return (*self._cache[key], cached)

    def compute(self, text: str, a: str, b: str, drop_special) -> ComparisonResult:
        sa, cost_a, cached_a = self._explain(text, a)
        sb, cost_b, cached_b = self._explain(text, b)
        if drop_special:
            sa, sb = sa.without(), sb.without()
        return ComparisonResult(sa, sb, rank_correlation(sa, sb), cost_a, cost_b, cached_a, cached_b)

    def draw(self, fig: Figure, r: ComparisonResult) -> str:
        axes = fig.subplots(1, 2)
        for ax, s, cost, cached in zip(axes, (r.a, r.b), (r.cost_a, r.cost_b), (r.cached_a, r.cached_b),
                                       strict=True):
            s.bar(ax, title=f"{s.method}\n{_cost_line(cost)}{' (cached)' if cached else ''}")
            ax.tick_params(axis="x", rotation=45)
        c = r.correlation
        fig.suptitle(f"rank correlation of |scores|: Spearman {c['spearman']:.2f}, Kendall {c['kendall']:.2f}")
        rows = [(s.method, cost, "cached: what computing it cost" if cached else "computed now")
                for s, cost, cached in ((r.a, r.cost_a, r.cached_a), (r.b, r.cost_b, r.cached_b))]
        table = cost_table_html(rows, "What each explanation of this sentence cost: passes counted by hooks on "
                                      "the encoder blocks (the text's preparation included), wall time on this "
                                      "machine")
        return r.a.html() + r.b.html() + table


def _cost_line(cost: Cost) -> str:
    return f"{cost.forward:g} fwd, {cost.backward:g} bwd, {1000 * cost.seconds:.0f} ms"


@dataclass
class LabView:
    lab: object  # the LabResult
    view: str


class LabPanel(Panel):
    """The lab's results over many held-out sentences (notebook 06, sections 2-6): pick a view.

    The lab runs once when the panel is built (``xaikit.lab.faithfulness.run_lab``) or takes a ready
    ``LabResult`` via ``lab=``; switching views only redraws.
    """

    title = "Is attention explanation? The lab"
    figsize = (8.5, 3.8)
    VIEWS = ("erased before a flip", "deleted before a flip", "erasure: JS divergence", "decision-flip table",
             "AOPC", "permutation by layer")

    def __init__(self, model: nn.Module | None = None, tokenizer: Tokenizer | None = None,
                 sentences: Sequence[str] | None = None, lab: object | None = None, view: str = VIEWS[0],
                 **lab_kwargs: object):
        from xaikit._validate import check_choice

        check_choice(view, "view", self.VIEWS)
        if lab is None:
            if model is None or tokenizer is None or sentences is None:
                raise ValueError("LabPanel needs either lab=<LabResult> or model, tokenizer and sentences")
            from xaikit.lab.faithfulness import run_lab

            lab = run_lab(model, tokenizer, sentences, **lab_kwargs)
        from xaikit.lab.faithfulness import LabResult

        if not isinstance(lab, LabResult):
            raise TypeError(f"lab must be a LabResult (what xaikit.lab.faithfulness.run_lab returns), got "
                            f"{type(lab).__name__} {lab!r:.60}; or pass model, tokenizer and sentences instead")
        self.lab = lab
        super().__init__({"view": dropdown("view", self.VIEWS, view)})

    def compute(self, view: str) -> LabView:
        return LabView(self.lab, view)

    def draw(self, fig: Figure, r: LabView) -> str:
        lab, ax = r.lab, fig.subplots()
        names = list(lab.rankings)
        colors = [OKABE_ITO[i % len(OKABE_ITO)] for i in range(len(names))]
        layer = f"layer {lab.layer}"
        if r.view in ("erased before a flip", "deleted before a flip"):
            erased = r.view.startswith("erased")
            fractions, flipped = (lab.fraction, lab.flipped) if erased else (lab.fraction_deleted, lab.flipped_deleted)
            parts = ax.boxplot([fractions[m] for m in names], patch_artist=True)
            for patch, c in zip(parts["boxes"], colors, strict=False):
                patch.set_facecolor(c)
            ax.set_xticks(range(1, len(names) + 1),
                          [f"{m}\n{100 * np.mean(flipped[m]):.0f}% flip" for m in names], rotation=30, fontsize=8)
            ax.set_ylabel("fraction of the words removed")
            how = f"erased from the attention of {layer} (Serrano & Smith)" if erased else "deleted from the input"
            ax.set_title(f"Words {how} before the first flip (1 = never flipped; lower = better)", fontsize=9)
        elif r.view == "erasure: JS divergence":
            ax.scatter(lab.attention_gap, lab.js_top - lab.js_random, color=OKABE_ITO[0], s=14)
            ax.axhline(0, color="0.4", lw=0.8)
            ax.set_xlabel(f"attention(top) - attention(random), {layer}, [CLS] row")
            ax.set_ylabel("JS(top) - JS(random)  [bits]")
            ax.set_title("Serrano & Smith: does erasing the most attended word matter more?")
        elif r.view == "decision-flip table":
            t = lab.flip_table
            ax.imshow(t, cmap="viridis", vmin=0, vmax=100)
            for i in range(2):
                for j in range(2):
                    ax.text(j, i, f"{t[i, j]:.1f}%", ha="center", va="center",
                            color="white" if t[i, j] < 60 else "black")
            ax.set_xticks([0, 1], ["random flips", "random keeps"])
            ax.set_yticks([0, 1], ["top flips", "top keeps"])
            ax.set_title(f"Decision flips: erase the top-attended vs a random word ({layer})")
        elif r.view == "AOPC":
            x = np.arange(len(names))
            ax.bar(x - 0.2, [lab.comprehensiveness[m].mean() for m in names], 0.4, color=OKABE_ITO[0],
                   label="comprehensiveness (higher = better)")
            ax.bar(x + 0.2, [lab.sufficiency[m].mean() for m in names], 0.4, color=OKABE_ITO[1],
                   label="sufficiency (lower = better)")
            ax.set_xticks(x, names, rotation=30)
            ax.axhline(0, color="0.4", lw=0.8)
            ax.legend(fontsize=8)
            bins = ", ".join(f"{100 * b:g}" for b in lab.bins)
            ax.set_title(f"Faithfulness by deletion (AOPC over {bins}% of the words; DeYoung et al. 2020)", fontsize=9)
        else:
            by_layer = np.asarray(lab.permutation_by_layer)  # (sentences, layers)
            ax.boxplot([by_layer[:, i] for i in range(by_layer.shape[1])], patch_artist=True)
            ax.set_xticks(range(1, by_layer.shape[1] + 1), [f"layer {i}" for i in range(by_layer.shape[1])])
            ax.set_ylabel("median output change (TVD)")
            ax.set_title("Jain & Wallace: shuffle one layer's attention at a time")
        return lab.table_html()
