"""What an explanation costs: the panels and the lab show each method's passes and wall time.

The shown numbers come from :func:`xaikit.models.passes.count_passes` (hooks on the encoder blocks). Each test
checks them against an independent count: a forward pre-hook on the whole model adds up the rows (examples)
that enter it, and a full backward hook on the classifier head adds up the rows whose gradient comes back
through it. Chefer LRP and AttnLRP re-run a float64 copy that neither sees; tests/test_passes.py checks those.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.fixtures.models import scene_vit
from xaikit.models.passes import Cost


class Oracle:
    """Rows entering ``model`` (forward) and rows of gradient leaving its ``head`` (backward), by hooks that
    know nothing of the encoder blocks."""

    def __init__(self, model, head):
        self.forward = 0
        self.backward = 0

        def pre(module, args, kwargs):
            tensor = next(v for v in (*args, *kwargs.values()) if isinstance(v, torch.Tensor))
            self.forward += int(tensor.shape[0])

        def back(module, grad_input, grad_output):
            self.backward += int(grad_output[0].shape[0])

        self.handles = [model.register_forward_pre_hook(pre, with_kwargs=True),
                        head.register_full_backward_hook(back)]

    def reset(self):
        self.forward = self.backward = 0

    def close(self):
        for h in self.handles:
            h.remove()


@pytest.fixture
def oracle(model):
    o = Oracle(model, model.classifier)
    yield o
    o.close()


TEXT = "a fine film and a dull plot"


def test_comparison_panel_shows_the_counted_cost_of_each_method(model, tok, oracle):
    from xaikit.widgets import MethodComparisonPanel

    panel = MethodComparisonPanel(model, tok, text=TEXT, a="Grad-SAM", b="IG")
    assert panel.error is None, panel.error
    r = panel.result
    # Grad-SAM: the forward that prepares the text, then one forward and one backward pass
    assert (r.cost_a.forward, r.cost_a.backward) == (pytest.approx(2), pytest.approx(1))
    # IG (32 steps by default): a forward and a backward per step, at least; the same rows the oracle saw
    assert r.cost_b.forward >= 32 and r.cost_b.backward >= 32
    assert r.cost_a.forward + r.cost_b.forward == pytest.approx(oracle.forward)
    assert r.cost_a.backward + r.cost_b.backward == pytest.approx(oracle.backward)
    assert not r.cached_a and not r.cached_b and r.cost_a.seconds > 0 and r.cost_b.seconds > 0

    oracle.reset()  # a new method B: only it runs; A comes from the cache with what computing it cost
    r2 = panel.set(b="SHAP")
    assert panel.error is None, panel.error
    assert r2.cached_a and not r2.cached_b and r2.cost_a == r.cost_a
    assert r2.cost_b.forward == pytest.approx(oracle.forward) and oracle.forward > 1
    assert r2.cost_b.backward == 0 == oracle.backward  # SHAP only evaluates the model

    oracle.reset()  # a redraw from the cache runs nothing, and still shows the costs, marked cached
    r3 = panel.set(drop_special=False)
    assert oracle.forward == 0 and r3.cached_a and r3.cached_b
    assert (r3.cost_a, r3.cost_b) == (r2.cost_a, r2.cost_b)
    page = panel.html.value
    assert "xk-cost-table" in page and page.count("cached") >= 2
    assert f"<td>{r3.cost_b.forward:g}</td>" in page
    titles = [ax.get_title() for ax in panel.figure.axes]
    assert any(f"{r3.cost_b.forward:g} fwd" in t for t in titles)

    panel.set(text="   ")  # an error shows in the panel; the panel keeps working and counting
    assert isinstance(panel.error, ValueError) and "xk-error" in panel.status.value
    oracle.reset()
    r4 = panel.set(text="she hates the book", b="attention")
    assert panel.error is None and not r4.cached_b
    assert r4.cost_a.forward + r4.cost_b.forward == pytest.approx(oracle.forward)


def test_comparison_panel_counts_each_method_alone(model, tok, oracle):
    # the two menus on two methods that read the same kind of pass: each runs its own, so each shows its own
    from xaikit.widgets import MethodComparisonPanel

    panel = MethodComparisonPanel(model, tok, text=TEXT, a="attention", b="gradient")
    r = panel.result
    assert panel.error is None, panel.error
    assert r.cost_a.forward + r.cost_b.forward == pytest.approx(oracle.forward)
    assert r.cost_a.backward + r.cost_b.backward == pytest.approx(oracle.backward)


def test_all_views_counts_the_shared_pass_once(model, tok, oracle):
    from xaikit.text.views import PREPARE, SHARED_PASS, all_views

    spent = {}
    views = all_views(model, tok, TEXT, methods=("Grad-SAM", "attention", "gradient", "IG"), spent=spent, ig_steps=4)
    assert list(views) == ["Grad-SAM", "attention", "gradient", "IG"]
    assert set(spent) == {PREPARE, SHARED_PASS, "IG"}  # the three shared views have no entry of their own
    assert (spent[SHARED_PASS].forward, spent[SHARED_PASS].backward) == (pytest.approx(1), pytest.approx(1))
    assert spent[PREPARE].forward == pytest.approx(1) and spent[PREPARE].backward == 0
    total = sum(spent.values(), Cost())
    assert total.forward == pytest.approx(oracle.forward) and total.backward == pytest.approx(oracle.backward)
    assert spent["IG"].backward >= 4
    with pytest.raises(TypeError, match="spent must be a dict"):
        all_views(model, tok, TEXT, methods=("attention",), spent=[])


def test_lab_keeps_explanation_costs_apart_from_the_evaluation(model, tok, oracle):
    from xaikit._text_input import prepare_text
    from xaikit.lab.faithfulness import EVALUATIONS, LAB_RANKINGS, run_lab
    from xaikit.text import registry

    sentences = ["a fine film and a dull plot", "i like the movie a lot", "this is so boring"]
    rankings = ("attention", "Grad-SAM", "SHAP", "IG", "random")
    lab = run_lab(model, tok, sentences, rankings=rankings, n_permutations=2, shap_evals=20, ig_steps=4,
                  progress=False)
    n = len(lab.sentences)
    assert lab.shared == ("attention", "Grad-SAM", "grad-weighted attention")
    shared, own = lab.cost_of("Grad-SAM"), lab.cost_of("SHAP")
    assert shared[1] and not own[1] and shared[0] == lab.costs["shared pass"]
    assert (shared[0].forward, shared[0].backward) == (pytest.approx(n), pytest.approx(n))  # one per sentence
    assert lab.costs["prepare"].forward == pytest.approx(len(sentences))
    assert lab.cost_of("random")[0].forward == 0

    # the oracle: each method run again on each sentence, alone, with the lab's options; its rows must be the
    # lab's count, so nothing of the evaluation leaked into it (and nothing was left out)
    for name, cost in (("SHAP", 20), ("IG", 4)):
        entry = registry.entry(name)
        oracle.reset()
        for text in lab.sentences:
            prepared = prepare_text(model, tok, text, method="test")
            registry.run_method(entry, prepared, {entry.cost: cost, **LAB_RANKINGS[name].options})
        ran = oracle.forward - len(lab.sentences)  # less each sentence's preparing forward
        assert lab.costs[name].forward == pytest.approx(ran), name
        assert lab.costs[name].backward == pytest.approx(oracle.backward), name
    assert lab.costs["IG"].backward == pytest.approx(4 * n)

    # the evaluation is counted apart: erasure, deletion and AOPC run many forwards, no explanation backward
    assert tuple(lab.evaluation_costs) == EVALUATIONS
    assert lab.evaluation_costs[EVALUATIONS[0]].forward > n and lab.evaluation_costs[EVALUATIONS[0]].backward == 0
    spent = sum(lab.costs.values(), Cost()) + sum(lab.evaluation_costs.values(), Cost())
    assert spent.seconds <= lab.seconds
    page = lab.table_html()
    assert page.count("shared pass") >= 2 and f"<td>{lab.costs['SHAP'].forward:g}</td>" in page
    with pytest.raises(ValueError, match="ranking"):
        lab.cost_of("LOO")


def test_relevance_panel_shows_the_counted_cost_of_its_map():
    from xaikit.models import imageworld as iw
    from xaikit.widgets import RelevancePanel

    vit = scene_vit()
    oracle = Oracle(vit, vit.classifier)
    try:
        panel = RelevancePanel(vit, iw.scenes("zebra", 2, seed=0), method="rollout")
        for method, backward in (("rollout", 0), ("chefer", 1), ("grad_input", 1), ("ig", 16)):
            oracle.reset()
            r = panel.set(method=method, index=1)
            assert panel.error is None, panel.error
            # the panel finds the class in one forward pass of its own before it counts the method's passes
            assert r.cost.forward == pytest.approx(oracle.forward - 1) and r.cost.forward >= 1, method
            assert r.cost.backward == pytest.approx(oracle.backward) == backward, method
            assert r.cost.seconds > 0
            assert f"{r.cost.forward:g} fwd, {r.cost.backward:g} bwd" in panel.figure.axes[2].get_title()
            assert f"{r.cost.forward:g} forward and {r.cost.backward:g} backward passes" in panel.html.value
        assert panel.result.cost.forward >= 16  # IG: one forward per step (16 by default), and the target's
        vit.set_attn_implementation("sdpa")  # an error still shows in the panel
        panel.set(method="attention")
        assert panel.error is not None and "eager" in str(panel.error)
        vit.set_attn_implementation("eager")
        panel.set(method="grad_attention")
        assert panel.error is None and panel.result.cost.backward == pytest.approx(1)
    finally:
        oracle.close()


def test_cost_adds_and_unpacks():
    a, b = Cost(1, 2, 0.5), Cost(3, 0, 0.25)
    total = sum([a, b], Cost())
    assert tuple(total) == (4, 2, pytest.approx(0.75))
    assert sum([a, b]) == total
    forward, backward, seconds = a
    assert (forward, backward) == (1, 2) and np.isclose(seconds, 0.5)
