"""The generated image world: seeded, well-formed, and obeying its documented rules."""

from __future__ import annotations

import numpy as np
import pytest

from xaikit.concepts import imageworld as iw


def test_seeded_and_well_formed():
    a, ya, names = iw.make_dataset(20, "main", seed=3)
    b, yb, _ = iw.make_dataset(20, "main", seed=3)
    c, _, _ = iw.make_dataset(20, "main", seed=4)
    assert a.dtype == np.uint8 and a.shape == (20, 64, 64, 3)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ya, yb)
    assert not np.array_equal(a, c)
    assert names == ("zebra", "horse", "leopard", "sheep", "flag")
    assert np.bincount(ya, minlength=5).tolist() == [4] * 5  # balanced
    for concept in iw.TEXTURES:
        x = iw.concept_images(concept, 3, seed=1)
        assert x.shape == (3, 64, 64, 3)
        np.testing.assert_array_equal(x, iw.concept_images(concept, 3, seed=1))
    assert iw.random_images(4, seed=0).shape == (4, 64, 64, 3)
    assert iw.to_pil(a[0]).size == (64, 64)


def _stripe_energy(mask):
    """How strongly a binary pattern alternates along its best direction: large for stripes."""
    f = np.abs(np.fft.fft2(mask - mask.mean()))
    return f.max() / (f.sum() + 1e-9)


def test_textures_differ_as_described():
    rng = np.random.default_rng(0)
    stripes = np.mean([_stripe_energy(iw._pattern("striped", rng)) for _ in range(10)])
    dots_fill = np.mean([iw._pattern("dotted", rng).mean() for _ in range(10)])
    plain = iw._pattern("plain", rng)
    assert stripes > 2 * np.mean([_stripe_energy(iw._pattern("bubbly", rng)) for _ in range(10)])
    assert 0.05 < dots_fill < 0.3  # small dots on a plain ground
    # the dark colour covers stripes > bubbles > dots (recipe v3; see the module docstring)
    bubbles_fill = np.mean([iw._pattern("bubbly", rng).mean() for _ in range(10)])
    stripes_fill = np.mean([iw._pattern("striped", rng).mean() for _ in range(10)])
    assert dots_fill < bubbles_fill < stripes_fill
    assert plain.sum() == 0
    check = iw._pattern("checkered", rng, angle=0.0)
    assert 0.4 < check.mean() < 0.6


def test_control_world_spreads_textures_over_classes():
    assert iw.classes("control") == ("zebra", "leopard", "sheep", "flag")
    assert "zebra" in iw.classes("main")
    # the main world's zebra is always striped, the control world's zebra takes any texture
    assert iw._MAIN["zebra"] == ("quadruped", "striped")
    assert all(texture is None for _, texture in iw._CONTROL.values())
    a = iw.render("zebra", "main", 0)
    b = iw.render("zebra", "main", 0, texture_kind="plain")
    assert a.shape == b.shape == (64, 64, 3) and not np.array_equal(a, b)


def test_bad_input():
    with pytest.raises(ValueError, match="world must be one of"):
        iw.make_dataset(4, "mars")
    with pytest.raises(ValueError, match="concept must be one of"):
        iw.concept_images("stripy")
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        iw.random_images(0)
    with pytest.raises(ValueError, match="label must be one of"):
        iw.render("horse", "control")
