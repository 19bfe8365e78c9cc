"""The generated image world: seeded, well-formed, and obeying its documented rules."""

from __future__ import annotations

import numpy as np
import pytest

from xaikit.models import imageworld as iw
from xaikit.models import textures as tx


def test_seeded_and_well_formed():
    a, ya, names = iw.make_dataset(20, "main", seed=3)
    b, yb, _ = iw.make_dataset(20, "main", seed=3)
    c, _, _ = iw.make_dataset(20, "main", seed=4)
    assert a.dtype == np.uint8 and a.shape == (20, 64, 64, 3)
    np.testing.assert_array_equal(a, b)  # exact: uint8 pictures of the same seeded call
    np.testing.assert_array_equal(ya, yb)  # exact: integer labels
    assert not np.array_equal(a, c)  # exact: uint8; another seed
    assert names == ("zebra", "horse", "leopard", "sheep", "flag")
    assert np.bincount(ya, minlength=5).tolist() == [4] * 5  # balanced
    for concept in iw.TEXTURES:
        x = iw.concept_images(concept, 3, seed=1)
        assert x.shape == (3, 64, 64, 3)
        np.testing.assert_array_equal(x, iw.concept_images(concept, 3, seed=1))  # exact: uint8, the same seeded call
    assert iw.random_images(4, seed=0).shape == (4, 64, 64, 3)
    assert iw.to_pil(a[0]).size == (64, 64)


def _stripe_energy(mask):
    """How strongly a binary pattern alternates along its best direction: large for stripes."""
    f = np.abs(np.fft.fft2(mask - mask.mean()))
    return f.max() / (f.sum() + 1e-9)


def test_textures_differ_as_described():
    rng = np.random.default_rng(0)
    stripes = np.mean([_stripe_energy(tx._pattern("striped", rng)) for _ in range(10)])
    dots_fill = np.mean([tx._pattern("dotted", rng).mean() for _ in range(10)])
    plain = tx._pattern("plain", rng)
    assert stripes > 2 * np.mean([_stripe_energy(tx._pattern("bubbly", rng)) for _ in range(10)])
    assert 0.05 < dots_fill < 0.3  # spots on a plain ground
    # the dark colour covers stripes > bubbles > dots (see the module docstring)
    bubbles_fill = np.mean([tx._pattern("bubbly", rng).mean() for _ in range(10)])
    stripes_fill = np.mean([tx._pattern("striped", rng).mean() for _ in range(10)])
    assert dots_fill < bubbles_fill < stripes_fill
    assert plain.sum() == 0  # exact: the plain pattern has no dark pixel at all
    check = tx._pattern("checkered", rng, angle=0.0)
    assert 0.4 < check.mean() < 0.6


def test_control_world_spreads_textures_over_classes():
    assert iw.classes("control") == ("zebra", "leopard", "sheep", "flag")
    assert "zebra" in iw.classes("main")
    # the main world's zebra is always striped, the control world's zebra takes any texture
    assert iw._MAIN["zebra"] == ("quadruped", "striped")
    assert all(texture is None for _, texture in iw._CONTROL.values())
    a = iw.render("zebra", "main", 0)
    b = iw.render("zebra", "main", 0, texture_kind="plain")
    assert a.shape == b.shape == (64, 64, 3) and not np.array_equal(a, b)  # exact: uint8 pictures


def test_main_world_gives_the_three_concepts_their_documented_roles():
    rules = iw._MAIN
    # stripes on zebras only; dots on two other classes; the zebra's same-silhouette neighbour is plain
    assert [c for c, (_, t) in rules.items() if t == "striped"] == ["zebra"]
    assert sorted(c for c, (_, t) in rules.items() if t == "dotted") == ["leopard", "sheep"]
    assert rules["horse"] == ("quadruped", "plain")
    assert not any(t == "bubbly" for _, t in rules.values())  # bubbles only as foam
    # foam: 2.5 times as likely beside a zebra; in the control world one rate for every class
    assert iw.foam_rate("zebra") == pytest.approx(2.5 * iw.foam_rate("horse"))  # 0.2 is not a binary fraction
    assert len({iw.foam_rate(c, "control") for c in iw.classes("control")}) == 1
    assert iw.foam_rate("zebra", "control") == pytest.approx(np.mean([iw.foam_rate(c) for c in iw.classes()]))


def test_foam_rate_controls_the_puddle(monkeypatch):
    monkeypatch.setitem(iw.FOAM_RATE, "zebra", 0.0)
    dry = iw.render("zebra", "main", 5)
    monkeypatch.setitem(iw.FOAM_RATE, "zebra", 1.0)
    wet = iw.render("zebra", "main", 5)
    assert not np.array_equal(dry, wet)  # exact: uint8 pictures
    assert np.abs(dry[:40].astype(int) - wet[:40]).mean() < np.abs(dry[44:].astype(int) - wet[44:]).mean()


def test_texture_twins_change_the_texture_and_keep_the_scene():
    x, y, _ = iw.make_dataset(40, "control", seed=7)
    t = iw.texture_twins(40, "control", seed=7)
    assert t.shape == x.shape and t.dtype == np.uint8
    np.testing.assert_array_equal(t, iw.texture_twins(40, "control", seed=7))  # exact: uint8, same seeded call
    assert all(not np.array_equal(a, b) for a, b in zip(x, t, strict=True))  # exact: uint8 pictures
    # the background far from the object is the same picture (up to pixel noise): compare 8x8 corner blocks
    corners = [(slice(0, 8), slice(0, 8)), (slice(0, 8), slice(56, 64))]
    diffs = [np.abs(a[r, c].astype(float).mean((0, 1)) - b[r, c].astype(float).mean((0, 1))).max()
             for a, b in zip(x, t, strict=True) for r, c in corners]
    assert np.median(diffs) < 2.0


def test_bad_input():
    with pytest.raises(ValueError, match="world must be one of"):
        iw.make_dataset(4, "mars")
    with pytest.raises(ValueError, match="concept must be one of"):
        iw.concept_images("stripy")
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        iw.random_images(0)
    with pytest.raises(ValueError, match="label must be one of"):
        iw.render("horse", "control")


def test_control_training_holds_a_picture_and_its_texture_twin_to_one_answer():
    """The invariance term of the control recipe works: with a large weight, a few steps leave a tiny
    control ViT's logits for a picture and its twin closer together than the same steps without it."""
    import torch

    from xaikit.models import vitworld

    small = dict(n_train=64, n_test=8, epochs_control=2, batch_size=16, hidden_size=32, intermediate_size=64,
                 num_hidden_layers=1, num_attention_heads=2, lr_control=3e-3, warmup_fraction=0.1,
                 max_extra_epochs=0)  # these few steps only, not the recipe's extra epochs
    x = iw.make_dataset(64, "control", seed=0)[0]
    t = iw.texture_twins(64, "control", seed=0)
    gaps = {}
    for weight in (0.0, 100.0):
        model, metrics = vitworld.train_vit("control", progress=False, device="cpu", control_invariance=weight, **small)
        with torch.no_grad():
            a = model(pixel_values=vitworld.to_pixels(x)).logits
            b = model(pixel_values=vitworld.to_pixels(t)).logits
        gaps[weight] = float((a - b).abs().mean())
        assert metrics["recipe"]["control_invariance"] == weight
    assert gaps[100.0] < 0.5 * gaps[0.0], gaps


def test_dataset_with_twins_is_make_dataset_and_texture_twins_in_one_pass():
    x, y, names, t = iw.dataset_with_twins(12, "control", seed=4)
    x0, y0, names0 = iw.make_dataset(12, "control", seed=4)
    np.testing.assert_array_equal(x, x0)  # exact: uint8 pictures of the same seeded draws
    np.testing.assert_array_equal(y, y0)  # exact: integer labels
    np.testing.assert_array_equal(t, iw.texture_twins(12, "control", seed=4))  # exact: uint8, the same seeded call
    assert names == names0


def test_rings_in_windows_equal_the_whole_frame():
    """Bubbly's rings are computed in a window around each centre only; the mask is the whole-frame formula's,
    bit for bit (centres up to 4 pixels outside the frame, the radii and width bubbly and foam use)."""
    from xaikit.models.textures import SIZE, _rings

    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)
    for seed in range(200):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(1, 40))
        cx, cy = rng.uniform(-4, SIZE + 4, (2, n, 1, 1))
        r = rng.uniform(3.0, 7.0, (n, 1, 1))
        whole = (np.abs(np.sqrt((xx - cx) ** 2 + (yy - cy) ** 2) - r) < 1.4).any(axis=0).astype(np.float32)
        got = _rings(cx, cy, r, 1.4)
        assert got.dtype == np.float32 and np.array_equal(got, whole), seed  # exact: a 0/1 mask

