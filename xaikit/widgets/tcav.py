"""Panels for notebook 05, TCAV on a Vision Transformer (Kim et al. 2018; Dosovitskiy et al. 2021):
a patch-grid view of an image, a concept gallery, the TCAV panel with significance, a layer sweep, and a
class's images sorted by a CAV (Kim et al. 2018, Fig. 2).

Each panel is a thin view over :mod:`xaikit.concepts.tcav`; activations and gradients are cached per model, layer,
pooling and image set, so moving the layer slider back and forth only retrains (cached) CAVs.
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np

from xaikit._validate import check_int, check_names
from xaikit.concepts.cav import CAV
from xaikit.concepts.sorting import CAVSort
from xaikit.plotting import OKABE_ITO
from xaikit.widgets.base import Panel, dropdown, int_slider, toggle

__all__ = ["PatchGridPanel", "ConceptGalleryPanel", "TCAVPanel", "LayerSweepPanel", "CAVSortPanel", "PatchGrid", "Gallery",
           "CAVSortView"]

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


@dataclass(frozen=True)
class CAVSortView:
    """What :class:`CAVSortPanel` shows: a class's pictures ordered by their cosine with a CAV (Kim et al.
    2018, Fig. 2), and the ``k`` most and least similar."""

    sort: CAVSort
    cav: CAV
    images: np.ndarray     # (N, H, W, 3) uint8, the pictures in the order given
    labels: list[str]      # the class of each picture
    top: np.ndarray        # indices into images of the k most similar
    bottom: np.ndarray     # ... and of the k least similar
    k: int
    target: str            # the class, or "all classes"


class _Sets:
    """Concept, random and class image sets, generated from the image world unless given."""

    def __init__(self, concept_sets=None, class_images=None, world: str = "main", n: int = 50, n_class: int = 40,
                 seed: int = 0):
        from xaikit.concepts.images import check_not_one_image
        from xaikit.models import imageworld as iw

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

    def class_images(self, label: str):
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


def _labels(model) -> list[str]:
    return [str(model.config.id2label[i]) for i in sorted(int(k) for k in model.config.id2label)]


class PatchGridPanel(Panel):
    """An image cut into the ViT's patches: the grid, each patch's token index, and [CLS] as token 0."""

    title = "ViT recap: an image is a sequence of patch tokens"
    figsize = (8.0, 3.8)

    def __init__(self, images, patch_size: int = 8, labels=None):
        from xaikit.concepts.tcav import prepare_images

        self.images = prepare_images(images, "images", min_count=1)
        self.labels = list(labels) if labels is not None else [f"image {i}" for i in range(len(self.images))]
        from xaikit._validate import check_int

        side = min(min(a.shape[:2]) for a in self.images)
        self.patch_size = check_int(patch_size, "patch_size", 1, side,
                                    hint="the side of a square patch in pixels, e.g. model.config.patch_size")
        controls = {"index": int_slider("image", 0, 0, len(self.images) - 1),
                    "grid": toggle("show", ["patch grid", "image only"])}
        super().__init__(controls)

    def compute(self, index: int, grid: str):
        img = self.images[index]
        h, w = img.shape[:2]
        p = self.patch_size
        if h % p or w % p:
            raise ValueError(f"image {index} is {h}x{w}, not a multiple of patch_size={p}; resize it first")
        rows, cols = h // p, w // p
        patches = img.reshape(rows, p, cols, p, 3).transpose(0, 2, 1, 3, 4).reshape(rows * cols, p, p, 3)
        return PatchGrid(img, grid == "patch grid", rows, cols, patches, rows * cols + 1, self.labels[index])

    def draw(self, fig, r):
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

    def __init__(self, concept_sets=None, random_set=None, class_images=None, n_show: int = 8):
        from xaikit.concepts.images import check_not_one_image
        from xaikit.models import imageworld as iw

        n_show = check_int(n_show, "n_show", 1, hint="the number of images shown per set, e.g. 8")
        self.sets = _Sets(concept_sets, class_images)
        if random_set is not None:
            check_not_one_image(random_set, "random_set")
        self.random = random_set if random_set is not None else iw.random_images(n_show, seed=0)
        self.n_show = n_show
        options = [*self.sets.concepts, "random", "class: zebra"]
        super().__init__({"concept": dropdown("concept", options)})

    def compute(self, concept: str):
        if concept == "random":
            imgs = self.random
        elif concept.startswith("class: "):
            imgs = self.sets.class_images(concept[7:])
        else:
            imgs = self.sets.concepts[concept]
        return Gallery(concept, np.asarray(imgs[: self.n_show]))

    def draw(self, fig, r):
        axes = fig.subplots(1, len(r.images))
        for ax, img in zip(np.atleast_1d(axes), r.images, strict=False):
            ax.imshow(img)
            ax.set_xticks([])
            ax.set_yticks([])
        fig.suptitle(f"concept: {r.concept}")
        return None


def _layer_count(model) -> int:
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
    labels = sets.classes(_labels(model))
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

    def __init__(self, model, processor=None, concept_sets=None, class_images=None, world: str = "main",
                 target: str = "zebra", layer: int = 0, pooling: str = "flatten", R: int = 10,
                 concepts=None, random_sets=None):
        self.model, self.processor = model, processor
        self.sets = _Sets(concept_sets, class_images, world)
        self.random_sets = random_sets
        names = list(self.sets.concepts)
        concepts = tuple(_chosen_concepts(concepts, names))
        labels = _target_labels(self.sets, model, target)
        controls = {
            "target": dropdown("class", labels, target),
            "concepts": widgets.SelectMultiple(options=names, value=concepts, description="concepts",
                                               rows=min(5, len(names))),
            "negative": dropdown("vs", ["random", *names], "random"),
            "layer": int_slider("layer", layer, 0, _layer_count(model) - 1),
            "pooling": toggle("pooling", ["cls", "mean", "flatten"], pooling),
            "classifier": toggle("CAV", ["logistic", "hinge"]),
            # only values that work: with given random sets, R can use at most len(random_sets) - 1 of them
            "R": int_slider("R", R, 2, 30 if random_sets is None else max(2, len(random_sets) - 1)),
        }
        super().__init__(controls)

    def compute(self, target, concepts, negative, layer, pooling, classifier, R):
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

    def draw(self, fig, res):
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

    def __init__(self, model, processor=None, concept_sets=None, class_images=None, world: str = "main",
                 target: str = "zebra", pooling: str = "flatten", R: int = 5,
                 concepts=None, random_sets=None):
        self.model, self.processor = model, processor
        self.sets = _Sets(concept_sets, class_images, world)
        self.concepts = _chosen_concepts(concepts, list(self.sets.concepts))
        self.random_sets = random_sets
        labels = _target_labels(self.sets, model, target)
        controls = {
            "target": dropdown("class", labels, target),
            "pooling": toggle("pooling", ["cls", "mean", "flatten"], pooling),
            "R": int_slider("R", R, 2, 20 if random_sets is None else max(2, len(random_sets) - 1)),
        }
        super().__init__(controls)

    def compute(self, target, pooling, R):
        from xaikit.concepts.tcav import layer_sweep

        randoms = self.random_sets[: R + 1] if self.random_sets is not None else None
        return layer_sweep(self.model, {c: self.sets.concepts[c] for c in self.concepts},
                           self.sets.class_images(target), target=target, R=R, pooling=pooling,
                           random_sets=randoms, processor=self.processor, progress=False)

    def draw(self, fig, sweep):
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


_ALL_CLASSES = "all classes"
_GAP = 4  # white pixels between two pictures of a row


class CAVSortPanel(Panel):
    """A class's images sorted by the cosine similarity of their activation with a CAV (Kim et al. 2018,
    Fig. 2): the ``k`` most similar images on top, the ``k`` least similar below, each with its similarity,
    and a strip of every image in sorted order coloured by its class.

    The CAV is the concept against a random set (``vs`` = random) or against another concept (a relative CAV).
    ``class`` = "all classes" pools the images of every class the panel has (e.g. zebras and horses), so the
    strip shows whether one class comes first. Activations and CAVs are cached per setting: after the first
    visit, a change only sorts (``sort_activations``) and redraws the pictures, captions and strip over a fixed
    background (one layout for every ``k`` and class). Notebook 05, section 8.
    """

    title = "Images sorted by a CAV: the most and the least concept-like"
    figsize = (8.0, 3.0)
    layout = None  # a fixed grid placed by hand: constrained layout would cost most of the redraw

    def __init__(self, model, processor=None, concept_sets=None, class_images=None, world: str = "main",
                 target: str = _ALL_CLASSES, concept: str = "striped", layer: int = 0, pooling: str = "flatten",
                 k: int = 5, max_k: int = 10, random_set=None, seed: int = 0):
        from xaikit._validate import check_int
        from xaikit.models import imageworld as iw

        self.model, self.processor, self.seed = model, processor, seed
        self.sets = _Sets(concept_sets, class_images, world)
        names = list(self.sets.concepts)
        if concept not in names:
            raise ValueError(f"concept {concept!r} has no images here; the concept sets are {names}")
        self.labels = self.sets.classes(_labels(model))
        options = [_ALL_CLASSES, *self.labels] if len(self.labels) > 1 else self.labels
        if target == _ALL_CLASSES and len(self.labels) == 1:  # the default with one class: that class
            target = self.labels[0]
        if target not in options:
            raise ValueError(f"target {target!r} has no images here: this panel can show {options}")
        self.max_k = check_int(max_k, "max_k", 1, 20, hint="the most pictures one row of the panel shows")
        n = len(next(iter(self.sets.concepts.values())))
        self.random = random_set if random_set is not None else iw.random_images(n, seed=10_000 + seed)
        self._cavs: dict = {}
        self._class_sets: dict = {}
        controls = {
            "concept": dropdown("concept", names, concept),
            "negative": dropdown("vs", ["random", *names], "random"),
            "target": dropdown("class", options, target),
            "layer": int_slider("layer", layer, 0, _layer_count(model) - 1),
            "pooling": toggle("pooling", ["cls", "mean", "flatten"], pooling),
            "k": int_slider("k", k, 1, self.max_k),
        }
        super().__init__(controls)

    # -- cached pieces -----------------------------------------------------------------------------------------
    def _acts(self, images, layer, pooling):
        from xaikit.concepts.tcav import activations

        return activations(self.model, images, layer, pooling, self.processor)

    def _class_set(self, target: str, layer: int, pooling: str):
        """(images, class of each, activations) of the chosen class, or of every class."""
        key = (target, layer, pooling)
        if key not in self._class_sets:
            chosen = self.labels if target == _ALL_CLASSES else [target]
            parts = [np.asarray(self.sets.class_images(c)) for c in chosen]
            images = np.concatenate(parts)
            labels = [c for c, imgs in zip(chosen, parts, strict=True) for _ in range(len(imgs))]
            self._class_sets[key] = (images, labels, self._acts(images, layer, pooling))
        return self._class_sets[key]

    def _cav(self, concept: str, negative: str, layer: int, pooling: str):
        from xaikit.concepts.tcav import train_cav

        if concept == negative:
            raise ValueError(f"vs must differ from the concept: a CAV of {concept!r} against itself has no "
                             "direction; pick 'random' or another concept")
        key = (concept, negative, layer, pooling)
        if key not in self._cavs:
            other = self.random if negative == "random" else self.sets.concepts[negative]
            self._cavs[key] = train_cav(self._acts(self.sets.concepts[concept], layer, pooling),
                                        self._acts(other, layer, pooling), "logistic", self.seed, concept=concept,
                                        negative=negative, layer=layer, pooling=pooling)
        return self._cavs[key]

    def compute(self, concept, negative, target, layer, pooling, k):
        from xaikit.concepts.tcav import sort_activations

        cav = self._cav(concept, negative, layer, pooling)
        images, labels, acts = self._class_set(target, layer, pooling)
        ranking = sort_activations(acts, cav)
        top, bottom = ranking.top(k), ranking.bottom(k)  # k is checked against the number of images here
        return CAVSortView(ranking, cav, images, labels, top, bottom, k, target)

    # -- drawing: one layout; a change redraws two picture rows, the captions, the strip and the heading -----
    def _row(self, r, which) -> np.ndarray:
        """The row's pictures side by side in ``max_k`` slots (unused slots white), (H, max_k * (W + gap), 3)."""
        h, w = r.images.shape[1:3]
        row = np.full((h, self.max_k * (w + _GAP), 3), 255, np.uint8)
        for j, i in enumerate(getattr(r, which)):
            row[:, j * (w + _GAP): j * (w + _GAP) + w] = r.images[i]
        return row

    def _captions(self, r, which) -> list[str]:
        several = r.target == _ALL_CLASSES and len(self.labels) > 1
        out = [f"{r.labels[i]} {r.sort.similarity[i]:+.2f}" if several else f"{r.sort.similarity[i]:+.2f}"
               for i in getattr(r, which)]
        return out + [""] * (self.max_k - len(out))

    def _strip(self, r) -> np.ndarray:
        return np.array([[self.labels.index(r.labels[i]) for i in r.sort.order]])  # (1, N) class by rank

    def _heading(self, r) -> str:
        cav = r.cav
        return (f"{r.target} ({len(r.images)} pictures) by cosine with CAV({cav.concept} vs {cav.negative}), "
                f"block {cav.layer}, {cav.pooling}; CAV held-out accuracy {cav.accuracy:.2f}")

    def draw(self, fig, r):
        from matplotlib.colors import ListedColormap

        left, width = 0.1, 0.89
        slot = width / self.max_k
        h, w = r.images.shape[1:3]
        fig_w, fig_h = fig.get_size_inches()
        height = min(0.3, slot * fig_w * h / (w + _GAP) / fig_h)  # square pixels: a picture is as tall as wide
        rows, captions = [], []
        for which, y, name in (("top", 0.28 + height, "most\nsimilar"), ("bottom", 0.2, "least\nsimilar")):
            ax = fig.add_axes((left, y, width, height))
            ax.axis("off")
            rows.append(ax.imshow(self._row(r, which), extent=(0, 1, 0, 1), aspect="auto", interpolation="nearest"))
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1)
            fig.text(0.01, y + height / 2, name, fontsize=8, va="center")
            captions += [fig.text(left + (j + 0.47) * slot, y + height + 0.01, text, fontsize=6.5, ha="center")
                         for j, text in enumerate(self._captions(r, which))]
        strip_ax = fig.add_axes((left, 0.04, width, 0.05))
        strip_ax.set_xticks([])
        strip_ax.set_yticks([])
        colours = ListedColormap([OKABE_ITO[i % len(OKABE_ITO)] for i in range(len(self.labels))])
        strip = strip_ax.imshow(self._strip(r), extent=(0, 1, 0, 1), aspect="auto", cmap=colours, vmin=-0.5,
                                vmax=len(self.labels) - 0.5, interpolation="nearest")
        strip_ax.set_xlim(0, 1)
        strip_ax.set_ylim(0, 1)
        fig.text(0.01, 0.065, "all, by\nsimilarity", fontsize=7, va="center")
        for c, name in enumerate(self.labels):
            fig.text(left + 0.1 * c, 0.1, f"\u25a0 {name}", color=OKABE_ITO[c % len(OKABE_ITO)], fontsize=7)
        heading = fig.text(0.01, 0.93, self._heading(r), fontsize=8)
        self.animated = [*rows, strip, heading, *captions]
        return None

    def update_artists(self, fig, r):
        top, bottom, strip, heading, *captions = self.animated
        top.set_data(self._row(r, "top"))
        bottom.set_data(self._row(r, "bottom"))
        strip.set_data(self._strip(r))
        heading.set_text(self._heading(r))
        for text, caption in zip(captions, self._captions(r, "top") + self._captions(r, "bottom"), strict=True):
            text.set_text(caption)
        return None
