"""The lecture diagrams of the text notebooks: scaled dot-product attention step by step and BERT's encoder
block (notebook 03), Grad-SAM's data flow (notebook 04). See :mod:`xaikit.diagrams`."""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import Normalize
from matplotlib.patches import Circle, FancyBboxPatch

from xaikit.diagrams.draw import (
    BLUE,
    FONT,
    GREEN,
    GREY,
    ORANGE,
    PINK,
    SKY,
    Diagram,
    _arrow,
    _box,
    _canvas,
    _inset,
    _mappable,
    _matrix,
)
from xaikit.plotting import DIVERGING, SEQUENTIAL, signed_bars, symmetric_limit

__all__ = ["attention_steps", "gradsam_flow", "transformer_block"]


# -- 1. attention step by step (notebook 03, section 2) --------------------------------------------------
def attention_steps() -> Diagram:
    """Scaled dot-product attention on the lecture's worked example (notebook 03, section 2), step by step:
    ``Q = X W_Q``, ``K = X W_K``, ``V = X W_V``, ``S = Q K^T / sqrt(d_k)``, ``A = softmax(S)`` row by row and
    ``out = A V`` (Vaswani et al. 2017). The inputs ``[1,0,1,0]``, ``[0,2,0,2]``, ``[1,1,1,1]`` and the weights
    come from :func:`xaikit.attention.scratch.worked_example`, every other number from
    :func:`xaikit.attention.scratch.self_attention`; each number's text has the gid ``"Q[i,j]"``, ``"S[i,j]"``,
    ``"A[i,j]"``, ``"out[i,j]"`` and so on."""
    from xaikit.attention import scratch

    ex = scratch.worked_example()
    steps = scratch.self_attention(ex["x"], ex["w_q"], ex["w_k"], ex["w_v"])
    as_np = lambda t: t.detach().double().cpu().numpy()  # noqa: E731
    x, q, k, v = as_np(steps.x), as_np(steps.q), as_np(steps.k), as_np(steps.v)
    scores, weights, out = as_np(steps.scores), as_np(steps.weights), as_np(steps.out)
    d_k = q.shape[1]
    c = 0.42  # inches per cell
    fig, ax = _canvas(12.9, 7.2)
    ax.text(0.15, 7.05, "Self-attention step by step: the lecture's worked example (three inputs, $d_k$ = "
            f"{d_k})", fontsize=FONT + 2, weight="bold", va="top")

    # X on the left, the three weight matrices and their products stacked
    top_x = 4.3
    bx = _matrix(ax, x, 0.9, top_x, c, "X", title="$X$ (inputs)", row_labels=[f"x{i + 1}" for i in range(3)])
    rows_top = (6.2, 4.05, 1.9)  # top of W_Q, W_K, W_V
    product = {}
    for (name, w, result, color), top in zip((("Q", ex["w_q"], q, BLUE), ("K", ex["w_k"], k, ORANGE),
                                              ("V", ex["w_v"], v, GREEN)), rows_top, strict=True):
        bw = _matrix(ax, as_np(w), 3.35, top, c, f"W_{name}", color=color, title=f"$W_{name}$")
        _arrow(ax, (bx[2] + 0.05, (bx[1] + bx[3]) / 2), (bw[0] - 0.08, (bw[1] + bw[3]) / 2), color=color)
        ax.text(bw[2] + 0.2, (bw[1] + bw[3]) / 2, "=", fontsize=FONT + 4, ha="center", va="center")
        top_r = top - c / 2  # centred on the 4-row weight matrix
        product[name] = _matrix(ax, result, bw[2] + 0.72, top_r, c, name, color=color,
                                title=f"${name} = XW_{name}$", row_labels=[f"{name.lower()}{i + 1}" for i in range(3)])
    ax.text(2.0, 1.3, "$X W$: each input row times\nthe weight matrix", fontsize=FONT - 1, ha="center",
            va="top", color="0.25")

    # S = Q K^T / sqrt(d_k), A = softmax(S), out = A V
    keys = [f"k{j + 1}" for j in range(3)]
    queries = [f"q{i + 1}" for i in range(3)]
    top_s = 5.3
    bs = _matrix(ax, scores, 7.9, top_s, c, "S", title=r"$S = QK^\top/\sqrt{d_k}$", row_labels=queries,
                 col_labels=keys)
    bq, bk, bv = product["Q"], product["K"], product["V"]
    _arrow(ax, (bq[2] + 0.05, (bq[1] + bq[3]) / 2), (bs[0] - 0.3, (bs[1] + bs[3]) / 2 + 0.15), color=BLUE)
    _arrow(ax, (bk[2] + 0.05, (bk[1] + bk[3]) / 2), (bs[0] - 0.3, (bs[1] + bs[3]) / 2 - 0.15), color=ORANGE)
    ax.text((bs[0] + bs[2]) / 2, bs[1] - 0.32, f"query $\\cdot$ key, divided by $\\sqrt{{{d_k}}}$",
            fontsize=FONT - 1, ha="center", va="top", color="0.25")

    cmap, norm = colormaps[SEQUENTIAL], Normalize(0.0, 1.0)
    ba = _matrix(ax, weights, 10.5, top_s, c, "A", cmap=cmap, norm=norm, title=r"$A = \mathrm{softmax}(S)$",
                 row_labels=queries, col_labels=keys)
    _arrow(ax, (bs[2] + 0.1, (bs[1] + bs[3]) / 2), (ba[0] - 0.35, (ba[1] + ba[3]) / 2), color=GREY)
    ax.text(ba[2] + 0.1, ba[3] + 0.1, r"$\Sigma$", fontsize=FONT, ha="left", va="bottom")
    for i, total in enumerate(weights.sum(axis=1)):
        ax.text(ba[2] + 0.1, ba[3] - (i + 0.5) * c, f"{total:.2f}", fontsize=FONT - 2, ha="left", va="center",
                color="0.3", gid=f"rowsum[{i}]")
    ax.text((ba[0] + ba[2]) / 2, ba[1] - 0.32, "each row: weights over\nthe keys, summing to 1",
            fontsize=FONT - 1, ha="center", va="top", color="0.25")

    top_o = 2.2
    bo = _matrix(ax, out, 10.5, top_o, c, "out", color=PINK, title=r"$\mathrm{out} = AV$",
                 row_labels=[f"out{i + 1}" for i in range(3)])
    _arrow(ax, ((ba[0] + ba[2]) / 2, ba[1] - 0.95), ((bo[0] + bo[2]) / 2, bo[3] + 0.42), color=GREY)
    _arrow(ax, (bv[2] + 0.05, (bv[1] + bv[3]) / 2), (bo[0] - 0.55, (bo[1] + bo[3]) / 2), color=GREEN)
    ax.text((bo[0] + bo[2]) / 2, bo[1] - 0.12,
            f"out1 = {weights[0, 0]:.2f} v1 + {weights[0, 1]:.2f} v2 + {weights[0, 2]:.2f} v3",
            fontsize=FONT - 1, ha="center", va="top", color="0.15", gid="out1-sum")
    colorbar = _inset(fig, 12.45, 4.05, 0.12, 1.25)
    fig.colorbar(_mappable(cmap, norm), cax=colorbar)
    colorbar.tick_params(labelsize=FONT - 3)
    colorbar.set_title("A", fontsize=FONT - 2)
    return fig


# -- 2. Grad-SAM's data flow (notebook 04, section 3) ------------------------------------------------------
GRADSAM_TOKENS = ("[CLS]", "you", "look", "extremely", "confused", "[SEP]")


def _gradsam_example(n_layers: int = 2, n_heads: int = 2, seed: int = 0):
    """A small random stand-in for one sentence: attention ``A`` (rows are softmax distributions) and the
    gradient ``G = dS/dA``, both ``(L, M, N, N)``, over :data:`GRADSAM_TOKENS`."""
    rng = np.random.default_rng(seed)
    n = len(GRADSAM_TOKENS)
    logits = rng.normal(0.0, 1.6, size=(n_layers, n_heads, n, n))
    a = np.exp(logits - logits.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)  # each row a distribution over the keys
    g = rng.normal(0.0, 1.0, size=a.shape)
    return a, g


def gradsam_flow() -> Diagram:
    """Grad-SAM's data flow (Barkan et al. 2021; notebook 04, section 3) on a small random example with
    :data:`GRADSAM_TOKENS`, two layers and two heads: the attention maps ``A^{lm}`` of the forward pass, the
    gradients ``dS/dA^{lm}`` of the class score from one backward pass, their ReLU, the elementwise product
    ``A^{lm} o ReLU(dS/dA^{lm})``, and its sum over layers, heads and along each row (divided by ``L M N``):
    one score per token.

    Each heatmap's axes has the gid ``"A l m"``, ``"G l m"``, ``"ReLU l m"`` or ``"H l m"``; the token scores
    are the bars of the axes with gid ``"scores"``."""
    a, g = _gradsam_example()
    relu = np.maximum(g, 0.0)
    h = a * relu
    n_layers, n_heads, n, _ = a.shape
    scores = h.sum(axis=(0, 1, 3)) / (n_layers * n_heads * n)  # (N,): sum over l, m and along each row j

    fig, ax = _canvas(13.0, 6.5)
    ax.text(0.15, 6.38, "Grad-SAM (Barkan et al. 2021): attention weighted by the positive part of its gradient",
            fontsize=FONT + 2, weight="bold", va="top")
    ax.text(0.15, 5.85, r"$r_i = \frac{1}{LMN}\,\sum_{l,m,j}\,"
            r"\left[A^{lm} \circ \mathrm{ReLU}\left(\partial S / \partial A^{lm}\right)\right]_{ij}$"
            f"     (a random example: L = {n_layers} layers, M = {n_heads} heads, N = {n} tokens)",
            fontsize=FONT + 1, va="top")

    g_lim = symmetric_limit(g)
    h_lim = symmetric_limit(h)
    seq, div = colormaps[SEQUENTIAL], colormaps[DIVERGING]

    def grid(values, x, y, name, cmap, vmin, vmax, title):
        """The L x M maps of one quantity as a grid of small heatmaps, lower left corner at (x, y)."""
        size, gap = 0.92, 0.1
        for layer in range(n_layers):
            for head in range(n_heads):
                cell = _inset(fig, x + head * (size + gap), y + (n_layers - 1 - layer) * (size + gap), size, size)
                cell.imshow(values[layer, head], cmap=cmap, vmin=vmin, vmax=vmax)
                cell.set_xticks([])
                cell.set_yticks([])
                cell.set_gid(f"{name} {layer} {head}")
                if head == 0:
                    cell.set_ylabel(f"l = {layer + 1}", fontsize=FONT - 2)
                if layer == 0:
                    cell.set_title(f"m = {head + 1}", fontsize=FONT - 2, pad=2)
        width = n_heads * size + (n_heads - 1) * gap
        height = n_layers * size + (n_layers - 1) * gap
        ax.text(x + width / 2, y + height + 0.3, title, ha="center", va="bottom", fontsize=FONT)
        return x, y, x + width, y + height

    ba = grid(a, 0.55, 2.85, "A", seq, 0.0, 1.0, "$A^{lm}$: attention\n(forward pass)")
    bg = grid(g, 0.55, 0.2, "G", div, -g_lim, g_lim, "")
    ax.text((bg[0] + bg[2]) / 2, bg[3] + 0.3, r"$\partial S / \partial A^{lm}$: gradient of the class score",
            ha="center", va="bottom", fontsize=FONT)
    br = grid(relu, 3.75, 0.2, "ReLU", div, -g_lim, g_lim, "")
    ax.text((br[0] + br[2]) / 2, br[3] + 0.3, "ReLU$(\\partial S / \\partial A^{lm})$:\nwhat pushes the score up",
            ha="center", va="bottom", fontsize=FONT)
    _arrow(ax, (bg[2] + 0.1, (bg[1] + bg[3]) / 2), (br[0] - 0.35, (br[1] + br[3]) / 2), "ReLU", side="above")

    product = (6.45, 2.72)
    ax.add_patch(Circle(product, 0.22, facecolor="white", edgecolor=GREY, lw=1.5))
    ax.text(*product, r"$\circ$", ha="center", va="center", fontsize=FONT + 14)
    _arrow(ax, (ba[2] + 0.1, (ba[1] + ba[3]) / 2), (product[0] - 0.24, product[1] + 0.1), rad=-0.15)
    _arrow(ax, (br[2] + 0.1, (br[1] + br[3]) / 2), (product[0] - 0.15, product[1] - 0.2), rad=0.15)
    ax.text(product[0] + 0.1, product[1] + 0.33, "elementwise\nproduct", ha="center", va="bottom", fontsize=FONT - 2,
            color="0.3")
    bh = grid(h, 7.2, 1.72, "H", div, -h_lim, h_lim, r"$A^{lm} \circ \mathrm{ReLU}(\partial S/\partial A^{lm})$")
    _arrow(ax, (product[0] + 0.24, product[1]), (bh[0] - 0.35, product[1]))

    bars = _inset(fig, 11.3, 1.0, 1.5, 3.2)
    signed_bars(bars, GRADSAM_TOKENS, scores, horizontal=True)
    bars.set_gid("scores")
    bars.tick_params(labelsize=FONT - 1)
    bars.set_xticks([])
    bars.spines[["top", "right", "bottom"]].set_visible(False)
    for y, s in enumerate(scores):
        bars.text(s, y, f" {s:.3f}", va="center", ha="left", fontsize=FONT - 3)
    bars.set_xlim(0, scores.max() * 1.6)
    bars.set_title("$r_i$: one score per token", fontsize=FONT)
    _arrow(ax, (bh[2] + 0.1, (bh[1] + bh[3]) / 2), (10.3, (bh[1] + bh[3]) / 2), "")
    ax.text(9.76, (bh[1] + bh[3]) / 2 + 0.12, r"$\frac{1}{LMN}\sum_{l,m,j}$", ha="center", va="bottom",
            fontsize=FONT + 1)
    ax.text(9.76, (bh[1] + bh[3]) / 2 - 0.12, "over layers,\nheads and along\neach row $i$", ha="center", va="top",
            fontsize=FONT - 2, color="0.3")
    ax.text(9.2, 0.35, "each small map: rows = query token $i$, columns = key token $j$; blue negative, red "
            "positive", ha="center", va="bottom", fontsize=FONT - 2, color="0.3")
    return fig


# -- 4. the transformer block (notebook 03, section 8) -----------------------------------------------------
def transformer_block() -> Diagram:
    """BERT's encoder block (Devlin et al. 2019), the post-LayerNorm block of Vaswani et al. (2017; notebook 03,
    section 8): token embeddings plus position embeddings enter; multi-head self-attention, a residual sum
    and LayerNorm, then a feed-forward network on each token, a residual sum and LayerNorm. The block is
    stacked L times. Its boxes' texts have the gids ``"embed"``, ``"attention"``, ``"add-norm-1"``, ``"ffn"``,
    ``"add-norm-2"``."""
    fig, ax = _canvas(12.0, 7.6)
    ax.text(0.15, 7.48, "A transformer encoder block, post-LayerNorm as in BERT", fontsize=FONT + 2,
            weight="bold", va="top")
    cx, w = 3.2, 3.0  # the column of boxes: centre and width
    left = cx - w / 2

    # input: tokens, their embeddings and positions
    tokens = ("[CLS]", "a", "great", "film", "[SEP]")
    for i, tok in enumerate(tokens):
        ax.text(left + 0.3 + i * 0.6, 0.3, tok, ha="center", va="center", fontsize=FONT - 1)
    _box(ax, left, 0.6, w, 0.55, "token embedding + position embedding", color=SKY, fill=0.3, size=FONT - 1,
         gid="embed")
    _arrow(ax, (cx, 1.15), (cx, 1.85))
    ax.text(cx + 0.12, 1.5, "$H$: one vector per token ($T \\times d$)", ha="left", va="center", fontsize=FONT - 1)

    # the block's frame
    ax.add_patch(FancyBboxPatch((left - 0.55, 1.95), w + 1.45, 4.75, boxstyle="round,pad=0,rounding_size=0.15",
                                facecolor="0.96", edgecolor="0.55", lw=1.4, ls="--"))
    ax.text(left - 0.7, 4.3, "$\\times L$", ha="right", va="center", fontsize=FONT + 4)
    ax.text(left - 0.7, 3.9, "(BERT-base:\n12 blocks)", ha="right", va="top", fontsize=FONT - 2, color="0.3")

    boxes = [  # (y, height, text, colour, gid)
        (2.55, 0.75, "multi-head\nself-attention", ORANGE, "attention"),
        (3.65, 0.5, "add & LayerNorm", GREY, "add-norm-1"),
        (4.55, 0.75, "feed-forward\n$d \\to 4d \\to d$, GELU", GREEN, "ffn"),
        (5.65, 0.5, "add & LayerNorm", GREY, "add-norm-2"),
    ]
    for y, h, text, color, gid in boxes:
        _box(ax, left, y, w, h, text, color=color, fill=0.2 if color != GREY else 0.08, size=FONT, gid=gid)
    # the main path
    _arrow(ax, (cx, 1.85), (cx, 2.55))
    for (y0, h0, *_), (y1, *_) in zip(boxes[:-1], boxes[1:], strict=True):
        _arrow(ax, (cx, y0 + h0), (cx, y1))
    # Q, K, V: three copies of H enter attention
    for dx, name in ((-0.8, "Q"), (0.0, "K"), (0.8, "V")):
        ax.text(cx + dx + 0.12, 2.27, f"${name}$", ha="left", va="center", fontsize=FONT - 1, color=ORANGE)
    ax.plot([cx - 0.8, cx + 0.8], [2.1, 2.1], color=GREY, lw=1.5)
    for dx in (-0.8, 0.8):
        _arrow(ax, (cx + dx, 2.1), (cx + dx, 2.55))
    # the residual connections: around each sublayer into its add & LayerNorm
    rx = left + w + 0.35
    for start, end in ((2.0, 3.9), (4.32, 5.9)):
        ax.plot([cx, rx, rx], [start, start, end], color=BLUE, lw=2.2)
        _arrow(ax, (rx, end), (left + w, end), color=BLUE, lw=2.2)
    ax.text(rx + 0.05, 3.0, "residual", ha="left", va="center", fontsize=FONT - 1, color=BLUE, rotation=90)
    ax.text(rx + 0.05, 5.05, "residual", ha="left", va="center", fontsize=FONT - 1, color=BLUE, rotation=90)
    ax.plot([cx], [2.0], "o", color=BLUE, ms=5)
    ax.plot([cx], [4.32], "o", color=BLUE, ms=5)
    ax.text(cx - 0.12, 4.33, "$U$", ha="right", va="center", fontsize=FONT)
    _arrow(ax, (cx, 6.15), (cx, 7.0))
    ax.text(cx + 0.12, 6.85, "$H'$ ($T \\times d$): to the next block", ha="left", va="center", fontsize=FONT - 1)

    # what each piece does
    nx = 6.6
    notes = [
        (2.92, "Attention: the only step that mixes tokens.\n"
               "Each head: softmax$(QK^\\top/\\sqrt{d_k})\\,V$; the heads\nside by side, times $W_O$."),
        (3.9, "$U = \\mathrm{LayerNorm}(H + \\mathrm{MultiHead}(H))$:\nthe sum first, then the norm (post-LN)."),
        (4.92, "Feed-forward: each token on its own,\n$\\mathrm{GELU}(U W_1 + b_1) W_2 + b_2$."),
        (5.9, "$H' = \\mathrm{LayerNorm}(U + \\mathrm{FFN}(U))$"),
    ]
    for y, text in notes:
        ax.text(nx, y, text, ha="left", va="center", fontsize=FONT - 0.5)
        ax.plot([rx + 0.35, nx - 0.12], [y, y], color="0.8", lw=1, ls=":")
    ax.text(nx, 1.2, "LayerNorm: each token's vector to mean 0 and variance 1\nover its $d$ features, then a learned "
            "gain and bias.\nThe residual stream carries each token's own vector\nthrough the block; the "
            "sublayers add to it.", ha="left", va="center", fontsize=FONT - 1, color="0.25")
    return fig
