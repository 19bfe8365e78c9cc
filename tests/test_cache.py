"""The model cache: checksums recorded at build time and checked on load, one build
at a time per folder, and builds that appear whole or not at all. Fake builders stand in for training."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from xaikit.models import cache

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _fake_weights(tmp: Path, seed: int = 0) -> None:
    torch.manual_seed(seed)
    save_file({"layer.3.weight": torch.randn(64, 64), "layer.3.bias": torch.zeros(64)}, tmp / "model.safetensors")
    (tmp / "metrics.json").write_text(json.dumps({"test_accuracy": 0.9}))


class Counter:
    def __init__(self, build=_fake_weights, delay: float = 0.0):
        self.calls = 0
        self.build, self.delay = build, delay

    def __call__(self, tmp: Path) -> None:
        self.calls += 1
        time.sleep(self.delay)
        self.build(tmp)


def _flip_byte(path: Path, offset: int = -100) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x7F
    path.write_bytes(data)


# --- checksums (item 3) ------------------------------------------------------------------------------------

def test_manifest_is_written_and_checked(tmp_path):
    folder = tmp_path / "m"
    build = Counter()
    assert cache.ensure(folder, build, progress=False) == folder
    manifest = json.loads((folder / cache.MANIFEST).read_text())
    assert set(manifest["files"]) == {"model.safetensors", "metrics.json"}
    assert manifest["files"]["model.safetensors"]["sha256"] == cache.sha256_file(folder / "model.safetensors")
    assert cache.is_built(folder) and cache.problems(folder) == []
    assert cache.ensure(folder, build, progress=False) == folder and build.calls == 1


def test_truncated_weights_are_not_built_and_are_rebuilt(tmp_path, capsys):
    folder = tmp_path / "m"
    build = Counter()
    cache.ensure(folder, build, progress=False)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    assert not cache.is_built(folder)
    assert "truncated" in cache.problems(folder)[0]
    cache.ensure(folder, build)
    assert build.calls == 2 and cache.is_built(folder)
    assert "not usable" in capsys.readouterr().out


def test_flipped_byte_is_caught_and_the_error_names_the_fix(tmp_path):
    folder = tmp_path / "m"
    cache.ensure(folder, Counter(), progress=False)
    _flip_byte(folder / "model.safetensors")
    assert not cache.is_built(folder)
    with pytest.raises(cache.CacheCorruptError, match=r"model\.safetensors.*SHA-256.*python -m xaikit prepare --force"):
        cache.verify(folder)


def test_hashing_once_per_process_and_again_after_a_change(tmp_path, monkeypatch):
    folder = tmp_path / "m"
    cache.ensure(folder, Counter(), progress=False)
    cache._verified.clear()  # as in a new process
    hashed = []
    real = cache.sha256_file
    monkeypatch.setattr(cache, "sha256_file", lambda p: hashed.append(Path(p).name) or real(p))
    assert cache.is_built(folder) and len(hashed) == 2
    assert cache.is_built(folder) and cache.is_built(folder) and len(hashed) == 2  # not again
    time.sleep(0.01)
    _flip_byte(folder / "model.safetensors")  # a rewrite changes the file's mtime: hashed again
    assert not cache.is_built(folder) and len(hashed) > 2


def test_folder_built_before_checksums_is_checked_then_recorded(tmp_path, capsys):
    good, bad = tmp_path / "good", tmp_path / "bad"
    for folder in (good, bad):
        folder.mkdir()
        _fake_weights(folder)
    save_file({"layer.3.weight": torch.full((4, 4), float("nan"))}, bad / "model.safetensors")
    assert cache.is_built(good) and (good / cache.MANIFEST).is_file()
    assert "before xaikit kept checksums" in capsys.readouterr().out
    assert not cache.is_built(bad) and not (bad / cache.MANIFEST).exists()
    truncated = tmp_path / "truncated"
    truncated.mkdir()
    _fake_weights(truncated)
    (truncated / "model.safetensors").write_bytes((good / "model.safetensors").read_bytes()[:-10])
    assert not cache.is_built(truncated)


def _fake_sentiment(tmp: Path, progress: bool = True, threads=None) -> dict:
    from xaikit.models.tiny import tiny_bert, tiny_tokenizer

    tiny_bert().save_pretrained(tmp)
    tiny_tokenizer(tmp).save_pretrained(tmp)
    metrics = {"test_accuracy": 0.9, "train_seconds": 0.0, "lecture_labels_match": True, "lecture_sentences": {}}
    (tmp / "metrics.json").write_text(json.dumps(metrics))
    return metrics


def test_prepare_and_the_loader_rebuild_a_corrupt_sentiment_model(cache_root, monkeypatch):
    from xaikit.lab import diagnostics
    from xaikit.models import loaders, sentiment
    from xaikit.prepare import prepare

    calls, shuffled = [], []
    monkeypatch.setattr(sentiment, "train_sentiment", lambda tmp, labels="real", **kw: (
        calls if labels == "real" else shuffled).append(1) or _fake_sentiment(tmp))
    monkeypatch.setattr(diagnostics, "warm_notebook_cache", lambda *a, **k: Path("."))  # fake weights
    prepare(only="sentiment", progress=False, parallel=False)
    assert len(calls) == 1 and sentiment.is_built()
    assert len(shuffled) == 2 and sentiment.is_built(labels="shuffled")  # its shuffled-label twin (notebook 06)
    assert sentiment.is_built(labels="subset")  # and that one's control
    prepare(only="sentiment", progress=False, parallel=False)
    assert len(calls) == 1 and len(shuffled) == 2  # intact: reused

    folder = sentiment.sentiment_folder()
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])  # truncated: prepare used to say "done in 0.0 s"
    assert not sentiment.is_built()
    prepare(only="sentiment", progress=False, parallel=False)
    assert len(calls) == 2 and sentiment.is_built()

    loaders.clear_cache()
    model, _ = loaders.load_sentiment()
    assert torch.isfinite(next(model.parameters())).all()
    _flip_byte(weights, offset=weights.stat().st_size // 2)  # loads without complaint, as NaN or noise
    with pytest.raises(cache.CacheCorruptError, match="prepare --force"):
        loaders.load_sentiment(folder)  # the folder by path: an error naming the fix
    loaders.clear_cache()
    model, _ = loaders.load_sentiment()  # "embedded": rebuilt, then loaded
    assert len(calls) == 3 and sentiment.is_built() and len(shuffled) == 2  # the shuffled twins were not touched


def _fake_vit(world="main", progress=True, counter=None, **kw):
    from xaikit.models.tiny import tiny_vit

    time.sleep(0.5)
    return tiny_vit(image_size=64, num_labels=5), {"test_accuracy": 1.0, "seconds_total": 0.5}


def test_corrupt_vit_is_not_built(cache_root, monkeypatch):
    from xaikit.models import vitworld

    monkeypatch.setattr(vitworld, "train_vit", _fake_vit)
    folder = vitworld.ensure_embedded_vit("control", progress=False)
    assert vitworld.is_built("control") and (folder / cache.MANIFEST).is_file()
    _flip_byte(folder / "model.safetensors")
    assert not vitworld.is_built("control")


# --- one build at a time (item 4) --------------------------------------------------------------------------

def test_two_threads_build_once(tmp_path):
    folder = tmp_path / "m"
    build = Counter(delay=0.5)
    waited = []
    real_lock = cache.build_lock

    def run():
        assert cache.ensure(folder, build, progress=False) == folder

    with pytest.MonkeyPatch.context() as mp:
        def spy(*a, **k):
            ctx = real_lock(*a, **k)

            class Wrap:
                def __enter__(self):
                    value = ctx.__enter__()
                    waited.append(value)
                    return value

                def __exit__(self, *exc):
                    return ctx.__exit__(*exc)
            return Wrap()
        mp.setattr(cache, "build_lock", spy)
        threads = [threading.Thread(target=run) for _ in range(2)]
        for t in threads:
            t.start()
            time.sleep(0.1)
        for t in threads:
            t.join()
    assert build.calls == 1 and sorted(waited) == [False, True]
    assert cache.is_built(folder)


def test_two_embedded_vit_builds_train_once(cache_root, monkeypatch):
    from xaikit.models import vitworld

    calls = []
    monkeypatch.setattr(vitworld, "train_vit", lambda *a, **k: calls.append(1) or _fake_vit(*a, **k))
    folders = []
    threads = [threading.Thread(target=lambda: folders.append(vitworld.ensure_embedded_vit("main", progress=False)))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(folders) == 2 and folders[0] == folders[1]


PREPARE_SCRIPT = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from xaikit.models import sentiment
    from xaikit.prepare import prepare
    from xaikit.lab import diagnostics

    log, started, release = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])

    def fake(tmp, progress=True, threads=None, seed=None, labels="real"):
        if labels != "real":  # the shuffled-label twin and its control that prepare builds next: at once
            (tmp / "model.safetensors").write_bytes(b"weights")
            (tmp / "metrics.json").write_text(json.dumps({"test_accuracy": 0.5}))
            return {"test_accuracy": 0.5, "train_seconds": 0.0}
        with open(log, "a") as fh:
            fh.write("trained\\n")
        started.touch()
        deadline = time.monotonic() + 120  # training lasts until the test has seen the second process wait
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        (tmp / "model.safetensors").write_bytes(b"weights")
        metrics = {"test_accuracy": 0.9, "train_seconds": 2.0, "lecture_labels_match": True,
                   "lecture_sentences": {}}
        (tmp / "metrics.json").write_text(json.dumps(metrics))
        return metrics

    sentiment.train_sentiment = fake
    diagnostics.warm_notebook_cache = lambda *a, **k: Path(".")  # fake weights: no attention to read
    print(prepare(only="sentiment", parallel=False)["sentiment"], flush=True)
""")


def test_two_prepare_processes_train_once(tmp_path):
    """The second prepare waits on the lock while the first trains, then loads what the first built. The
    first's training lasts until the second has said it waits (the ``release`` file), so the order does not
    hang on how fast a loaded machine starts the second Python."""
    env = {**os.environ, "XAIKIT_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    log, started, release = tmp_path / "log", tmp_path / "started", tmp_path / "release"
    cmd = [sys.executable, "-c", PREPARE_SCRIPT, str(log), str(started), str(release)]
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while not started.exists():  # the first is training: start the second now
        assert time.monotonic() < deadline and first.poll() is None, first.communicate()[0]
        time.sleep(0.05)
    second = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    for line in second.stdout:  # until it says it waits (or ends: then the asserts below say what it printed)
        seen.append(line)
        if "waiting for it to finish" in line:
            break
    release.touch()
    out_second = "".join(seen) + second.communicate(timeout=120)[0]
    out_first = first.communicate(timeout=120)[0]
    assert first.returncode == 0 and second.returncode == 0, (out_first, out_second)
    assert log.read_text() == "trained\n"  # one training for two prepare runs
    assert "waiting for it to finish" in out_second
    assert out_first.strip().splitlines()[-1] == out_second.strip().splitlines()[-1]  # the same folder


# --- whole or nothing (item 5) -----------------------------------------------------------------------------

def _siblings(folder: Path) -> list[str]:
    # the lock file, and the killed builder's progress note (buildprogress), which the next build replaces
    return sorted(p.name for p in folder.parent.iterdir() if not p.name.endswith((".lock", ".progress.json")))


def test_interrupted_build_leaves_nothing(tmp_path):
    folder = tmp_path / "m"

    def interrupted(tmp: Path) -> None:
        (tmp / "model.safetensors").write_bytes(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cache.ensure(folder, interrupted, progress=False)
    assert _siblings(folder) == []

    cache.ensure(folder, Counter(), progress=False)
    before = (folder / "model.safetensors").read_bytes()
    with pytest.raises(KeyboardInterrupt):  # a forced rebuild cut short keeps the old model whole
        cache.ensure(folder, interrupted, force=True, progress=False)
    assert _siblings(folder) == ["m"] and cache.is_built(folder)
    assert (folder / "model.safetensors").read_bytes() == before


def test_interrupted_model_builds_leave_nothing(cache_root, monkeypatch):
    """Ctrl-C during the sentiment model's or a ViT's build: no folder, no scratch folder, nothing to load."""
    from xaikit.models import sentiment, vitworld

    def half_sentiment(tmp, **kw):
        tmp.mkdir(parents=True, exist_ok=True)  # as train_sentiment does
        (tmp / "model.safetensors").write_bytes(b"half")
        raise KeyboardInterrupt

    def half_vit(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(sentiment, "train_sentiment", half_sentiment)
    monkeypatch.setattr(vitworld, "train_vit", half_vit)
    with pytest.raises(KeyboardInterrupt):
        sentiment.ensure_embedded_sentiment(progress=False)
    with pytest.raises(KeyboardInterrupt):
        vitworld.ensure_embedded_vit("main", progress=False)
    assert sorted(p.name for p in cache_root.iterdir() if not p.name.endswith(".lock")) == []
    assert not sentiment.is_built() and not vitworld.is_built("main")


KILLED_SCRIPT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from xaikit.models import cache

    def slow(tmp):
        (tmp / "model.safetensors").write_bytes(b"half a model")
        Path(sys.argv[2]).touch()
        time.sleep(60)

    cache.ensure(Path(sys.argv[1]), slow)
""")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_killed_build_leaves_no_model_and_the_next_build_cleans_up(tmp_path):
    folder, started = tmp_path / "cache" / "m", tmp_path / "started"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_SCRIPT, str(folder), str(started)], env=env)
    deadline = time.monotonic() + 60
    while not started.exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert not folder.exists() and not cache.is_built(folder)
    assert [n.split("-")[0] for n in _siblings(folder)] == ["m.building"]  # only the killed build's scratch
    cache.ensure(folder, Counter(), progress=False)  # the lock died with the process: no wait
    assert _siblings(folder) == ["m"] and cache.is_built(folder)


def test_cache_dir_is_stripped_and_absolute(tmp_path, monkeypatch):
    from xaikit._config import cache_dir

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XAIKIT_CACHE", "relcache")
    assert cache_dir() == tmp_path.resolve() / "relcache"
    target = tmp_path / "abs cache"
    monkeypatch.setenv("XAIKIT_CACHE", f"  {target} \n")
    assert cache_dir() == target.resolve() and target.is_dir()
    assert not any(p.name.startswith(" ") for p in tmp_path.iterdir())
    monkeypatch.setenv("XAIKIT_CACHE", "   ")  # spaces only: as if unset
    assert cache_dir(create=False) != tmp_path / "   "


def test_cache_dir_refuses_a_str_for_create(monkeypatch, tmp_path):
    from xaikit._config import cache_dir

    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path / "c"))
    with pytest.raises(TypeError, match="create must be True or False"):
        cache_dir(create="no")
    assert not (tmp_path / "c").exists()


def test_xaikit_cache_on_a_file_is_named(monkeypatch, tmp_path):
    from xaikit._config import cache_dir

    a_file = tmp_path / "cache.txt"
    a_file.write_text("not a folder")
    monkeypatch.setenv("XAIKIT_CACHE", str(a_file))
    with pytest.raises(ValueError, match=r"XAIKIT_CACHE=.*cache\.txt is a file, not a folder.*set XAIKIT_CACHE "
                                         r"to a folder"):
        cache_dir()  # was FileExistsError
    with pytest.raises(ValueError, match="is a file, not a folder"):
        cache_dir(create=False)
    monkeypatch.setenv("XAIKIT_CACHE", str(a_file / "sub"))
    with pytest.raises(ValueError, match=r"XAIKIT_CACHE=.*sub cannot be created \(.*\); set XAIKIT_CACHE to a "
                                         r"folder you can write"):
        cache_dir()  # was NotADirectoryError
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path / "fine"))
    assert cache_dir().is_dir()


def test_a_grown_cache_file_is_not_called_truncated(tmp_path):
    """An edited (longer) ``config.json`` in a cached model was reported as "(truncated?)"."""
    from xaikit.models import cache

    folder = tmp_path / "m"
    cache.ensure(folder, Counter(), progress=False)
    metrics = folder / "metrics.json"
    metrics.write_text(metrics.read_text() + " ", encoding="utf-8")
    assert "edited or replaced since" in cache.problems(folder)[0]
    metrics.write_text(metrics.read_text()[:5], encoding="utf-8")
    assert "truncated?" in cache.problems(folder)[0]
