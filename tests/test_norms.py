"""xaikit.attention.norms (Kobayashi et al. 2020): the model's own layers are the oracle.

``sum_h sum_j alpha_ij f^h(x_j) + b_O`` must equal what the attention-output dense layer returns (captured by
a forward hook, before dropout, residual and LayerNorm), and ``alpha`` must equal the model's
``output_attentions``, on a tiny random ``BertModel`` with random biases and on the embedded sentiment model.
"""

from __future__ import annotations

import pytest
import torch

from xaikit.attention.norms import AttentionNorms, attention_norms, output_projection
from xaikit.models import arch
from xaikit.models.hooks import forward_hooks
from xaikit.models.tiny import tiny_bert, tiny_tokenizer, tiny_vit

SENTENCE = "The cat drank the milk because it was hungry"


def _random_bert_model(seed=0, dtype=torch.float32):
    """A bare BertModel with 3 layers and random (not zero-initialised) biases, so b_V and b_O matter."""
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=120, hidden_size=24, num_hidden_layers=3, num_attention_heads=3,
                        intermediate_size=48, max_position_embeddings=64, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0, attn_implementation="eager")
    torch.manual_seed(seed)
    model = BertModel(config)
    model.config._attn_implementation = "eager"
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:
                p.normal_(0.0, 0.5)  # biases and LayerNorm gains: BERT's init leaves biases at 0
    return model.eval().to(dtype)


def _oracle(model, tok, text):
    """The model's own attention-output dense outputs (hooked) and attention weights, per layer."""
    seen = {}
    hooks = [(output_projection(model, i), lambda m, a, o, i=i: seen.__setitem__(i, o.detach()[0].cpu()))
             for i in range(arch.n_layers(model))]
    enc = tok(text, return_tensors="pt").to(next(model.parameters()).device)
    with forward_hooks(*hooks), torch.no_grad():
        out = model(**enc, output_attentions=True)
    return [seen[i] for i in range(len(seen))], [a[0].cpu() for a in out.attentions]


def _check_against_model(model, tok, text, atol):
    r = attention_norms(model, tok, text)
    dense, attentions = _oracle(model, tok, text)
    L, nh, T = arch.n_layers(model), arch.n_heads(model), len(r.tokens)
    assert r.weights.shape == (L, nh, T, T) and r.f_norms.shape == (L, nh, T)
    assert r.weights.device.type == "cpu" and r.transformed.device.type == "cpu"
    errors = []
    for layer in range(L):
        torch.testing.assert_close(r.weights[layer], attentions[layer].to(r.weights.dtype), atol=1e-6, rtol=0)
        # the oracle, written out here and not through r.output: sum over heads and keys, plus b_O
        moved = torch.einsum("hij,hjd->id", r.weights[layer], r.transformed[layer]) + r.output_bias[layer]
        errors.append((moved - dense[layer].to(moved.dtype)).abs().max().item())
        torch.testing.assert_close(r.output(layer), moved)
    assert max(errors) < atol, f"max |sum_j alpha f(x_j) + b_O - dense output| = {max(errors):.2e}"
    # ||alpha f(x)|| is the norm of each weighted vector, computed the long way
    w, n = r.head(1, 2)
    long_way = torch.linalg.vector_norm(w.unsqueeze(-1) * r.transformed[1, 2].unsqueeze(0), dim=-1)  # (T, T)
    torch.testing.assert_close(n, long_way.to(n.dtype))
    return r, max(errors)


def test_random_bert_model_sum_of_weighted_vectors_is_the_dense_output():
    model, tok = _random_bert_model(seed=1), tiny_tokenizer()
    r, err = _check_against_model(model, tok, SENTENCE, atol=1e-5)
    assert r.output_bias.abs().max() > 0.1  # the biases are really in play
    # not trivially so: leaving out b_V (or b_O) breaks the equality
    dense, _ = _oracle(model, tok, SENTENCE)
    no_bias = torch.einsum("hij,hjd->id", r.weights[0], r.transformed[0])
    assert (no_bias - dense[0]).abs().max() > 1e-2


def test_random_bert_model_in_float64():
    model, tok = _random_bert_model(seed=2, dtype=torch.float64), tiny_tokenizer()
    r, err = _check_against_model(model, tok, "i like the movie", atol=1e-12)
    assert r.weights.dtype == torch.float64


def test_the_value_bias_is_part_of_f():
    """Kobayashi et al. include b_V in f(x): zeroing b_V moves every f^h(x_j) by exactly b_V^h W_O^h."""
    import copy

    from xaikit.attention.capture import qkv_projections

    model, tok = _random_bert_model(seed=3), tiny_tokenizer()
    r = attention_norms(model, tok, SENTENCE)
    no_bv = copy.deepcopy(model)
    v_lin = qkv_projections(arch.attention_modules(no_bv)[0])[2]
    with torch.no_grad():
        b_v = v_lin.bias.detach().clone()
        v_lin.bias.zero_()
    r0 = attention_norms(no_bv, tok, SENTENCE)
    dense = output_projection(model, 0)
    nh = arch.n_heads(model)
    w_o = dense.weight.detach().T.reshape(nh, -1, dense.out_features)  # (nh, d_head, d_model): W_O^h
    shift = torch.einsum("hk,hkd->hd", b_v.view(nh, -1), w_o)  # (nh, d_model)
    assert shift.abs().max() > 1e-2
    torch.testing.assert_close(r.transformed[0] - r0.transformed[0], shift.unsqueeze(1).expand_as(r.transformed[0]),
                               atol=1e-5, rtol=0)


def test_tiny_bert_classifier_and_shares():
    model, tok = tiny_bert(seed=4), tiny_tokenizer()
    r, _ = _check_against_model(model, tok, SENTENCE, atol=1e-5)
    assert r.tokens[0] == "[CLS]" and r.tokens[-1] == "[SEP]"
    assert r.special.tolist() == [True] + [False] * (len(r.tokens) - 2) + [True]
    weight_share, norm_share = r.shares()
    assert weight_share.shape == norm_share.shape == (2, 4)
    assert torch.all((0 <= norm_share) & (norm_share <= 1)) and torch.all((0 <= weight_share) & (weight_share <= 1))
    everything = torch.ones(len(r.tokens), dtype=torch.bool)
    w_all, n_all = r.shares(everything)
    torch.testing.assert_close(w_all, torch.ones(2, 4))
    torch.testing.assert_close(n_all, torch.ones(2, 4))


@pytest.mark.prepared
def test_embedded_model_sum_of_weighted_vectors_is_the_dense_output():
    from xaikit.models import load_sentiment

    model, tok = load_sentiment("embedded")
    r, err = _check_against_model(model, tok, SENTENCE, atol=1e-4)
    print(f"embedded model: max |sum_h sum_j alpha f(x_j) + b_O - dense output| = {err:.1e}")
    assert r.weights.shape[:2] == (arch.n_layers(model), arch.n_heads(model))


def test_bad_input_is_named():
    model, tok = tiny_bert(seed=4), tiny_tokenizer()
    r = attention_norms(model, tok, "i like the movie")
    with pytest.raises(ValueError, match=r"layer must be an int <= 1, got 2. the model has 2 layers: use 0..1"):
        r.head(2, 0)
    with pytest.raises(ValueError, match=r"head must be an int <= 3, got 4. the model has 4 heads"):
        r.head(0, 4)
    with pytest.raises(TypeError, match="layer must be an int"):
        r.output("0")
    with pytest.raises(ValueError, match="boolean mask of the 6 tokens"):
        r.shares(torch.ones(3, dtype=torch.bool))
    with pytest.raises(ValueError, match="text is empty"):
        attention_norms(model, tok, "  ")
    with pytest.raises(ValueError, match="tokenizer is required"):
        attention_norms(model, None, "i like the movie")
    with pytest.raises(TypeError, match="model must be a transformers model"):
        attention_norms(lambda x: x, tok, "i like the movie")
    with pytest.raises(ValueError, match="image model"):
        attention_norms(tiny_vit(), tok, "i like the movie")
    with pytest.raises(ValueError, match="layer must be an int <= 1"):
        output_projection(model, 5)
    small = tiny_bert(seed=2, vocab_size=40)
    with pytest.raises(ValueError, match="tokenizer does not match the model"):
        attention_norms(small, tok, "i like the movie")
    assert isinstance(r, AttentionNorms)
