"""Which torch modules a function computes with: ``f`` itself, or the modules its closure, its globals, a
partial's arguments, a bound method's object or a callable object's attributes hold.

:func:`xaikit._fn.ensure_eval` switches them to eval mode (every method family; notebooks 01-06), and
:func:`xaikit._fn.computing` sizes the thread policy by them.
"""

from __future__ import annotations

import functools
import inspect
import numbers

import torch

__all__ = ["reachable_modules"]

#: how deep :func:`reachable_modules` follows closures, partials, bound methods and attributes
_REACH_DEPTH = 4


def reachable_modules(f: object) -> list[tuple[str, torch.nn.Module]]:
    """The torch modules ``f`` computes with, each with the name it is reached by: ``f`` itself if a module,
    else what its closure cells (``lambda b: model(b)`` inside a function), the globals its code loads
    (the same lambda in a notebook cell), a bound method's ``__self__``, a ``functools.partial``'s function
    and arguments, or a callable object's attributes hold, followed a few levels deep. Submodules are not
    listed separately (``module.modules()`` has them)."""
    found: dict[int, tuple[str, torch.nn.Module]] = {}
    seen: set[int] = set()

    def visit(obj, name: str, depth: int) -> None:
        if id(obj) in seen or depth > _REACH_DEPTH:
            return
        seen.add(id(obj))
        if isinstance(obj, torch.nn.Module):
            found.setdefault(id(obj), (name, obj))
            return
        if isinstance(obj, (str, bytes, numbers.Number, torch.Tensor, type)) or obj is None:
            return
        if isinstance(obj, functools.partial):
            visit(obj.func, name, depth + 1)
            for i, a in enumerate(obj.args):
                visit(a, f"{name}.args[{i}]", depth + 1)
            for k, a in obj.keywords.items():
                visit(a, k, depth + 1)
            return
        if inspect.ismethod(obj):
            visit(obj.__self__, getattr(obj.__self__, "__name__", "self"), depth + 1)
            visit(obj.__func__, name, depth + 1)
            return
        if inspect.isfunction(obj):
            code = obj.__code__
            for var, cell in zip(code.co_freevars, obj.__closure__ or (), strict=False):
                try:
                    visit(cell.cell_contents, var, depth + 1)
                except ValueError:  # an empty cell
                    pass
            for var in _global_names(code):
                if var in obj.__globals__:
                    visit(obj.__globals__[var], var, depth + 1)
            return
        if isinstance(obj, (list, tuple)):
            for i, a in enumerate(obj[:16]):
                visit(a, f"{name}[{i}]", depth + 1)
            return
        if isinstance(obj, dict):
            for k, a in list(obj.items())[:16]:
                visit(a, f"{name}[{k!r}]", depth + 1)
            return
        if callable(obj) and hasattr(obj, "__dict__") and not inspect.ismodule(obj) and not inspect.isbuiltin(obj):
            for k, a in list(vars(obj).items())[:32]:
                visit(a, f"{name}.{k}", depth + 1)

    visit(f, getattr(f, "__name__", "f"), 0)
    return list(found.values())


def _global_names(code) -> list[str]:
    """The global names ``code`` loads (``model`` in ``lambda b: model(b)`` at a notebook's top level),
    nested functions' and comprehensions' included; attribute names (``b.sum``) are not globals."""
    import dis

    names: list[str] = []
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and isinstance(ins.argval, str):
            names.append(ins.argval)
    for const in code.co_consts:
        if inspect.iscode(const):
            names.extend(_global_names(const))
    return names
