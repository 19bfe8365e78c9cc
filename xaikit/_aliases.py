"""Captum's keyword names, accepted beside xaikit's where they mean the same thing.

xaikit names its options for the lecture (``steps``, ``rule``, ``baseline``, ``n``); Captum (Kokhlikyan et al.
2020, "Captum: A unified and generic model interpretability library for PyTorch") names the same options
``n_steps``, ``method``, ``baselines``, ``nt_samples``. :func:`captum_keywords` lets a function take both: a
Captum name is renamed to xaikit's before the call, its value translated where the two spell a value
differently (``nt_type='smoothgrad_sq'`` is ``kind='squared'``). A Captum name whose meaning differs in xaikit
is refused with a message that names xaikit's spelling, never silently read another way. The whole mapping is
the table in docs/captum.md, "Coming from Captum".
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Alias", "captum_keywords", "IG", "IG_STEPS", "NOISE_TUNNEL", "SMOOTHGRAD_KINDS", "smoothgrad_kind"]


@dataclass(frozen=True)
class Alias:
    """xaikit's keyword ``name`` for a Captum keyword; ``values`` renames Captum's values (Captum's -> xaikit's),
    ``refused`` maps a Captum value that means something else here to the reason, which names xaikit's value."""

    name: str
    values: dict = field(default_factory=dict)
    refused: dict = field(default_factory=dict)


#: Captum's ``nt_type`` values and the ``kind`` each is in xaikit's SmoothGrad
SMOOTHGRAD_KINDS = {"smoothgrad": "smoothgrad", "smoothgrad_sq": "squared", "vargrad": "vargrad"}

_TRAPEZOID = ("Captum's method='riemann_trapezoid' gives weights 1/n (halved at both ends), which sum to "
              "(n-1)/n, so its attributions are (n-1)/n times the trapezoid rule's; xaikit's "
              "rule='riemann_trapezoid' is the textbook rule (weights sum to 1). Pass rule='riemann_trapezoid' "
              "for xaikit's, or multiply by (n_steps - 1) / n_steps to get Captum's")

#: Integrated Gradients (Captum's ``IntegratedGradients.attribute`` / ``LayerIntegratedGradients.attribute``)
IG = {"n_steps": Alias("steps"), "method": Alias("rule", refused={"riemann_trapezoid": _TRAPEZOID}),
      "baselines": Alias("baseline"), "internal_batch_size": Alias("batch_size")}
#: IG where the baseline is not one input: drawn by kind (``baseline_attributions``) or named (text IG)
IG_STEPS = {k: v for k, v in IG.items() if k != "baselines"}
#: text IG's ``baseline`` names a kind of baseline text; Captum's ``baselines`` are baseline token ids
TEXT_BASELINES = ("Captum's baselines are the baseline inputs (token ids for LayerIntegratedGradients); "
                  "text_integrated_gradients's baseline names the baseline text ('pad', 'mask', 'unk' or "
                  "'zero'). For baseline token ids pass them to xaikit.text.text_ig.embedding_integrated_gradients"
                  "(model, input_ids, baselines=ids), which is LayerIntegratedGradients at the embeddings")
#: SmoothGrad and its variants (Captum's ``NoiseTunnel.attribute``)
NOISE_TUNNEL = {"nt_samples": Alias("n"), "nt_samples_batch_size": Alias("batch_size"),
                "nt_type": Alias("kind", values={"smoothgrad_sq": "squared"})}
#: Captum's ``stdevs`` is the noise's absolute standard deviation; xaikit's ``sigma`` is a fraction of the range
STDEVS = ("Captum's stdevs is the noise's absolute standard deviation; xaikit's sigma is a fraction of the "
          "input's value range (the SmoothGrad paper's convention). For Captum's stdevs=s pass sigma=s, "
          "value_range=1 (noise std = sigma * 1)")


def smoothgrad_kind(kind: object) -> object:
    """``kind`` with Captum's ``'smoothgrad_sq'`` read as xaikit's ``'squared'`` (other values unchanged)."""
    return SMOOTHGRAD_KINDS["smoothgrad_sq"] if isinstance(kind, str) and kind == "smoothgrad_sq" else kind


def _same(a, b) -> bool:
    """Whether two values given for one option (once under each name) are the same value."""
    if a is b:
        return True
    import numpy as np
    import torch

    if isinstance(a, (torch.Tensor, np.ndarray)) or isinstance(b, (torch.Tensor, np.ndarray)):
        try:
            ta, tb = torch.as_tensor(a), torch.as_tensor(b)
            return ta.shape == tb.shape and bool(torch.equal(ta.cpu().double(), tb.cpu().double()))
        except (TypeError, ValueError, RuntimeError):
            return False
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _short(value) -> str:
    """A value for an error message: an array or tensor by its shape, anything else by its repr."""
    shape = getattr(value, "shape", None)
    return f"{type(value).__name__} of shape {tuple(shape)}" if shape is not None else repr(value)


def captum_keywords(aliases: dict[str, Alias], refused: dict[str, str] | None = None,
                    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a function so that it also takes Captum's keywords ``aliases`` (Captum's name -> :class:`Alias`).

    A Captum keyword is renamed to xaikit's (its value translated by ``Alias.values``). Given together with
    xaikit's own keyword (or that parameter given by position), the two must be the same value, else a
    TypeError names both. ``refused`` maps Captum keywords whose meaning differs here to the reason (a
    TypeError). The function's docstring gains one line that lists the accepted names.
    """
    refused = refused or {}

    def wrap(fn):
        signature = inspect.signature(fn)
        missing = [a.name for a in aliases.values() if a.name not in signature.parameters]
        if missing:
            raise AssertionError(f"{fn.__name__} has no parameter {missing}")  # a wrong table, at import

        @functools.wraps(fn)
        def inner(*args, **kwargs):
            if any(k in kwargs for k in aliases) or any(k in kwargs for k in refused):
                kwargs = _rename(fn.__name__, signature, args, kwargs, aliases, refused)
            return fn(*args, **kwargs)

        listed = ", ".join(f"``{c}`` (``{a.name}``)" for c, a in aliases.items())
        inner.__doc__ = (fn.__doc__ or "").rstrip() + (
            f"\n\n    Captum's keywords are accepted too: {listed}; see docs/captum.md, \"Coming from Captum\".\n")
        inner.captum_aliases = dict(aliases)
        return inner

    return wrap


def _rename(fn_name: str, signature, args, kwargs: dict, aliases: dict[str, Alias], refused: dict[str, str]):
    for captum in kwargs.keys() & refused.keys():
        raise TypeError(f"{fn_name}() does not take Captum's keyword {captum}=: {refused[captum]}")
    ours = {k: v for k, v in kwargs.items() if k not in aliases}
    try:
        given = signature.bind_partial(*args, **ours).arguments
    except TypeError:  # a wrong call: the function raises its own error below
        given = dict(ours)
    for captum in [k for k in kwargs if k in aliases]:
        alias, value = aliases[captum], kwargs[captum]
        if isinstance(value, str) and value in alias.refused:
            raise ValueError(f"{fn_name}(): {captum}={value!r}: {alias.refused[value]}")
        mapped = alias.values.get(value, value) if isinstance(value, str) else value
        other = given.get(alias.name)
        other = alias.values.get(other, other) if isinstance(other, str) else other  # kind='smoothgrad_sq' too
        if alias.name in given and not _same(other, mapped):
            raise TypeError(f"{fn_name}() got {captum}={_short(value)} (Captum's name) and {alias.name}="
                            f"{_short(given[alias.name])} (xaikit's name for the same option), which differ; "
                            f"pass only one of them")
        if alias.name not in given:
            ours[alias.name] = mapped
            given[alias.name] = mapped
    return ours
