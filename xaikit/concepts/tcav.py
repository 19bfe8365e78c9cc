"""Testing with Concept Activation Vectors (TCAV), Kim et al. 2018, "Interpretability beyond feature
attribution: quantitative testing with concept activation vectors (TCAV)", ICML. Notebook 05.

For a layer l of a model, a concept C (a set of example images, e.g. "striped") and a counterpart set
(random images or another concept):

1. **Activations** ``a_l(x)`` of both sets at layer l (:mod:`xaikit.concepts.activations`, with the image
   input of :mod:`xaikit.concepts.images`).
2. **CAV** ``v_C``: the unit normal of a linear classifier that separates the concept's activations from
   the counterpart's, pointing towards the concept (:mod:`xaikit.concepts.cav`).
3. **Directional derivative** of the class logit ``h_k`` along the CAV, for each image x of class k:
   ``S_C,k,l(x) = grad h_k(a_l(x)) . v_C`` (:mod:`xaikit.concepts.activations`).
4. **TCAV score**: ``TCAV_Q = |{x in X_k : S(x) > 0}| / |X_k|``, the fraction of class images whose logit
   rises when the concept is added; the magnitude variant is ``sum_{S>0} S / sum |S|`` (Captum's
   ``magnitude`` score; Kim et al. 2018, section 3.4, only suggest using magnitudes).
5. **Significance** (:func:`tcav_significance`, :mod:`xaikit.concepts.significance`): repeat with R random
   counterpart sets, compare the R scores with R scores of random-vs-random CAVs by a two-sided t-test, and
   Bonferroni-correct across the concepts tested.

Beside the score, the paper's qualitative check (its Fig. 2): a class's images sorted by the cosine
similarity of their activations with the CAV (:func:`sort_by_cav`, :mod:`xaikit.concepts.sorting`).

This module holds the entry points (:func:`tcav`, :func:`pair_scores`, :func:`layer_sweep`) and re-exports
the names of the modules above, so ``from xaikit.concepts import tcav`` reaches all of them.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from xaikit._types import Target
from xaikit._validate import SKLEARN_SEED_MAX, bool_flags, check_choice, check_seed
from xaikit.concepts.activations import (
    POOLINGS,
    _activations,
    _check_common,
    _directional_derivatives,
    _score,
    activations,
    clear_cache,
    directional_derivatives,
    gradients,
)
from xaikit.concepts.cav import CAV, CHANCE_ACCURACY, CLASSIFIERS, train_cav
from xaikit.concepts.images import _imgs, pixel_values, prepare_images, resolve_class
from xaikit.concepts.significance import (
    ALTERNATIVES,
    ConceptSignificance,
    SignificanceResult,
    rank_p,
    t_test,
    tcav_significance,
)
from xaikit.concepts.sorting import CAVSort, sort_activations, sort_by_cav

if TYPE_CHECKING:
    from xaikit.concepts.images import ImageSet

__all__ = [
    "POOLINGS", "CLASSIFIERS", "CHANCE_ACCURACY", "CAV", "TCAVResult", "ConceptSignificance", "SignificanceResult",
    "LayerSweep", "prepare_images", "pixel_values", "activations", "gradients", "train_cav", "directional_derivatives", "tcav",
    "tcav_significance", "rank_p", "ALTERNATIVES", "layer_sweep", "pair_scores", "LECTURE_PAIRS", "t_test", "resolve_class", "clear_cache",
    "CAVSort", "sort_by_cav", "sort_activations", "choose_layer",
]


@dataclass
class TCAVResult:
    """One TCAV score with what a figure needs: the per-image directional derivatives and the CAV."""

    score: float           # fraction of class images with S > 0
    magnitude: float       # sum of positive S over sum of |S|
    derivatives: np.ndarray  # (N,) S(x) for each class image
    cav: CAV
    target: str
    target_index: int


@dataclass
class LayerSweep:
    """TCAV by layer: ``mean[c, l]`` is concept c's mean score at ``layers[l]``."""

    layers: list[int]
    concepts: list[str]
    mean: np.ndarray            # (C, L)
    std: np.ndarray             # (C, L)
    significant: np.ndarray     # (C, L) bool
    cav_accuracy: np.ndarray    # (C, L)
    random_mean: np.ndarray     # (L,)
    results: list[SignificanceResult] = field(repr=False)


def tcav(model: torch.nn.Module, concept_images: ImageSet, negative_images: ImageSet,
         class_images: ImageSet, *, target: Target, layer: int, pooling: str = "flatten",
         classifier: str = "logistic", processor: object | None = None, seed: int = 0, concept: str = "concept",
         negative: str = "negative") -> TCAVResult:
    """The TCAV score of one CAV (concept vs negative) for ``target`` at ``layer`` (Kim et al. 2018)."""
    layer = _check_common(model, layer, pooling)
    idx, label = resolve_class(model, target)
    check_choice(classifier, "classifier", CLASSIFIERS)
    seed = check_seed(seed, maximum=SKLEARN_SEED_MAX)
    return _tcav(model, concept_images, negative_images, class_images, idx, label, layer, pooling, classifier,
                 processor, seed, concept, negative)


def _tcav(model, concept_images, negative_images, class_images, index: int, label: str, layer: int,
          pooling: str, classifier: str, processor, seed: int, concept: str,
          negative: str) -> TCAVResult:
    """:func:`tcav` with the model, class, block index, pooling, classifier and seed already checked: the
    image sets are read and the activations taken, nothing is checked twice."""
    def pixels(images, name):
        return pixel_values(model, _imgs(images, name), processor, name)

    a_pos = _activations(model, pixels(concept_images, "concept_images"), layer, pooling)
    a_neg = _activations(model, pixels(negative_images, "negative_images"), layer, pooling)
    cav = train_cav(a_pos, a_neg, classifier, seed, concept=concept, negative=negative, layer=layer, pooling=pooling)
    if cav.near_chance:
        warnings.warn(f"tcav: the CAV of {concept!r} vs {negative!r} has held-out accuracy {cav.accuracy:.2f}, near "
                      f"chance: the two sets look alike at layer {layer}, so its TCAV score means nothing. Use sets "
                      "that differ in the concept (and not the same images twice)", UserWarning, stacklevel=3)
    s = _directional_derivatives(model, pixels(class_images, "class_images"), layer, cav.vector, index, pooling)
    score, magnitude = _score(s)
    return TCAVResult(score, magnitude, s, cav, label, index)


#: the lecture's four pairs (concept, counterpart) for "zebra" and the scores it quotes
LECTURE_PAIRS = {("striped", "dotted"): 0.95, ("bubbly", "striped"): 0.1, ("dotted", "bubbly"): 0.05,
                 ("striped", "bubbly"): 0.95}


def pair_scores(model: torch.nn.Module, concept_sets: Mapping[str, object], class_images: ImageSet, *,
                target: Target, layer: int, pairs: Sequence[tuple[str, str]] = tuple(LECTURE_PAIRS),
                **kwargs: Any) -> dict[tuple[str, str], float]:
    """TCAV score of each (concept, counterpart) pair, e.g. the lecture's striped-vs-dotted for zebra;
    ``kwargs`` go to :func:`tcav` (pooling, classifier, processor, seed)."""
    if isinstance(pairs, (tuple, list)) and len(pairs) == 2 and all(isinstance(p, str) for p in pairs):
        raise ValueError(f"pairs must be a list of (concept, counterpart) pairs, got one pair {tuple(pairs)!r}; "
                         f"pass pairs=[{tuple(pairs)!r}]")
    if isinstance(pairs, str) or not all(isinstance(p, (tuple, list)) and len(p) == 2 for p in pairs):
        raise ValueError(f"pairs must be a list of (concept, counterpart) pairs, e.g. [('striped', 'dotted')], "
                         f"got {pairs!r}")
    missing = sorted({c for p in pairs for c in p} - set(concept_sets))
    if missing:
        raise ValueError(f"concept_sets has no images for {missing}; it has {sorted(concept_sets)}")
    options = {"pooling": "flatten", "classifier": "logistic", "processor": None, "seed": 0}
    unknown = sorted(set(kwargs) - set(options))
    if unknown:
        raise TypeError(f"pair_scores got unexpected keyword arguments {unknown}; it takes {sorted(options)}")
    options.update(kwargs)
    layer = _check_common(model, layer, options["pooling"])
    idx, label = resolve_class(model, target)
    check_choice(options["classifier"], "classifier", CLASSIFIERS)
    seed = check_seed(options["seed"], maximum=SKLEARN_SEED_MAX)
    return {(a, b): _tcav(model, concept_sets[a], concept_sets[b], class_images, idx, label, layer,
                          options["pooling"], options["classifier"], options["processor"], seed, a, b).score
            for a, b in pairs}


@bool_flags
def layer_sweep(model: torch.nn.Module, concepts: Mapping[str, object], class_images: ImageSet, *,
                target: Target, layers: Sequence[int] | None = None, progress: bool = True,
                **kwargs: Any) -> LayerSweep:
    """:func:`tcav_significance` at every layer (or ``layers``); ``kwargs`` go to it (R, pooling, ...)."""
    from tqdm.auto import tqdm

    from xaikit.models.arch import check_layer, n_layers

    layers = list(range(n_layers(model))) if layers is None else [check_layer(model, i) for i in layers]
    results = [tcav_significance(model, concepts, class_images, target=target, layer=layer, **kwargs)
               for layer in tqdm(layers, desc="layers", disable=not progress, leave=False)]
    names = list(concepts)
    get = lambda f: np.array([[f(r[c]) for r in results] for c in names])  # noqa: E731
    return LayerSweep(layers, names, get(lambda c: c.mean), get(lambda c: c.std), get(lambda c: c.significant),
                      get(lambda c: c.cav_accuracy), np.array([r.random_scores.mean() for r in results]), results)


def choose_layer(accuracy: np.ndarray | Sequence[float], threshold: float = 0.9) -> int | None:
    """Notebook 05's layer rule, fixed before any TCAV score is seen: the deepest block whose every token still
    reaches the classifier (not the last: after it only [CLS] is read) at which a CAV reaches ``threshold``
    held-out accuracy. ``accuracy`` (blocks,) is that CAV's held-out accuracy at every block, 0 to the last;
    ``None`` if no candidate block reaches the threshold."""
    acc = np.asarray(accuracy, dtype=np.float64)
    if acc.ndim != 1 or len(acc) < 2:
        raise ValueError(f"accuracy must hold one value per block (at least 2 blocks), got shape {acc.shape}")
    ok = np.flatnonzero(acc[:-1] >= threshold)
    return int(ok[-1]) if len(ok) else None
