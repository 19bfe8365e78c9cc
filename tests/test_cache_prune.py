"""``xaikit cache list|prune``: only folders of older recipes that xaikit built (a manifest says so) are removed;
a user's folder, a folder without a manifest, the folders of the current recipes and computed caches stay, and a
dry run removes nothing. Every test works in a temporary XAIKIT_CACHE."""

from __future__ import annotations

import json

import pytest

from xaikit import _config
from xaikit.__main__ import main
from xaikit.concepts.nullsets import _null_sets_folder
from xaikit.course import stale
from xaikit.models import cache, digits, sentiment, vitworld


def _model(tmp, metrics=None):
    (tmp / "model.safetensors").write_bytes(b"w" * 1000)
    (tmp / "metrics.json").write_text(json.dumps(metrics or {}))


@pytest.fixture
def root(tmp_cache):
    """The cache the tests fill and prune: conftest's empty ``tmp_cache``."""
    return tmp_cache


def _populate(root):
    """A cache with the current recipes' folders, older ones, a user's folders and computed caches."""
    made = {}
    for labels in sentiment.LABELS:  # the current recipe, training seed 0
        made[f"current-{labels}"] = cache.ensure(sentiment.sentiment_folder(0, labels), lambda t: _model(t, {"seed": 0}))
    # the current recipe of training seed 1 (prepare --seed 1): not an older recipe, kept
    made["seed1"] = cache.ensure(sentiment.sentiment_folder(1, "real"), lambda t: _model(t, {"seed": 1}))
    made["old-shuffled"] = cache.ensure(root / "shuffled-sentiment-v1-0123abcd", _model)
    made["old-hash"] = cache.ensure(root / f"sentiment-{sentiment.RECIPE_VERSION}-deadbeef", lambda t: _model(t, {"seed": 0}))
    made["vit-current"] = cache.ensure(vitworld.model_folder("main", 0), _model)
    made["vit-old"] = cache.ensure(root / "vit-main-v5", _model)
    made["null-current"] = cache.ensure(_null_sets_folder(50, 0, 100), lambda t: (t / "null-sets.npy").write_bytes(b"n"),
                                        required=("null-sets.npy",))
    made["null-old"] = cache.ensure(root / "imageworld" / "null-sets-50x100-seed0-000000000000",
                                    lambda t: (t / "null-sets.npy").write_bytes(b"n"), required=("null-sets.npy",))
    made["diagnostics"] = cache.ensure(root / "diagnostics" / "attention-0123", lambda t: (t / "a.pt").write_bytes(b"a"),
                                       required=("a.pt",))
    # a user's folders: a saved model of theirs (no manifest), and one with a manifest but no family of xaikit's
    user = root / "my-bert"
    user.mkdir()
    (user / "config.json").write_text("{}")
    made["user"] = user
    made["user-manifest"] = cache.ensure(root / "course-extras", _model)
    # a family's name with no manifest (copied in by hand, or built before manifests): never removed
    bare = root / "vit-control-v3"
    bare.mkdir()
    _model(bare)
    made["no-manifest"] = bare
    toys = root / "toys"
    toys.mkdir()
    for version in (digits.FILE_VERSION, "v0"):
        f = toys / f"digits_cnn_seed0_epochs6_{version}.safetensors"
        f.write_bytes(b"d")
        f.with_name(f.name + ".sha256").write_text(f"{cache.sha256_file(f)}  {f.name}\n")
        made[f"toy-{version}"] = f
    (toys / "digits_cnn_seed0_epochs6_v0-mine.safetensors").write_bytes(b"u")  # no checksum file: the user's
    made["toy-user"] = toys / "digits_cnn_seed0_epochs6_v0-mine.safetensors"
    (root / "notes.txt").write_text("mine")
    made["file"] = root / "notes.txt"
    return made


STALE = {"old-shuffled", "old-hash", "vit-old", "null-old", "toy-v0"}


def test_list_sorts_each_folder_into_its_kind(root):
    made = _populate(root)
    kinds = {e.path: e.kind for e in stale.entries(root)}
    for key, path in made.items():
        want = (stale.STALE if key in STALE else stale.COMPUTED if key == "diagnostics"
                else stale.FOREIGN if key in {"user", "user-manifest", "no-manifest", "toy-user", "file"}
                else stale.CURRENT)
        assert kinds[path] == want, (key, kinds[path])


def test_a_dry_run_lists_the_stale_folders_and_removes_nothing(root, capsys):
    made = _populate(root)
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
    assert main(["cache", "prune", "--dry-run"]) == 0
    out = capsys.readouterr().out
    for key in STALE:
        assert f"would remove {made[key]}" in out
    assert str(made["user"]) not in out and str(made["current-real"]) not in out
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == before


def test_prune_removes_only_stale_folders_that_xaikit_built(root, capsys):
    made = _populate(root)
    assert main(["cache", "prune"]) == 0
    assert "removed 5 stale item(s)" in capsys.readouterr().out
    for key, path in made.items():
        assert path.exists() == (key not in STALE), key
    assert not (root / "toys" / "digits_cnn_seed0_epochs6_v0.safetensors.sha256").exists()
    assert (made["user"] / "config.json").read_text() == "{}"
    assert not [p for p in root.rglob(".*") if ".old-" in p.name or p.name.endswith(".lock") and "v5" in p.name]
    # the current recipe's folders still load intact, and a second prune finds nothing
    assert cache.is_built(made["current-real"]) and cache.is_built(made["vit-current"])
    assert stale.prune() == []


def test_the_current_seed_decides_which_sentiment_folders_are_current(root, monkeypatch):
    """A folder whose recorded seed and name agree with the current recipe is kept for any seed; the cache's
    training seed names the folders it serves."""
    made = _populate(root)
    _config.record_training_seed(1)
    kinds = {e.path: e.kind for e in stale.entries(root)}
    assert kinds[made["current-real"]] == stale.CURRENT and kinds[made["seed1"]] == stale.CURRENT
    # a folder of the current recipe version whose metrics record no seed: which seed it is cannot be told, kept
    unknown = cache.ensure(root / f"subset-sentiment-{sentiment.RECIPE_VERSION}-0000aaaa", _model)
    assert {e.path: e.kind for e in stale.entries(root)}[unknown] == stale.CURRENT


def test_cache_list_prints_kinds_and_sizes(root, capsys):
    _populate(root)
    assert main(["cache", "list"]) == 0
    out = capsys.readouterr().out
    assert "stale" in out and "not xaikit's" in out and "cache prune" in out


def test_dry_run_goes_with_prune_only(root):
    with pytest.raises(SystemExit):
        main(["cache", "list", "--dry-run"])


def test_a_missing_shared_cache_is_named_without_a_traceback(root, monkeypatch, capsys):
    monkeypatch.setenv("XAIKIT_SHARED_CACHE", str(root.parent / "not-mounted"))
    for words in (["cache", "list"], ["cache", "prune"], ["prepare"], ["warm", "04"]):
        with pytest.raises(SystemExit):
            main(words)
        assert "XAIKIT_SHARED_CACHE=" in capsys.readouterr().err
