"""Bad input that would give a silently wrong result or a misleading error, where it cuts across the package:
a batch where one input belongs, NaN baselines and completeness gaps, reduced-precision models, long texts, a
tokenizer of another model, panel controls and constructors, seeds, percentages where fractions belong, and a
str where a list of names belongs. Each input gets a clear error naming the parameter and the fix, or the
right answer. Bad input that belongs to one module is tested in that module's test file.
"""

from __future__ import annotations

import copy
import time
import warnings

import numpy as np
import pytest
import torch
from torch import nn

import xaikit
from tests.fixtures.toy_vit import ToyViT, _colour_images
from xaikit.attention import positions as PE
from xaikit.models.tiny import tiny_bert, tiny_tokenizer
from xaikit.tensor import gradients as G
from xaikit.tensor.integrated import CompletenessWarning, alphas_and_weights, integrated_gradients
from xaikit.text.gradsam import gradsam


# -- 6: a batch dimension left on x ----------------------------------------------------------------------------
def test_batched_x_is_named_with_the_convention():
    square = lambda b: (b ** 2).sum(1)  # noqa: E731
    assert xaikit.gradient(square, torch.tensor([1.0, -2.0])).tolist() == [2.0, -4.0]  # exact: 2 x at small integers
    # was [[0, -4]]: the output (1, 2) of the extra dimension was read as two classes
    for method in (xaikit.gradient, xaikit.grad_times_input, xaikit.smoothgrad, xaikit.integrated_gradients):
        with pytest.raises(ValueError, match=r"batch dimension.*Pass x\[0\] \(shape \(2,\)\)"):
            method(square, torch.tensor([[1.0, -2.0]]))
    with pytest.raises(ValueError, match=r"xaikit's convention: x is ONE input"):
        xaikit.occlusion(square, torch.tensor([[1.0, -2.0]]))
    # a module whose output grows a dimension: the shape error says what the leading 1 may be
    with pytest.raises(ValueError, match=r"returned \(1, 1, 3\).*pass x\[0\] \(shape \(2,\)\)"):
        xaikit.gradient(torch.nn.Linear(2, 3).eval(), torch.ones(1, 2))


def test_a_leading_one_that_is_a_channel_still_works():
    w = torch.randn(16)
    flat = lambda b: b.flatten(1) @ w  # noqa: E731 - (B, 1, 4, 4) grey images -> (B,)
    got = xaikit.gradient(flat, torch.ones(1, 4, 4))
    assert torch.allclose(got, w.reshape(1, 4, 4))
    first3 = lambda b: b.flatten(1)[:, :3]  # noqa: E731 - three classes, same shape either way
    assert xaikit.gradient(first3, torch.ones(1, 4, 4), target=1).flatten()[1] == 1.0  # exact: a one-hot selection


# -- 7: a NaN or inf baseline; a completeness gap over 5% --------------------------------------------------------
def test_nan_and_inf_baselines_are_rejected_like_x():
    f = lambda b: torch.tanh(b).sum(1)  # noqa: E731
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="baseline must be finite"):
            integrated_gradients(f, [1.0, 2.0], baseline=bad)
        with pytest.raises(ValueError, match="baseline contains NaN or inf"):
            integrated_gradients(f, [1.0, 2.0], baseline=[0.0, bad])
        with pytest.raises(ValueError, match="baseline must be finite"):
            xaikit.tensor.paths.path_integrated_gradients(f, [1.0, 2.0], baseline=bad)


def test_a_gap_over_five_percent_warns_and_names_the_fix():
    f = lambda b: torch.tanh(3 * b).sum(1)  # noqa: E731
    with pytest.warns(CompletenessWarning, match=r"\([\d.]+% of it\), over the 5%.*Raise steps \(now 1"):
        result = integrated_gradients(f, [1.0, 2.0], steps=1)
    assert result.relative_gap > 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert integrated_gradients(f, [1.0, 2.0], steps=64, rule="gausslegendre").relative_gap < 0.05
        # a gap that is float rounding on an output that does not change is not worth a warning
        integrated_gradients(lambda b: b.sum(1) * 0, [1.0, 2.0], steps=1)


def test_the_warning_points_at_the_callers_line():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        integrated_gradients(lambda b: torch.tanh(3 * b).sum(1), [1.0, 2.0], steps=1)
    assert seen and seen[0].filename == __file__


# -- 11: dtypes --------------------------------------------------------------------------------------------------
def test_float64_numpy_x_gets_the_dtype_hint():
    w = torch.randn(3, 2)
    with pytest.raises(ValueError, match=r"x is float64 \(NumPy arrays are float64 by default\).*float32"):
        xaikit.gradient(lambda b: b @ w, np.array([1.0, 2.0, 3.0]))
    # a float64 array with a torch module works: the module casts it to its own dtype
    lin = torch.nn.Linear(3, 2).eval()
    assert xaikit.gradient(lin, np.array([1.0, 2.0, 3.0]), target=0).shape == (3,)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_precision_models_are_explained_in_float32(dtype, tok):
    text = "i like the movie but the plot was dull"
    low = tiny_bert(seed=1).to(dtype)
    before = {k: v.clone() for k, v in low.state_dict().items()}
    wide = copy.deepcopy(low).float()  # the same weights, in float32
    ig = xaikit.text_integrated_gradients(low, tok, text, steps=16, rule="gausslegendre")
    np.testing.assert_allclose(ig.scores, xaikit.text_integrated_gradients(wide, tok, text, steps=16,
                                                                           rule="gausslegendre").scores,
                               rtol=1e-4, atol=1e-9)  # float16 was 17% off
    gs = gradsam(low, tok, text).scores
    np.testing.assert_allclose(gs, gradsam(wide, tok, text).scores, rtol=1e-4, atol=1e-12)
    assert (gs > 0).all()  # float16 rounded the small scores to 0
    # the model is given back exactly as it was
    assert all(p.dtype == dtype for p in low.parameters())
    assert all(torch.equal(v, before[k]) for k, v in low.state_dict().items())  # exact: restored, not recomputed
    lin = torch.nn.Linear(3, 2).to(dtype).eval()
    g = xaikit.gradient(lin, [1.0, 2.0, 3.0], target=1)
    assert g.dtype == torch.float32 and torch.equal(g, lin.weight[1].float())  # exact: one-hot picks row 1 of W


def test_the_model_goes_back_to_its_dtype_after_an_error(tok):
    low = tiny_bert(seed=1).to(torch.bfloat16)
    with pytest.raises(ValueError, match="target must be an int <= 1"):
        gradsam(low, tok, "i like the movie", target=5)
    assert all(p.dtype == torch.bfloat16 for p in low.parameters())


# -- 13: very large steps -------------------------------------------------------------------------------------------
def test_gauss_legendre_nodes_are_fast_and_exact():
    for n in (1, 2, 7, 100, 101, 257, 1000):
        alphas, weights = alphas_and_weights("gausslegendre", n)
        nodes, w = np.polynomial.legendre.leggauss(n)
        np.testing.assert_allclose(alphas, 0.5 * (nodes + 1), rtol=0, atol=1e-15)
        np.testing.assert_allclose(weights, 0.5 * w, rtol=1e-7, atol=0)  # leggauss: 1e-8 off at the ends
    start = time.perf_counter()
    alphas, weights = alphas_and_weights("gausslegendre", 10_000)  # leggauss: 109 s
    assert time.perf_counter() - start < 20
    assert np.all(np.diff(alphas) > 0) and abs(weights.sum() - 1) < 1e-12
    # exact for polynomials of degree 2n - 1: integral of 20 a^19 over [0, 1] is 1
    assert abs(float(np.sum(weights * 20 * alphas ** 19)) - 1) < 1e-12


def test_many_steps_run_in_bounded_batches_and_keep_the_running_sum(monkeypatch):
    import xaikit.tensor.integrated as ig

    sizes = []
    f = lambda b: (sizes.append(b.shape[0]), torch.tanh(b).sum(1))[1]  # noqa: E731
    monkeypatch.setattr(ig, "KEEP_NUMBERS", 1000)
    result = integrated_gradients(f, torch.linspace(0, 1, 64), steps=5000, rule="gausslegendre")
    # sizes[:2]: f at x for the target, and once more to check f is deterministic
    assert max(sizes) <= ig.default_batch_size(torch.zeros(64)) and sum(sizes[2:]) == 5000 + 2
    assert result.gradients is None  # 5000 x 64 numbers: not kept ...
    assert result.running_sum()[-1] == pytest.approx(float(result.attributions.sum()), abs=1e-4)  # ... the sums are
    assert result.relative_gap < 1e-5


def test_long_runs_show_progress(capsys, monkeypatch):
    import xaikit.tensor.integrated as ig

    monkeypatch.setattr(ig, "BATCH_NUMBERS", 8)
    integrated_gradients(lambda b: torch.tanh(b).sum(1), [1.0, 2.0], steps=50, progress=True)
    assert "IG path" in capsys.readouterr().err


# -- 8: one truncation rule for every text method ------------------------------------------------------------------
LONG = " ".join(["i like the movie but the plot was dull"] * 12)  # 108 words; the tiny model takes 64 tokens


def _one_cut(fn):
    """``fn()``'s result and the TruncationWarnings it gave."""
    from xaikit.text.encoding import TruncationWarning

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = fn()
    return out, [w for w in seen if issubclass(w.category, TruncationWarning)]


def test_every_text_method_cuts_a_long_text_the_same_way(tok):
    from xaikit.text.registry import method_names
    from xaikit.text.shaptext import token_scores
    from xaikit.text.views import all_views, explain

    METHODS = method_names()

    model = tiny_bert(seed=2)
    grad_sam, cut = _one_cut(lambda: gradsam(model, tok, LONG))
    assert len(cut) == 1 and "108 words" in str(cut[0].message) and "64" in str(cut[0].message)
    assert cut[0].filename == __file__  # it points at the caller's line
    tokens = grad_sam.tokens
    assert len(tokens) <= 64 and tokens[-1] == "[SEP]"
    for fn in (lambda: xaikit.text_integrated_gradients(model, tok, LONG, steps=8),  # was 128 tokens: crashed
               lambda: xaikit.capture_attention(model, tok, LONG),
               lambda: token_scores(model, tok, LONG, max_evals=40),
               *[lambda m=m: explain(model, tok, LONG, m, max_evals=40) if m == "SHAP" else explain(model, tok, LONG, m)
                 for m in METHODS]):
        out, cut = _one_cut(fn)
        assert len(cut) == 1  # one warning, not one per inner step
        assert list(out.tokens) == tokens
    views, cut = _one_cut(lambda: all_views(model, tok, LONG, shap_evals=40, ig_steps=8))
    assert len(cut) == 1 and all(list(v.tokens) == tokens for v in views.values())


def test_the_cut_keeps_whole_words(tmp_path):
    from xaikit.models.tiny import _WORDS
    from xaikit.text.encoding import fit_text

    tok = tiny_tokenizer(tmp_path, words=(*_WORDS, "##s"))  # "movies" -> movie ##s
    model = tiny_bert(seed=2)
    text = "i like the movie " * 15 + "i movies a lot"  # the 62-token budget ends inside "movies"
    assert tok.tokenize(text)[61:63] == ["movie", "##s"]
    with pytest.warns(UserWarning, match="the same tokens in every method"):
        cut = fit_text(model, tok, text)
    assert cut.endswith("movie i") and tok.tokenize(cut) == tok.tokenize(text)[:61]


def test_panels_side_by_side_agree_on_a_long_text(tok):
    from xaikit.widgets import AttentionExplorer, MethodComparisonPanel

    model = tiny_bert(seed=2)
    panel = MethodComparisonPanel(model, tok, text=LONG, a="Grad-SAM", b="IG")
    assert panel.error is None  # was "the two score sets are for different tokens"
    assert "truncated it to its first" in panel.status.value  # the cut, shown in the panel
    explorer = AttentionExplorer(model, tok, text=LONG)
    assert explorer.result.tokens == list(gradsam(model, tok, LONG).tokens)  # was 128 tokens: crashed


# -- 9: SHAP on long text ----------------------------------------------------------------------------------------
def test_shap_refuses_long_text_unless_asked_and_shows_progress(tok, capsys):
    from xaikit.text.shaptext import LONG_TEXT, shap_text

    model = tiny_bert(seed=2, max_position_embeddings=512)
    wide = copy.deepcopy(tok)
    wide.model_max_length = 512
    text = " ".join(["i like the movie"] * 60)  # 240 words, 242 tokens
    assert LONG_TEXT < 242
    with pytest.raises(ValueError, match=r"text has 242 tokens; SHAP would run about max_evals=40 .*allow_long=True"):
        shap_text(model, wide, text, max_evals=40)
    e = shap_text(model, wide, text, max_evals=40, allow_long=True, progress=True)
    assert len(e.values[0]) == 242
    assert "SHAP: ~40 evaluations of <= 242 tokens" in capsys.readouterr().err


# -- 10: a tokenizer that does not belong to the model -----------------------------------------------------------
def test_a_tokenizer_of_another_model_is_named(tok):
    from xaikit.text.shaptext import shap_text

    small = tiny_bert(seed=2, vocab_size=40)  # the tokenizer has more tokens than the model has rows
    for fn in (lambda: gradsam(small, tok, "i like the movie"),
               lambda: xaikit.text_integrated_gradients(small, tok, "i like the movie"),
               lambda: xaikit.capture_attention(small, tok, "i like the movie"),
               lambda: shap_text(small, tok, "i like the movie", max_evals=20)):
        with pytest.raises(ValueError, match=rf"tokenizer does not match the model: the tokenizer has {len(tok)} "
                                             r"tokens but the model's embedding has 40 rows"):
            fn()  # was IndexError: index out of range in self
    ids = torch.tensor([2, 50, 3])
    with pytest.raises(ValueError, match="input_ids holds token id 50, outside the model's 40 embedding rows"):
        xaikit.text.text_ig.embedding_integrated_gradients(small, ids)
    other = tiny_bert(seed=2)
    other.config.pad_token_id = 1  # e.g. a RoBERTa model (<pad> = 1) with a BERT tokenizer ([PAD] = 0)
    with pytest.raises(ValueError, match=r"the model's config has pad_token_id=1, the tokenizer's \[PAD\] token is id 0"):
        gradsam(other, tok, "i like the movie")  # was: plausible-looking scores
    padded = tiny_bert(seed=2, vocab_size=len(tok) + 600)
    with pytest.warns(UserWarning, match=rf"the tokenizer has {len(tok)} tokens, the model's embedding {len(tok) + 600}"):
        gradsam(padded, tok, "i like the movie")


# -- 14, 15: panel.set() checks every value first; clamped values are noted -----------------------------------
def test_set_with_a_bad_choice_changes_nothing_and_names_the_control():
    from xaikit.widgets import SmoothGradPanel

    p = SmoothGradPanel(n_images=2, n=4)
    sigma, result = p.values["sigma"], p.result
    assert p.set(sigma=0.3, kind="bad") is result  # was: TraitError, and the slider showed 0.3 anyway
    assert p.values["sigma"] == sigma and p.result is result  # nothing applied: the panel is in sync
    assert isinstance(p.error, ValueError) and str(p.error).startswith("kind must be one of")
    assert "kind must be one of" in p.status.value and "nothing was changed" in p.status.value
    p.set(sigma="big")
    assert isinstance(p.error, TypeError) and "sigma must be a number" in p.status.value
    p.set(sigma=0.3, kind="vargrad")
    assert p.error is None and p.result.noisy.sigma == 0.3 and p.result.kind == "vargrad" and p.status.value == ""


def test_out_of_range_values_are_clamped_with_a_note():
    from xaikit.widgets import GradientPanel, HeadsPanel, IGStepsPanel, ThresholdPanel

    p = GradientPanel()
    p.set(x1=1e9)
    assert p.values["x1"] == 3.0 and p.error is None
    assert "x1: 1e+09 is above its maximum 3, so it was set to 3" in p.status.value  # was silent
    p.set(x2=0.5)
    assert p.status.value == ""  # the note was about the last set()
    steps = IGStepsPanel(steps=0)  # a constructor value is noted too
    assert steps.result.result.steps == 1 and "steps: 0 is below its minimum 1" in steps.status.value
    beta = ThresholdPanel()
    beta.set(beta=1e6)  # a log slider: its range is 10**-0.5 .. 10**2
    assert beta.values["beta"] == pytest.approx(100) and "beta: 1e+06 is above its maximum 100" in beta.status.value
    heads = HeadsPanel()
    heads.set(n_heads=3)
    assert heads.values["n_heads"] == 2 and "n_heads must be one of 1, 2, 4, 8" in heads.status.value


def test_the_attention_explorer_notes_a_clamped_layer(tok):
    from xaikit.widgets import AttentionExplorer

    e = AttentionExplorer(tiny_bert(seed=2), tok, text="i like the movie")
    e.set(layer=99)
    assert e.values["layer"] == 1 and "layer: 99 is above its maximum 1" in e.status.value


def test_warnings_during_an_update_are_shown_in_the_panel():
    from xaikit.widgets import IGStepsPanel

    with pytest.warns(CompletenessWarning):  # still a Python warning ...
        p = IGStepsPanel(steps=1)
    assert "completeness gap" in p.status.value  # ... and in the panel


# -- 16: misleading errors from other panels and loaders ------------------------------------------------------
def test_heads_panel_names_the_head_counts():
    from xaikit.widgets import HeadsPanel

    with pytest.raises(ValueError, match=r"n_heads must be one of 1, 2, 4, 8 \(the 8 features split into equal "
                                         r"heads\), got 3"):
        HeadsPanel(n_heads=3)  # was a TraitError from inside the constructor


def test_load_vit_suggests_the_embedded_name():
    from xaikit.models import load_vit

    with pytest.raises(ValueError, match="Did you mean 'embedded-control'"):
        load_vit("control")  # was a hub look-up for a model called 'control'


def test_a_warning_turned_into_an_error_is_shown_in_the_panel():
    from xaikit.widgets import IGStepsPanel

    p = IGStepsPanel(steps=50, rule="gausslegendre")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p.set(steps=1, rule="riemann_right")  # not raised out of set(): shown, like any error
    assert isinstance(p.error, CompletenessWarning) and "xk-error" in p.status.value


# -- a str for a bool, settings from the environment, a model of the wrong kind ----------------------------------
def test_force_takes_only_a_bool(tmp_path, monkeypatch):
    """force="False" retrained a model: a str is true."""
    from xaikit.models import cache, digits

    built = []
    with pytest.raises(TypeError, match=r"force must be True or False, got str 'False'; e.g. force=True"):
        cache.ensure(tmp_path / "m", lambda tmp: built.append(tmp), force="False", progress=False)
    with pytest.raises(TypeError, match=r"force must be True or False, got str 'False'"):
        digits.digits_classifier(force="False", disk_cache=False, epochs=1)
    with pytest.raises(TypeError, match=r"disk_cache must be True or False, got str 'no'"):
        digits.digits_classifier(disk_cache="no", epochs=1)
    assert built == []


def test_capture_attention_refuses_text_with_pixels(tok):
    from xaikit.models.tiny import tiny_vit

    vit, pixels = tiny_vit(seed=0), torch.zeros(1, 3, 32, 32)
    with pytest.raises(ValueError, match=r"either text \(a text model\) or pixel_values \(a ViT\), not both.*"
                                         r"capture_attention\(vit, pixel_values=pixels\)"):
        xaikit.capture_attention(vit, tok, "i like the movie", pixel_values=pixels)  # the text was ignored
    with pytest.raises(ValueError, match=r"pixel_values is for an image model"):
        xaikit.capture_attention(tiny_bert(seed=1), tok, pixel_values=pixels)
    assert xaikit.capture_attention(vit, pixel_values=pixels).attentions.shape[-1] == 17  # [CLS] + 16 patches


@pytest.mark.parametrize("value", ["meta", "hpu", "vulkan"])
def test_a_device_xaikit_cannot_compute_on_is_named(monkeypatch, value):
    monkeypatch.setenv("XAIKIT_DEVICE", value)
    with pytest.raises(ValueError, match=rf"XAIKIT_DEVICE='{value}' asks for {value}, where xaikit cannot run its "
                                         r"models: it computes on cpu, cuda, mps, xpu; set XAIKIT_DEVICE=cpu"):
        xaikit.device()


def test_a_cache_under_an_unknown_users_home_is_named(monkeypatch):
    monkeypatch.setenv("XAIKIT_CACHE", "~nosuchuser_xk/c")
    with pytest.raises(ValueError, match=r"XAIKIT_CACHE='~nosuchuser_xk/c' starts with '~nosuchuser_xk', the home "
                                         r"folder of a user this system does not know; set XAIKIT_CACHE to a folder"):
        xaikit.cache_dir()  # was RuntimeError: Could not determine home directory


def test_text_methods_refuse_an_image_model(tok):
    from xaikit.models.tiny import tiny_vit

    vit = tiny_vit(seed=0)
    for method in (gradsam, xaikit.text_integrated_gradients, xaikit.shap_text):
        with pytest.raises(TypeError, match=r"model is an image model \(ViTForImageClassification\).*image.registry.relevance"):
            method(vit, tok, "i like the movie")  # was "'NoneType' object has no attribute 'dtype'"


def test_panel_constructors_name_their_parameters(tok):
    from xaikit.widgets import GradientPanel, IGPathPanel, LabPanel, MaskPanel

    with pytest.raises(ValueError, match=r"lim must be > 0.0, got -1.0.*half-width"):
        GradientPanel(lim=-1)  # was TraitError: Setting min > max
    with pytest.raises(ValueError, match=r"d_k must be an int >= 1, got 0"):
        MaskPanel(d_k=0)  # was ZeroDivisionError
    with pytest.raises(ValueError, match=r"x must be a point of the plane, two numbers.*got shape \(3,\)"):
        IGPathPanel(x=(1.0, 2.0, 3.0))  # was "baseline must have the same shape as x", shown in the panel
    with pytest.raises(TypeError, match=r"lab must be a LabResult .*got str 'x'"):
        LabPanel(lab="x")  # was "'str' object has no attribute 'rankings'"
    from xaikit.widgets.tcav import PatchGridPanel

    with pytest.raises(ValueError, match=r"labels must hold one label per image: there are 2 images and 1 labels"):
        PatchGridPanel(np.zeros((2, 16, 16, 3), np.uint8), labels=["a"])  # was an IndexError once the slider reached image 2


def test_attention_explorer_reads_the_query_in_the_new_sentence(tok):
    from xaikit.widgets import AttentionExplorer

    panel = AttentionExplorer(tiny_bert(seed=1), tok, text="the movie was good but the plot was dull", query="plot")
    panel.set(text="i like the movie", query="movie")  # "movie" is token 4 of the new sentence
    assert panel.error is None and panel.result.tokens[panel.result.query] == "movie"
    assert panel.controls["text"].value == "i like the movie"
    before = panel.result
    panel.set(text="i like it", query=9)  # 5 tokens: was checked against the old sentence's 11, then token 0
    assert isinstance(panel.error, ValueError) and "query must be an int <= 4" in str(panel.error)
    assert panel.result is before and panel.controls["text"].value == "i like the movie"  # nothing changed


def test_gap_curves_wants_a_list_of_step_counts():
    with pytest.raises(TypeError, match=r"steps must be a list of step counts.*got int 8; e\.g\. steps=\[1, 2, 4, 8\]"):
        xaikit.tensor.integrated.gap_curves(lambda b: torch.tanh(b).sum(1), torch.ones(3), steps=8)
    with pytest.raises(ValueError, match=r"steps\[1\] must be an int >= 1, got 0"):
        xaikit.tensor.integrated.gap_curves(lambda b: torch.tanh(b).sum(1), torch.ones(3), steps=[2, 0])


def test_prepare_is_an_attribute_as_the_package_docstring_says():
    import subprocess
    import sys

    code = "import xaikit; print(callable(xaikit.prepare.prepare), 'prepare' in dir(xaikit))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True"]  # was AttributeError: module 'xaikit' has no attribute 'prepare'


def test_a_batch_of_several_inputs_is_refused_with_the_loop():
    X = torch.tensor([[1.0, -2.0], [3.0, 0.5], [-1.0, 2.0]])
    square = lambda b: (b ** 2).sum(1)  # noqa: E731
    # was: one input of shape (3, 2), its output (1, 2) read as two classes
    for method in (xaikit.gradient, xaikit.grad_times_input, xaikit.smoothgrad, xaikit.integrated_gradients,
                   xaikit.occlusion):
        with pytest.raises(ValueError, match=r"a batch of 3 inputs.*ONE input at a time.*for i in range\(3\)"):
            method(square, X)
    w = torch.tensor([1.0, -1.0])
    with pytest.raises(ValueError, match=r"output \(1, 3\), which would be read as 3 classes"):
        xaikit.gradient(lambda b: b @ w, X)  # the rows as "classes"
    assert xaikit.gradient(square, X[0]).tolist() == [2.0, -4.0]  # exact: 2 x at small numbers


def test_one_input_with_a_leading_size_is_still_one_input():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # f reads x either way but gives one output: nothing to misread
        got = xaikit.gradient(lambda b: b.flatten(1).sum(1), torch.ones(3, 2))
        assert torch.equal(got, torch.ones(3, 2))  # exact: the gradient of a sum
        # an RGB image (3, 8, 8) and a CNN with three classes: f(x) as three (8, 8) inputs runs, but one
        # (1, 8, 8) does not, so x is one input
        torch.manual_seed(0)
        conv, head = nn.Conv2d(3, 4, 3, padding=1), nn.Linear(4, 3)
        cnn = lambda b: head(torch.relu(conv(b)).mean((-2, -1)))  # noqa: E731
        x = torch.rand(3, 8, 8)
        assert xaikit.gradient(cnn, x).shape == (3, 8, 8)


def test_a_percent_where_a_fraction_belongs_is_refused():
    from xaikit.tensor.integrated import steps_for_tolerance

    with pytest.raises(ValueError, match=r"tolerance must be a fraction of \|F\(x\) - F\(x'\)\| in \(0, 1\]: "
                                         r"0.05 for 5%; got 5, which reads as 500%. Did you mean tolerance=0.05\?"):
        steps_for_tolerance(lambda b: b[:, 0] * b[:, 1], [2.0, 3.0], tolerance=5)
    assert steps_for_tolerance(lambda b: b[:, 0] * b[:, 1], [2.0, 3.0], tolerance=1.0).converged
    with pytest.raises(ValueError, match=r"sigma must be a fraction of the input range, at most 1: 0.15 for 15%; "
                                         r"got 15"):
        G.smoothgrad(lambda b: (b ** 2).sum(1), torch.tensor([1.0, 2.0, -4.0]), sigma=15, seed=0)
    G.smoothgrad(lambda b: (b ** 2).sum(1), torch.tensor([1.0, 2.0, -4.0]), sigma=1.0, seed=0)


def test_text_percent_fractions_are_refused(model, tok):
    bert = model
    from xaikit._text_input import prepare_text
    from xaikit.lab.removal import aopc
    from xaikit.text.gradsam import gradsam
    from xaikit.text.text_ig import text_steps_for_tolerance

    with pytest.raises(ValueError, match=r"tolerance must be a fraction .*got 2, which reads as 200%"):
        text_steps_for_tolerance(bert, tok, "i like it", rules=["gausslegendre"], tolerance=2)
    text = "a dull and boring film"
    enc, scores = prepare_text(bert, tok, text, method="aopc"), gradsam(bert, tok, text)
    with pytest.raises(ValueError, match=r"bins\[0\] must be a fraction of the words in \(0, 1\]: 0.1 for 10%; "
                                         r"got 10.*Did you mean bins\[0\]=0.1\?"):
        aopc(bert, enc, tok, scores, bins=[10, 50])
    comp, suff = aopc(bert, enc, tok, scores, bins=[0.1, 0.5])
    assert np.isfinite(comp) and np.isfinite(suff)


def test_nan_results_come_with_a_message():
    from xaikit.concepts.cav import train_cav
    from xaikit.text.tokens import TokenScores

    with pytest.raises(ValueError, match=r"train_cav: concept_acts holds NaN or inf in 5 of its 5 rows"):
        train_cav(np.full((5, 3), np.nan), np.zeros((5, 3)))
    with pytest.raises(ValueError, match=r"position_similarity: row\(s\) \[0\] of pe are all zero.*normalize=False"):
        PE.position_similarity(torch.tensor([[0.0, 0.0], [1.0, 0.0]]))
    assert PE.position_similarity(torch.tensor([[0.0, 0.0], [1.0, 0.0]]), normalize=False)[1, 1] == 1.0
    t = TokenScores(["a", "b", "c"], np.array([1.0, float("nan"), 3.0]))
    with pytest.raises(ValueError, match=r"scores hold NaN for token\(s\) \['b'\]"):
        t.top(2)
    assert TokenScores(["a", "b"], np.array([1.0, -3.0])).top(1) == [("b", -3.0)]


def test_a_str_where_a_list_of_names_belongs(bert, tok):
    from xaikit.lab.faithfulness import run_lab
    from xaikit.lab.tensor_sanity import sanity_maps
    from xaikit.tensor.integrated import gap_curves
    from xaikit.text.views import all_views

    with pytest.raises(ValueError, match=r"methods must be a list of names.*got 'G'\. Did you mean \['IG'\]\?"):
        all_views(bert, tok, "i like the movie", methods="G")  # was "got 'G'" for one name of the list
    with pytest.raises(ValueError, match=r"rankings must be a list of names.*got 'IG'\. Did you mean \['IG'\]\?"):
        run_lab(bert, tok, ["i like the movie"], rankings="IG", progress=False)  # was "got 'I'"
    with pytest.raises(ValueError, match=r"extra_views must be a list.*Did you mean \['rollout'\]\?"):
        run_lab(bert, tok, ["i like the movie"], extra_views="rollout", progress=False)
    with pytest.raises(ValueError, match=r"methods must be a list.*Did you mean \['gradient'\]\?"):
        sanity_maps(nn.Linear(4, 2), torch.ones(4), target=0, methods="gradient")  # was "got 'g'"
    with pytest.raises(ValueError, match=r"rules must be a list.*Did you mean \['gausslegendre'\]\?"):
        gap_curves(lambda b: b.sum(1), [1.0, 2.0], rules="gausslegendre")
    with pytest.raises(ValueError, match=r"methods\[1\] must be one of"):
        all_views(bert, tok, "i like the movie", methods=["IG", "nope"])


def test_seeds_of_the_wrong_type_or_range_are_named():
    from xaikit.concepts import tcav

    f = lambda b: torch.tanh(b).sum(1)  # noqa: E731
    with pytest.raises(ValueError, match=r"seed must be an int between 0 and 2\*\*63 - 1.*got 2\*\*70"):
        xaikit.smoothgrad(f, torch.tensor([1.0, 2.0]), seed=2 ** 70)  # was "Overflow when unpacking long long"
    with pytest.raises(TypeError, match=r"seed must be an int, got float 1\.5"):
        xaikit.smoothgrad(f, torch.tensor([1.0, 2.0]), seed=1.5)
    model = ToyViT().eval()
    red, grey = _colour_images((0.8, 0.4, 0.2), 12, 0), _colour_images((0.5, 0.5, 0.5), 10, 2)
    with pytest.raises(ValueError, match=r"seed must be an int between 0 and 2\*\*32 - 1.*got -1"):
        tcav.tcav(model, red, grey, grey, target="zebra", layer=1, pooling="mean",
                  seed=-1)  # was "expected non-negative integer"
    with pytest.raises(ValueError, match=r"seed must be an int between 0 and 2\*\*32 - 3"):
        tcav.tcav_significance(model, {"red": red}, grey, target="zebra", layer=1, R=3, pooling="mean",
                               seed=2 ** 32 - 1)
    assert xaikit.smoothgrad(f, torch.tensor([1.0, 2.0]), seed=np.int64(3)).shape == (2,)  # NumPy ints still work


def test_panel_constructors_name_their_arguments():
    from xaikit.widgets import GradientPanel, SmoothGradPanel

    with pytest.raises(TypeError, match="x1 must be a number, got str 'a'"):
        GradientPanel(x1="a")  # was a TraitError
    with pytest.raises(ValueError, match="n_images must be an int >= 1, got 0"):
        SmoothGradPanel(n_images=0)  # was an IndexError


def test_panel_arguments_are_named():
    from xaikit.models import imageworld as iw
    from xaikit.models.tiny import tiny_vit
    from xaikit.widgets import SmoothGradPanel, TCAVPanel
    from xaikit.widgets.relevance import RelevancePanel

    with pytest.raises(TypeError, match=r"SmoothGradPanel: trained must be None .* or what digits_classifier\(\) "
                                        r"returns .*got str 'digits'"):
        SmoothGradPanel(trained="digits")
    with pytest.raises(TypeError, match=r"TCAVPanel: model must be a ViT image classifier .*load_vit.*got NoneType"):
        TCAVPanel(None)
    model = ToyViT().eval()
    concepts = {"red": _colour_images((0.9, 0.1, 0.1), 4, 0)}
    with pytest.raises(TypeError, match=r"processor must be the model's image processor .*got str 'vit'"):
        TCAVPanel(model, processor="vit", concept_sets=concepts)
    vit = tiny_vit(seed=0, image_size=64, num_labels=len(iw.classes()), labels=tuple(iw.classes()))
    with pytest.raises(ValueError, match=r"^part must be one of 'body'.*got 'tail'"):
        RelevancePanel(vit, iw.scenes("zebra", 1, seed=0), part="tail")


def test_function_arguments_are_named(bert, tok):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from xaikit.plotting import signed_bars
    from xaikit.text.shaptext import shap_text

    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match=r"labels must hold one label per value: there are 1 values and 2 labels"):
        signed_bars(ax, ["a", "b"], [1.0])
    assert len(signed_bars(ax, ["a", "b"], [1.0, -2.0])) == 2
    plt.close(fig)
    with pytest.raises(ValueError, match=r"fixed_context must be 0, 1 or None, got 2: 1 measures each word group"):
        shap_text(bert, tok, ["i like it"], fixed_context=2)
    assert xaikit.set_seed(np.int64(3)) == 3 and type(xaikit.set_seed(np.int64(3))) is int
    assert torch.initial_seed() == 3
    with pytest.raises(ValueError, match=r"seed must be a non-negative int"):
        xaikit.set_seed(np.int64(-1))


def test_panels_and_plots_name_the_parameter():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from xaikit.models import imageworld as iw
    from xaikit.plotting import show_signed, show_weights
    from xaikit.tensor.quadrature import additive_toy
    from xaikit.widgets import IGErrorPanel, RelevancePanel, SaturationPanel

    with pytest.raises(TypeError, match=r"model must be an additive model with a closed-form IG .*got function"):
        IGErrorPanel(model=lambda b: (b ** 2).sum(1), x=[1.0, 2.0])
    x = torch.tensor([1.0, -0.7, 2.0, 0.4], dtype=torch.float64)
    assert IGErrorPanel(model=additive_toy(), x=x).exact.shape == (4,)
    with pytest.raises(TypeError, match=r"scenes must be a non-empty list of imageworld.Scene, got NoneType"):
        RelevancePanel(object(), None)
    with pytest.raises(TypeError, match=r"seed must be an int, got float 2.5"):
        SaturationPanel(seed=2.5)
    with pytest.raises(ValueError, match=r"seed must be an int between 0 and"):
        SaturationPanel(seed=-1)
    assert SaturationPanel(seed=1).seed == 1
    fig, ax = plt.subplots()
    for draw in (show_signed, show_weights):
        with pytest.raises(ValueError, match=rf"{draw.__name__}: values must be a 2-D array .*got shape \(2,\)"):
            draw(ax, np.array([-1.0, 0.5]))
    assert show_signed(ax, np.array([[-1.0, 3.0]])).get_array().shape == (1, 2)
    plt.close(fig)
    assert iw.Scene  # the panel's type check names this class
