"""Gradient methods of notebook 01 against analytic answers, plain loops and Captum as an oracle."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from xaikit.models import digits
from xaikit.tensor import gradients as G
from xaikit.tensor import toys


def mlp(seed: int = 0, d_in: int = 6, d_out: int = 3, act=torch.nn.Tanh):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(d_in, 16), act(), torch.nn.Linear(16, d_out))
    return net.eval()


def cnn(seed: int = 0):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.Tanh(), torch.nn.Flatten(),
                              torch.nn.Linear(4 * 6 * 6, 5))
    return net.eval()


# -- analytic answers ------------------------------------------------------------------------------------------
def test_saturating_gradients_vanish_at_1_1_although_inputs_matter():
    x = torch.tensor([1.0, 1.0])
    assert torch.equal(G.gradient(toys.saturating, x), torch.zeros(2))  # exact: slope 0 above the kink
    assert torch.equal(G.grad_times_input(toys.saturating, x), torch.zeros(2))  # exact: x * 0
    assert float(toys.saturating(x[None]) - toys.saturating(torch.zeros(1, 2))) == 1.0  # exact: 1 - 0
    # below the kink the gradient is (1, 1)
    assert torch.equal(G.gradient(toys.saturating, [0.2, 0.3]), torch.ones(2))  # exact: slope 1 below the kink


def test_occlusion_on_saturating_also_gives_zero_at_1_1():
    # setting either input to 0 leaves x1 + x2 = 1: f stays 1, so occlusion misses both inputs too
    assert torch.equal(G.occlusion(toys.saturating, [1.0, 1.0]), torch.zeros(2))  # exact: 1 - min(1, 1)
    assert torch.allclose(G.occlusion(toys.saturating, [0.25, 0.5]), torch.tensor([0.25, 0.5]))


def test_thresholded_gradient_jumps_at_10():  # exact: ReLU's slope is 0 or 1
    assert float(G.gradient(toys.thresholded, [9.99])[0]) == 0.0
    assert float(G.gradient(toys.thresholded, [10.01])[0]) == 1.0


@pytest.mark.parametrize("beta", [0.5, 1.0, 10.0, 100.0])
def test_softplus_is_within_log2_over_beta_of_relu(beta):
    x = torch.linspace(0, 20, 2001, dtype=torch.float64)[:, None]
    gap = toys.softplus_relu(beta)(x) - toys.thresholded(x)
    assert float(gap.min()) >= -1e-12  # softplus >= relu, up to rounding of (beta z) / beta
    assert float(gap.max()) <= math.log(2) / beta + 1e-5
    assert float(gap.max()) == pytest.approx(math.log(2) / beta, rel=1e-3)  # attained at x = 10


def test_softplus_tends_to_relu_and_its_gradient_to_the_step():
    x = torch.linspace(5, 15, 1001)[:, None]
    relu = toys.thresholded(x)
    gaps = [float((toys.softplus_relu(b)(x) - relu).abs().max()) for b in (1, 10, 100, 1000)]
    assert all(a > b for a, b in zip(gaps, gaps[1:], strict=False)) and gaps[-1] < 1e-3
    for point, step in ((9.5, 0.0), (10.5, 1.0)):
        grads = [float(G.gradient(toys.softplus_relu(b), [point])[0]) for b in (1, 10, 100)]
        assert abs(grads[-1] - step) < 1e-6 and abs(grads[0] - step) > 0.3


def test_softplus_is_numerically_stable():
    big = toys.softplus_relu(100.0)(torch.tensor([[1e4], [-1e4]]))
    assert torch.isfinite(big).all()
    assert float(big[0]) == pytest.approx(1e4 - 10, rel=1e-6) and float(big[1]) == pytest.approx(0.0, abs=1e-12)
    g = G.gradient(toys.softplus_relu(100.0), [1e4])
    assert float(g[0]) == pytest.approx(1.0, abs=1e-6)  # (1 / beta) * beta in float32


def test_gradient_of_quadratic_and_grad_times_input_is_x_times_grad():
    f = lambda b: (b ** 2).sum(1) + 3 * b[:, 0]  # noqa: E731
    x = torch.tensor([1.0, -2.0, 0.5])
    assert torch.allclose(G.gradient(f, x), 2 * x + torch.tensor([3.0, 0, 0]))
    net = mlp()
    x = torch.randn(6)
    for target in range(3):
        assert torch.allclose(G.grad_times_input(net, x, target=target), x * G.gradient(net, x, target=target))


def test_target_none_is_the_predicted_class():
    net = mlp(1)
    x = torch.randn(6)
    predicted = int(net(x[None]).argmax())
    assert torch.equal(G.gradient(net, x), G.gradient(net, x, target=predicted))  # exact: the same backward pass


def test_occlusion_on_linear_model_equals_w_times_x_minus_baseline():
    torch.manual_seed(0)
    w, b = torch.randn(7), 0.3
    f = lambda batch: batch @ w + b  # noqa: E731
    x, base = torch.randn(7), torch.randn(7)
    assert torch.allclose(G.occlusion(f, x, baseline=base), w * (x - base), atol=1e-6)
    assert torch.allclose(G.occlusion(f, x, baseline=0.5), w * (x - 0.5), atol=1e-6)
    # non-overlapping windows of 2: each element gets its window's whole drop; the last window is cut to 1
    att = G.occlusion(f, x, window=2, baseline=base)
    share = w * (x - base)
    drops = share[:6].view(3, 2).sum(1)
    assert torch.allclose(att[:6], drops.repeat_interleave(2), atol=1e-6)
    assert float(att[6]) == pytest.approx(float(share[6]), abs=1e-6)


def test_occlusion_batches_agree():
    net = cnn()
    x = torch.rand(1, 6, 6)
    a = G.occlusion(net, x, window=2, stride=1, target=2, batch_size=3)
    b = G.occlusion(net, x, window=2, stride=1, target=2, batch_size=100)
    assert torch.allclose(a, b, atol=1e-6)


# -- SmoothGrad ---------------------------------------------------------------------------------------------------
def test_smoothgrad_with_sigma_zero_is_the_gradient():
    net = mlp(2)
    x = torch.randn(6)
    g = G.gradient(net, x, target=1)
    assert torch.allclose(G.smoothgrad(net, x, sigma=0.0, n=5, target=1, seed=0), g, atol=1e-7)
    assert torch.allclose(G.smoothgrad(net, x, sigma=1e-6, n=5, target=1, seed=0), g, atol=1e-5)
    assert torch.allclose(G.smoothgrad(net, x, sigma=0.0, n=3, kind="squared", target=1), g ** 2, atol=1e-7)
    assert float(G.smoothgrad(net, x, sigma=0.0, n=3, kind="vargrad", target=1).abs().max()) < 1e-10


def test_smoothgrad_matches_a_plain_loop_over_the_same_noise():
    net = mlp(3)
    x = torch.randn(6)
    sigma, n, seed = 0.2, 9, 7
    noisy = G.noisy_gradients(net, x, sigma=sigma, n=n, target=0, seed=seed, batch_size=4)
    std = sigma * float(x.max() - x.min())
    assert noisy.noise_std == pytest.approx(std)
    noise = torch.randn((n, 6), generator=torch.Generator().manual_seed(seed)) * std
    loop = torch.stack([G.gradient(net, x + e, target=0) for e in noise])
    assert torch.allclose(noisy.grads, loop, atol=1e-6)
    assert torch.allclose(noisy.reduce("smoothgrad"), loop.mean(0), atol=1e-6)
    assert torch.allclose(noisy.reduce("squared"), (loop ** 2).mean(0), atol=1e-6)
    assert torch.allclose(noisy.reduce("vargrad"), ((loop - loop.mean(0)) ** 2).mean(0), atol=1e-6)
    assert torch.allclose(noisy.example, x + noise[0])


def test_smoothgrad_on_a_quadratic_matches_expectations():
    # f = sum a_i x_i^2: grad = 2 a x + 2 a e, so E[grad] = 2 a x and Var[grad] = 4 a^2 std^2
    a = torch.tensor([1.0, -0.5, 2.0])
    f = lambda b: (a * b ** 2).sum(1)  # noqa: E731
    x = torch.tensor([0.0, 1.0, 2.0])
    std = 0.1 * 2.0
    sg = G.smoothgrad(f, x, sigma=0.1, n=20000, seed=0)
    vg = G.smoothgrad(f, x, sigma=0.1, n=20000, kind="vargrad", seed=0)
    assert torch.allclose(sg, 2 * a * x, atol=0.02)
    assert torch.allclose(vg, 4 * a ** 2 * std ** 2, rtol=0.05)


def test_smoothgrad_is_seeded_batch_independent_and_leaves_global_rng_alone():
    net = cnn(1)
    x = torch.rand(1, 6, 6)
    a = G.smoothgrad(net, x, n=12, seed=3, target=1)
    assert torch.equal(a, G.smoothgrad(net, x, n=12, seed=3, target=1))  # exact: the same seeded call
    assert torch.allclose(a, G.smoothgrad(net, x, n=12, seed=3, target=1, batch_size=5), atol=1e-6)
    assert not torch.allclose(a, G.smoothgrad(net, x, n=12, seed=4, target=1))
    torch.manual_seed(11)
    expected = torch.rand(3)
    torch.manual_seed(11)
    G.smoothgrad(net, x, n=4, seed=3)
    assert torch.equal(torch.rand(3), expected)  # exact: the global generator's own draws


def test_value_range_sets_the_noise_scale():
    f = lambda b: (b ** 2).sum(1)  # noqa: E731
    x = torch.tensor([0.5, 0.5])  # constant x: range 0, so value_range must be given
    with pytest.raises(ValueError, match="value_range"):
        G.noisy_gradients(f, x, n=2, seed=0)
    assert G.noisy_gradients(f, x, sigma=0.1, n=2, seed=0, value_range=(0, 4)).noise_std == pytest.approx(0.4)
    assert G.noisy_gradients(f, x, sigma=0.1, n=2, seed=0, value_range=2.0).noise_std == pytest.approx(0.2)


def test_relative_change():
    assert G.relative_change(torch.ones(4), torch.ones(4)) == 0.0  # exact: ||a - a|| = 0
    assert G.relative_change(torch.tensor([3.0, 4.0]), torch.tensor([0.0, 0.0])) == pytest.approx(1.0)


# -- Captum as oracle ------------------------------------------------------------------------------------------
def test_against_captum_saliency_and_input_x_gradient():
    from captum.attr import InputXGradient, Saliency

    for seed in range(3):
        net = mlp(seed)
        x = torch.randn(6)
        for target in range(3):
            ours = G.gradient(net, x, target=target)
            theirs = Saliency(net).attribute(x[None].clone().requires_grad_(), target=target, abs=False)[0]
            assert torch.allclose(ours, theirs, atol=1e-6)
            theirs = InputXGradient(net).attribute(x[None].clone().requires_grad_(), target=target)[0]
            assert torch.allclose(G.grad_times_input(net, x, target=target), theirs.detach(), atol=1e-6)


@pytest.mark.parametrize("window,stride,captum_window,captum_stride", [
    (2, 1, (1, 2, 2), (1, 1, 1)),
    (3, 2, (1, 3, 3), (1, 2, 2)),
    ((2, 3), (1, 2), (1, 2, 3), (1, 1, 2)),
])
def test_against_captum_occlusion_on_images(window, stride, captum_window, captum_stride):
    from captum.attr import Occlusion

    net = cnn(2)
    x = torch.rand(1, 6, 6)
    ours = G.occlusion(net, x, window=window, stride=stride, baseline=0.2, target=3, batch_size=7)
    theirs = Occlusion(net).attribute(x[None], sliding_window_shapes=captum_window, strides=captum_stride,
                                      baselines=0.2, target=3)[0]
    assert torch.allclose(ours, theirs, atol=1e-5)


def test_against_captum_occlusion_1d():
    from captum.attr import Occlusion

    net = mlp(4)
    x = torch.randn(6)
    ours = G.occlusion(net, x, window=3, stride=1, target=0)
    theirs = Occlusion(net).attribute(x[None], sliding_window_shapes=(3,), strides=1, target=0)[0]
    assert torch.allclose(ours, theirs, atol=1e-5)


@pytest.mark.parametrize("kind,nt_type", [("smoothgrad", "smoothgrad"), ("squared", "smoothgrad_sq"),
                                          ("vargrad", "vargrad")])
def test_against_captum_noise_tunnel_in_expectation(kind, nt_type):
    """Different noise draws, so compare means over many samples (tolerance from the sampling error)."""
    from captum.attr import NoiseTunnel, Saliency

    net = mlp(5, act=torch.nn.Tanh)
    x = torch.randn(6)
    sigma, n = 0.2, 4000
    std = sigma * float(x.max() - x.min())
    ours = G.smoothgrad(net, x, sigma=sigma, n=n, kind=kind, target=1, seed=0)
    torch.manual_seed(0)
    theirs = NoiseTunnel(Saliency(net)).attribute(x[None], nt_type=nt_type, nt_samples=n, stdevs=std,
                                                 target=1, abs=False, nt_samples_batch_size=1000)[0]
    scale = float(theirs.abs().max())
    assert float((ours - theirs).abs().max()) < 0.06 * scale


# -- bad input ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", [G.gradient, G.grad_times_input, G.occlusion, G.smoothgrad])
def test_bad_f_and_x(method):
    net = mlp()
    with pytest.raises(TypeError, match="f must be callable"):
        method("not a model", torch.randn(6))
    with pytest.raises(ValueError, match=r"x of shape \(4,\)"):
        method(net, torch.randn(4))
    with pytest.raises(ValueError, match="x must have at least one dimension"):
        method(net, 3.0)
    with pytest.raises(ValueError, match="x contains NaN"):
        method(net, torch.tensor([1.0, float("nan"), 0, 0, 0, 0]))
    with pytest.raises(ValueError, match="target must be an int <= 2"):
        method(net, torch.randn(6), target=3)
    with pytest.raises(TypeError, match="target must be an int"):
        method(net, torch.randn(6), target="cat")
    with pytest.raises(ValueError, match="target must be None"):
        method(toys.saturating, torch.randn(2), target=1)


def test_bad_smoothgrad_parameters():
    net = mlp()
    x = torch.randn(6)
    with pytest.raises(ValueError, match="sigma must be >= 0"):
        G.smoothgrad(net, x, sigma=-0.1)
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        G.smoothgrad(net, x, n=0)
    with pytest.raises(TypeError, match="n must be an int"):
        G.smoothgrad(net, x, n=2.5)
    with pytest.raises(ValueError, match="kind must be one of"):
        G.smoothgrad(net, x, kind="smooth")
    with pytest.raises(ValueError, match="batch_size must be an int >= 1"):
        G.smoothgrad(net, x, batch_size=0)
    with pytest.raises(ValueError, match="value_range"):
        G.smoothgrad(net, x, value_range=(1, 2, 3))
    with pytest.raises(ValueError, match="value_range"):
        G.smoothgrad(net, x, value_range=-1.0)


def test_bad_occlusion_parameters():
    net = cnn()
    x = torch.rand(1, 6, 6)
    with pytest.raises(ValueError, match="window must be an int <= 6"):
        G.occlusion(net, x, window=7)
    with pytest.raises(ValueError, match="window must be an int >= 1"):
        G.occlusion(net, x, window=0)
    with pytest.raises(ValueError, match="window must have one size per dimension"):
        G.occlusion(net, x, window=(1, 2, 2, 2))
    with pytest.raises(TypeError, match="stride must be an int or a tuple"):
        G.occlusion(net, x, stride="big")
    with pytest.raises(ValueError, match="baseline must have the same shape as x"):
        G.occlusion(net, x, baseline=torch.zeros(6, 6))


def test_non_differentiable_f_is_named():
    f = lambda b: torch.as_tensor(np.asarray(b.detach()).sum(1))  # noqa: E731
    with pytest.raises(TypeError, match="f must be differentiable"):
        G.gradient(f, torch.randn(3))


def test_toy_checks_its_batch_shape():
    with pytest.raises(ValueError, match=r"batch of shape \(B, 2\)"):
        toys.saturating(torch.ones(2))
    with pytest.raises(ValueError, match="beta must be > 0"):
        toys.softplus_relu(0.0)
    assert "min(1, x1 + x2)" in repr(toys.saturating)


# -- the digits classifier ---------------------------------------------------------------------------------------
def test_digits_data_is_bundled_and_stratified():
    data = toys.load_digits()
    assert data.train_x.shape == (1347, 1, 8, 8) and data.test_x.shape == (450, 1, 8, 8)
    assert float(data.train_x.min()) == 0.0 and float(data.train_x.max()) == 1.0  # exact: 0..16 divided by 16
    counts = torch.bincount(data.test_y, minlength=10)
    assert int(counts.min()) >= 43 and int(counts.max()) <= 47


def test_digits_classifier_learns_is_seeded_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path))
    digits._MEMORY.clear()
    a = toys.digits_classifier(seed=1, epochs=2, progress=False)
    assert a.accuracy > 0.85 and not a.from_cache
    assert toys.digits_classifier(seed=1, epochs=2) is a  # memory cache
    files = list((tmp_path / "toys").glob("*.safetensors"))
    assert len(files) == 1
    digits._MEMORY.clear()
    b = toys.digits_classifier(seed=1, epochs=2, progress=False)  # from disk
    assert b.from_cache and b.accuracy == a.accuracy  # exact: the same weights read back; a count / n
    digits._MEMORY.clear()
    c = toys.digits_classifier(seed=1, epochs=2, progress=False, disk_cache=False)  # retrained: same weights
    for k, v in a.model.state_dict().items():
        assert torch.equal(v, c.model.state_dict()[k]), k  # exact: the same seeded training, same machine
    assert not c.model.training
    digits._MEMORY.clear()


def test_softplus_gradient_is_the_sigmoid_everywhere_including_the_kink():
    z = torch.tensor([-30.0, -1.0, 0.0, 0.5, 30.0])
    for beta in (0.5, 1.0, 10.0):
        grads = torch.stack([G.gradient(toys.softplus_relu(beta), [10.0 + float(v)])[0] for v in z])
        assert torch.allclose(grads, torch.sigmoid(beta * z), atol=1e-6)


def test_progress_bars_do_not_change_results(capsys):
    net = cnn(3)
    x = torch.rand(1, 6, 6)
    assert torch.equal(G.occlusion(net, x, window=2, stride=1, batch_size=4, progress=True),  # exact: the same seeded call
                       G.occlusion(net, x, window=2, stride=1, batch_size=4))
    assert torch.equal(G.smoothgrad(net, x, n=8, seed=1, batch_size=3, progress=True),  # exact: the same seeded call
                       G.smoothgrad(net, x, n=8, seed=1, batch_size=3))
    assert "smoothgrad" in capsys.readouterr().err


def _linear(x):
    w = torch.arange(1.0, x.shape[-1] + 1)
    return (x * w).sum(-1)


def test_smoothgrad_on_a_constant_input_asks_for_value_range():
    from xaikit.tensor.gradients import smoothgrad

    def f(b):
        return b.flatten(1).square().sum(1)

    grey = torch.full((1, 3, 3), 0.5)
    with pytest.raises(ValueError, match=r"x is constant.*Pass value_range.*value_range=\(0, 1\)"):
        smoothgrad(f, grey, seed=0)
    noisy = smoothgrad(f, grey, seed=0, value_range=(0, 1), n=8)
    assert not torch.allclose(noisy, 2 * grey)  # real noise now: not the plain gradient 2x
    assert torch.allclose(smoothgrad(f, grey, sigma=0.0, n=2, seed=0), 2 * grey)  # sigma 0: asked for, allowed


def test_occlusion_stride_larger_than_window_is_refused():
    with pytest.raises(ValueError, match=r"stride \(2,\) is larger than window \(1,\).*stride <= window"):
        G.occlusion(_linear, torch.ones(6), window=1, stride=2)
    img = lambda x: x.flatten(-3).sum(-1)  # noqa: E731
    with pytest.raises(ValueError, match=r"stride .* is larger than window"):
        G.occlusion(img, torch.ones(1, 8, 8), window=2, stride=3)
    assert bool((G.occlusion(_linear, torch.ones(6), window=2, stride=1) != 0).all())  # overlapping: fine


def test_vargrad_needs_two_samples():
    x = torch.tensor([0.5, -1.0, 2.0])
    f = lambda x: (x ** 3).sum(-1)  # noqa: E731
    with pytest.raises(ValueError, match=r"n must be an int >= 2 for kind='vargrad', got 1"):
        G.smoothgrad(f, x, n=1, kind="vargrad", seed=0)
    with pytest.raises(ValueError, match=r"n must be an int >= 2 for kind='vargrad'"):
        G.noisy_gradients(f, x, n=1, seed=0).reduce("vargrad")
    assert G.smoothgrad(f, x, n=1, kind="squared", seed=0).shape == x.shape  # a mean of one square is fine
    assert bool((G.smoothgrad(f, x, n=4, kind="vargrad", seed=0) > 0).all())


def test_relative_change_from_a_zero_map():
    assert G.relative_change(torch.zeros(3), torch.ones(3)) == float("inf")
    assert G.relative_change(torch.zeros(3), torch.zeros(3)) == 0.0
    assert G.relative_change(torch.tensor([3.0, 4.0]), torch.zeros(2)) == pytest.approx(1.0)


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
