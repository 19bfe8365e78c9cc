"""The sanity-check panel of notebook 01, section 5 (Adebayo et al. 2018, "Sanity Checks for Saliency Maps").

:class:`SanityCheckPanel` shows one digit's gradient, gradient x input, SmoothGrad and Integrated Gradients
maps side by side for three models: the trained digits CNN, a copy with its top ``layers`` layers
re-initialised (:func:`xaikit.lab.tensor_sanity.cascading_randomisation`, the slider) and the same CNN trained on
shuffled labels (:func:`xaikit.lab.tensor_sanity.data_randomised_digits`). Each randomised map is titled with its
Spearman rank correlation (of absolute values) and SSIM to the trained model's map. All three models are
asked about the class the trained model predicts.

The maps are computed by :func:`xaikit.lab.tensor_sanity.sanity_maps` and kept in small caches, so moving the
slider back and forth recomputes nothing; a change only updates the image data and titles (blitting).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from xaikit.lab import tensor_sanity as S
from xaikit.plotting import DIVERGING, SEQUENTIAL
from xaikit.tensor import toys
from xaikit.widgets.base import dropdown, int_slider, lru_get, toggle
from xaikit.widgets.toy import ToyPanel

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["SanityCheckPanel", "SanityResult"]

#: the panel's rows: which model each map explains
ROWS = ("trained", "randomised", "shuffled labels")


@dataclass
class SanityResult:
    """What :class:`SanityCheckPanel` shows for one digit and one number of randomised layers.

    Attributes:
        image: the test image index; ``x`` the image ``(1, 8, 8)``; ``label`` its true digit.
        target: the class every model is asked about (the trained model's prediction).
        layers: how many layers are randomised; ``randomised`` their names, from the top.
        maps: ``maps[row][method]``, ``row`` one of :data:`ROWS`, ``method`` one of the panel's ``methods``.
        similarity: ``similarity[row][method]`` to the trained model's map, for the two other rows.
        values: ``"signed"`` or ``"absolute"``: how the maps are drawn.
    """

    image: int
    x: torch.Tensor
    label: int
    target: int
    layers: int
    randomised: list[str]
    maps: dict[str, dict[str, torch.Tensor]]
    similarity: dict[str, dict[str, S.Similarity]]
    values: str


class SanityCheckPanel(ToyPanel):
    """Cascading randomisation and data randomisation of the digits CNN, map by map (Adebayo et al. 2018).

    Controls: image (a test digit), layers (how many layers are re-initialised, from the top: 0 is the
    trained model, the maximum every layer), values (signed maps on a diverging scale, or their absolute
    values on a sequential one). Each map is divided by its largest absolute value. ``methods``: the
    columns, names of :mod:`xaikit.tensor.registry` (default: the lecture's four,
    :data:`~xaikit.lab.tensor_sanity.METHODS`).
    """

    title = "Sanity checks: randomise the model, or its training labels"
    figsize = (9.0, 5.6)

    def __init__(self, trained: toys.TrainedDigits | None = None, shuffled: toys.TrainedDigits | None = None,
                 n_images: int = 12, layers: int = 0, values: str = "absolute", seed: int = 0, n: int = 20,
                 steps: int = 16, methods: Sequence[str] | None = None):
        from xaikit._validate import check_int, check_names
        from xaikit.tensor import registry

        n_images = check_int(n_images, "n_images", 1, hint="how many test digits the image menu offers, e.g. 12")
        self.trained = trained or toys.digits_classifier()
        self.shuffled = shuffled or S.data_randomised_digits(seed=self.trained.seed)  # its own, longer training
        self.seed, self.options = seed, dict(n=n, steps=steps)
        # the columns: the lecture's four, or any methods of the tensor registry as it is now
        self.methods = tuple(S.METHODS if methods is None
                             else check_names(methods, "methods", registry.names()))
        self.layer_names = S.layers_from_top(self.trained.model)
        self._models: OrderedDict = OrderedDict()
        self._maps: OrderedDict = OrderedDict()
        self._sims: OrderedDict = OrderedDict()
        data = self.trained.data
        options = [(f"test #{i}: a {int(data.test_y[i])}", i) for i in range(min(n_images, len(data.test_y)))]
        super().__init__({
            "image": dropdown("image", options),
            "layers": int_slider("layers randomised", layers, 0, len(self.layer_names), name="layers"),
            "values": toggle("values", ["absolute", "signed"], values),
        })

    def _model(self, layers: int):
        return lru_get(self._models, layers, len(self.layer_names) + 1,
                       lambda: S.cascading_randomisation(self.trained.model, layers, seed=self.seed))[0]

    def _maps_for(self, key, model, x, target):
        return lru_get(self._maps, key, 64, lambda: S.sanity_maps(model, x, target=target, seed=0,
                                                                  methods=self.methods, **self.options))[0]

    def compute(self, image: int, layers: int, values: str) -> SanityResult:
        model = self.trained.model
        x = self.trained.data.test_x[image]  # (1, 8, 8)
        with torch.no_grad():
            target = int(model(x[None]).argmax())
        maps = {"trained": self._maps_for(("trained", image), model, x, target),
                "randomised": self._maps_for(("randomised", image, layers), self._model(layers), x, target),
                "shuffled labels": self._maps_for(("shuffled", image), self.shuffled.model, x, target)}
        sims = {row: lru_get(self._sims, (row, image, layers if row == "randomised" else None), 64,
                             lambda row=row: {m: S.similarity(maps["trained"][m], maps[row][m]) for m in self.methods})[0]
                for row in ROWS[1:]}
        return SanityResult(image, x, int(self.trained.data.test_y[image]), target, layers,
                            self.layer_names[:layers], maps, sims, values)

    def draw(self, fig: Figure, r: SanityResult) -> None:
        n_rows, n_cols = len(ROWS), len(self.methods) + 1
        axes = fig.subplots(n_rows, n_cols, gridspec_kw=dict(left=0.01, right=0.99, bottom=0.02, top=0.9,
                                                             wspace=0.25, hspace=0.55))
        blank = np.zeros((8, 8))
        self._digit = axes[0, 0].imshow(blank, cmap="gray_r", vmin=0, vmax=1, interpolation="nearest")
        self._ims = [[axes[i, j + 1].imshow(blank, cmap=DIVERGING, vmin=-1, vmax=1, interpolation="nearest")
                      for j in range(n_cols - 1)] for i in range(n_rows)]
        for ax in axes.ravel():
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(" \n ", fontsize=8)
        for ax in axes[0, 1:]:  # static: drawn once, in the background
            ax.set_title("trained model", fontsize=8)
        for i in (1, 2):
            axes[i, 0].set_axis_off()
        self._notes = [axes[i, 0].text(0.0, 0.5, "", fontsize=8, va="center", transform=axes[i, 0].transAxes)
                       for i in (1, 2)]
        self._notes[1].set_text(f"trained on\nshuffled labels\n(test accuracy\n{self.shuffled.accuracy:.2f})")
        for j, name in enumerate(self.methods):
            fig.text((j + 1.5) / n_cols, 0.965, name, ha="center", fontsize=9, weight="bold")
        self._axes = axes
        self._shown_values = None
        # what an update changes: the images, the digit's title, the randomised layers and the similarities
        self.animated = [self._digit, *(im for row in self._ims for im in row), self._notes[0], axes[0, 0].title,
                         *(ax.title for ax in axes[1:, 1:].ravel())]
        return self.update_artists(fig, r)

    def update_artists(self, fig: Figure, r: SanityResult) -> None:
        axes = self._axes
        if r.values != self._shown_values:  # a new colour scale: redraw the background
            for row in self._ims:
                for im in row:
                    im.set_cmap(SEQUENTIAL if r.values == "absolute" else DIVERGING)
                    im.set_clim(0 if r.values == "absolute" else -1, 1)
            self._shown_values = r.values
            self.invalidate()
        self._digit.set_data(r.x[0].numpy())
        axes[0, 0].set_title(f"digit {r.label}; every model\nexplains class {r.target}", fontsize=8)
        randomised = ", ".join(r.randomised) if r.randomised else "none"
        self._notes[0].set_text(f"top {r.layers} of {len(self.layer_names)}\nlayers randomised:\n{randomised}")
        for i, row in enumerate(ROWS):
            for j, method in enumerate(self.methods):
                m = r.maps[row][method][0]
                m = m.abs() if r.values == "absolute" else m
                self._ims[i][j].set_data((m / m.abs().max().clamp(min=1e-30)).numpy())
                if i > 0:
                    s = r.similarity[row][method]
                    axes[i, j + 1].set_title(f"Spearman |.| {s.spearman_abs:.2f}\nSSIM {s.ssim:.2f}", fontsize=8)
        return None
