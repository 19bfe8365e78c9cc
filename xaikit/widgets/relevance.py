"""Notebook 07, section 4: where a ViT looks, beside the pixels the image world drew.

Pick a picture, a relevance method (:mod:`xaikit.image`, every method its registry lists) and a block; the panel shows the
picture, the ground-truth mask of the chosen part (:meth:`xaikit.models.imageworld.Scene.masks`) and the
relevance map over the patch grid, headed by its localisation (share of positive relevance on the mask)
and whether the pointing game hits, and by what the map cost: the forward and backward passes
counted by hooks on the ViT's blocks while the method ran (:func:`xaikit.models.passes.count_passes`) and its
wall time in ms. Colours: viridis for the mask, the diverging blue-red of
:mod:`xaikit.plotting` for the signed map (both colour-blind safe).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from xaikit.widgets.base import Panel, dropdown, int_slider

if TYPE_CHECKING:
    from collections.abc import Sequence

    from matplotlib.figure import Figure
    from torch import nn

    from xaikit.models.imageworld import Scene

__all__ = ["RelevancePanel"]

_PARTS = ("body", "legs_head", "foam", "background")


@dataclass
class RelevanceView:
    image: np.ndarray
    mask: np.ndarray
    rmap: np.ndarray
    method: str
    part: str
    block: int
    localisation: float
    pointing: bool
    target: str
    cost: object = None  # xaikit.models.passes.Cost of computing rmap (passes counted by hooks, seconds)


class RelevancePanel(Panel):
    """A ViT's relevance map for its predicted class beside a drawn ground-truth mask."""

    def __init__(self, model: nn.Module, scenes: Sequence[Scene], method: str = "chefer", block: int | None = None, part: str = "body",
                 index: int = 0):
        from xaikit.image.registry import method_names
        from xaikit.models import imageworld as iw

        self.model = model
        if isinstance(scenes, iw.Scene):
            scenes = [scenes]
        if scenes is None or isinstance(scenes, (str, bytes)) or not hasattr(scenes, "__iter__"):
            raise TypeError(f"scenes must be a non-empty list of imageworld.Scene, got {type(scenes).__name__}; "
                            "make them with imageworld.scenes('zebra', n)")
        self.scenes = list(scenes)
        if not self.scenes or not all(isinstance(s, iw.Scene) for s in self.scenes):
            raise TypeError("scenes must be a non-empty list of imageworld.Scene (imageworld.scenes('zebra', n))")
        n_blocks = model.config.num_hidden_layers
        block = n_blocks - 1 if block is None else block
        controls = {
            "index": int_slider("picture", index, 0, len(self.scenes) - 1),
            "method": dropdown("method", list(method_names()), method),
            "block": int_slider("block", block, 0, n_blocks - 1),
            "part": dropdown("mask", list(_PARTS), part, name="part"),
        }
        super().__init__(controls)

    def compute(self, index: int, method: str, block: int, part: str) -> RelevanceView:
        from xaikit.image.registry import prepare_image, relevance
        from xaikit.lab.pixel_scores import localisation, pointing_game
        from xaikit.models.passes import count_passes
        from xaikit.models.vitworld import to_pixels

        scene = self.scenes[index]
        image = scene.image()
        pixels = to_pixels(image[None])
        target = prepare_image(self.model, pixels).target  # the class, found before the method's passes are counted
        with count_passes(self.model) as passes:
            rmap, target = relevance(self.model, pixels, method, target=target, block=block)
        mask = scene.masks()[part]
        return RelevanceView(image, mask, rmap, method, part, block, localisation(rmap, mask),
                             pointing_game(rmap, mask), self.model.config.id2label[target], passes.cost)

    def draw(self, fig: Figure, r: RelevanceView) -> str:
        from xaikit import plotting

        axes = fig.subplots(1, 3)
        axes[0].imshow(r.image)
        axes[0].set_title(f"predicted: {r.target}", fontsize=9)
        axes[1].imshow(r.mask, cmap=plotting.SEQUENTIAL, vmin=0, vmax=1)
        axes[1].set_title(f"{r.part} (drawn)", fontsize=9)
        lim = max(float(np.abs(r.rmap).max()), 1e-12)
        axes[2].imshow(r.rmap, cmap=plotting.DIVERGING, vmin=-lim, vmax=lim)
        block = "" if r.method in ("grad_input", "ig") else f", block {r.block}"
        c = r.cost
        axes[2].set_title(f"{r.method}{block}\non {r.part}: {r.localisation:.2f}, "
                          f"pointing {'hit' if r.pointing else 'miss'}\n"
                          f"{c.forward:g} fwd, {c.backward:g} bwd, {1000 * c.seconds:.0f} ms", fontsize=9)
        for ax in axes:
            ax.axis("off")
        return (f'<p class="xk-cost"><small>{r.method} on this picture: {c.forward:g} forward and '
                f"{c.backward:g} backward passes (counted by hooks on the ViT's blocks), "
                f"{1000 * c.seconds:.0f} ms on this machine</small></p>")
