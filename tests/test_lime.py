"""LIME (Ribeiro et al. 2016; xaikit.text.lime, notebook 04 section 4b) against its closed form, against the
``lime`` package (its sampler, its LimeBase fit, its LimeTextExplainer end to end) and across seeds."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import torch

from xaikit.models.tiny import tiny_bert, tiny_tokenizer
from xaikit.text import lime as L

TEXT = "i like the movie so"  # distinct whole words of the tiny vocabulary: one token each


@pytest.fixture(scope="module")
def sharp():
    """The tiny random BERT with every weight matrix times 10, so that removing a word moves its logits by
    tenths (at the usual initial scale they move by 1e-5)."""
    from xaikit.models.tiny import tiny_bert

    m = tiny_bert(seed=3)
    with torch.no_grad():
        for p in m.parameters():
            if p.ndim == 2:
                p.mul_(10.0)
    return m


@pytest.fixture(scope="module")
def sharp64(sharp):
    """The sharpened model in float64, so that the package's per-string calls and xaikit's padded batches
    agree to 1e-12 and the coefficients can be compared to 1e-6."""
    import copy

    return copy.deepcopy(sharp).double()


def _package_kernel(d, kernel_width):
    return np.sqrt(np.exp(-(d ** 2) / kernel_width ** 2))


# -- (a) the closed form on a model linear in the presence vector ---------------------------------------------
@pytest.mark.parametrize("width", [5.0, 25.0, 400.0])
def test_all_samples_recover_a_linear_model_exactly(width):
    w_true, b_true = np.array([1.5, -2.0, 0.25, 0.7, -0.05]), 0.3

    def f(z):
        return b_true + z @ w_true

    fit, z, y = L.lime_presence(f, 5, samples=L.all_presence(5), kernel_width=width, alpha=0.0)
    assert z.shape == (32, 5) and (z[0] == 1).all()
    np.testing.assert_allclose(fit.coef, w_true, atol=1e-6)
    assert abs(fit.intercept - b_true) < 1e-6
    assert abs(fit.r2 - 1.0) < 1e-9 and abs(fit.prediction - f(z[:1])[0]) < 1e-9


def test_the_ridge_penalty_shrinks_and_random_samples_miss_an_interaction():
    def f(z):  # linear plus one interaction the surrogate cannot express
        return z @ np.array([1.0, -1.0, 2.0]) + 3.0 * z[:, 0] * z[:, 1]

    exact, _, _ = L.lime_presence(f, 3, samples=L.all_presence(3), alpha=0.0)
    ridge, _, _ = L.lime_presence(f, 3, samples=L.all_presence(3), alpha=10.0)
    assert exact.r2 < 1 - 1e-3  # the interaction is left over
    assert np.linalg.norm(ridge.coef) < np.linalg.norm(exact.coef)


# -- (b) the lime package as the oracle -----------------------------------------------------------------------
def test_the_samples_and_distances_are_lime_text_explainers():
    from lime.lime_text import IndexedString, LimeTextExplainer

    words = "alpha bravo charlie delta echo foxtrot golf"
    explainer = LimeTextExplainer(random_state=7)
    data, _, distances = explainer._LimeTextExplainer__data_labels_distances(
        IndexedString(words), lambda texts: np.zeros((len(texts), 2)), 300)
    z = L.sample_presence(7, 300, seed=7)
    np.testing.assert_array_equal(z, data)
    np.testing.assert_allclose(L.cosine_distances(z), distances, atol=1e-9)
    np.testing.assert_allclose(L.kernel(distances, 25.0), _package_kernel(distances, 25.0), atol=1e-12)


@pytest.mark.parametrize("output,alpha,width", [("prob", 1.0, 25.0), ("logit", 1.0, 10.0), ("logit", 0.3, 60.0)])
def test_the_fit_is_lime_bases_on_the_same_samples(model, tok, output, alpha, width):
    from lime.lime_base import LimeBase
    from sklearn.linear_model import Ridge

    s = L.lime(model, tok, TEXT, n_samples=200, kernel_width=width, alpha=alpha, seed=3, output=output)
    d = s.detail
    base = LimeBase(partial(_package_kernel, kernel_width=width), random_state=0)
    intercept, pairs, score, local = base.explain_instance_with_data(
        d.samples, d.outputs[:, None], d.distances, 0, d.samples.shape[1], feature_selection="none",
        model_regressor=Ridge(alpha=alpha, fit_intercept=True))
    coef = np.array([w for _, w in sorted(pairs)])
    scale = np.abs(coef).max()
    np.testing.assert_allclose(d.coef, coef, atol=1e-6 * scale)
    assert abs(d.intercept - intercept) < 1e-6 * max(1.0, abs(intercept))
    assert abs(d.r2 - score) < 1e-6 and abs(d.prediction - float(local[0])) < 1e-6 * max(1.0, abs(local[0]))


def _logits_per_string(model, tok):
    """The package's classifier: one string at a time, tokenized from the string (no batching, no padding)."""
    def logits_of(texts):
        out = []
        with torch.no_grad():
            for t in texts:
                out.append(model(**tok([t], return_tensors="pt")).logits[0].double().numpy())
        return np.stack(out)

    return logits_of


SUBWORDS = ("an", "un", "##watch", "##able", ",", "over", "##long", "mess", "the", "film", "is", "best", ".", "!",
            "a", "plot", "that", "goes", "no", "##where", "and", "cast", "i", "like", "movie", "so", "'", "t",
            "don", "-")


@pytest.fixture(scope="module")
def subword_tok(tmp_path_factory):
    from xaikit.models.tiny import tiny_tokenizer

    return tiny_tokenizer(tmp_path_factory.mktemp("subtok"), words=SUBWORDS)


@pytest.mark.parametrize("text,words", [
    (TEXT, TEXT.split()),
    ("an unwatchable, overlong mess", ["an", "unwatchable", "overlong", "mess"]),  # subwords and punctuation
    ("the film is the best", ["the", "film", "is", "best"]),  # a repeated word is one feature
    ("The film is the best!", ["The", "film", "is", "the", "best"]),  # the package's words are case-sensitive
    ("i don't like the plot, the cast and the movie - the plot goes nowhere.",
     ["i", "don", "t", "like", "the", "plot", "cast", "and", "movie", "goes", "nowhere"]),
])
def test_lime_text_explainer_end_to_end_gives_the_same_scores(sharp64, subword_tok, text, words):
    """The package samples, deletes words from the string and calls the model per string; xaikit deletes the
    words' pieces and batches. With the package's defaults (bow, split on non-word characters, width 25) and
    every feature kept, both explain the same logits the same way."""
    from lime.lime_text import LimeTextExplainer

    model, tok = sharp64, subword_tok
    logits_of = _logits_per_string(model, tok)
    target = int(logits_of([text])[0].argmax())
    explainer = LimeTextExplainer(random_state=11, feature_selection="none")
    exp = explainer.explain_instance(text, logits_of, labels=(target,), num_features=len(words), num_samples=150)
    assert exp.domain_mapper.indexed_string.inverse_vocab == words
    theirs = np.array([w for _, w in sorted(exp.local_exp[target])])
    ours = L.lime(model, tok, text, target=target, n_samples=150, seed=11, output="logit")
    d = ours.detail
    assert d.words == words and d.grouping == "offsets"
    scale = np.abs(theirs).max()
    assert scale > 0.05  # the sharpened model's logits move when words go
    np.testing.assert_allclose(d.coef, theirs, atol=1e-6 * scale)
    assert abs(d.intercept - exp.intercept[target]) < 1e-6 and abs(d.r2 - exp.score) < 1e-6
    for j in range(len(words)):  # every piece of a word carries its coefficient; the rest score 0
        np.testing.assert_array_equal(ours.scores[d.groups[j]], d.coef[j])
    kept = ~d.groups.any(axis=0)
    assert (ours.scores[kept] == 0).all() and kept[0] and kept[-1]
    np.testing.assert_array_equal(L.word_scores(ours).scores, d.coef)


def test_subwords_go_with_their_word_and_punctuation_stays(sharp64, subword_tok):
    model, tok = sharp64, subword_tok
    text = "an unwatchable, overlong mess"
    s = L.lime(model, tok, text, n_samples=60, seed=2, output="logit")
    d = s.detail
    assert s.tokens == ["[CLS]", "an", "un", "##watch", "##able", ",", "over", "##long", "mess", "[SEP]"]
    assert d.groups.astype(int).tolist() == [[0, 1, 0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 1, 1, 1, 0, 0, 0, 0, 0],
                                             [0, 0, 0, 0, 0, 0, 1, 1, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0, 1, 0]]
    logits_of = _logits_per_string(model, tok)
    for z, y in zip(d.samples[:10], d.outputs[:10], strict=True):  # the model on the text with those words gone
        gone = [w for w, keep in zip(d.words, z, strict=True) if not keep]
        string = " ".join(w for w in text.replace(",", " ,").split() if w not in gone)
        assert abs(logits_of([string])[0, s.target] - y) < 1e-9
    each = L.lime(model, tok, "the film is the best", n_samples=60, seed=2, bow=False)
    assert each.detail.words == ["the", "film", "is", "the", "best"] and not each.detail.bow


def test_without_offsets_the_pieces_are_grouped_by_wordpiece_marks_with_a_warning(sharp64, subword_tok, monkeypatch):
    """A slow tokenizer gives no character offsets; the fallback groups '##' pieces with the word before."""
    text = "an unwatchable, overlong mess"
    fast = L.lime(sharp64, subword_tok, text, n_samples=60, seed=2)
    monkeypatch.setattr(type(subword_tok), "is_fast", False)  # what a slow tokenizer says
    with pytest.warns(UserWarning, match="offsets"):
        slow = L.lime(sharp64, subword_tok, text, n_samples=60, seed=2)
    assert slow.detail.grouping == "wordpiece" and slow.detail.words == fast.detail.words
    np.testing.assert_array_equal(slow.detail.groups, fast.detail.groups)
    np.testing.assert_allclose(slow.scores, fast.scores, atol=1e-12)


def test_the_outputs_are_the_model_on_the_text_with_those_tokens_deleted(sharp, tok):
    model = sharp
    s = L.lime(model, tok, TEXT, n_samples=40, seed=1, output="logit", batch_size=3)  # several padded batches
    d = s.detail
    words = np.array(TEXT.split())
    for z, y in zip(d.samples[:12], d.outputs[:12], strict=True):
        with torch.no_grad():
            logit = model(**tok([" ".join(words[z > 0])], return_tensors="pt")).logits[0, s.target]
        assert abs(float(logit) - y) < 1e-5
    assert d.n_evaluated == len(np.unique(d.samples, axis=0)) <= 32
    assert s.scores[0] == 0 and s.scores[-1] == 0 and d.words == TEXT.split()
    np.testing.assert_array_equal(d.groups, np.eye(7, dtype=bool)[1:6])


# -- (c) over seeds -------------------------------------------------------------------------------------------
def test_a_seed_gives_the_same_scores_and_other_seeds_other_scores(sharp, tok):
    model = sharp
    runs = [L.lime(model, tok, TEXT, n_samples=30, seed=s, output="logit") for s in range(5)]
    again = L.lime(model, tok, TEXT, n_samples=30, seed=0, output="logit")
    np.testing.assert_array_equal(again.scores, runs[0].scores)
    spread = L.seed_spread(runs)
    assert spread.scores.shape == (5, 5) and spread.tokens == TEXT.split()
    assert spread.token_std.min() > 0 and spread.relative_spread > 0


def test_shap_varies_less_than_lime_over_runs(sharp, tok):
    model = sharp
    from xaikit.text.shaptext import token_scores

    lime_spread = L.seed_spread([L.lime(model, tok, TEXT, n_samples=30, seed=s, output="logit") for s in range(4)])
    shap_spread = L.seed_spread([token_scores(model, tok, TEXT, max_evals=64) for _ in range(3)])
    assert shap_spread.relative_spread == 0.0 and shap_spread.mean_spearman == 1.0  # deterministic
    assert lime_spread.relative_spread > shap_spread.relative_spread


# -- the registry, and bad input ------------------------------------------------------------------------------
def test_lime_is_a_registered_text_method(model, tok):
    from xaikit.text import registry
    from xaikit.text.views import explain

    assert "LIME" in registry.method_names()
    a = explain(model, tok, TEXT, "LIME", cost=40, seed=2)
    b = L.lime(model, tok, TEXT, n_samples=40, seed=2)
    np.testing.assert_array_equal(a.scores, b.scores)
    assert a.method == "LIME" and a.signed


@pytest.mark.parametrize("kwargs,error,words", [
    ({"n_samples": 1}, ValueError, "n_samples"),
    ({"n_samples": 2.5}, TypeError, "n_samples"),
    ({"kernel_width": 0.0}, ValueError, "kernel_width"),
    ({"kernel_width": -3}, ValueError, "kernel_width"),
    ({"kernel_width": float("nan")}, ValueError, "kernel_width"),
    ({"seed": -1}, ValueError, "seed"),
    ({"seed": 2 ** 32}, ValueError, "seed"),
    ({"seed": "0"}, TypeError, "seed"),
    ({"alpha": -0.1}, ValueError, "alpha"),
    ({"output": "proba"}, ValueError, "output"),
    ({"batch_size": 0}, ValueError, "batch_size"),
    ({"bow": "yes"}, TypeError, "bow"),
    ({"target": 5}, ValueError, "target"),
])
def test_bad_options_are_named(model, tok, kwargs, error, words):
    with pytest.raises(error, match=words):
        L.lime(model, tok, TEXT, **kwargs)


def test_bad_surrogate_input_is_named():
    with pytest.raises(ValueError, match="agree in S"):
        L.fit_surrogate(np.ones((4, 2)), np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="weights"):
        L.fit_surrogate(np.ones((4, 2)), np.ones(4), -np.ones(4))
    with pytest.raises(ValueError, match="n_features"):
        L.sample_presence(0, 10)


def test_the_samples_go_through_the_model_in_batches_without_tokenizing_them(model, tok, monkeypatch):
    from xaikit._text_input import prepare_text

    prepared = prepare_text(model, tok, TEXT)
    calls = {"forward": 0, "tokenizer": 0}
    original = type(tok).__call__
    monkeypatch.setattr(type(tok), "__call__", lambda self, *a, **k: calls.__setitem__(
        "tokenizer", calls["tokenizer"] + 1) or original(self, *a, **k))
    handle = model.register_forward_pre_hook(lambda m, a: calls.__setitem__("forward", calls["forward"] + 1))
    try:
        s = L._lime(prepared, n_samples=300, seed=0, batch_size=8)
    finally:
        handle.remove()
    assert calls == {"forward": -(-s.detail.n_evaluated // 8), "tokenizer": 1}  # once: the words' offsets


def test_refit_is_lime_with_that_width_without_a_forward_pass(model, tok):
    first = L.lime(model, tok, TEXT, n_samples=60, seed=4, kernel_width=25.0)
    direct = L.lime(model, tok, TEXT, n_samples=60, seed=4, kernel_width=8.0, alpha=0.5)
    handle = model.register_forward_pre_hook(lambda m, a: pytest.fail("refit ran the model"))
    try:
        again = L.refit(first, kernel_width=8.0, alpha=0.5)
    finally:
        handle.remove()
    np.testing.assert_allclose(again.scores, direct.scores, atol=1e-12)
    assert again.detail.r2 == pytest.approx(direct.detail.r2, abs=1e-12)
    with pytest.raises(TypeError, match="LIME result"):
        L.refit(L.TokenScores(["a"], [1.0]))
    with pytest.raises(ValueError, match="kernel_width"):
        L.refit(first, kernel_width=0)


# -- the panel ------------------------------------------------------------------------------------------------
def test_the_lime_panel_follows_its_controls(sharp, tok):
    from xaikit.widgets import LimePanel

    panel = LimePanel(sharp, tok, text=TEXT, n_samples=100, kernel_width=25.0, seed=0, output="logit")
    assert panel.error is None and panel.n_computed == 1
    for name in ("xk-samples", "xk-kernel-width", "xk-seed", "xk-text"):
        assert any(name in c._dom_classes for c in panel.controls.values())
    r = panel.result
    assert r.scores.tokens == TEXT.split()  # [CLS]/[SEP] hidden
    np.testing.assert_allclose(r.scores.scores, L.lime(sharp, tok, TEXT, n_samples=100, seed=0,
                                                       output="logit").scores[1:-1], atol=1e-12)
    assert f"{r.scores.detail.r2:.2f}" in panel.figure.axes[1].get_title()

    r2 = panel.set(kernel_width=5.0)  # a refit: no forward pass
    assert panel.n_computed == 1 and not r2.computed and r2.scores.detail.kernel_width == 5.0
    np.testing.assert_allclose(r2.scores.scores, L.lime(sharp, tok, TEXT, n_samples=100, seed=0, kernel_width=5.0,
                                                        output="logit").scores[1:-1], atol=1e-12)
    r3 = panel.set(seed=1)
    assert panel.n_computed == 2 and r3.computed and not np.allclose(r3.scores.scores, r2.scores.scores)
    r4 = panel.set(samples=40)
    assert len(r4.scores.detail.samples) == 40 and panel.n_computed == 3
    np.testing.assert_allclose(r4.surrogate, r4.scores.detail.intercept
                               + r4.scores.detail.samples @ r4.scores.scores, atol=1e-12)
    panel.set(seed=0, samples=100, kernel_width=25.0)  # back: from the cache
    assert panel.n_computed == 3
    np.testing.assert_allclose(panel.result.scores.scores, r.scores.scores, atol=1e-12)

    panel.set(text="   ")  # bad input shows in the panel and the panel keeps working
    assert isinstance(panel.error, ValueError) and "xk-error" in panel.status.value
    panel.set(text="she hates the book")
    assert panel.error is None and "hates" in panel.result.scores.tokens
    panel.set(seed=3.5)  # a float for an int slider: nothing changes, the error is named
    assert isinstance(panel.error, TypeError) and "seed" in str(panel.error)


def test_the_lime_panel_refuses_bad_settings(model, tok):
    from xaikit.widgets import LimePanel

    with pytest.raises(ValueError, match="output"):
        LimePanel(model, tok, output="proba")
    with pytest.raises(ValueError, match="seed"):
        LimePanel(model, tok, seed=-2)
    panel = LimePanel(model, tok, text=TEXT, n_samples=5000)  # clamped to the slider, with a note
    assert panel.values["samples"] == 2000 and "samples" in panel.status.value


def test_the_shapley_kernel_turns_the_same_regression_into_shapley_values():
    """Lundberg & Lee 2017 (Kernel SHAP): the oracle is the Shapley value by its definition."""
    from itertools import combinations
    from math import factorial

    d = 4

    def f(z):  # not linear: an interaction and a product
        z = np.atleast_2d(z)
        return 0.5 * z[:, 0] - z[:, 1] + 2.0 * z[:, 0] * z[:, 2] + z[:, 1] * z[:, 2] * z[:, 3]

    def value(subset):
        z = np.zeros(d)
        z[list(subset)] = 1
        return f(z)[0]

    shapley = np.zeros(d)
    for i in range(d):
        others = [j for j in range(d) if j != i]
        for k in range(d):
            for s in combinations(others, k):
                weight = factorial(k) * factorial(d - k - 1) / factorial(d)
                shapley[i] += weight * (value((*s, i)) - value(s))
    z = L.all_presence(d)
    fit = L.fit_surrogate(z, f(z), L.shapley_kernel(z, endpoint_weight=1e8), alpha=0.0)
    np.testing.assert_allclose(fit.coef, shapley, atol=1e-5)
    lime_fit = L.fit_surrogate(z, f(z), L.kernel(L.cosine_distances(z), 25.0), alpha=0.0)
    assert np.abs(lime_fit.coef - shapley).max() > 0.1  # LIME's weighting gives other numbers


def test_a_huge_sample_count_is_refused_before_any_work():
    from xaikit.text import lime as lime_module

    with pytest.raises(ValueError, match=r"n_samples must be an int <= 500000.*forward pass"):
        lime_module._check_options(10**9, 25.0, 1.0, 0, "logit", 32)
    with pytest.raises(ValueError, match="n_samples"):
        lime_module.sample_presence(4, 10**9)


def test_lime_refuses_a_long_text_as_shap_does(tmp_path):
    from xaikit.text.lime import lime

    model = tiny_bert(seed=2, max_position_embeddings=512).eval()
    tok = tiny_tokenizer(tmp_path)
    tok.model_max_length = 512
    text = "i like the movie " * 60  # 240 words
    with pytest.raises(ValueError, match=r"text has \d+ tokens; LIME would run n_samples=20 forward passes.*"
                                         r"allow_long=True"):
        lime(model, tok, text, n_samples=20)
    assert len(lime(model, tok, text, n_samples=4, allow_long=True).tokens) > 200
    from xaikit.widgets import MethodComparisonPanel

    panel = MethodComparisonPanel(model, tok, text=text, a="Grad-SAM", b="LIME")
    assert panel.error is not None and "allow_long" in str(panel.error)
