"""Captum's keyword names beside xaikit's (README, "Coming from Captum"; xaikit._aliases).

Three kinds of check: each Captum spelling gives what xaikit's own spelling gives; two spellings of one
option with different values, and a Captum name that means something else here, are refused with a message
naming xaikit's spelling; and, as the oracle, the same call spelled the Captum way in xaikit and in Captum
itself gives the same attributions.
"""

from __future__ import annotations

import pytest
import torch

from xaikit.tensor import gradients as G
from xaikit.tensor.baselines import baseline_attributions
from xaikit.tensor.integrated import integrated_gradients
from xaikit.tensor.paths import path_integrated_gradients

# few steps on purpose (the aliases, not the integral, are under test)
pytestmark = pytest.mark.filterwarnings("ignore::xaikit.tensor.integrated.CompletenessWarning")


def mlp(seed: int = 0, d_in: int = 6, d_out: int = 3) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(d_in, 16), torch.nn.Tanh(), torch.nn.Linear(16, d_out)).eval()


def cnn(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.Tanh(), torch.nn.Flatten(),
                               torch.nn.Linear(4 * 6 * 6, 5)).eval()


def attributions(result) -> torch.Tensor:
    for name in ("attributions", "scores"):
        if hasattr(result, name):
            return torch.as_tensor(getattr(result, name))
    return result


def close(a, b, atol=1e-6):
    torch.testing.assert_close(attributions(a).double(), attributions(b).double(), atol=atol, rtol=0)


X = torch.randn(6, generator=torch.Generator().manual_seed(5))
B = torch.randn(6, generator=torch.Generator().manual_seed(6))
IMAGE = torch.rand(1, 6, 6, generator=torch.Generator().manual_seed(7))

# (function, arguments, Captum's keywords, xaikit's keywords): each pair must give the same result
SAME = [
    (integrated_gradients, (mlp(), X), {"n_steps": 12}, {"steps": 12}),
    (integrated_gradients, (mlp(), X), {"baselines": B}, {"baseline": B}),
    (integrated_gradients, (mlp(), X), {"baselines": 0.5}, {"baseline": 0.5}),
    (integrated_gradients, (mlp(), X), {"internal_batch_size": 3, "n_steps": 10}, {"batch_size": 3, "steps": 10}),
    *[(integrated_gradients, (mlp(), X), {"method": r, "n_steps": 9}, {"rule": r, "steps": 9})
      for r in ("riemann_left", "riemann_right", "riemann_middle", "gausslegendre")],
    (path_integrated_gradients, (mlp(), X), {"n_steps": 30, "method": "gausslegendre", "baselines": B,
                                             "internal_batch_size": 7},
     {"steps": 30, "rule": "gausslegendre", "baseline": B, "batch_size": 7}),
    (baseline_attributions, (cnn(), IMAGE), {"n_steps": 8, "method": "riemann_middle", "internal_batch_size": 3},
     {"steps": 8, "rule": "riemann_middle", "batch_size": 3}),
    *[(G.smoothgrad, (mlp(), X), {"nt_type": t, "nt_samples": 6, "seed": 1}, {"kind": k, "n": 6, "seed": 1})
      for t, k in (("smoothgrad", "smoothgrad"), ("smoothgrad_sq", "squared"), ("vargrad", "vargrad"))],
    (G.smoothgrad, (mlp(), X), {"kind": "smoothgrad_sq", "n": 6, "seed": 2}, {"kind": "squared", "n": 6, "seed": 2}),
    (G.smoothgrad, (mlp(), X), {"nt_samples": 8, "nt_samples_batch_size": 3, "seed": 3},
     {"n": 8, "batch_size": 3, "seed": 3}),
]


@pytest.mark.parametrize(("fn", "args", "captum", "ours"), SAME,
                         ids=[f"{s[0].__name__}-{'-'.join(s[2])}-{i}" for i, s in enumerate(SAME)])
def test_captum_spelling_gives_xaikits_result(fn, args, captum, ours):
    close(fn(*args, target=1, **captum), fn(*args, target=1, **ours))


def test_captum_spelling_is_not_ignored():
    """The aliases reach the method: a different Captum value gives a different result."""
    a = integrated_gradients(mlp(), X, n_steps=2, method="riemann_left", target=1)
    b = integrated_gradients(mlp(), X, n_steps=40, method="gausslegendre", target=1)
    assert a.steps == 2 and a.rule == "riemann_left" and b.steps == 40 and b.rule == "gausslegendre"
    assert float((a.attributions - b.attributions).abs().max()) > 1e-3
    s = G.smoothgrad(mlp(), X, nt_type="smoothgrad", nt_samples=6, seed=1, target=1)
    s2 = G.smoothgrad(mlp(), X, nt_type="smoothgrad_sq", nt_samples=6, seed=1, target=1)
    assert float((s2 - s ** 2).abs().max()) > 1e-6 and bool((s2 >= 0).all())  # mean of squares, not the square


def test_noisy_gradients_and_reduce_take_captums_names():
    ours = G.noisy_gradients(mlp(), X, n=5, batch_size=2, seed=4, target=0)
    theirs = G.noisy_gradients(mlp(), X, nt_samples=5, nt_samples_batch_size=2, seed=4, target=0)
    close(ours.grads, theirs.grads)
    close(ours.reduce("smoothgrad_sq"), ours.reduce("squared"))


def test_text_ig_takes_captums_names(model, tok):
    from xaikit.text.text_ig import baseline_ids, embedding_integrated_gradients, text_integrated_gradients

    text = "i like the movie"
    close(text_integrated_gradients(model, tok, text, n_steps=8, method="gausslegendre", internal_batch_size=3),
          text_integrated_gradients(model, tok, text, steps=8, rule="gausslegendre", batch_size=3))
    ids = tok(text, return_tensors="pt")["input_ids"]
    base = baseline_ids(ids, tok, "mask")
    close(embedding_integrated_gradients(model, ids, baselines=base, n_steps=6, target=1),
          embedding_integrated_gradients(model, ids, base, steps=6, target=1))


# -- refused -------------------------------------------------------------------------------------------------
def test_both_spellings_with_different_values_are_refused():
    with pytest.raises(TypeError, match=r"n_steps=20 \(Captum's name\) and steps=10 .*differ; pass only one"):
        integrated_gradients(mlp(), X, steps=10, n_steps=20, target=1)
    with pytest.raises(TypeError, match=r"n_steps=20 .* steps=10"):  # xaikit's given by position
        integrated_gradients(mlp(), X, None, 10, n_steps=20, target=1)
    with pytest.raises(TypeError, match=r"baselines=Tensor of shape \(6,\) .* baseline=Tensor of shape \(6,\)"):
        integrated_gradients(mlp(), X, baseline=B, baselines=B + 1, target=1)
    with pytest.raises(TypeError, match=r"method='gausslegendre' .* rule='riemann_left'"):
        integrated_gradients(mlp(), X, rule="riemann_left", method="gausslegendre", target=1)
    with pytest.raises(TypeError, match=r"nt_type='smoothgrad_sq' .* kind='vargrad'"):
        G.smoothgrad(mlp(), X, kind="vargrad", nt_type="smoothgrad_sq", target=1)
    with pytest.raises(TypeError, match=r"nt_samples=4 .* n=5"):
        G.smoothgrad(mlp(), X, 0.1, 5, nt_samples=4, target=1)
    # the same value under both names is one option given twice, not a conflict
    close(integrated_gradients(mlp(), X, B, steps=10, n_steps=10, baselines=B.clone(), target=1),
          integrated_gradients(mlp(), X, B, steps=10, target=1))
    close(G.smoothgrad(mlp(), X, kind="squared", nt_type="smoothgrad_sq", n=4, seed=0, target=1),
          G.smoothgrad(mlp(), X, kind="squared", n=4, seed=0, target=1))
    close(G.smoothgrad(mlp(), X, kind="smoothgrad_sq", nt_type="smoothgrad_sq", n=4, seed=0, target=1),
          G.smoothgrad(mlp(), X, kind="squared", n=4, seed=0, target=1))


def test_captum_names_that_mean_something_else_are_refused_with_xaikits_spelling(model, tok):
    with pytest.raises(ValueError, match=r"riemann_trapezoid.*\(n-1\)/n.*rule='riemann_trapezoid'"):
        integrated_gradients(mlp(), X, method="riemann_trapezoid", target=1)
    with pytest.raises(TypeError, match=r"stdevs=.*fraction of the input's value range.*sigma=s, value_range=1"):
        G.smoothgrad(mlp(), X, stdevs=0.3, target=1)
    with pytest.raises(TypeError, match=r"baselines=.*embedding_integrated_gradients"):
        from xaikit.text.text_ig import text_integrated_gradients

        text_integrated_gradients(model, tok, "i like the movie", baselines=torch.zeros(1, 6, dtype=torch.long))
    with pytest.raises(ValueError, match=r"kind must be one of 'smoothgrad', 'squared', 'vargrad'"):
        G.smoothgrad(mlp(), X, kind="smoothgrad_squared", target=1)  # other misspellings still refused
    assert "``n_steps`` (``steps``)" in integrated_gradients.__doc__  # the docstring lists the aliases


# -- the oracle: Captum itself -------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["riemann_left", "riemann_right", "riemann_middle", "gausslegendre"])
def test_captum_spelled_call_equals_captum(method):
    from captum.attr import IntegratedGradients

    model = mlp(1)
    kwargs = {"baselines": B, "target": 2, "n_steps": 24, "method": method, "internal_batch_size": 5}
    ours = integrated_gradients(model, X, **kwargs)
    theirs = IntegratedGradients(model).attribute(X[None], **{**kwargs, "baselines": B[None]})[0]
    close(ours, theirs, atol=1e-5)
    assert float(theirs.abs().max()) > 1e-2  # not two zeros


def test_xaikits_trapezoid_is_captums_times_n_over_n_minus_1():
    """What the refusal of method='riemann_trapezoid' says, checked against Captum."""
    from captum.attr import IntegratedGradients

    model, n = mlp(2), 24
    ours = integrated_gradients(model, X, B, steps=n, rule="riemann_trapezoid", target=0)
    theirs = IntegratedGradients(model).attribute(X[None], B[None], target=0, n_steps=n, method="riemann_trapezoid")
    close(ours.attributions * (n - 1) / n, theirs[0], atol=1e-5)


def test_captum_spelled_layer_ig_equals_captum(model, tok):
    from captum.attr import LayerIntegratedGradients

    from xaikit.models.arch import embeddings_module
    from xaikit.text.text_ig import baseline_ids, embedding_integrated_gradients

    enc = tok("she hates the book", return_tensors="pt")
    base = baseline_ids(enc["input_ids"], tok, "pad")
    kwargs = {"baselines": base, "target": 1, "n_steps": 12, "method": "gausslegendre", "internal_batch_size": 4}
    ours = embedding_integrated_gradients(model, enc["input_ids"], attention_mask=enc["attention_mask"], **kwargs)
    lig = LayerIntegratedGradients(lambda ids, mask: model(input_ids=ids, attention_mask=mask).logits,
                                   embeddings_module(model))
    theirs = lig.attribute(enc["input_ids"], additional_forward_args=(enc["attention_mask"],), **kwargs)[0]
    close(ours.attributions, theirs, atol=1e-5)
    assert float(theirs.abs().max()) > 1e-6


@pytest.mark.parametrize("nt_type", ["smoothgrad", "smoothgrad_sq", "vargrad"])
def test_captum_spelled_noise_tunnel_equals_captum_on_a_linear_model(nt_type):
    """A linear model's gradient is its weight row whatever the noise, so Captum's NoiseTunnel and xaikit,
    each with its own noise, must agree exactly: w, w**2 and 0."""
    from captum.attr import NoiseTunnel, Saliency

    torch.manual_seed(0)
    net = torch.nn.Linear(6, 3).eval()
    kwargs = {"nt_type": nt_type, "nt_samples": 16, "nt_samples_batch_size": 5, "target": 2}
    ours = G.smoothgrad(net, X, sigma=0.3, value_range=1, seed=0, **kwargs)  # Captum's stdevs=0.3
    theirs = NoiseTunnel(Saliency(net)).attribute(X[None], stdevs=0.3, abs=False, **kwargs)[0]
    close(ours, theirs, atol=1e-6)
    w = net.weight[2].detach()
    close(ours, {"smoothgrad": w, "smoothgrad_sq": w ** 2, "vargrad": torch.zeros(6)}[nt_type], atol=1e-6)


@pytest.mark.parametrize("nt_type", ["smoothgrad", "smoothgrad_sq", "vargrad"])
def test_captum_spelled_noise_tunnel_equals_captum_in_expectation(nt_type):
    """A curved model: different noise draws, so the means over many samples agree within sampling error."""
    from captum.attr import NoiseTunnel, Saliency

    net = mlp(4)
    kwargs = {"nt_type": nt_type, "nt_samples": 4000, "nt_samples_batch_size": 1000, "target": 1}
    ours = G.smoothgrad(net, X, sigma=0.4, value_range=1, seed=0, **kwargs)
    torch.manual_seed(0)
    theirs = NoiseTunnel(Saliency(net)).attribute(X[None], stdevs=0.4, abs=False, **kwargs)[0]
    scale = float(theirs.abs().max())
    assert float((ours - theirs).abs().max()) < 0.06 * scale and scale > 1e-4


def test_layer_ig_without_a_baseline_is_captums_default(model, tok):
    """No baseline: the padding id everywhere, Captum's zero ids in a BERT vocabulary. It was the input itself,
    a path of length zero, so every attribution and the gap were exactly 0."""
    import warnings

    from captum.attr import LayerIntegratedGradients

    from xaikit.models.arch import embeddings_module
    from xaikit.text.text_ig import embedding_integrated_gradients

    assert model.config.pad_token_id == 0
    enc = tok("she hates the book", return_tensors="pt")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ours = embedding_integrated_gradients(model, enc["input_ids"], target=1, steps=4)
    assert all("text_integrated_gradients" not in str(w.message) for w in caught)  # it named another function
    assert any("embedding_integrated_gradients:" in str(w.message) for w in caught)  # the gap of 4 steps
    ours = embedding_integrated_gradients(model, enc["input_ids"], target=1, steps=12, rule="gausslegendre")
    lig = LayerIntegratedGradients(lambda ids: model(input_ids=ids).logits, embeddings_module(model))
    theirs = lig.attribute(enc["input_ids"], target=1, n_steps=12, method="gausslegendre")[0]
    close(ours.attributions, theirs, atol=1e-5)
    assert float(ours.attributions.abs().max()) > 1e-3 and ours.baseline_ids == [0] * enc["input_ids"].shape[1]
