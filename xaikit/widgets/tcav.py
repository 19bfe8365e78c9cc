"""Panels for notebook 05, TCAV on a Vision Transformer (Kim et al. 2018; Dosovitskiy et al. 2021):
a patch-grid view of an image, a concept gallery, the TCAV panel with significance, a layer sweep, and a
class's images sorted by a CAV (Kim et al. 2018, Fig. 2).

The panel of images sorted by a CAV is in :mod:`xaikit.widgets.cavsort`. Each panel is a thin view over
:mod:`xaikit.concepts.tcav`; activations and gradients are cached per model, layer,
pooling and image set, so moving the layer slider back and forth only retrains (cached) CAVs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import ipywidgets as widgets
import numpy as np

from xaikit._validate import check_int, check_labels, check_names
from xaikit.plotting import OKABE_ITO
from xaikit.widgets.base import Panel, dropdown, int_slider, toggle

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from matplotlib.figure import Figure
    from torch import nn

    from xaikit.concepts.significance import SignificanceResult
    from xaikit.concepts.tcav import LayerSweep


def _check_panel_vit(model, panel: str) -> None:
    """A concept panel needs the ViT image classifier it explains; None or a name is refused at once."""
    if model is None or isinstance(model, str) or getattr(model, "config", None) is None:
        raise TypeError(f"{panel}: model must be a ViT image classifier (e.g. model, processor = "
                        f"xaikit.models.load_vit()), got {type(model).__name__} {model!r:.60}")

__all__ = ["PatchGridPanel", "ConceptGalleryPanel", "TCAVPanel", "LayerSweepPanel", "PatchGrid", "Gallery"]

_NOT_SIGNIFICANT = "#BBBBBB"


@dataclass(frozen=True)
class PatchGrid:
    """What :class:`PatchGridPanel` shows: one image cut into the ViT's patches, in reading order."""

    image: np.ndarray      # (H, W, 3) uint8
    grid: bool             # draw the patch grid over the image
    rows: int
    cols: int
    patches: np.ndarray    # (rows * cols, p, p, 3) the patch tokens' pixels
    n_tokens: int          # rows * cols + 1: the patches and [CLS]
    label: str


@dataclass(frozen=True)
class Gallery:
    """What :class:`ConceptGalleryPanel` shows: the first images of one set."""

    concept: str
    images: np.ndarray     # (n, H, W, 3) uint8


class ImageSets:
    """Concept, random and class image sets, generated from the image world unless given.

    ``class_images`` is a dict ``{class name: images}``, a function of the class name, or one array (or list)
    of images, which are then the images of ``target``, the class the panel starts on; only that class can be
    shown. An array with no single target (``target=None``, or the "all classes" of :class:`CAVSortPanel`) is
    refused rather than left unused.
    """

    def __init__(self, concept_sets: Mapping[str, np.ndarray] | None = None,
                 class_images: Mapping[str, np.ndarray] | np.ndarray | None = None, world: str = "main",
                 n: int = 50, n_class: int = 40,
                 seed: int = 0, target: str | None = None):
        from xaikit.concepts.images import check_not_one_image
        from xaikit.models import imageworld as iw

        if class_images is not None and not isinstance(class_images, dict) and not callable(class_images):
            if not isinstance(target, str) or target == "all classes":
                raise ValueError("class_images is one set of images, but this panel has no single class to give "
                                 f"them to (target={target!r}): pass class_images={{'zebra': images}} (a dict "
                                 "from class name to images), or a target class, e.g. target='zebra'")
            check_not_one_image(class_images, "class_images")
            class_images = {target: class_images}

        self.concepts = dict(concept_sets) if concept_sets is not None else {
            c: iw.concept_images(c, n, seed) for c in ("striped", "dotted", "bubbly", "zigzag", "checkered")}
        for name, images in self.concepts.items():  # one image would be drawn and read as its pixel rows
            check_not_one_image(images, f"concept_sets[{name!r}]")
        for name, images in (class_images.items() if isinstance(class_images, dict) else ()):
            check_not_one_image(images, f"class_images[{name!r}]")
        self._class_images = class_images
        self.world, self.n_class, self.seed = world, n_class, seed
        self._cache: dict[str, np.ndarray] = {}

    def classes(self, labels: list[str]) -> list[str]:
        """The model's labels this set can give images for: all of them, unless fixed images were passed."""
        if isinstance(self._class_images, dict):
            served = [label for label in labels if label in self._class_images]
            if not served:
                raise ValueError(f"class_images has no class the model knows: it has {sorted(self._class_images)}, "
                                 f"the model's classes are {labels}")
            return served
        return labels

    def class_images(self, label: str) -> np.ndarray:
        if isinstance(self._class_images, dict):
            if label not in self._class_images:
                raise ValueError(f"no images for class {label!r}; class_images has {sorted(self._class_images)}")
            return self._class_images[label]
        if callable(self._class_images):
            return self._class_images(label)
        if label not in self._cache:
            from xaikit.models import imageworld as iw

            self._cache[label] = iw.class_images(label, self.n_class, self.world, self.seed)
        return self._cache[label]


def class_labels(model: nn.Module) -> list[str]:
    """The model's class names in index order."""
    return [str(model.config.id2label[i]) for i in sorted(int(k) for k in model.config.id2label)]


class PatchGridPanel(Panel):
    """An image cut into the ViT's patches: the grid, each patch's token index, and [CLS] as token 0."""

    title = "ViT recap: an image is a sequence of patch tokens"
    figsize = (8.0, 3.8)

    def __init__(self, images: np.ndarray, patch_size: int = 8, labels: Sequence[str] | None = None):
        from xaikit.concepts.tcav import prepare_images

        self.images = prepare_images(images, "images", min_count=1)
        self.labels = ([f"image {i}" for i in range(len(self.images))] if labels is None
                       else check_labels(labels, "labels", len(self.images), "images"))
        from xaikit._validate import check_int

        side = min(min(a.shape[:2]) for a in self.images)
        self.patch_size = check_int(patch_size, "patch_size", 1, side,
                                    hint="the side of a square patch in pixels, e.g. model.config.patch_size")
        controls = {"index": int_slider("image", 0, 0, len(self.images) - 1),
                    "grid": toggle("show", ["patch grid", "image only"])}
        super().__init__(controls)

    def compute(self, index: int, grid: str) -> PatchGrid:
        img = self.images[index]
        h, w = img.shape[:2]
        p = self.patch_size
        if h % p or w % p:
            raise ValueError(f"image {index} is {h}x{w}, not a multiple of patch_size={p}; resize it first")
        rows, cols = h // p, w // p
        patches = img.reshape(rows, p, cols, p, 3).transpose(0, 2, 1, 3, 4).reshape(rows * cols, p, p, 3)
        return PatchGrid(img, grid == "patch grid", rows, cols, patches, rows * cols + 1, self.labels[index])

    def draw(self, fig: Figure, r: PatchGrid) -> None:
        ax, ax2 = fig.subplots(1, 2, width_ratios=[1, 1.6])
        ax.imshow(r.image)
        ax.set_title(f"{r.label}: {r.rows}x{r.cols} patches")
        p = self.patch_size
        if r.grid:
            for k in range(1, r.rows):
                ax.axhline(k * p - 0.5, color="white", lw=0.8)
            for k in range(1, r.cols):
                ax.axvline(k * p - 0.5, color="white", lw=0.8)
            if r.rows * r.cols <= 64:
                for i in range(r.rows):
                    for j in range(r.cols):
                        ax.text(j * p + p / 2, i * p + p / 2, str(1 + i * r.cols + j), ha="center",
                                va="center", fontsize=6, color="white")
        ax.set_xticks([])
        ax.set_yticks([])
        # the token sequence: [CLS] then the first patches in reading order
        show = min(12, len(r.patches))
        strip = np.concatenate([np.full((p, p, 3), 255, np.uint8)] +
                               [np.pad(q, ((0, 0), (1, 1), (0, 0)), constant_values=255) for q in r.patches[:show]],
                               axis=1)
        ax2.imshow(strip)
        ax2.set_title(f"sequence: [CLS] + {r.n_tokens - 1} patch tokens (first {show} shown)")
        ax2.text(p / 2, p / 2, "CLS", ha="center", va="center", fontsize=7)
        ax2.set_xticks([])
        ax2.set_yticks([])
        return None


class ConceptGalleryPanel(Panel):
    """Example images of each concept (Describable-Textures stand-ins), random sets, or a class."""

    title = "Concepts: example images"
    figsize = (8.0, 2.4)

    def __init__(self, concept_sets: Mapping[str, np.ndarray] | None = None, random_set: np.ndarray | None = None,
                 class_images: Mapping[str, np.ndarray] | np.ndarray | None = None, n_show: int = 8):
        from xaikit.concepts.images import check_not_one_image
        from xaikit.models import imageworld as iw

        n_show = check_int(n_show, "n_show", 1, hint="the number of images shown per set, e.g. 8")
        self.sets = ImageSets(concept_sets, class_images)
        if random_set is not None:
            check_not_one_image(random_set, "random_set")
        self.random = random_set if random_set is not None else iw.random_images(n_show, seed=0)
        self.n_show = n_show
        options = [*self.sets.concepts, "random", "class: zebra"]
        super().__init__({"concept": dropdown("concept", options)})

    def compute(self, concept: str) -> Gallery:
        if concept == "random":
            imgs = self.random
        elif concept.startswith("class: "):
            imgs = self.sets.class_images(concept[7:])
        else:
            imgs = self.sets.concepts[concept]
        return Gallery(concept, np.asarray(imgs[: self.n_show]))

    def draw(self, fig: Figure, r: Gallery) -> None:
        axes = fig.subplots(1, len(r.images))
        for ax, img in zip(np.atleast_1d(axes), r.images, strict=False):
            ax.imshow(img)
            ax.set_xticks([])
            ax.set_yticks([])
        fig.suptitle(f"concept: {r.concept}")
        return None


def panel_layer(model: nn.Module, layer: int) -> int:
    """A concept panel's ``layer`` as the concept functions read it (:func:`xaikit.models.arch.check_layer`):
    ``0..L-1``, or a negative index from the end (``-1``: the last block), resolved to the block it names and
    shown on the slider; anything outside ``-L..L-1`` is refused with the range."""
    from xaikit.models.arch import check_layer

    return check_layer(model, layer)


def layer_count(model: nn.Module) -> int:
    from xaikit.models.arch import n_layers

    return n_layers(model)


#: the concepts a TCAV panel shows unless told otherwise (those of them the concept sets have)
DEFAULT_CONCEPTS = ("striped", "dotted", "bubbly")


def _chosen_concepts(concepts, names: list[str]) -> list[str]:
    """``concepts`` checked against the concept sets' ``names`` (a typo is refused, not dropped); ``None``: the
    default concepts the sets have, else their first three."""
    if concepts is None:
        return [c for c in DEFAULT_CONCEPTS if c in names] or names[:3]
    return check_names(concepts, "concepts", names)


def _target_labels(sets, model, target: str) -> list[str]:
    """The classes a panel can show (those with images), after checking that ``target`` is one of them."""
    labels = sets.classes(class_labels(model))
    if target not in labels:
        raise ValueError(f"target {target!r} has no images here: this panel can show {labels}; pass class_images "
                         f"with images of {target!r}, or one of those as target")
    return labels


class TCAVPanel(Panel):
    """TCAV scores of the chosen concepts for a class, over R runs, against random CAVs.

    Bars are mean scores with one standard deviation; grey hatched bars are not significant after
    Bonferroni correction; each label shows the CAV's held-out accuracy. The dashed line is the mean
    score of random CAVs. ``concepts``: the names selected at first, among ``concept_sets`` (``None``: striped,
    dotted and bubbly, those of them the sets have); a name without images is a ValueError naming it.
    """

    title = "TCAV: does the concept push the class up?"
    figsize = (8.0, 3.6)

    def __init__(self, model: nn.Module, processor: object | None = None,
                 concept_sets: Mapping[str, np.ndarray] | None = None,
                 class_images: Mapping[str, np.ndarray] | np.ndarray | None = None, world: str = "main",
                 target: str = "zebra", layer: int = 0, pooling: str = "flatten", R: int = 10,
                 concepts: Sequence[str] | None = None, random_sets: Sequence[np.ndarray] | None = None):
        _check_panel_vit(model, type(self).__name__)
        from xaikit.concepts.images import check_processor

        self.model, self.processor = model, check_processor(processor)
        self.sets = ImageSets(concept_sets, class_images, world, target=target)
        self.random_sets = random_sets
        names = list(self.sets.concepts)
        concepts = tuple(_chosen_concepts(concepts, names))
        labels = _target_labels(self.sets, model, target)
        controls = {
            "target": dropdown("class", labels, target),
            "concepts": widgets.SelectMultiple(options=names, value=concepts, description="concepts",
                                               rows=min(5, len(names))),
            "negative": dropdown("vs", ["random", *names], "random"),
            "layer": int_slider("layer", panel_layer(model, layer), 0, layer_count(model) - 1),
            "pooling": toggle("pooling", ["cls", "mean", "flatten"], pooling),
            "classifier": toggle("CAV", ["logistic", "hinge"]),
            # only values that work: with given random sets, R can use at most len(random_sets) - 1 of them
            "R": int_slider("R", R, 2, 30 if random_sets is None else max(2, len(random_sets) - 1)),
        }
        super().__init__(controls)

    def compute(self, target: str, concepts: Sequence[str], negative: str, layer: int, pooling: str,
                classifier: str, R: int) -> SignificanceResult:
        from xaikit.concepts.tcav import tcav_significance

        chosen = [c for c in concepts if c != negative]
        if not chosen:
            raise ValueError("pick at least one concept other than the counterpart ('vs') set")
        randoms = self.random_sets[: R + 1] if self.random_sets is not None else None
        return tcav_significance(
            self.model, {c: self.sets.concepts[c] for c in chosen}, self.sets.class_images(target), target=target,
            layer=layer,
            random_sets=randoms, R=R, negative=None if negative == "random" else self.sets.concepts[negative],
            pooling=pooling, classifier=classifier, processor=self.processor)

    def draw(self, fig: Figure, res: SignificanceResult) -> None:
        ax = fig.subplots()
        names = list(res.concepts)
        means = [res[c].mean for c in names]
        stds = [res[c].std for c in names]
        colours = [OKABE_ITO[i % len(OKABE_ITO)] if res[c].significant else _NOT_SIGNIFICANT
                   for i, c in enumerate(names)]
        bars = ax.bar(range(len(names)), means, yerr=stds, color=colours, capsize=3)
        for bar, c in zip(bars, names, strict=True):
            if not res[c].significant:
                bar.set_hatch("//")
                ax.text(bar.get_x() + bar.get_width() / 2, bar.get_height() + 0.04, "n.s.", ha="center")
        ax.axhline(res.random_scores.mean(), color="0.3", ls="--", lw=1, label="random CAVs")
        ax.set_xticks(range(len(names)),
                      [f"{c}\nCAV acc {res[c].cav_accuracy:.2f}" + (" (chance!)" if res[c].near_chance else "")
                       + f"\np={res[c].p_corrected:.2g}" for c in names])
        ax.set_ylim(0, 1.1)
        ax.set_ylabel("TCAV score")
        ax.set_title(f"class {res.target!r}, layer {res.layer}, {res.pooling}, vs {res.negative}, R={res.R}")
        ax.legend(loc="upper right", fontsize=8)
        return None


class LayerSweepPanel(Panel):
    """TCAV score by layer for each concept; filled markers are significant, hollow ones are not.

    ``concepts`` as in :class:`TCAVPanel`."""

    title = "TCAV by layer"
    figsize = (8.0, 3.4)

    def __init__(self, model: nn.Module, processor: object | None = None,
                 concept_sets: Mapping[str, np.ndarray] | None = None,
                 class_images: Mapping[str, np.ndarray] | np.ndarray | None = None, world: str = "main",
                 target: str = "zebra", pooling: str = "flatten", R: int = 5,
                 concepts: Sequence[str] | None = None, random_sets: Sequence[np.ndarray] | None = None):
        _check_panel_vit(model, type(self).__name__)
        from xaikit.concepts.images import check_processor

        self.model, self.processor = model, check_processor(processor)
        self.sets = ImageSets(concept_sets, class_images, world, target=target)
        self.concepts = _chosen_concepts(concepts, list(self.sets.concepts))
        self.random_sets = random_sets
        labels = _target_labels(self.sets, model, target)
        controls = {
            "target": dropdown("class", labels, target),
            "pooling": toggle("pooling", ["cls", "mean", "flatten"], pooling),
            "R": int_slider("R", R, 2, 20 if random_sets is None else max(2, len(random_sets) - 1)),
        }
        super().__init__(controls)

    def compute(self, target: str, pooling: str, R: int) -> LayerSweep:
        from xaikit.concepts.tcav import layer_sweep

        randoms = self.random_sets[: R + 1] if self.random_sets is not None else None
        return layer_sweep(self.model, {c: self.sets.concepts[c] for c in self.concepts},
                           self.sets.class_images(target), target=target, R=R, pooling=pooling,
                           random_sets=randoms, processor=self.processor, progress=False)

    def draw(self, fig: Figure, sweep: LayerSweep) -> None:
        ax = fig.subplots()
        for i, c in enumerate(sweep.concepts):
            colour = OKABE_ITO[i % len(OKABE_ITO)]
            ax.plot(sweep.layers, sweep.mean[i], color=colour, label=c)
            sig = sweep.significant[i]
            ax.scatter(np.array(sweep.layers)[sig], sweep.mean[i][sig], color=colour, zorder=3)
            ax.scatter(np.array(sweep.layers)[~sig], sweep.mean[i][~sig], facecolors="white", edgecolors=colour,
                       zorder=3)
        ax.plot(sweep.layers, sweep.random_mean, color="0.4", ls="--", label="random CAVs")
        ax.set_xticks(sweep.layers)
        ax.set_xlabel("layer (encoder block)")
        ax.set_ylabel("TCAV score")
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(f"class {sweep.results[0].target!r}; hollow = not significant")
        ax.legend(fontsize=8, loc="best")
        return None
