"""The attention explorer of notebooks 03 (section 7) and 04: a real model's attention by layer and head on
any sentence, captured with :func:`xaikit.attention.capture.capture_attention`; switching layer, head or
query redraws from a cache with no new forward pass. Vaswani et al. (2017), "Attention Is All You Need".
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from xaikit.plotting import token_heatmap_html
from xaikit.widgets.attention import draw_attention
from xaikit.widgets.base import Panel, dropdown, int_slider, lru_get, text_box

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from xaikit._text_input import Tokenizer

__all__ = ["AttentionExplorer", "ExplorerView"]


@dataclass
class ExplorerView:
    tokens: list
    layer: int
    head: int | str  # an index or "mean"
    query: int
    weights: torch.Tensor  # (T, T) of that layer and head
    row: torch.Tensor  # (T,) where the query token looks
    capture: object  # the AttentionCapture of the sentence


class AttentionExplorer(Panel):
    """A real BERT-family model's attention on any sentence, by layer and head (or the mean of heads).

    ``AttentionExplorer(model, tokenizer, text="The cat drank the milk because it was hungry", layer=0,
    head=0, query="it")``. One forward pass per sentence: switching layer, head or query redraws from the
    cached :class:`~xaikit.attention.capture.AttentionCapture`; ``n_forward`` counts the forward passes. The heatmap
    shows queries as rows; the HTML under it shades the tokens by where the query token looks.
    Used by notebooks 03 (section 7) and 04 (section 2).
    """

    title = "Attention explorer"
    figsize = (7.0, 5.6)
    cache_size = 16

    def __init__(self, model: torch.nn.Module, tokenizer: Tokenizer, text: str = "The cat drank the milk because it was hungry",
                 layer: int = 0, head: int | str = 0, query: int | str | None = None):
        from xaikit.attention.capture import capture_attention
        from xaikit.models import arch

        self.model, self.tokenizer = model, tokenizer
        self.n_forward = 0
        self._cache: OrderedDict[str, object] = OrderedDict()
        self._capture_fn = capture_attention
        n_layers, n_heads = arch.n_layers(model), arch.n_heads(model)
        layer = arch.check_layer(model, layer)
        if isinstance(head, str) and head != "mean":
            raise ValueError(f"head must be an int 0..{n_heads - 1} (one head) or 'mean' (the average over the "
                             f"{n_heads} heads), got {head!r}; for every head at once pass head='mean'")
        if head != "mean":
            from xaikit._validate import check_int

            head = check_int(head, "head", 0, n_heads - 1, hint=f"use 0..{n_heads - 1} or 'mean'")
        cap = self._capture(text)  # validates the text and fills the cache
        q_index = self._query_index(cap.tokens, query)
        controls = {
            "text": text_box("sentence", text),
            "layer": int_slider("layer", layer, 0, n_layers - 1),
            "head": dropdown("head", [*range(n_heads), "mean"], head),
            "query": dropdown("query token", self._query_options(cap.tokens), q_index),
        }
        super().__init__(controls)

    def set(self, **values: object) -> object:
        """:meth:`Panel.set`, with ``query`` (an index or a token, e.g. ``"it"``) checked against the tokens of the
        sentence it comes with: ``set(text="the dog barked", query="dog")`` reads "dog" in the new sentence, and an
        index past its end is an error shown in the panel (nothing changes), not a silent jump to token 0."""
        if "query" not in values:
            return super().set(**values)
        import traceback

        values = dict(values)
        try:
            text = values.pop("text", self.controls["text"].value)
            cap = self._capture(text)
            query = self._query_index(cap.tokens, values.pop("query"))
        except (TypeError, ValueError) as err:
            self._show_error(err, traceback.format_exc())
            return self.result
        self._suspended = True
        try:
            self.controls["text"].value = text
            options = self._query_options(cap.tokens)
            if list(self.controls["query"].options) != options:
                self.controls["query"].options = options
            self.controls["query"].value = query
        finally:
            self._suspended = False
        return super().set(**values) if values else (self.update() or self.result)

    # cache ------------------------------------------------------------------------------------------------
    def _capture(self, text):
        cap, made = lru_get(self._cache, text, self.cache_size,
                            lambda: self._capture_fn(self.model, self.tokenizer, text))
        self.n_forward += made
        return cap

    @staticmethod
    def _query_options(tokens):
        return [(f"{i}: {t}", i) for i, t in enumerate(tokens)]

    @staticmethod
    def _query_index(tokens, query):
        if query is None:
            return 0
        if isinstance(query, str):
            lowered = [t.lower() for t in tokens]
            if query.lower() not in lowered:
                raise ValueError(f"query token {query!r} is not among the tokens {tokens}; pass one of them or "
                                 "an index")
            return lowered.index(query.lower())
        from xaikit._validate import check_int

        return check_int(query, "query", 0, len(tokens) - 1, hint=f"the sentence has {len(tokens)} tokens")

    def compute(self, text: str, layer: int, head: int | str, query: int) -> ExplorerView:
        cap = self._capture(text)
        options = self._query_options(cap.tokens)
        if list(self.controls["query"].options) != options:  # a new sentence: new query choices
            keep = query if query is not None and query < len(options) else 0
            self._suspended = True
            try:
                self.controls["query"].options = options
                self.controls["query"].value = keep
            finally:
                self._suspended = False
            query = keep
        weights = cap.head(layer, head)  # (T, T)
        return ExplorerView(list(cap.tokens), layer, head, query, weights, weights[query], cap)

    def draw(self, fig: Figure, r: ExplorerView) -> str:
        ax = fig.subplots()
        draw_attention(ax, r.weights, r.tokens, title=self._title(r), query=r.query)
        self.animated = [ax.images[0], ax.patches[0], ax.title]
        return self._row_html(r)

    @staticmethod
    def _title(r) -> str:
        return f"layer {r.layer}, {'mean of heads' if r.head == 'mean' else f'head {r.head}'}"

    def _row_html(self, r) -> str:
        return token_heatmap_html(r.tokens, r.row.numpy(), signed=False, vmax=1.0,
                                  title=f"where {r.tokens[r.query]!r} looks ({self._title(r)})")

    def layout_key(self, r: ExplorerView) -> tuple[str, ...]:
        return tuple(r.tokens)  # a new sentence changes the tick labels: full redraw

    def update_artists(self, fig: Figure, r: ExplorerView) -> str:
        image, rect, title = self.animated
        image.set_data(r.weights.numpy())
        rect.set_y(r.query - 0.5)
        title.set_text(self._title(r))
        return self._row_html(r)
