"""``scripts/start.sh``'s order: JupyterLab opens as soon as the notebooks are built and copied, with the
models building behind it in one niced background process that ends with JupyterLab; ``--headless`` and
``--models-first`` build every model first. A fake interpreter (``XAIKIT_PYTHON``) records what start.sh
asks of it, so nothing trains here; tests/test_background_build.py tests the builder itself."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FAKE_PYTHON = r"""#!/usr/bin/env bash
echo "$$ ni=$(ps -o ni= -p $$ | tr -d ' ') $*" >> "$CALLS"
case "$*" in
  *"prepare --background"*)
    trap 'echo "builder stopped" >> "$CALLS"; exit 143' TERM
    for _ in $(seq 300); do sleep 0.1; done
    echo "builder finished" >> "$CALLS" ;;
  *jupyterlab*)
    while [ ! -e "$LAB_CLOSES" ]; do sleep 0.1; done ;;
esac
"""


@pytest.fixture
def fake(tmp_path):
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "start.sh", repo / "scripts" / "start.sh")
    python = tmp_path / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    env = {**os.environ, "XAIKIT_PYTHON": str(python), "CALLS": str(tmp_path / "calls"),
           "LAB_CLOSES": str(tmp_path / "lab-closes")}
    started: list[subprocess.Popen] = []
    yield type("Fake", (), {"repo": repo, "env": env, "calls": tmp_path / "calls",
                            "closes": tmp_path / "lab-closes", "started": started})()
    (tmp_path / "lab-closes").touch()  # a failed test leaves nothing running
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _calls(fake) -> list[str]:
    return fake.calls.read_text().splitlines() if fake.calls.exists() else []


def _words(fake) -> list[str]:
    return [line.split(" ", 2)[2] if line[0].isdigit() else line for line in _calls(fake)]


def _start(fake, *args):
    proc = subprocess.Popen(["bash", str(fake.repo / "scripts" / "start.sh"), *args], env=fake.env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    fake.started.append(proc)
    return proc


def _wait_for(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_lab_opens_first_with_the_models_building_behind_it_and_the_build_ends_with_the_lab(fake):
    proc = _start(fake, "--no-browser")
    _wait_for(lambda: any("jupyterlab" in w for w in _words(fake)) and any("--background" in w for w in _words(fake)))
    words = _words(fake)
    assert not any(w.startswith("-m xaikit prepare") and "--background" not in w for w in words), words
    build, copy = words.index("-m xaikit notebooks build"), next(i for i, w in enumerate(words) if "copy" in w)
    builder = next(line for line in _calls(fake) if "--background" in line)
    lab = next(line for line in _calls(fake) if "jupyterlab" in line)
    assert build < copy < _calls(fake).index(builder), words
    assert f"--log {fake.repo}/artifacts/prepare-background.log" in builder
    base = os.getpriority(os.PRIO_PROCESS, 0)  # the tests may run niced themselves
    assert f"ni={base}" in lab and f"ni={min(19, base + 10)}" in builder, (builder, lab)  # only the build is niced
    assert "--no-browser" in lab
    assert "builder stopped" not in _calls(fake)
    fake.closes.touch()  # the student closes JupyterLab
    out = proc.communicate(timeout=30)[0]
    assert proc.returncode == 0, out
    assert "builder stopped" in _calls(fake), "closing JupyterLab left the model build running"
    assert not _alive(int(builder.split()[0]))
    assert "the embedded models build in the background" in out


def test_sigterm_to_start_sh_stops_the_build_too(fake):
    proc = _start(fake)
    _wait_for(lambda: any("jupyterlab" in w for w in _words(fake)) and any("--background" in w for w in _words(fake)))
    builder = int(next(line for line in _calls(fake) if "--background" in line).split()[0])
    os.kill(proc.pid, signal.SIGTERM)  # the shell alone: JupyterLab (fake) goes on until it is closed
    time.sleep(0.5)
    fake.closes.touch()
    proc.communicate(timeout=30)
    assert "builder stopped" in _calls(fake)
    assert not _alive(builder)


@pytest.mark.parametrize("flag", ["--headless", "--models-first"])
def test_headless_and_models_first_build_every_model_first(fake, flag):
    fake.closes.touch()
    proc = _start(fake, flag)
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 0, out
    words = _words(fake)
    assert words[0] == "-m xaikit prepare", words
    assert not any("--background" in w for w in words), words
    assert words[1] == "-m xaikit notebooks build"
    if flag == "--headless":
        assert words[2].startswith("-m xaikit notebooks run") and len(words) == 3, words
    else:
        assert "jupyterlab" in words[-1], words
