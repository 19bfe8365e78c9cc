"""Oracles for the text sanity checks (notebook 04, Adebayo et al. 2018 carried to transformers): zero blocks
randomised give similarity 1; each re-drawn module equals its own ``reset_parameters`` draw under the same
seed; the cascade changes exactly the named blocks; the similarity is scipy's Spearman."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from xaikit.models import tiny_bert, tiny_tokenizer
from xaikit.tensor.sanity import _layer_seed
from xaikit.text import sanity
from xaikit.text.tokens import TokenScores

TEXTS = ["i like the movie", "a bad film , really"]
CHEAP = ["Grad-SAM", "attention", "rollout", "grad-weighted attention"]


@pytest.fixture(scope="module")
def bert():
    return tiny_bert(), tiny_tokenizer()


def test_zero_blocks_give_similarity_one(bert):
    model, tok = bert
    out = sanity.cascade_similarities(model, tok, TEXTS, [0], CHEAP)
    for m in CHEAP:
        assert out["similarity"][0][m] == pytest.approx(1.0, abs=1e-6), m


def test_redrawn_weights_equal_reset_parameters_draw(bert):
    model, _ = bert
    seed = 3
    changed = sanity.randomise_blocks(model, 1, seed=seed)
    names = sanity.randomised_modules(model, 1)
    assert names, "the top block holds modules with parameters"
    modules = dict(model.named_modules())
    changed_modules = dict(changed.named_modules())
    for name in names:
        fresh = copy.deepcopy(modules[name]).float()
        torch.manual_seed(_layer_seed(seed, name))
        fresh.reset_parameters()
        for key, p in fresh.named_parameters(recurse=False):
            got = dict(changed_modules[name].named_parameters(recurse=False))[key]
            torch.testing.assert_close(got.detach().float(), p.detach(), rtol=0, atol=1e-7)
    # and they differ from the trained weights (the draw really happened)
    q = [n for n in names if n.endswith("query")][0]
    assert not torch.allclose(modules[q].weight, changed_modules[q].weight)


@pytest.mark.parametrize("blocks", [1, 2, sanity.HEAD])
def test_cascade_changes_only_named_modules(bert, blocks):
    model, _ = bert
    before = {k: v.clone() for k, v in model.state_dict().items()}
    changed = sanity.randomise_blocks(model, blocks, seed=0)
    named = sanity.randomised_modules(model, blocks)
    prefixes = tuple(n + "." for n in named)
    for key, value in changed.state_dict().items():
        mine = key.rsplit(".", 1)[0] in named and key.startswith(prefixes)
        same = torch.equal(value, before[key])
        if mine and key.endswith("weight") and "LayerNorm" not in key:
            assert not same, f"{key} should be re-drawn"
        elif not mine:
            assert same, f"{key} changed but is outside {blocks!r}"
    for key, value in model.state_dict().items():  # the original is untouched
        assert torch.equal(value, before[key]), key


def test_cascade_is_nested(bert):
    model, _ = bert
    one, two = sanity.randomise_blocks(model, 1, seed=5), sanity.randomise_blocks(model, 2, seed=5)
    top = sanity.block_names(model)[-1]
    for key, value in one.state_dict().items():
        if key.startswith(top + "."):
            assert torch.equal(value, two.state_dict()[key]), key


def test_spearman_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    tokens = [f"t{i}" for i in range(9)]
    for signed in (False, True):
        a, b = rng.normal(size=9), rng.normal(size=9)
        b[3] = b[4]  # a tie
        x = TokenScores(tokens, a, "x", 0, signed=signed)
        y = TokenScores(tokens, b, "x", 0, signed=signed)
        want = stats.spearmanr(np.abs(a), np.abs(b)) if signed else stats.spearmanr(a, b)
        assert sanity.ranking_similarity(x, y, signed) == pytest.approx(want.statistic, abs=1e-12)


def test_bad_blocks_named(bert):
    model, _ = bert
    with pytest.raises(ValueError, match="blocks"):
        sanity.randomise_blocks(model, 7)
    with pytest.raises(TypeError, match="model"):
        sanity.randomise_blocks("bert", 1)


def test_panel_follows_the_slider(bert):
    """The panel shows the library's similarities for the model the slider names; errors stay in the panel."""
    from xaikit import widgets as W

    model, tok = bert
    p = W.TextSanityPanel(model, tok, TEXTS, methods=["Grad-SAM", "rollout"])
    assert p.error is None, p.error_traceback
    r0 = p.result
    assert r0.step == 0 and r0.randomised == []
    for m in ("Grad-SAM", "rollout"):
        assert r0.similarity[m] == pytest.approx(1.0, abs=1e-6)
    png = p.image.value
    r = p.set(randomised=2, sentence=1)
    assert p.error is None, p.error_traceback
    assert p.image.value != png and r.randomised == sanity.block_names(model)
    want = sanity.cascade_similarities(model, tok, [TEXTS[1]], [2], ["Grad-SAM", "rollout"])["similarity"][2]
    for m in ("Grad-SAM", "rollout"):
        assert r.similarity[m] == pytest.approx(want[m], abs=1e-6)
    assert f"{r.similarity['rollout']:+.2f}" in p.figure.axes[1].get_title()
    h = p.set(randomised=sanity.HEAD)
    assert h.randomised == sanity.head_modules(model)
    assert h.similarity["rollout"] == pytest.approx(1.0, abs=1e-6)  # rollout never reads the head
    # an error is shown in the panel, not raised
    p._views.clear()
    p.tokenizer = None
    p.set(sentence=0)
    assert p.error is not None and "error" in p.status.value.lower()


def test_panel_refuses_bad_arguments(bert):
    from xaikit import widgets as W

    model, tok = bert
    with pytest.raises(ValueError, match="methods"):
        W.TextSanityPanel(model, tok, TEXTS, methods=["nope"])
    with pytest.raises(ValueError, match="randomised must be"):
        W.TextSanityPanel(model, tok, TEXTS, randomised=9)
    with pytest.raises(ValueError, match="texts is empty"):
        W.TextSanityPanel(model, tok, [])


def test_one_string_is_refused_as_texts():
    from xaikit.models import tiny_bert, tiny_tokenizer
    from xaikit.text import sanity

    with pytest.raises(TypeError, match="list of sentences"):
        sanity.cascade_similarities(tiny_bert(), tiny_tokenizer(), "a fine film", [1], ["attention"])
