"""The build lock of the model cache: one build of a folder at a time, across processes.

:func:`build_lock` takes an exclusive lock (``fcntl.flock`` on POSIX, ``msvcrt.locking`` on Windows) on a
hidden ``.<folder>.lock`` file beside the folder, so two ``prepare`` runs on one cache do not both train: the
second waits, showing who holds the lock and the holder's progress (:mod:`xaikit.models.buildprogress`), then
finds the first one's model and uses it. :func:`xaikit.models.cache.ensure` builds under it.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from xaikit._validate import bool_flags
from xaikit.models import buildprogress

__all__ = ["build_lock"]


def _try_lock(fh) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        fh.seek(0)
        try:
            msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _lock(fh) -> None:
    try:
        import fcntl
    except ImportError:  # Windows: msvcrt's blocking mode gives up after 10 s, so poll instead
        while not _try_lock(fh):
            time.sleep(0.5)
        return
    fcntl.flock(fh.fileno(), fcntl.LOCK_EX)


def _unlock(fh) -> None:
    try:
        import fcntl
    except ImportError:
        import msvcrt

        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
        return
    fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


@bool_flags
@contextmanager
def build_lock(folder: str | os.PathLike, what: str = "model", progress: bool = True):
    """Hold the exclusive build lock of ``folder`` (a ``.<name>.lock`` file beside it) for the block.

    Yields True when another process (or thread) held it and this one had to wait for it. The lock is
    released by the operating system if the holder dies, so a killed build never blocks the next one. The
    holder writes its process id and command line into the lock file, and a waiter says whom it waits for,
    also with ``progress=False`` (prepare's ViT process, to stderr): a wait can last minutes. With
    ``progress`` the waiter also shows the holder's progress (:mod:`xaikit.models.buildprogress`, which the
    holder's training loops report to while it holds the lock) in a progress bar.
    """
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    path = folder.parent / f".{folder.name}.lock"
    with open(path, "a+b") as fh:
        waited = not _try_lock(fh)
        if waited:
            holder = _holder_text(path)
            print(f"xaikit: {holder} is building the {what} in {folder}; waiting for it to finish "
                  f"(lock file {path})", flush=True, file=sys.stdout if progress else sys.stderr)
            if progress:  # the builder's progress (buildprogress.step) in a bar of this process's own
                buildprogress.wait(folder, holder, what, lambda: _try_lock(fh))
            else:
                _lock(fh)
        try:
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()} {' '.join(sys.argv)[:200]}\n".encode())
            fh.flush()
        except OSError:  # a lock file that cannot be written still locks
            pass
        try:
            with buildprogress.building(folder, what):
                yield waited
        finally:
            _unlock(fh)


def _holder_text(path: Path) -> str:
    """``process 1234 (python -m xaikit prepare)`` from a lock file, or ``another process`` when it names no
    live process (not written yet, or unreadable)."""
    try:
        pid, _, command = path.read_text(encoding="utf-8", errors="replace").strip().partition(" ")
    except OSError:
        return "another process"
    if not pid.isdigit() or not _pid_alive(int(pid)):
        return "another process"
    return f"process {pid}" + (f" ({command})" if command else "")


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists but is not ours, or the platform cannot tell: leave its folder alone
        return True
    return True
