"""Wiegreffe & Pinter's diagnostic model (xaikit.lab.diagnostics, notebook 06, section 4).

Oracles: a plain loop for the pooling, the mean (uniform weights) and one token's output (one-hot weights);
a synthetic task whose label is carried by one known token, where oracle weights must reach accuracy near 1
and adversarial weights (none on that token) stay at chance; the same sequences with extra padding (any ids
and weights there) give the same outputs; the model's attention read in padded batches equals
``xaikit.text.attention_views.raw_attention`` on each sentence alone.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from xaikit.lab.diagnostics import (
    DiagnosticMLP,
    diagnostic_data,
    evaluate_diagnostic,
    pool,
    run_diagnostic,
    train_diagnostic,
)
from xaikit.models.tiny import tiny_bert, tiny_tokenizer

PAIRS = [("i like the movie", 1), ("she hates the book", 0), ("this is so boring", 0),
         ("i cannot wait for next time", 1), ("you look extremely confused", 0), ("the cat drank the milk", 1)]


def _pool_loop(h, w, mask):
    """The definition, one sequence and one token at a time."""
    out = torch.zeros(h.shape[0], h.shape[2], dtype=h.dtype)
    for b in range(h.shape[0]):
        total = sum(float(w[b, t]) for t in range(h.shape[1]) if mask[b, t])
        for t in range(h.shape[1]):
            if mask[b, t]:
                out[b] += float(w[b, t]) / total * h[b, t]
    return out


def _ragged(seed=0, B=5, T=7, H=3):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(B, T, H, generator=g, dtype=torch.float64)
    lengths = torch.tensor([7, 3, 5, 1, 6])[:B]
    mask = torch.arange(T) < lengths[:, None]  # (B, T)
    return h, mask, lengths


# -- pooling --------------------------------------------------------------------------------------------
def test_pool_equals_loop_mean_and_one_token():
    h, mask, lengths = _ragged()
    w = torch.rand(h.shape[:2], generator=torch.Generator().manual_seed(1), dtype=torch.float64) + 0.1
    torch.testing.assert_close(pool(h, w, mask), _pool_loop(h, w, mask), atol=1e-12, rtol=0)
    uniform = pool(h, mask.double(), mask)  # uniform weights: the plain mean of the real tokens
    for b, n in enumerate(lengths.tolist()):
        torch.testing.assert_close(uniform[b], h[b, :n].mean(0), atol=1e-12, rtol=0)
    one_hot = torch.zeros(h.shape[:2], dtype=torch.float64)
    picked = [0, 2, 4, 0, 5]
    one_hot[torch.arange(5), picked] = 3.0  # any positive scale: the weights are renormalised
    torch.testing.assert_close(pool(h, one_hot, mask), h[torch.arange(5), picked], atol=1e-12, rtol=0)
    assert not torch.allclose(pool(h, w, mask), uniform)  # the weights do matter


def test_padding_changes_nothing():
    h, mask, _ = _ragged()
    w = torch.rand(h.shape[:2], generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    extra = 4  # four more padded positions, with nonsense outputs and weights there
    h_pad = torch.cat([h, 1e3 * torch.randn(5, extra, 3, dtype=torch.float64)], dim=1)
    w_pad = torch.cat([w, torch.full((5, extra), 7.0, dtype=torch.float64)], dim=1)
    m_pad = torch.cat([mask, torch.zeros(5, extra, dtype=torch.bool)], dim=1)
    torch.testing.assert_close(pool(h_pad, w_pad, m_pad), pool(h, w, mask), atol=1e-12, rtol=0)
    w_neg = w.clone()
    w_neg[~mask] = -5.0  # weights at padding are never read, not even checked
    torch.testing.assert_close(pool(h, w_neg, mask), pool(h, w, mask), atol=1e-12, rtol=0)

    emb = torch.randn(30, 8, generator=torch.Generator().manual_seed(3))
    ids = torch.randint(1, 30, (5, 7), generator=torch.Generator().manual_seed(4))
    ids_pad = torch.cat([ids, torch.randint(0, 30, (5, extra))], dim=1)
    w32, w32_pad = w.float(), w_pad.float()
    for learn in (False, True):
        torch.manual_seed(0)
        mlp = DiagnosticMLP(emb, hidden=6, learn_weights=learn).eval()
        with torch.no_grad():
            a = mlp(ids, mask, None if learn else w32)
            b = mlp(ids_pad, m_pad, None if learn else w32_pad)
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)
        if learn:
            alpha = mlp.weights(ids_pad, m_pad)
            assert (alpha[~m_pad] == 0).all() and torch.allclose(alpha.sum(-1), torch.ones(5))  # exact: masked


# -- the synthetic task ----------------------------------------------------------------------------------
def _key_task(n, seed, vocab=40, T=10):
    """Each sequence holds exactly one key token, id 1 (label 1) or id 2 (label 0), at a random position among
    random filler tokens (ids 3..vocab-1, which say nothing about the label); lengths 4..T, then padding (id 0)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(4, T + 1, (n,), generator=g)
    mask = torch.arange(T) < lengths[:, None]  # (n, T)
    ids = torch.randint(3, vocab, (n, T), generator=g)
    labels = torch.randint(0, 2, (n,), generator=g)
    where = (torch.rand(n, generator=g) * lengths).long()  # the key's position, inside the sequence
    ids[torch.arange(n), where] = 2 - labels
    ids[~mask] = 0
    oracle = torch.zeros(n, T)
    oracle[torch.arange(n), where] = 1.0
    adversarial = mask.float() - oracle  # uniform over every token but the key
    return ids, mask, labels, oracle, adversarial


def test_oracle_weights_solve_the_task_and_adversarial_weights_cannot():
    emb = torch.randn(40, 16, generator=torch.Generator().manual_seed(0))
    train, test = _key_task(800, seed=1), _key_task(400, seed=2)
    ids, mask, y, oracle, adversarial = train
    t_ids, t_mask, t_y, t_oracle, t_adversarial = test
    acc = {}
    for name, w, tw in (("oracle", oracle, t_oracle), ("adversarial", adversarial, t_adversarial),
                        ("uniform", mask.float(), t_mask.float())):
        mlp = train_diagnostic(emb, ids, mask, y, w, seed=0, hidden=16, epochs=10, batch_size=32)
        acc[name] = evaluate_diagnostic(mlp, t_ids, t_mask, t_y, tw)["accuracy"]
    mlp = train_diagnostic(emb, ids, mask, y, learn_weights=True, seed=0, hidden=16, epochs=10, batch_size=32)
    acc["learned"] = evaluate_diagnostic(mlp, t_ids, t_mask, t_y)["accuracy"]
    alpha = mlp.weights(t_ids, t_mask)
    key_share = float((alpha * t_oracle).sum(-1).mean())  # how much weight the learned weights give the key
    assert acc["oracle"] >= 0.97, acc
    assert 0.35 <= acc["adversarial"] <= 0.65, acc  # the key is invisible: chance (400 test sequences, SE 0.025)
    assert acc["learned"] >= 0.9 and key_share > 0.5, (acc, key_share)  # it finds the key itself
    assert acc["oracle"] >= acc["uniform"] >= acc["adversarial"] + 0.1, acc


def test_training_is_seeded_and_leaves_the_global_generator_alone():
    emb = torch.randn(40, 8, generator=torch.Generator().manual_seed(0))
    ids, mask, y, _, _ = _key_task(100, seed=5)
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = train_diagnostic(emb, ids, mask, y, mask.float(), seed=7, epochs=2)
    after = torch.rand(1)
    b = train_diagnostic(emb, ids, mask, y, mask.float(), seed=7, epochs=2)
    c = train_diagnostic(emb, ids, mask, y, mask.float(), seed=8, epochs=2)
    assert torch.equal(before, after)  # exact: the global generator's own draws
    assert torch.equal(a.classifier.weight, b.classifier.weight)  # exact: the same seeded training
    assert not torch.equal(a.classifier.weight, c.classifier.weight)  # exact: another seed's training
    assert torch.equal(a.embedding.weight, emb)  # exact: the embedding stays frozen


def test_all_pairs_trained_at_once_equal_one_training_per_pair():
    """run_diagnostic trains every (seed, weighting) pair at once (stacked parameters, one Adam); each pair's
    logits equal train_diagnostic's for it, up to the order of float sums (ragged lengths, a short last batch)."""
    from xaikit.lab.diagnostics import DiagnosticData, _train_stacked

    emb = torch.randn(40, 16, generator=torch.Generator().manual_seed(0))
    sets = []
    for n, seed in ((200, 3), (90, 4)):  # 200 = 6 batches of 32 and one of 8
        ids, mask, y, oracle, adversarial = _key_task(n, seed=seed)
        sets.append((DiagnosticData([""] * n, ids, mask, y, oracle, y, -1), adversarial))
    (train, train_adv), (test, test_adv) = sets
    weights = {"uniform": (train.weights("uniform"), test.weights("uniform")), "learned": (None, None),
               "model attention": (train.attention, test.attention), "other attention": (train_adv, test_adv)}
    seeds = (0, 5)
    logits = _train_stacked(emb, train, test, weights, seeds, 8, 3, 3e-3, 32, 2)
    assert logits.shape == (2, 4, 90, 2)
    for i, seed in enumerate(seeds):
        for j, (name, (w, tw)) in enumerate(weights.items()):
            mlp = train_diagnostic(emb, train.ids, train.mask, train.labels, w, learn_weights=name == "learned",
                                   seed=seed, hidden=8, epochs=3, batch_size=32, n_classes=2)
            with torch.no_grad():
                ref = mlp(test.ids, test.mask, tw)
            torch.testing.assert_close(logits[i, j], ref, atol=1e-5, rtol=0)


# -- the model's attention ------------------------------------------------------------------------------
def test_attention_in_batches_equals_raw_attention_alone(model, tok):
    from xaikit.text.attention_views import raw_attention

    data = diagnostic_data(model, tok, PAIRS, batch_size=4)  # mixed lengths: padded batches
    assert data.ids.shape[0] == len(PAIRS) and data.layer == 1
    for i, (text, label) in enumerate(PAIRS):
        view = raw_attention(model, tok, text)  # the last layer's [CLS] row, mean of heads, alone
        words = [j for j, t in enumerate(view.tokens) if t not in ("[CLS]", "[SEP]")]
        want = view.scores[words] / view.scores[words].sum()
        got = data.attention[i][data.mask[i]].numpy()
        np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)
        assert tok.convert_ids_to_tokens(data.ids[i][data.mask[i]].tolist()) == [view.tokens[j] for j in words]
        assert int(data.labels[i]) == label
        with torch.no_grad():
            alone = model(**tok(text, return_tensors="pt")).logits.argmax(-1)
        assert int(data.predicted[i]) == int(alone)
    assert torch.allclose(data.attention.sum(-1), torch.ones(len(PAIRS)))
    assert (data.attention[~data.mask] == 0).all()  # exact: padding is given weight 0


def test_the_disk_cache_returns_the_same_data_and_misses_for_a_changed_model(model, tok, tmp_path, monkeypatch):
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path))
    fresh = diagnostic_data(model, tok, PAIRS)
    first = diagnostic_data(model, tok, PAIRS, cache=True)
    files = list((tmp_path / "diagnostics").glob("*/attention.pt"))
    assert len(files) == 1
    again = diagnostic_data(model, tok, PAIRS, cache=True)  # read back from the file
    for d in (first, again):
        assert d.texts == fresh.texts and d.layer == fresh.layer
        for name in ("ids", "mask", "labels", "attention", "predicted"):
            assert torch.equal(getattr(d, name), getattr(fresh, name)), name  # exact: the same call; a file copy
    changed = copy.deepcopy(model)
    with torch.no_grad():
        changed.classifier.bias += 1.0  # another model: its own entry
    diagnostic_data(changed, tok, PAIRS, cache=True)
    diagnostic_data(model, tok, PAIRS[:3], cache=True)  # other sentences: another entry
    diagnostic_data(model, tok, PAIRS, layer=0, cache=True)  # another layer: another entry
    assert len(list((tmp_path / "diagnostics").glob("*/attention.pt"))) == 4
    # a damaged file (same size, one byte changed) fails its checksum and is rebuilt, never loaded
    from xaikit.models import cache

    raw = bytearray(files[0].read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    files[0].write_bytes(bytes(raw))
    cache._verified.clear()  # the checksums are remembered per process; a new process would hash again
    repaired = diagnostic_data(model, tok, PAIRS, cache=True)
    assert torch.equal(repaired.attention, fresh.attention)  # exact: rebuilt by the same call
    assert files[0].read_bytes() != bytes(raw)


def test_run_diagnostic_on_a_tiny_model_and_a_far_copy(model, tok, tmp_path, monkeypatch):
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path))
    res = run_diagnostic(model, tok, PAIRS * 3, PAIRS, seeds=(0, 1), hidden=8, epochs=2, progress=False)
    assert res.accuracy.shape == res.f1.shape == (2, 3) and res.weightings == ("uniform", "learned", "model attention")
    assert ((res.accuracy >= 0) & (res.accuracy <= 1)).all() and res.n_train == 18 and res.n_test == 6
    np.testing.assert_allclose(res.gain("model attention", "uniform"), res.accuracy[:, 2] - res.accuracy[:, 0],
                               rtol=0, atol=1e-12)
    assert "mean" in res.table()
    from matplotlib.figure import Figure

    ax = res.plot(Figure().subplots())
    assert len(ax.collections) == 2 * 3  # one dot per seed and weighting
    dots = np.array([c.get_offsets()[0] for c in ax.collections])  # (x, accuracy) of each dot
    np.testing.assert_allclose(sorted(dots[:, 1]), sorted(res.accuracy.ravel()))
    labels = ax.get_legend_handles_labels()[1]
    assert labels[:3] == list(res.weightings) and any("transformer itself" in t for t in labels)
    other = run_diagnostic(model, tok, PAIRS * 3, PAIRS, seeds=(0,), hidden=8, epochs=2, progress=False,
                           controls={"other": tiny_bert(seed=4)})
    assert other.weightings[-1] == "other attention" and other.accuracy.shape == (1, 4)
    np.testing.assert_array_equal(other.accuracy[0, :3], res.accuracy[0])  # unchanged (exact: the same seeded runs)
    with pytest.raises(ValueError, match="controls must map a name"):
        run_diagnostic(model, tok, PAIRS, PAIRS, controls={3: model}, progress=False)
    with pytest.raises(TypeError, match=r"controls\['x'\] must be a transformers model"):
        run_diagnostic(model, tok, PAIRS, PAIRS, controls={"x": None}, progress=False)
    again = run_diagnostic(model, tok, PAIRS * 3, PAIRS, seeds=(0, 1), hidden=8, epochs=2, progress=False)
    np.testing.assert_array_equal(res.accuracy, again.accuracy)  # exact: the same seeded runs
    # a float64 copy on xaikit.device(): the results come back on the CPU, the same up to float rounding
    import xaikit

    far = copy.deepcopy(model).to(device=xaikit.device(), dtype=torch.float64).eval()
    d_far, d_near = diagnostic_data(far, tok, PAIRS), diagnostic_data(model, tok, PAIRS)
    assert d_far.attention.device.type == "cpu" and d_far.attention.dtype == torch.float32
    torch.testing.assert_close(d_far.attention, d_near.attention, atol=1e-5, rtol=0)
    assert torch.equal(d_far.ids, d_near.ids)  # exact: integer ids


# -- bad input ------------------------------------------------------------------------------------------
def test_bad_input_names_the_parameter(model, tok, tmp_path, monkeypatch):
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path))
    h, mask, _ = _ragged()
    w = mask.double()
    with pytest.raises(ValueError, match=r"weights must have shape \(batch, tokens\) = \(5, 7\)"):
        pool(h, w[:3], mask[:3])
    with pytest.raises(ValueError, match="weights has 6 positions per sequence but the token outputs have 7"):
        pool(h, w[:, :6], mask)
    bad = w.clone()
    bad[1, 0] = -0.2
    with pytest.raises(ValueError, match=r"non-negative.*weights\[1, 0\]"):
        pool(h, bad, mask)
    zero = w.clone()
    zero[2] = 0
    with pytest.raises(ValueError, match="sequence 2 are zero on every real token"):
        pool(h, zero, mask)
    with pytest.raises(ValueError, match="mask must have shape"):
        pool(h, w, mask[:, :5])
    with pytest.raises(ValueError, match="outputs must be a"):
        pool(h[0], w, mask)
    emb = torch.randn(30, 8)
    ids = torch.randint(1, 30, (5, 7))
    with pytest.raises(ValueError, match=r"ids must lie in 0..29"):
        DiagnosticMLP(emb)(ids + 10, mask, w.float())
    with pytest.raises(ValueError, match="weights is None"):
        DiagnosticMLP(emb)(ids, mask)
    with pytest.raises(ValueError, match="learns its own weights"):
        DiagnosticMLP(emb, learn_weights=True)(ids, mask, w.float())
    y = torch.zeros(5, dtype=torch.long)
    with pytest.raises(ValueError, match=r"labels must have one class per sequence, shape \(5,\)"):
        train_diagnostic(emb, ids, mask, y[:4], w.float())
    with pytest.raises(ValueError, match="epochs must be an int >= 1"):
        train_diagnostic(emb, ids, mask, y, w.float(), epochs=0)
    with pytest.raises(ValueError, match="weights has 6 positions"):
        train_diagnostic(emb, ids, mask, y, w[:, :6].float())
    with pytest.raises(ValueError, match="pairs must be a non-empty list"):
        diagnostic_data(model, tok, [])
    with pytest.raises(ValueError, match="pairs' sentences"):
        diagnostic_data(model, tok, [("  ", 1)])
    with pytest.raises(ValueError, match="layer must be an int <= 1"):
        diagnostic_data(model, tok, PAIRS, layer=99)
    with pytest.raises(ValueError, match="weightings"):
        run_diagnostic(model, tok, PAIRS, PAIRS, weightings=("uniform", "rollout"), progress=False)
    with pytest.raises(ValueError, match="seeds is empty"):
        run_diagnostic(model, tok, PAIRS, PAIRS, seeds=(), progress=False)
    with pytest.raises(ValueError, match=r"test_pairs hold label 2, but the model has 2 classes"):
        run_diagnostic(model, tok, PAIRS, PAIRS + [("meh", 2)], progress=False, cache=False)


def test_the_pretrained_control_shares_the_embedded_models_tokens_and_word_embeddings():
    from xaikit.models.sentiment import is_built, pretrained_encoder

    if not is_built():
        pytest.skip("the embedded sentiment model is not prepared (python -m xaikit prepare)")
    import xaikit

    tuned, _ = xaikit.models.load_sentiment()
    base = pretrained_encoder()
    assert base.config._attn_implementation == "eager" and not base.training
    e_base, e_tuned = base.get_input_embeddings().weight, tuned.get_input_embeddings().weight
    assert e_base.shape == e_tuned.shape
    torch.testing.assert_close(e_base.float().cpu(), e_tuned.float().cpu(), atol=1e-6, rtol=0)  # frozen by the recipe
    w_base = base.base_model.encoder.layer[-1].attention.self.query.weight
    w_tuned = tuned.base_model.encoder.layer[-1].attention.self.query.weight
    assert not torch.allclose(w_base.float().cpu(), w_tuned.float().cpu())  # the attention itself was fine-tuned


def test_an_edit_to_any_single_weight_misses_the_disk_cache(model, tok, tmp_path, monkeypatch):
    """The key used to sum every 7th weight, so an edit elsewhere read the old attention."""
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path))
    diagnostic_data(model, tok, PAIRS, cache=True)
    edited = copy.deepcopy(model)
    with torch.no_grad():
        edited.classifier.bias[1] += 1.0  # index 1: never among the every-7th values of the old key
    diagnostic_data(edited, tok, PAIRS, cache=True)
    assert len(list((tmp_path / "diagnostics").glob("*/attention.pt"))) == 2


def test_notebook_sentences_are_fixed_and_the_sizes_follow_the_mode():
    from xaikit.lab.diagnostics import notebook_sentences

    train, test = notebook_sentences(fast=True)
    again, _ = notebook_sentences(fast=True)
    assert (len(train), len(test)) == (1000, 400) and train == again  # the same draw every time
    student, test_s = notebook_sentences(fast=False)
    assert (len(student), len(test_s)) == (2000, 500) and test_s[:400] == test


def test_attention_cache_key_ignores_where_the_model_was_loaded_from(tmp_path):
    """Moving the cache (XAIKIT_CACHE) changes the path a model is loaded from, not the model: the key of the
    attention cache must stay, or notebook 06 reads every sentence's attention again."""
    from xaikit.lab.diagnostics import _cache_key

    model, tokenizer = tiny_bert(seed=3), tiny_tokenizer(tmp_path / "tok")
    pairs = [("a fine film", 1)]
    before = _cache_key(model, tokenizer, pairs, -1)
    model.config._name_or_path, tokenizer.name_or_path = "/somewhere/else/sentiment", "/somewhere/else/sentiment"
    assert _cache_key(model, tokenizer, pairs, -1) == before
    assert _cache_key(tiny_bert(seed=4), tokenizer, pairs, -1) != before  # other weights: another key


def test_train_diagnostic_refuses_fractional_labels():
    from xaikit.lab import diagnostics as D

    emb = torch.randn(10, 4, generator=torch.Generator().manual_seed(0))
    ids = torch.tensor([[1, 2, 3]] * 6)
    mask = torch.ones(6, 3, dtype=torch.long)
    w = torch.full((6, 3), 1 / 3)
    with pytest.raises(ValueError, match=r"labels must be class indices 0, 1, \.\.\., got 0\.9 at index 0.*> 0\.5"):
        D.train_diagnostic(emb, ids, mask, [0.9, 0.2, 0.8, 0.1, 0.7, 0.6], weights=w)
    mlp = D.train_diagnostic(emb, ids, mask, [1.0, 0.0, 1.0, 0.0, 1.0, 0.0], weights=w, epochs=1)  # whole floats
    assert mlp.classifier.out_features == 2
