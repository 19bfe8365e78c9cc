"""The text sanity-check panel of notebook 06 (Adebayo et al. 2018, "Sanity Checks for Saliency Maps", carried
to a transformer's token scores; :mod:`xaikit.lab.text_sanity`).

:class:`TextSanityPanel`: a slider picks how many encoder blocks are re-drawn from the top (or the head
alone); per method the panel shows one sentence's token scores on the trained model and on the randomised
copy, side by side, titled with their Spearman rank correlation. Both models explain the class the trained
model predicts. Colours: Okabe & Ito's blue and orange (colour-blind safe).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import ipywidgets as widgets
import numpy as np

from xaikit.lab import text_sanity as S
from xaikit.widgets.base import Panel, lru_get

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from torch import nn

    from xaikit._text_input import Tokenizer

__all__ = ["TextSanityPanel", "TextSanityResult"]

#: Okabe & Ito (2008): the trained model's bars, the randomised model's bars
TRAINED, RANDOMISED = "#0072B2", "#E69F00"
#: the cheap methods, which share one forward/backward pass
DEFAULT_METHODS = ("Grad-SAM", "attention", "rollout", "grad-weighted attention")


@dataclass
class TextSanityResult:
    """What :class:`TextSanityPanel` shows: the ``step`` (blocks randomised, or ``HEAD``), the names of the
    re-drawn modules' blocks (``randomised``), the views of the trained model (``original``) and of the
    randomised copy (``changed``) by method, and ``similarity`` (Spearman) by method."""

    text: str
    step: object
    randomised: list[str]
    original: dict
    changed: dict
    similarity: dict[str, float]
    #: what the two columns cost: ``(model, part, Cost, note)`` rows, parts as ``all_views`` counts
    #: them with hooks (the shared pass once for the methods that read it); the note says "cached" when the
    #: views came from the panel's cache this time (the cost is then what computing them took)
    costs: list = field(default_factory=list)


class TextSanityPanel(Panel):
    """Cascading model randomisation of a sentiment transformer, method by method (notebook 06).

    Controls: ``sentence`` (one of ``texts``) and ``randomised`` (the slider: ``head only``, then 0 .. L blocks
    from the top). ``methods``: names of the text registry (default: the four that share one pass; IG, SHAP
    and Chefer LRP are accepted but cost more per step).
    """

    title = "Sanity checks: randomise the transformer's blocks from the top, or its head"
    figsize = (9.0, 5.0)

    def __init__(self, model: nn.Module, tokenizer: Tokenizer, texts: Sequence[str],
                 methods: Sequence[str] | None = None, randomised: int | str = 0, seed: int = 0):
        from xaikit._validate import check_int, check_names
        from xaikit.text import registry

        self.model, self.tokenizer = model, tokenizer
        if isinstance(texts, str):  # one sentence would be read as its characters
            raise TypeError(f"texts must be a list of sentences, got one string {texts[:40]!r}; pass [text]")
        self.texts = [str(t) for t in texts]
        if not self.texts:
            raise ValueError("texts is empty; pass at least one sentence, e.g. LECTURE_SENTENCES")
        self.methods = tuple(check_names(DEFAULT_METHODS if methods is None else methods, "methods",
                                         registry.method_names()))
        self.signed = {m: registry.entry(m).signed for m in self.methods}
        self.seed = check_int(seed, "seed", 0)
        self.blocks = S.block_names(model)
        steps = [(S.HEAD, S.HEAD), *((str(k), k) for k in range(len(self.blocks) + 1))]
        if randomised not in [v for _, v in steps]:
            raise ValueError(f"randomised must be {S.HEAD!r} or a block count 0 .. {len(self.blocks)}; got "
                             f"{randomised!r}")
        self._models: OrderedDict = OrderedDict()
        self._views: OrderedDict = OrderedDict()
        super().__init__({
            "sentence": widgets.Dropdown(options=[(t if len(t) < 60 else t[:57] + "...", i)
                                                  for i, t in enumerate(self.texts)], value=0,
                                         description="sentence"),
            "randomised": widgets.SelectionSlider(options=steps, value=randomised,
                                                  description="blocks from top", continuous_update=False),
        })

    def _model(self, step):
        return lru_get(self._models, step, len(self.blocks) + 2,
                       lambda: S.randomise_blocks(self.model, step, seed=self.seed))[0]

    def _views_for(self, step, i: int, target):
        from xaikit.text.views import all_views

        model = self.model if step == "trained" else self._model(step)
        def make():
            spent: dict = {}
            views = all_views(model, self.tokenizer, self.texts[i], target=target, methods=list(self.methods),
                              spent=spent)
            return views, spent

        (views, spent), made = lru_get(self._views, (step, i), 64, make)
        return views, spent, made

    def compute(self, sentence: int, randomised: int | str) -> TextSanityResult:
        original, spent_o, made_o = self._views_for("trained", sentence, None)
        target = next(iter(original.values())).target
        changed, spent_c, made_c = self._views_for(randomised, sentence, target)
        costs = [(who, part, cost, "computed now" if made else "cached: what computing it cost")
                 for who, spent, made in (("trained", spent_o, made_o), ("randomised", spent_c, made_c))
                 for part, cost in spent.items()]
        sims = {m: S.ranking_similarity(original[m], changed[m], self.signed[m]) for m in self.methods}
        if randomised == S.HEAD:
            named = S.head_modules(self.model)
        else:
            named = self.blocks[len(self.blocks) - randomised:] if randomised else []
        return TextSanityResult(self.texts[sentence], randomised, named, original, changed, sims, costs)

    def draw(self, fig: Figure, r: TextSanityResult) -> str:
        axes = fig.subplots(len(self.methods), 1, sharex=True, squeeze=False)[:, 0]
        tokens = list(r.original[self.methods[0]].tokens)
        x = np.arange(len(tokens))
        for ax, m in zip(axes, self.methods, strict=True):
            for scores, colour, dx, label in ((r.original[m].scores, TRAINED, -0.2, "trained"),
                                               (r.changed[m].scores, RANDOMISED, 0.2, "randomised")):
                s = np.asarray(scores, float)
                s = np.abs(s) if self.signed[m] else s
                ax.bar(x + dx, s / max(float(np.abs(s).max()), 1e-30), width=0.4, color=colour, label=label)
            ax.set_title(f"{m}: Spearman {r.similarity[m]:+.2f}", fontsize=9)
            ax.set_yticks([])
        axes[0].legend(fontsize=8, loc="upper right")
        axes[-1].set_xticks(x, tokens, rotation=60, fontsize=8)
        what = "the head" if r.step == S.HEAD else (f"the top {r.step} of {len(self.blocks)} blocks"
                                                    if r.step else "nothing (the trained model)")
        from xaikit.widgets.text_methods import cost_table_html

        shared = [m for m in self.methods if m not in {part for _, part, _, _ in r.costs}]
        table = cost_table_html([(f"{who}: {part}", cost, note) for who, part, cost, note in r.costs],
                                caption="what each column cost, counted by hooks on the encoder blocks"
                                + (f" (the shared pass serves {', '.join(shared)})" if shared else ""))
        return f"randomised: {what}; scores divided by their largest |value|" + table
