"""A model in training mode reached through a closure, and a random ``f``.

``lambda b: model(b)`` (the README's advice instead of Captum's ``additional_forward_args``) hid a model in
training mode from the eval-mode switch: dropout stayed on, the gradient changed on every call, IG reported a
completeness gap and advised more steps, and BatchNorm failed inside torch on a batch of one. The README's
"Bad input and safety" table lists these inputs.
"""

from __future__ import annotations

import functools

import pytest
import torch
from torch import nn

import xaikit
from xaikit._fn import reachable_modules


def _dropout_model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3)).train()


model = _dropout_model()  # a notebook's top-level model: the lambda below loads it as a global
x = torch.linspace(-1.0, 1.0, 6)


def test_global_model_in_a_lambda_is_switched_to_eval_with_a_warning():
    model.train()
    f = lambda b: model(b)  # noqa: E731
    with pytest.warns(UserWarning, match=r"'model' that f calls was in training mode.*model\.eval\(\)"):
        first = xaikit.gradient(f, x, target=0)
    assert not model.training
    again = xaikit.gradient(f, x, target=0)
    torch.testing.assert_close(first, again, rtol=0, atol=0)  # dropout off: the same map every call
    x_req = x.clone().requires_grad_(True)
    model.eval()(x_req[None])[0, 0].backward()  # the oracle: autograd of the eval-mode model itself
    torch.testing.assert_close(first, x_req.grad)


@pytest.mark.parametrize("wrap", ["closure", "partial", "method", "object"])
def test_every_way_of_wrapping_a_model_is_seen(wrap):
    net = _dropout_model(1)
    if wrap == "closure":
        def make(m):
            return lambda b: m(b).softmax(-1)
        f = make(net)
    elif wrap == "partial":
        f = functools.partial(lambda m, b: m(b), net)
    elif wrap == "method":
        class Holder(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = net

            def scores(self, b):
                return self.net(b)
        f = Holder().scores
    else:
        class Call:
            def __init__(self):
                self.net = net

            def __call__(self, b):
                return self.net(b)
        f = Call()
    assert any(m is net or net in list(m.modules()) for _, m in reachable_modules(f))
    with pytest.warns(UserWarning, match=r"training mode.*\.eval\(\)"):
        xaikit.integrated_gradients(f, x, target=1, steps=16)
    assert not net.training


def test_ig_gap_is_not_blamed_on_the_steps_when_dropout_was_on():
    net = _dropout_model(2)
    f = lambda b: net(b)  # noqa: E731
    with pytest.warns(UserWarning) as record:
        result = xaikit.integrated_gradients(f, x, target=0, steps=256)
    messages = " ".join(str(w.message) for w in record)
    assert "net.eval()" in messages and "steps" not in messages  # no completeness warning advising more steps
    assert abs(result.gap) < 0.01 * max(abs(result.output_change), 1e-3)  # a ReLU net: right sum to within 1%


def test_batchnorm_in_training_mode_works_through_a_closure():
    torch.manual_seed(3)
    net = nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)).train()
    with pytest.warns(UserWarning, match=r"'net' that f calls.*net\.eval\(\)"):
        got = xaikit.gradient(lambda b: net(b), x, target=0)
    assert got.shape == x.shape and torch.isfinite(got).all()  # was a torch error on a batch of one


def test_a_random_function_is_refused_naming_eval():
    noisy = lambda b: b.sum(1) + torch.randn(b.shape[0])  # noqa: E731 - no module to switch
    with pytest.raises(ValueError, match=r"different outputs for the same input.*model\.eval\(\)"):
        xaikit.gradient(noisy, x)


def test_an_eval_model_in_a_closure_gives_no_warning():
    net = _dropout_model(4).eval()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xaikit.gradient(lambda b: net(b), x, target=2)


def test_a_fresh_layer_without_dropout_is_left_alone():
    """A Linear or Conv2d computes the same in either mode: no warning, and its mode is not changed."""
    import warnings

    torch.manual_seed(5)
    head = nn.Linear(6, 3)  # training mode, as every fresh module
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xaikit.gradient(lambda b: head(b), x, target=0)
    assert head.training
