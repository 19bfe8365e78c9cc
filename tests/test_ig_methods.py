"""Path methods, DeepLIFT, exact Shapley, image baselines and layer IG on a tiny BERT (notebook 02)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn

import xaikit as xk
from xaikit.tensor.baselines import BASELINES, baseline_attributions, image_baseline
from xaikit.tensor.contrast import deeplift_rescale, exact_shapley, twin_relu_networks
from xaikit.tensor.paths import path_integrated_gradients, path_points


def sig_sum(z):  # sigmoid(x1 + x2): symmetric in x1 and x2
    return torch.sigmoid(z[:, 0] + z[:, 1])


# -- paths and symmetry ----------------------------------------------------------------------------------------
def test_straight_path_is_symmetric_others_are_not():
    x, b = torch.tensor([1.0, 1.0]), torch.zeros(2)
    straight = path_integrated_gradients(sig_sum, x, b, "straight", steps=200)
    sequential = path_integrated_gradients(sig_sum, x, b, "sequential", steps=200)
    power = path_integrated_gradients(sig_sum, x, b, "power", steps=200, powers=[1.0, 3.0])
    assert straight.attributions[0] == pytest.approx(float(straight.attributions[1]), abs=1e-6)
    s = torch.sigmoid  # x1 moves first (sigmoid's steep part), then x2 (its flatter part)
    torch.testing.assert_close(sequential.attributions, torch.stack([s(torch.tensor(1.0)) - 0.5,
                                                                     s(torch.tensor(2.0)) - s(torch.tensor(1.0))]))
    assert abs(float(power.attributions[0] - power.attributions[1])) > 0.02
    for r in (straight, sequential, power):  # every path method is complete
        assert r.gap == pytest.approx(0.0, abs=1e-4)


def test_straight_path_equals_integrated_gradients():
    x, b = torch.tensor([0.3, -1.2, 2.0]), torch.tensor([0.1, 0.0, -0.5])
    f = lambda z: torch.tanh(z[:, 0] * z[:, 1] + z[:, 2])  # noqa: E731
    ours = path_integrated_gradients(f, x, b, "straight", steps=30, rule="riemann_right")
    ig = xk.integrated_gradients(f, x, b, steps=30, rule="riemann_right")
    torch.testing.assert_close(ours.attributions, ig.attributions)


def test_path_points_start_at_baseline_and_end_at_input():
    x, b = torch.tensor([2.0, -1.0]), torch.tensor([0.0, 1.0])
    for kind in ("straight", "sequential", "power"):
        pts, _ = path_points(kind, x, b, [0.0, 1.0])
        torch.testing.assert_close(pts[0], b)
        torch.testing.assert_close(pts[1], x)
    pts, _ = path_points("sequential", x, b, [0.25, 0.5, 0.75])
    torch.testing.assert_close(pts, torch.tensor([[1.0, 1.0], [2.0, 1.0], [2.0, 0.0]]))
    with pytest.raises(ValueError, match="order must be a permutation"):
        path_points("sequential", x, b, [0.5], order=[0, 0])
    with pytest.raises(ValueError, match="path must be one of"):
        path_integrated_gradients(sig_sum, x, b, "zigzag")


# -- implementation invariance ---------------------------------------------------------------------------------
def test_twin_networks_equal_functions_equal_ig_unequal_deeplift():
    f, g = twin_relu_networks()
    grid = torch.randn(500, 2) * 3
    torch.testing.assert_close(f(grid), g(grid))
    x = torch.tensor([3.0, 1.0])
    ig_f = xk.integrated_gradients(f, x, steps=64, rule="riemann_middle")
    ig_g = xk.integrated_gradients(g, x, steps=64, rule="riemann_middle")
    torch.testing.assert_close(ig_f.attributions, ig_g.attributions)
    dl_f, dl_g = deeplift_rescale(f, x), deeplift_rescale(g, x)
    torch.testing.assert_close(dl_f, torch.tensor([1.5, -0.5]))  # worked by hand in the docstring's example
    torch.testing.assert_close(dl_g, torch.tensor([2.0, -1.0]))
    assert float(dl_f.sum()) == pytest.approx(1.0) and float(dl_g.sum()) == pytest.approx(1.0)


def test_deeplift_matches_captum_on_a_random_relu_mlp():
    from captum.attr import DeepLift

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 6), nn.ReLU(), nn.Linear(6, 3)).eval()
    x, b = torch.randn(5), torch.randn(5)
    ours = deeplift_rescale(model, x, b, target=1)
    theirs = DeepLift(model).attribute(x[None], b[None], target=1)[0]
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-4)
    with pytest.raises(TypeError, match="only Linear and ReLU"):
        deeplift_rescale(nn.Sequential(nn.Linear(5, 2), nn.Tanh()), x)


# -- Shapley ---------------------------------------------------------------------------------------------------
def test_ig_equals_exact_shapley_on_an_additive_model():
    def additive(z):
        return torch.sin(z[:, 0]) + z[:, 1] ** 3 + torch.exp(0.5 * z[:, 2]) - 2 * z[:, 3]

    x, b = torch.tensor([1.0, -0.7, 2.0, 0.4]), torch.tensor([0.2, 0.5, -1.0, 0.0])
    ig = xk.integrated_gradients(additive, x.double(), b.double(), steps=32, rule="gausslegendre")
    phi = exact_shapley(additive, x.double(), b.double())
    torch.testing.assert_close(ig.attributions, phi, atol=1e-8, rtol=1e-8)


def test_exact_shapley_on_an_interaction_splits_it_evenly():
    phi = exact_shapley(lambda z: z[:, 0] * z[:, 1], torch.tensor([2.0, 3.0]))
    torch.testing.assert_close(phi, torch.tensor([3.0, 3.0]))
    with pytest.raises(ValueError, match="max_features"):
        exact_shapley(lambda z: z.sum(1), torch.ones(13))


# -- image baselines -------------------------------------------------------------------------------------------
def image_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3)).eval()


def test_image_baselines_shapes_ranges_and_meaning():
    x = torch.rand(1, 4, 4)
    for kind in BASELINES[:-1]:
        base = image_baseline(x, kind, seed=1)
        assert base.shape == x.shape and float(base.min()) >= 0.0 and float(base.max()) <= 1.0
    torch.testing.assert_close(image_baseline(x, "constant", 0.3), torch.full_like(x, 0.3))
    far = image_baseline(x, "max_distance")
    assert bool(((far - x).abs() >= 0.5 - 1e-6).all())
    blurred = image_baseline(x, "blurred", 2.0)
    assert float(blurred.std()) < float(x.std())
    with pytest.raises(ValueError, match="kind must be one of"):
        image_baseline(x, "pink")
    with pytest.raises(ValueError, match="param must be <= 1.0"):
        image_baseline(x, "constant", 2.0)


def test_baseline_blindness_and_expected_gradients():
    model = image_model()
    x = torch.rand(1, 4, 4)
    x[0, 0, :] = 0.0  # a black row
    zero = baseline_attributions(model, x, "zero", target=0)
    assert bool((zero.attributions[0, 0, :] == 0).all())  # pixels equal to the baseline get nothing (exact: x - x' = 0)
    assert zero.relative_gap < 1e-3
    data = torch.rand(20, 1, 4, 4)
    eg = baseline_attributions(model, x, "expected", 5, data=data, target=0)
    assert eg.baselines.shape == (5, 1, 4, 4)
    # completeness against the mean baseline output
    assert float(eg.attributions.sum()) == pytest.approx(eg.f_x - float(eg.f_baselines.mean()), abs=1e-4)
    with pytest.raises(ValueError, match="needs data="):
        baseline_attributions(model, x, "expected")


# -- layer IG on a tiny BERT -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bert():
    from xaikit.models.tiny import tiny_bert, tiny_tokenizer

    model = tiny_bert(seed=0)
    torch.manual_seed(1)
    with torch.no_grad():  # larger random weights so the logits depend visibly on the words
        for p in model.parameters():
            if p.ndim == 2:
                p.normal_(0.0, 0.3)
    return model, tiny_tokenizer()


@pytest.mark.parametrize("rule", ["riemann_right", "gausslegendre"])
def test_layer_ig_equals_captum(bert, rule):
    from captum.attr import LayerIntegratedGradients

    from xaikit.models.arch import embeddings_module
    from xaikit.text.text_ig import baseline_ids, text_integrated_gradients

    model, tok = bert
    text = "a clever piece of cinema"
    scores = text_integrated_gradients(model, tok, text, target=1, baseline="pad", steps=16, rule=rule)
    enc = tok(text, return_tensors="pt")
    lig = LayerIntegratedGradients(lambda ids, mask: model(input_ids=ids, attention_mask=mask).logits,
                                   embeddings_module(model))
    theirs, delta = lig.attribute(enc["input_ids"], baseline_ids(enc["input_ids"], tok, "pad"), target=1,
                                  n_steps=16, method=rule, additional_forward_args=(enc["attention_mask"],),
                                  return_convergence_delta=True)
    torch.testing.assert_close(scores.detail.attributions, theirs[0], atol=1e-5, rtol=0)
    assert scores.scores == pytest.approx(theirs[0].sum(-1).numpy(), abs=1e-5)
    assert scores.detail.gap == pytest.approx(float(delta), abs=1e-4)
    assert scores.tokens == ["[CLS]", "a", "clever", "piece", "of", "cinema", "[SEP]"]
    assert abs(scores.detail.f_x - scores.detail.f_baseline) > 0.05  # the test can see a difference


@pytest.mark.parametrize("baseline", ["pad", "mask", "unk", "zero"])
def test_text_baselines_keep_cls_sep_and_are_complete(bert, baseline):
    from xaikit.text.text_ig import baseline_ids, text_integrated_gradients

    model, tok = bert
    scores = text_integrated_gradients(model, tok, "i like the movie", baseline=baseline, steps=32,
                                       rule="gausslegendre")
    assert scores.scores[0] == 0.0 and scores.scores[-1] == 0.0  # [CLS] and [SEP] do not move (exact: x - x' = 0)
    assert scores.detail.relative_gap < 0.05
    assert float(scores.scores.sum()) == pytest.approx(scores.detail.f_x - scores.detail.f_baseline,
                                                       abs=abs(scores.detail.gap) + 1e-6)
    ids = tok("i like the movie", return_tensors="pt")["input_ids"]
    base = baseline_ids(ids, tok, baseline)
    assert base[0, 0] == tok.cls_token_id and base[0, -1] == tok.sep_token_id
    if baseline != "zero":
        assert bool((base[0, 1:-1] == getattr(tok, f"{baseline}_token_id")).all())


def test_text_ig_bad_input(bert):
    from xaikit.text.text_ig import text_integrated_gradients

    model, tok = bert
    with pytest.raises(ValueError, match="baseline must be one of"):
        text_integrated_gradients(model, tok, "i like it", baseline="blank")
    with pytest.raises(ValueError, match="target must be an int <= 1"):
        text_integrated_gradients(model, tok, "i like it", target=2)
    with pytest.raises(ValueError, match="text is empty"):
        text_integrated_gradients(model, tok, "  ")


def test_text_ig_batches_and_training_mode(bert):
    from xaikit.text.text_ig import text_integrated_gradients

    model, tok = bert
    full = text_integrated_gradients(model, tok, "she hates the book", target=0, steps=12)
    chunked = text_integrated_gradients(model, tok, "she hates the book", target=0, steps=12, batch_size=5)
    assert chunked.scores == pytest.approx(full.scores, abs=1e-6)
    model.train()
    with pytest.warns(UserWarning, match="eval"):
        again = text_integrated_gradients(model, tok, "she hates the book", target=0, steps=12)
    assert not model.training and again.scores == pytest.approx(full.scores, abs=1e-6)
    assert model.config._attn_implementation == "eager"  # IG borrowed SDPA and gave it back
    eager = text_integrated_gradients(model, tok, "she hates the book", target=0, steps=12, fast_attention=False)
    assert eager.scores == pytest.approx(full.scores, abs=1e-5)


def _linear(x):
    w = torch.arange(1.0, x.shape[-1] + 1)
    return (x * w).sum(-1)


def test_baseline_attributions_warns_about_a_completeness_gap():
    from xaikit.tensor.baselines import baseline_attributions
    from xaikit.tensor.integrated import CompletenessWarning

    def f(batch):
        return batch.flatten(1).pow(6).sum(1)  # curved along the path: two Riemann nodes miss badly

    x = torch.linspace(0.2, 1.0, 16).reshape(1, 4, 4)
    with pytest.warns(CompletenessWarning, match=r"baseline_attributions: .*completeness gap.*Raise steps"):
        coarse = baseline_attributions(f, x, "zero", steps=2, rule="riemann_right")
    assert coarse.relative_gap > 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompletenessWarning)  # enough steps: silent
        fine = baseline_attributions(f, x, "zero", steps=32, rule="gausslegendre")
    assert fine.relative_gap < 1e-3


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


def test_expected_baseline_refuses_more_samples_than_data():
    from xaikit.tensor.baselines import baseline_attributions

    f = lambda x: x.flatten(1).sum(-1)  # noqa: E731
    x, data = torch.rand(1, 4, 4), torch.rand(5, 1, 4, 4)
    with pytest.raises(ValueError, match=r"param \(k, .*\) is 100 but data holds 5 images; pass param <= 5"):
        baseline_attributions(f, x, "expected", param=100, data=data)
    assert len(baseline_attributions(f, x, "expected", param=5, data=data, steps=4).baselines) == 5


def test_image_baseline_seed_must_be_an_int():
    from xaikit.tensor.baselines import baseline_attributions, image_baseline

    with pytest.raises(TypeError, match=r"seed must be an int, got float 2.7"):
        image_baseline(torch.rand(1, 4, 4), "uniform", seed=2.7)
    with pytest.raises(TypeError, match=r"seed must be an int"):
        baseline_attributions(lambda x: x.flatten(1).sum(-1), torch.rand(1, 4, 4), "uniform", seed=2.7)


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


def test_embedding_ig_refuses_a_mask_that_attends_to_no_token():
    from xaikit.models.tiny import tiny_bert
    from xaikit.text.text_ig import embedding_integrated_gradients

    model = tiny_bert(seed=2)
    ids = torch.tensor([[2, 40, 41, 42, 3]])
    with pytest.raises(ValueError, match=r"attention_mask is all 0: no token is attended to"):
        embedding_integrated_gradients(model, ids, attention_mask=torch.zeros_like(ids), steps=4)
    ones = embedding_integrated_gradients(model, ids, attention_mask=torch.ones(5), steps=4)  # float 0/1 reads
    assert torch.allclose(ones.attributions, embedding_integrated_gradients(model, ids, steps=4).attributions)
