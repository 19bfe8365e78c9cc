"""count_passes: forward and backward passes counted by hooks on the encoder blocks."""

import pytest
import torch

from xaikit.models import count_passes, tiny_bert, tiny_vit


def test_plain_forward_and_backward_counted_in_examples():
    model = tiny_bert(seed=0)
    ids = torch.randint(5, 100, (3, 7))
    with count_passes(model) as cost:
        with torch.no_grad():
            model(input_ids=ids)
        emb = model.bert.embeddings(input_ids=ids[:2]).detach().requires_grad_(True)
        out = model(inputs_embeds=emb).logits
        out[:, 0].sum().backward()
    assert cost.forward == pytest.approx(5.0)
    assert cost.backward == pytest.approx(2.0)
    assert cost.seconds > 0
    assert "5 forward, 2 backward" in str(cost)


def test_partial_pass_counts_its_fraction_and_hooks_leave():
    model = tiny_bert(seed=0, num_hidden_layers=4)
    blocks = model.bert.encoder.layer
    hidden = torch.randn(2, 6, 32)
    with count_passes(model) as cost, torch.no_grad():
        h = hidden
        for block in blocks[2:]:  # the top two of four blocks only
            out = block(h)
            h = out[0] if isinstance(out, tuple) else out
    assert cost.forward == pytest.approx(2 * 2 / 4)
    assert all(not b._forward_hooks for b in blocks)


def test_vit_counts_images():
    model = tiny_vit(seed=0)
    x = torch.randn(4, 3, 32, 32, requires_grad=True)
    with count_passes(model) as cost:
        model(pixel_values=x).logits.sum().backward()
    assert (cost.forward, cost.backward) == (pytest.approx(4.0), pytest.approx(4.0))


def test_counts_agree_with_a_counter_on_the_whole_model():
    # independent oracle: the rows that enter the top-level model's forward, counted by a pre-hook
    from xaikit.text.gradsam import gradsam

    model = tiny_bert(seed=1)
    from xaikit.models import tiny_tokenizer

    tok = tiny_tokenizer()
    rows = []
    handle = model.register_forward_pre_hook(
        lambda m, args, kwargs: rows.append(next(v for v in list(args) + list(kwargs.values())
                                                 if isinstance(v, torch.Tensor)).shape[0]), with_kwargs=True)
    try:
        with count_passes(model) as cost:
            gradsam(model, tok, "a b c")
    finally:
        handle.remove()
    assert sum(rows) >= 1
    assert cost.forward == pytest.approx(sum(rows))
    assert cost.backward >= 1


@pytest.mark.parametrize("method,cost", [("Grad-SAM", None), ("IG", 8), ("SHAP", 40)])
def test_text_method_costs_agree_with_rows_entering_the_model(method, cost):
    # a method's passes, counted on the blocks, equal the rows that entered the model (a pre-hook on
    # the whole model, independent of the block hooks); IG's grow with its steps, SHAP's with its evaluations
    from xaikit.models import tiny_tokenizer
    from xaikit.text.views import explain

    model, tok = tiny_bert(seed=0), tiny_tokenizer()
    rows = []

    def pre(m, args, kwargs):
        t = next(v for v in list(args) + list(kwargs.values()) if isinstance(v, torch.Tensor))
        rows.append(t.shape[0])

    handle = model.register_forward_pre_hook(pre, with_kwargs=True)
    try:
        with count_passes(model) as counted:
            explain(model, tok, "a fine film and a dull plot", method=method, cost=cost)
    finally:
        handle.remove()
    assert counted.forward == pytest.approx(sum(rows))
    if method == "IG":
        assert counted.forward >= 8 and counted.backward >= 8  # one forward and backward per step, at least
    if method == "SHAP":
        assert counted.forward > 1 and counted.backward == 0  # SHAP's evaluations: forward only
    if method == "Grad-SAM":
        assert counted.backward == pytest.approx(1.0)


def test_lrp_reruns_report_their_own_passes(monkeypatch):
    # the float64 re-runs bypass the block hooks; each reports its passes. The autograd sweeps they really run
    # are counted by wrapping torch's entry points: Chefer = 1 autograd.grad + its hand-written relevance sweep,
    # AttnLRP = 1 backward. With the target given nothing else runs.
    from xaikit.models import tiny_tokenizer
    from xaikit.text.attnlrp import attnlrp
    from xaikit.text.lrp import chefer_lrp

    calls = []
    grad, backward = torch.autograd.grad, torch.Tensor.backward
    monkeypatch.setattr(torch.autograd, "grad", lambda *a, **k: calls.append("grad") or grad(*a, **k))
    monkeypatch.setattr(torch.Tensor, "backward", lambda self, *a, **k: calls.append("backward") or backward(self, *a, **k))
    model, tok = tiny_bert(seed=2), tiny_tokenizer()
    for method, hand_sweeps in ((chefer_lrp, 1), (attnlrp, 0)):
        calls.clear()
        with count_passes(model) as cost:
            method(model, tok, "a b c", target=0)
        assert cost.forward == pytest.approx(1), method
        assert cost.backward == pytest.approx(len(calls) + hand_sweeps), (method, calls)
    with count_passes(tiny_bert(seed=3)) as other:  # a counter on another model sees none of them
        attnlrp(model, tok, "a b c", target=0)
    assert (other.forward, other.backward) == (0, 0)
