"""One record and one entry per method family (tensor: notebooks 01-02; text: notebooks 02, 04 and 06;
image: notebook 07).

(a) A new method is one module whose one module-level call registers it: a dummy tensor method and a dummy
    text method, each written as such a module, are found by their family's registry and offered by their
    panel (the sanity panel's columns, the comparison panel's menus), and leave both when unregistered.
(b) ``target`` is resolved only by the family's entry: every registered method called with ``target=None``
    gives exactly what it gives for the class the entry resolves.
(c) The image family: a dummy image method, written as a module whose one module-level call registers it,
    is listed by the image registry and offered where image methods are offered (the relevance panel's menu,
    the lab's comparison against the drawn pixels); every registered image method called with
    ``target=None`` gives what it gives for the class the family's entry resolves.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.filterwarnings("ignore::xaikit.tensor.integrated.CompletenessWarning")

TEXT = "i like the movie"

TENSOR_MODULE = '''
"""The sign of the gradient: a dummy tensor method, the whole of it."""
from xaikit._fn import entry
from xaikit.tensor.gradients import batch_gradients
from xaikit.tensor.registry import TensorMethod, register


def gradient_sign(f, x, *, target=None):
    with entry(f, x, target, "gradient_sign") as (x, target):
        return batch_gradients(f, x.unsqueeze(0), target)[0].sign().cpu()


register(TensorMethod("dummy gradient sign", gradient_sign, (), "a test of the family"))
'''

TEXT_MODULE = '''
"""Each token's length in characters: a dummy text method, the whole of it."""
import numpy as np

from xaikit.text.registry import TextMethod, register
from xaikit.text.tokens import TokenScores


def _lengths(prepared, *, times: int = 1):
    scores = np.array([float(len(t)) for t in prepared.tokens]) * times
    return TokenScores(prepared.tokens, scores, "dummy token length", prepared.target, signed=False)


register(TextMethod("dummy token length", _lengths, cost="times", cost_hint="a multiple, e.g. 2"))
'''



# -- the image family -------------------------------------------------------------------------------------------
IMAGE_MODULE = '''
"""Each patch's summed pixel values: a dummy image method, the whole of it."""
from xaikit.image.registry import ImageMethod, register


def _brightness(prepared):
    return prepared.to_grid(prepared.pixels[0].sum(0))


register(ImageMethod("dummy brightness", _brightness, uses_block=False))
'''


def _import_module(tmp_path, name: str, source: str):
    """Import ``source`` as the module ``name`` from a file of its own (its module-level code runs once)."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_import_image_module = _import_module


@pytest.fixture
def digits():
    from xaikit.tensor import toys

    return toys.digits_classifier(seed=0, epochs=1, progress=False, disk_cache=False)


def test_a_dummy_tensor_method_is_found_by_the_registry_and_the_sanity_panel(tmp_path, digits):
    from xaikit import widgets as W
    from xaikit.lab import tensor_sanity as sanity
    from xaikit.tensor import registry
    from xaikit.tensor.gradients import gradient

    before = registry.names()
    module = _import_module(tmp_path, "dummy_tensor_method", TENSOR_MODULE)
    name = "dummy gradient sign"
    try:
        assert registry.names() == (*before, name)
        x = digits.data.test_x[0]
        maps = sanity.sanity_maps(digits.model, x, target=3, methods=["gradient", name])
        assert torch.equal(maps[name], gradient(digits.model, x, target=3).sign())
        assert torch.equal(maps[name], module.gradient_sign(digits.model, x, target=3))
        panel = W.SanityCheckPanel(digits, digits, n=2, steps=2, methods=["gradient", name])
        assert panel.methods == ("gradient", name)
        assert panel.error is None, panel.error_traceback
        assert set(panel.result.maps["trained"]) == {"gradient", name}
    finally:
        registry.unregister(name)
        sys.modules.pop("dummy_tensor_method", None)
    assert registry.names() == before
    with pytest.raises(ValueError, match=name):
        W.SanityCheckPanel(digits, digits, n=2, steps=2, methods=[name])


def test_a_dummy_text_method_is_found_by_the_registry_and_the_comparison_panel(tmp_path, model, tok):
    from xaikit.text import registry, views
    from xaikit.widgets import MethodComparisonPanel

    before = registry.method_names()
    _import_module(tmp_path, "dummy_text_method", TEXT_MODULE)
    name = "dummy token length"
    try:
        assert registry.method_names() == (*before, name)
        scores = views.explain(model, tok, TEXT, name, cost=2)
        assert scores.scores.tolist() == [2.0 * len(t) for t in scores.tokens]
        panel = MethodComparisonPanel(model, tok, text=TEXT, a=name, b="attention")
        assert name in panel.controls["a"].options and name in panel.controls["b"].options
        assert panel.error is None and panel.result.a.method == name
    finally:
        registry.unregister(name)
        sys.modules.pop("dummy_text_method", None)
    assert registry.method_names() == before
    assert name not in MethodComparisonPanel(model, tok, text=TEXT, a="attention", b="gradient").controls["a"].options


# -- (b) target=None is the entry's resolution, in every method ------------------------------------------------
def _tensor_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).eval()


def test_every_tensor_method_explains_the_class_its_entry_resolves():
    from xaikit import _fn
    from xaikit.tensor import registry

    f = _tensor_model()
    x = torch.linspace(-1.0, 1.0, 6)
    with _fn.entry(f, x, None, "the test") as (_, resolved):
        pass
    assert resolved == int(f(x[None])[0].argmax())
    for name in registry.names():
        method = registry.get(name)
        given = method(f, x, target=resolved)
        assert torch.equal(method(f, x, target=None), given), name
        others = [c for c in range(3) if c != resolved]
        assert not torch.equal(method(f, x, target=others[0]), given), name  # the target reaches the method


def _small_costs(entry) -> dict:
    return {"cost": {"steps": 4, "max_evals": 16, "n_samples": 8}[entry.cost]} if entry.cost else {}


def test_every_text_method_explains_the_class_its_entry_resolves(model, tok):
    from xaikit._text_input import prepare_text
    from xaikit.text import registry, views

    resolved = prepare_text(model, tok, TEXT).target
    assert resolved == int(model(**tok(TEXT, return_tensors="pt")).logits[0].argmax())
    for name, entry in registry.entries().items():
        cost = _small_costs(entry)
        default = views.explain(model, tok, TEXT, name, target=None, **cost)
        given = views.explain(model, tok, TEXT, name, target=resolved, **cost)
        assert default.target == given.target == resolved, name
        np.testing.assert_array_equal(default.scores, given.scores, err_msg=name)


def test_the_token_id_entries_resolve_the_predicted_class(model, tok):
    from xaikit.text.gradsam import attention_and_gradients
    from xaikit.text.text_ig import embedding_integrated_gradients

    enc = dict(tok(TEXT, return_tensors="pt"))
    resolved = int(model(**enc).logits[0].argmax())
    for a, b in zip(attention_and_gradients(model, enc), attention_and_gradients(model, enc, target=resolved),
                    strict=True):
        assert torch.equal(a, b)
    ids = enc["input_ids"]
    default = embedding_integrated_gradients(model, ids, steps=4)
    given = embedding_integrated_gradients(model, ids, steps=4, target=resolved)
    assert default.target == resolved
    assert torch.equal(default.attributions, given.attributions)


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
