"""The one registry of text methods: every method that turns (model, tokenizer, text) into
:class:`~xaikit.text.tokens.TokenScores`, by the name the notebooks, the panels and the lab use.

:func:`xaikit.text.views.explain` and :func:`~xaikit.text.views.all_views`, the faithfulness lab's rankings
(:data:`xaikit.text.faithfulness.RANKINGS`) and the panels' method menus
(:class:`~xaikit.widgets.MethodComparisonPanel`) all read :data:`TEXT_METHODS`. Adding a text method is one
module with its function plus one :func:`register` call here (see ``ARCHITECTURE.md``). Notebook 04.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["TextMethod", "TEXT_METHODS", "register", "method_names", "lab_rankings"]


@dataclass(frozen=True)
class TextMethod:
    """One text method as the views, the lab and the panels see it.

    Attributes:
        name: the name in menus, tables and :func:`~xaikit.text.views.explain` (``"Grad-SAM"``).
        explain: ``(model, tokenizer, text, target, **options) -> TokenScores``; ``target=None`` is the
            predicted class, as everywhere in xaikit.
        from_pass: ``(attentions, gradients, layer) -> (N,) scores`` for a method that reads the one shared
            forward/backward pass of :func:`~xaikit.text.views.all_views` (``(L, M, N, N)`` each, on the
            model's device), else ``None`` (the method runs its own passes through ``explain``).
        signed: whether its scores carry a sign (ranked by ``|score|``).
        cost: the keyword of ``explain`` that sets its cost (``"steps"``, ``"max_evals"``), or ``None``.
        lab: its place among the faithfulness lab's rankings (``None``: not a lab ranking).
        lab_options: keywords ``explain`` gets in the lab.
    """

    name: str
    explain: Callable
    from_pass: Callable | None = None
    signed: bool = False
    cost: str | None = None
    lab: int | None = None
    lab_options: dict = field(default_factory=dict)


#: every text method by name, in the order the notebook and the panels show them.
TEXT_METHODS: dict[str, TextMethod] = {}


def register(method: TextMethod) -> TextMethod:
    """Add ``method`` to :data:`TEXT_METHODS` (a name may be registered once)."""
    if method.name in TEXT_METHODS:
        raise ValueError(f"a text method named {method.name!r} is registered already")
    TEXT_METHODS[method.name] = method
    return method


def method_names() -> tuple[str, ...]:
    """The registered names, in registration order."""
    return tuple(TEXT_METHODS)


def lab_rankings() -> tuple[str, ...]:
    """The lab's rankings in their table order, then ``"random"``."""
    ranked = sorted((m for m in TEXT_METHODS.values() if m.lab is not None), key=lambda m: m.lab)
    return (*(m.name for m in ranked), "random")


# The entries. Each ``explain`` imports its module on first use, so reading the registry stays cheap, and
# passes its options on through :func:`_call`, which refuses an option the method does not take (issue 26
# item 7: ``explain(..., "Grad-SAM", layer=2)`` used to drop ``layer`` and return the usual scores).

def _call(name: str, fn, model, tokenizer, text, options: dict, fixed: tuple[str, ...] = (), **given):
    """``fn(model, tokenizer, text, **given, **options)``, after checking that ``fn`` takes every option
    (``fixed``: keywords the entry sets itself, e.g. ``times_attention`` for "gradient x attention")."""
    import inspect

    taken = [p for p in inspect.signature(fn).parameters
             if p not in ("model", "tokenizer", "text", "target", *fixed, *given)]
    for key, value in options.items():
        if key not in taken:
            offer = (f"its options are {', '.join(taken)}" if taken else f"{name} takes no options")
            raise TypeError(f"explain(method={name!r}) got the option {key}={value!r}, which {name} does not take; "
                            f"{offer}. Remove it, or pick a method that takes it (e.g. 'attention' or "
                            f"'gradient' take layer=...)")
    return fn(model, tokenizer, text, **given, **options)


def _gradsam(model, tokenizer, text, target, **options):
    from xaikit.text.gradsam import gradsam

    return _call("Grad-SAM", gradsam, model, tokenizer, text, options, target=target)


def _gradsam_pass(a, g, layer):
    from xaikit.text.gradsam import gradsam_scores

    return gradsam_scores(a, g)


def _shap(model, tokenizer, text, target, **options):
    from xaikit.text.shaptext import token_scores

    return _call("SHAP", token_scores, model, tokenizer, text, options, target=target)


def _ig(model, tokenizer, text, target, **options):
    from xaikit.text.encoding import encode_one
    from xaikit.text.text_ig import text_integrated_gradients

    if target is None:
        target = encode_one(model, tokenizer, text, None, method="IG").target
    options.setdefault("steps", 32)
    scores = _call("IG", text_integrated_gradients, model, tokenizer, text, options, target=target)
    scores.method = "IG"
    return scores


def _attention(model, tokenizer, text, target, **options):
    from xaikit.text.views import raw_attention

    return _call("attention", raw_attention, model, tokenizer, text, options)


def _rollout(model, tokenizer, text, target, **options):
    from xaikit.text.views import rollout

    return _call("rollout", rollout, model, tokenizer, text, options)


def _rollout_pass(a, g, layer):
    from xaikit.text.views import rollout_matrix

    return rollout_matrix(a)[0]


def _grad_weighted(model, tokenizer, text, target, **options):
    from xaikit.text.views import grad_weighted_attention

    return _call("grad-weighted attention", grad_weighted_attention, model, tokenizer, text, options, target=target)


def _grad_weighted_pass(a, g, layer):
    from xaikit.text.views import grad_attention_matrix

    return grad_attention_matrix(a, g)[0]


def _attention_gradient(times_attention: bool):
    name = "gradient x attention" if times_attention else "gradient"

    def explain(model, tokenizer, text, target, **options):
        from xaikit.text.views import attention_gradient

        return _call(name, attention_gradient, model, tokenizer, text, options, fixed=("times_attention",),
                     target=target, times_attention=times_attention)

    return explain


def _chefer_lrp(model, tokenizer, text, target, **options):
    from xaikit.text.lrp import chefer_lrp

    return _call("Chefer LRP", chefer_lrp, model, tokenizer, text, options, target=target)


register(TextMethod("Grad-SAM", _gradsam, _gradsam_pass, lab=3))
register(TextMethod("SHAP", _shap, signed=True, cost="max_evals", lab=4))
register(TextMethod("IG", _ig, signed=True, cost="steps", lab=5, lab_options={"rule": "gausslegendre"}))
register(TextMethod("attention", _attention, lambda a, g, layer: a[layer, :, 0, :].mean(0), lab=0))
register(TextMethod("rollout", _rollout, _rollout_pass))
register(TextMethod("grad-weighted attention", _grad_weighted, _grad_weighted_pass))
register(TextMethod("gradient", _attention_gradient(False), lambda a, g, layer: g[layer, :, 0, :].mean(0),
                    signed=True, lab=1))
register(TextMethod("gradient x attention", _attention_gradient(True),
                    lambda a, g, layer: (g[layer, :, 0, :] * a[layer, :, 0, :]).mean(0), signed=True, lab=2))
register(TextMethod("Chefer LRP", _chefer_lrp, lab=6))
