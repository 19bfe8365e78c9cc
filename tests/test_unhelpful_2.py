"""Issue 26, items 10, 11 and 16: unhelpful errors, round two. ``panel.set`` applies a choice before the slider
it re-tunes (10) and checks every value before it applies any (11); raw errors from deep inside torch, traitlets
or NumPy now name the parameter (or environment variable) and the fix (16). Each test failed before its fix;
the README's "Bad input and safety" table lists them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import xaikit
from tests.test_tcav import ToyViT, _colour_images
from xaikit.models.tiny import tiny_bert, tiny_tokenizer


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    return tiny_tokenizer(tmp_path_factory.mktemp("tok"))


@pytest.fixture(scope="module")
def bert():
    return tiny_bert(seed=2)


def _state(panel):
    return panel.values, panel.result, panel.n_updates, panel.status.value


# -- 10: a choice is applied before the slider it re-tunes ----------------------------------------------------
def test_set_gives_the_baseline_its_parameter_whatever_the_previous_baseline():
    from xaikit.widgets import IGBaselinePanel

    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.Tanh(), nn.Linear(16, 10)).eval()
    panel = IGBaselinePanel(model, torch.rand(4, 1, 8, 8), data=torch.rand(40, 1, 8, 8), steps=8)
    assert panel.result.kind == "zero"  # its parameter slider runs 0..1
    updates = panel.n_updates
    panel.set(baseline="expected", param=16)  # was k = 1: 16 was clamped to the zero baseline's range first
    assert panel.error is None and panel.values["param"] == 16 and panel.result.baselines.shape[0] == 16
    assert panel.n_updates == updates + 1  # one update, not one per control
    panel.set(baseline="uniform", param=3)  # 1..16 samples
    assert panel.result.baselines.shape[0] == 3
    panel.set(baseline="expected", param=40)  # 40 is outside uniform's range, inside expected's
    assert panel.values["param"] == 40 and panel.result.baselines.shape[0] == 40 and panel.status.value == ""
    panel.set(baseline="gaussian", param=9.0)  # outside the new range: clamped to it, with a note
    assert panel.values["param"] == 1.0 and "param: 9 is above its maximum 1" in panel.status.value


# -- 11: set() checks every value before it applies any --------------------------------------------------------
@pytest.fixture(scope="module")
def tcav_panel():
    from xaikit.models import imageworld as iw
    from xaikit.models.tiny import tiny_vit
    from xaikit.widgets import TCAVPanel

    model = tiny_vit(seed=0, image_size=32)
    concepts = {c: iw.concept_images(c, 8)[:, ::2, ::2] for c in ("striped", "dotted", "bubbly")}
    zebras = {"zebra": iw.class_images("zebra", 8)[:, ::2, ::2]}
    randoms = [iw.random_images(8, seed=i)[:, ::2, ::2] for i in range(4)]
    return TCAVPanel(model, concept_sets=concepts, class_images=zebras, R=3, random_sets=randoms, pooling="mean")


def test_an_unknown_concept_changes_nothing_and_names_the_choices(tcav_panel):
    panel = tcav_panel
    panel.set(layer=0, concepts=("striped", "dotted"))
    assert panel.error is None
    before = _state(panel)
    for bad in (("nope",), ("striped", "nope")):  # a typo among good names is refused, not dropped
        panel.set(layer=1, concepts=bad)  # was: the layer moved, then a raw TraitError, panel.error None
        assert isinstance(panel.error, ValueError)
        assert str(panel.error).startswith("concepts must be names among 'striped', 'dotted', 'bubbly'")
        assert "'nope'" in str(panel.error) and "nothing was changed" in str(panel.error)
        assert "concepts must be names among" in panel.status.value
        assert _state(panel)[:3] == before[:3]  # no control moved, no update ran
    panel.set(concepts="striped")  # a str where a tuple is expected
    assert isinstance(panel.error, ValueError) and "Did you mean ('striped',)?" in str(panel.error)
    assert _state(panel)[:3] == before[:3]
    panel.set(layer=1, concepts=("striped",))
    assert panel.error is None and panel.result.layer == 1 and list(panel.result.concepts) == ["striped"]


def test_a_failing_computation_is_still_shown_in_the_panel(tcav_panel):
    panel = tcav_panel
    panel.set(concepts=("dotted",), negative="dotted")  # checked values, but nothing left to score
    assert isinstance(panel.error, ValueError) and "other than the counterpart" in panel.status.value
    assert panel.set(concepts=("striped",), negative="random") is panel.result and panel.error is None


def test_the_tcav_panels_refuse_unknown_concepts():
    from xaikit.models import imageworld as iw
    from xaikit.models.tiny import tiny_vit
    from xaikit.widgets import LayerSweepPanel, TCAVPanel

    model = tiny_vit(seed=0, image_size=32)
    concepts = {c: iw.concept_images(c, 8)[:, ::2, ::2] for c in ("striped", "dotted")}
    zebras = {"zebra": iw.class_images("zebra", 8)[:, ::2, ::2]}
    for panel in (TCAVPanel, LayerSweepPanel):
        with pytest.raises(ValueError, match=r"concepts\[1\] must be one of 'striped', 'dotted'; got 'nope'"):
            panel(model, concept_sets=concepts, class_images=zebras, concepts=("striped", "nope"))  # was dropped
        with pytest.raises(ValueError, match=r"concepts must be a list.*got 'striped'\. Did you mean \['striped'\]"):
            panel(model, concept_sets=concepts, class_images=zebras, concepts="striped")  # was: no concept at all


# -- 16: errors that name the parameter and the fix -----------------------------------------------------------
def test_a_row_past_the_last_token_is_named(bert, tok):
    from xaikit.text.attention_views import grad_weighted_attention, raw_attention, rollout

    for method in (rollout, raw_attention, grad_weighted_attention):
        with pytest.raises(ValueError, match=r"row must be a token position 0\.\.5: 'i like the movie' has 6 "
                                             r"tokens \(\[CLS\] is 0\); got 99"):
            method(bert, tok, "i like the movie", row=99)  # was IndexError from torch
    with pytest.raises(TypeError, match="row must be an int"):
        rollout(bert, tok, "i like the movie", row=1.5)
    assert rollout(bert, tok, "i like the movie", row=-1).scores.shape == (6,)  # Python's -1: the last token


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


def test_one_notebook_name_as_a_str_is_that_notebook():
    from xaikit.course import homework, notebooks

    for sources in (notebooks.sources, homework.sources):
        assert [p.stem for p in sources("01")] == ["01_gradients"]  # was every notebook: "0" and "1" matched


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


def test_an_empty_list_of_null_sets_is_named():
    from xaikit.concepts import tcav

    model = ToyViT().eval()
    red, grey = _colour_images((0.8, 0.4, 0.2), 10, 0), _colour_images((0.5, 0.5, 0.5), 10, 2)
    randoms = [_colour_images((0.1, 0.9, 0.1), 10, k) for k in range(3)]
    with pytest.raises(ValueError, match=r"null_sets is empty.*leave null_sets=None"):
        tcav.tcav_significance(model, {"red": red}, grey, target="zebra", layer=1, R=2, pooling="mean",
                               test="rank",
                               random_sets=randoms, null_sets=[])  # was an IndexError


def test_xaikit_device_is_named_with_the_valid_values(monkeypatch):
    from xaikit._config import device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("XAIKIT_DEVICE", "cuda")
    with pytest.raises(ValueError, match=r"XAIKIT_DEVICE='cuda' asks for cuda, which this machine does not have "
                                         r"\(torch sees: cpu\); set XAIKIT_DEVICE=cpu"):
        device()
    monkeypatch.setenv("XAIKIT_DEVICE", "gpu")
    with pytest.raises(ValueError, match=r"XAIKIT_DEVICE='gpu' is not a torch device \(e\.g\. 'cpu', 'cuda'"):
        device()
    monkeypatch.setenv("XAIKIT_DEVICE", "cpu")
    assert device() == torch.device("cpu")


def test_xaikit_cache_on_a_file_is_named(monkeypatch, tmp_path):
    from xaikit._config import cache_dir

    a_file = tmp_path / "cache.txt"
    a_file.write_text("not a folder")
    monkeypatch.setenv("XAIKIT_CACHE", str(a_file))
    with pytest.raises(ValueError, match=r"XAIKIT_CACHE=.*cache\.txt is a file, not a folder.*set XAIKIT_CACHE "
                                         r"to a folder"):
        cache_dir()  # was FileExistsError
    with pytest.raises(ValueError, match="is a file, not a folder"):
        cache_dir(create=False)
    monkeypatch.setenv("XAIKIT_CACHE", str(a_file / "sub"))
    with pytest.raises(ValueError, match=r"XAIKIT_CACHE=.*sub cannot be created \(.*\); set XAIKIT_CACHE to a "
                                         r"folder you can write"):
        cache_dir()  # was NotADirectoryError
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path / "fine"))
    assert cache_dir().is_dir()


def test_panel_constructors_name_their_arguments():
    from xaikit.widgets import GradientPanel, SmoothGradPanel

    with pytest.raises(TypeError, match="x1 must be a number, got str 'a'"):
        GradientPanel(x1="a")  # was a TraitError
    with pytest.raises(ValueError, match="n_images must be an int >= 1, got 0"):
        SmoothGradPanel(n_images=0)  # was an IndexError


def test_a_numpy_scalar_baseline_is_a_constant_input():
    from xaikit.tensor.integrated import integrated_gradients

    f = lambda b: torch.tanh(b).sum(1)  # noqa: E731
    want = integrated_gradients(f, [1.0, 2.0], baseline=0.25).attributions
    for scalar in (np.float32(0.25), np.float16(0.25), np.array(0.25), torch.tensor(0.25)):
        got = integrated_gradients(f, [1.0, 2.0], baseline=scalar).attributions  # was "wrap it as [0.25]", which
        assert torch.equal(got, want)  # then failed: a (1,) baseline for a (2,) input


def test_nan_along_the_path_is_not_blamed_on_the_steps():
    from xaikit.tensor.integrated import integrated_gradients, steps_for_tolerance

    root = lambda b: torch.sqrt(b).sum(1)  # noqa: E731 - NaN below 0
    with pytest.raises(ValueError, match=r"the model's output is NaN at alpha=0\.125 .*not a matter of steps"):
        integrated_gradients(root, [1.0, 2.0], baseline=-1.0, steps=8)  # was NaN attributions, "Raise steps"
    with pytest.raises(ValueError, match=r"the model's output is NaN at alpha=0 \(the baseline\)"):
        integrated_gradients(root, [1.0, 2.0], baseline=-1.0, steps=8, rule="riemann_left")
    with pytest.raises(ValueError, match=r"the model's gradient is NaN or inf at alpha=0 \(the baseline\)"):
        integrated_gradients(root, [1.0, 2.0], baseline=0.0, steps=4, rule="riemann_left")  # d sqrt / dx at 0
    with pytest.raises(ValueError, match="not a matter of steps"):
        steps_for_tolerance(root, [1.0, 2.0], baseline=-1.0)  # was a search to max_steps


def test_mixed_dtypes_in_attention_are_promoted():
    from xaikit.attention import scratch as A

    torch.manual_seed(0)
    q, k, v = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4), torch.randn(3, 4)
    out, weights = A.scaled_dot_product_attention(q, k, v)  # was "expected m1 and m2 to have the same dtype"
    want, want_w = A.scaled_dot_product_attention(q, k.double(), v.double())
    assert out.dtype == torch.float64 and torch.equal(out, want) and torch.equal(weights, want_w)
    x, w = torch.randn(3, 4, dtype=torch.float64), torch.randn(4, 4)
    assert A.self_attention(x, w, w, w).out.dtype == torch.float64
    assert A.multi_head_attention(x, w, w, w, w, n_heads=2)[0].dtype == torch.float64


def test_nan_pixels_are_refused_by_capture_attention():
    from xaikit.attention.capture import capture_attention
    from xaikit.models.tiny import tiny_vit

    pixels = torch.rand(3, 32, 32)
    pixels[0, 2, 5] = float("nan")
    with pytest.raises(ValueError, match=r"pixel_values contains NaN or inf \(first at index \(0, 0, 2, 5\)\)"):
        capture_attention(tiny_vit(seed=0), pixel_values=pixels)  # was NaN attention, drawn as a picture


def test_one_pair_where_a_list_of_pairs_belongs_is_named():
    from xaikit.concepts.tcav import pair_scores

    with pytest.raises(ValueError, match=r"got one pair \('striped', 'dotted'\); pass pairs=\[\('striped', 'dotted'\)\]"):
        pair_scores(None, {"striped": None, "dotted": None}, None, target=0, layer=0, pairs=("striped",
                                                                                             "dotted"))
    with pytest.raises(ValueError, match=r"pairs must be a list of \(concept, counterpart\) pairs"):
        pair_scores(None, {"striped": None}, None, target=0, layer=0, pairs="striped")


# == issue 42, the adversarial round's unhelpful cases (/tmp/adv/cases.md) =====================================
def test_gradient_names_a_nan_output_complex_and_meta_inputs():
    from xaikit.tensor import gradients as G

    with pytest.raises(ValueError, match=r"f returned NaN or inf"):  # was "f gave different outputs ... eval()"
        G.gradient(lambda b: (b * float("nan")).sum(1), [1.0, 2.0])
    with pytest.raises(TypeError, match=r"x is complex \(complex64\).*x\.real"):  # was a cast with a torch warning
        G.gradient(lambda b: (b ** 2).sum(1), torch.tensor([1 + 1j, 2]))
    with pytest.raises(ValueError, match=r"x is on the meta device"):  # was Tensor.item() from torch
        G.gradient(lambda b: (b ** 2).sum(1), torch.zeros(2, device="meta"))
    img = torch.rand(3, 8, 8, generator=torch.Generator().manual_seed(0))
    f = lambda b: b.flatten(1).sum(1)  # noqa: E731
    assert torch.equal(G.occlusion(f, img, window=np.int64(2)), G.occlusion(f, img, window=2))


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


def test_padding_mask_refuses_a_str():
    from xaikit.attention import scratch as A

    with pytest.raises(TypeError, match=r"attention_mask must be a tensor or a list of 0s and 1s, got str '1101'"):
        A.padding_mask("1101")


def test_panels_name_lo_hi_ig_steps_and_head():
    from xaikit.widgets import GradientSaturationPanel, ThresholdPanel

    with pytest.raises(ValueError, match=r"lo must be below hi.*lo=15, hi=5"):  # was a TraitError
        ThresholdPanel(lo=15, hi=5)
    with pytest.raises(ValueError, match=r"ig_steps must be an int >= 1, got 0"):  # it said "steps"
        GradientSaturationPanel(ig_steps=0)


def test_explorer_head_names_mean(bert, tok):
    from xaikit.widgets import AttentionExplorer

    with pytest.raises(ValueError, match=r"head must be an int 0..3 \(one head\) or 'mean'.*got 'all'"):
        AttentionExplorer(bert, tok, text="i like the movie", head="all")


def test_check_ig_riemann_takes_the_result_object():
    from xaikit.course.checks import check_ig_riemann
    from xaikit.tensor.integrated import integrated_gradients

    def mine(f, x, b, steps):
        return integrated_gradients(f, x, b, steps, "riemann_right")

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = check_ig_riemann(mine, verbose=False)
    assert not any("got None" in line for line in result.lines)


def test_tcav_images_may_be_file_names(tmp_path):
    from PIL import Image

    from xaikit.concepts.images import prepare_images

    for i in range(2):
        Image.fromarray(np.full((8, 8, 3), 40 * i, np.uint8)).save(tmp_path / f"{i}.png")
    got = prepare_images([str(tmp_path / "0.png"), tmp_path / "1.png"])
    assert [int(a.max()) for a in got] == [0, 40]
    with pytest.raises(FileNotFoundError, match=r"images\[0\] is the file name '/nope/a.png', but there is no such"):
        prepare_images(["/nope/a.png", str(tmp_path / "0.png")])


def test_notebooks_copy_names_a_folder_it_may_not_write(tmp_path, monkeypatch, capsys):
    from xaikit.__main__ import main
    from xaikit.course import copies
    from xaikit.course import notebooks as _nbtools

    def refuse(path, text):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(_nbtools, "write_text_atomic", refuse)
    with pytest.raises(PermissionError, match=r"cannot write into the folder .*ro: permission denied"):
        copies.copy_notebooks(tmp_path / "ro", ["01"], verbose=False)
    assert main(["notebooks", "copy", str(tmp_path / "ro"), "01"]) == 1
    assert "cannot write into the folder" in capsys.readouterr().err


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


def test_gradient_panel_takes_any_function_of_two_inputs():
    """``GradientPanel(f=lambda b: b.sum(1))`` showed ``AttributeError: 'function' object has no attribute
    'formula'`` in its status line."""
    from xaikit.widgets import GradientPanel

    panel = GradientPanel(f=lambda b: b.sum(1))
    assert panel.error is None and panel.result.attributions["gradient"].tolist() == [1.0, 1.0]


def test_set_seed_names_a_str():
    with pytest.raises(ValueError, match=r"seed must be a non-negative int, got str '1'; write it as a number, "
                                         r"set_seed\(1\)"):
        xaikit.set_seed("1")


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


def test_vit_relevance_takes_a_class_name_as_target():
    """``relevance(vit, pixels, method, target='zebra')`` was refused as not an int (tcav takes names)."""
    from xaikit.image import registry as vr
    from xaikit.models.tiny import tiny_vit

    vit = tiny_vit(seed=0)
    pixels = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    rmap, target = vr.relevance(vit, pixels, "attention", target="horse")
    assert target == 1 and np.allclose(rmap, vr.relevance(vit, pixels, "attention", target=1)[0])
    with pytest.raises(ValueError, match=r"target 'zebras' is not a class of this model.*Close matches: 'zebra'"):
        vr.relevance(vit, pixels, "attention", target="zebras")


def test_check_attention_reads_torchs_own_function():
    """``check_attention(torch.nn.functional.scaled_dot_product_attention)``: a builtin with no signature was
    called as ``fn(x, w_q, w_k, w_v)`` and failed with "mat1 and mat2 shapes cannot be multiplied"."""
    result = xaikit.check_attention(torch.nn.functional.scaled_dot_product_attention, verbose=False)
    assert result.passed and not any("raised" in line for line in result.lines)


def test_embedding_integrated_gradients_is_a_top_level_name():
    from xaikit.text.text_ig import embedding_integrated_gradients

    assert xaikit.embedding_integrated_gradients is embedding_integrated_gradients


def test_a_grown_cache_file_is_not_called_truncated(tmp_path):
    """An edited (longer) ``config.json`` in a cached model was reported as "(truncated?)"."""
    from tests.test_cache import Counter
    from xaikit.models import cache

    folder = tmp_path / "m"
    cache.ensure(folder, Counter(), progress=False)
    metrics = folder / "metrics.json"
    metrics.write_text(metrics.read_text() + " ", encoding="utf-8")
    assert "edited or replaced since" in cache.problems(folder)[0]
    metrics.write_text(metrics.read_text()[:5], encoding="utf-8")
    assert "truncated?" in cache.problems(folder)[0]


# -- adversarial round 3: unhelpful errors (W33, X07, X08, X15, P06, H01, L16) ---------------------------------
def test_round_3_panel_arguments_are_named():
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


def test_round_3_function_arguments_are_named(bert, tok):
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


def test_round_4_panels_and_plots_name_the_parameter():
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


def test_round_4_cli_timeouts_and_missing_model_folder_refused_up_front(capsys):
    from xaikit.__main__ import main

    for argv in (["notebooks", "run", "--timeout", "-5", "01"], ["warm", "--timeout", "-1", "01"],
                 ["warm", "--timeout", "0", "01"], ["notebooks", "run", "--timeout", "x", "01"]):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        assert "--timeout must be" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main(["warm", "--model", "/nonexistent/model", "05"])
    assert stop.value.code == 2
    err = capsys.readouterr()
    assert "--model '/nonexistent/model' looks like a folder, but no such folder exists" in err.err
    assert "running" not in err.out and "embedded models" not in err.out  # refused before any work


def test_ig_refuses_a_billion_steps_before_allocating():
    import torch

    import xaikit as xk

    with pytest.raises(ValueError, match="steps must be an int <= 100000"):
        xk.integrated_gradients(lambda b: b.sum(1), torch.ones(1, 3), steps=10**9)


def test_an_unprepared_training_seed_says_why_a_fine_tune_starts(monkeypatch, tmp_path, capsys):
    from xaikit.models import sentiment

    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path))
    monkeypatch.setenv("XAIKIT_SEED", "3")

    class Stop(Exception):
        pass

    def stub(*args, **kwargs):
        raise Stop

    monkeypatch.setattr(sentiment, "train_sentiment", stub)
    with pytest.raises(Stop):
        sentiment.ensure_embedded_sentiment(progress=False)
    out = capsys.readouterr().out
    assert "no sentiment model for training seed 3" in out or "for training seed 3" in out, out
    assert "XAIKIT_SEED" in out
