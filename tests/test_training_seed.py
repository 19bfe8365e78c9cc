"""``python -m xaikit prepare --seed N``: the cache records its training seed, every embedded model's
folder follows it, and the default stays 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import xaikit
from xaikit._config import SEED_ENV, SEED_FILE, record_training_seed, training_seed


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path))
    monkeypatch.delenv(SEED_ENV, raising=False)
    return tmp_path


def test_default_seed_is_zero_and_the_record_is_read(cache):
    assert training_seed() == 0 and xaikit.training_seed() == 0
    record_training_seed(3)
    assert json.loads((cache / SEED_FILE).read_text()) == {"seed": 3}
    assert training_seed() == 3
    assert not list(cache.glob(".*.tmp")), "the record is written through a temporary file renamed into place"


def test_environment_overrides_the_record(cache, monkeypatch):
    record_training_seed(3)
    monkeypatch.setenv(SEED_ENV, "1")
    assert training_seed() == 1


@pytest.mark.parametrize("raw", ["-1", "one", "1.5"])
def test_bad_seed_names_the_setting(cache, monkeypatch, raw):
    monkeypatch.setenv(SEED_ENV, raw)
    with pytest.raises(ValueError, match=f"{SEED_ENV}.*non-negative integer"):
        training_seed()


def test_damaged_record_is_an_error_with_the_fix(cache):
    (cache / SEED_FILE).write_text("{not json")
    with pytest.raises(ValueError, match="prepare --seed"):
        training_seed()


def test_every_embedded_model_follows_the_seed(cache, monkeypatch):
    from xaikit.models import sentiment, vitworld

    zero = (sentiment.sentiment_folder(), vitworld.model_folder("main"), vitworld.model_folder("control"))
    assert sentiment.recipe() is sentiment.RECIPE  # seed 0: the recipe, and so the folder, of every release
    assert zero[1].name == f"vit-main-{vitworld.RECIPE_VERSION}"
    monkeypatch.setenv(SEED_ENV, "2")
    two = (sentiment.sentiment_folder(), vitworld.model_folder("main"), vitworld.model_folder("control"))
    assert all(a != b for a, b in zip(zero, two, strict=True))
    assert sentiment.recipe()["seed"] == 2 and two[1].name.endswith("-seed2")
    assert two == (sentiment.sentiment_folder(2), vitworld.model_folder("main", 2), vitworld.model_folder("control", 2))
    assert sentiment.recipe()["test_fraction"] == sentiment.RECIPE["test_fraction"]


def test_digits_cnn_follows_the_seed(cache, monkeypatch):
    from xaikit.tensor import toys

    monkeypatch.setenv(SEED_ENV, "4")
    trained = toys.digits_classifier(epochs=1, progress=False)
    assert trained.seed == 4 and "seed4" in trained.path.name and trained.path.is_file()


def test_prepare_seed_builds_with_that_seed_and_records_it(cache, monkeypatch):
    """prepare's wiring, with the trainers replaced by stand-ins that record what they were asked for."""
    from xaikit import prepare as build
    from xaikit.lab import diagnostics
    from xaikit.models import digits, sentiment, vitworld

    asked = []

    def fake_sentiment(force, progress, threads=None, seed=None):
        asked.append(("sentiment", seed))
        return sentiment.sentiment_folder(seed)

    def fake_vit(world, force=False, progress=True, counter=None, seed=None):
        asked.append((world, seed))
        return vitworld.model_folder(world, seed)

    def fake_shuffled(force, progress, threads=None, seed=None):
        asked.append(("shuffled", seed))
        return sentiment.sentiment_folder(seed, labels="shuffled")

    def fake_subset(force, progress, threads=None, seed=None):
        asked.append(("subset", seed))
        return sentiment.sentiment_folder(seed, labels="subset")

    real_digits = digits.digits_classifier
    monkeypatch.setattr(sentiment, "ensure_embedded_sentiment", fake_sentiment)
    monkeypatch.setattr(sentiment, "ensure_shuffled_sentiment", fake_shuffled)
    monkeypatch.setattr(sentiment, "ensure_subset_sentiment", fake_subset)
    from xaikit.concepts import nullsets

    monkeypatch.setattr(nullsets, "warm_null_sets", lambda progress=True: Path("."))
    monkeypatch.setattr(diagnostics, "warm_notebook_cache",
                        lambda progress, seed=None: asked.append(("attention", seed)) or Path("."))
    monkeypatch.setattr(vitworld, "ensure_embedded_vit", fake_vit)
    monkeypatch.setattr(digits, "digits_classifier", lambda **kw: (asked.append(("digits", kw["seed"]))
                                                               or real_digits(**{**kw, "epochs": 1})))
    folders = build.prepare(seed=5, parallel=False, progress=False)
    assert sorted(asked) == sorted([("sentiment", 5), ("shuffled", 5), ("subset", 5), ("attention", 5), ("main", 5),
                                    ("control", 5),
                                    ("digits", 5), ("digits", 5)])
    assert training_seed() == 5 and folders["vit-main"].name.endswith("-seed5")
    asked.clear()
    build.prepare(parallel=False, progress=False)  # no --seed: the recorded one
    assert {s for _, s in asked} == {5}
    with pytest.raises(ValueError, match="seed"):
        build.prepare(seed=-1, progress=False)


def test_prepare_cli_refuses_a_negative_seed(capsys):
    from xaikit.__main__ import main

    with pytest.raises(SystemExit):
        main(["prepare", "--seed", "-3"])
    assert "--seed must be a non-negative integer" in capsys.readouterr().err


def _fake_builds(monkeypatch) -> list:
    """Every trainer prepare calls replaced by a stand-in that records its seed (the digits CNN trains 1 epoch)."""
    from xaikit.concepts import nullsets
    from xaikit.lab import diagnostics
    from xaikit.models import digits, sentiment, vitworld

    asked = []
    for name, labels in (("ensure_embedded_sentiment", "real"), ("ensure_shuffled_sentiment", "shuffled"),
                         ("ensure_subset_sentiment", "subset")):
        monkeypatch.setattr(sentiment, name, lambda force, progress, threads=None, seed=None, labels=labels:
                            asked.append((labels, seed)) or sentiment.sentiment_folder(seed, labels=labels))
    monkeypatch.setattr(vitworld, "ensure_embedded_vit", lambda world, force=False, progress=True, counter=None,
                        seed=None: asked.append((world, seed)) or vitworld.model_folder(world, seed))
    monkeypatch.setattr(nullsets, "warm_null_sets", lambda progress=True: Path("."))
    monkeypatch.setattr(diagnostics, "warm_notebook_cache", lambda progress, seed=None: Path("."))
    real_digits = digits.digits_classifier
    monkeypatch.setattr(digits, "digits_classifier", lambda **kw: real_digits(**{**kw, "epochs": 1}))
    return asked


def test_prepare_says_when_the_shell_overrides_the_seed_it_recorded(cache, monkeypatch, capsys):
    """XAIKIT_SEED=3 prepare --seed 0 said "this cache now serves training seed 0", while that shell (and every
    kernel started from it) kept serving seed 3."""
    from xaikit import prepare as build

    asked = _fake_builds(monkeypatch)
    monkeypatch.setenv(SEED_ENV, "3")
    build.prepare(seed=0, parallel=False, progress=True)
    out = capsys.readouterr().out
    assert {s for _, s in asked} == {0}
    assert "this cache now serves training seed 0" in out
    assert "$XAIKIT_SEED=3 is set in this shell" in out and "unset XAIKIT_SEED" in out
    assert training_seed() == 3  # what the shell serves, as the message says
    monkeypatch.delenv(SEED_ENV)
    assert training_seed() == 0
    build.prepare(seed=0, parallel=False, progress=True)
    assert "XAIKIT_SEED" not in capsys.readouterr().out  # no override: no note


def test_a_seed_beyond_torchs_range_is_refused_before_any_training(cache, monkeypatch, capsys):
    """prepare --seed 2**70 failed with a 40-line traceback after the ViT process had started."""
    from xaikit import prepare as build
    from xaikit.__main__ import main

    asked = _fake_builds(monkeypatch)
    with pytest.raises(ValueError, match=r"seed must be an int between 0 and 2\*\*63 - 1, got 2\*\*70"):
        build.prepare(seed=2 ** 70, progress=False)
    with pytest.raises(SystemExit):
        main(["prepare", "--seed", str(2 ** 70)])
    assert "--seed must be a non-negative integer up to 2**63 - 1" in capsys.readouterr().err
    monkeypatch.setenv(SEED_ENV, str(2 ** 70))
    with pytest.raises(ValueError, match=r"XAIKIT_SEED must be a non-negative integer up to 2\*\*63 - 1"):
        training_seed()
    with pytest.raises(SystemExit):
        main(["prepare"])
    assert "XAIKIT_SEED must be a non-negative integer" in capsys.readouterr().err
    assert asked == []  # nothing was trained


def test_an_unprepared_training_seed_says_why_a_fine_tune_starts(monkeypatch, tmp_path, capsys):
    from xaikit.models import sentiment

    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path))
    monkeypatch.setenv("XAIKIT_SEED", "3")

    class Stop(Exception):
        pass

    def stub(*args, **kwargs):
        raise Stop

    monkeypatch.setattr(sentiment, "train_sentiment", stub)
    with pytest.raises(Stop):
        sentiment.ensure_embedded_sentiment(progress=False)
    out = capsys.readouterr().out
    assert "no sentiment model for training seed 3" in out or "for training seed 3" in out, out
    assert "XAIKIT_SEED" in out
