"""The panel of notebook 07, section 3: a class's images sorted by the cosine of their activation with a
CAV (Kim et al. 2018, "Interpretability beyond feature attribution: quantitative testing with concept
activation vectors", Fig. 2), over :func:`xaikit.concepts.sorting.sort_activations`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from xaikit.concepts.cav import CAV
from xaikit.concepts.sorting import CAVSort
from xaikit.plotting import OKABE_ITO
from xaikit.widgets.base import Panel, dropdown, int_slider, toggle
from xaikit.widgets.tcav import ImageSets, class_labels, layer_count, panel_layer

if TYPE_CHECKING:
    from collections.abc import Mapping

    from matplotlib.figure import Figure
    from torch import nn

__all__ = ["CAVSortPanel", "CAVSortView"]


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
    background (one layout for every ``k`` and class). Notebook 07, section 3.
    """

    title = "Images sorted by a CAV: the most and the least concept-like"
    figsize = (8.0, 3.0)
    layout = None  # a fixed grid placed by hand: constrained layout would cost most of the redraw

    def __init__(self, model: nn.Module, processor: object | None = None,
                 concept_sets: Mapping[str, np.ndarray] | None = None,
                 class_images: Mapping[str, np.ndarray] | np.ndarray | None = None, world: str = "main",
                 target: str = _ALL_CLASSES, concept: str = "striped", layer: int = 0, pooling: str = "flatten",
                 k: int = 5, max_k: int = 10, random_set: np.ndarray | None = None, seed: int = 0):
        from xaikit._validate import check_int
        from xaikit.models import imageworld as iw

        self.model, self.processor, self.seed = model, processor, seed
        self.sets = ImageSets(concept_sets, class_images, world, target=target)
        names = list(self.sets.concepts)
        if concept not in names:
            raise ValueError(f"concept {concept!r} has no images here; the concept sets are {names}")
        self.labels = self.sets.classes(class_labels(model))
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
            "layer": int_slider("layer", panel_layer(model, layer), 0, layer_count(model) - 1),
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

    def compute(self, concept: str, negative: str, target: str, layer: int, pooling: str, k: int) -> CAVSortView:
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

    def draw(self, fig: Figure, r: CAVSortView) -> None:
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

    def update_artists(self, fig: Figure, r: CAVSortView) -> None:
        top, bottom, strip, heading, *captions = self.animated
        top.set_data(self._row(r, "top"))
        bottom.set_data(self._row(r, "bottom"))
        strip.set_data(self._strip(r))
        heading.set_text(self._heading(r))
        for text, caption in zip(captions, self._captions(r, "top") + self._captions(r, "bottom"), strict=True):
            text.set_text(caption)
        return None
