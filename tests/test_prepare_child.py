"""prepare's ViT trainer ends with its parent, and a process waiting on a build lock says whom it waits for.

A ``prepare`` killed with ``kill -9`` left its ViT process training, holding the lock, for minutes, and a rerun
showed a bar frozen at 0% with no word of the wait. The README's "Bad input and safety" table lists this.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PARENT = textwrap.dedent("""
    import multiprocessing as mp, os, sys, time
    from tests.test_prepare_child import child

    if __name__ == "__main__":
        proc = mp.get_context("spawn").Process(target=child, args=(os.getpid(), sys.argv[1]), daemon=True)
        proc.start()
        time.sleep(600)
""")


def child(parent: int, pid_file: str) -> None:
    """A stand-in for ``_build_vits``: watch the parent as it does, then 'train' for ten minutes."""
    from xaikit.prepare import die_with_parent

    die_with_parent(parent, interval=0.2)
    Path(pid_file).write_text(str(os.getpid()))
    time.sleep(600)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its new parent) counts as gone
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


@pytest.mark.skipif(sys.platform == "win32", reason="kill -9 of a process tree is a POSIX test")
def test_the_vit_process_dies_with_a_killed_prepare(tmp_path):
    pid_file = tmp_path / "child.pid"
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen([sys.executable, str(script), str(pid_file)], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline and parent.poll() is None, parent.communicate()[0]
        time.sleep(0.1)
    child_pid = int(pid_file.read_text())
    assert _alive(child_pid)
    parent.send_signal(signal.SIGKILL)  # no chance to stop its child
    parent.wait(timeout=30)
    deadline = time.monotonic() + 20
    while _alive(child_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = _alive(child_pid)
    if alive:  # leave nothing behind, then fail
        os.kill(child_pid, signal.SIGKILL)
    assert not alive, "the child outlived its killed parent"


def test_prepare_passes_its_id_to_the_vit_process(monkeypatch):
    from xaikit import prepare

    started = {}

    class FakeProcess:
        def __init__(self, target, args, name, daemon):
            started.update(target=target, args=args)

        def start(self):
            pass

        def is_alive(self):
            return False

    import multiprocessing as mp

    real = mp.get_context

    class Ctx:
        def __getattr__(self, name):
            return getattr(real("spawn"), name)

        Process = FakeProcess

    monkeypatch.setattr(mp, "get_context", lambda kind: Ctx())
    prepare._VitProcess(["main"], False, False, 0).stop()
    assert started["target"] is prepare._build_vits and started["args"][-1] == os.getpid()


def test_a_waiter_names_the_process_it_waits_for(tmp_path, capsys):
    from xaikit.models import cache

    folder = tmp_path / "model"
    holding, release = threading.Event(), threading.Event()

    def hold():
        with cache.build_lock(folder, "model", progress=False):
            holding.set()
            release.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    assert holding.wait(30)
    threading.Timer(0.5, release.set).start()
    with cache.build_lock(folder, "model", progress=False) as waited:  # progress off, as in the ViT process
        assert waited
    thread.join()
    err = capsys.readouterr().err
    assert f"xaikit: process {os.getpid()} (" in err and "is building the model" in err and "waiting" in err
