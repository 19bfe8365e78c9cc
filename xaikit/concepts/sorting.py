"""Images sorted by their similarity to a CAV: the qualitative check of Kim et al. 2018, "Interpretability
beyond feature attribution: quantitative testing with concept activation vectors (TCAV)", ICML, section 4.1
and Fig. 2 (notebook 07, section 3).

Before trusting a CAV, look at what it points at. Kim et al. take a class's images, compute the cosine
similarity between each image's activation at the CAV's layer and the CAV,

    ``sim(x) = a_l(x) . v_C / (|a_l(x)| |v_C|)``,

and show the most and the least similar images: under a "striped" CAV the most similar neckties are the
striped ones. Here the activation is pooled exactly as the CAV's activations were (``"cls"``, ``"mean"``
or ``"flatten"``, :mod:`xaikit.concepts.activations`), so the two live in one space.

:func:`sort_activations` does the arithmetic on activations already computed; :func:`sort_by_cav` computes
(and caches) them for a model, a layer and a pooling first. Both return a :class:`CAVSort` on the CPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from xaikit._validate import check_choice, check_int
from xaikit.concepts.cav import CAV

if TYPE_CHECKING:
    import torch

    from xaikit.concepts.images import ImageSet

__all__ = ["CAVSort", "sort_activations", "sort_by_cav"]


@dataclass
class CAVSort:
    """Images ordered by the cosine similarity of their activation with a CAV (Kim et al. 2018, Fig. 2)."""

    order: np.ndarray       # (N,) image indices, most similar to the CAV first
    similarity: np.ndarray  # (N,) cosine similarity of each image with the CAV, in the input's order
    concept: str
    negative: str
    layer: int
    pooling: str

    def __len__(self) -> int:
        return len(self.order)

    def _k(self, k) -> int:
        return check_int(k, "k", 1, len(self.order),
                         hint=f"how many images to take from one end of the {len(self.order)} sorted images")

    def top(self, k: int) -> np.ndarray:
        """The indices of the ``k`` images most similar to the CAV, most similar first."""
        return self.order[: self._k(k)]

    def bottom(self, k: int) -> np.ndarray:
        """The indices of the ``k`` images least similar to the CAV, least similar first."""
        return self.order[::-1][: self._k(k)]


def _vector(cav) -> np.ndarray:
    v = np.asarray(cav.vector if isinstance(cav, CAV) else cav, dtype=np.float64)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"cav must be a CAV or a vector (D,), got an array of shape {v.shape}; use "
                         "tcav.train_cav(...) or its .vector")
    if not np.isfinite(v).all() or not np.any(v):
        raise ValueError("cav must be a finite, non-zero vector: a zero direction has no cosine with anything")
    return v


def sort_activations(acts: np.ndarray, cav: CAV | np.ndarray | Sequence[float], concept: str | None = None,
                     negative: str | None = None, layer: int | None = None,
                     pooling: str | None = None) -> CAVSort:
    """Sort N activations (N, D) by their cosine similarity with ``cav`` (a :class:`~xaikit.concepts.cav.CAV`
    or a (D,) vector), most similar first; ties keep the input's order. An all-zero activation has no
    direction and gets similarity 0. The names and layer default to the CAV's."""
    v = _vector(cav)
    a = np.asarray(acts, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"acts must be activations (N, D), one row per image, got shape {a.shape}; pool them as "
                         "the CAV was trained (tcav.activations(model, images, layer, pooling))")
    if len(a) == 0:
        raise ValueError("acts is empty: there are no images to sort; pass at least one image's activation")
    if a.shape[1] != v.shape[0]:
        where = f" (layer {cav.layer}, pooling {cav.pooling!r})" if isinstance(cav, CAV) else ""
        raise ValueError(f"acts have {a.shape[1]} dimensions but the cav has {v.shape[0]}{where}; take the "
                         "activations at the CAV's layer with the CAV's pooling")
    if not np.isfinite(a).all():
        raise ValueError("acts contain NaN or inf; check the model's activations")
    norms = np.linalg.norm(a, axis=1)  # (N,)
    dots = a @ v  # (N,)
    similarity = np.divide(dots, norms * np.linalg.norm(v), out=np.zeros(len(a)), where=norms > 0)
    order = np.argsort(-similarity, kind="stable")
    is_cav = isinstance(cav, CAV)
    return CAVSort(order, similarity.astype(np.float32),
                   concept if concept is not None else (cav.concept if is_cav else "concept"),
                   negative if negative is not None else (cav.negative if is_cav else "negative"),
                   layer if layer is not None else (cav.layer if is_cav else -1),
                   pooling if pooling is not None else (cav.pooling if is_cav else ""))


def sort_by_cav(model: torch.nn.Module, images: ImageSet, cav: CAV | np.ndarray | Sequence[float],
                layer: int | None = None, pooling: str | None = None, processor: object | None = None,
                batch_size: int = 64) -> CAVSort:
    """Sort ``images`` by the cosine similarity of their activation at ``layer`` with ``cav`` (Kim et al.
    2018, Fig. 2), most similar first.

    With a :class:`~xaikit.concepts.cav.CAV`, ``layer`` and ``pooling`` default to the ones it was trained at
    (and must agree with them if given); with a bare (D,) vector, ``layer`` is required and ``pooling``
    defaults to ``"flatten"``. Activations are cached per model, as for TCAV itself.
    """
    from xaikit.concepts.activations import POOLINGS, _check_common, activations
    from xaikit.concepts.images import prepare_images
    from xaikit.models.arch import check_layer

    if isinstance(cav, CAV):
        if pooling is not None and cav.pooling and pooling != cav.pooling:
            raise ValueError(f"pooling={pooling!r}, but the cav was trained with pooling={cav.pooling!r}; leave pooling "
                             "out to use the CAV's, or train a CAV with that pooling")
        if layer is not None and cav.layer != -1 and check_layer(model, layer) != cav.layer:
            raise ValueError(f"layer={layer!r}, but the cav was trained with layer={cav.layer!r}; leave layer out to use "
                             "the CAV's, or train a CAV at that layer")
        layer = layer if cav.layer == -1 else cav.layer
        pooling = cav.pooling or pooling
        if layer is None:
            raise ValueError("the cav does not record its layer (it was trained from bare activations): pass layer=")
    elif layer is None:
        raise ValueError("layer is required when cav is a bare vector: pass the layer its activations came from")
    pooling = "flatten" if pooling is None else check_choice(pooling, "pooling", POOLINGS)
    layer = _check_common(model, layer, pooling)
    x = prepare_images(images, "images", min_count=1)  # a list of (H, W, 3) uint8 arrays
    a = activations(model, x, layer, pooling, processor, batch_size)  # (N, D)
    return sort_activations(a, cav, layer=layer, pooling=pooling)
