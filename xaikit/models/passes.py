"""What an explanation costs: the model's forward and backward passes, counted by hooks, and the wall time.

Every comparison table and panel shows, per method, the passes it used, counted on the
model rather than by arithmetic (SHAP's default of hundreds of model evaluations is otherwise invisible).
:func:`count_passes` puts a forward hook on every encoder block; each block call adds its batch size (the
rows it ran) to that block's count, and a tensor hook on the block's output adds the rows of each gradient
that flows back through it. A *pass* is one example through the whole encoder, so

    forward passes  = rows run through all blocks / number of blocks
    backward passes = rows whose gradient flowed back through all blocks / number of blocks

which counts a method that reruns only the top blocks (the faithfulness lab's edits) as the fraction of a
pass it really did. The wall time of the ``with`` block comes with them.

One kind of pass no hook can see: a method that re-runs the model from copies of its weights (Chefer's LRP
and AttnLRP run a float64 copy of the encoder in plain tensor operations). Such a method reports its own
passes with :func:`record_passes`, which every :func:`count_passes` open on that model adds up.

>>> with count_passes(model) as cost:       # doctest: +SKIP
...     scores = gradsam(model, tokenizer, "a fine film")
>>> cost.forward, cost.backward, cost.seconds   # doctest: +SKIP
(2.0, 1.0, 0.01)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn

from xaikit.models.arch import encoder_layers

__all__ = ["Cost", "Passes", "count_passes", "record_passes"]

_open: list = []  # (model, Passes) of every count_passes block now open


@dataclass
class Passes:
    """Forward and backward passes counted on a model's encoder blocks, and the wall time they took."""

    n_blocks: int
    forward_rows: list[int] = field(default_factory=list)  # rows run, per block
    backward_rows: list[int] = field(default_factory=list)  # rows whose gradient came back, per block
    seconds: float = 0.0

    @property
    def forward(self) -> float:
        """Equivalent full forward passes: one example through every block counts 1."""
        return sum(self.forward_rows) / self.n_blocks

    @property
    def backward(self) -> float:
        """Equivalent full backward passes: one example's gradient back through every block counts 1."""
        return sum(self.backward_rows) / self.n_blocks

    def __str__(self) -> str:
        return f"{self.forward:g} forward, {self.backward:g} backward passes, {self.seconds:.2f} s"

    @property
    def cost(self) -> Cost:
        """What was counted, frozen: a :class:`Cost`, which adds up over sentences and images."""
        return Cost(self.forward, self.backward, self.seconds)


@dataclass(frozen=True)
class Cost:
    """A computation's cost as :func:`count_passes` counted it: equivalent full ``forward`` and ``backward``
    passes and the wall ``seconds``. Costs add (``a + b``, ``sum(costs, Cost())``) and unpack as
    ``forward, backward, seconds = cost``."""

    forward: float = 0.0
    backward: float = 0.0
    seconds: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(self.forward + other.forward, self.backward + other.backward, self.seconds + other.seconds)

    def __radd__(self, other) -> Cost:
        return self if isinstance(other, int) and other == 0 else self.__add__(other)  # sum() starts from 0

    def __iter__(self):
        return iter((self.forward, self.backward, self.seconds))

    def __str__(self) -> str:
        wall = f"{1000 * self.seconds:.0f} ms" if self.seconds < 1 else f"{self.seconds:.1f} s"
        return f"{self.forward:g} forward, {self.backward:g} backward, {wall}"


def _rows(output) -> torch.Tensor | None:
    hidden = output[0] if isinstance(output, (tuple, list)) else output
    return hidden if isinstance(hidden, torch.Tensor) else None


@contextmanager
def count_passes(model: nn.Module) -> Iterator[Passes]:
    """Count ``model``'s forward and backward passes (see the module docstring) inside a ``with`` block.

    The hooks are removed on leaving, also after an exception; ``seconds`` is set then. Works for every
    model whose encoder blocks :func:`xaikit.models.arch.encoder_layers` finds (BERT family, ViT).
    """
    blocks = encoder_layers(model)
    cost = Passes(n_blocks=len(blocks), forward_rows=[0] * len(blocks), backward_rows=[0] * len(blocks))

    def hook_for(i: int):
        def hook(module, inputs, output):
            hidden = _rows(output)
            if hidden is None:
                return None
            rows = int(hidden.shape[0]) if hidden.dim() > 1 else 1
            cost.forward_rows[i] += rows
            if hidden.requires_grad:
                def on_grad(grad, i=i, rows=rows):
                    cost.backward_rows[i] += rows
                hidden.register_hook(on_grad)
            return None
        return hook

    handles = [block.register_forward_hook(hook_for(i)) for i, block in enumerate(blocks)]
    start = time.perf_counter()
    _open.append((model, cost))
    try:
        yield cost
    finally:
        cost.seconds = time.perf_counter() - start
        _open[:] = [pair for pair in _open if pair[1] is not cost]
        for handle in handles:
            handle.remove()


def record_passes(model: nn.Module, forward: float = 0.0, backward: float = 0.0) -> None:
    """Add ``forward`` and ``backward`` full passes (one example through every block) of ``model`` that ran
    outside its modules (a re-run from copied weights) to every :func:`count_passes` open on it."""
    for counted, cost in _open:
        if counted is model:
            cost.forward_rows[0] += round(forward * cost.n_blocks)
            cost.backward_rows[0] += round(backward * cost.n_blocks)
