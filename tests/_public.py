"""The public objects of the package, for the tests that sweep every public callable (a str where a list or
a bool belongs)."""

from __future__ import annotations

import importlib
import pkgutil

import xaikit


def public_objects():
    """``(module, name, obj)`` for every public name defined in a public module of xaikit (private modules,
    private names, re-exports and the ``checks`` modules left out)."""
    for info in pkgutil.walk_packages(xaikit.__path__, "xaikit."):
        if any(part.startswith("_") for part in info.name.split(".")) or ".checks" in info.name:
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if not name.startswith("_") and getattr(obj, "__module__", None) == module.__name__:
                yield module, name, obj
