"""Sanity checks for saliency maps: does the map depend on what the model learned? (notebook 01, section 5)

Adebayo, Gilmer, Muelly, Goodfellow, Hardt & Kim (2018), "Sanity Checks for Saliency Maps", NeurIPS.
An explanation that is meant to show what a model learned must change when the model forgets it. Two tests:

* **Model randomisation, cascading** (:func:`cascading_randomisation`): re-initialise the weights layer by
  layer from the top (the output layer first, then the one below, ...) and compare each method's map on
  the randomised model with its map on the trained one. A map that barely changes shows the input (or the
  architecture), not what the weights learned.
* **Data randomisation** (:func:`data_randomised_digits`): train the same network on labels permuted
  before training, so no image keeps a reason for its label, and compare again.

The similarity of two maps (:func:`similarity`) is measured as in the paper: Spearman rank correlation of
the maps with and without absolute values (:func:`spearman`) and the structural similarity index SSIM
(Wang et al. 2004) of the maps scaled to [0, 1] (:func:`ssim`, scikit-image's implementation).
:func:`sanity_maps` computes the four maps the notebook compares (gradient, gradient x input, SmoothGrad,
Integrated Gradients), :func:`cascade_scores` the similarities of a whole cascade over many images and
:func:`compare_models` those of two models (the data randomisation test).
"""

from __future__ import annotations

import copy
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from xaikit import _fn
from xaikit._types import Input
from xaikit._validate import bool_flags, check_choice, check_int, check_names, check_same_shape
from xaikit.policies import method_threads
from xaikit.tensor import registry

if TYPE_CHECKING:
    from xaikit.models.digits import TrainedDigits

__all__ = ["METHODS", "layers_from_top", "cascading_randomisation", "randomised_layers", "spearman", "ssim",
           "Similarity", "similarity", "sanity_maps", "CascadeScores", "cascade_scores",
           "compare_models", "data_randomised_digits"]

#: the maps the notebook checks; every name of :mod:`xaikit.tensor.registry` is accepted as well
METHODS = ("gradient", "gradient x input", "SmoothGrad", "Integrated Gradients")


# -- cascading model randomisation ---------------------------------------------------------------------------
def _check_model(model) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (randomisation re-initialises its weights), got "
                        f"{type(model).__name__}; a plain function has no weights to randomise")
    if next(model.parameters(), None) is None:
        raise ValueError(f"model ({type(model).__name__}) has no parameters, so there is nothing to randomise; "
                         "pass a trained network, e.g. xaikit.tensor.toys.digits_classifier().model")
    return model


def layers_from_top(model: nn.Module) -> list[str]:
    """The names of ``model``'s layers, output layer first: the modules that hold parameters themselves.

    The order is the reverse of the order the modules were registered in ``__init__``, which for a
    sequential network such as the digits CNN (``conv1, conv2, head``) is the order of the forward pass.
    """
    _check_model(model)
    names = [name for name, m in model.named_modules() if next(m.parameters(recurse=False), None) is not None]
    return names[::-1]


def randomised_layers(model: nn.Module, upto: int) -> list[str]:
    """The layers :func:`cascading_randomisation` re-initialises for ``upto``: the top ``upto`` ones."""
    layers = layers_from_top(model)
    upto = check_int(upto, "upto", 0, len(layers),
                     hint=f"upto counts layers from the top; this model has {len(layers)} ({', '.join(layers)})")
    return layers[:upto]


def _layer_seed(seed: int, name: str) -> int:
    """One seed per (seed, layer): a layer gets the same random weights whatever else is randomised."""
    return (seed * 1_000_003 + zlib.crc32(name.encode())) % (2 ** 63)


def cascading_randomisation(model: nn.Module, upto: int, seed: int = 0) -> nn.Module:
    """A copy of ``model`` with its top ``upto`` layers re-initialised (Adebayo et al. 2018, section 3).

    ``upto=0`` gives an exact copy, ``upto=1`` re-initialises the output layer, ``upto=2`` also the layer
    below it, and so on up to every layer (:func:`layers_from_top` lists them). Each layer is re-drawn
    from its own initialisation (``reset_parameters``, as a freshly built layer would be; a layer without
    one gets Gaussian weights of its trained weights' mean and standard deviation). The draw is seeded per
    layer on the CPU, so the cascade is nested (the output layer is the same at ``upto=1`` and ``upto=3``)
    and the same on every device. The user's model is never changed. Notebook 01, section 5.

    Args:
        model: a torch module with parameters (on any device, in any dtype).
        upto: how many layers to randomise, from the top: ``0 .. len(layers_from_top(model))``.
        seed: seeds the new weights.

    Returns:
        The randomised copy, in the original's device, dtype and train/eval mode.
    """
    _check_model(model)
    return _redrawn_copy(model, randomised_layers(model, upto), check_int(seed, "seed", 0))


def _redrawn_copy(model: nn.Module, names, seed: int) -> nn.Module:
    """A deep copy of ``model`` whose modules ``names`` are each re-drawn by :func:`_reinitialise` under a
    seed of their own (``seed`` and the name): the cascade of notebook 01 and the text cascade of notebook 06."""
    copied = copy.deepcopy(model)
    modules = dict(copied.named_modules())
    for name in names:
        _reinitialise(modules[name], _layer_seed(seed, name))
    return copied


def _reinitialise(layer: nn.Module, seed: int) -> None:
    """Re-draw ``layer``'s own parameters (not its children's) on the CPU under ``seed``, then copy them in."""
    own = dict(layer.named_parameters(recurse=False))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if hasattr(layer, "reset_parameters"):
            fresh = copy.deepcopy(layer).to("cpu", torch.float32)
            fresh.reset_parameters()
            new = dict(fresh.named_parameters(recurse=False))
        else:
            new = {}
            for key, p in own.items():
                p32 = p.detach().float().cpu()
                std = float(p32.std()) if p32.numel() > 1 else 1.0
                new[key] = torch.randn(p32.shape) * std + float(p32.mean())
    with torch.no_grad():
        for key, p in own.items():
            p.copy_(new[key].detach().to(device=p.device, dtype=p.dtype))


# -- similarity of two maps ----------------------------------------------------------------------------------
def _flat(a, name: str) -> np.ndarray:
    return _fn.as_input(a, name).cpu().double().numpy().ravel()


def _average_ranks(v: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``v``, ties sharing the mean of the ranks they span (the usual rank for Spearman)."""
    order = np.argsort(v, kind="stable")
    sorted_v = v[order]
    ranks = np.empty(len(v))
    start = 0
    while start < len(v):  # walk over runs of equal values
        stop = start + 1
        while stop < len(v) and sorted_v[stop] == sorted_v[start]:
            stop += 1
        ranks[order[start:stop]] = (start + 1 + stop) / 2  # mean of the ranks start+1 .. stop
        start = stop
    return ranks


@bool_flags
def spearman(a: Input, b: Input, absolute: bool = False) -> float:
    """Spearman's rank correlation of two maps of the same shape: the Pearson correlation of their ranks.

    ``absolute=True`` ranks ``|a|`` and ``|b|`` (the paper reports both: a map whose signs flip but whose
    magnitudes stay has a high rank correlation with absolute values only). Ties get average ranks. NaN
    when either map is constant (no ranking to compare). Adebayo et al. (2018); notebook 01, section 5.
    """
    x, y = _flat(a, "a"), _flat(b, "b")
    check_same_shape(_fn.as_input(a, "a"), _fn.as_input(b, "b"), "a", "b")
    if absolute:
        x, y = np.abs(x), np.abs(y)
    rx, ry = _average_ranks(x), _average_ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denominator = np.sqrt((rx ** 2).sum() * (ry ** 2).sum())
    if denominator == 0:  # exact: a constant map's ranks all equal their mean, so rx is exactly 0
        return float("nan")
    return float(np.clip((rx * ry).sum() / denominator, -1.0, 1.0))


def _as_image(a: torch.Tensor, name: str) -> tuple[np.ndarray, int | None]:
    """A map as SSIM reads it: ``(H, W)`` as is, ``(1, H, W)`` squeezed, ``(C, H, W)`` with channels first."""
    arr = a.cpu().double().numpy()
    if arr.ndim == 3 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim == 2:
        return arr, None
    if arr.ndim == 3:
        return arr, 0
    raise ValueError(f"{name} must be an image map of shape (H, W) or (C, H, W) for SSIM, got {tuple(a.shape)}")


@bool_flags
def ssim(a: Input, b: Input, absolute: bool = True) -> float:
    """The structural similarity (SSIM, Wang et al. 2004) of two maps, each divided by its largest |value|.

    With ``absolute=True`` (the default, as the paper compares maps) the maps are ``|a| / max|a|`` in [0, 1]
    (data range 1); with ``absolute=False`` the signed maps in [-1, 1] (data range 2). Computed by
    scikit-image's ``structural_similarity`` with its default 7x7 uniform window (the largest odd window
    that fits for images smaller than 7 pixels; at least 3). 1 for two maps that differ only by a positive
    factor. Adebayo et al. (2018); notebook 01, section 5.
    """
    from skimage.metrics import structural_similarity

    ta, tb = _fn.as_input(a, "a"), _fn.as_input(b, "b")
    check_same_shape(ta, tb, "a", "b")
    images = []
    for t, name in ((ta, "a"), (tb, "b")):
        t = t.abs() if absolute else t
        images.append(_as_image(t / t.abs().max().clamp(min=1e-30), name))
    (x, channel_axis), (y, _) = images
    side = min(x.shape[-2:])
    if side < 3:
        raise ValueError(f"SSIM needs maps of at least 3x3 pixels (a 3x3 window), got shape {tuple(ta.shape)}")
    window = min(7, side if side % 2 else side - 1)
    return float(structural_similarity(x, y, win_size=window, data_range=1.0 if absolute else 2.0,
                                       channel_axis=channel_axis))


@dataclass(frozen=True)
class Similarity:
    """How alike two maps are: Spearman rank correlation without and with absolute values, and SSIM (of the
    absolute maps scaled to [0, 1]). Each is 1 for identical maps."""

    spearman: float
    spearman_abs: float
    ssim: float


def similarity(original: Input, other: Input) -> Similarity:
    """The three similarity measures of Adebayo et al. (2018) between a map and the original map."""
    a, b = _fn.as_input(original, "original"), _fn.as_input(other, "other")
    check_same_shape(a, b, "original", "other")
    return Similarity(spearman(a, b), spearman(a, b, absolute=True), ssim(a, b))


# -- the four maps, and a whole cascade ----------------------------------------------------------------------
def sanity_maps(model: nn.Module, x: Input, *, target: int, methods: Sequence[str] = METHODS,
                **options: float | int) -> dict[str, torch.Tensor]:
    """The maps the sanity checks compare, by method name (any name of :mod:`xaikit.tensor.registry`; by
    default the lecture's :data:`METHODS`), for ``target``.

    ``options`` are the methods' own, each given to the methods whose record names it, the others at their
    record's defaults: SmoothGrad's ``n=20`` samples at noise ``sigma=0.15`` (a fraction of the pixel range
    [0, 1]) with a fixed ``seed=0``, so two models are compared on the same noise; Integrated Gradients'
    ``steps=16`` Gauss-Legendre nodes from the black image (its completeness warning is silenced: a
    randomised network is explained, not judged). ``target`` is fixed by the caller, normally the class the
    *trained* model predicts, so every model is asked about the same class. CPU tensors shaped like ``x``.
    """
    methods = check_names(methods, "methods", registry.names())
    known = registry.option_defaults()
    for key in options:
        if key not in known:
            raise TypeError(f"sanity_maps() got the option {key}={options[key]!r}, which no registered method "
                            f"takes; the methods' options are {', '.join(known) or 'none'}")
    return {m: registry.get(m)(model, x, target=target, **options) for m in methods}


@dataclass
class CascadeScores:
    """The similarities of a cascade: ``values[k, m, i, s]`` compares method ``methods[m]``'s map of image
    ``i`` on the model with its top ``k`` layers randomised against the trained model's, by measure
    ``s`` of :attr:`MEASURES` (``k = 0`` is the trained model itself: every value 1).

    Attributes:
        values: ``(n_layers + 1, len(methods), n_images, 3)`` as NumPy.
        layers: the layer names from the top; step ``k`` randomised ``layers[:k]``.
        methods: the method names.
        seed: the randomisation seed.
    """

    values: np.ndarray
    layers: list[str]
    methods: tuple[str, ...]
    seed: int

    MEASURES = ("spearman", "spearman_abs", "ssim")

    def mean(self, measure: str = "spearman_abs") -> np.ndarray:
        """``(n_layers + 1, len(methods))``: the mean over images of one measure (NaN maps left out)."""
        check_choice(measure, "measure", self.MEASURES)
        return np.nanmean(self.values[..., self.MEASURES.index(measure)], axis=2)


def cascade_scores(model: nn.Module, images: torch.Tensor, seed: int = 0, methods: Sequence[str] = METHODS,
                   targets: Sequence[int] | None = None, **map_options: float | int) -> CascadeScores:
    """Run the cascading randomisation test on a batch of images ``(N, ...)``: randomise 0, 1, ...,
    all layers from the top (:func:`cascading_randomisation` with ``seed``) and compare every method's map
    with the trained model's (:func:`similarity`). ``targets`` defaults to the trained model's predictions.
    ``map_options`` go to :func:`sanity_maps`. Adebayo et al. (2018), figure 2; notebook 01, section 5."""
    methods = tuple(check_names(methods, "methods", registry.names()))
    layers = layers_from_top(model)
    targets = _targets(model, images, targets)
    values = np.ones((len(layers) + 1, len(methods), len(images), 3))
    with method_threads(model):  # hundreds of tiny backward passes: one thread, unless XAIKIT_THREADS says otherwise
        originals = _all_maps(model, images, targets, methods, map_options)
        for k in range(1, len(layers) + 1):
            randomised = cascading_randomisation(model, k, seed=seed)
            values[k] = _similarities(originals, randomised, images, targets, methods, map_options)
    return CascadeScores(values, layers, methods, seed)


def compare_models(model: nn.Module, other: nn.Module, images: torch.Tensor, methods: Sequence[str] = METHODS,
                   targets: Sequence[int] | None = None, **map_options: float | int) -> np.ndarray:
    """The similarity of ``other``'s maps to ``model``'s on a batch of images ``(N, ...)``: an array
    ``(len(methods), N, 3)`` of (Spearman, Spearman of absolute values, SSIM), as :class:`CascadeScores`
    holds them. ``targets`` defaults to ``model``'s predictions, for both models. The data randomisation
    test compares the trained model with :func:`data_randomised_digits`. Notebook 01, section 5."""
    _check_model(model)
    _check_model(other)
    methods = tuple(check_names(methods, "methods", registry.names()))
    targets = _targets(model, images, targets)
    with method_threads(model):
        return _similarities(_all_maps(model, images, targets, methods, map_options), other, images, targets,
                             methods, map_options)


def _all_maps(model, images, targets, methods, map_options) -> list[dict[str, torch.Tensor]]:
    """:func:`sanity_maps` of every image, each for its target."""
    return [sanity_maps(model, x, target=t, methods=methods, **map_options) for x, t in zip(images, targets,
                                                                                            strict=True)]


def _similarities(originals, other, images, targets, methods, map_options) -> np.ndarray:
    """``(len(methods), N, 3)``: each of ``other``'s maps against the original map of the same image and method,
    as (Spearman, Spearman of absolute values, SSIM)."""
    values = np.empty((len(methods), len(images), 3))
    for i, maps in enumerate(_all_maps(other, images, targets, methods, map_options)):
        for m, name in enumerate(methods):
            s = similarity(originals[i][name], maps[name])
            values[m, i] = (s.spearman, s.spearman_abs, s.ssim)
    return values


def _targets(model, images, targets) -> list[int]:
    if not isinstance(images, torch.Tensor) or images.ndim < 2 or len(images) == 0:
        raise ValueError("images must be a non-empty batch tensor (N, ...) of inputs, e.g. data.test_x[:12]")
    if targets is None:
        with torch.no_grad():
            try:
                targets = _fn.call(model, images).argmax(1).tolist()
            except RuntimeError as err:  # e.g. one image (1, 8, 8) read as a batch of one (8, 8)
                raise ValueError(f"images must be a batch (N, ...) of inputs the model takes; the model refused "
                                 f"shape {tuple(images.shape)} ({err}). One image? Pass images[None] or "
                                 "data.test_x[:1]") from err
    if len(targets) != len(images):
        raise ValueError(f"targets must have one class per image: {len(images)} images, {len(targets)} targets")
    return [int(t) for t in targets]


@bool_flags
def data_randomised_digits(seed: int | None = None, epochs: int | None = None, progress: bool = True,
                           disk_cache: bool = True) -> TrainedDigits:
    """The digits CNN trained on labels permuted before training, for the data randomisation test.

    The architecture and seed of :func:`xaikit.tensor.toys.digits_classifier` (``seed=None``: the cache's
    training seed, as there), whose ``shuffle_labels=True``
    it calls (seeded and cached: a few seconds the first time, with a progress bar; a smaller learning rate
    and more epochs, so that it fits part of the permuted labels instead of collapsing to a constant).
    Its test accuracy is near chance (0.1): it cannot have learned what a digit looks like, so a map that
    still shows the digit shows the input, not the model. Adebayo et al. (2018), section 4; notebook 01,
    section 5.
    """
    from xaikit.tensor.toys import digits_classifier

    return digits_classifier(seed=seed, epochs=epochs, progress=progress, disk_cache=disk_cache,
                             shuffle_labels=True)
