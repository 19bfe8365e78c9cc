"""Input checks shared by every method: each error names the parameter, what was expected and the fix.

Methods call these at their entry, before any torch work, so a student sees
``ValueError: steps must be an int >= 1, got 0`` rather than a traceback from inside torch.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import torch


def check_callable(f: object, name: str = "f") -> Callable:
    if not callable(f):
        raise TypeError(
            f"{name} must be callable: a function or torch module that maps a batch (B, ...) to outputs "
            f"(B,) or (B, C); got {type(f).__name__}"
        )
    return f


def check_int(value: object, name: str, minimum: int | None = None, maximum: int | None = None,
              hint: str = "") -> int:
    """An integer within ``[minimum, maximum]`` (either bound optional)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}{_hint(hint)}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value}{_hint(hint)}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be an int <= {maximum}, got {value}{_hint(hint)}")
    return value


def check_float(value: object, name: str, minimum: float | None = None, maximum: float | None = None,
                strict_min: bool = False, hint: str = "") -> float:
    """A finite real number within the bounds; ``strict_min`` makes the lower bound exclusive."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}{_hint(hint)}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}{_hint(hint)}")
    if minimum is not None and (value <= minimum if strict_min else value < minimum):
        op = ">" if strict_min else ">="
        raise ValueError(f"{name} must be {op} {minimum}, got {value}{_hint(hint)}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}{_hint(hint)}")
    return value


def check_fraction(value: object, name: str, example: float = 0.05, what: str = "") -> float:
    """A fraction in (0, 1]: a value above 1 is refused as a percent typed for a fraction (``tolerance=5``
    meant as 5%), with the fraction meant as the fix."""
    value = check_float(value, name, 0.0, strict_min=True, hint=f"a fraction: {example:g} for {100 * example:g}%")
    if value > 1.0:
        raise ValueError(f"{name} must be a fraction{what} in (0, 1]: {example:g} for {100 * example:g}%; got "
                         f"{value:g}, which reads as {100 * value:g}%. Did you mean {name}={value / 100:g}?")
    return value


def check_choice(value: object, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        import difflib

        by_text = {str(c): c for c in choices}
        close = [by_text[c] for c in difflib.get_close_matches(str(value), list(by_text), n=3)]
        # '2' for the int 2: name the types, or the suggestion would read like the value refused
        typed = any(type(c) is not type(value) for c in close)
        shown = [f"{c!r} ({type(c).__name__})" if typed else repr(c) for c in close]
        also = f" Did you mean {' or '.join(shown)}?" if close else ""
        got = f"{value!r} ({type(value).__name__})" if typed else repr(value)
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {got}.{also}")
    return value


def check_names(values: object, name: str, choices: Sequence[str]) -> list:
    """A list (or tuple) of names, each one of ``choices``: ``methods=["IG", "SHAP"]``.

    A single str is refused rather than read as its characters (``"IG"`` would be ``"I"``, ``"G"``); the
    message suggests the list meant. Each element is checked by :func:`check_choice` as ``name[i]``.
    """
    if isinstance(values, str):
        import difflib

        close = [values] if values in choices else difflib.get_close_matches(values, [str(c) for c in choices], n=1)
        also = f" Did you mean [{close[0]!r}]?" if close else ""
        raise ValueError(f"{name} must be a list of names (e.g. [{choices[0]!r}]), not one str: got {values!r}.{also}")
    try:
        values = list(values)
    except TypeError:
        raise TypeError(f"{name} must be a list of names among {', '.join(map(repr, choices))}, got "
                        f"{type(values).__name__} {values!r}") from None
    return [check_choice(v, f"{name}[{i}]", choices) for i, v in enumerate(values)]


def _numpy_bool(value) -> bool:
    """NumPy's bool scalar (``np.bool_``, named ``bool`` from NumPy 2 on)."""
    return type(value).__module__ == "numpy" and type(value).__name__ in ("bool_", "bool")


def check_bool(value: object, name: str) -> bool:
    """``True`` or ``False`` (NumPy's too); a str like ``"False"`` is refused, since ``bool("False")`` is True."""
    if isinstance(value, bool) or _numpy_bool(value):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}; e.g. {name}=True")


def _is_bool_parameter(parameter) -> bool:
    """A parameter that takes True or False: its default is a bool, or its annotation names ``bool``."""
    if isinstance(parameter.default, bool):
        return True
    note = parameter.annotation
    note = note if isinstance(note, str) else getattr(note, "__name__", str(note))
    return note in ("bool", "bool | None", "Optional[bool]", "None | bool")


def _check_flag(value, name: str):
    """True, False (NumPy's ``bool_`` too), 0 or 1, or None; a str such as ``"False"`` (which ``bool()`` reads
    as True) or any other value is refused with a TypeError naming the parameter."""
    if value is None or isinstance(value, bool) or _numpy_bool(value):
        return
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return
    also = (f" (the bool, not the str: bool({value!r}) is True, as for every non-empty str)"
            if isinstance(value, str) and value.strip().lower() in ("true", "false") else "")
    raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}; e.g. {name}=True{also}")


def bool_flags(fn: Callable) -> Callable:
    """Decorate a public function (or ``__init__``) so each of its True/False parameters refuses a str.

    ``bool("False")`` is True, so ``rank_correlation(a, b, by_abs="False")`` would compare magnitudes without a
    word. The parameters checked are those :func:`_is_bool_parameter` picks from the signature (a bool default,
    or a ``bool`` annotation); the check runs before the function, so a refused flag never starts any work.
    ``tests/test_str_bools.py`` checks every public function with such a parameter carries this decorator."""
    import functools
    import inspect

    flags, positions = [], {}
    for i, p in enumerate(inspect.signature(fn).parameters.values()):
        if not _is_bool_parameter(p):
            continue
        flags.append(p.name)
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positions[p.name] = i

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        for name in flags:
            if name in kwargs:
                _check_flag(kwargs[name], name)
            elif positions.get(name, len(args)) < len(args):
                _check_flag(args[positions[name]], name)
        return fn(*args, **kwargs)

    checked.__xaikit_bool_flags__ = tuple(flags)
    return checked


def check_labels(values: object, name: str, count: int | None = None, of: str = "items") -> list[str]:
    """A list of free-form labels (figure titles, feature names), one per item when ``count`` is given.

    A single str is refused like in :func:`check_names` (``"ab"`` would label two items ``"a"`` and ``"b"``)."""
    if isinstance(values, str):
        raise TypeError(f"{name} must be a list of labels, one per {of[:-1] if of.endswith('s') else of}, not one "
                        f"str: got {values!r}. Did you mean [{values!r}]?")
    try:
        values = [str(v) for v in values]
    except TypeError:
        raise TypeError(f"{name} must be a list of labels, got {type(values).__name__} {values!r}") from None
    if count is not None and len(values) != count:
        raise ValueError(f"{name} must hold one label per {of[:-1] if of.endswith('s') else of}: there are {count} "
                         f"{of} and {len(values)} labels; pass {count} labels, or none for the default")
    return values


#: the largest seed :func:`check_seed` accepts by default: every torch generator takes it
SEED_MAX = 2 ** 63 - 1
#: the largest seed scikit-learn's ``random_state`` (and NumPy's legacy ``np.random.seed``) takes
SKLEARN_SEED_MAX = 2 ** 32 - 1


def check_seed(seed: object, name: str = "seed", maximum: int = SEED_MAX) -> int:
    """A seed: an int (NumPy's too) in ``[0, maximum]``. ``maximum`` is ``2**32 - 1`` where scikit-learn or
    NumPy's legacy generator gets the seed, ``2**63 - 1`` (torch) otherwise."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(seed).__name__} {seed!r}; e.g. {name}=0")
    seed = int(seed)
    if not 0 <= seed <= maximum:
        shown = f"2**{seed.bit_length() - 1}" if seed > 0 and seed == 2 ** (seed.bit_length() - 1) else str(seed)
        raise ValueError(f"{name} must be an int between 0 and {_power_of_two(maximum)}, got {shown}; e.g. {name}=0")
    return seed


def _power_of_two(n: int) -> str:
    """``2**k - j`` for a large number just below a power of two (``2**32 - 1``), else the number."""
    k = n.bit_length()
    return f"2**{k} - {2 ** k - n}" if n >= 2 ** 16 and 2 ** k - n <= 1000 else str(n)


def check_text(text: object, name: str = "text") -> str:
    """A non-empty string (after stripping white space)."""
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str, got {type(text).__name__}; pass one sentence as a string")
    if not text.strip():
        raise ValueError(f"{name} is empty; pass a sentence with at least one word, e.g. 'I like the movie'")
    import unicodedata

    # control (Cc), format (Cf: zero-width space, joiners, BOM), unassigned or private characters show nothing:
    # a tokenizer drops them and the explanation would be of an empty sentence
    if all(c.isspace() or unicodedata.category(c) in ("Cc", "Cf", "Cn", "Co", "Cs") for c in text):
        shown = ", ".join(f"U+{ord(c):04X}" for c in dict.fromkeys(text) if not c.isspace())
        raise ValueError(f"{name} is empty: it holds only invisible characters ({shown}), which the tokenizer "
                         f"drops; pass a sentence with at least one word, e.g. 'I like the movie'")
    return text


def check_finite(t: torch.Tensor | np.ndarray, name: str) -> torch.Tensor | np.ndarray:
    """Reject NaN and inf in a tensor or array, saying where the first one is."""
    import torch

    tensor = t if isinstance(t, torch.Tensor) else torch.as_tensor(t)
    if tensor.is_floating_point() or tensor.is_complex():
        bad = ~torch.isfinite(tensor)
        if bool(bad.any()):
            where = tuple(int(i) for i in bad.nonzero()[0])
            raise ValueError(f"{name} contains NaN or inf (first at index {where}); clean the input first")
    return t


def check_same_shape(a: torch.Tensor | np.ndarray, b: torch.Tensor | np.ndarray, name_a: str,
                     name_b: str) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(
            f"{name_b} must have the same shape as {name_a}: {name_a} is {tuple(a.shape)}, "
            f"{name_b} is {tuple(b.shape)}"
        )


def _hint(hint: str) -> str:
    return f". {hint}" if hint else ""
