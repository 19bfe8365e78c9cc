"""The ground truth by intervention (notebook 05): a scene taken apart into layers, one layer changed."""

from __future__ import annotations

import numpy as np
import pytest

from xaikit.lab import intervention
from xaikit.models import imageworld as iw
from xaikit.models.tiny import tiny_vit


@pytest.mark.parametrize("world", iw.WORLDS)
def test_scenes_are_the_class_images(world):
    for label in iw.classes(world):
        images = iw.class_images(label, 6, world, seed=2)
        rebuilt = np.stack([s.image() for s in iw.scenes(label, 6, world, seed=2)])
        np.testing.assert_array_equal(rebuilt, images)  # exact: the same random numbers, the same uint8 pixels


def test_repainting_changes_the_body_only():
    scenes = iw.scenes("zebra", 8, "main", seed=0)
    for i, s in enumerate(scenes):
        before = s.image()
        # the same texture layer put back: nothing changes
        np.testing.assert_array_equal(iw.repaint(s, "plain", 1).image(), iw.repaint(s, "plain", 1).image())
        np.testing.assert_array_equal(type(s)(**{**s.__dict__}).image(), before)  # exact: the same layers
        for kind in ("plain", "dotted", "bubbly", "striped"):
            after = iw.repaint(s, kind, np.random.default_rng([i, 5])).image()
            changed = np.any(after != before, axis=-1)  # (H, W)
            assert not changed[~s.body_mask].any(), kind  # exact: every pixel off the body is the same uint8
            assert changed[s.body_mask].mean() > 0.3, kind  # the body is repainted (new colours)
        assert iw.repaint(s, "dotted", 3).texture_kind == "dotted"


def test_foam_is_added_or_taken_away_and_nothing_else():
    scenes = iw.scenes("zebra", 12, "main", seed=1)
    assert 0 < sum(s.has_foam for s in scenes) < len(scenes)  # both kinds among these twelve
    for i, s in enumerate(scenes):
        with_, without = iw.with_foam(s, i).image(), iw.without_foam(s).image()
        np.testing.assert_array_equal(with_ if s.has_foam else without, s.image())  # exact: the scene as drawn
        changed = np.any(with_ != without, axis=-1)
        foam = iw.with_foam(s, i).foam_mask
        assert changed.any() and not changed[~foam].any()  # exact: only the puddle's pixels differ
        assert not changed[s.body_mask | s.dark_mask].any()  # the object stands in front of the puddle


def test_intervene_measures_each_variant_on_the_same_scenes():
    model = tiny_vit(seed=0, image_size=64, labels=("zebra", "horse", "leopard"))
    scenes = iw.scenes("zebra", 6, "main", seed=0)
    table = intervention.intervene(model, scenes, target="zebra", textures=("striped", "plain", "dotted"))
    assert list(table.logits) == ["original", "striped", "plain", "dotted", "foam", "no foam"]
    assert all(v.shape == (6,) for v in table.logits.values())
    again = intervention.intervene(model, scenes, target="zebra", textures=("striped", "plain", "dotted"))
    for v in table.logits:  # seeded per scene and texture: the same table again
        np.testing.assert_allclose(again.logits[v], table.logits[v], rtol=0, atol=1e-6)
    assert table.effect("plain", "plain") == 0.0  # exact: a variant minus itself
    # the effect of a texture against the average texture sums to 0 over the textures
    assert abs(sum(table.texture_effect(t) for t in table.textures)) < 1e-9
    # the scenes with foam keep their own puddle, so "foam" is "original" there
    own = table.has_foam
    np.testing.assert_allclose(table.logits["foam"][own], table.logits["original"][own], rtol=0, atol=1e-6)
    assert np.all((table.probs["original"] > 0) & (table.probs["original"] < 1))
    assert "no foam" in table.summary()
    with pytest.raises(ValueError, match=r"textures\[0\] must be one of .*Did you mean 'striped'"):
        intervention.intervene(model, scenes, target="zebra", textures=("stripy",))
    with pytest.raises(TypeError, match="Scene"):
        intervention.intervene(model, [s.image() for s in scenes], target="zebra")


def test_effect_measures_what_it_is_asked_and_refuses_other_words():
    model = tiny_vit(seed=0, image_size=64, labels=("zebra", "horse", "leopard"))
    table = intervention.intervene(model, iw.scenes("zebra", 4, "main", seed=0), textures=("striped", "plain"))
    by_hand = float(np.mean(table.logits["striped"] - table.logits["plain"]))
    assert table.effect("striped", "plain") == by_hand
    assert table.effect("striped", "plain", what="prob") == float(np.mean(table.probs["striped"] - table.probs["plain"]))
    for word in ("logits", "probability", "Logit"):  # "logits" returned the probability effect
        with pytest.raises(ValueError, match=r"what must be one of 'logit', 'prob'"):
            table.effect("striped", "plain", what=word)
        with pytest.raises(ValueError, match=r"what must be one of"):
            table.foam_effect(what=word)
    with pytest.raises(ValueError, match=r"a must be one of .*Did you mean 'striped'"):
        table.effect("stripes", "plain")  # was a KeyError
    with pytest.raises(ValueError, match=r"kind must be one of 'striped', 'plain'"):
        table.texture_effect("dotted")
    with pytest.raises(ValueError, match=r"textures must be a list of names .*not one str: got 'striped'"):
        intervention.intervene(model, iw.scenes("zebra", 2, "main", seed=0), textures="striped")


def test_layer_rule_takes_the_deepest_block_before_the_last_that_reaches_the_threshold():
    from xaikit.concepts import tcav

    assert tcav.choose_layer([0.95, 0.92, 0.91, 1.0]) == 2  # the last block is never a candidate
    assert tcav.choose_layer([0.95, 0.92, 0.85, 1.0]) == 1
    assert tcav.choose_layer([0.5, 0.6, 0.7, 1.0]) is None
    assert tcav.choose_layer([0.5, 0.6, 0.7, 1.0], threshold=0.6) == 2
    with pytest.raises(ValueError):
        tcav.choose_layer([0.9])
