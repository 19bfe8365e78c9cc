"""Any registered text method by name (:func:`explain`), and every view of one sentence from one shared
forward/backward pass (:func:`all_views`), all as :class:`~xaikit.text.tokens.TokenScores` so any two can be
drawn side by side and rank-correlated (notebook 04, section 5, and notebook 06).

The methods are the registry's (:mod:`xaikit.text.registry`, read live): Grad-SAM
(:mod:`xaikit.text.gradsam`), SHAP (:mod:`xaikit.text.shaptext`), Integrated Gradients
(:mod:`xaikit.text.text_ig`), the attention views (:mod:`xaikit.text.attention_views`: raw attention,
rollout, gradient-weighted attention, attention gradient, gradient x attention) and Chefer et al.'s
relevance propagation (:mod:`xaikit.text.lrp`). Both functions prepare the text once
(:func:`xaikit._text_input.prepare_text`: checked, cut, tokenized, one forward pass, the target resolved)
and hand the prepared text to each method.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch

from xaikit._fn import computing
from xaikit._text_input import PreparedText, Tokenizer, prepare_text, run_text
from xaikit._types import Target
from xaikit._validate import check_int, check_names
from xaikit.models.arch import check_layer
from xaikit.text import registry
from xaikit.text.tokens import TokenScores

__all__ = ["explain", "all_views", "SHARED_PASS", "PREPARE"]

#: the key of :func:`all_views`' ``spent`` under which the one shared forward/backward pass is counted (once,
#: for every method that read it), and the key of the forward pass that prepares the text (tokens, target)
SHARED_PASS, PREPARE = "shared pass", "prepare"

def explain(model: torch.nn.Module, tokenizer: Tokenizer, text: str, method: str, *, target: Target = None,
            cost: int | None = None, **options) -> TokenScores:
    """One method by name (:func:`xaikit.text.registry.method_names`); ``target=None`` explains the
    predicted class.

    ``cost`` sets the method's cost knob, whatever its name (IG's ``steps``, SHAP's ``max_evals``: the
    entry's ``cost``); ``options`` go to the method, which refuses any it does not take. A text longer than
    the model takes is cut once, here, to its first words (one warning), so every method explains the same
    tokens (:func:`xaikit._text_input.fit_text`).
    """
    entry = registry.entry(method)
    options = {**_cost_option(entry, cost), **options}
    return run_text(lambda prepared: registry.run_method(entry, prepared, options), model, tokenizer, text, target,
                    method="explain", heavy=entry.heavy)


def _cost_option(entry: registry.TextMethod, cost) -> dict:
    if cost is None:
        return {}
    if entry.cost is None:
        raise TypeError(f"explain(method={entry.name!r}) got cost={cost!r}, but {entry.name} has no cost to set; "
                        "leave cost out")
    return {entry.cost: check_int(cost, "cost", entry.cost_min, hint=entry.cost_hint or None)}


def all_views(model: torch.nn.Module, tokenizer: Tokenizer, text: str, *, target: Target = None, methods=None,
              layer: int = -1, spent: dict | None = None, **costs: int) -> dict[str, TokenScores]:
    """Every view in ``methods`` (default: every registered one) of one sentence, sharing one
    forward/backward pass for the methods that read it (their entry's ``from_pass``).

    ``costs``: a method's cost by its entry's ``cost_keyword`` (``ig_steps=64``, ``shap_evals=500``); a method
    not named runs at its default cost.

    ``spent``: a dict to fill with what the views cost, each a :class:`xaikit.models.passes.Cost`
    counted by :func:`xaikit.models.passes.count_passes` on the model's blocks: :data:`PREPARE` (the forward
    pass that resolves the target, used by every view), :data:`SHARED_PASS` (the one forward/backward pass
    and the scores read from it, counted once) and each method that ran its own passes under its name. A
    method without an entry of its own read the shared pass; splitting that pass between its readers would
    invent numbers, so it is not split.
    """
    given = _check_costs(costs, "all_views")
    names = registry.method_names()
    methods = check_names(names if methods is None else methods, "methods", names)
    if spent is not None and not isinstance(spent, dict):
        raise TypeError(f"spent must be a dict to fill with the views' costs (spent={{}}) or None, "
                        f"got {type(spent).__name__}")
    with computing(model):  # the entry: float32 and the thread policy for every view
        with _counted(model, spent, PREPARE):
            prepared = prepare_text(model, tokenizer, text, target, method="all_views")
        return _all_views(prepared, methods, layer, given, spent=spent)


@contextmanager
def _counted(model, spent: dict | None, key: str):
    """Count the passes of the ``with`` block into ``spent[key]`` (added to what is there); nothing when
    ``spent`` is None."""
    if spent is None:
        yield
        return
    from xaikit.models.passes import Cost, count_passes

    with count_passes(model) as passes:
        yield
    spent[key] = spent.get(key, Cost()) + passes.cost


def _check_costs(costs: dict, caller: str) -> dict[str, int]:
    """``costs`` by ``cost_keyword``, each checked against its entry: ``{method name: cost}``."""
    by_keyword = {m.cost_keyword: m for m in registry.entries().values() if m.cost_keyword}
    out = {}
    for keyword, value in costs.items():
        if keyword not in by_keyword:
            known = ", ".join(by_keyword) or "none"
            raise TypeError(f"{caller}() got an unexpected keyword argument {keyword!r} (the methods' costs: {known})")
        entry = by_keyword[keyword]
        out[entry.name] = check_int(value, keyword, entry.cost_min, hint=entry.cost_hint or None)
    return out


def _all_views(prepared: PreparedText, methods, layer: int, costs: dict[str, int],
               options: dict[str, dict] | None = None, spent: dict | None = None) -> dict[str, TokenScores]:
    """:func:`all_views` of a prepared text; ``costs``: ``{name: cost}``; ``options``: ``{name: options}``;
    ``spent``: as :func:`all_views` fills it, without :data:`PREPARE`."""
    from xaikit.text.attention_views import view_scores
    from xaikit.text.gradsam import _attention_and_gradients

    entries = registry.entries()
    methods = check_names(methods, "methods", tuple(entries))
    layer = check_layer(prepared.model, layer)
    options = options or {}
    shared = [m for m in methods if entries[m].from_pass is not None and m not in options]
    out: dict[str, TokenScores] = {}
    if shared:  # on the model's device
        with _counted(prepared.model, spent, SHARED_PASS):
            a, g, _ = _attention_and_gradients(prepared.model, prepared.inputs, prepared.target)
            for m in shared:
                out[m] = view_scores(prepared, entries[m].from_pass(a, g, layer), m, entries[m].signed, layer=layer)
    for m in methods:
        entry = entries[m]
        if m not in shared:
            given = {entry.cost: costs[m]} if m in costs and entry.cost else {}
            with _counted(prepared.model, spent, m):
                out[m] = registry.run_method(entry, prepared, {**given, **options.get(m, {})})
    return {m: out[m] for m in methods}  # in the order asked for
