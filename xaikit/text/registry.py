"""The one registry of text methods: every method that turns a prepared text
(:class:`~xaikit._text_input.PreparedText`) into :class:`~xaikit.text.tokens.TokenScores`, by the name the
notebooks, the panels and the lab use (notebooks 04 and 06).

Each method module declares its own :class:`TextMethod` next to the method and calls :func:`register` when
it is imported; :func:`entries` imports every module of :mod:`xaikit.text` once (no list of them is kept
anywhere), so the registry is complete whenever it is read. :func:`xaikit.text.views.explain`,
:func:`~xaikit.text.views.all_views`, the faithfulness lab's rankings and the panels' method menus
(:class:`~xaikit.widgets.MethodComparisonPanel`) read it live: a method registered later, from any module,
reaches all of them. Adding a text method is one module (see ``ARCHITECTURE.md``); the faithfulness lab
keeps its own table of the methods it ranks and their options (its ``LAB_RANKINGS``).

A method's public function is one call of the family's entry (:func:`xaikit._text_input.run_text`), and
:func:`run_method` runs a registered method on a text prepared already; both apply float32 and the thread
policy (``heavy``), so no method applies them itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xaikit._registry import Registry, run_options

__all__ = ["TextMethod", "register", "unregister", "entries", "entry", "method_names", "run_method"]


@dataclass(frozen=True)
class TextMethod:
    """One text method as the views, the lab and the panels see it.

    Attributes:
        name: the name in menus, tables and :func:`~xaikit.text.views.explain` (``"Grad-SAM"``).
        run: ``(prepared, **options) -> TokenScores``, the method's trusting function: the text is checked,
            cut, tokenized and the target resolved (``prepared.target``) before it is called.
        from_pass: ``(attentions, gradients, layer) -> (N,) scores`` for a method that reads the one shared
            forward/backward pass of :func:`~xaikit.text.views.all_views` (``(L, M, N, N)`` each, on the
            model's device), else ``None`` (the method runs its own passes through ``run``).
        signed: whether its scores carry a sign (ranked by ``|score|``).
        order: its place in the menus and in ``all_views`` (ties: registration order).
        cost: the option of ``run`` that sets its cost (``"steps"``, ``"max_evals"``), or ``None``; the
            ``cost=`` keyword of :func:`~xaikit.text.views.explain` sets it.
        cost_keyword: the keyword of ``all_views`` and ``run_lab`` that sets ``cost`` (``"ig_steps"``).
        cost_min: the smallest cost allowed; cost_hint: what the cost counts, for error messages.
        defaults: options ``run`` gets unless the caller gives them (IG's 32 steps).
        heavy: its work is worth the idle cores (float64 re-runs): the thread policy's ``heavy``.
        long_option: the option that lets it explain texts over its length limit (SHAP's ``"allow_long"``),
            or ``None`` (no limit).
        check_long: ``(model, tokenizer, texts, cost, keyword) -> None``: refuses, before any work, a text too
            long for the method without ``long_option`` (the lab calls it over every sentence), or ``None``.
    """

    name: str
    run: Callable
    from_pass: Callable | None = None
    signed: bool = False
    order: float = float("inf")
    cost: str | None = None
    cost_keyword: str | None = None
    cost_min: int = 1
    cost_hint: str = ""
    defaults: dict = field(default_factory=dict)
    heavy: bool = False
    long_option: str | None = None
    check_long: Callable | None = None

    def options(self) -> tuple[str, ...]:
        """The options ``run`` takes (its keywords after the prepared text)."""
        return run_options(self.run)


_REGISTRY: Registry[TextMethod] = Registry("text", TextMethod, __name__)


def register(method: TextMethod) -> TextMethod:
    """Add ``method`` to the registry (a name may be registered once)."""
    return _REGISTRY.register(method)


def unregister(name: str) -> TextMethod:
    """Remove the method ``name`` from the registry and return its entry."""
    return _REGISTRY.unregister(name)


def entries() -> dict[str, TextMethod]:
    """Every registered method by name, in menu order (``order``, then registration)."""
    return _REGISTRY.entries()


def entry(name: str) -> TextMethod:
    """The entry of the method ``name`` (a ValueError naming the registered ones otherwise)."""
    return _REGISTRY.entry(name)


def method_names() -> tuple[str, ...]:
    """The registered names, in menu order."""
    return _REGISTRY.names()


def run_method(method: TextMethod, prepared, options: dict):
    """``method.run(prepared, **method.defaults, **options)``, after checking that ``run`` takes every
    option (an option the method does not take is refused, never dropped), in float32 with the thread
    policy (:func:`xaikit._fn.computing`, ``method.heavy``)."""
    from xaikit._fn import computing

    taken = method.options()
    for key, value in options.items():
        if key not in taken:
            offer = (f"its options are {', '.join(taken)}" if taken else f"{method.name} takes no options")
            raise TypeError(f"explain(method={method.name!r}) got the option {key}={value!r}, which {method.name} "
                            f"does not take; {offer}. Remove it, or pick a method that takes it (e.g. 'attention' "
                            f"or 'gradient' take layer=...)")
    with computing(prepared.model, method.heavy):
        return method.run(prepared, **{**method.defaults, **options})
