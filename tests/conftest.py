"""Shared test settings: offline, headless, fast mode, and a summary of how long each notebook ran."""

from __future__ import annotations

import os

os.environ.setdefault("XAIKIT_FAST", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("XAIKIT_THREADS", "1")  # xaikit.policies: two test workers share the cores

from pathlib import Path

import pytest

#: run times of the notebooks, one "name seconds" line each, written by the test that ran it (which may be
#: an xdist worker) and read back for the session summary.
TIMES_FILE = Path(__file__).resolve().parent.parent / "artifacts" / "notebook-times.txt"


def record_notebook_time(name: str, seconds: float) -> None:
    TIMES_FILE.parent.mkdir(parents=True, exist_ok=True)
    with TIMES_FILE.open("a") as fh:
        fh.write(f"{name} {seconds:.1f}\n")


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # the controller, not an xdist worker
        TIMES_FILE.unlink(missing_ok=True)


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same seeds, so a failure reproduces."""
    import xaikit

    xaikit.set_seed(0)
    yield


def pytest_terminal_summary(terminalreporter):
    if TIMES_FILE.exists():
        from xaikit._config import fast_mode

        mode = "fast mode" if fast_mode() else "fast mode off"
        terminalreporter.section(f"notebook run times (headless, {mode})")
        for line in sorted(TIMES_FILE.read_text().splitlines()):
            name, seconds = line.rsplit(" ", 1)
            terminalreporter.write_line(f"{name:40s} {float(seconds):6.1f} s")


# the tiny random BERT and its tokenizer that the text tests share (test_text_methods, test_text_registry,
# test_diagnostics); a test module that needs another model defines its own ``model`` / ``tok``
@pytest.fixture(scope="module")
def model():
    from xaikit.models.tiny import tiny_bert

    return tiny_bert(seed=3)


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    from xaikit.models.tiny import tiny_tokenizer

    return tiny_tokenizer(tmp_path_factory.mktemp("tok"))


# a second tiny random BERT, for the bad-input tests that need a model of their own (``bert``); a test module
# that needs another one defines its own ``bert``
@pytest.fixture(scope="module")
def bert():
    from xaikit.models.tiny import tiny_bert

    return tiny_bert(seed=2)


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    """An empty XAIKIT_CACHE of the test's own (``tmp_path / "cache"``), with no shared cache under it and no
    training seed from the environment: what a test builds or prunes never touches the real cache."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("XAIKIT_CACHE", str(folder))
    monkeypatch.delenv("XAIKIT_SHARED_CACHE", raising=False)
    monkeypatch.delenv("XAIKIT_SEED", raising=False)
    folder.mkdir()
    return folder
