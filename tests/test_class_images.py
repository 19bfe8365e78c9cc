"""``class_images`` given to the TCAV panels as one array of images (not a dict).

``TCAVPanel``, ``LayerSweepPanel`` and ``CAVSortPanel`` ignored such an array and scored generated zebras. An
array now holds the images of the panel's ``target``; with no single target it is refused. The README's
"Bad input and safety" table lists these inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

from xaikit.models import imageworld as iw
from xaikit.models.tiny import tiny_vit


@pytest.fixture(scope="module")
def setup():
    model = tiny_vit(seed=0, image_size=32, labels=("zebra", "horse", "leopard"))
    concepts = {c: iw.concept_images(c, 6)[:, ::2, ::2] for c in ("striped", "dotted")}
    mine = iw.class_images("horse", 5, seed=7)[:, ::2, ::2]  # not what the panel would generate for "zebra"
    randoms = [iw.random_images(6, seed=s)[:, ::2, ::2] for s in range(4)]
    return model, concepts, mine, randoms


def _spy(monkeypatch, module, name):
    seen = []
    real = getattr(module, name)

    def spy(model, concepts, class_images, **kwargs):
        seen.append(np.asarray(class_images))
        return real(model, concepts, class_images, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return seen


def test_tcav_panel_scores_the_given_array(monkeypatch, setup):
    from xaikit.concepts import tcav
    from xaikit.widgets import TCAVPanel

    model, concepts, mine, randoms = setup
    seen = _spy(monkeypatch, tcav, "tcav_significance")
    panel = TCAVPanel(model, concept_sets=concepts, class_images=mine, target="zebra", R=2, random_sets=randoms,
                      concepts=["striped"])
    assert panel.error is None, panel.error
    assert panel.controls["target"].options == ("zebra",)  # only the class the images were given for
    assert seen and np.array_equal(seen[-1], mine)  # exact: the user's uint8 images, not generated zebras


def test_layer_sweep_panel_scores_the_given_array(monkeypatch, setup):
    from xaikit.concepts import tcav
    from xaikit.widgets import LayerSweepPanel

    model, concepts, mine, randoms = setup
    seen = _spy(monkeypatch, tcav, "layer_sweep")
    panel = LayerSweepPanel(model, concept_sets=concepts, class_images=mine, target="zebra", R=2,
                            random_sets=randoms, concepts=["striped"])
    assert panel.error is None, panel.error
    assert seen and np.array_equal(seen[-1], mine)


def test_cav_sort_panel_sorts_the_given_array_and_needs_a_class(setup):
    from xaikit.widgets import CAVSortPanel

    model, concepts, mine, randoms = setup
    panel = CAVSortPanel(model, concept_sets=concepts, class_images=mine, target="horse", k=2, random_set=randoms[0])
    assert panel.error is None, panel.error
    assert len(panel.result.images) == len(mine) and np.array_equal(np.asarray(panel.result.images), mine)
    with pytest.raises(ValueError, match=r"class_images is one set of images.*class_images=\{'zebra': images\}"):
        CAVSortPanel(model, concept_sets=concepts, class_images=mine)  # "all classes": whose images?
    with pytest.raises(ValueError, match=r"class_images looks like one image"):
        CAVSortPanel(model, concept_sets=concepts, class_images=mine[0], target="horse")
