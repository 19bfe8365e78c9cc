"""Every tensor attribution map by name: the one list that the sanity checks of Adebayo et al. (2018,
"Sanity checks for saliency maps"; notebook 01, section 5) and their panel read, at the time they run.

A record (:class:`TensorMethod`) names the method, the function that computes its map of one input for one
class, the options it takes with their defaults, and its paper. Each method module declares its record
next to the method and calls :func:`register` when it is imported (``gradient`` in
:mod:`xaikit.tensor.gradients`, Integrated Gradients in :mod:`xaikit.tensor.integrated`); reading the
registry imports every module of :mod:`xaikit.tensor` once, so it is complete whenever it is read. A
registered name is then a name that ``sanity_maps``, ``cascade_scores``, ``compare_models`` and the sanity
panel accept, with nothing else to edit.

The function of a record is the method's public function (or a small form of it that returns one map):
it goes through the family's entry (:func:`xaikit._fn.entry`), which checks the input, resolves
``target`` and applies float32, eval mode and the thread policy once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import torch

from xaikit._registry import Registry
from xaikit._types import Input, ModelFn, Target

__all__ = ["TensorMethod", "register", "unregister", "names", "get", "option_defaults"]


@dataclass(frozen=True)
class TensorMethod:
    """One attribution method of the registry.

    Attributes:
        name: the name menus, tables and ``methods=`` use.
        compute: ``compute(f, x, target=target, **options) -> map`` shaped like ``x``, for the class index
            ``target`` (``None``: the predicted class).
        options: the options it reads with their defaults (SmoothGrad's ``{"n": 20, "sigma": 0.15,
            "seed": 0}``); a tuple of names takes the defaults of ``compute``. The sanity checks' options
            are these.
        reference: the paper.
        fixed: options ``compute`` always gets from the registry's readers (SmoothGrad's pixel range).
        order: its place in ``names()`` (ties: registration order).
    """

    name: str
    compute: Callable[..., torch.Tensor]
    options: Mapping[str, object] | tuple[str, ...] = ()
    reference: str = ""
    fixed: Mapping[str, object] = field(default_factory=dict)
    order: float = float("inf")

    def defaults(self) -> Mapping[str, object]:
        """The options with defaults here (none for an ``options`` tuple)."""
        return MappingProxyType(dict(self.options) if isinstance(self.options, Mapping) else {})

    def __call__(self, f: ModelFn, x: Input, *, target: Target, **options: Any) -> torch.Tensor:
        taken = {k: options[k] for k in self.options if k in options}
        return self.compute(f, x, target=target, **{**self.defaults(), **taken, **self.fixed})


_REGISTRY: Registry[TensorMethod] = Registry("tensor", TensorMethod, __name__, replace=True)


def register(method: TensorMethod) -> TensorMethod:
    """Add ``method`` (a new name goes last among its ``order``; an existing name is replaced). Returns it."""
    return _REGISTRY.register(method)


def unregister(name: str) -> TensorMethod:
    """Remove the method ``name`` from the registry and return its record."""
    return _REGISTRY.unregister(name)


def names() -> tuple[str, ...]:
    """The registered names, by ``order`` and then in the order they were registered."""
    return _REGISTRY.names()


def get(name: str) -> TensorMethod:
    """The record of ``name``; an unknown name lists the known ones."""
    found = _REGISTRY.entries()
    if name not in found:
        raise ValueError(f"unknown tensor method {name!r}; use one of {list(found)}")
    return found[name]


def option_defaults() -> dict[str, object]:
    """The options of every registered method with their defaults (``None``: the method's own), by name."""
    out: dict[str, object] = {}
    for m in _REGISTRY.entries().values():
        for key in m.options:
            out.setdefault(key, m.defaults().get(key))
    return out
