"""Notebook 01's panels react to their controls: the result and the figure's pixels change."""

from __future__ import annotations

import math

import pytest
import torch

from xaikit import widgets as W
from xaikit.tensor import gradients as G
from xaikit.tensor import toys


@pytest.fixture(scope="module")
def trained():
    return toys.digits_classifier(seed=0, epochs=1, progress=False, disk_cache=False)


def _changes(panel, **values):
    before_png, before = panel.image.value, panel.result
    after = panel.set(**values)
    assert panel.error is None, panel.error_traceback
    assert panel.image.value != before_png, "the figure did not change"
    return before, after


def test_panels_are_registered():
    for name in ("GradientPanel", "GradientSaturationPanel", "ThresholdPanel", "SmoothGradPanel"):
        assert issubclass(getattr(W, name), W.Panel)


def test_gradient_panel():
    p = W.GradientPanel()
    before, after = _changes(p, x1=-1.0, x2=2.0)
    assert not torch.equal(before.attributions["gradient"], after.attributions["gradient"])  # exact: x moved
    x = torch.tensor([-1.0, 2.0])
    assert torch.allclose(after.attributions["gradient"], G.gradient(toys.smooth_model, x))
    assert torch.allclose(after.attributions["gradient x input"], x * after.attributions["gradient"])
    arrow = p._arrow  # the arrow points along the gradient
    u, v = float(arrow.U[0]), float(arrow.V[0])
    g = after.attributions["gradient"]
    assert math.isclose(math.atan2(v, u), math.atan2(float(g[1]), float(g[0])), abs_tol=1e-5)
    assert [c.get_text() for c in p._ax.get_xticklabels()] != []


def test_saturation_panel():
    p = W.GradientSaturationPanel()
    r = p.result
    # exact in this test: min(1, x1 + x2) is 0 or 1 here, its slopes 0 or 1, its bars those values
    assert (r.x == 1).all() and r.value == 1.0 and r.baseline_value == 0.0
    ig = r.attributions["IG preview (64 steps)"]
    for name in ("gradient", "gradient x input", "occlusion (to 0)"):
        assert torch.equal(r.attributions[name], torch.zeros(2)), name  # exact: slope 0
    assert torch.allclose(ig, torch.tensor([0.5, 0.5]))  # splits f(x) - f(0) = 1
    _, after = _changes(p, x1=0.3, x2=0.4)
    assert torch.equal(after.attributions["gradient"], torch.ones(2))  # exact: slope 1
    assert torch.allclose(after.attributions["occlusion (to 0)"], torch.tensor([0.3, 0.4]))
    heights = [b.get_height() for b in p._bars.bars[0]]
    assert heights == [1.0, 1.0]


def test_threshold_panel():
    p = W.ThresholdPanel(x=10.5, beta=1.0)
    r1 = p.result
    assert r1.grad_relu == 1.0 and 0.5 < r1.grad_softplus < 0.7  # exact: ReLU's slope is 0 or 1
    _, r2 = _changes(p, beta=100.0)
    assert r2.max_gap < r1.max_gap and r2.max_gap == pytest.approx(math.log(2) / 100, rel=0.05)
    assert abs(r2.grad_softplus - 1.0) < 1e-6
    _, r3 = _changes(p, x=9.5)
    assert r3.grad_relu == 0.0 and r3.relu == 0.0


def test_smoothgrad_panel(trained):
    p = W.SmoothGradPanel(trained, n=20)
    r1 = p.result
    assert r1.kind == "smoothgrad" and r1.noisy.n == 20 and r1.smoothed.shape == (1, 8, 8)
    _, r2 = _changes(p, sigma=0.3)
    assert not torch.allclose(r1.smoothed, r2.smoothed)
    _, r3 = _changes(p, kind="vargrad")
    assert float(r3.smoothed.min()) >= 0 and torch.allclose(r3.smoothed, r3.noisy.reduce("vargrad"))
    _, r4 = _changes(p, image=3, n=5)
    assert r4.index == 3 and r4.noisy.n == 5 and r4.label == int(trained.data.test_y[3])
    _, r5 = _changes(p, sigma=0.0, kind="smoothgrad")
    assert torch.allclose(r5.smoothed, r5.noisy.gradient, atol=1e-6)  # no noise: SmoothGrad is the gradient


def test_panel_shows_a_bad_function_error_and_recovers():

    def flaky(batch):
        if batch.shape[0] == 1 and float(batch[0, 0].detach()) < -2:  # the contour grid (one big batch) is fine
            raise ValueError("this toy is undefined below x1 = -2")
        return toys.smooth_model.fn(batch)

    f = toys.Toy("flaky", "flaky", 2, "test", flaky)
    p = W.GradientPanel(f=f)
    p.set(x1=-2.5)
    assert isinstance(p.error, ValueError) and "undefined below" in p.status.value
    p.set(x1=0.5)
    assert p.error is None and float(p.result.x[0]) == 0.5


@pytest.mark.parametrize("factory,changes", [
    (W.GradientSaturationPanel, [{"x1": 0.3, "x2": 0.4}, {"x1": 1.2, "x2": 0.1}]),
    (W.ThresholdPanel, [{"x": 9.0, "beta": 20.0}, {"x": 12.5, "beta": 0.5}]),
    ("smoothgrad", [{"image": 2, "kind": "vargrad"}, {"image": 5, "sigma": 0.3, "kind": "smoothgrad"},
                    {"image": 4, "kind": "squared"}]),
])
def test_blitted_redraw_equals_a_fresh_full_draw(factory, changes, trained):
    """The panels redraw only their dynamic artists over a saved background: after several changes the
    pixels must equal those of a new panel drawn from scratch at the final settings (built with them, so
    its first draw is a full draw, e.g. of the colour bar that the kind switch changes)."""
    if factory == "smoothgrad":
        panel = W.SmoothGradPanel(trained, n=10)
        for change in changes:
            panel.set(**change)
        fresh = W.SmoothGradPanel(trained, n=10, kind=panel.values["kind"])
    else:
        panel = factory()
        for change in changes:
            panel.set(**change)
        fresh = factory(**panel.values)
    fresh.set(**panel.values)
    assert panel.error is None and fresh.error is None
    assert panel.image.value == fresh.image.value


def test_panels_name_lo_hi_ig_steps_and_head():
    from xaikit.widgets import GradientSaturationPanel, ThresholdPanel

    with pytest.raises(ValueError, match=r"lo must be below hi.*lo=15, hi=5"):  # was a TraitError
        ThresholdPanel(lo=15, hi=5)
    with pytest.raises(ValueError, match=r"ig_steps must be an int >= 1, got 0"):  # it said "steps"
        GradientSaturationPanel(ig_steps=0)


def test_gradient_panel_takes_any_function_of_two_inputs():
    """``GradientPanel(f=lambda b: b.sum(1))`` showed ``AttributeError: 'function' object has no attribute
    'formula'`` in its status line."""
    from xaikit.widgets import GradientPanel

    panel = GradientPanel(f=lambda b: b.sum(1))
    assert panel.error is None and panel.result.attributions["gradient"].tolist() == [1.0, 1.0]
