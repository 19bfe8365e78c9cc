"""Lazy attributes for xaikit's packages (PEP 562), written once for every ``__init__``.

A package lists ``name -> submodule`` for the names it exports and the submodules it opens as attributes;
:func:`attach` returns the ``__getattr__`` and ``__dir__`` that import them on first use, so
``import xaikit`` loads neither torch nor transformers. No export may share a submodule's name: once that
submodule is imported, Python sets it as the package's attribute and the export would be shadowed;
:func:`attach` refuses such a table.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable


def attach(package: str, exports: dict[str, str],
           submodules: Iterable[str] = ()) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps a name to the submodule (relative to
    ``package``) that defines it; ``submodules`` are reachable as attributes, e.g. ``xaikit.text.views``."""
    submodules = frozenset(submodules)
    clash = sorted(n for n in exports if n in submodules or n in {m.split(".")[0] for m in exports.values()})
    if clash:
        raise ImportError(f"{package}: exports {clash} share a submodule's name")

    def __getattr__(name: str):
        if name in exports:
            value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
            setattr(sys.modules[package], name, value)  # later look-ups skip this function
            return value
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(exports) | submodules)

    return __getattr__, __dir__
