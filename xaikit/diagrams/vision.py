"""The lecture diagrams of the vision notebook: a Vision Transformer's input and a concept activation vector
with the directional derivative (notebook 05). See :mod:`xaikit.diagrams`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from matplotlib import colormaps
from matplotlib.patches import Rectangle

from xaikit.diagrams.draw import (
    BLUE,
    FONT,
    GREEN,
    GREY,
    ORANGE,
    PINK,
    SKY,
    VERMILION,
    Diagram,
    _arrow,
    _box,
    _canvas,
    _inset,
)
from xaikit.plotting import DIVERGING, signed_bars

if TYPE_CHECKING:
    import torch
    from PIL import Image

__all__ = ["cav_diagram", "vit_patches"]


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


def vit_patches(image: np.ndarray | torch.Tensor | Image.Image | None = None, patch_size: int = 8) -> Diagram:
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
