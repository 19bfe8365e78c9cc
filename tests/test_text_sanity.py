"""Oracles for the text sanity checks (notebook 06, Adebayo et al. 2018 carried to transformers): zero blocks
randomised give similarity 1; each re-drawn module equals its own ``reset_parameters`` draw under the same
seed; the cascade changes exactly the named blocks; the similarity is scipy's Spearman."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from xaikit.lab import text_sanity as sanity
from xaikit.lab.tensor_sanity import _layer_seed
from xaikit.models import tiny_bert, tiny_tokenizer
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
    from xaikit.lab import text_sanity as sanity
    from xaikit.models import tiny_bert, tiny_tokenizer

    with pytest.raises(TypeError, match="list of sentences"):
        sanity.cascade_similarities(tiny_bert(), tiny_tokenizer(), "a fine film", [1], ["attention"])


def test_cascade_costs_counted_by_hooks(bert):
    """What the sanity table cost, counted by hooks. The cheap methods read one shared
    forward/backward pass per (model, text): 2 texts on the trained model and on 2 randomised copies give 6
    of each; the trained model's prediction (target=None) costs one more forward per text, and the randomised
    copies, explained for the trained model's class, none. An independent count: a forward pre-hook on each
    model (the trained one and every copy) adds up the batch rows that enter it."""
    model, tok = bert
    rows = []
    handles = []
    real_randomise = sanity.randomise_blocks

    def hooked(m):
        def count(mod, args, kwargs, owner=m):  # a copy made later carries this hook too: count its owner only
            if mod is owner:
                rows.append(int(kwargs["input_ids"].shape[0] if "input_ids" in kwargs else args[0].shape[0]))
        handles.append(m.register_forward_pre_hook(count, with_kwargs=True))
        return m

    hooked(model)
    try:
        sanity.randomise_blocks = lambda *a, **k: hooked(real_randomise(*a, **k))
        out = sanity.cascade_similarities(model, tok, TEXTS, [sanity.HEAD, 1], CHEAP)
    finally:
        sanity.randomise_blocks = real_randomise
        for h in handles:
            h.remove()
    costs = out["costs"]
    assert set(costs) == {"prepare", "shared pass"}, costs
    shared = costs["shared pass"]
    assert (shared.forward, shared.backward) == (6, 6)
    assert (costs["prepare"].forward, costs["prepare"].backward) == (len(TEXTS), 0)
    assert sum(c.forward for c in costs.values()) == sum(rows) == 8
    assert all(c.seconds > 0 for c in costs.values())


def test_panel_shows_costs_counted_by_hooks(bert):
    """The panel shows what each column cost. Grad-SAM and rollout read one shared pass: one forward
    and one backward per model; the trained model's prediction costs one forward more; a column taken from the
    cache shows what computing it cost, marked cached."""
    from xaikit import widgets as W

    model, tok = bert
    p = W.TextSanityPanel(model, tok, TEXTS, methods=["Grad-SAM", "rollout"])
    r = p.set(randomised=1, sentence=1)
    assert p.error is None, p.error_traceback
    got = {(who, part): (c.forward, c.backward, note) for who, part, c, note in r.costs}
    assert got[("trained", "shared pass")][:2] == (1, 1)
    assert got[("randomised", "shared pass")][:2] == (1, 1)
    assert got[("trained", "prepare")][:2] == (1, 0)
    assert got[("randomised", "prepare")][:2] == (0, 0)  # explained for the trained model's class: no pass
    assert all(note == "computed now" for *_, note in got.values())
    assert "xk-cost-table" in p.html.value and "randomised: shared pass" in p.html.value
    p.set(randomised=2)
    again = p.set(randomised=1)
    notes = {(who, part): (c.forward, note) for who, part, c, note in again.costs}
    assert notes[("randomised", "shared pass")] == (1, "cached: what computing it cost")
