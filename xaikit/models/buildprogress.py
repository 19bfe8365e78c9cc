"""How far a build in another process has got, for the process that waits for it.

A process that holds a model's build lock (:func:`xaikit.models.cache.build_lock`) is its builder. While it
trains, the training loops call :func:`step`, which writes ``{pid, what, n, total, desc}`` to a small JSON
file beside the lock, ``.<folder>.progress.json`` (replaced atomically, at most four times a second). A
process that has to wait for the lock, such as a notebook's kernel asking for the sentiment model while
``start.sh``'s background builder trains it, shows that file in a progress bar of its own (:func:`wait`),
names the builder, and takes the lock, and the finished model, as soon as the builder lets go.

The file says nothing about whether the model is finished: only the manifest and the atomic rename of
:mod:`xaikit.models.cache` do. A builder that is killed leaves a stale file behind; the next builder of that
folder overwrites it, and a waiter only reads it while the lock is held by someone.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["progress_file", "building", "step", "read", "wait", "BACKGROUND_FILE", "background_builder",
           "announce_background"]

#: the file in the cache that names the running ``prepare --background`` process
BACKGROUND_FILE = ".prepare-background.pid"

#: the fewest seconds between two writes of the progress file
WRITE_EVERY = 0.25
#: how often a waiter reads the progress file and tries the lock
POLL = 0.5

_local = threading.local()


def progress_file(folder: str | os.PathLike) -> Path:
    """The progress file of the build of ``folder``: ``.<name>.progress.json`` beside its lock file."""
    folder = Path(folder)
    return folder.parent / f".{folder.name}.progress.json"


def _stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


@contextmanager
def building(folder: str | os.PathLike, what: str) -> Iterator[None]:
    """Make ``folder`` this thread's current build for :func:`step` during the block (builds nest: a step is
    reported to the innermost one). The progress file is removed when the block ends."""
    entry = {"path": progress_file(folder), "what": what, "last": 0.0}
    _stack().append(entry)
    try:
        _write(entry, 0, None, what)
        entry["last"] = 0.0  # the first step is always written
        yield
    finally:
        _stack().remove(entry)
        try:
            entry["path"].unlink()
        except OSError:
            pass


def step(n: int, total: int | None, desc: str | None = None) -> None:
    """Report that the current build of this thread has done ``n`` of ``total`` steps (a no-op outside a
    build). Cheap enough to call once per training step: the file is written at most every
    :data:`WRITE_EVERY` seconds, and always for the last step."""
    stack = _stack()
    if not stack:
        return
    entry = stack[-1]
    now = time.monotonic()
    if now - entry["last"] < WRITE_EVERY and n != total:
        return
    _write(entry, n, total, desc or entry["what"])


def _write(entry: dict, n: int, total: int | None, desc: str) -> None:
    entry["last"] = time.monotonic()
    path = entry["path"]
    state = {"pid": os.getpid(), "what": entry["what"], "desc": desc, "n": int(n),
             "total": None if total is None else int(total), "time": time.time()}
    part = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part.write_text(json.dumps(state))
        os.replace(part, path)
    except OSError:  # progress is a courtesy: a cache that cannot take it still builds
        pass


def read(folder: str | os.PathLike) -> dict | None:
    """The last progress the builder of ``folder`` reported, or ``None`` when there is none to read."""
    try:
        state = json.loads(progress_file(folder).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or not isinstance(state.get("n"), int):
        return None
    return state


def wait(folder: str | os.PathLike, holder: str, what: str, try_lock: Callable[[], bool]) -> None:
    """Wait until ``try_lock()`` succeeds, showing the builder's progress on ``folder`` in a tqdm bar (a widget
    in a notebook) whose label names ``holder``, the process that builds it."""
    from tqdm.auto import tqdm

    holder = holder.split(" (", 1)[0]  # "process 1234": the message above the bar names its command
    bar = tqdm(total=None, desc=f"waiting for {holder}: {what}", unit="step", leave=False)
    try:
        while not try_lock():
            state = read(folder)
            if state is not None:
                total = state.get("total")
                if total is not None and bar.total != total:
                    bar.reset(total=total)
                    bar.set_description(f"waiting for {holder}: {state.get('desc') or what}", refresh=False)
                if state["n"] != bar.n:
                    bar.n = state["n"]
                    bar.refresh()
            time.sleep(POLL)
    finally:
        if bar.total:  # the wait is over: a notebook bar closed below its total stays on screen, red
            bar.n = bar.total
        bar.close()


def background_builder() -> int | None:
    """The process id of the ``python -m xaikit prepare --background`` that is building this cache's models
    now (``scripts/start.sh`` starts one behind JupyterLab), or ``None`` when none runs. A notebook whose
    model is not in the cache yet loads it anyway while one runs: the load waits for the build, or builds it
    itself when the builder has not got to it yet."""
    from xaikit._config import cache_dir

    try:
        text = (cache_dir(create=False) / BACKGROUND_FILE).read_text().strip()
    except (OSError, ValueError):
        return None
    if not text.isdigit():
        return None
    pid = int(text)
    if os.name == "nt":  # os.kill(pid, 0) there sends Ctrl-C; a stale file only means the model is built here
        return pid
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except OSError:  # it exists but is not ours, or the platform cannot tell
        pass
    return pid


@contextmanager
def announce_background() -> Iterator[None]:
    """Name this process in the cache's :data:`BACKGROUND_FILE` for the block (:func:`background_builder`)."""
    from xaikit._config import cache_dir

    path = cache_dir() / BACKGROUND_FILE
    part = path.with_name(f"{path.name}.{os.getpid()}.part")
    try:
        part.write_text(f"{os.getpid()}\n")
        os.replace(part, path)
    except OSError:
        pass
    try:
        yield
    finally:
        try:
            if path.read_text().strip() == str(os.getpid()):
                path.unlink()
        except OSError:
            pass
