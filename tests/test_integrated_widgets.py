"""The notebook-02 panels, driven from Python: set controls, check results, errors and figures."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from xaikit.widgets import IGBaselinePanel, IGCompletenessPanel, IGPathPanel, IGStepsPanel


@pytest.fixture(scope="module")
def image_model():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.Tanh(), nn.Linear(16, 10)).eval()
    images = torch.rand(4, 1, 8, 8)
    return model, images


def test_steps_panel_gap_follows_the_controls(image_model):
    model, images = image_model
    panel = IGStepsPanel(model, images[0], torch.zeros(1, 8, 8), target=3, steps=2)
    assert panel.error is None and set(panel.result.curves) == {"riemann_left", "riemann_right", "riemann_middle",
                                                                  "riemann_trapezoid", "gausslegendre"}
    coarse = panel.result.relative_gap
    fine = panel.set(steps=200, rule="gausslegendre")
    assert fine.result.steps == 200 and fine.result.rule == "gausslegendre"
    assert fine.relative_gap < coarse and fine.within_tolerance
    panel.set(steps=1, rule="riemann_trapezoid")  # the trapezoid needs two nodes: shown, not raised
    assert isinstance(panel.error, ValueError) and "steps must be >= 2" in str(panel.error)
    assert "xk-error" in panel.status.value
    panel.set(steps=10)
    assert panel.error is None and panel.result.result.steps == 10
    assert len(panel.figure.axes) >= 2 and panel.image.value[:4] == b"\x89PNG"


def test_path_panel_symmetry():
    panel = IGPathPanel()
    a = panel.result.attributions
    assert float(a[0]) == pytest.approx(float(a[1]), abs=1e-6)
    first = panel.set(path="x1 first, then x2").attributions
    second = panel.set(path="x2 first, then x1").attributions
    assert float(first[0]) > float(first[1]) + 0.05
    torch.testing.assert_close(first, second.flip(0))
    assert panel.set(path="powers: (alpha, alpha^3)").gap == pytest.approx(0.0, abs=1e-4)


def test_baseline_panel_retunes_its_parameter(image_model):
    model, images = image_model
    panel = IGBaselinePanel(model, images, data=torch.rand(10, 1, 8, 8), steps=16)
    assert panel.result.kind == "zero"
    panel.set(baseline="blurred")
    assert panel.controls["param"].description == "sigma" and panel.controls["param"].value == 1.0
    assert panel.result.kind == "blurred" and panel.result.param == 1.0
    panel.set(baseline="expected")
    assert panel.controls["param"].value == 8 and panel.result.baselines.shape == (8, 1, 8, 8)
    panel.set(param=3)
    assert panel.result.baselines.shape == (3, 1, 8, 8)
    panel.set(baseline="constant", image=2)
    assert float(panel.result.baselines.mean()) == pytest.approx(0.5)
    assert panel.error is None


def test_completeness_panel_running_sum_reaches_delta(image_model):
    model, images = image_model
    panel = IGCompletenessPanel(model, images[1], torch.zeros(1, 8, 8), steps=100)
    result = panel.result
    assert result.running_sum()[-1] == pytest.approx(result.output_change, abs=0.05 * abs(result.output_change))
    panel.set(rule="gausslegendre", steps=30)
    assert panel.result.relative_gap < 1e-3
    assert len(panel.figure.axes) >= 7  # six strip images and two curves


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
