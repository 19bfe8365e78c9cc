"""A notebook's content: what a person puts into it (cells' types, sources, metadata and pasted images, and
the notebook's own metadata), its SHA-256 digest, and the entries of the build's record
(``notebooks/.xaikit-build.json``) that hold it. The notebook build (:mod:`xaikit.course.notebooks`) compares
notebooks by it, so that what running or saving a notebook changes never counts as an edit.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nbformat import NotebookNode

__all__ = ["CONTENT", "VOLATILE_CELL_METADATA", "VOLATILE_NOTEBOOK_METADATA", "attachments", "cells_digest",
           "content_digest", "notebook_metadata"]


def cells_digest(nb: NotebookNode) -> str:
    """SHA-256 of a notebook's cells as a person edits them: each cell's type and source, in order (not
    outputs, execution counts, ids or metadata, which running or merely saving a notebook changes)."""
    cells = [[cell.cell_type, cell.source] for cell in nb.cells]
    return hashlib.sha256(json.dumps(cells, ensure_ascii=False).encode()).hexdigest()


#: notebook metadata that running, saving or opening a notebook writes (a kernel, an editor, jupytext, Colab,
#: widgets, a homework sheet's own record), not a person's edit
VOLATILE_NOTEBOOK_METADATA = frozenset({
    "language_info", "kernelspec", "kernel_info", "jupytext", "widgets", "vscode", "interpreter", "colab",
    "accelerator", "gpuClass", "toc", "varInspector", "celltoolbar", "xaikit"})
#: cell metadata of the same kind (the keys jupytext never writes into a .py, and its own layout hints)
VOLATILE_CELL_METADATA = frozenset({
    "autoscroll", "collapsed", "scrolled", "trusted", "execution", "ExecuteTime", "skipline", "noskipline",
    "cell_marker", "lines_to_next_cell", "lines_to_end_of_cell_marker", "vscode"})
#: the prefix of a record entry made with :func:`content_digest` (older entries hold a :func:`cells_digest`)
CONTENT = "content:"


def _cell_metadata(cell) -> dict:
    meta = {k: v for k, v in cell.get("metadata", {}).items() if k not in VOLATILE_CELL_METADATA}
    jupyter = meta.get("jupyter")
    if isinstance(jupyter, dict) and "outputs_hidden" in jupyter:  # a view setting, like "collapsed"
        jupyter = {k: v for k, v in jupyter.items() if k != "outputs_hidden"}
        meta = {**meta, "jupyter": jupyter} if jupyter else {k: v for k, v in meta.items() if k != "jupyter"}
    return meta


def notebook_metadata(nb: NotebookNode) -> dict:
    """``nb``'s notebook-level metadata that a person set (not :data:`VOLATILE_NOTEBOOK_METADATA`)."""
    return {k: v for k, v in nb.metadata.items() if k not in VOLATILE_NOTEBOOK_METADATA}


def content_digest(nb: NotebookNode) -> str:
    """SHA-256 of everything a person puts into a notebook: each cell's type, source, metadata (tags,
    nbgrader points, ...) and attachments (images pasted into markdown), and the notebook's metadata. Not
    outputs, execution counts, ids, or the metadata that running or saving changes
    (:data:`VOLATILE_NOTEBOOK_METADATA`, :data:`VOLATILE_CELL_METADATA`)."""
    cells = [[cell.cell_type, cell.source, _cell_metadata(cell), cell.get("attachments") or {}]
             for cell in nb.cells]
    data = json.dumps([notebook_metadata(nb), cells], ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(data.encode()).hexdigest()


def attachments(nb: NotebookNode) -> list[tuple[int, str]]:
    """``(cell index, file name)`` of every image pasted into one of ``nb``'s cells (cell attachments)."""
    return [(i, name) for i, cell in enumerate(nb.cells) for name in (cell.get("attachments") or {})]


def _differences(nb, built) -> str:
    """What in ``nb``'s content differs from ``built``'s, in a few words (cells numbered from 0)."""
    parts = []
    mine, theirs = notebook_metadata(nb), notebook_metadata(built)
    keys = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
    if keys:
        parts.append(f"notebook metadata {', '.join(keys)}")
    if len(nb.cells) != len(built.cells):
        parts.append(f"{len(nb.cells)} cells instead of {len(built.cells)}")
    for what, get in (("source", lambda c: [c.cell_type, c.source]), ("metadata", _cell_metadata)):
        changed = [i for i, (a, b) in enumerate(zip(nb.cells, built.cells, strict=False)) if get(a) != get(b)]
        if changed:
            shown = ", ".join(map(str, changed[:5])) + (", ..." if len(changed) > 5 else "")
            parts.append(f"the {what} of cell{'s' if len(changed) > 1 else ''} {shown}")
    return "; ".join(parts) or "its content"


#: what follows a record entry's digest: the notebook file's modification time (ns) when the build recorded it
_MTIME = ";mtime="


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def _entry(digest: str, mtime: int | None) -> str:
    return digest if mtime is None else f"{digest}{_MTIME}{mtime}"


def _split_entry(entry: str | None) -> tuple[str | None, int | None]:
    """A record entry as ``(digest, mtime_ns)``; an entry of an older xaikit has no time (None)."""
    if entry is None or _MTIME not in entry:
        return entry, None
    digest, _, tail = entry.partition(_MTIME)
    try:
        return digest, int(tail)
    except ValueError:
        return digest, None


def _recorded_as(recorded: str | None, nb) -> bool:
    """Whether ``nb`` is what the record entry ``recorded`` says a build wrote. An entry of an older xaikit
    holds a :func:`cells_digest` (types and sources only): it is taken for a notebook without pasted
    images, which is what that build compared."""
    recorded = _split_entry(recorded)[0]
    if recorded is None:
        return False
    if recorded.startswith(CONTENT):
        return recorded == CONTENT + content_digest(nb)
    return not attachments(nb) and recorded == cells_digest(nb)
