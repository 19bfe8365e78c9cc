"""Module paths that moved, kept importable for one release: the one table of old -> new places.

A user of an earlier release may have written ``from xaikit.concepts import vit_relevance`` or
``import xaikit.text.lab.faithfulness``. Those modules are gone, so that every name lives in one place;
:data:`MOVED` maps each old path to the module (or modules) that now hold its names. ``import xaikit``
installs :class:`MovedFinder` first in ``sys.meta_path``; for a path in the table it makes a small stand-in
module that warns ``DeprecationWarning: xaikit.X moved to xaikit.Y; import it from there`` (at the importing
line) and hands out the new modules' names. Nothing inside
xaikit imports an old path (``tests/test_moved.py``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from collections.abc import Sequence

__all__ = ["MOVED", "MOVED_NAMES", "MovedFinder", "install", "moved_name"]

#: old module path -> the modules that hold its names now (searched in this order)
MOVED: dict[str, tuple[str, ...]] = {
    "xaikit.concepts.imageworld": ("xaikit.models.imageworld",),
    "xaikit.concepts.vit_relevance": ("xaikit.image.registry", "xaikit.image.relevance", "xaikit.lab.pixel_scores"),
    "xaikit.concepts.vit_lrp": ("xaikit.image.lrp",),
    "xaikit.concepts.intervention": ("xaikit.lab.intervention",),
    "xaikit.tensor.sanity": ("xaikit.lab.tensor_sanity",),
    "xaikit.text.sanity": ("xaikit.lab.text_sanity",),
    "xaikit.text.lab": ("xaikit.lab",),
    "xaikit.text.lab.faithfulness": ("xaikit.lab.faithfulness",),
    "xaikit.text.lab.removal": ("xaikit.lab.removal",),
    "xaikit.text.lab.agreement": ("xaikit.lab.agreement",),
    "xaikit.text.lab.editing": ("xaikit.lab.editing",),
    "xaikit.text.lab.diagnostic_model": ("xaikit.lab.diagnostic_model",),
    "xaikit.text.lab.diagnostics": ("xaikit.lab.diagnostics",),
    "xaikit.text.diagnostics": ("xaikit.lab.diagnostics",),
    "xaikit.text.editing": ("xaikit.lab.editing",),
    "xaikit.text.faithfulness": ("xaikit.lab.faithfulness", "xaikit.lab.removal", "xaikit.lab.agreement"),
    "xaikit.claims": ("xaikit.course.claims",),
    "xaikit.claims.report": ("xaikit.course.claims.report",),
    "xaikit.claims.nb01": ("xaikit.course.claims.nb01",),
    "xaikit.claims.nb02": ("xaikit.course.claims.nb02",),
    "xaikit.claims.nb03": ("xaikit.course.claims.nb03",),
    "xaikit.claims.nb04": ("xaikit.course.claims.nb04",),
    "xaikit.claims.nb05": ("xaikit.course.claims.nb05",),
    "xaikit.claims.nb06": ("xaikit.course.claims.nb06",),
    "xaikit.claims.nb07": ("xaikit.course.claims.nb07",),
    "xaikit.concepts.claims": ("xaikit.course.claims.tcav",),
}

#: names that left a module which is still there, by that module: the modules that now hold them
MOVED_NAMES: dict[str, tuple[str, ...]] = {
    "xaikit.attention.scratch": ("xaikit.attention.scores", "xaikit.attention.positions",
                                 "xaikit.attention.saturation"),
}


def moved_name(module: str, name: str) -> object:
    """The module ``__getattr__`` of a module in :data:`MOVED_NAMES`: a name that moved out of it is handed out
    from its new module with ``DeprecationWarning: xaikit.X.name moved to xaikit.Y; import it from there``."""
    for new in MOVED_NAMES[module]:
        place = importlib.import_module(new)
        if not name.startswith("_") and name in getattr(place, "__all__", ()):
            warnings.warn(f"{module}.{name} moved to {new}; import it from there", DeprecationWarning,
                          stacklevel=3)
            return getattr(place, name)
    raise AttributeError(f"module {module!r} has no attribute {name!r}")


#: old paths that were packages (their old submodules are in :data:`MOVED` too)
_PACKAGES = frozenset(old for old in MOVED if any(other.startswith(old + ".") for other in MOVED))


class _Moved(types.ModuleType):
    """The stand-in at an old path: every attribute is looked up in the new modules, in order."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        for new in MOVED[self.__name__]:
            module = importlib.import_module(new)
            if hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(f"module {self.__name__!r} (moved to {_places(self.__name__)}) has no attribute "
                             f"{name!r}")

    def __dir__(self):
        return sorted({n for new in MOVED[self.__name__] for n in dir(importlib.import_module(new))
                       if not n.startswith("_")})


def _places(old: str) -> str:
    new = MOVED[old]
    return new[0] if len(new) == 1 else ", ".join(new[:-1]) + " and " + new[-1]


class MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths of :data:`MOVED` (after every other finder failed) and loads their stand-ins."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=fullname in _PACKAGES)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _Moved(spec.name)
        if spec.name in _PACKAGES:
            module.__path__ = []  # its old submodules are found by this finder too
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        warnings.warn(f"{module.__name__} moved to {_places(module.__name__)}; import it from there",
                      DeprecationWarning, stacklevel=2)  # warnings skips the import machinery's frames


def install() -> None:
    """Put one :class:`MovedFinder` first in ``sys.meta_path`` (again: nothing). It answers only the old paths
    of :data:`MOVED`, so it goes before the path finder: a folder left at an old path by an earlier install
    (``__pycache__`` only) would otherwise be imported as an empty namespace package."""
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedFinder())
