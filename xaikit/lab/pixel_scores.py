"""Where a ViT looks, scored against the pixels we drew (notebook 07, section 4).

The image family's relevance maps (:func:`xaikit.image.registry.relevance`, every registered method) scored
against the image world's own ground truth (:meth:`xaikit.models.imageworld.Scene.masks`): the share of the
positive relevance on the object's body (:func:`localisation`), the pointing game (:func:`pointing_game`), and
Chefer et al.'s perturbation test (:func:`perturbation_curve`: patches removed by decreasing or increasing
relevance, or at random), each method's passes counted (:func:`xaikit.models.passes.count_passes`);
:func:`compare_methods` runs them all over a set of scenes.

The ground-truth masks are pooled to patches (the fraction of each patch's pixels in the mask), which is the
same as upsampling patch relevance uniformly to its pixels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from xaikit._types import Target
from xaikit._validate import bool_flags, check_int, check_names
from xaikit.concepts.images import resolve_class
from xaikit.image import registry

if TYPE_CHECKING:
    from xaikit.models.imageworld import Scene

__all__ = ["pool_mask", "localisation", "pointing_game", "perturbation_curve", "PerturbationResult", "MethodRow",
           "compare_methods"]


def _grid(model) -> int:
    c = model.config
    return c.image_size // c.patch_size


def pool_mask(mask: np.ndarray, grid: int) -> np.ndarray:
    """A (H, W) bool mask pooled to a (grid, grid) patch grid: the fraction of each patch's pixels set."""
    m = np.asarray(mask, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] % grid:
        raise ValueError(f"mask must be a square (H, W) array whose side the {grid}x{grid} patch grid divides "
                         f"(the picture's own size), got shape {m.shape}: use scene.masks()['body']")
    h = m.shape[0] // grid
    return m.reshape(grid, h, grid, h).mean((1, 3))


def localisation(rmap: np.ndarray, mask: np.ndarray) -> float:
    """Share of the positive relevance that lies on ``mask`` (pixels; pooled to the map's grid).

    NaN when the map has no positive relevance at all (nothing to share out). A map holding NaN or inf and
    an empty mask are refused: the share would be NaN, or 0 whatever the map."""
    rmap, frac = _map_and_mask(rmap, mask, "localisation")
    pos = np.clip(rmap, 0, None)
    total = pos.sum()
    if total <= 0:
        return float("nan")
    return float((pos * frac).sum() / total)


def _map_and_mask(rmap, mask, method: str) -> tuple[np.ndarray, np.ndarray]:
    """A finite square relevance map and the mask pooled to its grid, the mask holding at least one pixel."""
    rmap = np.asarray(rmap, dtype=np.float64)
    if rmap.ndim != 2 or rmap.shape[0] != rmap.shape[1] or rmap.size == 0:
        raise ValueError(f"{method}: rmap must be a square (grid, grid) relevance map, got shape {rmap.shape}")
    if not np.isfinite(rmap).all():
        raise ValueError(f"{method}: rmap holds NaN or inf (first at {tuple(int(i) for i in np.argwhere(~np.isfinite(rmap))[0])}), "
                         "so the share of relevance on the mask is undefined; the map came from a failed "
                         "computation (check the image for NaN pixels) or pass a finite map")
    frac = pool_mask(mask, rmap.shape[0])
    if not (np.asarray(mask) != 0).any():
        raise ValueError(f"{method}: mask is empty (no pixel set), so no relevance can lie on it and the score "
                         "would say the map missed the object, whatever the map; pass the object's mask, e.g. "
                         "scene.masks()['body']")
    return rmap, frac


def pointing_game(rmap: np.ndarray, mask: np.ndarray) -> bool:
    """Whether the patch of highest relevance lies on ``mask``: at least half its pixels in it."""
    rmap, frac = _map_and_mask(rmap, mask, "pointing_game")
    return bool(frac.ravel()[int(np.argmax(rmap))] >= 0.5)


@dataclass
class PerturbationResult:
    """Chefer et al.'s perturbation test on one image: ``fractions`` of patches removed (set to grey, 0 after
    normalising) and the probability of the originally predicted class after each step."""

    fractions: np.ndarray
    probs: np.ndarray

    @property
    def auc(self) -> float:
        """Area under the probability curve over the removed fraction (trapezoid rule)."""
        return float(np.trapezoid(self.probs, self.fractions))


def perturbation_curve(model: torch.nn.Module, pixels: torch.Tensor, order: np.ndarray, target: Target,
                       fractions: Sequence[float] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
                       ) -> PerturbationResult:
    """Remove patches in ``order`` (patch indices, first removed first): the positive test passes the
    patches by decreasing relevance, the negative by increasing, the control a random permutation."""
    g = _grid(model)
    p = model.config.patch_size
    target = resolve_class(model, target)[0] if isinstance(target, str) else check_int(
        target, "target", 0, model.config.num_labels - 1, hint=f"the model has {model.config.num_labels} classes")
    order = np.array(order, dtype=np.int64)
    if sorted(order.tolist()) != list(range(g * g)):
        raise ValueError(f"order must be a permutation of the {g * g} patch indices")
    batch = []
    for f in fractions:
        keep = torch.ones(g * g)
        keep[torch.as_tensor(order[: int(round(f * g * g))], dtype=torch.long)] = 0
        m = keep.reshape(g, 1, g, 1).expand(g, p, g, p).reshape(g * p, g * p)
        batch.append(pixels[0] * m)
    with torch.no_grad():
        probs = model(pixel_values=torch.stack(batch)).logits.softmax(-1)[:, target]
    return PerturbationResult(np.asarray(fractions, dtype=np.float64), probs.double().numpy())


@dataclass
class MethodRow:
    """One method's means over the scenes: ``localisation`` (share of positive relevance on the body),
    ``body_area`` (the body's share of the frame: what a map spread evenly would score), ``pointing`` (the
    pointing game's hit rate), ``pos_auc`` / ``neg_auc`` (perturbation AUCs, NaN when not run), and its cost:
    ``forward`` / ``backward`` passes per image counted by :func:`xaikit.models.passes.count_passes`, ``seconds``
    per image."""

    method: str
    localisation: float
    body_area: float
    pointing: float
    pos_auc: float
    neg_auc: float
    forward: float
    backward: float
    seconds: float


@bool_flags
def compare_methods(model: torch.nn.Module, scenes: Sequence[Scene], methods: Sequence[str] | None = None, *,
                    perturb: bool = True, seed: int = 0, steps: int = 16) -> tuple[list[MethodRow], float]:
    """Every method in ``methods`` (default: every registered image method,
    :func:`xaikit.image.registry.method_names`) on the predicted class of every scene
    (``imageworld.Scene``): a list of :class:`MethodRow`, and the random-order control's positive AUC (NaN
    without ``perturb``). The predicted class is found once per scene (the family's entry), outside each
    method's counted passes."""
    from xaikit.models.passes import count_passes
    from xaikit.models.vitworld import to_pixels

    names = registry.method_names()
    methods = names if methods is None else check_names(methods, "methods", names)
    scenes = list(scenes)
    if not scenes:
        raise ValueError("scenes must hold at least one imageworld.Scene (imageworld.scenes('zebra', n, world))")
    from xaikit._fn import ensure_eval
    from xaikit.policies import method_threads

    ensure_eval(model, "compare_methods")  # before the first pass: the class found once per scene is eval mode's
    with method_threads(model):  # xaikit.policies: one thread for the embedded ViTs
        return _compare(model, scenes, methods, perturb, check_int(seed, "seed", 0), steps, count_passes, to_pixels)


def _compare(model, scenes, methods, perturb, seed, steps, count_passes, to_pixels):
    rng = np.random.default_rng(seed)
    acc = {m: [] for m in methods}
    rand = []
    for scene in scenes:
        pixels = to_pixels(scene.image()[None])
        body = scene.masks()["body"]
        target = registry.prepare_image(model, pixels).target
        for m in methods:
            with count_passes(model) as cost:
                rmap, _ = registry.relevance(model, pixels, m, target=target, steps=steps)
            row = [localisation(rmap, body), body.mean(), pointing_game(rmap, body), np.nan, np.nan,
                   cost.forward, cost.backward, cost.seconds]
            if perturb:
                order = np.argsort(-rmap.ravel(), kind="stable")
                row[3] = perturbation_curve(model, pixels, order, target).auc
                row[4] = perturbation_curve(model, pixels, order[::-1], target).auc
            acc[m].append(row)
        if perturb:
            rand.append(perturbation_curve(model, pixels, rng.permutation(rmap.size), target).auc)
    rows = []
    for m in methods:
        table = np.array(acc[m], dtype=np.float64)  # (scenes, 8)
        means = [float(np.nanmean(c)) if np.isfinite(c).any() else float("nan") for c in table.T]
        rows.append(MethodRow(m, *means))
    return rows, (float(np.mean(rand)) if perturb else float("nan"))
