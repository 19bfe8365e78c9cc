"""Ground-truth masks of the image world, and ViT relevance maps checked against their definitions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.fixtures.models import scene_vit
from xaikit.attention.relevance import rollout_matrix
from xaikit.image import registry as vr
from xaikit.image import relevance as image_methods
from xaikit.lab import pixel_scores as ps
from xaikit.models import imageworld as iw
from xaikit.models.hooks import forward_hooks
from xaikit.models.vitworld import to_pixels


@pytest.fixture(scope="module")
def tiny_vit():
    from transformers import ViTConfig, ViTForImageClassification

    torch.manual_seed(0)
    config = ViTConfig(image_size=16, patch_size=4, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=32, num_labels=3, hidden_dropout_prob=0.0,
                       attention_probs_dropout_prob=0.0, attn_implementation="eager")
    return ViTForImageClassification(config).double().eval()


@pytest.fixture(scope="module")
def pixels():
    return torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64)


@pytest.mark.parametrize("world", iw.WORLDS)
def test_masks_partition_and_body_is_where_texture_is_drawn(world):
    for scene in iw.scenes("zebra", 4, world, seed=3):
        masks = scene.masks()
        assert set(masks) == {"body", "legs_head", "foam", "background"}
        total = sum(m.astype(int) for m in masks.values())
        assert (total == 1).all()  # a partition of the frame
        assert masks["body"].any() and masks["background"].any()
        before = scene.image().astype(int)
        after = iw.repaint(scene, "dotted", rng=7).image().astype(int)
        changed = (before != after).any(-1)
        assert not (changed & ~masks["body"]).any()  # repainting the body changes no other pixel
        assert changed[masks["body"]].mean() > 0.8  # and most body pixels (a few keep their value)
        if scene.has_foam:
            bare = iw.without_foam(scene).image().astype(int)
            assert not (((bare != before).any(-1)) & ~masks["foam"]).any()


def test_rollout_against_a_hand_loop():
    gen = torch.Generator().manual_seed(2)
    atts = [torch.rand(3, 5, 5, generator=gen, dtype=torch.float64) for _ in range(3)]
    atts = [a / a.sum(-1, keepdim=True) for a in atts]
    r = np.eye(5)
    for a in atts:
        m = np.zeros((5, 5))
        for i in range(5):
            for j in range(5):
                m[i, j] = 0.5 * float(a[:, i, j].mean()) + 0.5 * (i == j)
            m[i] /= m[i].sum()
        r = m @ r
    np.testing.assert_allclose(rollout_matrix(torch.stack(atts)).numpy(), r, rtol=1e-12)
    assert np.allclose(r.sum(1), 1.0)  # rows of a product of row-stochastic matrices stay stochastic


def test_attention_and_chefer_against_their_definitions(tiny_vit, pixels):
    out = tiny_vit(pixel_values=pixels, output_attentions=True)
    target = int(out.logits[0].argmax())
    got, t = vr.relevance(tiny_vit, pixels, "attention")
    assert t == target
    np.testing.assert_allclose(got.ravel(), out.attentions[-1][0].mean(0)[0, 1:].detach().numpy(), rtol=1e-10)
    # Chefer (ICCV 2021, Eqs. 5-6) by hand: R = I; R += mean_h relu(dA * A) R, block by block
    grads = torch.autograd.grad(out.logits[0, target], out.attentions)
    r = np.eye(17)
    for a, g in zip(out.attentions, grads, strict=True):
        a, g = a[0].detach().numpy(), g[0].numpy()
        r = r + np.maximum(a * g, 0).mean(0) @ r
    chefer, _ = vr.relevance(tiny_vit, pixels, "chefer")
    np.testing.assert_allclose(chefer.ravel(), r[0, 1:], rtol=1e-10)
    first, _ = vr.relevance(tiny_vit, pixels, "chefer", block=0)  # propagated through block 0 only
    a, g = out.attentions[0][0].detach().numpy(), grads[0][0].numpy()
    np.testing.assert_allclose(first.ravel(), (np.eye(17) + np.maximum(a * g, 0).mean(0))[0, 1:], rtol=1e-10)
    att0, _ = vr.relevance(tiny_vit, pixels, "attention", block=0)
    np.testing.assert_allclose(att0.ravel(), out.attentions[0][0].mean(0)[0, 1:].detach().numpy(), rtol=1e-10)
    with pytest.raises(ValueError, match="block"):
        vr.relevance(tiny_vit, pixels, "rollout", block=2)
    ga, _ = vr.relevance(tiny_vit, pixels, "grad_attention")
    a, g = out.attentions[-1][0].detach().numpy(), grads[-1][0].numpy()
    np.testing.assert_allclose(ga.ravel(), np.maximum(a * g, 0).mean(0)[0, 1:], rtol=1e-10)


def test_gradient_times_input_against_finite_differences(tiny_vit, pixels):
    got, target = vr.relevance(tiny_vit, pixels, "grad_input")
    # a patch's gradient x input is the derivative along that patch's own pixels: d/dt f(x + t x_P) at t = 0,
    # by a central difference (eps not smaller: eager attention takes its softmax in float32)
    for i, j in ((0, 0), (2, 1)):
        d = torch.zeros_like(pixels)
        d[..., 4 * i:4 * i + 4, 4 * j:4 * j + 4] = pixels[..., 4 * i:4 * i + 4, 4 * j:4 * j + 4]
        eps = 1e-2
        with torch.no_grad():
            up = tiny_vit(pixel_values=pixels + eps * d).logits[0, target]
            down = tiny_vit(pixel_values=pixels - eps * d).logits[0, target]
        assert got[i, j] == pytest.approx(float(up - down) / (2 * eps), rel=2e-3, abs=1e-7)


def test_integrated_gradients_completeness(tiny_vit, pixels):
    got, target = vr.relevance(tiny_vit, pixels, "ig", steps=256)
    with torch.no_grad():
        gap = float(tiny_vit(pixel_values=pixels).logits[0, target] - tiny_vit(pixel_values=0 * pixels).logits[0, target])
    assert got.sum() == pytest.approx(gap, rel=0.02, abs=1e-3)


def test_scores_on_hand_maps():
    mask = np.zeros((16, 16), bool)
    mask[:8, :8] = True  # the top-left 2x2 patches of a 4x4 grid
    rmap = np.zeros((4, 4))
    rmap[0, 0], rmap[3, 3], rmap[1, 1] = 3.0, 1.0, -5.0
    assert ps.localisation(rmap, mask) == pytest.approx(0.75)
    assert ps.pointing_game(rmap, mask)
    rmap[3, 3] = 4.0
    assert not ps.pointing_game(rmap, mask)
    assert np.isnan(ps.localisation(-np.ones((4, 4)), mask))


def test_perturbation_curve(tiny_vit, pixels):
    rmap, target = vr.relevance(tiny_vit, pixels, "rollout")
    order = np.argsort(-rmap.ravel())
    res = ps.perturbation_curve(tiny_vit, pixels, order, target, fractions=(0.0, 0.5, 1.0))
    with torch.no_grad():
        p0 = float(tiny_vit(pixel_values=pixels).logits.softmax(-1)[0, target])
        p1 = float(tiny_vit(pixel_values=0 * pixels).logits.softmax(-1)[0, target])
    assert res.probs[0] == pytest.approx(p0, rel=1e-10)
    assert res.probs[-1] == pytest.approx(p1, rel=1e-10)  # every patch grey
    assert res.auc == pytest.approx(0.25 * (res.probs[0] + 2 * res.probs[1] + res.probs[2]))
    with pytest.raises(ValueError, match="permutation"):
        ps.perturbation_curve(tiny_vit, pixels, order[:-1], target)


def test_bad_input_named(tiny_vit, pixels):
    with pytest.raises(ValueError, match="method"):
        vr.relevance(tiny_vit, pixels, "saliency")
    with pytest.raises(ValueError, match="pixels"):
        vr.relevance(tiny_vit, pixels[0], "rollout")


def test_relevance_panel_shows_map_mask_and_errors():
    from xaikit.widgets import RelevancePanel

    model = scene_vit()
    scenes = iw.scenes("zebra", 2, seed=0)
    panel = RelevancePanel(model, scenes, method="rollout", block=0)
    assert panel.error is None, panel.error
    r = panel.result
    assert r.rmap.shape == (8, 8)
    np.testing.assert_array_equal(r.mask, scenes[0].masks()["body"])  # exact: booleans
    assert r.localisation == pytest.approx(ps.localisation(r.rmap, r.mask))
    want, _ = vr.relevance(model, to_pixels(scenes[0].image()[None]), "rollout", block=0)
    np.testing.assert_allclose(r.rmap, want, rtol=1e-6)
    panel.set(index=1, method="chefer", block=1, part="foam")
    assert panel.error is None, panel.error
    assert panel.result.part == "foam" and panel.result.block == 1
    titles = [ax.get_title() for ax in panel.figure.axes]
    assert any("on foam" in t for t in titles)
    model.set_attn_implementation("sdpa")  # no attention weights come back: the panel says so
    panel.set(method="attention")
    assert panel.error is not None and "eager" in str(panel.error)
    model.set_attn_implementation("eager")
    panel.set(method="ig")
    assert panel.error is None, panel.error


def test_bad_input_names_the_parameter():
    from xaikit.image import registry as vr
    from xaikit.lab import pixel_scores as ps
    from xaikit.models import tiny_vit

    model = tiny_vit(seed=0)
    pixels = torch.zeros(1, 3, 32, 32)
    with pytest.raises(ValueError, match="target"):
        vr.relevance(model, pixels, "attention", target=99)
    with pytest.raises(ValueError, match="target"):
        vr.relevance(model, pixels, "attention", target=-1)
    with pytest.raises(ValueError, match="target"):
        ps.perturbation_curve(model, pixels, np.arange(16), 99)
    with pytest.raises(ValueError, match="mask must be a square"):
        ps.localisation(np.ones((4, 4)), np.ones((30, 31), dtype=bool))


@pytest.mark.parametrize("method", vr.method_names())
def test_every_method_checks_its_pixels(method):
    """One image (1, 3, H, W), float, of the model's size and channels: each mistake named with its fix, the
    same for every method (concepts.images.check_pixels), before any forward pass."""
    from xaikit.models import tiny_vit

    model = tiny_vit(seed=0)
    pixels = torch.zeros(1, 3, 32, 32)
    with pytest.raises(TypeError, match="pixels must be a torch tensor.*to_pixels"):
        vr.relevance(model, pixels.numpy(), method)
    with pytest.raises(TypeError, match="pixels must be floating point"):
        vr.relevance(model, pixels.to(torch.uint8), method)
    with pytest.raises(ValueError, match=r"pixels must be one image of shape \(1, 3, 32, 32\).*to_pixels"):
        vr.relevance(model, pixels[0], method)
    with pytest.raises(ValueError, match=r"pixels must be one image"):
        vr.relevance(model, pixels.expand(2, -1, -1, -1), method)
    with pytest.raises(ValueError, match=r"pixels has 1 channel.*RGB"):
        vr.relevance(model, pixels[:, :1], method)  # a grayscale picture
    with pytest.raises(ValueError, match=r"pixels has 4 channel"):
        vr.relevance(model, torch.zeros(1, 4, 32, 32), method)  # RGBA
    with pytest.raises(ValueError, match=r"pixels is 16x16.*32x32.*resize"):
        vr.relevance(model, pixels[..., :16, :16], method)


@pytest.mark.parametrize("method", vr.method_names())
def test_every_method_checks_its_pixel_values(method):
    """NaN/inf pixels gave all-NaN maps; channels-last pixels a shape error; an image left in 0..255 was
    explained as another picture, silently."""
    import warnings

    from xaikit.image.lrp import chefer_lrp
    from xaikit.models import tiny_vit

    model = tiny_vit(seed=0)
    pixels = torch.zeros(1, 3, 32, 32)
    for bad in (float("nan"), float("inf")):
        broken = pixels.clone()
        broken[0, 1, 3, 4] = bad
        with pytest.raises(ValueError, match=r"pixels contains NaN or inf \(1 value\)"):
            vr.relevance(model, broken, method)
        with pytest.raises(ValueError, match=r"pixels contains NaN or inf"):
            chefer_lrp(model, broken)
    with pytest.raises(ValueError, match=r"channels last.*permute\(0, 3, 1, 2\)"):
        vr.relevance(model, pixels.permute(0, 2, 3, 1), method)
    with pytest.warns(UserWarning, match=r"pixels range from 0 to 255.*0\.\.255"):
        vr.relevance(model, torch.full((1, 3, 32, 32), 255.0).clone().index_fill_(2, torch.tensor([0]), 0.0), method)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vr.relevance(model, torch.rand(1, 3, 32, 32) * 5.2 - 2.6, method, steps=4)  # ImageNet-normalised: quiet


def test_ig_runs_in_bounded_batches_with_the_same_result(tiny_vit, pixels, monkeypatch):
    seen = []
    with forward_hooks((tiny_vit.vit.embeddings, lambda m, args, out: seen.append(out.shape[0]))):
        monkeypatch.setattr(image_methods, "IG_BATCH", 1000)
        whole, target = vr.relevance(tiny_vit, pixels, "ig", steps=50)
        assert seen[-1] == 50  # one pass, as before
        seen.clear()
        monkeypatch.setattr(image_methods, "IG_BATCH", 8)
        batched, again = vr.relevance(tiny_vit, pixels, "ig", steps=50, target=target)
    assert max(seen) == 8 and sum(s for s in seen if s > 1) == 50  # was one batch of every step
    np.testing.assert_allclose(batched, whole, rtol=1e-10, atol=1e-12)  # float64: the same sum


def test_localisation_refuses_an_empty_mask_and_a_nan_map():
    body = np.zeros((32, 32), bool)
    body[:16] = True
    with pytest.raises(ValueError, match=r"localisation: mask is empty"):
        ps.localisation(np.ones((4, 4)), np.zeros((32, 32), bool))  # was 0.0
    with pytest.raises(ValueError, match=r"localisation: rmap holds NaN or inf"):
        ps.localisation(np.full((4, 4), np.nan), body)  # was nan
    with pytest.raises(ValueError, match=r"pointing_game: mask is empty"):
        ps.pointing_game(np.ones((4, 4)), np.zeros((32, 32), bool))
    assert ps.localisation(np.ones((4, 4)), body) == pytest.approx(0.5)


def test_vit_relevance_takes_a_class_name_as_target():
    """``relevance(vit, pixels, method, target='zebra')`` was refused as not an int (tcav takes names)."""
    from xaikit.image import registry as vr
    from xaikit.models.tiny import tiny_vit

    vit = tiny_vit(seed=0)
    pixels = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    rmap, target = vr.relevance(vit, pixels, "attention", target="horse")
    assert target == 1 and np.allclose(rmap, vr.relevance(vit, pixels, "attention", target=1)[0])
    with pytest.raises(ValueError, match=r"target 'zebras' is not a class of this model.*Close matches: 'zebra'"):
        vr.relevance(vit, pixels, "attention", target="zebras")
