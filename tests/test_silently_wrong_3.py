"""Issue 26, a fresh round of cases: silently wrong results found after the fixes.

Each test names the case of the round (``/work/round-cases.md``) it covers; each failed before its fix. The
README's "Bad input and safety" table lists them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from xaikit.attention import positions as PE
from xaikit.attention import saturation as SAT
from xaikit.attention import scratch as A
from xaikit.tensor import gradients as G


def _linear(x):
    w = torch.arange(1.0, x.shape[-1] + 1)
    return (x * w).sum(-1)


# -- 15: occlusion with stride > window left elements uncovered (attribution 0) ----------------------------------
def test_occlusion_stride_larger_than_window_is_refused():
    with pytest.raises(ValueError, match=r"stride \(2,\) is larger than window \(1,\).*stride <= window"):
        G.occlusion(_linear, torch.ones(6), window=1, stride=2)
    img = lambda x: x.flatten(-3).sum(-1)  # noqa: E731
    with pytest.raises(ValueError, match=r"stride .* is larger than window"):
        G.occlusion(img, torch.ones(1, 8, 8), window=2, stride=3)
    assert bool((G.occlusion(_linear, torch.ones(6), window=2, stride=1) != 0).all())  # overlapping: fine


# -- 21: VarGrad of one sample is 0 everywhere ---------------------------------------------------------------
def test_vargrad_needs_two_samples():
    x = torch.tensor([0.5, -1.0, 2.0])
    f = lambda x: (x ** 3).sum(-1)  # noqa: E731
    with pytest.raises(ValueError, match=r"n must be an int >= 2 for kind='vargrad', got 1"):
        G.smoothgrad(f, x, n=1, kind="vargrad", seed=0)
    with pytest.raises(ValueError, match=r"n must be an int >= 2 for kind='vargrad'"):
        G.noisy_gradients(f, x, n=1, seed=0).reduce("vargrad")
    assert G.smoothgrad(f, x, n=1, kind="squared", seed=0).shape == x.shape  # a mean of one square is fine
    assert bool((G.smoothgrad(f, x, n=4, kind="vargrad", seed=0) > 0).all())


# -- 50, 51: a 0..255 image against the default pixel range [0, 1] ---------------------------------------------
def test_image_baseline_refuses_an_image_outside_low_high():
    from xaikit.tensor.baselines import image_baseline

    img = torch.rand(1, 6, 6, generator=torch.Generator().manual_seed(0))
    for kind in ("max_distance", "gaussian", "uniform", "constant"):
        with pytest.raises(ValueError, match=r"x has values in .*outside the pixel range low=0, high=1.*high=255"):
            image_baseline(img * 255, kind)
    far = image_baseline(img * 255, "max_distance", low=0, high=255)
    assert set(far.unique().tolist()) <= {0.0, 255.0} and bool((far == 255).any())
    assert float(image_baseline(img * 255, "gaussian", low=0, high=255).max()) > 1.0
    image_baseline(img * 255, "blurred")  # no range involved
    image_baseline(img, "max_distance")


# -- 52: k larger than the dataset -----------------------------------------------------------------------------
def test_expected_baseline_refuses_more_samples_than_data():
    from xaikit.tensor.baselines import baseline_attributions

    f = lambda x: x.flatten(1).sum(-1)  # noqa: E731
    x, data = torch.rand(1, 4, 4), torch.rand(5, 1, 4, 4)
    with pytest.raises(ValueError, match=r"param \(k, .*\) is 100 but data holds 5 images; pass param <= 5"):
        baseline_attributions(f, x, "expected", param=100, data=data)
    assert len(baseline_attributions(f, x, "expected", param=5, data=data, steps=4).baselines) == 5


# -- 46: a float seed was truncated ----------------------------------------------------------------------------
def test_image_baseline_seed_must_be_an_int():
    from xaikit.tensor.baselines import baseline_attributions, image_baseline

    with pytest.raises(TypeError, match=r"seed must be an int, got float 2.7"):
        image_baseline(torch.rand(1, 4, 4), "uniform", seed=2.7)
    with pytest.raises(TypeError, match=r"seed must be an int"):
        baseline_attributions(lambda x: x.flatten(1).sum(-1), torch.rand(1, 4, 4), "uniform", seed=2.7)


# -- 74: a tokenizer's (B, T) attention_mask read as (queries, keys) when B == T ---------------------------------
def test_padding_mask_passed_as_is_is_refused_with_padding_mask_fix():
    q = torch.randn(3, 3, 4, generator=torch.Generator().manual_seed(0))
    am = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 0]])  # a tokenizer's attention_mask, B = T = 3
    with pytest.raises(ValueError, match=r"looks like a tokenizer's attention_mask.*padding_mask\(mask\)"):
        A.scaled_dot_product_attention(q, q, q, mask=am)
    with pytest.raises(ValueError, match=r"padding_mask\(mask\)"):  # B != T: the shape error names the fix too
        A.scaled_dot_product_attention(q[:2], q[:2], q[:2], mask=am[:2])
    _, w = A.scaled_dot_product_attention(q, q, q, mask=A.padding_mask(am))
    assert float(w[1, :, 2].abs().max()) == 0.0 and float(w[0, 2, 1]) > 0  # padding keys, per batch element
    A.scaled_dot_product_attention(q, q, q, mask=am.bool())  # a shared (queries, keys) mask, said so
    A.scaled_dot_product_attention(q[0], q[0], q[0], mask=am)  # unbatched: (T_q, T_k), as before


# -- 90, 91: the positional encoding's base ---------------------------------------------------------------------
@pytest.mark.parametrize("base", [0, -10, 1, 0.5])
def test_positional_encoding_base_must_exceed_one(base):
    with pytest.raises(ValueError, match=r"base must be > 1.0, got .*usual value is 10000"):
        PE.sinusoidal_positional_encoding(3, 4, base=base)
    with pytest.raises(ValueError, match=r"base must be > 1.0"):
        PE.position_shift(1, 4, base=base)
    assert bool(torch.isfinite(PE.sinusoidal_positional_encoding(3, 4, base=100)).all())


# -- 171, 170: ConceptGalleryPanel with one image as a set; n_show named ----------------------------------------
def test_concept_gallery_refuses_one_image_as_a_set():
    from xaikit.widgets.tcav import ConceptGalleryPanel

    one = np.zeros((32, 32, 3), dtype=np.uint8)
    sets = {"x": np.zeros((4, 32, 32, 3), dtype=np.uint8)}
    with pytest.raises(ValueError, match=r"concept_sets\['x'\] looks like one image of shape \(32, 32, 3\)"):
        ConceptGalleryPanel(concept_sets={"x": one}, random_set=sets["x"])
    with pytest.raises(ValueError, match=r"random_set looks like one image"):
        ConceptGalleryPanel(concept_sets=sets, random_set=one)
    with pytest.raises(ValueError, match=r"n_show must be an int >= 1, got 0"):
        ConceptGalleryPanel(concept_sets=sets, n_show=0)


# -- 172: allow_long='False' is True ---------------------------------------------------------------------------
def test_method_comparison_allow_long_must_be_a_bool():
    from xaikit.widgets.text_methods import MethodComparisonPanel

    with pytest.raises(TypeError, match=r"allow_long must be True or False, got str 'False'"):
        MethodComparisonPanel(None, None, allow_long="False")


# -- 163: set(n_heads='2') suggested the str it refused ---------------------------------------------------------
def test_choice_of_ints_given_a_str_names_the_types():
    from xaikit._validate import check_choice
    from xaikit.widgets.attention import HeadsPanel

    panel = HeadsPanel()
    panel.set(n_heads="2")  # the error is shown in the panel
    assert isinstance(panel.error, ValueError)
    assert "got '2' (str), so nothing was changed. Did you mean 2 (int)?" in str(panel.error)
    with pytest.raises(ValueError, match=r"got '4' \(str\)\. Did you mean 4 \(int\)\?"):
        check_choice("4", "n_heads", (1, 2, 4, 8))
    with pytest.raises(ValueError, match=r"got 'smothgrad'\. Did you mean 'smoothgrad'\?"):
        check_choice("smothgrad", "kind", ("smoothgrad", "vargrad"))


# -- 192, 193: XAIKIT_CACHE relative or with stray spaces ----------------------------------------------------------
def test_cache_dir_is_stripped_and_absolute(tmp_path, monkeypatch):
    from xaikit._config import cache_dir

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XAIKIT_CACHE", "relcache")
    assert cache_dir() == tmp_path.resolve() / "relcache"
    target = tmp_path / "abs cache"
    monkeypatch.setenv("XAIKIT_CACHE", f"  {target} \n")
    assert cache_dir() == target.resolve() and target.is_dir()
    assert not any(p.name.startswith(" ") for p in tmp_path.iterdir())
    monkeypatch.setenv("XAIKIT_CACHE", "   ")  # spaces only: as if unset
    assert cache_dir(create=False) != tmp_path / "   "


# -- 215: a notebook whose source was deleted ------------------------------------------------------------------
def test_notebooks_check_reports_a_notebook_without_its_source(tmp_path, monkeypatch, capsys):
    from tests.test_no_data_loss_2 import SOURCE
    from xaikit.__main__ import main
    from xaikit.course import notebooks as _nbtools

    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "01_demo.py").write_text(SOURCE)
    (folder / "02_other.py").write_text(SOURCE)
    monkeypatch.setattr(_nbtools, "NOTEBOOKS", folder)
    _nbtools.build_notebooks(verbose=False)
    assert _nbtools.check() == []
    (folder / "01_demo.py").unlink()
    capsys.readouterr()
    assert main(["notebooks", "check"]) == 1
    err = capsys.readouterr().err
    assert "01_demo.ipynb has no source 01_demo.py" in err and "git checkout -- notebooks/01_demo.py" in err
    assert main(["notebooks", "check", "01"]) == 1
    assert main(["notebooks", "check", "02"]) == 0
    assert main(["notebooks", "build"]) == 1
    assert "01_demo.ipynb has no source" in capsys.readouterr().err
    assert (folder / "01_demo.ipynb").exists()


# -- 218: probabilities as labels truncated to 0 ---------------------------------------------------------------
def test_train_diagnostic_refuses_fractional_labels():
    from xaikit.lab import diagnostics as D

    emb = torch.randn(10, 4, generator=torch.Generator().manual_seed(0))
    ids = torch.tensor([[1, 2, 3]] * 6)
    mask = torch.ones(6, 3, dtype=torch.long)
    w = torch.full((6, 3), 1 / 3)
    with pytest.raises(ValueError, match=r"labels must be class indices 0, 1, \.\.\., got 0\.9 at index 0.*> 0\.5"):
        D.train_diagnostic(emb, ids, mask, [0.9, 0.2, 0.8, 0.1, 0.7, 0.6], weights=w)
    mlp = D.train_diagnostic(emb, ids, mask, [1.0, 0.0, 1.0, 0.0, 1.0, 0.0], weights=w, epochs=1)  # whole floats
    assert mlp.classifier.out_features == 2


# -- 222: change relative to a zero map ------------------------------------------------------------------------
def test_relative_change_from_a_zero_map():
    assert G.relative_change(torch.zeros(3), torch.ones(3)) == float("inf")
    assert G.relative_change(torch.zeros(3), torch.zeros(3)) == 0.0
    assert G.relative_change(torch.tensor([3.0, 4.0]), torch.zeros(2)) == pytest.approx(1.0)


# -- 42, 45: the sequential path's order --------------------------------------------------------------------------
def test_path_order_is_ints_and_only_for_the_sequential_path():
    from xaikit.tensor.paths import path_integrated_gradients

    x = torch.tensor([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match=r"order\[0\] must be an int, got float 0\.5"):
        path_integrated_gradients(_linear, x, path="sequential", order=[0.5, 1, 2])
    with pytest.raises(ValueError, match=r"order is an option of path='sequential', not of path='straight'"):
        path_integrated_gradients(_linear, x, path="straight", order=[2, 1, 0])
    with pytest.raises(ValueError, match=r"powers is an option of path='power'"):
        path_integrated_gradients(_linear, x, path="sequential", powers=[1, 2, 3])
    path_integrated_gradients(_linear, x, path="sequential", order=np.array([2, 1, 0]), steps=30)


# -- 275: top(k=-1) --------------------------------------------------------------------------------------------
def test_token_scores_top_needs_k_at_least_one():
    from xaikit.text.tokens import TokenScores

    ts = TokenScores(["a", "b", "c"], np.array([0.1, 0.5, -0.2]), "demo", 0, True)
    with pytest.raises(ValueError, match=r"k must be an int >= 1, got -1"):
        ts.top(k=-1)
    assert [t for t, _ in ts.top(k=10)] == ["b", "c", "a"]


# -- 260: set_seed(2**70) --------------------------------------------------------------------------------------
def test_set_seed_too_large_is_named():
    import xaikit

    with pytest.raises(ValueError, match=r"seed must be an int between 0 and 2\*\*63 - 1, got 2\*\*70"):
        xaikit.set_seed(2 ** 70)


# == issue 42, the adversarial round's left-overs (/tmp/adv/cases.md) =========================================
def test_attributions_that_overflow_are_refused_naming_the_scale():
    """``grad_times_input`` at x = 3e38 returned ``[inf, -inf]``: the gradient (10, -10) is finite, the product
    overflows float32. The output of ``(b ** 2).sum(1)`` at 1e38 overflows too, and is named as such."""
    f = lambda b: 10 * (b[:, 0] - b[:, 1])  # noqa: E731 - F(x) = 0 here, dF/dx = (10, -10)
    x = [3e38, 3e38]
    assert torch.equal(G.gradient(f, x), torch.tensor([10.0, -10.0]))
    with pytest.raises(ValueError, match=r"grad_times_input: the attributions are not finite.*largest magnitude is "
                                         r"3e\+38.*Rescale x"):
        G.grad_times_input(f, x)
    with pytest.raises(ValueError, match=r"f returned NaN or inf.*largest magnitude is 1e\+38"):
        G.grad_times_input(lambda b: (b ** 2).sum(1), [1e38, 1e38])
    from xaikit.tensor.integrated import integrated_gradients

    with pytest.raises(ValueError, match=r"Integrated Gradients: the attributions are not finite"):
        integrated_gradients(f, x, steps=4)
    assert torch.allclose(G.grad_times_input(f, [3.0, 1.0]), torch.tensor([30.0, -10.0]))


def test_occlusion_refuses_a_channels_last_image():
    """An (8, 8, 3) uint8 NumPy image was read as 8 channels of 8x3 and occluded in strips, with no word."""
    f = lambda b: b.flatten(1).sum(1)  # noqa: E731 - takes any shape
    hwc = (np.random.default_rng(0).random((8, 8, 3)) * 255).astype(np.uint8)
    with pytest.raises(ValueError, match=r"channels-last image \(H, W, C\) = \(8, 8, 3\) of uint8.*"
                                         r"permute\(2, 0, 1\)\.float\(\) / 255"):
        G.occlusion(f, hwc, window=2)
    chw = torch.as_tensor(hwc).permute(2, 0, 1).float() / 255
    assert G.occlusion(f, chw, window=2).shape == (3, 8, 8)
    assert G.occlusion(f, hwc.astype(np.float32), window=(2, 2, 3)).shape == (8, 8, 3)  # the caller chose


def test_embedding_ig_refuses_a_mask_that_attends_to_no_token():
    from xaikit.models.tiny import tiny_bert
    from xaikit.text.text_ig import embedding_integrated_gradients

    model = tiny_bert(seed=2)
    ids = torch.tensor([[2, 40, 41, 42, 3]])
    with pytest.raises(ValueError, match=r"attention_mask is all 0: no token is attended to"):
        embedding_integrated_gradients(model, ids, attention_mask=torch.zeros_like(ids), steps=4)
    ones = embedding_integrated_gradients(model, ids, attention_mask=torch.ones(5), steps=4)  # float 0/1 reads
    assert torch.allclose(ones.attributions, embedding_integrated_gradients(model, ids, steps=4).attributions)


def test_row_entropy_refuses_rows_that_are_not_distributions():
    """``row_entropy([[2, -1]])`` was -70 nats; rows not summing to 1 gave a number with no meaning."""
    with pytest.raises(ValueError, match=r"row_entropy: weights holds a negative value.*torch.softmax"):
        SAT.row_entropy(torch.tensor([[2.0, -1.0]]))
    with pytest.raises(ValueError, match=r"row_entropy: a row of weights sums to 0.4, not 1"):
        SAT.row_entropy(torch.tensor([[0.2, 0.2]]))
    assert float(SAT.row_entropy(torch.tensor([[0.5, 0.5]]))) == pytest.approx(np.log(2))
    nan_row = SAT.row_entropy(torch.tensor([[0.5, 0.5], [float("nan"), float("nan")]]))  # a query with no key
    assert nan_row[0] == pytest.approx(np.log(2)) and torch.isnan(nan_row[1])


def test_localisation_refuses_an_empty_mask_and_a_nan_map():
    from xaikit.lab import pixel_scores as ps

    body = np.zeros((32, 32), bool)
    body[:16] = True
    with pytest.raises(ValueError, match=r"localisation: mask is empty"):
        ps.localisation(np.ones((4, 4)), np.zeros((32, 32), bool))  # was 0.0
    with pytest.raises(ValueError, match=r"localisation: rmap holds NaN or inf"):
        ps.localisation(np.full((4, 4), np.nan), body)  # was nan
    with pytest.raises(ValueError, match=r"pointing_game: mask is empty"):
        ps.pointing_game(np.ones((4, 4)), np.zeros((32, 32), bool))
    assert ps.localisation(np.ones((4, 4)), body) == pytest.approx(0.5)


@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5"])
def test_a_bad_thread_setting_is_refused_by_the_plain_tensor_methods(monkeypatch, value):
    """``XAIKIT_THREADS=abc`` was refused by the model methods and ignored by ``smoothgrad`` on a function."""
    monkeypatch.setenv("XAIKIT_THREADS", value)
    with pytest.raises(ValueError, match=r"XAIKIT_THREADS must be a positive integer or 'auto', got"):
        G.smoothgrad(lambda b: (b ** 2).sum(1), [1.0, 2.0], seed=0)
    with pytest.raises(ValueError, match=r"XAIKIT_THREADS must be"):
        G.gradient(lambda b: (b ** 2).sum(1), [1.0, 2.0])
    monkeypatch.setenv("XAIKIT_THREADS", "1")
    assert G.gradient(lambda b: (b ** 2).sum(1), [1.0, 2.0]).tolist() == [2.0, 4.0]


def test_fast_mode_refuses_an_unknown_value(monkeypatch):
    """``XAIKIT_FAST=maybe`` was read as off, with no word."""
    import xaikit

    for value, expected in (("ON", True), ("Yes", True), ("off", False), ("No", False), ("FALSE", False)):
        monkeypatch.setenv("XAIKIT_FAST", value)
        assert xaikit.fast_mode() is expected
    for value in ("maybe", "2"):
        monkeypatch.setenv("XAIKIT_FAST", value)
        with pytest.raises(ValueError, match=rf"XAIKIT_FAST must be one of 1, true, yes, on .*got '{value}'"):
            xaikit.pick(50, 5)


def test_concept_panels_read_a_negative_layer_as_tcav_does():
    """``TCAVPanel(layer=-1)`` was clamped to layer 0 while ``tcav(layer=-1)`` reads the last block."""
    from tests.test_tcav import ToyViT, _colour_images
    from xaikit.widgets import TCAVPanel

    model = ToyViT().eval()
    concepts = {"red": _colour_images((0.9, 0.1, 0.1), 8, 0), "blue": _colour_images((0.1, 0.1, 0.9), 8, 1)}
    zebras = {"zebra": _colour_images((0.6, 0.3, 0.3), 8, 2)}
    randoms = [_colour_images((0.5, 0.5, 0.5), 8, 10 + i) for i in range(3)]
    panel = TCAVPanel(model, concept_sets=concepts, class_images=zebras, R=3, random_sets=randoms, layer=-1,
                      pooling="mean")
    assert panel.values["layer"] == 1 and panel.result.layer == 1  # the last of 2 blocks
    with pytest.raises(ValueError, match=r"layer must be an int >= -2.*use 0..1 \(or -1 for the last\)"):
        TCAVPanel(model, concept_sets=concepts, class_images=zebras, R=3, random_sets=randoms, layer=-3)


# -- adversarial round 3 (W28, W40-W44, R14): an input passed without f/model was replaced by the default -------
def test_ig_panels_keep_the_input_given_without_a_model_or_refuse_it():
    from xaikit.tensor.quadrature import additive_toy
    from xaikit.widgets import IGBaselinePanel, IGCompletenessPanel, IGErrorPanel, IGStepsPanel

    grey = torch.full((1, 8, 8), 0.5)
    panel = IGCompletenessPanel(x=grey, baseline=torch.ones(1, 8, 8))
    assert torch.equal(panel.x, grey) and float(panel.baseline.min()) == 1.0  # was the digit, the black image
    assert torch.equal(IGStepsPanel(x=grey).x, grey)
    four = torch.tensor([3.0, 3.0, 3.0, 3.0], dtype=torch.float64)
    assert torch.equal(IGErrorPanel(x=four).x, four)
    assert torch.equal(IGErrorPanel(x=four).exact, additive_toy().exact_ig(four, None))
    assert IGBaselinePanel(images=torch.full((2, 1, 8, 8), 0.3)).images.shape == (2, 1, 8, 8)
    with pytest.raises(ValueError, match=r"IGStepsPanel: x has shape \(3,\), but without f= .* shape \(1, 8, 8\); "
                                         r"pass f=your model together with x"):
        IGStepsPanel(x=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"IGBaselinePanel: images has shape \(2, 3, 8, 8\).*model="):
        IGBaselinePanel(images=torch.zeros(2, 3, 8, 8))
    with pytest.raises(ValueError, match=r"IGErrorPanel: x is None; with model= given, pass x= too"):
        IGErrorPanel(model=additive_toy(), x=None)


# -- adversarial round 3 (Z05, C45): "" as a folder on the command line was the current folder ------------------
@pytest.mark.parametrize("words, said", [
    (["notebooks", "copy", ""], "the folder to copy into is empty (an unset shell variable?)"),
    (["notebooks", "copy", " "], "the folder to copy into is empty"),
    (["notebooks", "slides", "01", "--out", ""], "--out is empty (an unset shell variable?); name a folder"),
    (["notebooks", "run", "01", "--html", ""], "--html is empty"),
    (["homework", "build", "--out", ""], "--out is empty"),
    (["claims", "report", "--out", ""], "--out is empty (an unset shell variable?); name a file"),
    (["notebooks", "build", "01", ""], "a notebook name is empty"),
])
def test_cli_refuses_an_empty_folder_or_name(tmp_path, monkeypatch, capsys, words, said):
    from xaikit.__main__ import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(words)
    assert exit_.value.code == 2 and said in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written into the current folder


# -- adversarial round 3 (M34, M19): smoothgrad's value_range far from x's values -------------------------------
def test_smoothgrad_refuses_a_value_range_far_from_x():
    img = torch.rand(1, 8, 8, generator=torch.Generator().manual_seed(0)) * 255
    f = lambda b: (b ** 2).sum((1, 2, 3)) / 1e4  # noqa: E731
    with pytest.raises(ValueError, match=r"x has values in \[.*\], far outside value_range=\(0, 1\).*"
                                         r"value_range=\(0, 255\)"):
        G.smoothgrad(f, img, value_range=(0, 1), seed=0)
    assert G.noisy_gradients(f, img, value_range=1.0, seed=0).noise_std == pytest.approx(0.15)  # a spread: kept
    with pytest.raises(ValueError, match=r"far outside value_range"):
        G.smoothgrad(lambda b: b.sum(-1), torch.tensor([50.0, 60.0]), value_range=(0, 1), seed=0)
    assert G.noisy_gradients(f, img, value_range=(0, 255), seed=0).noise_std == pytest.approx(0.15 * 255)
    assert G.noisy_gradients(f, img / 255, value_range=(0, 1), seed=0).noise_std == pytest.approx(0.15)


# -- adversarial round 3 (I28, H07, S06, R01): a percent where a fraction belongs ------------------------------
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


# -- adversarial round 3 (H11, H17, H18, R06): rows that are not distributions ---------------------------------
def test_saturation_measures_and_js_divergence_refuse_rows_that_are_not_distributions():
    from xaikit.lab.removal import js_divergence

    scores = torch.tensor([[2.0, -1.0, 0.5]])
    for fn in (SAT.max_weight, SAT.softmax_jacobian_norm, SAT.row_entropy):
        with pytest.raises(ValueError, match=rf"{fn.__name__}: weights holds a negative value.*not the scores"):
            fn(scores)
        with pytest.raises(ValueError, match=rf"{fn.__name__}: a row of weights sums to 1.8, not 1"):
            fn(torch.tensor([[0.9, 0.9]]))
    p = torch.softmax(scores, -1)
    jac = torch.diag(p[0]) - p[0, :, None] * p[0, None, :]
    assert float(SAT.softmax_jacobian_norm(p)[0]) == pytest.approx(float(jac.norm()), rel=1e-5)
    assert float(SAT.max_weight(p)[0]) == pytest.approx(float(p.max()))
    with pytest.raises(ValueError, match=r"js_divergence: p must hold probability rows.*Pass softmax\(logits\)"):
        js_divergence([2.0, -1.0], [0.5, 0.5])
    assert js_divergence([1.0, 0.0], [0.0, 1.0]) == pytest.approx(1.0)  # disjoint: 1 bit
    assert js_divergence([0.5, 0.5], [0.5, 0.5]) == pytest.approx(0.0)


# -- adversarial round 3 (V20, A31, T45): NaN out with no message -----------------------------------------------
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


# -- adversarial round 3 (M01, M02): "[SEP]" typed into a sentence became the special token, no word -------------
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


def test_rank_p_refuses_nan_in_value_or_null():
    from xaikit.concepts.significance import rank_p

    with pytest.raises(ValueError, match=r"value must be a finite number, got nan"):
        rank_p(float("nan"), [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"null holds 1 non-finite value\(s\) \(first at index 1: nan\)"):
        rank_p(0.5, [0.1, float("nan"), 0.3])
    with pytest.raises(ValueError, match=r"value must be a finite"):
        rank_p(float("inf"), [0.1, 0.2], alternative="greater")
    assert rank_p(0.5, [0.1, 0.3]) == pytest.approx(2 / 3)


def test_tokenscores_refuses_a_sentence_as_its_tokens():
    from xaikit.text.tokens import TokenScores

    with pytest.raises(TypeError, match="tokens must be a list of token strings"):
        TokenScores("hi there", np.arange(8.0))
    assert TokenScores(["hi", "there"], np.arange(2.0)).tokens == ["hi", "there"]


def test_cache_dir_refuses_a_str_for_create(monkeypatch, tmp_path):
    from xaikit._config import cache_dir

    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path / "c"))
    with pytest.raises(TypeError, match="create must be True or False"):
        cache_dir(create="no")
    assert not (tmp_path / "c").exists()
