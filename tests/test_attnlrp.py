"""AttnLRP (xaikit.text.attnlrp, Achtibat et al., ICML 2024; notebook 06).

Oracles: relevance conservation at every block boundary (what a block receives = what leaves it + what its
biases, epsilon and softmax remainder absorbed), and the logit's value = total input relevance + everything
absorbed (the paper starts from the logit's value; biases keep their share, as in its epsilon rule); and an
independent formulation of the same rules as plain gradient x input (the paper's "efficient" form, as LXT
implements it): LayerNorm's std detached, GELU and tanh as x * (f(x)/x).detach(), each product's gradient
halved, standard autograd everywhere else. LXT 2.1 itself could not be run here: its BERT module imports
``find_pruneable_heads_and_indices`` from ``transformers.pytorch_utils``, which transformers 5 removed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from xaikit.models.tiny import tiny_bert, tiny_tokenizer

SENTENCES = ["i cannot wait for next time", "a fine film", "the plot was dull and slow"]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    return tiny_bert(seed=0, num_hidden_layers=3), tiny_tokenizer(tmp_path_factory.mktemp("tok"))


def _half(y):
    """y with its gradient halved (the uniform rule as gradient x input)."""
    return 0.5 * y + (0.5 * y).detach()


def _gxi_relevance(model, inputs, target):
    """AttnLRP by gradient x input on plain autograd, written from the paper's rules (float64)."""
    bert = model.bert
    ids = inputs["input_ids"][0]
    n = ids.shape[0]
    types = inputs.get("token_type_ids", torch.zeros_like(inputs["input_ids"]))[0]

    def w(t):
        return t.detach().double()

    def ln(x, mod):
        mean = x.mean(-1, keepdim=True)
        std = torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + mod.eps).detach()
        return (x - mean) / std * w(mod.weight) + w(mod.bias)

    def lin(x, mod):
        return x @ w(mod.weight).T + w(mod.bias)

    def identity(f, x):
        return x * (f(x) / x).detach()

    emb = bert.embeddings
    x0 = (w(emb.word_embeddings.weight)[ids] + w(emb.position_embeddings.weight)[:n]
          + w(emb.token_type_embeddings.weight)[types]).requires_grad_(True)
    x = ln(x0, emb.LayerNorm)
    m = model.config.num_attention_heads
    d = x.shape[-1] // m
    for layer in bert.encoder.layer:
        sa = layer.attention.self

        def heads(t):
            return t.reshape(n, m, d).transpose(0, 1)

        q, k, v = heads(lin(x, sa.query)), heads(lin(x, sa.key)), heads(lin(x, sa.value))
        probs = torch.softmax(_half(q @ k.transpose(-1, -2)) / math.sqrt(d), -1)
        ctx = _half(probs @ v).transpose(0, 1).reshape(n, m * d)
        h = ln(lin(ctx, layer.attention.output.dense) + x, layer.attention.output.LayerNorm)
        inter = identity(layer.intermediate.intermediate_act_fn, lin(h, layer.intermediate.dense))
        x = ln(lin(inter, layer.output.dense) + h, layer.output.LayerNorm)
    pooled = identity(torch.tanh, lin(x[0], bert.pooler.dense))
    logit = lin(pooled, model.classifier)[target]
    (g,) = torch.autograd.grad(logit, x0)
    return (x0 * g).sum(-1).detach().numpy(), float(logit.detach())


@pytest.mark.parametrize("text", SENTENCES)
@pytest.mark.parametrize("target", [0, 1])
def test_conservation_at_every_block_boundary(pair, text, target):
    from xaikit.text.attnlrp import attnlrp

    model, tok = pair
    r = attnlrp(model, tok, text, target=target)
    d = r.detail
    assert d.block_out.shape == (3,) and d.block_in.shape == (3,)
    # measured: at most 1.5e-15 relative on these sentences (float64); asserted with margin
    assert d.block_errors.max() < 1e-12
    assert d.conservation_error < 1e-12
    # the block boundaries chain: what leaves block b (its input) is what enters block b-1 (its output)
    np.testing.assert_allclose(d.block_in[1:], d.block_out[:-1], rtol=1e-12, atol=1e-18)
    # the logit's value is the relevance at the top, accounted for: input relevance + absorbed
    assert abs(d.logit - (d.input_relevance.sum() + d.absorbed.sum())) <= 1e-12 * abs(d.logit)
    np.testing.assert_allclose(np.asarray(r.scores), d.input_relevance.sum(-1), rtol=1e-12, atol=1e-18)
    # and the absorbed part is not everything: the tokens carry relevance
    assert np.abs(np.asarray(r.scores)).max() > 0


@pytest.mark.parametrize("text", SENTENCES)
def test_agrees_with_gradient_times_input_formulation(pair, text):
    from xaikit.text.attnlrp import attnlrp
    from xaikit.text.encoding import encode_one

    model, tok = pair
    enc = encode_one(model, tok, text)
    want, logit = _gxi_relevance(model, enc.inputs, 1)
    r = attnlrp(model, tok, text, target=1)
    assert abs(r.detail.logit - logit) < 1e-10
    # measured: about 1e-9 relative of the largest score (the epsilon of the epsilon rule); asserted at 1e-6
    scale = np.abs(want).max()
    np.testing.assert_allclose(np.asarray(r.scores), want, atol=1e-6 * scale, rtol=0)


def test_differs_from_chefer_and_refuses_other_models(pair):
    from xaikit.text.attnlrp import attnlrp
    from xaikit.text.lrp import chefer_lrp

    model, tok = pair
    a = attnlrp(model, tok, SENTENCES[0], target=1)
    c = chefer_lrp(model, tok, SENTENCES[0], target=1)
    assert a.signed and not c.signed
    assert not np.allclose(np.abs(np.asarray(a.scores)), np.asarray(c.scores))
    model2 = tiny_bert(seed=0)
    model2.config.model_type = "roberta"
    with pytest.raises(ValueError, match="BERT classifier"):
        attnlrp(model2, tok, SENTENCES[0])


def test_registered_as_a_view_and_lab_ranking():
    from xaikit.lab.faithfulness import rankings
    from xaikit.text.registry import method_names

    assert "AttnLRP" in method_names()
    assert "AttnLRP" in rankings()
