"""Panels for notebook 03 (self-attention from scratch), also used by notebook 04's attention view.

* :class:`PositionalEncodingPanel`: the sinusoidal encoding and the similarity of positions.
* :class:`WorkedExamplePanel`: the lecture's three inputs with a temperature slider showing saturation.
* :class:`SaturationPanel`: random queries and keys of size ``d_k``, with and without ``1/sqrt(d_k)``.
* :class:`MaskPanel`: bidirectional (BERT), causal (GPT) and padding masks on one score matrix.
* :class:`HeadsPanel`: the same input split into 1..8 heads.

and :func:`draw_attention`, the one heatmap of attention weights every panel draws. A real model's attention
is :class:`xaikit.widgets.explorer.AttentionExplorer`.

Vaswani et al. (2017), "Attention Is All You Need". Every number drawn comes from :mod:`xaikit.attention.scratch`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import ipywidgets as widgets
import numpy as np
import torch

from xaikit._fn import to_cpu
from xaikit._validate import bool_flags
from xaikit.attention import positions as PE
from xaikit.attention import saturation as SAT
from xaikit.attention import scratch as A
from xaikit.plotting import DIVERGING, OKABE_ITO, SEQUENTIAL
from xaikit.widgets.base import Panel, checkbox, dropdown, int_slider, log_slider, toggle

if TYPE_CHECKING:
    from collections.abc import Sequence

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage

__all__ = ["PositionalEncodingPanel", "WorkedExamplePanel", "SaturationPanel", "MaskPanel", "HeadsPanel",
           "draw_attention"]


@bool_flags
def draw_attention(ax: Axes, weights: torch.Tensor | np.ndarray, tokens: Sequence[str] | None = None,
                   title: str | None = None, colorbar: bool = True, query: int | None = None,
                   annotate: bool = False) -> AxesImage:
    """A ``(T_q, T_k)`` attention matrix on the sequential map with the fixed range [0, 1], rows = queries,
    with token labels; ``query`` outlines one row; ``annotate`` writes the weights in the cells."""
    w = np.asarray(to_cpu(weights).numpy() if hasattr(weights, "detach") else weights, dtype=float)
    im = ax.imshow(w, cmap=SEQUENTIAL, vmin=0.0, vmax=1.0, aspect="auto")
    if tokens is not None:
        ax.set_xticks(range(w.shape[1]), list(tokens), rotation=90, fontsize=8)
        ax.set_yticks(range(w.shape[0]), list(tokens), fontsize=8)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query")
    if query is not None:
        from matplotlib.patches import Rectangle

        ax.add_patch(Rectangle((-0.5, query - 0.5), w.shape[1], 1, fill=False, edgecolor=OKABE_ITO[1], lw=2))
    if annotate:
        for i in range(w.shape[0]):
            for j in range(w.shape[1]):
                ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=8,
                        color="black" if w[i, j] > 0.6 else "white")
    if title:
        ax.set_title(title, fontsize=10)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return im


# -- positional encoding ---------------------------------------------------------------------------------
@dataclass
class PEResult:
    pe: torch.Tensor  # (P, d_model)
    similarity: torch.Tensor  # (P, P) cosine similarity


class PositionalEncodingPanel(Panel):
    """Sinusoidal positional encoding (heatmap) and the cosine similarity of every pair of positions."""

    title = "Sinusoidal positional encoding"
    figsize = (9.0, 3.8)
    layout = None  # fixed layout placed by hand: constrained layout would double the redraw time

    def __init__(self, d_model: int = 64, positions: int = 50):
        super().__init__({
            "d_model": int_slider("d_model", d_model, 4, 256, step=2),
            "positions": int_slider("positions", positions, 4, 200),
        })

    def compute(self, d_model: int, positions: int) -> PEResult:
        pe = PE.sinusoidal_positional_encoding(positions, d_model)  # (P, d)
        return PEResult(pe, PE.position_similarity(pe))

    def draw(self, fig: Figure, r: PEResult) -> None:
        ax1, ax2 = fig.subplots(1, 2)
        fig.subplots_adjust(left=0.07, right=0.92, bottom=0.14, top=0.9, wspace=0.35)
        im1 = ax1.imshow(r.pe.numpy(), cmap=DIVERGING, vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
        ax1.set_xlabel("feature (even: sin, odd: cos)")
        ax1.set_ylabel("position")
        fig.colorbar(im1, ax=ax1, fraction=0.046, pad=0.04, ticks=[-1, -0.5, 0, 0.5, 1])
        im2 = ax2.imshow(r.similarity.numpy(), cmap=DIVERGING, vmin=-1, vmax=1, interpolation="nearest")
        ax2.set_xlabel("position")
        ax2.set_ylabel("position")
        ax2.set_title("cosine similarity of positions", fontsize=10)
        fig.colorbar(im2, ax=ax2, fraction=0.046, pad=0.04, ticks=[-1, -0.5, 0, 0.5, 1])
        self._images = (im1, im2)
        self._title_pe(r)

    def update_artists(self, fig: Figure, r: PEResult) -> None:
        # same two heatmaps with new data: swap the arrays and the limits, keep the axes and colour bars
        # (cheaper than building the figure again)
        for im, data in zip(self._images, (r.pe, r.similarity), strict=True):
            rows, cols = data.shape
            im.set_data(data.numpy())
            im.set_extent((-0.5, cols - 0.5, rows - 0.5, -0.5))
            im.axes.set_xlim(-0.5, cols - 0.5)
            im.axes.set_ylim(rows - 0.5, -0.5)
        self._title_pe(r)
        return None

    def _title_pe(self, r):
        self._images[0].axes.set_title(f"PE ({r.pe.shape[0]} positions x d_model {r.pe.shape[1]})", fontsize=10)


# -- the worked example ------------------------------------------------------------------------------------
@dataclass
class SaturationResult:
    steps: A.AttentionSteps
    temperature: float
    entropy: torch.Tensor  # (T,) nats per query row
    max_weight: torch.Tensor  # (T,)
    grad_norm: torch.Tensor  # (T,) Frobenius norm of the softmax Jacobian


class WorkedExamplePanel(Panel):
    """The lecture's three inputs ``[1,0,1,0], [0,2,0,2], [1,1,1,1]`` through one attention head.

    ``weights = softmax(Q K^T / temperature)``; the usual choice is ``temperature = sqrt(d_k) = sqrt(3)``.
    A small temperature saturates the softmax: entropy falls to 0, the max weight rises to 1 and the
    softmax gradient (Jacobian norm) vanishes.
    """

    title = "Worked example: three inputs, one head"
    figsize = (9.0, 3.6)

    def __init__(self, temperature: float = math.sqrt(3)):
        self.example = A.worked_example()
        super().__init__({"temperature": log_slider("temperature (sqrt(d_k) = 1.73)", temperature, -1.5, 1.5,
                                                    readout_format=".3g", name="temperature")})

    def compute(self, temperature: float) -> SaturationResult:
        ex = self.example
        steps = A.self_attention(ex["x"], ex["w_q"], ex["w_k"], ex["w_v"], scale=1.0 / temperature)
        w = steps.weights  # (3, 3)
        return SaturationResult(steps, temperature, SAT.row_entropy(w), SAT.max_weight(w), SAT.softmax_jacobian_norm(w))

    names = ["input 1", "input 2", "input 3"]

    @staticmethod
    def _metrics(r):
        # every bar on a 0..1 scale: entropy / ln 3, max weight, Jacobian norm / its value at uniform weights
        # (sqrt(T-1)/T; the norm can exceed that by a few per cent near a two-way tie)
        return [("entropy / ln 3", r.entropy / math.log(3)), ("max weight", r.max_weight),
                ("gradient norm / uniform's", r.grad_norm / (math.sqrt(2) / 3))]

    def draw(self, fig: Figure, r: SaturationResult) -> str:
        ax1, ax2 = fig.subplots(1, 2, width_ratios=[1, 1.3])
        draw_attention(ax1, r.steps.weights, self.names, title=self._title(r), annotate=True)
        x = np.arange(3)
        bars = []
        for i, (label, vals) in enumerate(self._metrics(r)):
            bars += ax2.bar(x + (i - 1) * 0.27, vals.numpy(), width=0.27, color=OKABE_ITO[i], label=label).patches
        ax2.set_xticks(x, self.names)
        ax2.set_ylim(0, 1.12)
        ax2.set_title("saturation per query", fontsize=10)
        ax2.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3, frameon=False)
        self.animated = [ax1.images[0], ax1.title, *ax1.texts, *bars]
        return self._table(r)

    def update_artists(self, fig: Figure, r: SaturationResult) -> str:
        image, title, *rest = self.animated
        texts, bars = rest[:9], rest[9:]
        w = r.steps.weights.numpy()
        image.set_data(w)
        title.set_text(self._title(r))
        for t, value in zip(texts, w.reshape(-1), strict=True):
            t.set_text(f"{value:.2f}")
            t.set_color("black" if value > 0.6 else "white")
        heights = np.concatenate([vals.numpy() for _, vals in self._metrics(r)])
        for bar, height in zip(bars, heights, strict=True):
            bar.set_height(height)
        return self._table(r)

    @staticmethod
    def _title(r):
        return f"softmax(QK^T / {r.temperature:.3g})"

    def _table(self, r):
        return _table_html(["query", "entropy (nats)", "max weight", "gradient norm"],
                           [[n, f"{e:.3f}", f"{m:.3f}", f"{g:.2e}"] for n, e, m, g in
                            zip(self.names, r.entropy.tolist(), r.max_weight.tolist(), r.grad_norm.tolist(),
                                strict=True)])


@dataclass
class DkResult:
    d_k: int
    scaled: bool
    weights: torch.Tensor  # (T,) one query's weights
    curves: dict  # {"scaled"/"raw": {"entropy", "max_weight", "grad_norm"}: list over d_ks}
    d_ks: list


class SaturationPanel(Panel):
    """Why divide by ``sqrt(d_k)``: random ``q, k ~ N(0, I)`` of size ``d_k`` against 10 keys. Unscaled,
    the scores' spread grows like ``sqrt(d_k)``, so the softmax saturates and its gradient vanishes."""

    title = "Why divide by sqrt(d_k)"
    figsize = (9.0, 3.4)
    d_ks = (1, 4, 16, 64, 256, 1024)
    n_keys = 10
    n_queries = 200

    @bool_flags
    def __init__(self, d_k: int = 64, scaled: bool = False, seed: int = 0):
        from xaikit._validate import check_seed

        self.seed = check_seed(seed)
        self.curves = {name: self._metrics(name == "scaled") for name in ("raw", "scaled")}
        super().__init__({"d_k": dropdown("d_k", self.d_ks, d_k), "scaled": checkbox("divide by sqrt(d_k)", scaled)})

    def _weights(self, d_k, scaled):
        g = torch.Generator().manual_seed(self.seed + d_k)
        q = torch.randn(self.n_queries, d_k, generator=g, dtype=torch.float64)  # (N, d_k)
        k = torch.randn(self.n_keys, d_k, generator=g, dtype=torch.float64)  # (T, d_k)
        v = torch.zeros(self.n_keys, 1, dtype=torch.float64)  # (T, 1), unused
        _, w = A.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(d_k) if scaled else 1.0)  # (N, T)
        return w

    def _metrics(self, scaled):
        out = {"entropy": [], "max_weight": [], "grad_norm": []}
        for d in self.d_ks:
            w = self._weights(d, scaled)
            out["entropy"].append(float(SAT.row_entropy(w).mean()))
            out["max_weight"].append(float(SAT.max_weight(w).mean()))
            out["grad_norm"].append(float(SAT.softmax_jacobian_norm(w).mean()))
        return out

    def compute(self, d_k: int, scaled) -> DkResult:
        return DkResult(d_k, scaled, self._weights(d_k, scaled)[0], self.curves, list(self.d_ks))

    metrics = ("entropy", "max_weight", "grad_norm")

    def draw(self, fig: Figure, r: DkResult) -> None:
        ax1, ax2 = fig.subplots(1, 2)
        bars = ax1.bar(range(self.n_keys), r.weights.numpy(), color=OKABE_ITO[0]).patches
        ax1.set_ylim(0, 1)
        ax1.set_xlabel("key")
        ax1.set_ylabel("weight")
        ax1.set_title(self._title(r), fontsize=10)
        markers = []
        for i, metric in enumerate(self.metrics):
            for name, style in (("raw", "-"), ("scaled", "--")):
                ax2.plot(r.d_ks, r.curves[name][metric], style, color=OKABE_ITO[i], marker="o", ms=3,
                         label=f"{metric} ({name})")
            markers += ax2.plot([r.d_k], [self._current(r, metric)], "o", color=OKABE_ITO[i], ms=9, mfc="none")
        ax2.set_xscale("log", base=2)
        ax2.set_xlabel("d_k")
        ax2.set_title(f"mean over {self.n_queries} queries ({self.n_keys} keys); circles: now", fontsize=10)
        ax2.legend(fontsize=7, ncol=2)
        self.animated = [ax1.title, *bars, *markers]

    def update_artists(self, fig: Figure, r: DkResult) -> None:
        title, *rest = self.animated
        bars, markers = rest[:self.n_keys], rest[self.n_keys:]
        title.set_text(self._title(r))
        for bar, height in zip(bars, r.weights.tolist(), strict=True):
            bar.set_height(height)
        for marker, metric in zip(markers, self.metrics, strict=True):
            marker.set_data([r.d_k], [self._current(r, metric)])

    @staticmethod
    def _current(r, metric):
        return r.curves["scaled" if r.scaled else "raw"][metric][r.d_ks.index(r.d_k)]

    @staticmethod
    def _title(r):
        return f"one query, d_k = {r.d_k}, {'scaled' if r.scaled else 'unscaled'}"


# -- masks -----------------------------------------------------------------------------------------------
@dataclass
class MaskResult:
    kind: str
    tokens: list
    scores: torch.Tensor  # (T, T) scaled scores, -inf where masked
    weights: torch.Tensor  # (T, T)
    mask: torch.Tensor | None  # (T, T) bool, True = may attend


class MaskPanel(Panel):
    """One score matrix under the three masks: none (BERT, bidirectional), causal (GPT, no peeking at
    later tokens), padding (no attention to ``[PAD]``)."""

    title = "Masks"
    figsize = (9.0, 3.8)
    tokens = ["[CLS]", "the", "cat", "drank", "milk", "[SEP]", "[PAD]", "[PAD]"]

    def __init__(self, mask: str = "none", seed: int = 0, d_k: int = 8):
        from xaikit._validate import check_int, check_seed

        d_k = check_int(d_k, "d_k", 1, hint="the size of each query and key vector, e.g. d_k=8")
        g = torch.Generator().manual_seed(check_seed(seed))
        T = len(self.tokens)
        self.q = torch.randn(T, d_k, generator=g)  # (T, d_k)
        self.k = torch.randn(T, d_k, generator=g)  # (T, d_k)
        self.v = torch.randn(T, d_k, generator=g)  # (T, d_k)
        self.attention_mask = torch.tensor([0 if t == "[PAD]" else 1 for t in self.tokens])  # (T,)
        self.score_limit = float((self.q @ self.k.T).abs().max()) / math.sqrt(d_k)  # fixed colour range
        super().__init__({"mask": toggle("mask", ["none", "causal", "padding"], mask)})

    def compute(self, mask: str) -> MaskResult:
        T = len(self.tokens)
        if mask == "none":
            m = None
        elif mask == "causal":
            m = A.causal_mask(T)  # (T, T)
        else:
            m = A.padding_mask(self.attention_mask)[0].expand(T, T)  # (T, T)
        steps = A.self_attention(torch.eye(T), self.q, self.k, self.v, mask=m)  # x = I: Q, K, V as given
        return MaskResult(mask, list(self.tokens), steps.scores, steps.weights, m)

    def draw(self, fig: Figure, r: MaskResult) -> None:
        import matplotlib as mpl

        ax1, ax2 = fig.subplots(1, 2)
        cmap = mpl.colormaps[DIVERGING].with_extremes(bad="0.55")  # masked (-inf) cells in grey
        lim = self.score_limit
        im = ax1.imshow(self._scores(r), cmap=cmap, vmin=-lim, vmax=lim)
        ax1.set_xticks(range(len(r.tokens)), r.tokens, rotation=90, fontsize=8)
        ax1.set_yticks(range(len(r.tokens)), r.tokens, fontsize=8)
        ax1.set_title(self._title(r), fontsize=10)
        fig.colorbar(im, ax=ax1, fraction=0.046, pad=0.04)
        draw_attention(ax2, r.weights, r.tokens, title="weights (rows sum to 1)")
        self.animated = [im, ax1.title, ax2.images[0]]

    def update_artists(self, fig: Figure, r: MaskResult) -> None:
        scores, title, weights = self.animated
        scores.set_data(self._scores(r))
        title.set_text(self._title(r))
        weights.set_data(r.weights.numpy())

    @staticmethod
    def _scores(r):
        s = r.scores.numpy().copy()
        s[~np.isfinite(s)] = np.nan  # drawn in the colour map's "bad" grey
        return s

    @staticmethod
    def _title(r):
        return f"scores QK^T/sqrt(d_k), mask: {r.kind} (grey = -inf)"


# -- heads -----------------------------------------------------------------------------------------------
@dataclass
class HeadsResult:
    n_heads: int
    tokens: list
    out: torch.Tensor  # (T, d_model)
    weights: torch.Tensor  # (n_heads, T, T)
    max_diff_vs_torch: float  # against nn.MultiheadAttention with the same weights


class HeadsPanel(Panel):
    """One input, ``d_model = 8``, split into 1, 2, 4 or 8 heads: each head attends on its own
    ``d_model / n_heads`` features (and is checked against ``torch.nn.MultiheadAttention``)."""

    title = "Multi-head attention"
    figsize = (9.0, 2.8)
    layout = None  # placed by hand, see PositionalEncodingPanel
    d_model = 8
    choices = (1, 2, 4, 8)  # the head counts that divide d_model
    tokens = ["the", "cat", "drank", "the", "milk"]

    def __init__(self, n_heads: int = 2, seed: int = 0):
        if isinstance(n_heads, bool) or n_heads not in self.choices:
            raise ValueError(f"n_heads must be one of {', '.join(map(str, self.choices))} (the {self.d_model} "
                             f"features split into equal heads), got {n_heads!r}")
        g = torch.Generator().manual_seed(seed)
        C, T = self.d_model, len(self.tokens)
        self.x = torch.randn(T, C, generator=g)  # (T, C)
        self.w = {n: torch.randn(C, C, generator=g) / math.sqrt(C) * 2 for n in ("w_q", "w_k", "w_v", "w_o")}
        control = widgets.SelectionSlider(options=list(self.choices), value=n_heads, description="heads",
                                          continuous_update=False, style={"description_width": "initial"})
        super().__init__({"n_heads": control})

    def compute(self, n_heads: int) -> HeadsResult:
        out, weights = A.multi_head_attention(self.x, **self.w, n_heads=n_heads)  # (T, C), (nh, T, T)
        ref = torch.nn.MultiheadAttention(self.d_model, n_heads, bias=False, batch_first=True)
        with torch.no_grad():
            ref.in_proj_weight.copy_(torch.cat([self.w["w_q"].T, self.w["w_k"].T, self.w["w_v"].T]))
            ref.out_proj.weight.copy_(self.w["w_o"].T)
            ref_out, _ = ref(self.x[None], self.x[None], self.x[None])
        diff = float((ref_out[0] - out).abs().max())
        return HeadsResult(n_heads, list(self.tokens), out, weights, diff)

    def draw(self, fig: Figure, r: HeadsResult) -> str:
        axes = np.atleast_1d(fig.subplots(1, r.n_heads))
        fig.subplots_adjust(left=0.08, right=0.99, bottom=0.3 if r.n_heads <= 4 else 0.05, top=0.88, wspace=0.35)
        for h, ax in enumerate(axes):
            draw_attention(ax, r.weights[h], r.tokens if r.n_heads <= 4 else None, colorbar=False,
                           title=f"head {h} (d_head = {self.d_model // r.n_heads})")
            if h:
                ax.set_ylabel("")
            if r.n_heads > 4:
                ax.set_xticks([])
                ax.set_yticks([])
        return (f"<small>max |difference| from torch.nn.MultiheadAttention with the same weights: "
                f"{r.max_diff_vs_torch:.1e}</small>")


def _table_html(header, rows) -> str:
    import html

    head = "".join(f"<th style='padding:2px 8px'>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td style='padding:2px 8px'>{html.escape(str(c))}</td>" for c in row)
                   + "</tr>" for row in rows)
    return f"<table class='xk-table'><tr>{head}</tr>{body}</table>"

