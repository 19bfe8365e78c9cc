"""A str where True or False belongs.

The rule: every public function, constructor and method with a True/False parameter (a bool default, or a
``bool`` annotation) carries :func:`xaikit._validate.bool_flags`, which refuses a str before any work starts,
naming the parameter: ``bool("False")`` is True, so ``rank_correlation(a, b, by_abs="False")`` had compared
magnitudes, ``rollout_matrix(A, residual="False")`` had added the residual and ``SaturationPanel(scaled="yes")``
had failed deep in traitlets. The walk below finds every such parameter, so a new one is covered the day it
is written. The README's "Bad input and safety" table lists the input.
"""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest
import torch

from tests._public import public_objects
from xaikit._validate import _is_bool_parameter


def _public_flags():
    """(label, callable-to-call, unbound, parameter) for every public True/False parameter in xaikit."""
    found = []
    for module, name, obj in public_objects():
        if inspect.isfunction(obj):
            targets = [(name, obj, obj, False)]
        elif inspect.isclass(obj):
            init = [] if dataclasses.is_dataclass(obj) or "__init__" not in vars(obj) else \
                [(name, obj, vars(obj)["__init__"], False)]
            targets = init + [(f"{name}.{k}", v, v, True) for k, v in vars(obj).items()
                              if inspect.isfunction(v) and not k.startswith("_")]
        else:
            continue
        for label, call, fn, method in targets:
            for p in inspect.signature(fn).parameters.values():
                if _is_bool_parameter(p):
                    found.append((f"{module.__name__}.{label}", call, fn, method, p.name))
    return found


def test_the_walk_finds_the_flags_of_the_round():
    labels = {(label, p) for label, *_, p in _public_flags()}
    for case in [("xaikit.text.tokens.rank_correlation", "by_abs"), ("xaikit.text.tokens.TokenScores.top", "by_abs"),
                 ("xaikit.attention.relevance.rollout_matrix", "residual"),
                 ("xaikit.attention.scores.dot_scores", "scaled"), ("xaikit.lab.tensor_sanity.ssim", "absolute"),
                 ("xaikit.plotting.token_heatmap_html", "signed"),
                 ("xaikit.widgets.attention.SaturationPanel", "scaled"),
                 ("xaikit.widgets.text_methods.MethodComparisonPanel", "drop_special")]:
        assert case in labels, case
    assert len(labels) > 100


def test_every_public_flag_refuses_a_str_naming_the_parameter():
    failed = []
    for label, call, fn, method, name in _public_flags():
        if name not in getattr(fn, "__xaikit_bool_flags__", ()):
            failed.append(f"{label}({name}=...): not decorated with bool_flags")
            continue  # never call an unchecked function: prepare(force="False") would rebuild the models
        try:
            with pytest.raises(TypeError, match=rf"^{name} must be True or False, got str 'False'"):
                (call(None, **{name: "False"}) if method else call(**{name: "False"}))
        except BaseException as err:  # noqa: BLE001 - report every case
            failed.append(f"{label}({name}='False'): {type(err).__name__}: {str(err)[:200]}")
    assert not failed, "\n".join(failed)


def test_str_flags_of_the_round_and_what_still_passes():
    from xaikit.attention.positions import position_similarity, sinusoidal_positional_encoding
    from xaikit.attention.relevance import rollout_matrix
    from xaikit.attention.scores import dot_scores
    from xaikit.lab.tensor_sanity import spearman, ssim
    from xaikit.plotting import token_heatmap_html
    from xaikit.text.tokens import TokenScores, rank_correlation

    a, b = TokenScores(list("abcd"), np.array([-4.0, 1, 2, 3])), TokenScores(list("abcd"), np.array([4.0, 1, 2, 3]))
    q = torch.randn(3, 8, generator=torch.Generator().manual_seed(0))
    attn = torch.softmax(torch.randn(2, 2, 4, 4, generator=torch.Generator().manual_seed(0)), -1)
    pe = sinusoidal_positional_encoding(6, 8)
    refused = [lambda: rank_correlation(a, b, by_abs="False"), lambda: a.top(2, by_abs="False"),
               lambda: a.ranking(by_abs="False"), lambda: a.ranking("False"), lambda: rollout_matrix(attn, "False"),
               lambda: dot_scores(q, q, scaled="False"), lambda: position_similarity(pe, normalize="False"),
               lambda: spearman(np.ones(4), np.ones(4), absolute="False"),
               lambda: ssim(np.ones((8, 8)), np.ones((8, 8)), absolute="False"),
               lambda: token_heatmap_html(["a"], [-1.0], signed="False")]
    for call in refused:
        with pytest.raises(TypeError, match=r"must be True or False, got str 'False'; e.g. \w+=True \(the bool, not the str"):
            call()
    # bools, NumPy's bool_ and 0/1 still pass, and mean what they say
    assert rank_correlation(a, b, by_abs=np.bool_(False))["spearman"] == rank_correlation(a, b, by_abs=False)[
        "spearman"] < 0
    assert a.top(1, by_abs=0) == [("d", 3.0)] and a.top(1, by_abs=1) == [("a", -4.0)]
    assert torch.equal(dot_scores(q, q, scaled=False)[0], q @ q.T)
    with pytest.raises(TypeError, match=r"by_abs must be True or False, got int 2"):
        a.top(1, by_abs=2)


def test_panels_refuse_a_str_flag_at_construction():
    from xaikit.widgets.attention import SaturationPanel

    with pytest.raises(TypeError, match=r"scaled must be True or False, got str 'yes'; e.g. scaled=True$"):
        SaturationPanel(scaled="yes")
