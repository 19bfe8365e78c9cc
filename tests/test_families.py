"""One record and one entry per method family (tensor: notebooks 01-02; text: notebooks 02, 04 and 06).

(a) A new method is one module whose one module-level call registers it: a dummy tensor method and a dummy
    text method, each written as such a module, are found by their family's registry and offered by their
    panel (the sanity panel's columns, the comparison panel's menus), and leave both when unregistered.
(b) ``target`` is resolved only by the family's entry: every registered method called with ``target=None``
    gives exactly what it gives for the class the entry resolves.
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


def _import_module(tmp_path, name: str, source: str):
    """Import ``source`` as the module ``name`` from a file of its own (its module-level code runs once)."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def digits():
    from xaikit.tensor import toys

    return toys.digits_classifier(seed=0, epochs=1, progress=False, disk_cache=False)


def test_a_dummy_tensor_method_is_found_by_the_registry_and_the_sanity_panel(tmp_path, digits):
    from xaikit import widgets as W
    from xaikit.tensor import registry, sanity
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
