"""Attention is not only a weight (notebook 03, section 9): a head's weights ``alpha`` beside the norms of
what it moves, ``||alpha_ij f(x_j)||`` (Kobayashi et al. 2020, EMNLP). Every number drawn comes from
:func:`xaikit.attention.norms.attention_norms`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from xaikit.plotting import token_heatmap_html
from xaikit.widgets.attention import draw_attention
from xaikit.widgets.base import Panel, int_slider, lru_get, text_box

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from torch import nn

    from xaikit._text_input import Tokenizer

__all__ = ["AttentionNormsPanel", "NormsView"]


@dataclass
class NormsView:
    """One head of one layer, on the CPU."""

    tokens: list[str]
    layer: int
    head: int
    weights: torch.Tensor  # (T, T) alpha_ij, rows sum to 1
    norms: torch.Tensor  # (T, T) ||alpha_ij f(x_j)||
    norm_share: torch.Tensor  # (T, T) norms divided by their row sum: rows sum to 1, like alpha
    f_norms: torch.Tensor  # (T,) ||f(x_j)|| of every key token
    special_weight: float  # share of the weight on [CLS]/[SEP], averaged over queries
    special_norm: float  # share of the norm on [CLS]/[SEP], averaged over queries
    norms_result: object  # the AttentionNorms of the sentence (every layer and head)


class AttentionNormsPanel(Panel):
    """A real BERT-family model's attention weights beside the norms of the weighted vectors it moves.

    ``AttentionNormsPanel(model, tokenizer, text=..., layer=0, head=0)``. Left: ``alpha_ij`` (row = query).
    Right: ``||alpha_ij f(x_j)||`` with ``f(x) = (x W_V + b_V) W_O^h``, divided by its row sum so that both
    maps share the 0-1 scale and a row shows *where the moved vector comes from*. Under the figure,
    ``||f(x_j)||`` per token and the share of weight and of norm that go to ``[CLS]``/``[SEP]``. One
    forward pass per sentence (``n_forward`` counts them); layer and head redraw from the cache.
    Kobayashi, Kuribayashi, Yokoi and Inui (2020), "Attention is Not Only a Weight".
    """

    title = "Attention weights vs what is moved (Kobayashi et al. 2020)"
    figsize = (10.0, 4.6)
    layout = None  # axes placed by hand: a constrained layout would cost tens of ms per redraw
    cache_size = 16

    def __init__(self, model: nn.Module, tokenizer: Tokenizer, text: str = "The cat drank the milk because it was hungry",
                 layer: int = 0, head: int = 0):
        from xaikit._validate import check_int
        from xaikit.attention.norms import attention_norms
        from xaikit.models import arch

        self.model, self.tokenizer = model, tokenizer
        self.n_forward = 0
        self._cache: OrderedDict[str, object] = OrderedDict()
        self._norms_fn = attention_norms
        n_layers, n_heads = arch.n_layers(model), arch.n_heads(model)
        layer = arch.check_layer(model, layer)
        head = check_int(head, "head", 0, n_heads - 1, hint=f"the model has {n_heads} heads: use 0..{n_heads - 1}")
        self._norms(text)  # validates the text and fills the cache
        super().__init__({
            "text": text_box("sentence", text),
            "layer": int_slider("layer", layer, 0, n_layers - 1),
            "head": int_slider("head", head, 0, n_heads - 1),
        })

    def _norms(self, text):
        r, made = lru_get(self._cache, text, self.cache_size,
                          lambda: self._norms_fn(self.model, self.tokenizer, text))
        self.n_forward += made
        return r

    def compute(self, text: str, layer: int, head: int) -> NormsView:
        r = self._norms(text)
        weights, norms = r.head(layer, head)  # (T, T) each
        share = norms / norms.sum(-1, keepdim=True).clamp_min(1e-30)  # (T, T)
        special = r.special
        return NormsView(list(r.tokens), layer, head, weights, norms, share, r.f_norms[layer, head],
                         float(weights[:, special].sum(-1).mean()), float(share[:, special].sum(-1).mean()), r)

    def draw(self, fig: Figure, v: NormsView) -> str:
        ax1, ax2 = fig.subplots(1, 2)
        fig.subplots_adjust(left=0.1, right=0.95, bottom=0.2, top=0.9, wspace=0.45)
        draw_attention(ax1, v.weights, v.tokens, title=self._titles(v)[0])
        draw_attention(ax2, v.norm_share, v.tokens, title=self._titles(v)[1])
        self.animated = [ax1.images[0], ax2.images[0], ax1.title, ax2.title]
        return self._html(v)

    def layout_key(self, v: NormsView) -> tuple[str, ...]:
        return tuple(v.tokens)  # a new sentence changes the tick labels: full redraw

    def update_artists(self, fig: Figure, v: NormsView) -> str:
        im1, im2, t1, t2 = self.animated
        im1.set_data(v.weights.numpy())
        im2.set_data(v.norm_share.numpy())
        t1.set_text(self._titles(v)[0])
        t2.set_text(self._titles(v)[1])
        return self._html(v)

    @staticmethod
    def _titles(v):
        where = f"layer {v.layer}, head {v.head}"
        return f"weights α ({where})", f"||α f(x)|| / row sum ({where})"

    @staticmethod
    def _html(v):
        shares = (f"<div class='xk-norm-shares'>[CLS]/[SEP] get <b>{v.special_weight:.0%}</b> of the weight and "
                  f"<b>{v.special_norm:.0%}</b> of the norm (averaged over queries)</div>")
        return shares + token_heatmap_html(v.tokens, v.f_norms.numpy(), signed=False,
                                           title=f"||f(x_j)|| of each token in layer {v.layer}, head {v.head} "
                                                 "(what a weight of 1 on it would move)")
