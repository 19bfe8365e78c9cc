"""Static diagrams for the lecture notebooks: pictures of what the code computes, drawn with matplotlib.

* :func:`attention_steps`: scaled dot-product attention step by step on the lecture's three-input worked
  example (notebook 03, section 2), every number computed by :mod:`xaikit.attention.scratch`.
* :func:`transformer_block`: BERT's post-LayerNorm encoder block (Devlin et al. 2019; Vaswani et al. 2017;
  notebook 03, section 8).
* :func:`gradsam_flow`: Grad-SAM's data flow (Barkan et al. 2021, "Grad-SAM: Explaining Transformers via
  Gradient Self-Attention Maps"; notebook 04, section 3) on a small random example.
* :func:`vit_patches`: a Vision Transformer's input (Dosovitskiy et al. 2021; notebook 05, section 1): the
  image cut into patches, a [CLS] token prepended, position embeddings added.
* :func:`cav_diagram`: a concept activation vector and the directional derivative (Kim et al. 2018, TCAV;
  notebook 05, section 3) in a two-dimensional sketch, the CAV fitted by :func:`xaikit.concepts.cav.train_cav`.

Each function returns a :class:`Diagram`, a matplotlib ``Figure`` built without pyplot (so no figure is
left open) that Jupyter shows as a PNG even before pyplot has drawn anything. Colours follow
:mod:`xaikit.plotting`: weights in [0, 1] on the sequential map with the fixed range [0, 1], signed values on
the diverging map centred at zero, categories in the Okabe-Ito palette.

Importing this module loads matplotlib and NumPy only; :func:`attention_steps` imports torch when called
(the scratch implementation computes its numbers).
"""

from __future__ import annotations

import io

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyBboxPatch, Rectangle

from xaikit.plotting import DIVERGING, OKABE_ITO, SEQUENTIAL, signed_bars, symmetric_limit

__all__ = ["Diagram", "attention_steps", "gradsam_flow", "vit_patches", "transformer_block", "cav_diagram"]

BLUE, ORANGE, GREEN, PINK, SKY, VERMILION = OKABE_ITO[:6]
GREY = "0.35"
FONT = 11  # legible at notebook width and on a slide


class Diagram(Figure):
    """A matplotlib ``Figure`` that Jupyter displays as a PNG without pyplot (``_repr_png_``); a Figure made
    without pyplot would otherwise print as ``<Figure size ...>`` until pyplot has drawn one."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=100, facecolor="white")
        return buffer.getvalue()


# -- shared drawing helpers ---------------------------------------------------------------------------------
def _canvas(width: float, height: float) -> tuple[Diagram, object]:
    """A figure of ``width`` x ``height`` inches with one invisible axes whose data units are inches."""
    fig = Diagram(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    return fig, ax


def _inset(fig: Figure, x: float, y: float, w: float, h: float):
    """An axes at ``(x, y)`` with size ``(w, h)``, all in inches from the lower left corner."""
    width, height = fig.get_size_inches()
    return fig.add_axes((x / width, y / height, w / width, h / height))


def _box(ax, x, y, w, h, text="", color=BLUE, fill=0.16, size=FONT, weight="normal", gid=None, **text_kw):
    """A rounded box with its lower left corner at ``(x, y)``, tinted with ``color``, ``text`` centred."""
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0,rounding_size=0.08", linewidth=1.4,
                                edgecolor=color, facecolor=_tint(color, fill)))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, weight=weight, gid=gid,
                **text_kw)


def _arrow(ax, start, end, text="", color=GREY, side="above", size=FONT - 1, style="-|>", lw=1.5, rad=0.0,
           gid=None, **text_kw):
    """An arrow from ``start`` to ``end`` (inches), with ``text`` beside its middle."""
    arrow = ax.annotate("", xy=end, xytext=start, gid=gid,
                        arrowprops=dict(arrowstyle=style, color=color, lw=lw, shrinkA=0, shrinkB=0,
                                        mutation_scale=14, connectionstyle=f"arc3,rad={rad}"))
    if text:
        mx, my = (start[0] + end[0]) / 2, (start[1] + end[1]) / 2
        offset = {"above": (0, 0.12, "center", "bottom"), "below": (0, -0.12, "center", "top"),
                  "left": (-0.12, 0, "right", "center"), "right": (0.12, 0, "left", "center")}[side]
        ax.text(mx + offset[0], my + offset[1], text, ha=offset[2], va=offset[3], fontsize=size, color="0.15",
                **text_kw)
    return arrow


def _tint(color, amount: float):
    """``color`` mixed with white: ``amount`` 1 is the colour itself, 0 is white."""
    from matplotlib.colors import to_rgb

    rgb = np.asarray(to_rgb(color))
    return tuple(1 - amount * (1 - rgb))


def _ink(rgba) -> str:
    """Black or white text, whichever reads on the background ``rgba``."""
    r, g, b = rgba[:3]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "white"


def _number(value: float) -> str:
    """A matrix entry: whole numbers without decimals, the rest with two."""
    value = float(value)
    return f"{value:.0f}" if abs(value - round(value)) < 5e-7 else f"{value:.2f}"


def _matrix(ax, values, x, y, cell, name, color=GREY, cmap=None, norm=None, title=None, size=FONT - 1,
            row_labels=None, col_labels=None):
    """Draw a matrix of numbers with its top left corner at ``(x, y)``, one ``cell`` (inches) per entry.

    Cells are tinted with ``color``, or coloured by ``cmap`` and ``norm`` (the numbers then in black or white,
    whichever reads). Each number's text carries the gid ``"{name}[i,j]"``. Returns the matrix's bounding box
    ``(x0, y0, x1, y1)``."""
    values = np.asarray(values, dtype=float)
    rows, cols = values.shape
    for i in range(rows):
        for j in range(cols):
            x0, y0 = x + j * cell, y - (i + 1) * cell
            face = cmap(norm(values[i, j])) if cmap is not None else _tint(color, 0.12)
            ax.add_patch(Rectangle((x0, y0), cell, cell, facecolor=face, edgecolor="white" if cmap else color,
                                   linewidth=1.0))
            ax.text(x0 + cell / 2, y0 + cell / 2, _number(values[i, j]), ha="center", va="center", fontsize=size,
                    color=_ink(face) if cmap is not None else "black", gid=f"{name}[{i},{j}]")
    ax.add_patch(Rectangle((x, y - rows * cell), cols * cell, rows * cell, fill=False, edgecolor=color, lw=1.6))
    if title:
        ax.text(x + cols * cell / 2, y + 0.1, title, ha="center", va="bottom", fontsize=FONT, color="black")
    for i, label in enumerate(row_labels or []):
        ax.text(x - 0.07, y - (i + 0.5) * cell, label, ha="right", va="center", fontsize=size - 1, color="0.3")
    for j, label in enumerate(col_labels or []):
        ax.text(x + (j + 0.5) * cell, y - rows * cell - 0.06, label, ha="center", va="top", fontsize=size - 1,
                color="0.3")
    return x, y - rows * cell, x + cols * cell, y


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


def _mappable(cmap, norm):
    from matplotlib.cm import ScalarMappable

    return ScalarMappable(norm=norm, cmap=cmap)


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


# -- 3. a ViT's input (notebook 05, section 1) -------------------------------------------------------------
def _as_image(image) -> np.ndarray:
    """``image`` as an ``(H, W, 3)`` float array in [0, 1]: a NumPy array ``(H, W)``, ``(H, W, 3)`` or
    ``(H, W, 4)`` (uint8, or floats in [0, 1]), a PIL image or a ``(3, H, W)`` tensor of the same range."""
    if hasattr(image, "detach"):  # a torch tensor, channels first
        image = image.detach().cpu().numpy()
        if image.ndim == 3 and image.shape[0] in (1, 3):
            image = np.moveaxis(image, 0, -1)
    try:
        a = np.asarray(image)
    except (TypeError, ValueError) as err:  # an object NumPy cannot read as an array
        raise TypeError(f"image must be an array (H, W, 3), a PIL image or a tensor, got {type(image).__name__}") from err
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise TypeError(f"image must be an array of numbers (H, W, 3), a PIL image or a tensor, got "
                        f"{type(image).__name__} of {a.dtype}")
    if a.ndim == 3 and a.shape[-1] == 1:
        a = a[..., 0]
    if a.ndim == 2:
        a = np.repeat(a[..., None], 3, axis=-1)
    if a.ndim != 3 or a.shape[-1] not in (3, 4):
        raise ValueError(f"image must have shape (H, W, 3) (or (H, W) for grey), got {a.shape}; for a batch pass "
                         f"one image, e.g. images[0]")
    a = a[..., :3]
    if np.issubdtype(a.dtype, np.integer):
        return a.astype(float) / 255.0
    a = a.astype(float)
    if not np.isfinite(a).all() or a.min() < 0 or a.max() > 1:
        raise ValueError("image of floats must lie in [0, 1]; pass uint8 values 0-255 as integers")
    return a


def vit_patches(image=None, patch_size: int = 8) -> Diagram:
    """A Vision Transformer's input (Dosovitskiy et al. 2021, "An Image is Worth 16x16 Words"; notebook 05,
    section 1): the image cut into a grid of ``patch_size`` x ``patch_size`` patches, each patch flattened and
    projected linearly to a token, a learned [CLS] token prepended and a position embedding added to every
    token, read in raster order. ``image`` (``(H, W, 3)``, ``H`` and ``W`` multiples of ``patch_size``) defaults
    to a zebra of the generated image world (:mod:`xaikit.models.imageworld`, 64 x 64, which the embedded ViT
    sees as 8 x 8 patches of 8 x 8 pixels).

    The patch thumbnails are axes with the gid ``"patch k"`` (``k`` from 1 in raster order); the sequence's
    length is the text with the gid ``"n_tokens"``."""
    from xaikit._validate import check_int

    if image is None:
        from xaikit.models import imageworld

        image = imageworld.render("zebra", rng=3)
    img = _as_image(image)
    patch_size = check_int(patch_size, "patch_size", 1, hint="the model's config.patch_size, e.g. 8 or 16")
    height, width = img.shape[:2]
    if height % patch_size or width % patch_size:
        raise ValueError(f"image is {height} x {width} pixels, not a whole number of {patch_size} x {patch_size} "
                         f"patches; resize it to a multiple of patch_size (as the model's image processor does)")
    rows, cols = height // patch_size, width // patch_size
    n_patches = rows * cols
    shown = list(range(min(n_patches, 3)))
    if n_patches > 3:
        shown.append(n_patches - 1)
    colors = [BLUE, ORANGE, GREEN, PINK, VERMILION]

    fig, ax = _canvas(13.0, 5.6)
    ax.text(0.15, 5.48, "A Vision Transformer's input: an image as a sequence of patches", fontsize=FONT + 2,
            weight="bold", va="top")
    photo = _inset(fig, 0.35, 0.75, 3.5, 3.5)
    photo.imshow(img, extent=(0, width, height, 0), interpolation="nearest")
    for t in range(1, cols):
        photo.axvline(t * patch_size, color="white", lw=1.0)
    for t in range(1, rows):
        photo.axhline(t * patch_size, color="white", lw=1.0)
    for color, k in zip(colors, shown, strict=False):
        r, c = divmod(k, cols)
        photo.add_patch(Rectangle((c * patch_size, r * patch_size), patch_size, patch_size, fill=False,
                                  edgecolor=color, lw=2.8))
        photo.text(c * patch_size + patch_size / 2, r * patch_size + patch_size / 2, str(k + 1), color="white",
                   ha="center", va="center", fontsize=FONT - 1, weight="bold")
    photo.set_xticks([])
    photo.set_yticks([])
    photo.set_title(f"{height} x {width} image, cut into {rows} x {cols} patches\nof {patch_size} x {patch_size} "
                    "pixels, read row by row", fontsize=FONT)
    _arrow(ax, (4.0, 3.9), (5.2, 3.9), "cut", side="above")

    # the sequence: [CLS], then the patches in raster order, each with its position embedding
    x0, step, y_patch, y_token, y_pos = 5.5, 0.9, 3.55, 2.25, 1.15
    slots = ["cls"] + shown[:3] + (["dots"] if n_patches > 4 else []) + shown[3:]
    for s, item in enumerate(slots):
        x = x0 + s * step
        if item == "dots":
            for y in (y_patch + 0.35, y_token + 0.3, y_pos + 0.3):
                ax.text(x + 0.35, y, "...", ha="center", va="center", fontsize=FONT + 4)
            continue
        position = 0 if item == "cls" else item + 1
        if item == "cls":
            _box(ax, x, y_patch, 0.7, 0.7, "[CLS]", color=SKY, fill=0.35, size=FONT - 1)
            label = "learned\n[CLS] token"
            ax.text(x + 0.35, y_patch + 0.8, label, ha="center", va="bottom", fontsize=FONT - 2, color="0.3")
        else:
            r, c = divmod(item, cols)
            thumb = _inset(fig, x, y_patch, 0.7, 0.7)
            thumb.imshow(img[r * patch_size:(r + 1) * patch_size, c * patch_size:(c + 1) * patch_size],
                         interpolation="nearest")
            thumb.set_xticks([])
            thumb.set_yticks([])
            for spine in thumb.spines.values():
                spine.set_edgecolor(colors[shown.index(item)])
                spine.set_linewidth(2.8)
            thumb.set_gid(f"patch {item + 1}")
            thumb.set_title(f"patch {item + 1}", fontsize=FONT - 2, pad=3)
            _arrow(ax, (x + 0.35, y_patch - 0.05), (x + 0.35, y_token + 0.75), color=GREY, lw=1.2)
        _box(ax, x + 0.05, y_token, 0.6, 0.7, "$x_{cls}$" if item == "cls" else f"$x_{{{position}}}E$",
             color=SKY if item == "cls" else GREY, fill=0.35 if item == "cls" else 0.1, size=FONT)
        ax.text(x + 0.35, y_token - 0.27, "+", ha="center", va="center", fontsize=FONT + 3)
        _box(ax, x + 0.05, y_pos, 0.6, 0.6, f"$p_{{{position}}}$", color=ORANGE, fill=0.25, size=FONT)
    right = x0 + len(slots) * step
    ax.text(x0 - 0.1, y_token + 0.35, "flatten,\nproject", ha="right", va="center", fontsize=FONT - 1)
    ax.text(x0 - 0.1, y_pos + 0.3, "+ position", ha="right", va="center", fontsize=FONT - 1)
    ax.text((x0 + right) / 2 - 0.5, y_pos - 0.15,
            f"each patch: {patch_size} x {patch_size} x 3 = {patch_size * patch_size * 3} numbers, projected by $E$ "
            "to the model's width;\nlearned position embeddings $p_0, p_1, \\dots$ tell attention where each patch was",
            ha="center", va="top", fontsize=FONT - 1, color="0.25")
    ax.text((x0 + right) / 2 - 0.5, 0.3, f"1 + {n_patches} = {n_patches + 1} tokens", ha="center", va="top",
            fontsize=FONT + 1, weight="bold", gid="n_tokens")

    _arrow(ax, (right - 0.1, y_token + 0.35), (right + 0.3, y_token + 0.35))
    _box(ax, right + 0.35, y_token - 0.35, 1.45, 1.4, "transformer\nencoder", color=BLUE, fill=0.18)
    _arrow(ax, (right + 1.075, y_token + 1.1), (right + 1.075, y_patch + 0.55))
    ax.text(right + 1.075, y_patch + 0.62, "classifier reads\nthe [CLS] token\nof the last block", ha="center",
            va="bottom", fontsize=FONT - 1)
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


# -- 5. a CAV and the directional derivative (notebook 05, section 3) -----------------------------------------
def _cav_example(seed: int = 0):
    """Two-dimensional stand-ins for layer activations: concept examples, random examples and class images,
    and the class logit's gradient at each class image (a smooth toy function ``h``)."""
    rng = np.random.default_rng(seed)
    concept = rng.normal([3.3, 3.2], 0.45, size=(14, 2))
    random = rng.normal([0.7, 0.7], 0.5, size=(14, 2))
    images = np.array([[0.0, 3.7], [0.6, 2.4], [1.2, 3.4], [3.0, 0.3], [4.2, 2.1], [2.7, 1.5]])
    # h(a) = w.a - 0.6 |a - m|^2 / 2: its gradient w - 0.6 (a - m) turns with the place
    w, m = np.array([0.6, 0.2]), np.array([1.6, 2.2])
    grads = w - 0.6 * (images - m)
    return concept, random, images, grads


def cav_diagram() -> Diagram:
    """A concept activation vector and the directional derivative (Kim et al. 2018, "Interpretability Beyond
    Feature Attribution: Quantitative Testing with Concept Activation Vectors"; notebook 05, sections 3-4),
    sketched in two dimensions of a layer's activations: a concept's examples and random examples, the
    boundary of the linear classifier that separates them, the CAV ``v_C`` (its unit normal, pointing to the
    concept), and at each class image the gradient of the class logit, ``grad h``, whose dot product with the
    CAV is ``S = grad h . v_C``. The TCAV score is the fraction of class images with ``S > 0``.

    The CAV and the boundary come from the L2 logistic regression of :func:`xaikit.concepts.cav.train_cav`
    (its Newton solver), fitted on the drawn points as they are, without train_cav's standardisation; the
    class logit ``h`` is a smooth toy function whose gradient turns from place to place. Artists with gids: the boundary line
    ``"boundary"``, the CAV arrow ``"cav"`` (an annotation from ``xyann`` to ``xy``), each gradient arrow
    ``"grad k"``, the bars of ``S`` in the axes ``"S"``, the score's text ``"tcav"``."""
    from xaikit.concepts.cav import _LogisticL2

    concept, random, images, grads = _cav_example()
    x = np.concatenate([concept, random])
    y = np.r_[np.ones(len(concept)), np.zeros(len(random))]
    clf = _LogisticL2(C=1.0).fit(x, y)
    w, b = clf.coef_[0], float(clf.intercept_[0])
    cav = w / np.linalg.norm(w)  # the unit normal of {a : w.a + b = 0}, towards the concept
    s = grads @ cav  # (images,): the directional derivatives
    score = float(np.mean(s > 0))

    fig = Diagram(figsize=(12.0, 6.0))
    space = fig.add_axes((0.04, 0.2, 0.5, 0.68))
    space.scatter(*random.T, s=46, marker="o", color="#BBBBBB", edgecolor="0.4", label="random examples", zorder=2)
    space.scatter(*concept.T, s=56, marker="^", color=ORANGE, edgecolor="0.3", label='concept "striped"',
                  zorder=2)
    space.set_xlim(-0.8, 4.6)
    space.set_ylim(-0.6, 4.6)
    space.set_aspect("equal")
    # the boundary w.a + b = 0, drawn across the box
    direction = np.array([-cav[1], cav[0]])
    foot = -b * w / (w @ w)  # the boundary's point nearest the origin
    ends = np.array([foot - 8 * direction, foot + 8 * direction])
    space.plot(*ends.T, color="black", lw=1.6, ls="--", gid="boundary", label="classifier's boundary")
    anchor = foot + direction * float((np.array([2.0, 2.0]) - foot) @ direction)  # a point on the boundary
    space.annotate("", xy=anchor + 1.1 * cav, xytext=anchor, gid="cav",
                   arrowprops=dict(arrowstyle="-|>", color=GREEN, lw=3.2, mutation_scale=20, shrinkA=0, shrinkB=0))
    tip = anchor + 1.1 * cav
    space.text(tip[0] + 0.12, tip[1] - 0.12, "$v_C$ (CAV)", color=GREEN, fontsize=FONT + 1, weight="bold",
               ha="left", va="top", bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=1))
    # class images and the gradient at each, coloured by the sign of S
    cmap = colormaps[DIVERGING]
    for k, (a, g, sk) in enumerate(zip(images, grads, s, strict=True)):
        color = cmap(0.88) if sk > 0 else cmap(0.12)
        space.plot(*a, marker="*", ms=15, color="black", zorder=3, label="class images (zebra)" if k == 0 else None)
        space.annotate("", xy=a + 0.55 * g, xytext=a, gid=f"grad {k}", zorder=4,
                       arrowprops=dict(arrowstyle="-|>", color=color, lw=2.2, mutation_scale=14, shrinkA=0,
                                       shrinkB=0))
        space.text(a[0] - 0.12, a[1] - 0.1, f"{k + 1}", ha="right", va="top", fontsize=FONT - 1)
    space.set_xticks([])
    space.set_yticks([])
    space.set_xlabel("activation unit 1 at layer $l$", fontsize=FONT - 1)
    space.set_ylabel("activation unit 2", fontsize=FONT - 1)
    space.set_title("activations $a_l(x)$, two of their many dimensions", fontsize=FONT)
    space.legend(loc="upper center", bbox_to_anchor=(0.5, -0.07), ncol=2, fontsize=FONT - 1, frameon=False)

    fig.text(0.015, 0.975, "A concept activation vector and the directional derivative (Kim et al. 2018)",
             fontsize=FONT + 2, weight="bold", va="top")
    notes = fig.add_axes((0.58, 0.5, 0.41, 0.38))
    notes.set_axis_off()
    first = int(np.argmax(s))
    notes.text(0, 1, "1. A linear classifier separates the concept's\n    activations from random ones.\n"
               "2. The CAV $v_C$ is the unit normal of its boundary,\n    pointing towards the concept.\n"
               "3. At a class image, the gradient $\\nabla h_{l,k}$ of the class\n    logit says which way raises it "
               "(arrows).\n4. Their dot product is the directional derivative\n"
               "    $S_{C,k,l}(x) = \\nabla h_{l,k}(a_l(x)) \\cdot v_C$:\n"
               "    $S > 0$ (red): towards the concept raises the logit.",
               ha="left", va="top", fontsize=FONT - 0.5, transform=notes.transAxes)
    notes.text(0, -0.05, f"image {first + 1}: $\\nabla h$ = ({grads[first, 0]:.2f}, {grads[first, 1]:.2f}), "
               f"$v_C$ = ({cav[0]:.2f}, {cav[1]:.2f}), $S$ = {s[first]:+.2f}", ha="left", va="top",
               fontsize=FONT - 1, transform=notes.transAxes, gid="example")
    bars = fig.add_axes((0.64, 0.1, 0.33, 0.28))
    signed_bars(bars, [str(k + 1) for k in range(len(s))], s)
    bars.set_gid("S")
    bars.set_xlabel("class image", fontsize=FONT - 1)
    bars.set_ylabel("$S = \\nabla h \\cdot v_C$", fontsize=FONT - 1)
    bars.tick_params(labelsize=FONT - 2)
    bars.spines[["top", "right"]].set_visible(False)
    bars.set_title(f"TCAV score = fraction with $S > 0$ = {int((s > 0).sum())}/{len(s)} = {score:.2f}",
                   fontsize=FONT, gid="tcav")
    return fig
