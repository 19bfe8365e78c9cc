"""Forward hooks and the attention implementation, switched for the length of a ``with`` block.

Every method that reads or replaces a module's output (IG's embedding swap, TCAV's block activations,
the attention capture, the faithfulness lab's masking) goes through :func:`forward_hooks`, so a hook is
never left on a model after an exception. Every method that needs a given attention implementation goes
through :func:`attention_implementation` (transformers keeps the setting in the private
``config._attn_implementation``; this is the one place that touches it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from torch import nn

__all__ = ["forward_hooks", "attention_implementation", "set_attention_implementation", "implementation_of"]

Hook = Callable[[nn.Module, tuple, object], object]


@contextmanager
def forward_hooks(*pairs: tuple[nn.Module, Hook]) -> Iterator[None]:
    """Register ``hook`` on ``module`` for each ``(module, hook)`` pair; remove them all on leaving.

    A hook returning a value replaces the module's output (PyTorch's rule).

    >>> with forward_hooks((model.embeddings, keep)):    # doctest: +SKIP
    ...     model(**inputs)
    """
    handles = []
    try:
        for module, hook in pairs:
            handles.append(module.register_forward_hook(hook))
        yield
    finally:
        for handle in handles:
            handle.remove()


def implementation_of(model: nn.Module) -> str | None:
    """The attention implementation ``model`` runs, ``None`` for a model without a transformers config."""
    return getattr(getattr(model, "config", None), "_attn_implementation", None)


def set_attention_implementation(model: nn.Module, name: str) -> bool:
    """Switch ``model`` to the attention implementation ``name``; returns whether it now uses it.

    Uses ``model.set_attn_implementation`` where transformers has it (it checks that the model supports
    ``name``), else sets the config (transformers 4.x, and names registered with
    ``AttentionInterface``). A model that refuses keeps its implementation and ``False`` comes back.
    """
    config = getattr(model, "config", None)
    if config is None:
        return False
    setter = getattr(model, "set_attn_implementation", None)
    try:
        if callable(setter) and name in ("eager", "sdpa", "flash_attention_2", "flex_attention"):
            setter(name)
        else:
            config._attn_implementation = name
    except Exception:  # noqa: BLE001 - this model has no such path; it keeps the one it has
        return False
    return implementation_of(model) == name


@contextmanager
def attention_implementation(model: nn.Module, name: str | None) -> Iterator[bool]:
    """Run the block with ``model`` on the attention implementation ``name``, then switch back.

    Yields whether the switch took (``name=None``, or a model that cannot switch, yields ``False`` and
    leaves the model as it is).
    """
    before = implementation_of(model)
    switched = name is not None and name != before and set_attention_implementation(model, name)
    try:
        yield switched or (name is not None and name == before)
    finally:
        if switched or implementation_of(model) != before:
            set_attention_implementation(model, before if before is not None else "eager")
