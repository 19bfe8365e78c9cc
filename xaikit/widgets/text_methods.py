"""Notebook 04's panels: two explanation methods side by side with their rank correlation, and the
"is attention explanation?" lab. The attention explorer is :class:`xaikit.widgets.explorer.AttentionExplorer`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from xaikit.plotting import OKABE_ITO
from xaikit.text.tokens import TokenScores, rank_correlation
from xaikit.widgets.base import Panel, checkbox, dropdown, text_box

__all__ = ["MethodComparisonPanel", "LabPanel", "ComparisonResult", "LabView"]


@dataclass
class ComparisonResult:
    a: TokenScores
    b: TokenScores
    correlation: dict[str, float]  # spearman, kendall on |scores|


class MethodComparisonPanel(Panel):
    """A sentence, two methods (Grad-SAM, SHAP, IG, attention, rollout, ...), bars side by side and their
    Spearman / Kendall rank correlation on |score| (notebook 04, sections 5-6).

    ``MethodComparisonPanel(model, tokenizer, text="I like the movie", a="Grad-SAM", b="SHAP")``. Each
    (sentence, method) is computed once and cached, so switching back is instant. A text longer than the
    model takes is cut the same way for both methods (noted in the panel); a method with a length limit
    (SHAP: ``xaikit.text.shaptext.LONG_TEXT`` tokens) refuses longer texts unless ``allow_long=True``. The menus
    list every registered method (:mod:`xaikit.text.registry`), read when the panel is built.
    """

    title = "Compare two explanations"
    figsize = (9.0, 3.4)
    cache_size = 32

    def __init__(self, model, tokenizer, text: str = "I like the movie", a: str = "Grad-SAM", b: str = "SHAP",
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

    def _explain(self, text, method) -> TokenScores:
        from xaikit.text.registry import entry
        from xaikit.text.views import explain

        key = (text, method)
        if key not in self._cache:
            long_option = entry(method).long_option
            extra = {long_option: True} if long_option and self.allow_long else {}
            self._cache[key] = explain(self.model, self.tokenizer, text, method, **extra)
            self.n_computed += 1
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return self._cache[key]

    def compute(self, text, a, b, drop_special):
        sa, sb = self._explain(text, a), self._explain(text, b)
        if drop_special:
            sa, sb = sa.without(), sb.without()
        return ComparisonResult(sa, sb, rank_correlation(sa, sb))

    def draw(self, fig, r):
        axes = fig.subplots(1, 2)
        for ax, s in zip(axes, (r.a, r.b), strict=False):
            s.bar(ax, title=s.method)
            ax.tick_params(axis="x", rotation=45)
        c = r.correlation
        fig.suptitle(f"rank correlation of |scores|: Spearman {c['spearman']:.2f}, Kendall {c['kendall']:.2f}")
        return r.a.html() + r.b.html()


@dataclass
class LabView:
    lab: object  # the LabResult
    view: str


class LabPanel(Panel):
    """The lab's results over many held-out sentences (notebook 04, sections 7-8): pick a view.

    The lab runs once when the panel is built (``xaikit.text.lab.faithfulness.run_lab``) or takes a ready
    ``LabResult`` via ``lab=``; switching views only redraws.
    """

    title = "Is attention explanation? The lab"
    figsize = (8.5, 3.8)
    VIEWS = ("erased before a flip", "deleted before a flip", "erasure: JS divergence", "decision-flip table",
             "AOPC", "permutation by layer")

    def __init__(self, model=None, tokenizer=None, sentences=None, lab=None, view: str = VIEWS[0], **lab_kwargs):
        from xaikit._validate import check_choice

        check_choice(view, "view", self.VIEWS)
        if lab is None:
            if model is None or tokenizer is None or sentences is None:
                raise ValueError("LabPanel needs either lab=<LabResult> or model, tokenizer and sentences")
            from xaikit.text.lab.faithfulness import run_lab

            lab = run_lab(model, tokenizer, sentences, **lab_kwargs)
        self.lab = lab
        super().__init__({"view": dropdown("view", self.VIEWS, view)})

    def compute(self, view):
        return LabView(self.lab, view)

    def draw(self, fig, r):
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
