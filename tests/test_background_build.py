"""The models building behind JupyterLab: ``prepare``'s order, a notebook waiting for a build in another
process with that build's progress in its own bar, and a builder stopped mid-build (SIGTERM, SIGKILL, its
parent gone) that leaves no half-built model and resumes on the next run. Fake builds stand in for training,
in a temporary ``XAIKIT_CACHE``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from xaikit.models import buildprogress, cache

ROOT = Path(__file__).resolve().parent.parent

LECTURES = ["digits", "sentiment", "vit-main", "vit-control"]
LABS = ["sentiment-shuffled", "sentiment-subset", "attention", "null-sets"]


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _record_steps(monkeypatch, tmp_path):
    """Replace every build step of prepare with one that records its name and returns a folder."""
    from xaikit import prepare as prep
    from xaikit.concepts import nullsets
    from xaikit.lab import diagnostics
    from xaikit.models import sentiment, vitworld

    calls: list[str] = []

    def step(name):
        def run(*args, **kwargs):
            calls.append(name)
            return tmp_path / name
        return run

    monkeypatch.setattr(sentiment, "is_built", lambda *a, **k: False)
    monkeypatch.setattr(vitworld, "is_built", lambda *a, **k: False)
    monkeypatch.setattr(sentiment, "ensure_embedded_sentiment", step("sentiment"))
    monkeypatch.setattr(sentiment, "ensure_shuffled_sentiment", step("sentiment-shuffled"))
    monkeypatch.setattr(sentiment, "ensure_subset_sentiment", step("sentiment-subset"))
    monkeypatch.setattr(vitworld, "ensure_embedded_vit", lambda world, **k: step(f"vit-{world}")())
    monkeypatch.setattr(diagnostics, "warm_notebook_cache", step("attention"))
    monkeypatch.setattr(nullsets, "warm_null_sets", step("null-sets"))
    monkeypatch.setattr(prep, "_digits", lambda *a, **k: {"digits": step("digits")()})
    return calls


@pytest.mark.parametrize("background", [False, True])
def test_one_process_builds_the_lectures_models_in_the_notebooks_order_and_the_labs_last(
        cache_root, monkeypatch, tmp_path, background):
    from xaikit.prepare import prepare

    calls = _record_steps(monkeypatch, tmp_path)
    folders = prepare(parallel=False, progress=False, background=background)
    assert calls == LECTURES + LABS
    assert set(folders) >= set(LECTURES + LABS)


def test_with_a_second_process_the_vits_start_before_any_lab_model(cache_root, monkeypatch, tmp_path):
    from xaikit import prepare as prep

    calls = _record_steps(monkeypatch, tmp_path)

    class FakeVits:  # the second process: started first, joined last
        def __init__(self, worlds, *args):
            calls.append("vits started")
            self.worlds = worlds

        threads = None

        def join(self, say):
            calls.append("vits joined")
            return {f"vit-{w}": tmp_path / w for w in self.worlds}

        def stop(self):
            pass

    monkeypatch.setattr(prep, "_VitProcess", FakeVits)
    prep.prepare(parallel=True, progress=False)
    assert calls == ["vits started", "digits", "sentiment", *LABS, "vits joined"]


def test_background_never_starts_a_second_process(cache_root, monkeypatch, tmp_path):
    from xaikit import prepare as prep

    _record_steps(monkeypatch, tmp_path)
    monkeypatch.setattr(prep, "_VitProcess", lambda *a, **k: pytest.fail("a second process was started"))
    prep.prepare(parallel=True, progress=False, background=True)
    with pytest.raises(TypeError, match="background must be True or False"):
        prep.prepare(background="yes")


# --- a builder in another process and a waiter ---------------------------------------------------------------

#: a process that builds ``folder`` in STEPS slow steps under the cache's lock, reporting each step
BUILDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from xaikit.models import buildprogress, cache

    folder, steps, delay = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])

    def build(tmp):
        for i in range(steps):
            (tmp / f"part{i}.txt").write_text(str(i))
            buildprogress.step(i + 1, steps, "training a fake model")
            time.sleep(delay)
        (tmp / "done.txt").write_text("whole")

    cache.ensure(folder, build, required=("done.txt",), what="fake model", progress=False)
""")


def _start_builder(tmp_path, folder, steps=20, delay=0.1, script=BUILDER, extra_env=None):
    path = tmp_path / "builder.py"
    path.write_text(script)
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(extra_env or {})}
    return subprocess.Popen([sys.executable, str(path), str(folder), str(steps), str(delay)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _wait_for(predicate, timeout=60.0, what="the builder"):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not get there in {timeout} s")
        time.sleep(0.05)


class RecordingBar:
    """tqdm as the waiter uses it, writing nowhere and recording what it showed."""

    instances: list[RecordingBar] = []

    def __init__(self, total=None, desc="", **kwargs):
        self.total, self.desc, self.n, self.shown = total, desc, 0, []
        RecordingBar.instances.append(self)

    def reset(self, total=None):
        self.total, self.n = total, 0

    def set_description(self, desc, refresh=True):
        self.desc = desc

    def refresh(self):
        self.shown.append(self.n)

    def close(self):
        self.closed = True


def test_a_waiter_shows_the_builders_progress_then_loads_its_model(tmp_path, monkeypatch, capsys):
    import tqdm.auto

    monkeypatch.setattr(tqdm.auto, "tqdm", RecordingBar)
    monkeypatch.setattr(buildprogress, "POLL", 0.05)
    RecordingBar.instances.clear()
    folder = tmp_path / "cache" / "fake-model"
    proc = _start_builder(tmp_path, folder, steps=30, delay=0.1)
    try:
        _wait_for(lambda: (buildprogress.read(folder) or {}).get("n", 0) >= 1)
        built_here = []
        got = cache.ensure(folder, lambda tmp: built_here.append(tmp), required=("done.txt",), what="fake model")
    finally:
        out = proc.communicate(timeout=60)[0].decode()
    assert proc.returncode == 0, out
    assert got == folder and built_here == [], "the waiter built the model itself instead of waiting"
    assert (folder / "done.txt").read_text() == "whole" and len(list(folder.glob("part*.txt"))) == 30
    printed = capsys.readouterr().out
    assert f"process {proc.pid}" in printed and "waiting for it to finish" in printed, printed
    bar = RecordingBar.instances[-1]
    assert bar.total == 30 and f"process {proc.pid}" in bar.desc and "training a fake model" in bar.desc
    assert len(set(bar.shown)) >= 3 and bar.shown == sorted(bar.shown), bar.shown  # it moved, forwards
    assert getattr(bar, "closed", False)
    assert not buildprogress.progress_file(folder).exists(), "the builder left its progress file behind"


def test_without_a_builder_the_caller_builds_the_model_itself(tmp_path):
    folder = tmp_path / "cache" / "fake-model"
    built = []

    def build(tmp):
        buildprogress.step(1, 1)
        (tmp / "done.txt").write_text("whole")
        built.append(buildprogress.read(folder))

    assert cache.ensure(folder, build, required=("done.txt",), progress=False) == folder
    assert built[0]["n"] == 1 and built[0]["total"] == 1 and built[0]["pid"] == os.getpid()
    assert buildprogress.read(folder) is None
    buildprogress.step(5, 10)  # outside a build: nothing is written
    assert not buildprogress.progress_file(folder).exists()


def _leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.parent.glob(f"{folder.name}.*") if p.is_dir()]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_builder_killed_mid_build_leaves_no_model_and_the_next_build_resumes(tmp_path, sig):
    # the background builder (prepare --background) turns SIGTERM into SystemExit, as here
    script = BUILDER.replace("import sys, time", "import signal, sys, time\n"
                             "signal.signal(signal.SIGTERM, lambda s, f: sys.exit(143))")
    folder = tmp_path / "cache" / "fake-model"
    proc = _start_builder(tmp_path, folder, steps=200, delay=0.05, script=script)
    _wait_for(lambda: (buildprogress.read(folder) or {}).get("n", 0) >= 5)
    proc.send_signal(sig)
    proc.communicate(timeout=30)
    assert proc.returncode in (143, -signal.SIGKILL), proc.returncode
    assert not folder.exists(), "a half-built model appeared under the model's name"
    assert not cache.is_built(folder, ("done.txt",))
    if sig == signal.SIGTERM:  # stopped cleanly: its temporary folder is gone
        assert _leftovers(folder) == []
        assert not buildprogress.progress_file(folder).exists()
    else:  # killed outright: its temporary folder stays until the next build, which removes it
        assert len(_leftovers(folder)) == 1
    again = _start_builder(tmp_path, folder, steps=5, delay=0.0)
    out = again.communicate(timeout=60)[0].decode()
    assert again.returncode == 0, out
    assert (folder / "done.txt").read_text() == "whole" and cache.is_built(folder, ("done.txt",))
    assert _leftovers(folder) == []


# --- prepare --background as a process ------------------------------------------------------------------------

#: ``run_in_background`` with prepare's steps replaced by slow fake builds in the cache (each under the lock)
BACKGROUND = textwrap.dedent("""
    import sys, time
    from xaikit import prepare as prep
    from xaikit.models import buildprogress, cache
    from xaikit._config import cache_dir

    def fake(name, steps=int(sys.argv[2]), delay=float(sys.argv[3])):
        def build(tmp):
            for i in range(steps):
                buildprogress.step(i + 1, steps)
                time.sleep(delay)
            (tmp / "done.txt").write_text(name)
        return cache.ensure(cache_dir() / name, build, required=("done.txt",), what=name, progress=False)

    prep._digits = lambda *a, **k: {"digits": fake("digits", 1, 0.0)}
    from xaikit.models import sentiment, vitworld
    from xaikit.lab import diagnostics
    from xaikit.concepts import nullsets
    sentiment.is_built = vitworld.is_built = lambda *a, **k: False
    sentiment.ensure_embedded_sentiment = lambda *a, **k: fake("sentiment")
    sentiment.ensure_shuffled_sentiment = lambda *a, **k: fake("sentiment-shuffled")
    sentiment.ensure_subset_sentiment = lambda *a, **k: fake("sentiment-subset")
    vitworld.ensure_embedded_vit = lambda world, **k: fake(f"vit-{world}")
    diagnostics.warm_notebook_cache = lambda *a, **k: fake("attention", 1, 0.0)
    nullsets.warm_null_sets = lambda *a, **k: fake("null-sets", 1, 0.0)
    sys.exit(prep.run_in_background(sys.argv[1]))
""")


def _built(root: Path) -> set[str]:
    return {p.name for p in root.iterdir() if p.is_dir() and (p / "done.txt").is_file()} if root.is_dir() else set()


def test_prepare_background_stops_cleanly_on_sigterm_and_resumes(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("XAIKIT_CACHE", str(root))
    script = tmp_path / "background.py"
    script.write_text(BACKGROUND)
    log = tmp_path / "artifacts" / "prepare.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XAIKIT_CACHE": str(root)}

    def start(steps, delay):
        return subprocess.Popen([sys.executable, str(script), str(log), str(steps), str(delay)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    proc = start(100, 0.05)
    _wait_for(lambda: (buildprogress.read(root / "sentiment") or {}).get("n", 0) >= 3)
    assert buildprogress.background_builder() == proc.pid  # what notebooks 04 and 06 ask before a fallback
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == 143, log.read_text()
    assert buildprogress.background_builder() is None
    assert _built(root) == {"digits"}, "the model stopped mid-build was kept"
    assert not (root / "sentiment").exists() and _leftovers(root / "sentiment") == []
    assert "stopped" in log.read_text()

    again = start(2, 0.0)
    again.communicate(timeout=60)
    assert again.returncode == 0, log.read_text()
    assert _built(root) == {"digits", *LECTURES[1:], *LABS}
    text = log.read_text()
    order = [text.index(f"{what:<22}") for what in ("sentiment model", "ViT (main world)", "ViT (control world)",
                                                    "sentiment (shuffled)", "sentiment (control)",
                                                    "attention (nb 06)", "random sets (nb 05, 07)")]
    assert order == sorted(order), text


def test_prepare_background_stops_when_its_parent_is_killed(tmp_path):
    root = tmp_path / "cache"
    script = tmp_path / "background.py"
    script.write_text(BACKGROUND)
    log = tmp_path / "prepare.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XAIKIT_CACHE": str(root)}
    # a shell that starts the builder behind it, as start.sh does, and is then killed outright
    shell = subprocess.Popen(["bash", "-c", f'"{sys.executable}" "{script}" "{log}" 400 0.05 & echo $!; wait'],
                             env=env, stdout=subprocess.PIPE, text=True)
    builder = int(shell.stdout.readline())
    _wait_for(lambda: (buildprogress.read(root / "sentiment") or {}).get("n", 0) >= 3)
    shell.kill()
    shell.wait(timeout=10)

    def gone():
        try:
            os.kill(builder, 0)
        except ProcessLookupError:
            return True
        with open(f"/proc/{builder}/stat") as fh:  # a zombie (not yet reaped by init) counts as gone
            return fh.read().split(") ")[1].startswith("Z")

    _wait_for(gone, timeout=30, what="the orphaned builder's exit")
    assert not (root / "sentiment").exists() and _leftovers(root / "sentiment") == []
    assert "stopped" in log.read_text()


def test_cli_background_rejects_force_and_only():
    for words in (["prepare", "--background", "--force"], ["prepare", "--background", "--only", "vit"],
                  ["prepare", "--log", "x.log"]):
        proc = subprocess.run([sys.executable, "-m", "xaikit", *words], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
        assert proc.returncode == 2 and ("--background" in proc.stderr or "--log" in proc.stderr), proc.stderr


def test_progress_file_is_json_beside_the_lock(tmp_path):
    folder = tmp_path / "m"
    assert buildprogress.progress_file(folder) == tmp_path / ".m.progress.json"
    with buildprogress.building(folder, "fake"):
        buildprogress.step(3, 7, "three of seven")
        state = json.loads(buildprogress.progress_file(folder).read_text())
    assert state["n"] == 3 and state["total"] == 7 and state["desc"] == "three of seven"
    assert buildprogress.read(folder) is None
    buildprogress.progress_file(folder).write_text("{not json")
    assert buildprogress.read(folder) is None


def test_no_lecture_notebook_loads_a_lab_only_model():
    """The shuffled-label sentiment model and its control serve lab 06 only: lectures 01-05 never ask for them,
    so they never wait for them (they build last, or when the lab first needs them)."""
    lab_only = ("embedded-shuffled", "embedded-subset", "ensure_shuffled_sentiment", "ensure_subset_sentiment",
                "EMBEDDED_SHUFFLED", "EMBEDDED_SUBSET", 'labels="shuffled"', 'labels="subset"')
    lectures = sorted((ROOT / "notebooks").glob("0[1-5]_*.py"))
    assert len(lectures) == 5, lectures
    for path in lectures:
        source = path.read_text()
        assert not [name for name in lab_only if name in source], path.name
    assert "embedded-shuffled" in (ROOT / "notebooks" / "06_attention_lab.py").read_text()  # the check can fail
