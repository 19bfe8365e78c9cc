"""Notebooks 04's and 06's methods: Grad-SAM, SHAP for text, attention views, attention editing and the lab.

Oracles: the plain triple loop (Grad-SAM), SHAP additivity and a direct ``shap.Explainer`` call, the
identity (rollout), the model's own attention mask (erasure = masking the key), the unedited model; for Jain &
Wallace's rank agreement, scipy's Kendall tau-b, a loop of single deletions and a finite difference.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import xaikit
from xaikit.models.hooks import forward_hooks
from xaikit.models.tiny import tiny_bert, tiny_tokenizer

SENTENCES = ["i like the movie", "she hates the book", "this is so boring", "i cannot wait for next time"]


# -- Grad-SAM ------------------------------------------------------------------------------------------------
def test_gradsam_vectorised_equals_loop(model, tok):
    from xaikit.text.gradsam import gradsam

    for text in SENTENCES[:2]:
        fast = gradsam(model, tok, text)
        slow = gradsam(model, tok, text, reference=True)
        assert fast.tokens == slow.tokens and fast.tokens[0] == "[CLS]"
        np.testing.assert_allclose(fast.scores, slow.scores, atol=1e-6, rtol=0)
        assert fast.scores.max() > 0 and (fast.scores >= 0).all()
        np.testing.assert_allclose(fast.detail.per_layer.sum(0), fast.scores, atol=1e-7)


def test_gradsam_formula_on_random_tensors():
    from xaikit.course.checks import check_gradsam
    from xaikit.text.gradsam import gradsam_loop, gradsam_scores

    gen = torch.Generator().manual_seed(1)
    a = torch.softmax(torch.randn(3, 2, 6, 6, generator=gen), -1)
    g = torch.randn(3, 2, 6, 6, generator=gen)
    torch.testing.assert_close(gradsam_scores(a, g), gradsam_loop(a, g), atol=1e-6, rtol=0)
    # by hand for token 0: the row of token 0 (the query), all heads and layers
    manual = sum(float((a[lay, h, 0] * g[lay, h, 0].clamp_min(0)).sum()) for lay in range(3) for h in range(2)) / 36
    assert abs(float(gradsam_scores(a, g)[0]) - manual) < 1e-6
    assert check_gradsam(gradsam_loop)
    assert not check_gradsam(lambda a, g: (a * g).sum(dim=(0, 1, 3)) / (a.shape[0] * a.shape[1] * a.shape[2]))


def test_attention_gradients_nonzero_in_every_layer(model, tok):
    from xaikit.text.gradsam import gradsam

    r = gradsam(model, tok, "i cannot wait for next time", target=1)
    grads = r.detail.gradients
    assert grads.shape[:2] == (2, 4)
    for layer in range(grads.shape[0]):
        assert np.abs(grads[layer]).max() > 0, f"layer {layer} has no attention gradient"


@pytest.mark.prepared
def test_gradsam_loop_on_embedded_model():
    import os

    import xaikit.models as m
    from xaikit.models.sentiment import sentiment_folder
    from xaikit.text.encoding import encode_one
    from xaikit.text.gradsam import attention_and_gradients, gradsam_loop, gradsam_scores

    if not (sentiment_folder() / "model.safetensors").is_file():
        message = "the embedded sentiment model is not built; run `python -m xaikit prepare`"
        if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:
            pytest.fail(message)
        pytest.skip(message)
    model, tokenizer = m.load_sentiment()
    enc = encode_one(model, tokenizer, "You look extremely confused")
    a, g, _ = attention_and_gradients(model, enc.inputs, target=enc.target)
    assert all(float(g[layer].abs().max()) > 0 for layer in range(a.shape[0]))
    torch.testing.assert_close(gradsam_scores(a, g), gradsam_loop(a, g), atol=1e-6, rtol=0)


# -- SHAP ----------------------------------------------------------------------------------------------------
def test_shap_additivity_and_direct_oracle(model, tok):
    import shap

    from xaikit.text.shaptext import additivity_gaps, prediction_function, shap_text, to_token_scores

    texts = SENTENCES[:2]
    e = shap_text(model, tok, texts, target=1, max_evals=200)
    f = prediction_function(model, tok, 1)
    assert additivity_gaps(e, f, texts).max() < 1e-6
    # SHAP's efficiency without xaikit's f: the model itself on each text and on SHAP's own masker's fully
    # masked text gives f(x) and the base value, and base + sum(phi) = f(x)
    masker = shap.maskers.Text(tok)
    for i, text in enumerate(texts):
        (masked,) = masker(np.zeros(len(e.values[i]), dtype=bool), text)
        with torch.no_grad():
            base, fx = (float(model(**tok(t, return_tensors="pt")).logits[0, 1]) for t in (str(masked[0]), text))
        assert abs(float(e.base_values[i]) - base) < 1e-6
        assert abs(base + float(np.sum(e.values[i])) - fx) < 1e-6 < abs(fx - base) / 50  # not vacuous
    direct = shap.Explainer(f, shap.maskers.Text(tok))(texts, max_evals=200, fixed_context=1, silent=True)
    for ours, theirs in zip(e.values, direct.values, strict=False):
        np.testing.assert_allclose(ours, theirs, atol=1e-9)
    ts = to_token_scores(e, 0, tok.convert_ids_to_tokens(tok(texts[0])["input_ids"]))
    assert ts.tokens[0] == "[CLS]" and ts.tokens[-1] == "[SEP]" and len(ts) == 6


def test_shap_credit_split_reads_back_the_values(model, tok):
    """A SHAP value = the token's own effect + its shares of the groups above it. [CLS] and [SEP] are never
    hidden, so their own effect is 0; with fixed_context=1 they still get shares, with None they get 0."""
    from xaikit.text.shaptext import credit_split, shap_text

    e = shap_text(model, tok, SENTENCES, target=1, max_evals=300)
    averaged = shap_text(model, tok, SENTENCES, target=1, max_evals=300, fixed_context=None)
    for i in range(len(SENTENCES)):
        own, spread = credit_split(e, i)
        np.testing.assert_allclose(own + spread, e.values[i], atol=1e-12)
        assert abs(own[0]) < 1e-6 and abs(own[-1]) < 1e-6
        assert abs(averaged.values[i][0]) < 1e-6 and abs(averaged.values[i][-1]) < 1e-6


def test_shap_hands_an_interaction_to_every_token_of_its_group(tok):
    """A known answer: f = 1 when "like" and "movie" are both shown. SHAP's tree splits "i like the movie" at
    the root between ([CLS] i like the) and (movie [SEP]); with fixed_context=1 each half gets f(all) - f(all but
    it) = 1, and the interaction 1 - 0 - 0 + 0 = 1 is taken back from the root and handed to its 6 tokens:
    -1/6 each, [CLS] and [SEP] included."""
    import shap

    from xaikit.text.shaptext import credit_split

    def f(strings):
        return np.array([float("like" in s and "movie" in s) for s in strings])

    e = shap.Explainer(f, shap.maskers.Text(tok))(["i like the movie"], max_evals=100, fixed_context=1, silent=True)
    own, spread = credit_split(e, 0)
    np.testing.assert_allclose(spread, np.full(6, -1 / 6), atol=1e-12)
    np.testing.assert_allclose(own, [0, 0, 1, 0, 1, 0], atol=1e-12)  # like and movie, each "removed from all"
    np.testing.assert_allclose(e.values[0], own + spread, atol=1e-12)


def test_shap_max_length_recipe_gives_same_values(model, tok):
    from xaikit.text.shaptext import prediction_function, shap_text

    a = shap_text(model, tok, SENTENCES[2:3], target=0, max_evals=100)
    b = shap_text(model, tok, SENTENCES[2:3], target=0, max_evals=100, padding="max_length")
    np.testing.assert_allclose(a.values[0], b.values[0], atol=1e-5)
    f = prediction_function(model, tok, 0, output="log_odds")
    p = torch.softmax(model(**tok(SENTENCES[2:3], return_tensors="pt")).logits.double(), -1)[0, 0].item()
    assert abs(f(SENTENCES[2:3])[0] - np.log(p / (1 - p))) < 1e-6


# -- views ---------------------------------------------------------------------------------------------------
def test_rollout_of_identity_is_identity():
    from xaikit.attention.relevance import grad_attention_matrix, rollout_matrix

    eye = torch.eye(5).expand(3, 2, 5, 5)
    torch.testing.assert_close(rollout_matrix(eye), torch.eye(5))
    torch.testing.assert_close(rollout_matrix(eye, residual=False), torch.eye(5))
    torch.testing.assert_close(grad_attention_matrix(eye, torch.zeros_like(eye)), torch.eye(5))
    uniform = torch.full((1, 1, 4, 4), 0.25)  # one layer: 0.5 * uniform + 0.5 * I
    expected = 0.5 * torch.full((4, 4), 0.25) + 0.5 * torch.eye(4)
    torch.testing.assert_close(rollout_matrix(uniform), expected)


def test_all_views_agree_with_single_calls(model, tok):
    from xaikit.text.tokens import rank_correlation
    from xaikit.text.views import all_views, explain

    methods = ("Grad-SAM", "attention", "rollout", "grad-weighted attention", "gradient", "gradient x attention")
    views = all_views(model, tok, SENTENCES[0], methods=methods)
    for name in methods:
        np.testing.assert_allclose(explain(model, tok, SENTENCES[0], name).scores, views[name].scores, atol=1e-7)
    np.testing.assert_allclose(views["rollout"].scores.sum(), 1.0, atol=1e-6)  # a row of a stochastic matrix
    rho = rank_correlation(views["Grad-SAM"], views["Grad-SAM"])["spearman"]
    assert rho == pytest.approx(1.0)


# -- editing -------------------------------------------------------------------------------------------------
def test_editing_nothing_changes_nothing_and_restores(model, tok):
    from xaikit.lab.editing import edited_attention, run_edited

    enc = tok(SENTENCES, return_tensors="pt", padding=True)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        plain = model(**enc).logits
        attentions = model(**enc, output_attentions=True).attentions
    torch.testing.assert_close(run_edited(model, enc), plain, atol=1e-6, rtol=0)
    with torch.no_grad(), edited_attention(model, record=True) as edit:
        model(**enc)
    for ours, theirs in zip(edit.attentions, attentions, strict=False):
        torch.testing.assert_close(ours, theirs, atol=1e-6, rtol=0)
    with pytest.raises(RuntimeError, match="boom"), edited_attention(model, remove=[1], n_tokens=8):
        raise RuntimeError("boom")
    assert model.config._attn_implementation == "eager"
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), f"editing changed {k}"  # exact: the weights must not be written


def test_removing_a_token_equals_masking_it(model, tok):
    from xaikit.lab.editing import run_edited

    enc = tok(SENTENCES[3:4], return_tensors="pt")
    n = enc["input_ids"].shape[1]
    mask = torch.zeros(n, dtype=torch.bool)
    mask[2] = True
    edited = run_edited(model, enc, remove=mask)
    masked = dict(enc)
    masked["attention_mask"] = enc["attention_mask"].clone()
    masked["attention_mask"][0, 2] = 0
    with torch.no_grad():
        oracle = model(**masked).logits
        plain = model(**enc).logits
    torch.testing.assert_close(edited, oracle, atol=1e-6, rtol=0)
    assert (edited - plain).abs().max() > 1e-7  # the removal did something


def test_permutation_keeps_the_weights_of_each_row(model, tok):
    from xaikit.lab.editing import edited_attention

    enc = tok(SENTENCES[3:4], return_tensors="pt")
    with torch.no_grad():
        plain = model(**enc, output_attentions=True).attentions
        with edited_attention(model, permute=True, layers=[-1], heads=[1], record=True, seed=2) as edit:
            model(**enc)
    last, orig = edit.attentions[-1][0], plain[-1][0]  # (M, N, N)
    torch.testing.assert_close(last[0], orig[0])  # head 0 untouched
    assert not torch.allclose(last[1], orig[1])
    torch.testing.assert_close(last[1].sort(-1).values, orig[1].sort(-1).values)


def test_permutation_of_the_cls_row_alone(model, tok):
    from xaikit.lab.editing import edited_attention

    enc = tok(SENTENCES[3:4], return_tensors="pt")
    with torch.no_grad():
        plain = model(**enc, output_attentions=True).attentions
        with edited_attention(model, permute=True, layers=[0], record=True, seed=2) as every:
            model(**enc)
        with edited_attention(model, permute=True, layers=[0], record=True, seed=2, queries=(0,)) as cls:
            model(**enc)
    first, every_row, orig = cls.attentions[0][0], every.attentions[0][0], plain[0][0]  # (M, N, N)
    torch.testing.assert_close(first[:, 1:], orig[:, 1:])  # every other query row untouched
    torch.testing.assert_close(first[:, 0], every_row[:, 0])  # the same shuffle as with every row
    assert not torch.allclose(first[:, 0], orig[:, 0])


# -- the lab -------------------------------------------------------------------------------------------------
def test_js_divergence_known_values():
    from xaikit.lab.removal import js_divergence

    assert js_divergence([0.5, 0.5], [0.5, 0.5]) == pytest.approx(0.0)
    assert js_divergence([1.0, 0.0], [0.0, 1.0]) == pytest.approx(1.0)
    assert 0 < js_divergence([0.9, 0.1], [0.6, 0.4]) < 1


def test_batched_lab_row_equals_the_single_experiments(model, tok):
    from xaikit.lab.faithfulness import _one_sentence
    from xaikit.lab.removal import aopc, erasure, flip_fraction
    from xaikit.text.encoding import encode_one
    from xaikit.text.views import all_views

    text = SENTENCES[3]
    enc = encode_one(model, tok, text)
    views = all_views(model, tok, text, methods=("attention", "Grad-SAM", "gradient"))
    row = _one_sentence(model, enc, tok, views, ("Grad-SAM", "gradient"), np.random.default_rng(5))
    single = erasure(model, enc, tok, views["attention"], np.random.default_rng(5))
    for key in ("top", "random", "flip_top", "flip_random"):
        assert row["erasure"][key] == single[key]  # exact: positions and flip decisions
    assert row["erasure"]["js_top"] == pytest.approx(single["js_top"], abs=1e-9)
    for name in ("Grad-SAM", "gradient"):  # exact: (words removed at the first flip) / n_words, and a bool
        assert row["erased"][name] == flip_fraction(model, enc, tok, views[name], how="erase")
        assert row["deleted"][name] == flip_fraction(model, enc, tok, views[name], how="delete")
        comp, suff = aopc(model, enc, tok, views[name])
        assert row["aopc"][name] == pytest.approx((comp, suff), abs=1e-7)


def test_erasure_edits_one_layer_only(model, tok):
    """Serrano & Smith's erasure: the word's weight is zeroed (rows renormalised) in the ranking's layer alone;
    the other layers' attention is what the unedited model computes."""
    from xaikit.lab.editing import edited_attention
    from xaikit.lab.removal import _probs_erased
    from xaikit.text.encoding import encode_one

    enc = encode_one(model, tok, SENTENCES[3])
    mask = torch.zeros(1, enc.n_tokens, dtype=torch.bool)
    mask[0, 2] = True
    with torch.no_grad():
        plain = model(**enc.inputs, output_attentions=True).attentions
        with edited_attention(model, remove=mask, layers=(-1,), record=True) as edit:
            logits = model(**enc.inputs).logits
    for layer in range(len(plain) - 1):
        torch.testing.assert_close(edit.attentions[layer], plain[layer], atol=1e-6, rtol=0)
    last = edit.attentions[-1][0]  # (M, N, N)
    # exact: the erased word's weight is zeroed before the rows are renormalised
    assert last[:, :, 2].abs().max() == 0 and torch.allclose(last.sum(-1), torch.ones(last.shape[:2]))
    expected = torch.softmax(logits.double(), -1).numpy()
    np.testing.assert_allclose(_probs_erased(model, enc, mask, layer=len(plain) - 1), expected, atol=1e-9)


def test_deletion_equals_the_shorter_text(model, tok):
    """Deleting words = running the model on the text without them (the oracle: tokenize the shorter text)."""
    from xaikit.lab.removal import _probs_deleted
    from xaikit.text.encoding import encode_one

    enc = encode_one(model, tok, "i cannot wait for next time")  # [CLS] i cannot wait for next time [SEP]
    masks = torch.zeros(3, enc.n_tokens, dtype=torch.bool)
    masks[0, 2] = True  # cannot
    masks[1, [1, 5]] = True  # i, next
    masks[2, 1:7] = True  # every word
    got = _probs_deleted(model, enc, masks, tok.pad_token_id, batch_size=2)  # rows of three lengths
    for probs, text in zip(got, ["i wait for next time", "cannot wait for time", ""], strict=True):
        with torch.no_grad():
            oracle = torch.softmax(model(**tok(text, return_tensors="pt")).logits.double(), -1)[0].numpy()
        np.testing.assert_allclose(probs, oracle, atol=1e-6)


def test_aopc_uses_erasers_bins():
    from xaikit.lab.removal import ERASER_BINS, _bin_sizes

    assert ERASER_BINS == (0.01, 0.05, 0.1, 0.2, 0.5)  # DeYoung et al. 2020
    assert _bin_sizes(ERASER_BINS, 6) == [1, 1, 1, 2, 3]  # at least one word, ceil(k * n) as ERASER's scorer
    assert _bin_sizes(ERASER_BINS, 120) == [2, 6, 12, 24, 60]


def test_lab_runs_and_is_consistent(model, tok):
    from xaikit.lab.faithfulness import run_lab

    rankings = ("attention", "gradient", "Grad-SAM", "random")
    r = run_lab(model, tok, SENTENCES, rankings=rankings, n_permutations=4, progress=False)
    assert len(r.sentences) == 4 and r.layer == 1 and r.bins == (0.01, 0.05, 0.1, 0.2, 0.5)
    assert r.flip_table.sum() == pytest.approx(100.0)
    for m in rankings:
        for fraction in (r.fraction[m], r.fraction_deleted[m]):
            assert ((fraction > 0) & (fraction <= 1)).all()
        # exact: a sentence that never flips is given the fraction 1.0
        assert (r.fraction[m][~r.flipped[m]] == 1).all() and (r.fraction_deleted[m][~r.flipped_deleted[m]] == 1).all()
        assert np.isfinite(r.comprehensiveness[m]).all() and np.isfinite(r.sufficiency[m]).all()
    assert (r.js_top >= 0).all() and (r.permutation_tvd >= 0).all()
    assert r.permutation_by_layer.shape == (4, 2)  # every sentence, each of the two layers shuffled in turn
    np.testing.assert_allclose(r.permutation_by_layer[:, -1], r.permutation_tvd)
    # the [CLS] row alone: in the last layer the only row that reaches the classifier, so the same numbers
    assert r.permutation_by_layer_cls.shape == (4, 2)
    np.testing.assert_allclose(r.permutation_by_layer_cls[:, -1], r.permutation_tvd, atol=1e-6)
    assert r.predicted.shape == (4,) and r.empty_probs.shape == (2,)
    assert r.empty_probs.sum() == pytest.approx(1.0)
    for m in rankings:  # a budget of every word is "flipped at all"; a smaller one flips no more sentences
        np.testing.assert_array_equal(r.flipped_within(m, 1.0), r.flipped_deleted[m])
        assert (r.flipped_within(m, 0.5) <= r.flipped_within(m, 1.0)).all()
        np.testing.assert_array_equal(r.flipped_within(m, 1.0, how="erased"), r.flipped[m])
    with pytest.raises(ValueError):
        r.flipped_within("nope", 0.5)
    assert set(r.summary()) == set(rankings)


# -- bad input -----------------------------------------------------------------------------------------------
def test_bad_input(model, tok):
    from xaikit.text.gradsam import gradsam
    from xaikit.text.shaptext import shap_text

    with pytest.raises(ValueError, match="text is empty"):
        gradsam(model, tok, "   ")
    with pytest.raises(TypeError, match="text must be a str"):
        gradsam(model, tok, 42)
    with pytest.raises(ValueError, match="target must be an int <= 1"):
        gradsam(model, tok, "i like the movie", target=2)
    with pytest.raises(TypeError, match="texts must be a str or a list"):
        shap_text(model, tok, 3)
    with pytest.warns(UserWarning, match="truncated"):
        r = gradsam(model, tok, " ".join(["movie"] * 100))
    assert len(r) == 64


def test_sdpa_model_is_switched_or_rejected(tok):
    from xaikit.text.encoding import check_model
    from xaikit.text.gradsam import gradsam

    model = tiny_bert(seed=1)
    model.set_attn_implementation("sdpa")
    with pytest.raises(ValueError, match="eager"):
        check_model(model, tok, "test", strict=True)
    with pytest.warns(UserWarning, match="eager"):
        r = gradsam(model, tok, "i like the movie")
    assert model.config._attn_implementation == "eager" and r.scores.max() > 0


# -- panels --------------------------------------------------------------------------------------------------
def test_method_comparison_panel(model, tok):
    from xaikit.widgets import MethodComparisonPanel

    panel = MethodComparisonPanel(model, tok, text="i like the movie", a="Grad-SAM", b="attention")
    assert panel.error is None and panel.result.a.method == "Grad-SAM"
    assert "[CLS]" not in panel.result.a.tokens  # hidden by default
    r = panel.set(b="rollout", drop_special=False)
    assert r.b.method == "rollout" and r.a.tokens[0] == "[CLS]"
    assert -1 <= r.correlation["spearman"] <= 1 and panel.n_computed == 3
    assert len(panel.figure.axes) == 2 and "Spearman" in panel.figure._suptitle.get_text()
    panel.set(text="   ")  # bad input shows in the panel and the panel keeps working
    assert isinstance(panel.error, ValueError) and "xk-error" in panel.status.value
    panel.set(text="she hates the book")
    assert panel.error is None and "hates" in panel.result.a.tokens


def test_lab_panel_views(model, tok):
    from xaikit.lab.faithfulness import run_lab
    from xaikit.widgets import LabPanel

    lab = run_lab(model, tok, SENTENCES[:3], rankings=("attention", "random"), n_permutations=2, progress=False)
    panel = LabPanel(lab=lab)
    for view in LabPanel.VIEWS:
        panel.set(view=view)
        assert panel.error is None and panel.result.view == view
        assert panel.figure.axes and "xk-lab-table" in panel.html.value
    with pytest.raises(ValueError, match="LabPanel needs"):
        LabPanel()


def _shap_ships_numba_helpers() -> bool:
    """Independent of xaikit's check: shap before 0.52 JIT-compiles its Partition helpers with numba; 0.52 and
    later ship them compiled ahead of time (nanobind) and do not depend on numba."""
    from importlib.metadata import version

    from packaging.version import Version

    return Version(version("shap")) < Version("0.52")


@pytest.mark.skipif(not _shap_ships_numba_helpers(), reason="shap 0.52+: no numba helpers to switch")
def test_use_numba_switches_and_restores_numba_helpers():
    import numba
    import shap.utils._masked_model as mm

    from xaikit.text.shaptext import helper_kinds, use_numba

    try:
        assert use_numba(True) >= 0  # SHAP as it ships: numba's dispatchers
        assert isinstance(mm._build_fixed_single_output, numba.core.registry.CPUDispatcher)
        assert set(helper_kinds().values()) == {"numba"}
        assert use_numba(False) >= 7  # every expected helper, and the modules' other dispatchers
        assert not hasattr(mm._build_fixed_single_output, "py_func")  # plain Python
        assert set(helper_kinds().values()) == {"python"}
        assert use_numba(True) >= 7
        assert isinstance(mm._build_fixed_single_output, numba.core.registry.CPUDispatcher)  # back
    finally:
        use_numba(False)  # xaikit's default again, for the tests after this one
    assert not hasattr(mm._build_fixed_single_output, "py_func")


@pytest.mark.skipif(_shap_ships_numba_helpers(), reason="shap < 0.52: its helpers are numba's")
def test_use_numba_leaves_compiled_helpers_alone():
    """shap 0.52+: the helpers are compiled ahead of time, so there is nothing to switch either way."""
    import shap.utils._masked_model as mm

    from xaikit.text.shaptext import helper_kinds, use_numba

    before = mm._build_fixed_single_output
    kinds = helper_kinds()
    assert "numba" not in kinds.values(), kinds  # (0.54 dropped _reverse_window: "missing", nothing to switch)
    assert {kinds[f"shap.utils._masked_model.{h}"] for h in ("_build_fixed_single_output", "_init_masks",
                                                           "_rec_fill_masks")} == {"compiled"}
    assert kinds["shap.explainers._partition.lower_credit"] == "compiled"
    assert use_numba(False) == 0 and use_numba(True) == 0
    assert mm._build_fixed_single_output is before and helper_kinds() == kinds
    use_numba(False)


def test_no_compile_warning_when_nothing_compiles(model, tok):
    """xaikit's default path compiles nothing of SHAP's (numba's helpers switched on shap < 0.52, compiled
    ones on 0.52+), so no NumbaCompileWarning, on either."""
    import warnings

    from xaikit.text.shaptext import NumbaCompileWarning, shap_text, use_numba

    use_numba(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaCompileWarning)
        e = shap_text(model, tok, SENTENCES[:1], target=1, max_evals=50, progress=False)
    assert len(e.values[0]) == 6


def test_a_real_numba_compile_of_a_shap_function_is_announced_once(monkeypatch):
    """The warning comes from numba's own compile event: a SHAP function that compiles is named, with the
    expected cost; one outside SHAP, or a second compile in the process, says nothing."""
    import warnings

    numba = pytest.importorskip("numba", reason="shap 0.52+ installs no numba: nothing can compile")
    from xaikit.text import shaptext

    def shap_like(a):
        return a + 1

    def elsewhere(a):
        return a * 2

    shap_like.__module__ = "shap.utils._masked_model"  # as if SHAP had defined it
    monkeypatch.setattr(shaptext, "_COMPILE_WARNED", [])
    with warnings.catch_warnings():
        warnings.simplefilter("error", shaptext.NumbaCompileWarning)
        with shaptext._warn_on_compile():
            assert numba.njit(elsewhere)(2) == 4
    lo, hi = shaptext.COMPILE_SECONDS
    with pytest.warns(shaptext.NumbaCompileWarning, match=rf"shap\.utils\._masked_model\.[\w.<>]*shap_like .*{lo}-{hi} s"):
        with shaptext._warn_on_compile():
            assert numba.njit(shap_like)(2) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", shaptext.NumbaCompileWarning)
        with shaptext._warn_on_compile():
            assert numba.njit(shap_like)(2.5) == 3.5  # a new compile, not announced again


# -- Jain & Wallace's rank agreement (section 4.1) -----------------------------------------------------------
def test_word_tau_is_scipys_tau_b_over_the_words_only():
    """Oracle: scipy.stats.kendalltau (tau-b) on the word entries alone, ties included; whatever the special
    positions hold does not count, and |score| is ranked."""
    from scipy.stats import kendalltau

    from xaikit.lab.agreement import word_tau

    words = [1, 2, 3, 4, 5, 6]  # [CLS] = 0, [SEP] = 7
    cases = [([0.1, 0.5, 0.5, 0.2, 0.9, 0.3], [0.2, 0.4, 0.4, 0.1, 0.8, 0.1]),  # ties in both
             ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [6.0, 5.0, 4.0, 3.0, 2.0, 1.0]),  # reversed: -1
             ([0.3, 0.3, 0.3, 0.1, 0.2, 0.7], [0.5, 0.1, 0.9, 0.9, 0.9, 0.2]),  # many ties
             ([0.4, -0.9, 0.1, -0.2, 0.6, 0.05], [0.3, 0.2, -0.8, 0.1, -0.5, 0.0])]  # signed: |score| ranks
    for x, y in cases:
        a, b = np.array([99.0, *x, -50.0]), np.array([-7.0, *y, 1e6])  # special positions hold junk
        expected = kendalltau(np.abs(x), np.abs(y), variant="b").statistic
        assert word_tau(a, b, words) == pytest.approx(expected, abs=1e-12)
    assert word_tau(np.arange(8.0), np.arange(8.0) ** 2, words) == pytest.approx(1.0)
    tied = kendalltau([1, 1, 2, 2], [1, 2, 3, 4]).statistic  # tau-b, not tau-a: 4 / sqrt(4 * 6)
    assert tied == pytest.approx(4 / np.sqrt(24)) and word_tau([0, 1, 1, 2, 2, 0], [0, 1, 2, 3, 4, 0],
                                                               [1, 2, 3, 4]) == pytest.approx(tied)
    assert np.isnan(word_tau([0, 2, 2, 2, 0], [0, 1, 2, 3, 0], [1, 2, 3]))  # all ties: no order, NaN like scipy


def test_leave_one_out_equals_a_loop_of_separate_passes(model, tok):
    """Oracle: for each word, its id removed from the input and the model run on that shorter input alone."""
    from xaikit.lab.agreement import leave_one_out
    from xaikit.text.encoding import encode_one

    for text in SENTENCES:
        enc = encode_one(model, tok, text)
        ids = enc.inputs["input_ids"][0].tolist()
        with torch.no_grad():
            p = torch.softmax(model(input_ids=torch.tensor([ids])).logits.double(), -1)[0, enc.target].item()
        expected = np.full(len(ids), np.nan)
        for i in range(1, len(ids) - 1):  # every word; [CLS] and [SEP] stay
            shorter = torch.tensor([ids[:i] + ids[i + 1:]])
            with torch.no_grad():
                q = torch.softmax(model(input_ids=shorter).logits.double(), -1)[0, enc.target].item()
            expected[i] = p - q
        got = leave_one_out(model, enc, tok, batch_size=3)  # several batches
        assert np.isnan(got[[0, -1]]).all()
        np.testing.assert_allclose(got[1:-1], expected[1:-1], atol=1e-6, rtol=0)


def test_input_gradient_is_the_derivative_along_the_word_embedding():
    """Oracle: e_t . dp/de_t is d/ds p(word embedding t scaled by 1 + s) at s = 0, by a central difference
    in float64 (the derivative along the one-hot input at the token's own word)."""
    from xaikit.lab.agreement import input_gradient
    from xaikit.models.tiny import tiny_bert
    from xaikit.text.encoding import encode_one

    model, tok = tiny_bert(seed=5).double(), tiny_tokenizer()
    enc = encode_one(model, tok, "i cannot wait for next time")
    got = input_gradient(model, enc)

    def prob(t, s):
        def scale(module, args, output):
            output = output.clone()
            output[0, t] *= 1 + s
            return output

        with forward_hooks((model.get_input_embeddings(), scale)), torch.no_grad():
            return torch.softmax(model(**enc.inputs).logits, -1)[0, enc.target].item()

    h = 1e-5
    expected = [(prob(t, h) - prob(t, -h)) / (2 * h) for t in range(enc.n_tokens)]
    np.testing.assert_allclose(got, expected, atol=1e-8, rtol=0)
    assert np.abs(got).max() > 1e-4  # not trivially zero


def test_rank_agreement_taus_and_the_labs(model, tok):
    """The taus are word_tau of the three rankings (attention view, |gradient|, |LOO|), and the lab keeps
    the same numbers."""
    from xaikit.lab import agreement as fa
    from xaikit.lab.faithfulness import run_lab
    from xaikit.text.encoding import encode_one
    from xaikit.text.views import all_views

    r = fa.rank_agreement(model, tok, SENTENCES)
    assert r.sentences == SENTENCES and r.layer == 1 and tuple(r.tau) == fa.TAU_PAIRS
    assert list(r.n_words) == [len(s.split()) for s in SENTENCES]
    for k, text in enumerate(SENTENCES):
        enc = encode_one(model, tok, text)
        words = fa.content_positions(enc, tok)
        att = all_views(model, tok, text, methods=("attention",))["attention"].scores
        grad, loo = fa.input_gradient(model, enc), fa.leave_one_out(model, enc, tok)
        assert r.tau["attention-gradient"][k] == pytest.approx(fa.word_tau(att, grad, words), abs=1e-12)
        assert r.tau["attention-LOO"][k] == pytest.approx(fa.word_tau(att, loo, words), abs=1e-12)
        assert r.tau["gradient-LOO"][k] == pytest.approx(fa.word_tau(grad, loo, words), abs=1e-12)
    for v in r.tau.values():
        assert isinstance(v, np.ndarray) and v.shape == (4,) and ((v >= -1) & (v <= 1)).all()
    lab = run_lab(model, tok, SENTENCES, rankings=("attention", "random"), n_permutations=2, progress=False)
    assert lab.agreement.sentences == SENTENCES and lab.agreement.seconds > 0
    for pair in fa.TAU_PAIRS:
        np.testing.assert_allclose(lab.agreement.tau[pair], r.tau[pair], atol=1e-12, rtol=0)
    assert r.medians() == {pair: pytest.approx(float(np.median(r.tau[pair]))) for pair in fa.TAU_PAIRS}


def test_lab_keeps_each_sentences_scores(model, tok):
    """LabResult.scores holds what the methods give each sentence alone: Chefer LRP, grad-weighted attention
    (an extra view), attention, leave-one-out and the input gradient, with the word positions (notebook 06,
    section 8 ranks them against each other without running them again)."""
    from xaikit.lab import agreement as fa
    from xaikit.lab.faithfulness import run_lab
    from xaikit.text.encoding import encode_one
    from xaikit.text.lrp import chefer_lrp
    from xaikit.text.views import all_views

    lab = run_lab(model, tok, SENTENCES[:3], rankings=("attention", "Chefer LRP", "random"), n_permutations=2,
                  progress=False)
    assert set(lab.scores) == {"attention", "Chefer LRP", "random", "grad-weighted attention", "input gradient",
                               "LOO"}
    assert all(len(v) == 3 for v in lab.scores.values()) and len(lab.positions) == 3
    for i, text in enumerate(lab.sentences):
        enc = encode_one(model, tok, text)
        assert lab.positions[i] == fa.content_positions(enc, tok)
        views = all_views(model, tok, text, target=enc.target, methods=("attention", "grad-weighted attention"))
        alone = {"Chefer LRP": chefer_lrp(model, tok, text, target=enc.target).scores,
                 "LOO": fa.leave_one_out(model, enc, tok), "input gradient": fa.input_gradient(model, enc),
                 **{k: v.scores for k, v in views.items()}}
        for k, expected in alone.items():
            np.testing.assert_allclose(lab.scores[k][i], expected, atol=1e-7, rtol=0, err_msg=k)
        order = sorted(lab.positions[i], key=lambda p: -lab.scores["random"][i][p])  # the random ranking's order
        assert sorted(order) == lab.positions[i]
    bare = run_lab(model, tok, SENTENCES[:2], rankings=("attention",), n_permutations=2, progress=False,
                      extra_views=())
    assert set(bare.scores) == {"attention", "input gradient", "LOO"}
    with pytest.raises(ValueError, match="extra_views"):
        run_lab(model, tok, SENTENCES[:2], rankings=("attention",), extra_views=("nope",), progress=False)


def test_rank_agreement_bad_input(model, tok):
    from xaikit.lab.agreement import rank_agreement, word_tau

    with pytest.raises(ValueError, match="sentences is an empty list"):
        rank_agreement(model, tok, [])
    with pytest.raises(TypeError, match="sentences must be a str or a list"):
        rank_agreement(model, tok, 3)
    with pytest.raises(ValueError, match=r"sentences\[1\] is empty"):
        rank_agreement(model, tok, ["i like the movie", "  "])
    with pytest.raises(ValueError, match="sentences: none had at least two word tokens"):
        rank_agreement(model, tok, ["movie", "book"])
    with pytest.raises(ValueError, match="layer must be an int >= -2"):
        rank_agreement(model, tok, SENTENCES, layer=-3)
    with pytest.raises(TypeError, match="model must be a transformers"):
        rank_agreement("bert", tok, SENTENCES)
    with pytest.raises(ValueError, match="a has 3 scores, b has 4"):
        word_tau([1, 2, 3], [1, 2, 3, 4], [0, 1])
    with pytest.raises(ValueError, match="positions must name at least 2 tokens"):
        word_tau([1, 2, 3], [1, 2, 3], [1])
    with pytest.raises(ValueError, match="positions must be distinct token indices in 0..2"):
        word_tau([1, 2, 3], [1, 2, 3], [1, 3])
    with pytest.raises(ValueError, match="positions must be distinct"):
        word_tau([1, 2, 3], [1, 2, 3], [1, 1])
    with pytest.raises(ValueError, match="a and b must be finite"):
        word_tau([1, np.nan, 3], [1, 2, 3], [0, 1, 2])


def test_method_comparison_allow_long_must_be_a_bool():
    from xaikit.widgets.text_methods import MethodComparisonPanel

    with pytest.raises(TypeError, match=r"allow_long must be True or False, got str 'False'"):
        MethodComparisonPanel(None, None, allow_long="False")


def test_a_special_token_typed_in_the_text_is_warned_about(model, tok):
    import warnings

    from xaikit._text_input import SpecialTokenWarning
    from xaikit.text.gradsam import gradsam
    from xaikit.text.lime import lime

    with pytest.warns(SpecialTokenWarning, match=r"text holds \[SEP\] typed as text: the tokenizer reads each as "
                                                 r"its special token"):
        scores = gradsam(model, tok, "good movie [SEP] bad ending")
    assert scores.tokens.count("[SEP]") == 2  # what the warning is about
    with pytest.warns(SpecialTokenWarning, match=r"\[CLS\] typed as text"):
        lime(model, tok, "[CLS] great film", n_samples=20, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SpecialTokenWarning)
        gradsam(model, tok, "good movie, bad ending")  # brackets of other words are no special token
        gradsam(model, tok, "a [good] movie")


def test_a_row_past_the_last_token_is_named(bert, tok):
    from xaikit.text.attention_views import grad_weighted_attention, raw_attention, rollout

    for method in (rollout, raw_attention, grad_weighted_attention):
        with pytest.raises(ValueError, match=r"row must be a token position 0\.\.5: 'i like the movie' has 6 "
                                             r"tokens \(\[CLS\] is 0\); got 99"):
            method(bert, tok, "i like the movie", row=99)  # was IndexError from torch
    with pytest.raises(TypeError, match="row must be an int"):
        rollout(bert, tok, "i like the movie", row=1.5)
    assert rollout(bert, tok, "i like the movie", row=-1).scores.shape == (6,)  # Python's -1: the last token


def test_run_lab_names_its_own_arguments(bert, tok):
    from xaikit.lab.faithfulness import run_lab

    lab = lambda **kw: run_lab(bert, tok, ["i like the movie"], progress=False, **kw)  # noqa: E731
    with pytest.raises(ValueError, match="shap_evals must be an int >= 2, got 0"):
        lab(rankings=("attention", "SHAP"), shap_evals=0)  # was "max_evals must be ..."
    with pytest.raises(ValueError, match=r"bins must hold at least one fraction.*e\.g\. bins=\(0\.1, 0\.2, 0\.5\)"):
        lab(bins=())  # was NaN AOPC scores
    with pytest.raises(TypeError, match="seed must be an int, got str 'x'"):
        lab(seed="x")  # was a TypeError from NumPy's SeedSequence
    with pytest.raises(ValueError, match="ig_steps must be an int >= 1, got 0"):
        lab(ig_steps=0)
    with pytest.raises(ValueError, match="n_permutations must be an int >= 1, got 0"):
        lab(n_permutations=0)


def test_embedding_ig_names_bad_ids_masks_and_zero_rows(bert):
    from xaikit.text.text_ig import embedding_integrated_gradients as eig

    ids = torch.tensor([[2, 40, 41, 42, 3]])
    with pytest.raises(ValueError, match=r"input_ids is empty"):
        eig(bert, torch.zeros(1, 0, dtype=torch.long), steps=4)
    with pytest.raises(ValueError, match=r"zero_rows holds position 99, outside the 5 tokens"):
        eig(bert, ids, zero_rows=[99], steps=4)
    with pytest.raises(ValueError, match=r"attention_mask must have the shape of input_ids"):
        eig(bert, ids, attention_mask=torch.ones(3), steps=4)
    with pytest.raises(ValueError, match=r"attention_mask must hold only 0"):
        eig(bert, ids, attention_mask=torch.full((5,), 0.5), steps=4)
    by_position = eig(bert, ids, zero_rows=[1, 2], steps=4)
    by_mask = eig(bert, ids, zero_rows=torch.tensor([False, True, True, False, False]), steps=4)
    assert torch.allclose(by_position.attributions, by_mask.attributions)


def test_text_methods_take_a_class_name_as_target(tok):
    """``gradsam(..., target='positive')`` was refused as not an int although the labels were listed."""
    bert = tiny_bert(seed=2).eval()
    bert.config.id2label, bert.config.label2id = {0: "NEGATIVE", 1: "POSITIVE"}, {"NEGATIVE": 0, "POSITIVE": 1}
    by_name = xaikit.gradsam(bert, tok, "i like the movie", target="positive")
    assert by_name.target == 1
    assert torch.allclose(torch.as_tensor(by_name.scores),
                          torch.as_tensor(xaikit.gradsam(bert, tok, "i like the movie", target=1).scores))
    with pytest.raises(ValueError, match=r"target 'neutral' is not a class name of this model.*1=POSITIVE"):
        xaikit.gradsam(bert, tok, "i like the movie", target="neutral")
