"""Files xaikit writes for people: written whole (a temporary file renamed into place), and never over a file
someone else wrote or changed (that one is copied aside first). Used by the course commands' exports and by
the claims report."""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

__all__ = ["EXPORT_MARK", "backup", "write_export", "write_text_atomic", "written_by_xaikit"]


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename: never half a file."""
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)


#: the last line of every page, slide show or report xaikit writes: the SHA-256 of what it wrote above it, so a
#: later export can tell its own file (replaced) from a file someone wrote or edited (kept as a backup first)
EXPORT_MARK = "<!-- written by xaikit; sha256 {} -->"


def _export_digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def written_by_xaikit(path: Path) -> bool:
    """Whether ``path`` is an export xaikit wrote and nobody changed since (its last line's checksum holds)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    body, _, last = text.rstrip("\n").rpartition("\n")
    return last == EXPORT_MARK.format(_export_digest(body))


def write_export(path: Path, text: str, what: str = "export") -> Path:
    """Write an HTML page, a slide show or a report to ``path`` atomically, ending in :data:`EXPORT_MARK`. A
    file already there that xaikit did not write, or that was edited since, is first copied aside
    (:func:`backup`) and the copy named: an export never loses a file someone else wrote."""
    path = Path(path)
    body = text.rstrip("\n")
    if path.exists() and not written_by_xaikit(path):
        kept = backup(path)
        print(f"xaikit: {path} was not written by xaikit, or was changed since; kept it as {kept.name} before "
              f"writing the {what}", file=sys.stderr)
    write_text_atomic(path, body + "\n" + EXPORT_MARK.format(_export_digest(body)) + "\n")
    return path


def backup(path: Path) -> Path:
    """Copy ``path`` to ``backup-<stem>-<YYYYmmdd-HHMMSS>.<suffix>`` beside it (a name no glob of
    ``NN_*`` notebooks picks up) and return the copy's path."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    copy_path = path.with_name(f"backup-{path.stem}-{stamp}{path.suffix}")
    n = 1
    while copy_path.exists():
        n += 1
        copy_path = path.with_name(f"backup-{path.stem}-{stamp}-{n}{path.suffix}")
    copy_path.write_bytes(path.read_bytes())
    return copy_path
