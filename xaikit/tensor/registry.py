"""Every tensor attribution map by name: the one list that the sanity checks of Adebayo et al. (2018,
"Sanity checks for saliency maps"; notebook 01, section 5) and their panel read, at the time they run.

An entry names the method, the function that computes its map of one input for one class, and the options
of :func:`xaikit.lab.tensor_sanity.sanity_maps` it takes. A method registered with :func:`register` is then a
name that ``sanity_maps``, ``cascade_scores``, ``compare_models`` and the sanity panel accept, with nothing
else to edit.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch

from xaikit._types import Input, ModelFn

__all__ = ["TensorMethod", "register", "names", "get"]


@dataclass(frozen=True)
class TensorMethod:
    """One attribution method of the registry.

    Attributes:
        name: the name menus, tables and ``methods=`` use.
        compute: ``compute(f, x, target, **options) -> map`` shaped like ``x``, for the class index
            ``target``.
        options: the names of the options it reads (of ``sanity_maps``: ``n``, ``sigma``, ``steps``,
            ``seed``).
        reference: the paper.
    """

    name: str
    compute: Callable[..., torch.Tensor]
    options: tuple[str, ...] = ()
    reference: str = ""

    def __call__(self, f: ModelFn, x: Input, *, target: int, **options) -> torch.Tensor:
        return self.compute(f, x, target, **{k: options[k] for k in self.options if k in options})


_REGISTRY: dict[str, TensorMethod] = {}


def register(method: TensorMethod) -> TensorMethod:
    """Add ``method`` (a new name goes last; an existing name is replaced in its place). Returns it."""
    if not isinstance(method, TensorMethod):
        raise TypeError(f"register takes a TensorMethod, got {type(method).__name__}")
    _REGISTRY[method.name] = method
    return method


def names() -> tuple[str, ...]:
    """The registered names, in the order they were registered."""
    return tuple(_REGISTRY)


def get(name: str) -> TensorMethod:
    """The entry of ``name``; an unknown name lists the known ones."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown tensor method {name!r}; use one of {list(_REGISTRY)}")
    return _REGISTRY[name]


def _gradient(f, x, target):
    from xaikit.tensor.gradients import gradient

    return gradient(f, x, target=target)


def _grad_times_input(f, x, target):
    from xaikit.tensor.gradients import grad_times_input

    return grad_times_input(f, x, target=target)


def _smoothgrad(f, x, target, n: int = 20, sigma: float = 0.15, seed: int = 0):
    from xaikit.tensor.gradients import smoothgrad

    return smoothgrad(f, x, sigma=sigma, n=n, target=target, seed=seed, value_range=(0.0, 1.0))


def _integrated_gradients(f, x, target, steps: int = 16):
    """IG from the black image with ``steps`` Gauss-Legendre nodes, its completeness warning silenced (a
    randomised network is explained here, not judged)."""
    from xaikit.tensor.integrated import CompletenessWarning, integrated_gradients

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompletenessWarning)
        return integrated_gradients(f, x, None, steps=steps, rule="gausslegendre", target=target).attributions


register(TensorMethod("gradient", _gradient, (), "Simonyan et al. 2014"))
register(TensorMethod("gradient x input", _grad_times_input, (), "Shrikumar et al. 2017"))
register(TensorMethod("SmoothGrad", _smoothgrad, ("n", "sigma", "seed"), "Smilkov et al. 2017"))
register(TensorMethod("Integrated Gradients", _integrated_gradients, ("steps",), "Sundararajan et al. 2017"))
