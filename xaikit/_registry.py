"""The registry every method family keeps (tensor: notebooks 01-02; text: 02, 04 and 06; image: 07): its methods
by name, each declared by the module that defines it.

A method module builds its family's record (:class:`~xaikit.tensor.registry.TensorMethod`,
:class:`~xaikit.text.registry.TextMethod`, :class:`~xaikit.image.registry.ImageMethod`) next to the method and
registers it when it is imported. Reading a registry imports every module of its family's folder once, found
by their files (importing the package would run its lazy table, which names the modules that import the
registry), so the registry is complete whenever it is read and no list of the modules is kept anywhere. This is
inseq's design: a method's metadata lives on the method, and the methods are found by walking them.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

__all__ = ["Registry", "run_options"]

M = TypeVar("M")


def run_options(run: Callable) -> tuple[str, ...]:
    """The options a method's trusting function takes: its keywords after the prepared input."""
    return tuple(p.name for p in list(inspect.signature(run).parameters.values())[1:]
                 if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))


class Registry(Generic[M]):
    """The methods of one family by name, in menu order (each record's ``order``, then registration order).

    ``family`` names it in messages (``"text"``), ``record`` is the type every entry must have, ``module`` is
    the registry module's ``__name__`` (its folder's modules are the family's). ``replace``: registering a
    name again replaces its entry in place (else it is refused).
    """

    def __init__(self, family: str, record: type, module: str, *, replace: bool = False) -> None:
        self.family, self.record, self.replace = family, record, replace
        self._package = module.rpartition(".")[0]
        self._folder = Path(sys.modules[module].__file__).resolve().parent
        self._methods: dict[str, M] = {}
        self._discovered = False

    def register(self, method: M) -> M:
        if not isinstance(method, self.record):
            raise TypeError(f"register takes {_a(self.record.__name__)}, got {type(method).__name__}")
        if method.name in self._methods and not self.replace:
            raise ValueError(f"{_a(self.family)} method named {method.name!r} is registered already")
        self._methods[method.name] = method
        return method

    def unregister(self, name: str) -> M:
        if name not in self._methods:
            raise KeyError(f"no {self.family} method named {name!r} is registered")
        return self._methods.pop(name)

    def entries(self) -> dict[str, M]:
        if not self._discovered:
            self._discovered = True
            for info in pkgutil.iter_modules([str(self._folder)]):
                if not info.ispkg and not info.name.startswith("_"):
                    importlib.import_module(f"{self._package}.{info.name}")
        ranked = sorted(enumerate(self._methods.values()), key=lambda im: (im[1].order, im[0]))
        return {m.name: m for _, m in ranked}

    def names(self) -> tuple[str, ...]:
        return tuple(self.entries())

    def entry(self, name: str) -> M:
        """The entry of ``name`` (a ValueError naming the registered ones otherwise)."""
        from xaikit._validate import check_choice

        return self.entries()[check_choice(name, "method", self.names())]


def _a(word: str) -> str:
    return f"{'an' if word[0].lower() in 'aeiou' else 'a'} {word}"
