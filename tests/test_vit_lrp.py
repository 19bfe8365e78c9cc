"""Chefer et al.'s LRP-based relevance for a ViT (xaikit.image.lrp, notebook 07 section 4).

Oracles: the transformers model itself (the float64 re-run gives its logits; its intermediates, read by
forward hooks on the model's own modules, feed an independent propagation written here the way the authors'
ViT code formulates each rule: x * grad(z, x, R / z) by autograd, matmul relevance halved, z+ as two
positive-part products), conservation block by block, and the aggregation C by hand.
"""

from __future__ import annotations

import copy
import os

import numpy as np
import pytest
import torch

from tests.fixtures.references import chefer_product_by_hand
from xaikit.image import lrp as vit_lrp
from xaikit.image import registry as vr
from xaikit.models.hooks import forward_hooks
from xaikit.models.tiny import tiny_vit


@pytest.fixture(scope="module")
def vit():
    """A tiny random ViT (3 blocks, 4 heads, 4x4 patches of 8 pixels), float32, eager attention."""
    return tiny_vit(seed=1, num_hidden_layers=3, num_labels=4)


@pytest.fixture(scope="module")
def pixels():
    return torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))


# -- the re-run equals the model ----------------------------------------------------------------------------
def test_forward_reproduces_the_models_logits_and_attention(vit, pixels):
    with torch.no_grad():
        trace = vit_lrp.relevance_forward(vit, pixels)
        own = vit(pixel_values=pixels, output_attentions=True)
        double = copy.deepcopy(vit).double()(pixel_values=pixels.double(), output_attentions=True)
    logits = own.logits[0].double()
    assert float((trace.logits - logits).abs().max()) <= 1e-5 * float(logits.abs().max())  # the float32 model
    assert float((trace.logits - double.logits[0]).abs().max()) <= 1e-6 * float(logits.abs().max())
    # eager attention takes its softmax in float32 even in a float64 model, hence 1e-6
    np.testing.assert_allclose(trace.attentions.numpy(), torch.stack(double.attentions)[:, 0].numpy(), atol=1e-6)


def test_sdpa_model_gives_the_same_map(vit, pixels):
    from xaikit.models.hooks import set_attention_implementation

    sdpa = copy.deepcopy(vit)
    set_attention_implementation(sdpa, "sdpa")
    a = vit_lrp.chefer_lrp(vit, pixels, target=2)
    b = vit_lrp.chefer_lrp(sdpa, pixels, target=2)
    np.testing.assert_allclose(a.map, b.map, rtol=1e-12, atol=0)


# -- conservation -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", [0, 3])
def test_relevance_is_conserved_block_by_block(vit, pixels, target):
    r = vit_lrp.chefer_lrp(vit, pixels, target=target)
    assert r.totals.shape == (3 + 2,)  # logits, after each of the 3 blocks, block 0's input
    np.testing.assert_allclose(r.totals, 1.0, rtol=1e-10, atol=0)
    assert r.conservation_error < 1e-10
    assert abs(r.input_relevance.sum() - 1.0) < 1e-10
    # only [CLS] reaches the classifier, so in the last block only A's [CLS] row carries relevance (exact)
    ra = r.attention_relevance
    assert np.abs(ra[-1][:, 1:]).max() == 0 and np.abs(ra[-1][:, 0]).max() > 0
    assert np.abs(ra[0][:, 1:]).max() > 0  # lower down every token's row does


# -- an independent propagation on the model's own intermediates --------------------------------------------
def _own_intermediates(model, pixels):
    """Per block, what the transformers modules themselves saw and made (float64 copy of ``model``, with SDPA
    attention: eager attention takes its softmax in float32), read by forward hooks; and the classifier's
    input."""
    from xaikit.models.hooks import set_attention_implementation

    model = copy.deepcopy(model).double()
    set_attention_implementation(model, "sdpa")
    seen, hooks = [], []

    def keep(store, name, take):
        def hook(module, args, out):
            store[name] = (args[0] if take == "in" else out)[0].detach()
        return hook

    for layer in model.vit.layers if hasattr(model.vit, "layers") else model.vit.encoder.layer:
        store = {}
        seen.append(store)
        hooks.append((layer, lambda m, a, o, s=store: s.update(x=a[0][0].detach())))
        att = layer.attention
        q, k, v, o = ((att.q_proj, att.k_proj, att.v_proj, att.o_proj) if hasattr(att, "q_proj") else
                      (att.attention.query, att.attention.key, att.attention.value, att.output.dense))
        fc1, fc2 = (layer.mlp.fc1, layer.mlp.fc2) if hasattr(layer, "mlp") else (layer.intermediate.dense,
                                                                                  layer.output.dense)
        for module, name, take in ((q, "ln1", "in"), (q, "q", "out"), (k, "k", "out"), (v, "v", "out"),
                                   (o, "ctx", "in"), (o, "attn_out", "out"), (fc1, "ln2", "in"),
                                   (fc2, "inter", "in"), (fc2, "mlp_out", "out")):
            hooks.append((module, keep(store, name, take)))
        store["mods"] = {"q": q, "k": k, "v": v, "o": o, "fc1": fc1, "fc2": fc2}
    head_in = {}
    hooks.append((model.classifier, lambda m, a, o: head_in.update(x=a[0][0].detach())))
    with forward_hooks(*hooks), torch.no_grad():
        logits = model(pixel_values=pixels.double()).logits[0]
    return model, seen, head_in["x"], logits


def _gradprop(f, inputs, r):
    """Each input's x * grad(f, x, R / f): the non-parametric rule of the authors' code (no rescaling)."""
    xs = [t.detach().clone().requires_grad_(True) for t in inputs]
    with torch.enable_grad():
        z = f(*xs)
        y = z.detach()
        s = torch.where(y.abs() > 1e-12, r / torch.where(y.abs() > 1e-12, y, torch.ones_like(y)), torch.zeros_like(y))
        grads = torch.autograd.grad(z, xs, s)
    return [x.detach() * g for x, g in zip(xs, grads, strict=True)]


def _zplus(x, linear, r):
    wp, wn = linear.weight.detach().clamp(min=0), linear.weight.detach().clamp(max=0)
    rp, rn = _gradprop(lambda a, b: a @ wp.T + b @ wn.T, [x.clamp(min=0), x.clamp(max=0)], r)
    return rp + rn


def _add(u, v, r):
    a, b = _gradprop(lambda s, t: s + t, [u, v], r)
    sa, sb, total = float(a.sum()), float(b.sum()), float(r.sum())
    return a * (abs(sa) / (abs(sa) + abs(sb)) * total / sa), b * (abs(sb) / (abs(sa) + abs(sb)) * total / sb)


def test_attention_relevance_against_an_independent_propagation(vit, pixels):
    target = 1
    model, seen, head_in, logits = _own_intermediates(vit, pixels)
    m = model.config.num_attention_heads
    n, dim = seen[0]["x"].shape
    d = dim // m

    def heads(t):
        return t.view(n, m, d).transpose(0, 1)

    onehot = torch.zeros_like(logits)
    onehot[target] = 1.0
    r = torch.zeros(n, dim, dtype=torch.float64)
    r[0] = _zplus(head_in, model.classifier, onehot)
    want = []
    for s in reversed(seen):
        mods = s["mods"]
        h = s["attn_out"] + s["x"]
        r_mlp, r_h = _add(s["mlp_out"], h, r)
        r_h = r_h + _zplus(s["ln2"], mods["fc1"], _zplus(s["inter"], mods["fc2"], r_mlp))
        r_attn, r_x = _add(s["attn_out"], s["x"], r_h)
        r_ctx = heads(_zplus(s["ctx"], mods["o"], r_attn))
        q, k, v = heads(s["q"]), heads(s["k"]), heads(s["v"])
        a = torch.softmax(q @ k.transpose(-1, -2) / d ** 0.5, -1)  # from the model's own Q and K
        r_a, r_v = (t / 2 for t in _gradprop(lambda p, w: p @ w, [a, v], r_ctx))  # their code halves both
        r_q, r_k = (t / 2 for t in _gradprop(lambda p, w: p @ w.transpose(-1, -2), [q, k], r_a))
        want.append(r_a)
        for name, rel in (("q", r_q), ("k", r_k), ("v", r_v)):
            r_x = r_x + _zplus(s["ln1"], mods[name], rel.transpose(0, 1).reshape(n, dim))
        r = r_x
    want = torch.stack(want[::-1]).numpy()
    got = vit_lrp.chefer_lrp(vit, pixels, target=target)
    assert got.attention_relevance.shape == want.shape
    np.testing.assert_allclose(got.attention_relevance, want, rtol=1e-9, atol=1e-12 * np.abs(want).max())
    np.testing.assert_allclose(got.input_relevance, r.sum(-1).numpy(), rtol=1e-9, atol=1e-12)
    # nabla A: the float64 model's own gradient of the logit with respect to its attention
    double = copy.deepcopy(vit).double()
    out = double(pixel_values=pixels.double(), output_attentions=True)
    grads = torch.autograd.grad(out.logits[0, target], out.attentions)
    want_g = torch.stack([g[0] for g in grads]).numpy()
    np.testing.assert_allclose(got.gradients, want_g, rtol=1e-4, atol=1e-6 * np.abs(want_g).max())


def test_map_is_the_cls_row_of_the_product_by_hand(vit, pixels):
    r = vit_lrp.chefer_lrp(vit, pixels, target=0)
    ra, g = r.attention_relevance, r.gradients
    c = chefer_product_by_hand(ra, g)
    np.testing.assert_allclose(r.matrix, c, rtol=1e-12)
    np.testing.assert_allclose(r.map.ravel(), c[0, 1:], rtol=1e-12)
    assert r.map.shape == (4, 4) and (r.map >= 0).all() and r.map.max() > 0
    # block 0 only: I + the first block's term; and the method registered in vit_relevance gives the same maps
    first = vit_lrp.chefer_lrp(vit, pixels, target=0, block=0)
    abar0 = np.eye(ra.shape[-1]) + np.maximum(g[0] * ra[0], 0).mean(0)
    np.testing.assert_allclose(first.map.ravel(), abar0[0, 1:], rtol=1e-12)
    via, t = vr.relevance(vit, pixels, "chefer_lrp", target=0)
    np.testing.assert_allclose(via, r.map, rtol=1e-12)
    assert t == 0 and "chefer_lrp" in vr.method_names()
    pred, t = vr.relevance(vit, pixels, "chefer_lrp")
    with torch.no_grad():
        assert t == int(vit(pixel_values=pixels).logits[0].argmax())


def test_passes_are_reported(vit, pixels):
    from xaikit.models.passes import count_passes

    with count_passes(vit) as cost:
        vit_lrp.chefer_lrp(vit, pixels, target=0)
    assert cost.forward == pytest.approx(1) and cost.backward == pytest.approx(2)


# -- bad input ----------------------------------------------------------------------------------------------
def test_bad_input_named(vit, pixels):
    from xaikit.models.tiny import tiny_bert

    # the pixel checks every ViT method shares: tests/test_vit_relevance.py::test_every_method_checks_its_pixels
    with pytest.raises(ValueError, match=r"pixels has 1 channel.*RGB"):
        vit_lrp.chefer_lrp(vit, pixels[:, :1])  # called directly, not through vit_relevance
    with pytest.raises(ValueError, match=r"target.*4 classes"):
        vit_lrp.chefer_lrp(vit, pixels, target=4)
    with pytest.raises(ValueError, match="block"):
        vit_lrp.chefer_lrp(vit, pixels, block=3)
    with pytest.raises(ValueError, match=r"BertForSequenceClassification.*ViTForImageClassification.*load_vit"):
        vit_lrp.chefer_lrp(tiny_bert(seed=0), pixels)
    with pytest.raises(ValueError, match="target"):
        vr.relevance(vit, pixels, "chefer_lrp", target=-1)


# -- the embedded models ------------------------------------------------------------------------------------
@pytest.mark.prepared
@pytest.mark.parametrize("world", ["main", "control"])
def test_embedded_vit_reproduction_and_conservation(world):
    from xaikit.models import imageworld as iw
    from xaikit.models import load_vit, vitworld

    if not vitworld.is_built(world):
        message = f"the embedded {world} ViT is not built; run `python -m xaikit prepare`"
        if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:
            pytest.fail(message)
        pytest.skip(message)
    model, _ = load_vit("embedded" if world == "main" else "embedded-control")
    for scene in iw.scenes("zebra", 2, world, seed=5):
        px = vitworld.to_pixels(scene.image()[None])
        r = vit_lrp.chefer_lrp(model, px)
        with torch.no_grad():
            own = model(pixel_values=px).logits[0].double().numpy()
        assert np.abs(r.logits - own).max() <= 1e-5 * np.abs(own).max()
        assert r.target == int(own.argmax())
        assert r.conservation_error < 1e-10, r.totals
        assert r.map.shape == (model.config.image_size // model.config.patch_size,) * 2 and r.map.max() > 0
