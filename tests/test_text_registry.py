"""The text registry is the only source of text methods (notebook 04): a method added at run time, from one
module and no list, reaches ``explain``, ``all_views``, the comparison panel's menus and the faithfulness
lab's rankings; and one ``explain`` or ``all_views`` prepares its text once (one tokenization, one forward
pass to resolve the target).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.filterwarnings("ignore::xaikit.tensor.integrated.CompletenessWarning")

TOY = "token length"
TEXT = "i like the movie"


# -- a toy method, the whole of it: its function and its entry ------------------------------------------------
def _token_length(prepared, *, repeats: int = 1):
    """Each token's length in characters, ``repeats`` times over: a ranking with no model in it."""
    from xaikit.text.tokens import TokenScores

    lengths = np.array([float(len(t)) for t in prepared.tokens]) * repeats
    return TokenScores(prepared.tokens, lengths, TOY, prepared.target, signed=False)


def _toy_entry():
    from xaikit.text.registry import TextMethod

    return TextMethod(TOY, _token_length, cost="repeats", cost_keyword="toy_repeats")


@pytest.fixture
def toy():
    # every module that reads the registry is imported first: what they show below is read live, after
    import xaikit.lab.faithfulness
    import xaikit.text.views
    import xaikit.widgets.text_methods  # noqa: F401
    from xaikit.lab.faithfulness import LAB_RANKINGS, LabRanking
    from xaikit.text import registry

    before = registry.method_names()
    entry = registry.register(_toy_entry())
    LAB_RANKINGS[TOY] = LabRanking(place=7, cost=2)  # the lab's own table: ranked after Chefer LRP, at cost 2
    yield entry
    registry.unregister(TOY)
    LAB_RANKINGS.pop(TOY)
    assert registry.method_names() == before


def test_a_method_added_at_run_time_reaches_explain_the_panel_and_the_lab(model, tok, toy):
    from xaikit.lab.faithfulness import rankings, run_lab
    from xaikit.text import registry, views
    from xaikit.widgets import MethodComparisonPanel

    # explain, with its own options and the generic cost knob
    scores = views.explain(model, tok, TEXT, TOY)
    np.testing.assert_array_equal(scores.scores, [len(t) for t in scores.tokens])
    assert views.explain(model, tok, TEXT, TOY, cost=3).scores.tolist() == (3 * scores.scores).tolist()
    with pytest.raises(TypeError, match="token length does not take"):
        views.explain(model, tok, TEXT, TOY, layer=0)
    # all_views, with the entry's cost keyword
    both = views.all_views(model, tok, TEXT, methods=("attention", TOY), toy_repeats=4)
    assert both[TOY].scores.tolist() == (4 * scores.scores).tolist()
    assert TOY in registry.method_names()
    # the comparison panel's menus
    panel = MethodComparisonPanel(model, tok, text=TEXT, a=TOY, b="attention")
    assert TOY in panel.controls["a"].options and TOY in panel.controls["b"].options
    assert panel.error is None and panel.result.a.method == TOY
    # the lab's rankings, at the entry's lab cost
    assert TOY in rankings()
    assert rankings()[-2:] == (TOY, "random")  # its lab place (7) is after Chefer LRP's (6)
    lab = run_lab(model, tok, ["i like the movie", "she hates the book"], rankings=("attention", TOY, "random"),
                  n_permutations=1, progress=False)
    assert lab.rankings == ("attention", TOY, "random") and set(lab.summary()) == set(lab.rankings)
    np.testing.assert_array_equal(lab.scores[TOY][0], 2 * scores.scores)  # lab_cost=2


def test_the_toy_method_took_one_module_and_no_list(toy):
    """Everything the toy method needed lives in this test module: its function and its entry. No module of
    xaikit was edited for it, and no list in xaikit names it."""
    import xaikit

    own = {toy.run.__module__, _toy_entry.__module__}
    assert own == {__name__}
    files = {Path(sys.modules[m].__file__).resolve() for m in own}
    assert files == {Path(__file__).resolve()}
    print(f"the toy method took {len(files)} file ({files.pop().name}) and no list")
    package = Path(xaikit.__file__).resolve().parent
    assert not any(TOY in p.read_text() for p in package.rglob("*.py")), "a list in xaikit names the toy method"


def test_unregistering_removes_it_everywhere(model, tok):
    from xaikit.lab.faithfulness import rankings
    from xaikit.text import registry, views

    registry.register(_toy_entry())
    registry.unregister(TOY)
    assert TOY not in registry.method_names() and TOY not in rankings()
    with pytest.raises(ValueError, match="method must be one of"):
        views.explain(model, tok, TEXT, TOY)
    with pytest.raises(ValueError, match="registered already"):
        registry.register(registry.entry("IG"))


def test_the_registry_keeps_the_notebooks_order():
    from xaikit.text import registry

    assert registry.method_names() == ("Grad-SAM", "SHAP", "IG", "attention", "rollout", "grad-weighted attention",
                                       "gradient", "gradient x attention", "Chefer LRP", "AttnLRP", "LIME")
    from xaikit.lab.faithfulness import rankings

    assert rankings() == ("attention", "gradient", "gradient x attention", "Grad-SAM", "SHAP", "IG",
                                       "Chefer LRP", "AttnLRP", "random")


# -- one text entry: prepared once ----------------------------------------------------------------------------
@pytest.fixture
def counted(model, tok, monkeypatch):
    """Counts the model's forward passes and the tokenizer's calls."""
    calls = {"forward": 0, "tokenizer": 0}
    cls = type(tok)
    original = cls.__call__

    def tokenize(self, *args, **kwargs):
        calls["tokenizer"] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cls, "__call__", tokenize)
    handle = model.register_forward_pre_hook(lambda module, args: calls.__setitem__("forward", calls["forward"] + 1))
    yield calls
    handle.remove()


def test_explain_ig_prepares_the_text_once(model, tok, counted):
    """One ``explain(..., "IG")``: the text tokenized once (and measured once against the model's limit), one
    forward pass to resolve the target; then IG's own passes, the embeddings of the text and its baseline
    (one forward) and one batch of path points."""
    from xaikit.text.views import explain

    scores = explain(model, tok, TEXT, "IG", cost=4)
    assert counted == {"tokenizer": 2, "forward": 1 + 1 + 1}
    counted.update(tokenizer=0, forward=0)
    assert explain(model, tok, TEXT, "IG", target=scores.target, cost=4).target == scores.target
    assert counted == {"tokenizer": 2, "forward": 1 + 1}  # a given target needs no forward pass to resolve


def test_all_views_prepares_the_text_once(model, tok, counted):
    """Every view but SHAP (whose masker tokenizes each masked text) and LIME (a forward pass per batch of its
    samples, counted in test_lime): one tokenization, one forward pass for the target, one forward/backward
    pass shared by the attention views and Grad-SAM, and IG's own two."""
    from xaikit.text import registry
    from xaikit.text.views import all_views

    methods = [m for m in registry.method_names() if m not in ("SHAP", "LIME")]
    views = all_views(model, tok, TEXT, methods=methods, ig_steps=4)
    assert set(views) == set(methods)
    assert counted == {"tokenizer": 2, "forward": 1 + 1 + 2}


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    from xaikit.models.tiny import tiny_bert, tiny_tokenizer

    return tiny_bert(seed=1), tiny_tokenizer(tmp_path_factory.mktemp("tok"))


def test_explain_passes_layer_on_to_the_methods_that_take_it(bert):
    from xaikit.text.attention_views import attention_gradient, raw_attention
    from xaikit.text.views import explain

    model, tok = bert
    text = "a fine and moving film"
    for method, fn, extra in (("attention", raw_attention, {}),
                              ("gradient", attention_gradient, {"target": 1}),
                              ("gradient x attention", attention_gradient, {"target": 1, "times_attention": True})):
        got = explain(model, tok, text, method, target=1, layer=0).scores
        want = fn(model, tok, text, layer=0, **extra).scores
        last = fn(model, tok, text, layer=-1, **extra).scores
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
        assert not np.allclose(got, last), method  # the option changed the answer


@pytest.mark.parametrize("method", ["Grad-SAM", "grad-weighted attention", "Chefer LRP", "rollout"])
def test_explain_refuses_an_option_the_method_does_not_take(bert, method):
    from xaikit.text.views import explain

    model, tok = bert
    with pytest.raises(TypeError, match=rf"explain\(method='{method}'\) got the option layer=2.*Remove it"):
        explain(model, tok, "a fine film", method, layer=2)


@pytest.mark.parametrize("text", ["\u200b\u200b", "\x00\x07", "\ufeff \u2060", "\u200d\t\u200c"])
def test_a_sentence_of_invisible_characters_is_refused_as_empty(bert, text):
    from xaikit.text.views import explain

    model, tok = bert
    with pytest.raises(ValueError, match=r"text is empty: it holds only invisible characters \(U\+"):
        explain(model, tok, text, "attention")


def test_a_sentence_with_a_zero_width_space_among_words_is_still_explained(bert):
    from xaikit.text.views import explain

    model, tok = bert
    assert len(explain(model, tok, "a fine\u200b film", "attention").scores) >= 3


def test_run_lab_refuses_a_long_sentence_before_any_work(bert, monkeypatch):
    from xaikit.lab import faithfulness
    from xaikit.text import shaptext, views

    model, tok = bert
    monkeypatch.setattr(shaptext, "LONG_TEXT", 6)  # the tiny model takes too few tokens for the real 200
    calls = []
    real = views.all_views
    monkeypatch.setattr(views, "all_views", lambda *a, **k: calls.append(1) or real(*a, **k))
    sentences = ["a fine film", "a fine film and a fine moving film"]
    with pytest.raises(ValueError, match=r"sentences\[1\] has \d+ tokens.*run_lab\(\.\.\., allow_long=True\)"):
        faithfulness.run_lab(model, tok, sentences, shap_evals=20, ig_steps=4, n_permutations=2, progress=False)
    assert calls == []  # refused before the first sentence was explained
    lab = faithfulness.run_lab(model, tok, sentences, shap_evals=20, ig_steps=4, n_permutations=2, progress=False,
                               allow_long=True)
    assert len(lab.sentences) == 2


def test_token_scores_top_needs_k_at_least_one():
    from xaikit.text.tokens import TokenScores

    ts = TokenScores(["a", "b", "c"], np.array([0.1, 0.5, -0.2]), "demo", 0, True)
    with pytest.raises(ValueError, match=r"k must be an int >= 1, got -1"):
        ts.top(k=-1)
    assert [t for t, _ in ts.top(k=10)] == ["b", "c", "a"]


def test_tokenscores_refuses_a_sentence_as_its_tokens():
    from xaikit.text.tokens import TokenScores

    with pytest.raises(TypeError, match="tokens must be a list of token strings"):
        TokenScores("hi there", np.arange(8.0))
    assert TokenScores(["hi", "there"], np.arange(2.0)).tokens == ["hi", "there"]
