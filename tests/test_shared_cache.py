"""A course's read-only shared cache (``XAIKIT_SHARED_CACHE``) under each student's personal one
(``XAIKIT_CACHE``): what the shared cache holds intact is read from there, everything computed later is
written to the personal cache, and a damaged shared folder is reported and never touched.

The tests run as root, for whom ``chmod`` stops no write, so a read-only volume is stood for by the
writability probe (``xaikit._config._writable``) and, above all, by comparing every path, size and
modification time under the shared folder before and after."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from xaikit import _config
from xaikit.models import cache

ROOT = Path(__file__).resolve().parents[1]


def snapshot(folder: Path) -> dict:
    """Every path under ``folder`` with its size and modification time (and the folder's own)."""
    out = {".": folder.stat().st_mtime_ns}
    for p in sorted(folder.rglob("*")):
        st = p.stat()
        out[p.relative_to(folder).as_posix()] = (p.is_dir(), st.st_size, st.st_mtime_ns)
    return out


def _fill(tmp: Path, text: str = "weights") -> None:
    (tmp / "model.safetensors").write_text(text)
    (tmp / "metrics.json").write_text(json.dumps({"what": text}))


@pytest.fixture
def shared(tmp_cache, monkeypatch):
    """A shared cache prepared by the instructor (XAIKIT_CACHE pointing at it: conftest's ``tmp_cache``), then
    made read-only."""
    folder = tmp_cache
    cache.ensure(folder / "sentiment-v0-test", _fill)
    cache.ensure(folder / "diagnostics" / "attention-abc", lambda tmp: (tmp / "attention.pt").write_text("a"),
                 required=("attention.pt",))
    _config.record_training_seed(3)
    real = _config._writable
    monkeypatch.setattr(_config, "_writable",
                        lambda path: not Path(path).resolve().is_relative_to(folder.resolve()) and real(path))
    cache._reported.clear()
    return folder


def _student(monkeypatch, shared: Path, personal: Path) -> None:
    monkeypatch.setenv("XAIKIT_CACHE", str(personal))
    monkeypatch.setenv("XAIKIT_SHARED_CACHE", str(shared))


def _refuse(tmp):
    raise AssertionError("built although the shared cache holds it")


def test_a_read_only_cache_alone_is_refused_naming_both_variables(shared, monkeypatch):
    monkeypatch.setenv("XAIKIT_CACHE", str(shared))
    with pytest.raises(ValueError, match=r"XAIKIT_CACHE=.* is not writable.*XAIKIT_SHARED_CACHE=") as err:
        _config.cache_dir()
    assert str(shared) in str(err.value)


def test_the_shared_variable_names_itself_when_its_folder_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path / "mine"))
    monkeypatch.setenv("XAIKIT_SHARED_CACHE", str(tmp_path / "not-mounted"))
    with pytest.raises(ValueError, match=r"XAIKIT_SHARED_CACHE=.*not-mounted does not exist; mount"):
        _config.shared_cache_dir()
    (tmp_path / "a-file").write_text("x")
    monkeypatch.setenv("XAIKIT_SHARED_CACHE", str(tmp_path / "a-file"))
    with pytest.raises(ValueError, match=r"XAIKIT_SHARED_CACHE=.* is a file"):
        _config.shared_cache_dir()


def test_the_shared_cache_serves_what_it_holds_and_new_work_goes_to_the_personal_one(shared, tmp_path, monkeypatch):
    before = snapshot(shared)
    personal = tmp_path / "home" / "xaikit"
    _student(monkeypatch, shared, personal)
    assert _config.cache_dir() == personal.resolve()  # writable: accepted
    assert _config.training_seed() == 3  # the seed the instructor prepared
    got = cache.ensure(personal / "sentiment-v0-test", _refuse)
    assert got == shared / "sentiment-v0-test"
    assert (got / "model.safetensors").read_text() == "weights"
    got = cache.ensure(personal / "diagnostics" / "attention-abc", _refuse, required=("attention.pt",))
    assert got == shared / "diagnostics" / "attention-abc"
    # something the shared cache lacks (a student's own TCAV activations): built in the personal cache
    new = cache.ensure(personal / "activations" / "mine", lambda tmp: (tmp / "acts.npy").write_text("1"),
                       required=("acts.npy",))
    assert new == personal / "activations" / "mine" and (new / "acts.npy").read_text() == "1"
    assert not (shared / "activations").exists()
    assert snapshot(shared) == before


def test_a_damaged_shared_folder_is_reported_left_alone_and_built_in_the_personal_cache(shared, tmp_path,
                                                                                        monkeypatch, capsys):
    weights = shared / "sentiment-v0-test" / "model.safetensors"
    weights.write_text("weightz")  # one changed byte, same size
    before = snapshot(shared)
    personal = tmp_path / "student"
    _student(monkeypatch, shared, personal)
    built = []
    got = cache.ensure(personal / "sentiment-v0-test", lambda tmp: (built.append(1), _fill(tmp, "fresh")))
    assert got == personal / "sentiment-v0-test" and built == [1]
    assert (got / "model.safetensors").read_text() == "fresh"
    err = capsys.readouterr().err
    assert str(shared / "sentiment-v0-test") in err
    assert "XAIKIT_SHARED_CACHE" in err and "instructor" in err and "prepare --force" in err
    assert "model.safetensors does not have the SHA-256" in err
    assert str(personal / "sentiment-v0-test") in err  # where it builds instead
    assert weights.read_text() == "weightz"  # never "repaired" in place
    assert snapshot(shared) == before
    # the personal copy now serves; the damage is not reported again
    assert cache.ensure(personal / "sentiment-v0-test", _refuse) == got
    assert "damaged" not in capsys.readouterr().err


def test_a_shared_folder_without_manifest_is_not_adopted(shared, tmp_path, monkeypatch, capsys):
    (shared / "sentiment-v0-test" / cache.MANIFEST).unlink()  # adopting would write a manifest into it
    before = snapshot(shared)
    _student(monkeypatch, shared, tmp_path / "student")
    got = cache.ensure(tmp_path / "student" / "sentiment-v0-test", _fill)
    assert got.parent == tmp_path / "student"
    assert "missing" in capsys.readouterr().err
    assert snapshot(shared) == before


def test_two_students_over_one_shared_cache_keep_their_own_work(shared, tmp_path, monkeypatch):
    before = snapshot(shared)
    folders = {}
    for name in ("ada", "bob"):
        personal = tmp_path / name
        _student(monkeypatch, shared, personal)
        assert cache.ensure(personal / "sentiment-v0-test", _refuse) == shared / "sentiment-v0-test"
        folders[name] = cache.ensure(personal / "activations" / "same-key",
                                     lambda tmp, name=name: (tmp / "acts.npy").write_text(name), required=("acts.npy",))
    assert folders["ada"] != folders["bob"]
    assert (folders["ada"] / "acts.npy").read_text() == "ada" and (folders["bob"] / "acts.npy").read_text() == "bob"
    assert snapshot(shared) == before


def test_a_model_in_the_shared_cache_loads_through_the_folder_route(shared, tmp_path, monkeypatch):
    """A model folder of the shared cache is a cache folder (its checksums are checked), and a damaged one
    names the instructor's fix, not ``prepare --force`` in the student's cache alone."""
    from xaikit.models import loaders
    from xaikit.models.tiny import tiny_bert, tiny_tokenizer

    monkeypatch.setattr(_config, "_writable", lambda path: True)
    monkeypatch.setenv("XAIKIT_CACHE", str(shared))
    folder = cache.ensure(shared / "tiny-bert", lambda tmp: (tiny_bert().save_pretrained(tmp),
                                                             tiny_tokenizer(tmp).save_pretrained(tmp)),
                          required=("config.json",))
    before = snapshot(shared)
    _student(monkeypatch, shared, tmp_path / "student")
    loaders.clear_cache()
    model, _ = loaders.load_sentiment(folder)
    assert model.config.num_hidden_layers >= 1
    assert snapshot(shared) == before
    config = folder / "config.json"
    config.write_text(config.read_text().replace("}", " }", 1))
    loaders.clear_cache()
    with pytest.raises(cache.CacheCorruptError, match=r"XAIKIT_SHARED_CACHE.*instructor"):
        loaders.load_sentiment(folder)


_KERNEL = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from xaikit import _config
    from xaikit.models import cache, digits

    personal = _config.cache_dir()
    def refuse(tmp):
        raise SystemExit("built although the shared cache holds it")
    got = cache.ensure(personal / "sentiment-v0-test", refuse)
    cnn = digits.digits_classifier(seed=0, epochs=1, progress=False)
    print("RESULT " + json.dumps({"folder": str(got), "digits": str(cnn.path), "from_cache": cnn.from_cache,
                                  "accuracy": cnn.accuracy}))
""")


def test_two_kernels_load_from_the_shared_cache_at_once(shared, tmp_path, monkeypatch):
    """Two processes (two students' kernels) read one shared cache at the same time: a digits CNN the
    instructor trained and a prepared folder; neither trains, and the shared folder is unchanged."""
    from xaikit.models import digits

    monkeypatch.setattr(_config, "_writable", lambda path: True)
    monkeypatch.setenv("XAIKIT_CACHE", str(shared))
    trained = digits.digits_classifier(seed=0, epochs=1, progress=False, force=True)
    assert trained.path.is_relative_to(shared) and not trained.from_cache
    before = snapshot(shared)
    env = {**os.environ, "XAIKIT_SHARED_CACHE": str(shared), "PYTHONPATH": str(ROOT), "XAIKIT_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", _KERNEL], env={**env, "XAIKIT_CACHE": str(tmp_path / name)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
             for name in ("ada", "bob")]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
        results.append(json.loads(next(ln for ln in out.splitlines() if ln.startswith("RESULT "))[7:]))
    for r in results:
        assert r["folder"] == str(shared / "sentiment-v0-test")
        assert r["digits"] == str(trained.path) and r["from_cache"] is True
        assert r["accuracy"] == pytest.approx(trained.accuracy)  # the very weights the instructor trained
    assert snapshot(shared) == before
    for name in ("ada", "bob"):  # nothing of the shared cache was copied into the personal ones
        assert not (tmp_path / name / "toys").exists() or not any((tmp_path / name / "toys").glob("*.safetensors"))


def test_a_damaged_digits_cnn_in_the_shared_cache_is_reported_and_trained_in_the_personal_one(shared, tmp_path,
                                                                                              monkeypatch, capsys):
    from xaikit.models import digits

    monkeypatch.setattr(_config, "_writable", lambda path: True)
    monkeypatch.setenv("XAIKIT_CACHE", str(shared))
    trained = digits.digits_classifier(seed=0, epochs=1, progress=False, force=True)
    data = bytearray(trained.path.read_bytes())
    data[-5] ^= 0x01  # one flipped bit in the weights
    trained.path.write_bytes(bytes(data))
    before = snapshot(shared)
    personal = tmp_path / "student"
    _student(monkeypatch, shared, personal)
    digits._MEMORY.clear()
    again = digits.digits_classifier(seed=0, epochs=1, progress=False)
    assert not again.from_cache and again.path.is_relative_to(personal)
    err = capsys.readouterr().err
    assert str(trained.path) in err and "XAIKIT_SHARED_CACHE" in err and "instructor" in err
    assert snapshot(shared) == before
    assert again.accuracy == pytest.approx(trained.accuracy)  # the same seeded recipe, trained again
