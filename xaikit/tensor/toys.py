"""The toy functions of the gradients lecture, as named objects, and a small digits classifier (notebook 01).

* :data:`saturating` — ``min(1, x1 + x2)``: both gradients are 0 at (1, 1) although f(1,1) - f(0,0) = 1
  (Shrikumar, Greenside & Kundaje 2017, "Learning important features through propagating activation
  differences"; Sundararajan, Taly & Yan 2017 use the 1-D ``1 - ReLU(1 - x)`` for the same point).
* :data:`thresholded` — ``max(0, x - 10)``: the gradient jumps from 0 to 1 at x = 10.
* :func:`softplus_relu` — its smooth replacement ``log(1 + exp(beta (x - 10))) / beta``, which tends to the
  ReLU as beta grows (the gap is at most log(2) / beta, at x = 10).
* :data:`smooth_model` — a smooth logistic model of two inputs for the first section.
* :func:`digits_classifier` — a small CNN trained in a few seconds on scikit-learn's bundled 8x8 digits (no
  download), for SmoothGrad (Smilkov et al. 2017); with ``shuffle_labels=True`` the same CNN trained on
  permuted labels, for the data randomisation test of Adebayo et al. (2018). It is trained and cached by
  :mod:`xaikit.models.digits`; its names are reached here too, beside the other toys of the lecture.

Every toy follows the attribution convention of :mod:`xaikit._fn`: it maps a batch ``(B, d)`` to ``(B,)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from xaikit._types import Input
from xaikit._validate import check_float
from xaikit.models.digits import (
    DigitsClassifier,
    DigitsData,
    TrainedDigits,
    digits_classifier,
    digits_setup,
    load_digits,
    shuffled_labels,
)

__all__ = ["Toy", "saturating", "thresholded", "softplus_relu", "softplus", "smooth_model", "DigitsClassifier",
           "DigitsData", "TrainedDigits", "load_digits", "digits_classifier", "digits_setup", "shuffled_labels"]


@dataclass(frozen=True)
class Toy:
    """A named toy function of ``d`` inputs: call it on a batch ``(B, d)`` to get ``(B,)``.

    Attributes:
        name: short name used in figures.
        formula: the formula as text, for titles.
        n_inputs: ``d``.
        reference: where the example comes from.
        fn: the torch implementation on a ``(B, d)`` tensor (differentiable, so every method applies).
    """

    name: str
    formula: str
    n_inputs: int
    reference: str
    fn: Callable[[torch.Tensor], torch.Tensor]

    def __call__(self, x: Input) -> torch.Tensor:
        x = x if isinstance(x, torch.Tensor) else torch.as_tensor(x, dtype=torch.float32)
        if x.ndim != 2 or x.shape[1] != self.n_inputs:
            raise ValueError(f"{self.name} takes a batch of shape (B, {self.n_inputs}), got {tuple(x.shape)}; "
                             f"for one input use x[None]")
        return self.fn(x)

    def __repr__(self) -> str:
        return f"Toy({self.name}: f(x) = {self.formula})"


def _saturating(x: torch.Tensor) -> torch.Tensor:
    s = x[:, 0] + x[:, 1]  # (B,)
    # x1 + x2 below 1, else the constant 1: the constant branch has gradient exactly 0 (also at s = 1).
    return torch.where(s < 1, s, torch.ones_like(s))


saturating = Toy("saturating", "min(1, x1 + x2)", 2, "Shrikumar et al. 2017", _saturating)


def _thresholded(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x[:, 0] - 10.0)  # (B,)


thresholded = Toy("thresholded", "max(0, x - 10)", 1, "lecture 'Problem 2: discontinuous gradients'", _thresholded)


def softplus(z: torch.Tensor, beta: float = 1.0) -> torch.Tensor:
    """``log(1 + exp(beta z)) / beta``, computed as ``logaddexp(beta z, 0) / beta``, which never overflows.

    Its derivative is ``sigmoid(beta z)``, computed exactly by autograd (also at z = 0, where the textbook
    ``max(bz, 0) + log1p(exp(-|bz|))`` form would give autograd's one-sided 1 instead of 0.5).
    """
    bz = beta * z
    return torch.logaddexp(bz, torch.zeros_like(bz)) / beta


def softplus_relu(beta: float = 1.0) -> Toy:
    """The thresholding toy with its ReLU replaced by softplus: ``log(1 + exp(beta (x - 10))) / beta``.

    Its gradient ``sigmoid(beta (x - 10))`` is continuous; as ``beta`` grows it tends to the step of
    :data:`thresholded`, and ``0 <= softplus - relu <= log(2) / beta`` everywhere. Notebook 01, section 3.
    """
    beta = check_float(beta, "beta", 0.0, strict_min=True, hint="beta sets the sharpness, e.g. 1 or 10")
    return Toy("softplus", f"log(1 + exp({beta:g} (x - 10))) / {beta:g}", 1, "lecture: replace ReLU by softplus",
               lambda x: softplus(x[:, 0] - 10.0, beta))


def _smooth(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[:, 0], x[:, 1]
    return torch.sigmoid(1.5 * x1 - 1.0 * x2 + 0.8 * x1 * x2 + 0.2)  # (B,)


smooth_model = Toy("smooth", "sigmoid(1.5 x1 - x2 + 0.8 x1 x2 + 0.2)", 2, "a logistic unit with an interaction",
                   _smooth)
