"""The types of xaikit's contract, named once.

Every attribution method takes the model (or a function of the input), the input, and ``target`` as a
keyword: the class index to explain, with ``None`` meaning the class the model predicts for that input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Union

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = ["Target", "Baseline", "ModelFn", "Input"]

#: the class to explain: an index, or ``None`` for the predicted class (resolved once, at the entry)
Target = int | None

#: the reference input of a path method: a number (every feature), an array of the input's shape, a
#: callable ``x -> array``, or ``None`` for the method's default (zeros)
Baseline = float | int | np.ndarray | Callable | None

#: a model as a function of the input batch, ``(B, *shape) -> (B, C)`` logits or ``(B,)`` scores
ModelFn = Callable

#: one input of a tensor method, without a batch dimension: a tensor, an array or a (nested) list of numbers
#: (torch is named by a forward reference, resolved where the method's module has imported it)
Input = Union["torch.Tensor", np.ndarray, Sequence[float]]  # a string cannot take part in |
