"""A model folder is served by what it holds, not only by its name.

The real model's folder copied, manifest and all, under the shuffled-label model's name passed every checksum
and was served as "embedded-shuffled", although its metrics.json said ``labels: real`` and another recipe
hash. The recorded label mode, recipe, world and seed are now compared with the folder asked for. The
README's "Bad input and safety" table lists this.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from safetensors.torch import load_file, save_file

from xaikit.models import cache, loaders, sentiment
from xaikit.models.tiny import tiny_bert, tiny_tokenizer


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("XAIKIT_SEED", raising=False)
    loaders.clear_cache()
    yield tmp_path / "cache"
    loaders.clear_cache()


def _fake_train(calls: list):
    def train(tmp: Path, progress=True, threads=None, seed=None, labels="real") -> dict:
        calls.append(labels)
        tiny_bert().save_pretrained(tmp)
        tiny_tokenizer(tmp).save_pretrained(tmp)
        metrics = {"test_accuracy": 0.9, "train_seconds": 0.0, "labels": labels,
                   "recipe_hash": sentiment._recipe_hash(seed, labels), "lecture_sentences": {},
                   "lecture_labels_match": True}
        (tmp / "metrics.json").write_text(json.dumps(metrics))
        return metrics
    return train


def test_a_copied_folder_is_not_served_under_another_models_name(cache_root, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(sentiment, "train_sentiment", _fake_train(calls))
    real = sentiment.ensure_embedded_sentiment(progress=False)
    shuffled = sentiment.sentiment_folder(labels="shuffled")
    shutil.copytree(real, shuffled)  # manifest and all: every checksum matches
    assert cache.problems(shuffled, cache.WEIGHTS_AND_METRICS) == []
    assert not sentiment.is_built(labels="shuffled")  # was True: served as the shuffled-label model
    problem = cache.identity_problem(shuffled, sentiment.identity(labels="shuffled"))
    assert "metrics.json says labels 'real'" in problem
    sentiment.ensure_shuffled_sentiment(progress=True)
    assert calls == ["real", "shuffled"] and sentiment.is_built(labels="shuffled")
    assert "holds another model: metrics.json says labels 'real'" in capsys.readouterr().out
    assert json.loads((shuffled / "metrics.json").read_text())["labels"] == "shuffled"


def test_another_seeds_folder_is_not_served(cache_root, monkeypatch):
    calls = []
    monkeypatch.setattr(sentiment, "train_sentiment", _fake_train(calls))
    seed0 = sentiment.ensure_embedded_sentiment(progress=False, seed=0)
    seed1 = sentiment.sentiment_folder(seed=1)
    shutil.copytree(seed0, seed1)
    problem = cache.identity_problem(seed1, sentiment.identity(seed=1))
    assert problem and f"records recipe {sentiment._recipe_hash(0)}" in problem
    assert sentiment.is_built(seed=0) and not sentiment.is_built(seed=1)


def test_a_vit_folder_of_another_world_is_not_served(tmp_path):
    from xaikit.models import vitworld

    folder = tmp_path / "vit-control"
    folder.mkdir()
    (folder / "metrics.json").write_text(json.dumps({"world": "main", "seed": 0,
                                                     "recipe_version": vitworld.RECIPE_VERSION}))
    assert "records world 'main'" in cache.identity_problem(folder, vitworld.identity("control", 0))
    assert cache.identity_problem(folder, vitworld.identity("main", 0)) is None
    assert "records seed 0" in cache.identity_problem(folder, vitworld.identity("main", 3))


def _save_with_probe_logits(folder: Path, kind: str) -> None:
    """A tiny model saved as a build saves it, its probe logits in metrics.json, and no manifest."""
    from xaikit.models import vitworld
    from xaikit.models.tiny import tiny_vit

    if kind == "sentiment":
        model, tok = tiny_bert(seed=4).eval(), tiny_tokenizer(folder)
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
        logits = sentiment.probe_logits(model, tok)
    else:
        model = tiny_vit(seed=4).eval()
        model.save_pretrained(folder)
        logits = vitworld.probe_logits(model)
    (folder / "metrics.json").write_text(json.dumps({"test_accuracy": 0.9, "probe_logits": logits,
                                                    "lecture_sentences": {}}))


def _scale_weights(folder: Path, factor: float) -> None:
    """Multiply the weights of the classifier by ``factor``, saved back as a complete, finite safetensors file,
    so that every structural check passes. Tiny random models hardly use their attention (the [UNK] probe
    sentences make it uniform whatever the queries), so the damaged matrix is the classifier here; on the
    embedded sentiment model, 4,096 query weights doubled or halved moved the probe logits by 0.008-0.028."""
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    tensors = load_file(path)
    name = next(n for n in tensors if n.endswith("classifier.weight"))
    tensors[name].view(-1)[:4096] *= factor
    save_file(tensors, path, metadata={"format": "pt"})


@pytest.mark.parametrize("kind", ["sentiment", "vit"])
@pytest.mark.parametrize("factor", [2.0, 0.5])
def test_a_manifestless_folder_with_changed_weights_is_not_adopted(tmp_path, kind, factor, capsys):
    """Such a folder passed the probe and was adopted with a manifest that certified the damage."""
    from xaikit.models import vitworld

    probe = sentiment.probe if kind == "sentiment" else vitworld.probe
    intact, damaged = tmp_path / "intact", tmp_path / "damaged"
    for folder in (intact, damaged):
        folder.mkdir()
        _save_with_probe_logits(folder, kind)
    _scale_weights(damaged, factor)
    assert cache.is_built(intact, probe=probe)  # adopted: the logits are those recorded
    assert not cache.is_built(damaged, probe=probe) and not (damaged / cache.MANIFEST).exists()
    assert "differ by" in capsys.readouterr().out


def _fake_sentiment(tmp: Path, **kw) -> dict:
    from xaikit.models.tiny import tiny_bert, tiny_tokenizer

    tiny_bert().save_pretrained(tmp)
    tiny_tokenizer(tmp).save_pretrained(tmp)
    metrics = {"test_accuracy": 0.9, "train_seconds": 0.0, "lecture_labels_match": True, "lecture_sentences": {}}
    (tmp / "metrics.json").write_text(json.dumps(metrics))
    return metrics


def test_a_damaged_model_without_manifest_is_rebuilt_not_adopted(tmp_path, monkeypatch, capsys):
    from xaikit.models import sentiment

    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path))
    calls = []
    monkeypatch.setattr(sentiment, "train_sentiment", lambda tmp, **kw: calls.append(1) or _fake_sentiment(tmp))
    folder = sentiment.ensure_embedded_sentiment(progress=False)
    (folder / cache.MANIFEST).unlink()
    assert sentiment.is_built() and (folder / cache.MANIFEST).is_file()  # intact: adopted

    (folder / cache.MANIFEST).unlink()
    weights = load_file(str(folder / "model.safetensors"))
    weights["bert.embeddings.word_embeddings.weight"][2] = 9.6e37  # finite; every sentence's logits NaN
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    # was: adopted (complete and finite), the manifest recorded the damage, and prepare said "done"
    assert not sentiment.is_built() and not (folder / cache.MANIFEST).exists()
    assert "not usable: bert.embeddings.word_embeddings.weight holds 9.6e+37" in capsys.readouterr().out
    sentiment.ensure_embedded_sentiment(progress=False)
    assert len(calls) == 2 and sentiment.is_built()
    (folder / cache.MANIFEST).unlink()
    assert sentiment.is_built()  # the rebuilt model works: adopted after running it
    assert "the model runs" in capsys.readouterr().out


def test_probes_find_nan_logits_and_a_damaged_vit(tmp_path):
    from xaikit.models import sentiment, vitworld
    from xaikit.models.tiny import tiny_vit

    good = tmp_path / "vit"
    tiny_vit(image_size=64, num_labels=5).save_pretrained(good)
    (good / "metrics.json").write_text(json.dumps({"test_accuracy": 1.0}))
    assert vitworld.probe(good) is None and cache.is_built(good, probe=vitworld.probe)
    (good / cache.MANIFEST).unlink()
    weights = load_file(str(good / "model.safetensors"))
    weights["vit.embeddings.cls_token"][0, 0, 0] = 9.6e37
    save_file(weights, str(good / "model.safetensors"), metadata={"format": "pt"})
    assert not cache.is_built(good, probe=vitworld.probe)
    assert cache.is_built(good)  # no probe: structure only, as for data folders

    text = tmp_path / "text"
    text.mkdir()
    _fake_sentiment(text)

    def nan_logits(folder):  # a model whose weights look fine but compute NaN
        return "its logits on the lecture's sentences are NaN or inf"

    assert sentiment.probe(text) is None
    assert not cache.is_built(text, probe=nan_logits) and not (text / cache.MANIFEST).exists()
    assert not cache.is_built(text, probe=lambda folder: 1 / 0)  # a probe that fails counts as "not usable"


def test_a_re_saved_tokenizer_is_not_served_from_the_loader_cache(tmp_path):
    from xaikit.models import loaders
    from xaikit.models.tiny import tiny_bert, tiny_tokenizer

    tiny_bert().save_pretrained(tmp_path)
    tok = tiny_tokenizer(tmp_path)
    tok.save_pretrained(tmp_path)
    loaders.clear_cache()
    _, first = loaders.load_sentiment(tmp_path)
    assert first.model_max_length != 77
    tok.model_max_length = 77
    tok.save_pretrained(tmp_path)  # only the tokenizer's files change
    _, second = loaders.load_sentiment(tmp_path)
    assert second.model_max_length == 77


def test_the_rank_tests_null_sets_on_disk_are_the_drawn_ones_and_a_damaged_file_is_drawn_again(tmp_path, monkeypatch):
    from xaikit.concepts import nullsets

    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path))
    drawn = nullsets._draw_null_sets(4, 0, 3)
    first = nullsets.null_sets_on_disk(4, 0, 3, progress=False)
    again = nullsets.null_sets_on_disk(4, 0, 3, progress=False)  # read back
    for a, b, c in zip(drawn, first, again, strict=True):
        assert np.array_equal(a, b) and np.array_equal(a, c)  # exact: uint8 images, saved and loaded
    (file,) = (tmp_path / "imageworld").glob("*/null-sets.npy")
    raw = bytearray(file.read_bytes())
    raw[-5] ^= 0xFF
    file.write_bytes(bytes(raw))
    cache._verified.clear()  # checksums are remembered per process
    repaired = nullsets.null_sets_on_disk(4, 0, 3, progress=False)
    assert all(np.array_equal(a, b) for a, b in zip(drawn, repaired, strict=True))  # exact: drawn again
