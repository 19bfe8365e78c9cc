"""Sanity checks for saliency maps (Adebayo et al. 2018; xaikit.lab.tensor_sanity, notebook 01 section 5).

Oracles: scipy's ``spearmanr`` for the rank correlation; SSIM of a map with itself (1), of two constant maps
(closed form), and a by-hand SSIM over every 7x7 window (Wang et al. 2004's formula) for scikit-image's;
the parameters of the randomised copy compared name by name with the original's (exactly the top ``k``
layers differ); identical maps and a similarity of 1 (to rounding) when nothing is randomised.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from torch import nn

import xaikit
from xaikit.lab import tensor_sanity as S
from xaikit.tensor import toys

ONES = S.Similarity(*[pytest.approx(1.0, abs=1e-12)] * 3)  # two identical maps, up to rounding


@pytest.fixture(scope="module")
def trained():
    return toys.digits_classifier(seed=0, epochs=2, progress=False, disk_cache=False)


def _state(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


# -- Spearman ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("absolute", [False, True])
def test_spearman_matches_scipy(absolute):
    from scipy.stats import spearmanr

    g = torch.Generator().manual_seed(0)
    for trial in range(20):
        shape = (1, 8, 8) if trial % 2 else (5, 7)
        a = torch.randn(shape, generator=g)
        b = a + torch.randn(shape, generator=g) * (trial / 10)
        if trial % 3 == 0:  # ties, also across signs once absolute values are taken
            a, b = a.round(), (b * 2).round()
        x, y = (a.abs(), b.abs()) if absolute else (a, b)
        expected = spearmanr(x.numpy().ravel(), y.numpy().ravel()).statistic
        assert S.spearman(a, b, absolute=absolute) == pytest.approx(expected, abs=1e-12)


def test_spearman_known_values():
    a = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert S.spearman(a, a ** 3) == pytest.approx(1.0, abs=1e-12)  # any increasing function keeps the ranking
    assert S.spearman(a, -a) == pytest.approx(-1.0, abs=1e-12)
    assert S.spearman(a, -a, absolute=True) == pytest.approx(1.0, abs=1e-12)  # sign flips vanish with |values|
    assert math.isnan(S.spearman(a, torch.ones(4)))  # a constant map has no ranking


# -- SSIM ----------------------------------------------------------------------------------------------------
def _ssim_by_hand(x: np.ndarray, y: np.ndarray, data_range: float, w: int = 7) -> float:
    """Mean SSIM over every w x w window, from Wang et al.'s formula (sample covariances, K1 = 0.01, K2 = 0.03)."""
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    values = []
    for i in range(x.shape[0] - w + 1):
        for j in range(x.shape[1] - w + 1):
            p, q = x[i:i + w, j:j + w].ravel(), y[i:i + w, j:j + w].ravel()
            mp, mq = p.mean(), q.mean()
            vp, vq = p.var(ddof=1), q.var(ddof=1)
            cov = ((p - mp) * (q - mq)).sum() / (len(p) - 1)
            values.append((2 * mp * mq + c1) * (2 * cov + c2) / ((mp ** 2 + mq ** 2 + c1) * (vp + vq + c2)))
    return float(np.mean(values))


def test_ssim_against_the_formula():
    g = torch.Generator().manual_seed(1)
    for shape in ((1, 8, 8), (9, 11)):
        a = torch.randn(shape, generator=g)
        b = 0.6 * a + torch.randn(shape, generator=g)
        for absolute in (True, False):
            x, y = (a.abs(), b.abs()) if absolute else (a, b)
            x, y = (x / x.abs().max()).squeeze(0).double().numpy(), (y / y.abs().max()).squeeze(0).double().numpy()
            expected = _ssim_by_hand(x, y, 1.0 if absolute else 2.0)
            assert S.ssim(a, b, absolute=absolute) == pytest.approx(expected, abs=1e-10)


def test_ssim_known_values():
    a = torch.rand(1, 8, 8, generator=torch.Generator().manual_seed(2))
    assert S.ssim(a, a) == pytest.approx(1.0, abs=1e-12)
    assert S.ssim(a, 3.5 * a) == pytest.approx(1.0, abs=1e-12)  # each map is scaled by its largest value
    # two constant maps 1 and -1 (signed, data range 2): no structure or contrast term, only the means:
    # (2 * 1 * (-1) + C1) / (1 + 1 + C1) with C1 = (0.01 * 2)^2, in every window
    ones = torch.ones(8, 8)
    c1 = (0.01 * 2) ** 2
    assert S.ssim(ones, -ones, absolute=False) == pytest.approx((-2 + c1) / (2 + c1), abs=1e-12)
    assert S.ssim(ones, -ones, absolute=True) == pytest.approx(1.0, abs=1e-12)
    # small maps take the largest odd window that fits
    small = torch.randn(5, 5, generator=torch.Generator().manual_seed(3))
    other = torch.randn(5, 5, generator=torch.Generator().manual_seed(4))
    x = (small.abs() / small.abs().max()).double().numpy()
    y = (other.abs() / other.abs().max()).double().numpy()
    assert S.ssim(small, other) == pytest.approx(_ssim_by_hand(x, y, 1.0, w=5), abs=1e-10)


def test_similarity_fields():
    a = torch.randn(1, 8, 8, generator=torch.Generator().manual_seed(5))
    b = torch.randn(1, 8, 8, generator=torch.Generator().manual_seed(6))
    s = S.similarity(a, b)
    # exact: the same functions on the same maps
    assert (s.spearman, s.spearman_abs, s.ssim) == (S.spearman(a, b), S.spearman(a, b, True), S.ssim(a, b))
    assert S.similarity(a, a) == ONES


# -- cascading randomisation ---------------------------------------------------------------------------------
def test_layers_from_top(trained):
    assert S.layers_from_top(trained.model) == ["head", "conv2", "conv1"]
    assert S.randomised_layers(trained.model, 2) == ["head", "conv2"]


@pytest.mark.parametrize("upto", [0, 1, 2, 3])
def test_randomisation_changes_exactly_the_top_layers(trained, upto):
    model = trained.model
    before = _state(model)
    randomised = S.cascading_randomisation(model, upto=upto, seed=7)
    after = _state(randomised)
    assert after.keys() == before.keys()
    changed = {name for name in before if not torch.equal(before[name], after[name])}  # exact: copied or re-drawn
    top = ["head", "conv2", "conv1"][:upto]
    expected = {f"{layer}.{p}" for layer in top for p in ("weight", "bias")}
    assert changed == expected
    for name in expected:  # re-drawn, not nudged: almost every number differs
        assert (before[name] != after[name]).float().mean() > 0.95, name
    for name, value in _state(model).items():  # the user's model is untouched
        assert torch.equal(value, before[name]), name  # exact: nothing may have written to it
    assert randomised is not model and randomised.training == model.training
    shared = {p.data_ptr() for p in model.parameters()} & {p.data_ptr() for p in randomised.parameters()}
    assert not shared


def test_randomisation_is_seeded_and_nested(trained):
    one = _state(S.cascading_randomisation(trained.model, upto=1, seed=3))
    three = _state(S.cascading_randomisation(trained.model, upto=3, seed=3))
    again = _state(S.cascading_randomisation(trained.model, upto=3, seed=3))
    other = _state(S.cascading_randomisation(trained.model, upto=3, seed=4))
    assert all(torch.equal(three[k], again[k]) for k in three)  # exact: the same seeded draws
    assert torch.equal(one["head.weight"], three["head.weight"])  # exact: the cascade is nested (the same seeded draw)
    assert not torch.equal(three["head.weight"], other["head.weight"])  # exact: another seed, other draws


def test_randomised_layers_follow_their_initialisation(trained):
    """The new weights come from the layer's own initialisation: a fresh layer built under the same seed."""
    randomised = S.cascading_randomisation(trained.model, upto=1, seed=11)
    fresh = nn.Linear(256, 10)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(S._layer_seed(11, "head"))
        fresh.reset_parameters()
    assert torch.equal(randomised.head.weight, fresh.weight)  # exact: re-drawn by the same seeded call
    bound = 1 / math.sqrt(256)  # kaiming-uniform(a=sqrt 5) for nn.Linear: |w| < 1/sqrt(fan_in)
    assert float(randomised.head.weight.detach().abs().max()) <= bound


def test_layer_without_reset_parameters():
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.linspace(1.0, 3.0, 50))

        def forward(self, x):
            return x * self.w

    model = nn.Sequential(Scale(), nn.Linear(50, 2))
    before = _state(model)
    randomised = S.cascading_randomisation(model, upto=2, seed=0)
    w = randomised[0].w.detach()
    assert not torch.equal(w, before["0.w"])  # exact: re-drawn
    assert abs(float(w.mean()) - 2.0) < 0.5 and 0.3 < float(w.std()) < 1.0  # mean 2, std 0.59 of the original


def test_zero_layers_gives_identical_maps(trained):
    x = trained.data.test_x[3]
    target = int(trained.model(x[None]).argmax())
    maps = S.sanity_maps(trained.model, x, target=target, n=8, steps=8)
    same = S.sanity_maps(S.cascading_randomisation(trained.model, upto=0), x, target=target, n=8, steps=8)
    for name in S.METHODS:
        assert torch.equal(maps[name], same[name]), name  # exact: upto=0 is a copy; the same seeded calls
        assert S.similarity(maps[name], same[name]) == ONES, name


def test_sanity_maps_are_the_methods(trained):
    x = trained.data.test_x[1]
    m = S.sanity_maps(trained.model, x, target=4, n=6, steps=8, seed=2)
    torch.testing.assert_close(m["gradient"], xaikit.gradient(trained.model, x, target=4), rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(m["gradient x input"], x * m["gradient"], rtol=1e-5, atol=1e-7)
    assert torch.allclose(m["SmoothGrad"], xaikit.smoothgrad(trained.model, x, n=6, seed=2, target=4,
                                                             value_range=(0, 1)))
    ig = xaikit.integrated_gradients(trained.model, x, steps=8, rule="gausslegendre", target=4)
    assert torch.allclose(m["Integrated Gradients"], ig.attributions)


def test_cascade_scores(trained):
    images = trained.data.test_x[:3]
    scores = S.cascade_scores(trained.model, images, seed=1, n=6, steps=8)
    assert scores.values.shape == (4, 4, 3, 3)
    np.testing.assert_allclose(scores.values[0], 1.0, rtol=0, atol=1e-12)  # step 0: the maps against themselves
    # step k compares with the maps of cascading_randomisation(model, k): check one entry by hand
    x = images[2]
    target = int(trained.model(x[None]).argmax())
    original = S.sanity_maps(trained.model, x, target=target, methods=["gradient"])["gradient"]
    randomised = S.sanity_maps(S.cascading_randomisation(trained.model, 2, seed=1), x, target=target,
                               methods=["gradient"])
    s = S.similarity(original, randomised["gradient"])
    # (cascade_scores runs on one thread, this test on torch's default: the last bits of the maps may differ)
    np.testing.assert_allclose(scores.values[2, 0, 2], (s.spearman, s.spearman_abs, s.ssim), atol=1e-6)
    assert scores.mean("ssim").shape == (4, 4)


def test_on_a_far_model(trained):
    """A float64 copy on xaikit.device(): CPU tensors handed to it unmoved would fail; results come back on
    the CPU, and the randomised weights are those drawn for the CPU float32 model."""
    far = copy.deepcopy(trained.model).to(device=xaikit.device(), dtype=torch.float64)
    randomised = S.cascading_randomisation(far, upto=2, seed=5)
    near = S.cascading_randomisation(trained.model, upto=2, seed=5)
    assert randomised.head.weight.device == far.head.weight.device and randomised.head.weight.dtype == torch.float64
    torch.testing.assert_close(randomised.head.weight.cpu().float(), near.head.weight)
    x = trained.data.test_x[0]
    maps = S.sanity_maps(randomised, x, target=3, n=4, steps=4)
    for name, m in maps.items():
        assert m.device.type == "cpu", name
    torch.testing.assert_close(maps["gradient"].float(), xaikit.gradient(near, x, target=3), atol=1e-5, rtol=1e-4)


# -- data randomisation ------------------------------------------------------------------------------------------
def test_shuffled_labels_are_a_seeded_permutation(trained):
    y = trained.data.train_y
    s0 = toys.shuffled_labels(y, 0)
    assert torch.equal(s0, toys.shuffled_labels(y, 0)) and not torch.equal(s0, toys.shuffled_labels(y, 1))  # exact: integers
    assert torch.equal(torch.bincount(s0, minlength=10), torch.bincount(y, minlength=10))  # exact: integer counts, the same labels
    assert (s0 == y).float().mean() < 0.2  # ~10% agree by chance


def test_data_randomised_model():
    """Trained on the permuted labels (it fits them better than the true ones), near chance on the test
    digits, and not collapsed to a constant: its gradients are not 0."""
    shuffled = S.data_randomised_digits(seed=1, progress=False, disk_cache=False)
    assert shuffled.shuffled_labels and isinstance(shuffled.model, toys.DigitsClassifier)
    assert shuffled.epochs == 30  # fast mode
    data = shuffled.data
    with torch.no_grad():
        on_true = float((shuffled.model(data.train_x).argmax(1) == data.train_y).float().mean())
    assert shuffled.train_accuracy > 0.2 and shuffled.train_accuracy > on_true + 0.1  # 0.35 measured for seed 1
    assert shuffled.accuracy < 0.3  # near chance on the true test labels: nothing about digits was learned
    for x in data.test_x[:4]:
        assert xaikit.gradient(shuffled.model, x).abs().sum() > 0
    again = S.data_randomised_digits(seed=1, progress=False, disk_cache=False)
    assert again is shuffled  # cached for the session


# -- bad input ---------------------------------------------------------------------------------------------------
def test_bad_input(trained):
    model = trained.model
    with pytest.raises(ValueError, match=r"upto must be an int <= 3.*head, conv2, conv1"):
        S.cascading_randomisation(model, upto=4)
    with pytest.raises(ValueError, match="upto must be an int >= 0"):
        S.cascading_randomisation(model, upto=-1)
    with pytest.raises(TypeError, match="upto must be an int"):
        S.cascading_randomisation(model, upto=1.5)
    with pytest.raises(ValueError, match="has no parameters.*nothing to randomise"):
        S.cascading_randomisation(nn.ReLU(), upto=0)
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        S.cascading_randomisation(lambda b: b.sum(1), upto=0)
    with pytest.raises(ValueError, match=r"other must have the same shape as original: original is \(1, 8, 8\)"):
        S.similarity(torch.ones(1, 8, 8), torch.ones(8, 8))
    with pytest.raises(ValueError, match="b must have the same shape as a"):
        S.spearman(torch.ones(4), torch.ones(5))
    with pytest.raises(ValueError, match="at least 3x3"):
        S.ssim(torch.ones(2, 2), torch.ones(2, 2))
    with pytest.raises(ValueError, match=r"methods\[0\] must be one of"):
        S.sanity_maps(model, trained.data.test_x[0], target=0, methods=["LRP"])
    with pytest.raises(ValueError, match="images must be a non-empty batch"):
        S.cascade_scores(model, trained.data.test_x[:0])
    with pytest.raises(ValueError, match=r"images must be a batch \(N, ...\) of inputs the model takes"):
        S.cascade_scores(model, trained.data.test_x[0])  # one image, no batch dimension: was a bare RuntimeError
    with pytest.raises(ValueError, match="a is empty"):
        S.spearman(torch.ones(0), torch.ones(0))
    with pytest.raises(TypeError, match="shuffle_labels must be True or False"):
        toys.digits_classifier(seed=0, epochs=1, shuffle_labels="yes")


# -- the panel ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def panel(trained):
    from xaikit import widgets as W

    shuffled = toys.digits_classifier(seed=0, epochs=3, progress=False, disk_cache=False, shuffle_labels=True)
    return W.SanityCheckPanel(trained, shuffled, n=6, steps=8)


def test_panel_follows_the_slider(panel, trained):
    p = panel
    r0 = p.set(layers=0, image=0, values="absolute")
    assert p.error is None, p.error_traceback
    for m in S.METHODS:  # layers=0 is the trained model: the same maps, similarity 1
        assert torch.equal(r0.maps["randomised"][m], r0.maps["trained"][m])  # exact: a copy, the same seeded calls
        assert r0.similarity["randomised"][m] == ONES
    png = p.image.value
    r2 = p.set(layers=2)
    assert p.error is None and p.image.value != png
    assert r2.randomised == ["head", "conv2"]
    x = trained.data.test_x[0]
    expected = S.sanity_maps(S.cascading_randomisation(trained.model, 2, seed=0), x, target=r2.target, n=6,
                             steps=8)
    for m in S.METHODS:  # the panel shows the library's maps for the model the slider names (the panel
        # computes on one thread, so the last bits may differ)
        torch.testing.assert_close(r2.maps["randomised"][m], expected[m], rtol=1e-5, atol=1e-7)
        # exact: the same function on the same maps
        assert r2.similarity["randomised"][m] == S.similarity(r2.maps["trained"][m], r2.maps["randomised"][m])
    title = p._axes[1, 1].get_title()
    assert f"{r2.similarity['randomised']['gradient'].spearman_abs:.2f}" in title
    # the figure shows the maps: absolute values scaled to [0, 1]
    shown = np.asarray(p._ims[1][0].get_array())
    g = r2.maps["randomised"]["gradient"][0].abs()
    np.testing.assert_allclose(shown, (g / g.max()).numpy(), rtol=1e-6)
    r3 = p.set(values="signed")
    assert p.error is None and float(np.asarray(p._ims[1][0].get_array()).min()) < 0
    assert p._ims[1][0].get_cmap().name == "RdBu_r"
    assert r3.target == int(trained.model(x[None]).argmax())  # every row explains the trained model's class
    p.set(values="absolute")


def test_panel_clamps_and_reports(panel):
    p = panel
    p.set(layers=99)  # beyond the slider: clamped to every layer, with a note
    assert p.error is None and p.result.layers == 3
    assert "above its maximum" in p.status.value
    p.set(image="seven")  # not among the images: an error in the panel, nothing changed
    assert p.error is not None and "image" in str(p.error)
    p.set(layers=1)
    assert p.error is None and p.result.layers == 1



def test_panel_constructor_names_a_bad_argument(trained, panel):
    from xaikit import widgets as W

    with pytest.raises(ValueError, match="values must be one of 'absolute', 'signed'; got 'log'"):
        W.SanityCheckPanel(trained, panel.shuffled, values="log")  # was a TraitError naming nothing
    with pytest.raises(ValueError, match="n_images must be an int >= 1"):
        W.SanityCheckPanel(trained, panel.shuffled, n_images=0)  # was an IndexError


def test_compare_models(trained):
    """The data randomisation comparison, entry by entry against sanity_maps and similarity."""
    other = toys.digits_classifier(seed=1, epochs=1, progress=False, disk_cache=False)
    images = trained.data.test_x[5:7]
    values = S.compare_models(trained.model, other.model, images, n=4, steps=4)
    assert values.shape == (4, 2, 3)
    x = images[1]
    t = int(trained.model(x[None]).argmax())
    a = S.sanity_maps(trained.model, x, target=t, n=4, steps=4)
    b = S.sanity_maps(other.model, x, target=t, n=4, steps=4)
    s = S.similarity(a["SmoothGrad"], b["SmoothGrad"])
    np.testing.assert_allclose(values[2, 1], (s.spearman, s.spearman_abs, s.ssim), atol=1e-6)
    np.testing.assert_allclose(S.compare_models(trained.model, trained.model, images, n=4, steps=4), 1.0,
                               rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="targets must have one class per image"):
        S.compare_models(trained.model, other.model, images, targets=[1])


def test_panel_without_a_shuffled_model_trains_one_with_the_shuffled_default_epochs(trained, monkeypatch):
    """The shuffled-label model needs its own, longer training (60 epochs; 30 fast): with the trained model's
    12 it fitted 19% of its labels instead of 43% (seed 0)."""
    from xaikit import widgets as W

    calls = []
    monkeypatch.setattr(S, "data_randomised_digits", lambda **kw: calls.append(kw) or trained)
    W.SanityCheckPanel(trained, n=2, steps=2)
    assert calls == [{"seed": trained.seed}]


def test_a_method_registered_at_run_time_reaches_the_checks_and_the_panel(trained, panel):
    """The tensor registry is read live: a method added after import is a name sanity_maps, cascade_scores
    and the sanity panel accept, with no list to edit."""
    from xaikit.tensor import registry

    absolute = registry.TensorMethod("absolute gradient", lambda f, x, target: S.sanity_maps(
        f, x, target=target, methods=["gradient"])["gradient"].abs())
    registry.register(absolute)
    try:
        x = trained.data.test_x[0]
        maps = S.sanity_maps(trained.model, x, target=3, methods=["gradient", "absolute gradient"])
        assert torch.equal(maps["absolute gradient"], maps["gradient"].abs())  # exact: the same map, abs taken
        scores = S.cascade_scores(trained.model, trained.data.test_x[:2], methods=["absolute gradient"])
        assert scores.methods == ("absolute gradient",) and scores.values.shape[1] == 1
        from xaikit import widgets as W

        shown = W.SanityCheckPanel(trained, panel.shuffled, n=6, steps=8, methods=["gradient", "absolute gradient"])
        assert shown.error is None and set(shown.result.maps["trained"]) == {"gradient", "absolute gradient"}
    finally:
        registry.unregister("absolute gradient")
    with pytest.raises(ValueError, match="absolute gradient"):
        S.sanity_maps(trained.model, x, target=3, methods=["absolute gradient"])
    assert registry.names() == S.METHODS
