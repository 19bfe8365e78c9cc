"""The quadrature error of IG per feature (notebook 02, section 4), against closed-form IGs: additive models
(IG_i = g_i(x_i) - g_i(x'_i)), a quadratic (the right Riemann sum's error is exactly (phi_i(1) - phi_i(0)) / 2n)
and scipy's adaptive quadrature as a second, independent oracle."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import xaikit as xk
from xaikit.tensor.integrated import RULES, _PathCache, steps_for_tolerance
from xaikit.tensor.quadrature import (
    AdditiveModel,
    additive_toy,
    convergence_slope,
    path_slopes,
    quadrature_errors,
    riemann_end_term,
)

X = torch.tensor([1.0, -0.7, 2.0, 0.4], dtype=torch.float64)  # notebook 02's input for the additive toy


def other_additive():  # tanh, cos, softplus, a quartic: different curvatures from the notebook's toy
    return AdditiveModel((lambda t: torch.tanh(2 * t), torch.cos, torch.nn.functional.softplus, lambda t: t ** 4))


def test_exact_ig_is_the_terms_increment_and_complete():
    model = additive_toy()
    exact = model.exact_ig(X)
    want = torch.tensor([np.sin(1.0), -0.7 ** 3, np.exp(1.0) - 1, -0.8], dtype=torch.float64)
    torch.testing.assert_close(exact, want, atol=1e-15, rtol=0)
    b = torch.tensor([0.3, 0.2, -1.0, 1.0], dtype=torch.float64)
    gap = float(model.exact_ig(X, b).sum()) - float(model(X[None]) - model(b[None]))
    assert abs(gap) < 1e-14  # complete, with any baseline


def test_exact_ig_equals_scipy_quad_of_the_gradient():
    from scipy.integrate import quad

    model = other_additive()
    x, b = torch.tensor([0.8, -1.5, 2.0, 0.6], dtype=torch.float64), torch.tensor([-0.2, 0.4, 0.0, -0.3],
                                                                                    dtype=torch.float64)

    def integrand(alpha, i):  # (x_i - x'_i) dF/dx_i at the path point, by autograd
        point = (b + alpha * (x - b)).requires_grad_(True)
        model(point[None]).sum().backward()
        return float((x[i] - b[i]) * point.grad[i])

    for i in range(4):
        value, _ = quad(integrand, 0.0, 1.0, args=(i,), epsabs=1e-13, epsrel=1e-13)
        assert float(model.exact_ig(x, b)[i]) == pytest.approx(value, abs=1e-11)


def test_gap_is_the_sum_of_the_errors_and_one_rule_alone_agrees():
    model = other_additive()
    exact = model.exact_ig(X)
    table = quadrature_errors(model, exact, X, steps=(2, 5, 16))
    for rule, e in table.items():
        np.testing.assert_allclose(e.errors.sum(1), e.gaps, atol=1e-12)
        for n in e.steps:
            alone = xk.integrated_gradients(model, X, steps=n, rule=rule)
            np.testing.assert_allclose(e.errors[e.at(n)], (alone.attributions - exact).numpy(), atol=1e-13)
    assert table["riemann_trapezoid"].steps == [2, 5, 16]


@pytest.mark.parametrize(("model", "early", "late"), [(additive_toy(), (2, 3), (4, 5)),
                                                      (other_additive(), (2, 3, 4, 5, 6), (6, 8, 10, 12))],
                         ids=["toy", "other"])
def test_convergence_orders(model, early, late):
    exact = model.exact_ig(X)
    fit = (8, 16, 32, 64, 128, 256)
    table = quadrature_errors(model, exact, X, steps=sorted({*fit, *range(1, 13)}))
    slope = {r: convergence_slope(fit, table[r].max_error[[table[r].at(n) for n in fit]]) for r in RULES[:4]}
    assert -1.2 <= slope["riemann_left"] <= -0.8 and -1.2 <= slope["riemann_right"] <= -0.8
    assert -2.3 <= slope["riemann_middle"] <= -1.7 and -2.3 <= slope["riemann_trapezoid"] <= -1.7
    gl = table["gausslegendre"]
    assert gl.max_error[gl.at(12)] < 1e-10
    # Gauss-Legendre steepens on a log-log plot (faster than any power of n), while above round-off
    slope_early, slope_late = (convergence_slope(w, gl.max_error[[gl.at(n) for n in w]]) for w in (early, late))
    assert slope_late < slope_early < -4


def test_the_notebooks_numbers():
    model = additive_toy()
    right = quadrature_errors(model, model.exact_ig(X), X, steps=(2, 8), rules=["riemann_right"])["riemann_right"]
    assert right.relative_gap[0] < 0.05 and right.relative_max_error[0] > 0.3
    assert right.relative_gap[1] < 0.01 and right.relative_max_error[1] > 0.07


def test_right_riemann_error_on_a_quadratic_is_exactly_the_end_term():
    # F = x^T A x / 2 with an indefinite A: the integrand is linear in alpha, so the right sum's error in
    # feature i is exactly d_i (A d)_i / (2n) for every n, and the midpoint rule is exact
    a = torch.tensor([[2.0, 0.5, 0.0], [0.5, -1.0, 0.3], [0.0, 0.3, -0.5]], dtype=torch.float64)

    def quadratic(z):
        return 0.5 * ((z @ a) * z).sum(1)

    x, b = torch.tensor([1.0, 1.5, -2.0], dtype=torch.float64), torch.tensor([0.2, -0.1, 0.4], dtype=torch.float64)
    d = x - b
    exact = d * (a @ (x + b)) / 2  # the gradient A z at the path's midpoint, times d
    assert float(exact.sum()) == pytest.approx(float(quadratic(x[None]) - quadratic(b[None])), abs=1e-13)
    table = quadrature_errors(quadratic, exact, x, b, steps=(1, 3, 10), rules=["riemann_right", "riemann_middle"])
    for n in (1, 3, 10):
        np.testing.assert_allclose(table["riemann_right"].errors[table["riemann_right"].at(n)],
                                   (d * (a @ d) / (2 * n)).numpy(), atol=1e-13)
        assert np.abs(table["riemann_middle"].errors[table["riemann_middle"].at(n)]).max() < 1e-13
    np.testing.assert_allclose(riemann_end_term(quadratic, x, b).numpy(), (d * (a @ d) / 2).numpy(), atol=1e-13)


def test_end_term_predicts_the_additive_error():
    model = other_additive()
    right = quadrature_errors(model, model.exact_ig(X), X, steps=(512,), rules=["riemann_right"])["riemann_right"]
    np.testing.assert_allclose(512 * right.errors[0], riemann_end_term(model, X).numpy(), atol=0.01)


def test_path_slopes_add_up_to_the_attributions():
    model = other_additive()
    for keep in (True, False):  # node sums from the streaming walk, or from kept gradients via the cache
        if keep:
            result = xk.integrated_gradients(model, X, steps=9, rule="riemann_trapezoid")
        else:
            result = steps_for_tolerance(model, X, rule="riemann_trapezoid", tolerance=1.0).result
        assert float((path_slopes(result) * result.weights).sum()) == pytest.approx(float(result.attributions.sum()),
                                                                                    abs=1e-12)


def test_convergence_slope_and_bad_input():
    assert convergence_slope([2, 4, 8], [0.5, 0.125, 0.03125]) == pytest.approx(-2.0)
    with pytest.raises(ValueError, match="positive errors"):
        convergence_slope([2, 4], [0.1, 0.0])
    with pytest.raises(ValueError, match="names must have one entry per term"):
        AdditiveModel((torch.sin,), ("a", "b"))
    with pytest.raises(ValueError, match="exact must have x's shape"):
        quadrature_errors(additive_toy(), torch.zeros(3), X)
    with pytest.raises(ValueError, match="takes a batch"):
        additive_toy()(torch.zeros(2, 3))


def test_shared_cache_counts_as_if_alone_and_computes_once():
    model = other_additive()
    shared = _PathCache(model, None, None)
    together = {r: steps_for_tolerance(model, X, rule=r, tolerance=1e-4, shared=shared) for r in RULES}
    for r, search in together.items():
        alone = steps_for_tolerance(model, X, rule=r, tolerance=1e-4)
        assert (search.steps, search.evaluations) == (alone.steps, alone.evaluations)
        torch.testing.assert_close(search.result.attributions, alone.result.attributions)
    assert shared.evaluations < sum(s.evaluations for s in together.values())  # the Riemann grids overlap


def test_text_searches_share_nodes_and_count_alone():
    from xaikit.models.tiny import tiny_bert, tiny_tokenizer
    from xaikit.text.text_ig import text_integrated_gradients, text_steps_for_tolerance

    model, tok = tiny_bert(seed=0), tiny_tokenizer()
    rules = ["riemann_right", "riemann_trapezoid", "gausslegendre"]
    searches = text_steps_for_tolerance(model, tok, "a clever piece of cinema", rules, tolerance=0.05, max_steps=64)
    assert list(searches) == rules and searches["riemann_right"].converged
    right = searches["riemann_right"]
    assert right.evaluations == right.steps and right.result.relative_gap <= 0.05
    alone = text_steps_for_tolerance(model, tok, "a clever piece of cinema", ["gausslegendre"], tolerance=0.05,
                                     max_steps=64)
    assert alone["gausslegendre"].evaluations == searches["gausslegendre"].evaluations
    plain = text_integrated_gradients(model, tok, "a clever piece of cinema", steps=right.steps)
    assert right.result.gap == pytest.approx(plain.detail.gap, abs=1e-5)


def test_error_panel_bars_are_the_errors_and_sum_to_the_gap():
    from xaikit.widgets import IGErrorPanel

    panel = IGErrorPanel(steps=2)
    view = panel.result
    assert view.rule == "riemann_right" and view.relative_gap < 0.05 and view.relative_max_error > 0.3
    heights = [p.get_height() for p in panel.figure.axes[0].patches]
    np.testing.assert_allclose(heights, [*view.errors, view.gap], atol=1e-12)
    assert view.gap == pytest.approx(float(view.errors.sum()), abs=1e-12)
    fine = panel.set(steps=64, rule="riemann_middle")
    assert fine.steps == 64 and fine.relative_max_error < 1e-4
    panel.set(steps=1, rule="riemann_trapezoid")
    assert isinstance(panel.error, ValueError) and "steps must be >= 2" in str(panel.error)
    panel.set(steps=5)
    assert panel.error is None and panel.image.value[:4] == b"\x89PNG"
