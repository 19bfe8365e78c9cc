"""Input checks shared by every method: each error names the parameter, what was expected and the fix.

Methods call these at their entry, before any torch work, so a student sees
``ValueError: steps must be an int >= 1, got 0`` rather than a traceback from inside torch.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence


def check_callable(f, name: str = "f") -> Callable:
    if not callable(f):
        raise TypeError(
            f"{name} must be callable: a function or torch module that maps a batch (B, ...) to outputs "
            f"(B,) or (B, C); got {type(f).__name__}"
        )
    return f


def check_int(value, name: str, minimum: int | None = None, maximum: int | None = None, hint: str = "") -> int:
    """An integer within ``[minimum, maximum]`` (either bound optional)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}{_hint(hint)}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value}{_hint(hint)}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be an int <= {maximum}, got {value}{_hint(hint)}")
    return value


def check_float(value, name: str, minimum: float | None = None, maximum: float | None = None,
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


def check_choice(value, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        import difflib

        close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=3)
        also = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}; got {value!r}.{also}")
    return value


def check_text(text, name: str = "text") -> str:
    """A non-empty string (after stripping white space)."""
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str, got {type(text).__name__}; pass one sentence as a string")
    if not text.strip():
        raise ValueError(f"{name} is empty; pass a sentence with at least one word, e.g. 'I like the movie'")
    import unicodedata

    # control (Cc), format (Cf: zero-width space, joiners, BOM), unassigned or private characters show nothing:
    # a tokenizer drops them and the explanation would be of an empty sentence (issue 26 item 13)
    if all(c.isspace() or unicodedata.category(c) in ("Cc", "Cf", "Cn", "Co", "Cs") for c in text):
        shown = ", ".join(f"U+{ord(c):04X}" for c in dict.fromkeys(text) if not c.isspace())
        raise ValueError(f"{name} is empty: it holds only invisible characters ({shown}), which the tokenizer "
                         f"drops; pass a sentence with at least one word, e.g. 'I like the movie'")
    return text


def check_finite(t, name: str):
    """Reject NaN and inf in a tensor or array, saying where the first one is."""
    import torch

    tensor = t if isinstance(t, torch.Tensor) else torch.as_tensor(t)
    if tensor.is_floating_point() or tensor.is_complex():
        bad = ~torch.isfinite(tensor)
        if bool(bad.any()):
            where = tuple(int(i) for i in bad.nonzero()[0])
            raise ValueError(f"{name} contains NaN or inf (first at index {where}); clean the input first")
    return t


def check_same_shape(a, b, name_a: str, name_b: str) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(
            f"{name_b} must have the same shape as {name_a}: {name_a} is {tuple(a.shape)}, "
            f"{name_b} is {tuple(b.shape)}"
        )


def _hint(hint: str) -> str:
    return f". {hint}" if hint else ""
