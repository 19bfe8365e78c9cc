"""What a model uses, found by changing the input: the ground truth that TCAV is checked against (notebook 05).

TCAV (Kim et al. 2018, "Interpretability beyond feature attribution: quantitative testing with concept
activation vectors (TCAV)", ICML) measures how a class logit would move if the activations moved along a
concept's direction. Whether the model *uses* the concept is a different question, and in a generated world
it can be answered without TCAV: take each class picture apart into its layers
(:class:`xaikit.models.imageworld.Scene`), repaint the object's body with another texture, or add or take
away the puddle of foam, keep every other pixel, and measure the class logit and probability. Kim et al.
(2018, section 4.3) check TCAV in the same spirit, on a dataset where they control what the label depends on:
each image carries a caption naming its class, replaced by a random word with a probability (the noise) they
choose, so how much a network can rely on the caption, rather than the picture, is set by the experimenter.

:func:`intervene` returns an :class:`InterventionTable`: per variant of every scene, the target logit and
probability. Each variant changes one layer of the scene:

* a texture name (``"striped"``, ``"plain"``, ``"dotted"``, ...): the body repainted with a new texture of that
  kind (new colours, scale and angle; ``"striped"`` on a zebra is thus a repainting with other stripes, the
  change that keeps the concept);
* ``"foam"`` / ``"no foam"``: the scene with a puddle of foam (its own, or a new one where it had none) and
  without one.

The scene as drawn is ``"original"``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from xaikit._types import Target
from xaikit._validate import check_choice, check_int, check_names
from xaikit.concepts.images import pixel_values, resolve_class
from xaikit.models import imageworld as iw

__all__ = ["InterventionTable", "intervene", "FOAM_VARIANTS"]

FOAM_VARIANTS = ("foam", "no foam")
#: what :meth:`InterventionTable.effect` measures: the target's logit or its probability
WHAT = ("logit", "prob")


@dataclass
class InterventionTable:
    """The target's logit and probability for every scene under every variant.

    Attributes:
        target: the class name; ``world``: the scenes' world.
        logits, probs: variant -> (n,) float64 arrays, scene by scene (``"original"``, the textures, the foam
            variants).
        has_foam: (n,) bool, whether each scene as drawn had a puddle of foam.
    """

    target: str
    world: str
    logits: dict[str, np.ndarray]
    probs: dict[str, np.ndarray]
    has_foam: np.ndarray
    textures: tuple[str, ...] = field(default=())

    @property
    def n(self) -> int:
        return len(self.has_foam)

    def effect(self, a: str, b: str, what: str = "logit") -> float:
        """Mean over scenes of (variant ``a``) minus (variant ``b``), for ``what`` = ``"logit"`` or ``"prob"``:
        the same scenes, one layer changed."""
        values = self._values(what)
        a = check_choice(a, "a", list(values))
        b = check_choice(b, "b", list(values))
        return float(np.mean(values[a] - values[b]))

    def _values(self, what: str) -> dict[str, np.ndarray]:
        """The logits (``what="logit"``) or probabilities (``"prob"``); any other word is refused, never read as
        one of them (``"logits"`` had given the probabilities)."""
        return self.logits if check_choice(what, "what", WHAT) == "logit" else self.probs

    def texture_effect(self, kind: str, what: str = "logit") -> float:
        """How much more the body painted ``kind`` gives than the average texture (the mean over
        :attr:`textures`, all painted on the same scenes): the intervention's counterpart of a concept scored
        against random collages of textures."""
        values = self._values(what)
        kind = check_choice(kind, "kind", list(self.textures))
        average = np.mean([values[t] for t in self.textures], axis=0)  # (n,)
        return float(np.mean(values[kind] - average))

    def foam_effect(self, what: str = "logit") -> float:
        """Mean over scenes of (with foam) minus (without foam)."""
        return self.effect("foam", "no foam", what)

    def rows(self) -> list[tuple[str, float, float]]:
        """``(variant, mean logit, mean probability)`` for every variant, the original first."""
        return [(v, float(self.logits[v].mean()), float(self.probs[v].mean())) for v in self.logits]

    def summary(self) -> str:
        lines = [f"{self.target} ({self.world} world, {self.n} scenes): mean logit / mean probability"]
        base = self.logits["original"].mean()
        for v, z, p in self.rows():
            lines.append(f"  {v:>10}: {z:7.2f} ({z - base:+6.2f})  p = {p:.3f}")
        return "\n".join(lines)


@torch.no_grad()
def _target_scores(model, images: Sequence[np.ndarray], index: int, processor, batch_size: int):
    """(logits, probabilities) of class ``index`` for a list of uint8 images, as float64 (n,) arrays."""
    model.eval()
    dev = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    z, p = [], []
    for i in range(0, len(images), batch_size):
        x = pixel_values(model, list(images[i:i + batch_size]), processor).to(dev, dtype)
        logits = model(pixel_values=x).logits.float()  # (B, classes)
        z.append(logits[:, index].cpu().numpy())
        p.append(logits.softmax(-1)[:, index].cpu().numpy())
    return np.concatenate(z).astype(np.float64), np.concatenate(p).astype(np.float64)


def intervene(model: torch.nn.Module, scenes: Sequence[iw.Scene], *, target: Target = "zebra",
              textures: Sequence[str] = iw.TEXTURES, seed: int = 0, processor: Callable | None = None,
              batch_size: int = 200) -> InterventionTable:
    """Repaint every scene's body with each of ``textures`` and add / take away its foam, everything else kept;
    measure ``target``'s logit and probability on ``model`` (see the module docstring).

    Each scene i gets its new textures from ``default_rng([seed, i, texture index, 61])`` and a new puddle, where
    it had none, from ``default_rng([seed, i, 67])``, so a table is the same whatever else is asked.
    """
    scenes = list(scenes)
    if not scenes or not all(isinstance(s, iw.Scene) for s in scenes):
        raise TypeError("scenes must be a non-empty list of imageworld.Scene (imageworld.scenes(label, n, world))")
    seed = check_int(seed, "seed", 0)
    textures = tuple(check_names(textures, "textures", iw.TEXTURES))  # one str is refused, not read letter by letter
    index, name = resolve_class(model, target)
    variants: dict[str, list[np.ndarray]] = {"original": [s.image() for s in scenes]}
    for t in textures:
        k = iw.TEXTURES.index(t)
        variants[t] = [iw.repaint(s, t, np.random.default_rng([seed, i, k, 61])).image() for i, s in enumerate(scenes)]
    variants["foam"] = [iw.with_foam(s, np.random.default_rng([seed, i, 67])).image() for i, s in enumerate(scenes)]
    variants["no foam"] = [iw.without_foam(s).image() for s in scenes]
    logits, probs = {}, {}
    for v, images in variants.items():
        logits[v], probs[v] = _target_scores(model, images, index, processor, batch_size)
    return InterventionTable(name, scenes[0].world, logits, probs, np.array([s.has_foam for s in scenes]), textures)
