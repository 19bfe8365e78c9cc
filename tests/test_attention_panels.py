"""The attention panels: set controls, assert on results and figures; the explorer's layer/head/query
switches must not run the model again."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
import torch
from PIL import Image

from xaikit.attention import positions as PE
from xaikit.models.hooks import forward_hooks
from xaikit.models.tiny import tiny_bert, tiny_tokenizer
from xaikit.widgets import (
    AttentionExplorer,
    AttentionNormsPanel,
    HeadsPanel,
    MaskPanel,
    PositionalEncodingPanel,
    SaturationPanel,
    WorkedExamplePanel,
)

SENTENCE = "The cat drank the milk because it was hungry"


def test_positional_encoding_panel_follows_controls():
    p = PositionalEncodingPanel(d_model=16, positions=20)
    assert p.error is None and p.result.pe.shape == (20, 16)
    p.set(d_model=32, positions=40)
    assert p.result.pe.shape == (40, 32) and p.result.similarity.shape == (40, 40)
    torch.testing.assert_close(p.result.pe, PE.sinusoidal_positional_encoding(40, 32))
    assert len(p.figure.axes) == 4  # two heatmaps and their colour bars
    assert p.image.value[:4] == b"\x89PNG"


def test_positional_encoding_panel_updates_in_place_like_a_full_redraw(monkeypatch):
    p = PositionalEncodingPanel(d_model=16, positions=20)
    axes_before = list(p.figure.axes)
    p.set(d_model=24, positions=30)  # updated in place: same axes, new data, limits and title
    assert p.figure.axes == axes_before
    heat, sim = (ax.images[0] for ax in p.figure.axes[:2])
    np.testing.assert_allclose(heat.get_array(), PE.sinusoidal_positional_encoding(30, 24).numpy(), rtol=0, atol=1e-6)
    assert sim.get_array().shape == (30, 30) and sim.axes.get_xlim() == (-0.5, 29.5)
    assert heat.axes.get_title() == "PE (30 positions x d_model 24)"
    restyled = p.image.value
    fresh = PositionalEncodingPanel(d_model=24, positions=30)
    assert fresh.image.value == restyled  # the same pixels as building the figure from scratch

    def broken(fig, r):
        raise RuntimeError("boom")

    monkeypatch.setattr(p, "update_artists", broken)
    p.set(positions=31)
    assert isinstance(p.error, RuntimeError)  # shown in the panel ...
    monkeypatch.undo()
    p.set(positions=32)  # ... and the next change builds the figure again
    assert p.error is None and p.result.pe.shape == (32, 24) and p.figure.axes != axes_before


def test_worked_example_panel_saturates_at_low_temperature():
    p = WorkedExamplePanel()
    assert p.result.temperature == pytest.approx(math.sqrt(3))
    torch.testing.assert_close(p.result.steps.weights.sum(-1), torch.ones(3))
    warm = p.result
    p.set(temperature=0.1)
    cold = p.result
    assert torch.all(cold.entropy < warm.entropy)
    assert torch.all(cold.max_weight > warm.max_weight)
    # inputs 2 and 3 become one-hot and their softmax gradient vanishes ...
    assert float(cold.max_weight[1:].min()) > 0.99 and float(cold.grad_norm[1:].max()) < 1e-6
    # ... input 1's scores tie (2, 4, 4): it splits between keys 2 and 3, entropy -> ln 2
    torch.testing.assert_close(cold.steps.weights[0], torch.tensor([0.0, 0.5, 0.5]), atol=1e-6, rtol=0)
    assert cold.entropy[0].item() == pytest.approx(math.log(2), abs=1e-6)
    assert "entropy" in p.html.value


def test_saturation_panel_scaling_keeps_entropy():
    p = SaturationPanel(d_k=256, scaled=False)
    raw, scaled = p.curves["raw"], p.curves["scaled"]
    assert raw["entropy"][-1] < 0.5 * scaled["entropy"][-1]  # unscaled d_k = 1024 saturates
    assert raw["grad_norm"][-1] < 0.2 * scaled["grad_norm"][-1]
    assert max(scaled["entropy"]) - min(scaled["entropy"]) < 0.3 * math.log(p.n_keys)
    p.set(d_k=4, scaled=True)
    assert p.result.d_k == 4 and p.result.scaled
    assert p.result.weights.sum().item() == pytest.approx(1.0)


def test_blitted_refresh_matches_full_redraw():
    fresh = WorkedExamplePanel(temperature=0.1)  # full draw at 0.1
    p = WorkedExamplePanel()
    p.set(temperature=0.1)  # full draw at sqrt(3), then a blitted refresh to 0.1
    a = np.asarray(Image.open(io.BytesIO(fresh.image.value)).convert("RGB"), dtype=float)
    b = np.asarray(Image.open(io.BytesIO(p.image.value)).convert("RGB"), dtype=float)
    assert a.shape == b.shape
    assert np.abs(a - b).mean() < 1.0, "the blitted figure differs from a full redraw"
    standard = np.asarray(Image.open(io.BytesIO(WorkedExamplePanel().image.value)).convert("RGB"), dtype=float)
    assert np.abs(standard - b).mean() > 1.0  # and the comparison can tell two temperatures apart


def test_mask_panel_masks():
    p = MaskPanel()
    assert p.result.mask is None and torch.all(p.result.weights > 0)
    p.set(mask="causal")
    assert torch.all(p.result.weights.triu(1) == 0)  # exact: exp(-inf) = 0
    upper = torch.ones(len(p.tokens), len(p.tokens), dtype=torch.bool).triu(1)
    assert torch.isinf(p.result.scores[upper]).all() and torch.isfinite(p.result.scores[~upper]).all()
    p.set(mask="padding")
    pad = [i for i, t in enumerate(p.tokens) if t == "[PAD]"]
    assert torch.all(p.result.weights[:, pad] == 0)  # exact: exp(-inf) = 0
    torch.testing.assert_close(p.result.weights.sum(-1), torch.ones(len(p.tokens)))


def test_heads_panel_matches_torch():
    p = HeadsPanel(n_heads=1)
    p.set(n_heads=4)
    assert p.error is None and len(p.figure.axes) == 4
    for n_heads in (1, 2, 4, 8):
        r = p.compute(n_heads=n_heads)
        assert r.weights.shape == (n_heads, 5, 5)
        assert r.max_diff_vs_torch < 1e-5
        torch.testing.assert_close(r.weights.sum(-1), torch.ones(n_heads, 5))


@pytest.fixture(scope="module")
def explorer_model():
    return tiny_bert(seed=4), tiny_tokenizer()


def test_explorer_switches_without_forward_pass(explorer_model):
    model, tok = explorer_model
    calls = {"n": 0}
    with forward_hooks((model, lambda *a: calls.__setitem__("n", calls["n"] + 1))):
        e = AttentionExplorer(model, tok, text=SENTENCE, layer=0, head=0, query="it")
        assert e.error is None and e.n_forward == 1 and calls["n"] == 1
        assert e.result.tokens[e.result.query] == "it"
        first_png = e.image.value
        for layer, head in [(1, 0), (1, 3), (0, "mean"), (1, 2)]:
            e.set(layer=layer, head=head)
            assert e.error is None
            expected = e.result.capture.attentions[layer].mean(0) if head == "mean" else \
                e.result.capture.attentions[layer, head]
            torch.testing.assert_close(e.result.weights, expected)
        e.set(query=2)
        torch.testing.assert_close(e.result.row, e.result.capture.attentions[1, 2, 2])
        assert e.n_forward == 1 and calls["n"] == 1, "a layer/head/query switch ran the model again"
        assert e.image.value != first_png
        # the figure shows exactly the selected weights
        np.testing.assert_allclose(e.figure.axes[0].images[0].get_array(), e.result.weights.numpy())
        # a new sentence runs the model once; going back uses the cache
        e.set(text="i like the movie")
        assert e.n_forward == 2 and e.result.tokens == ["[CLS]", "i", "like", "the", "movie", "[SEP]"]
        assert e.controls["query"].options[-1] == ("5: [SEP]", 5)
        e.set(text=SENTENCE)
        assert e.n_forward == 2 and calls["n"] == 2
        assert e.figure.axes[0].get_xticklabels()[2].get_text() == "cat"


def test_explorer_errors(explorer_model):
    model, tok = explorer_model
    e = AttentionExplorer(model, tok, text=SENTENCE)
    e.set(text="   ")
    assert isinstance(e.error, ValueError) and "empty" in str(e.error)
    assert "xk-error" in e.status.value
    e.set(text="i like the movie")
    assert e.error is None
    with pytest.raises(ValueError, match="layer must be an int <= 1"):
        AttentionExplorer(model, tok, layer=7)
    with pytest.raises(ValueError, match="head must be an int <= 3"):
        AttentionExplorer(model, tok, head=9)
    with pytest.raises(ValueError, match="not among the tokens"):
        AttentionExplorer(model, tok, query="dog")
    with pytest.raises(ValueError, match="text is empty"):
        AttentionExplorer(model, tok, text="")


def test_norms_panel_shows_weights_and_norms_without_new_forward_passes(explorer_model):
    from xaikit.attention.norms import attention_norms

    model, tok = explorer_model
    p = AttentionNormsPanel(model, tok, text=SENTENCE, layer=0, head=1)
    assert p.error is None and p.n_forward == 1
    oracle = attention_norms(model, tok, SENTENCE)
    for layer, head in [(1, 0), (1, 3), (0, 2)]:
        v = p.set(layer=layer, head=head)
        assert p.error is None
        torch.testing.assert_close(v.weights, oracle.weights[layer, head])
        torch.testing.assert_close(v.norms, oracle.weights[layer, head] * oracle.f_norms[layer, head])
        torch.testing.assert_close(v.norm_share.sum(-1), torch.ones(len(v.tokens)))
        # the figure shows exactly these two matrices
        np.testing.assert_allclose(p.figure.axes[0].images[0].get_array(), v.weights.numpy())
        np.testing.assert_allclose(p.figure.axes[1].images[0].get_array(), v.norm_share.numpy())
        assert p.figure.axes[0].get_title() == f"weights \u03b1 (layer {layer}, head {head})"
    assert p.n_forward == 1, "a layer/head switch ran the model again"
    assert "of the norm" in p.html.value and "xk-token" in p.html.value
    # the blitted update has the pixels of a panel drawn from scratch at the same head
    fresh = AttentionNormsPanel(model, tok, text=SENTENCE, layer=0, head=2)
    a = np.asarray(Image.open(io.BytesIO(fresh.image.value)).convert("RGB"), dtype=float)
    b = np.asarray(Image.open(io.BytesIO(p.image.value)).convert("RGB"), dtype=float)
    assert a.shape == b.shape and np.abs(a - b).mean() < 1.0
    p.set(text="i like the movie")
    assert p.n_forward == 2 and p.result.tokens == ["[CLS]", "i", "like", "the", "movie", "[SEP]"]
    assert p.figure.axes[0].get_xticklabels()[2].get_text() == "like"
    p.set(text=SENTENCE)
    assert p.n_forward == 2  # cached


def test_norms_panel_errors(explorer_model):
    model, tok = explorer_model
    p = AttentionNormsPanel(model, tok, text=SENTENCE)
    p.set(text="   ")
    assert isinstance(p.error, ValueError) and "empty" in str(p.error)
    assert "xk-error" in p.status.value
    p.set(text="i like the movie", layer=1)
    assert p.error is None and p.result.layer == 1
    with pytest.raises(ValueError, match="layer must be an int <= 1"):
        AttentionNormsPanel(model, tok, layer=7)
    with pytest.raises(ValueError, match="head must be an int <= 3"):
        AttentionNormsPanel(model, tok, head=4)
    with pytest.raises(ValueError, match="text is empty"):
        AttentionNormsPanel(model, tok, text="")


def test_explorer_head_names_mean(bert, tok):
    from xaikit.widgets import AttentionExplorer

    with pytest.raises(ValueError, match=r"head must be an int 0..3 \(one head\) or 'mean'.*got 'all'"):
        AttentionExplorer(bert, tok, text="i like the movie", head="all")
