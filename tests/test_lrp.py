"""Chefer et al.'s relevance propagation (xaikit.text.lrp, notebook 06).

Oracles: the transformers model itself (the float64 re-run gives its logits, attention and attention
gradients), conservation of relevance block by block, each rule against a loop or an autograd formulation
(x * grad(y, x, R / y)), and LRP-0 on a bias-free ReLU network, which equals gradient x input exactly.
"""

from __future__ import annotations

import copy
import os

import numpy as np
import pytest
import torch

from tests.fixtures.references import chefer_product_by_hand
from xaikit.models.tiny import tiny_bert, tiny_tokenizer

TEXT = "i cannot wait for next time"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A tiny random BERT saved and loaded back the way a hub id is (eager attention), and its tokenizer."""
    from transformers import AutoModelForSequenceClassification

    folder = tmp_path_factory.mktemp("lrp-bert")
    tiny_bert(seed=4, num_hidden_layers=3).save_pretrained(folder)
    tok = tiny_tokenizer(folder / "tok")
    tok.save_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder, attn_implementation="eager").eval()
    return model, tok, folder


def _hf_pass(model, inputs, target):
    """The model's own logits, attention (L, M, N, N) and d logit[target] / dA (float64 copy of the model)."""
    from xaikit.text.gradsam import _attention_and_gradients

    return _attention_and_gradients(copy.deepcopy(model).double(), inputs, target)


# -- the re-run equals the model ----------------------------------------------------------------------------
def test_forward_reproduces_logits_attention_and_gradients(saved):
    from xaikit.text.encoding import encode_one
    from xaikit.text.lrp import chefer_lrp, relevance_forward

    model, tok, _ = saved
    enc = encode_one(model, tok, TEXT)
    with torch.no_grad():
        trace = relevance_forward(model, enc.inputs)
    a64, g64, logits64 = _hf_pass(model, enc.inputs, 1)
    assert float((trace.logits - logits64).abs().max()) < 1e-10
    assert float((trace.attentions - a64).abs().max()) < 1e-12
    assert float((trace.logits.float() - enc.logits).abs().max()) < 1e-5  # the float32 model itself
    r = chefer_lrp(model, tok, TEXT, target=1)
    np.testing.assert_allclose(r.detail.gradients, g64.numpy(), atol=1e-12, rtol=1e-9)
    assert np.abs(r.detail.gradients).max() > 0


# -- conservation -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", [0, 1])
def test_relevance_is_conserved_block_by_block(saved, target):
    from xaikit.text.lrp import chefer_lrp

    model, tok, _ = saved
    d = chefer_lrp(model, tok, TEXT, target=target).detail
    assert d.totals.shape == (3 + 2,)  # logits, after each of the 3 blocks, block 0's input
    np.testing.assert_allclose(d.totals, 1.0, rtol=1e-10, atol=0)
    assert d.conservation_error < 1e-10
    assert abs(d.input_relevance.sum() - 1.0) < 1e-10
    # inside a block: the attention relevance of the last block sits on the [CLS] row only (exact: only that
    # row reaches the output, so the other rows start from relevance 0)
    assert np.abs(d.attention_relevance[-1][:, 1:]).max() == 0 and np.abs(d.attention_relevance[-1][:, 0]).max() > 0


def test_rules_against_loops_and_autograd():
    from xaikit.text.lrp import lrp_add, lrp_linear, lrp_matmul

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(5, 4, generator=gen, dtype=torch.float64)
    w = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    r = torch.rand(5, 3, generator=gen, dtype=torch.float64)
    # z+ by loops
    want, passed, empty = torch.zeros_like(x), 0.0, 0
    for n in range(5):
        for i in range(3):
            terms = [max(x[n, j], 0) * max(w[i, j], 0) + min(x[n, j], 0) * min(w[i, j], 0) for j in range(4)]
            if sum(terms) == 0:  # z+ = 0: nothing passes (safe division; exact: all terms are exactly 0)
                empty += 1
                continue
            passed += float(r[n, i])
            for j in range(4):
                want[n, j] += terms[j] / sum(terms) * r[n, i]
    assert empty > 0  # this draw has such a row
    torch.testing.assert_close(lrp_linear(x, w, r), want, rtol=1e-12, atol=1e-14)
    assert abs(float(lrp_linear(x, w, r).sum()) - passed) < 1e-12  # conserved where z+ > 0
    # LRP-0 with a bias: relevance x_j w_ij / z_i, the bias keeps b_i / z_i of it
    b = torch.randn(3, generator=gen, dtype=torch.float64)
    z = x @ w.T + b
    torch.testing.assert_close(lrp_linear(x, w, r, rule="0", bias=b).sum(), (r * (z - b) / z).sum())

    # matmul: the autograd formulation of eq. 5-6, x * grad(y, x, R / y), without the rescaling
    a = torch.rand(2, 4, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    v = torch.randn(2, 3, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    rel = torch.rand(2, 4, 5, generator=gen, dtype=torch.float64)
    y = 0.5 * a @ v
    ga, gv = torch.autograd.grad(y, (a, v), rel / y)
    ra, rv = lrp_matmul(a.detach(), v.detach(), rel, scale=0.5, normalize=False)
    torch.testing.assert_close(ra, a.detach() * ga)
    torch.testing.assert_close(rv, v.detach() * gv)
    torch.testing.assert_close(ra.sum(), rel.sum())  # each operand alone carries all of R ...
    ra, rv = lrp_matmul(a.detach(), v.detach(), rel, scale=0.5)
    torch.testing.assert_close(ra.sum(), rel.sum() / 2)  # ... so the rescaling halves both
    torch.testing.assert_close(rv.sum(), rel.sum() / 2)

    # add: R^u = u R / y, then shares |sum R^u| : |sum R^v| of the total
    u, w2 = torch.randn(6, generator=gen, dtype=torch.float64), torch.randn(6, generator=gen, dtype=torch.float64)
    rel = torch.rand(6, generator=gen, dtype=torch.float64)
    ru0, rv0 = lrp_add(u, w2, rel, normalize=False)
    torch.testing.assert_close(ru0 + rv0, rel)
    ru, rv = lrp_add(u, w2, rel)
    su, sv = float(ru0.sum()), float(rv0.sum())
    assert abs(float(ru.sum()) - abs(su) / (abs(su) + abs(sv)) * float(rel.sum())) < 1e-12
    torch.testing.assert_close(ru.sum() + rv.sum(), rel.sum())
    torch.testing.assert_close(ru / ru0, torch.full_like(ru, float(ru.sum()) / su))  # one factor per operand


def test_lrp0_equals_gradient_times_input_on_a_relu_network():
    from xaikit.text.lrp import lrp_linear

    gen = torch.Generator().manual_seed(2)
    sizes = (7, 9, 6, 3)
    weights = [torch.randn(o, i, generator=gen, dtype=torch.float64) for i, o in zip(sizes, sizes[1:], strict=False)]
    x = torch.randn(4, 7, generator=gen, dtype=torch.float64, requires_grad=True)
    acts, h = [], x
    for i, w in enumerate(weights):
        acts.append(h)
        h = h @ w.T
        if i < len(weights) - 1:
            h = torch.relu(h)
    target = 2
    (grad,) = torch.autograd.grad(h[:, target].sum(), x)
    r = torch.zeros_like(h.detach())
    r[:, target] = h.detach()[:, target]  # start from the output itself
    for a, w in zip(reversed(acts), reversed(weights), strict=True):  # ReLU passes relevance unchanged
        r = lrp_linear(a.detach(), w, r, rule="0")
    torch.testing.assert_close(r, x.detach() * grad, rtol=1e-10, atol=1e-12)


# -- the view -----------------------------------------------------------------------------------------------
def test_chefer_matrix_by_hand(saved):
    from xaikit.text.lrp import chefer_lrp, chefer_matrix

    model, tok, _ = saved
    r = chefer_lrp(model, tok, TEXT)
    ra, g = r.detail.attention_relevance, r.detail.gradients
    c = chefer_product_by_hand(ra, g)
    np.testing.assert_allclose(r.detail.matrix, c, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(chefer_matrix(torch.from_numpy(ra), torch.from_numpy(g)).numpy(), c, rtol=1e-12)
    want = c[0].copy()
    want[0] = want.min()
    np.testing.assert_allclose(r.scores, want, rtol=1e-12)
    assert r.tokens[0] == "[CLS]" and r.target == int(np.argmax(r.detail.logits)) and not r.signed
    assert (r.scores >= 0).all() and r.scores[1:-1].max() > 0


def test_registered_view_lab_ranking_and_explain(saved):
    from xaikit.lab.faithfulness import rankings
    from xaikit.text.lrp import chefer_lrp
    from xaikit.text.views import all_views, explain

    model, tok, _ = saved
    assert "Chefer LRP" in rankings()
    views = all_views(model, tok, TEXT, methods=("Grad-SAM", "Chefer LRP"))
    np.testing.assert_allclose(views["Chefer LRP"].scores, chefer_lrp(model, tok, TEXT).scores, rtol=1e-12)
    assert views["Chefer LRP"].tokens == views["Grad-SAM"].tokens
    assert explain(model, tok, TEXT, "Chefer LRP", target=0).target == 0


def test_comparison_panel_offers_the_view(saved):
    from xaikit.widgets import MethodComparisonPanel

    model, tok, _ = saved
    panel = MethodComparisonPanel(model, tok, text=TEXT, a="Grad-SAM", b="Chefer LRP")
    assert panel.error is None and panel.result.b.method == "Chefer LRP"
    panel.set(a="Chefer LRP", b="attention")
    assert panel.error is None and panel.result.a.method == "Chefer LRP"


def test_weight_copies_follow_the_model(saved):
    from xaikit.text.lrp import chefer_lrp

    model = copy.deepcopy(saved[0])
    tok = saved[1]
    before = chefer_lrp(model, tok, TEXT, target=1)
    with torch.no_grad():
        model.bert.encoder.layer[0].attention.self.query.weight.mul_(3.0)  # in place: same tensor, new version
    after = chefer_lrp(model, tok, TEXT, target=1)
    fresh = chefer_lrp(copy.deepcopy(model), tok, TEXT, target=1)
    np.testing.assert_allclose(after.scores, fresh.scores, rtol=1e-12)
    assert not np.allclose(after.scores, before.scores, rtol=1e-2, atol=0)  # the copy was remade


# -- bad input ----------------------------------------------------------------------------------------------
def test_bad_input(saved):
    from transformers import (
        AutoModelForSequenceClassification,
        DistilBertConfig,
        DistilBertForSequenceClassification,
    )

    from xaikit.text.encoding import TruncationWarning, encode_one
    from xaikit.text.lrp import chefer_lrp, lrp_linear, relevance_forward

    model, tok, folder = saved
    with pytest.raises(ValueError, match="text"):
        chefer_lrp(model, tok, "   ")
    with pytest.raises(ValueError, match="target"):
        chefer_lrp(model, tok, TEXT, target=5)
    with pytest.warns(TruncationWarning, match="truncated"):  # too many tokens: cut once, as everywhere
        long = chefer_lrp(model, tok, " ".join(["good"] * 100))
    assert len(long) == 64
    sdpa = AutoModelForSequenceClassification.from_pretrained(folder, attn_implementation="sdpa").eval()
    with pytest.warns(UserWarning, match="eager"):
        switched = chefer_lrp(sdpa, tok, TEXT)
    np.testing.assert_allclose(switched.scores, chefer_lrp(model, tok, TEXT).scores, rtol=1e-12)
    distil = DistilBertForSequenceClassification(DistilBertConfig(vocab_size=120, dim=32, n_layers=1, n_heads=4,
                                                                  hidden_dim=64)).eval()
    with pytest.raises(ValueError, match="BertForSequenceClassification"):
        chefer_lrp(distil, tok, TEXT)
    enc = encode_one(model, tok, TEXT)
    padded = {**enc.inputs, "attention_mask": torch.tensor([[1] * (enc.n_tokens - 1) + [0]])}
    with pytest.raises(ValueError, match="padding"):
        relevance_forward(model, padded)
    with pytest.raises(ValueError, match="rule"):
        lrp_linear(torch.ones(2), torch.ones(1, 2), torch.ones(1), rule="epsilon")


# -- the embedded model -------------------------------------------------------------------------------------
@pytest.mark.prepared
def test_embedded_model_conservation_and_reproduction():
    import xaikit.models as m
    from xaikit.models.sentiment import LECTURE_SENTENCES, sentiment_folder
    from xaikit.text.encoding import encode_one
    from xaikit.text.lrp import chefer_lrp, relevance_forward

    if not (sentiment_folder() / "model.safetensors").is_file():
        message = "the embedded sentiment model is not built; run `python -m xaikit prepare`"
        if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:
            pytest.fail(message)
        pytest.skip(message)
    model, tok = m.load_sentiment()
    for text, label in LECTURE_SENTENCES[:2]:
        enc = encode_one(model, tok, text)
        with torch.no_grad():
            trace = relevance_forward(model, enc.inputs)
        a64, _, logits64 = _hf_pass(model, enc.inputs, label)
        assert float((trace.logits - logits64).abs().max()) < 1e-9
        assert float((trace.attentions - a64).abs().max()) < 1e-10
        assert float((trace.logits.float() - enc.logits).abs().max()) < 1e-4
        r = chefer_lrp(model, tok, text)
        assert r.target == label
        assert r.detail.conservation_error < 1e-10, r.detail.totals


def test_matches_the_authors_released_code_on_a_tiny_bert(tmp_path):
    """The whole propagation against an independent implementation: Chefer et al.'s own code, run once on
    the same tiny BERT (tests/fixtures/make_chefer_reference.py). Conservation cannot catch a wrong split
    that still sums to one (a swapped matmul operand, say); this can. Measured agreement: 5e-7 relative."""
    import json
    from pathlib import Path

    from xaikit.text.lrp import chefer_lrp

    ref = json.loads((Path(__file__).parent / "fixtures" / "chefer_reference_tiny.json").read_text())
    ours = chefer_lrp(tiny_bert(seed=4, num_hidden_layers=3), tiny_tokenizer(tmp_path), ref["sentence"],
                      target=ref["target"])
    for block, want in enumerate(ref["attention_relevance"]):
        want = np.asarray(want)
        got = np.asarray(ours.detail.attention_relevance[block])
        assert got.shape == want.shape
        assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max(), block
    want = np.asarray(ref["scores"])
    assert np.abs(np.asarray(ours.scores) - want).max() <= 1e-5 * np.abs(want).max()
