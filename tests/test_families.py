"""One record and one entry per method family.

The image functions below (notebook 07, section 4): a dummy image method, written as a module whose one
module-level call registers it, is listed by the image registry and offered where image methods are offered
(the relevance panel's menu, the lab's comparison of every method against the drawn pixels), and leaves them
when unregistered; every registered image method called with ``target=None`` gives what it gives for the class
the family's entry resolves.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import numpy as np
import pytest
import torch

# -- the image family -------------------------------------------------------------------------------------------
IMAGE_MODULE = '''
"""Each patch's summed pixel values: a dummy image method, the whole of it."""
from xaikit.image.registry import ImageMethod, register


def _brightness(prepared):
    return prepared.to_grid(prepared.pixels[0].sum(0))


register(ImageMethod("dummy brightness", _brightness, uses_block=False))
'''


def _import_image_module(tmp_path, name: str, source: str):
    """Import ``source`` as the module ``name`` from a file of its own (its module-level code runs once)."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _image_vit(image_size: int = 32, patch_size: int = 8):
    """A small random ViT over the image world's five classes (eager attention: the attention methods read it)."""
    from transformers import ViTConfig, ViTForImageClassification

    from xaikit.models import imageworld as iw

    torch.manual_seed(0)
    config = ViTConfig(image_size=image_size, patch_size=patch_size, hidden_size=16, num_hidden_layers=2,
                       num_attention_heads=2, intermediate_size=32, num_labels=len(iw.classes()),
                       attn_implementation="eager", id2label=dict(enumerate(iw.classes())))
    return ViTForImageClassification(config).eval()


def test_a_dummy_image_method_is_found_by_the_registry_the_panel_and_the_comparison(tmp_path):
    from xaikit.image import registry
    from xaikit.lab import pixel_scores
    from xaikit.models import imageworld as iw
    from xaikit.models.vitworld import to_pixels
    from xaikit.widgets import RelevancePanel

    model = _image_vit(64, 8)
    scenes = iw.scenes("zebra", 2, seed=0)
    pixels = to_pixels(scenes[0].image()[None])
    before = registry.method_names()
    name = "dummy brightness"
    _import_image_module(tmp_path, "dummy_image_method", IMAGE_MODULE)
    try:
        assert registry.method_names() == (*before, name)
        rmap, target = registry.relevance(model, pixels, name)
        want = pixels[0].sum(0).reshape(8, 8, 8, 8).sum((1, 3)).double().numpy()  # each 8x8 patch's sum
        np.testing.assert_allclose(rmap, want, rtol=1e-6)
        with torch.no_grad():
            assert target == int(model(pixel_values=pixels).logits[0].argmax())  # the entry resolved it
        rows, _ = pixel_scores.compare_methods(model, scenes, perturb=False)
        assert [r.method for r in rows] == [*before, name]
        mine = rows[-1]
        assert mine.localisation == pytest.approx(np.mean([
            pixel_scores.localisation(registry.relevance(model, to_pixels(s.image()[None]), name)[0],
                                      s.masks()["body"]) for s in scenes]))
        assert mine.forward == 0 and mine.backward == 0  # it reads the pixels alone: no pass through the ViT
        panel = RelevancePanel(model, scenes, method=name)
        assert name in panel.controls["method"].options
        assert panel.error is None, panel.error
        np.testing.assert_allclose(panel.result.rmap, want, rtol=1e-6)
    finally:
        registry.unregister(name)
        sys.modules.pop("dummy_image_method", None)
    assert registry.method_names() == before
    with pytest.raises(ValueError, match="method"):
        registry.relevance(model, pixels, name)
    with pytest.raises(ValueError, match="methods"):
        pixel_scores.compare_methods(model, scenes, methods=[name], perturb=False)
    assert name not in RelevancePanel(model, scenes, method="rollout").controls["method"].options


def test_every_image_method_explains_the_class_its_entry_resolves():
    from xaikit.image import registry

    model = _image_vit().double()
    pixels = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    prepared = registry.prepare_image(model, pixels)
    with torch.no_grad():
        assert prepared.target == int(model(pixel_values=pixels).logits[0].argmax())
    other = (prepared.target + 1) % model.config.num_labels
    for name in registry.method_names():
        found, target = registry.relevance(model, pixels, name, steps=4)
        given, same = registry.relevance(model, pixels, name, target=prepared.target, steps=4)
        assert target == same == prepared.target, name
        np.testing.assert_array_equal(found, given, err_msg=name)
        by_name, named = registry.relevance(model, pixels, name, target=model.config.id2label[other], steps=4)
        assert named == other, name  # a class name resolves by the entry too
        if name not in ("attention", "rollout"):  # the attention weights do not depend on the class
            assert not np.array_equal(by_name, found), name
    from xaikit.models.tiny import tiny_bert

    with pytest.raises(TypeError, match=r"model must be a ViT image classifier.*BertForSequenceClassification"):
        registry.relevance(tiny_bert(seed=0), pixels, "rollout")
