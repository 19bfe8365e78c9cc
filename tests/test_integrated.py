"""Integrated Gradients: quadrature rules, the IG paper's analytic toys, Captum as an oracle, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import xaikit as xk
from xaikit.tensor.integrated import RULES, alphas_and_weights, path_gradients

# -- the rules: exact nodes and weights ---------------------------------------------------------------------
EXPECTED = {
    ("riemann_left", 2): ([0, 1 / 2], [1 / 2, 1 / 2]),
    ("riemann_left", 3): ([0, 1 / 3, 2 / 3], [1 / 3] * 3),
    ("riemann_left", 4): ([0, 1 / 4, 2 / 4, 3 / 4], [1 / 4] * 4),
    ("riemann_right", 2): ([1 / 2, 1], [1 / 2, 1 / 2]),
    ("riemann_right", 3): ([1 / 3, 2 / 3, 1], [1 / 3] * 3),
    ("riemann_right", 4): ([1 / 4, 2 / 4, 3 / 4, 1], [1 / 4] * 4),
    ("riemann_middle", 2): ([1 / 4, 3 / 4], [1 / 2, 1 / 2]),
    ("riemann_middle", 3): ([1 / 6, 1 / 2, 5 / 6], [1 / 3] * 3),
    ("riemann_middle", 4): ([1 / 8, 3 / 8, 5 / 8, 7 / 8], [1 / 4] * 4),
    ("riemann_trapezoid", 2): ([0, 1], [1 / 2, 1 / 2]),
    ("riemann_trapezoid", 3): ([0, 1 / 2, 1], [1 / 4, 1 / 2, 1 / 4]),
    ("riemann_trapezoid", 4): ([0, 1 / 3, 2 / 3, 1], [1 / 6, 1 / 3, 1 / 3, 1 / 6]),
    ("gausslegendre", 2): ([0.5 - 0.5 / np.sqrt(3), 0.5 + 0.5 / np.sqrt(3)], [1 / 2, 1 / 2]),
    ("gausslegendre", 3): ([0.5 - 0.5 * np.sqrt(3 / 5), 0.5, 0.5 + 0.5 * np.sqrt(3 / 5)], [5 / 18, 8 / 18, 5 / 18]),
    ("gausslegendre", 4): (
        [0.5 - 0.5 * np.sqrt(3 / 7 + 2 / 7 * np.sqrt(6 / 5)), 0.5 - 0.5 * np.sqrt(3 / 7 - 2 / 7 * np.sqrt(6 / 5)),
         0.5 + 0.5 * np.sqrt(3 / 7 - 2 / 7 * np.sqrt(6 / 5)), 0.5 + 0.5 * np.sqrt(3 / 7 + 2 / 7 * np.sqrt(6 / 5))],
        [(18 - np.sqrt(30)) / 72, (18 + np.sqrt(30)) / 72, (18 + np.sqrt(30)) / 72, (18 - np.sqrt(30)) / 72]),
}


@pytest.mark.parametrize(("rule", "n"), sorted(EXPECTED))
def test_alphas_and_weights_exact(rule, n):
    alphas, weights = alphas_and_weights(rule, n)
    want_a, want_w = EXPECTED[(rule, n)]
    np.testing.assert_allclose(alphas, want_a, atol=1e-12)
    np.testing.assert_allclose(weights, want_w, atol=1e-12)
    assert weights.sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("n", [2, 3, 4, 17])
def test_rules_match_captum(rule, n):
    from captum.attr._utils.approximation_methods import approximation_parameters

    step_sizes, alphas_fn = approximation_parameters(rule)
    alphas, weights = alphas_and_weights(rule, n)
    np.testing.assert_allclose(alphas, alphas_fn(n), atol=1e-6)
    if rule == "riemann_trapezoid":  # Captum's weights sum to (n-1)/n: the textbook rule scaled by that
        np.testing.assert_allclose(weights * (n - 1) / n, step_sizes(n), atol=1e-7)
    else:
        np.testing.assert_allclose(weights, step_sizes(n), atol=1e-7)


# -- the IG paper's analytic toys ------------------------------------------------------------------------------
def min_one(z):  # f(x) = min(1, x) = 1 - ReLU(1 - x), batch (B, 1) -> (B,)
    return 1 - torch.relu(1 - z[:, 0])


@pytest.mark.parametrize("rule", ["riemann_middle", "gausslegendre"])
def test_sensitivity_toy_ig_is_one_gradient_is_zero(rule):
    x = torch.tensor([2.0])
    result = xk.integrated_gradients(min_one, x, baseline=torch.tensor([0.0]), steps=50, rule=rule)
    assert result.attributions.item() == pytest.approx(1.0, abs=1e-6)
    assert result.gap == pytest.approx(0.0, abs=1e-6)
    _, grad = path_gradients(min_one, x[None], None)
    assert grad.item() == 0.0  # exact: ReLU's slope is 0 at 1 - x = -1


def test_sensitivity_toy_right_riemann_error_is_order_one_over_n():
    # the integrand is a step at alpha = 1/2; the right sum hits the step's zero side there
    for n in (10, 50, 300):
        result = xk.integrated_gradients(min_one, torch.tensor([2.0]), steps=n)
        assert abs(result.attributions.item() - 1.0) <= 2.0 / n + 1e-6


def test_linear_model_ig_is_exact_for_every_rule():
    w = torch.tensor([1.5, -2.0, 0.5])
    f = lambda z: z @ w  # noqa: E731
    x, b = torch.tensor([1.0, 2.0, -1.0]), torch.tensor([0.5, 0.0, 1.0])
    for rule in RULES:
        result = xk.integrated_gradients(f, x, b, steps=3, rule=rule)
        torch.testing.assert_close(result.attributions, w * (x - b))


# -- Captum as the oracle --------------------------------------------------------------------------------------
def random_mlp(seed=0, d=6, classes=3):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d, 16), nn.Tanh(), nn.Linear(16, 16), nn.Softplus(), nn.Linear(16, classes)).eval()


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("seed", [0, 1])
def test_ig_equals_captum_on_random_mlps(rule, seed):
    from captum.attr import IntegratedGradients

    model = random_mlp(seed)
    x, b = torch.randn(6), torch.randn(6)
    ours = xk.integrated_gradients(model, x, b, steps=24, rule=rule, target=2)
    theirs, delta = IntegratedGradients(model).attribute(x[None], b[None], target=2, n_steps=24, method=rule,
                                                         return_convergence_delta=True)
    scale = 23 / 24 if rule == "riemann_trapezoid" else 1.0  # Captum's trapezoid weights sum to (n-1)/n
    torch.testing.assert_close(ours.attributions * scale, theirs[0], atol=1e-5, rtol=0)
    if rule != "riemann_trapezoid":
        assert ours.gap == pytest.approx(float(delta), abs=1e-5)


def test_batch_size_does_not_change_the_result_and_matches_a_plain_loop():
    model = random_mlp(3)
    x = torch.randn(6)
    full = xk.integrated_gradients(model, x, steps=20, target=0)
    chunked = xk.integrated_gradients(model, x, steps=20, target=0, batch_size=3)
    torch.testing.assert_close(full.attributions, chunked.attributions)
    # the readable reference: one point at a time
    alphas, weights = alphas_and_weights("riemann_right", 20)
    total = torch.zeros(6)
    for a, w in zip(alphas, weights, strict=True):
        point = (float(a) * x).requires_grad_(True)
        model(point[None])[0, 0].backward()
        total += float(w) * point.grad
    torch.testing.assert_close(full.attributions, x * total, atol=1e-6, rtol=1e-5)
    assert full.gradients.shape == (20, 6) and full.outputs.shape == (20,)
    assert full.running_sum()[-1] == pytest.approx(float(full.attributions.sum()), abs=1e-5)


@pytest.mark.parametrize("rule", RULES)
def test_gap_shrinks_with_steps_on_a_smooth_model(rule):
    model = random_mlp(4)
    x, b = 2 * torch.randn(6), torch.zeros(6)
    x, b = x.double(), b.double()
    model = model.double()
    gaps = [abs(xk.integrated_gradients(model, x, b, steps=n, rule=rule, target=1).gap) for n in (2, 8, 32)]
    assert gaps[2] < gaps[0]
    assert gaps[2] <= gaps[1] + 1e-12


def test_steps_for_tolerance_reuses_nested_nodes():
    model = random_mlp(5)
    x = 2 * torch.randn(6)
    search = xk.steps_for_tolerance(model, x, rule="riemann_right", tolerance=0.01, target=0, start=2)
    assert search.converged and search.result.relative_gap <= 0.01
    assert search.steps == search.history[-1][0]
    assert all(gap > 0.01 for _, gap in search.history[:-1])
    assert search.evaluations == search.steps  # each node evaluated once across all doublings
    fresh = xk.integrated_gradients(model, x, steps=search.steps, target=0)
    torch.testing.assert_close(search.result.attributions, fresh.attributions, atol=1e-6, rtol=1e-5)
    trap = xk.steps_for_tolerance(model, x, rule="riemann_trapezoid", tolerance=0.01, target=0)
    assert trap.evaluations == trap.steps and [s for s, _ in trap.history][:3] == [2, 3, 5]
    mid = xk.steps_for_tolerance(model, x, rule="riemann_middle", tolerance=1e-4, target=0, start=1)
    assert mid.evaluations == sum(s for s, _ in mid.history)  # midpoints do not nest


def test_training_mode_warns_and_switches_to_eval():
    model = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Linear(4, 2)).train()
    with pytest.warns(UserWarning, match="eval"):
        xk.integrated_gradients(model, torch.ones(3), steps=4)
    assert not model.training


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"baseline": torch.zeros(4)}, ValueError, "baseline must have the same shape"),
    ({"steps": 0}, ValueError, "steps must be an int >= 1"),
    ({"steps": 2.5}, TypeError, "steps must be an int"),
    ({"rule": "simpson"}, ValueError, "rule must be one of"),
    ({"rule": "riemann_trapezoid", "steps": 1}, ValueError, "steps must be >= 2"),
    ({"x": torch.tensor([1.0, float("nan"), 0.0])}, ValueError, "x contains NaN or inf"),
    ({"baseline": torch.tensor([0.0, float("inf"), 0.0])}, ValueError, "baseline contains NaN or inf"),
    ({"target": 3}, ValueError, "target must be an int <= 2"),
    ({"target": -1}, ValueError, "target must be an int >= 0"),
    ({"batch_size": 0}, ValueError, "batch_size must be an int >= 1"),
])
def test_bad_input_is_named(kwargs, error, match):
    args = {"f": random_mlp(d=3), "x": torch.ones(3)} | kwargs
    with pytest.raises(error, match=match):
        xk.integrated_gradients(**args)


def test_gap_curves_equal_separate_runs():
    from xaikit.tensor.integrated import gap_curves

    model = random_mlp(6)
    x = torch.randn(6)
    curves = gap_curves(model, x, steps=(1, 2, 5, 16), target=1)
    assert curves["riemann_trapezoid"][0] == [2, 5, 16] and curves["riemann_left"][0] == [1, 2, 5, 16]
    for rule, (ns, gaps) in curves.items():
        for n, gap in zip(ns, gaps, strict=True):
            alone = xk.integrated_gradients(model, x, steps=n, rule=rule, target=1).relative_gap
            assert gap == pytest.approx(alone, rel=1e-3, abs=1e-6)


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


def test_ig_refuses_a_billion_steps_before_allocating():
    import torch

    import xaikit as xk

    with pytest.raises(ValueError, match="steps must be an int <= 100000"):
        xk.integrated_gradients(lambda b: b.sum(1), torch.ones(1, 3), steps=10**9)
