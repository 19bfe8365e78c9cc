"""Single-source notebooks: each ``notebooks/NN_name.py`` (jupytext ``py:percent``) is the source, and
``NN_name.ipynb`` is built from it without outputs. Also runs notebooks headless (nbclient) for the tests
and the ``--headless`` start command.

**The build never throws away what a person put into a notebook.** That is the notebook's *content*
(:func:`content_digest`): each cell's type, source, metadata (tags, nbgrader points, ...) and pasted
images (attachments), and the notebook's own metadata; not outputs, execution counts, cell ids, or what
running or saving adds (``language_info``, ``kernelspec``, ``collapsed``, ...). Each build records the
content it wrote into each ``.ipynb`` (a SHA-256, in ``notebooks/.xaikit-build.json``). On the next build,
for each notebook whose content differs from its ``.py``:

* the ``.ipynb`` is as the build left it (its content matches the record, and the file was not written
  after the build recorded it and after the ``.py`` was last written: such a file counts as edited, even
  with that same content), or is byte for byte the version committed in git (``git show HEAD:...``, which
  keeps it): it is rebuilt from the ``.py``;
* the ``.ipynb`` was edited (in Jupyter, without jupytext saving the ``.py`` too, or by a script) and the
  ``.py`` is as it was at the last build: the notebook is the newer file, so its cells and metadata are
  written into the ``.py`` through jupytext (the ``.py``'s header is kept unless the notebook's metadata
  changed), and the ``.ipynb`` is rebuilt from that; if jupytext cannot carry everything (an image pasted
  into a markdown cell: a ``.py`` cannot hold one), both files are kept, as below;
* there is no record, and the ``.ipynb`` is byte for byte what a build writes for its own cells (e.g. a
  fresh clone whose ``.py`` was edited): it is copied to ``notebooks/backup-NN_name-<time>.ipynb`` and
  rebuilt, and the build says so;
* otherwise (both were edited, there is no record to tell, the notebook holds pasted images, or it cannot
  be read): both files are left as they are, the build says why and exits with status 1. ``--force``
  rebuilds the ``.ipynb`` from the ``.py`` after copying it to ``notebooks/backup-NN_name-<time>.ipynb``.

Two builds at once (two ``start.sh``, a build and a test) take turns: each holds an exclusive lock
(``.notebooks.lock`` beside ``notebooks/``, :func:`xaikit.models.cache.build_lock`) from reading the record
to writing it, so one never works from files the other is rewriting. An editor is not bound by that lock, so
each write first checks that the file still holds what the build read from it: an autosave of the ``.ipynb``
or the ``.py`` in the meantime (e.g. during jupytext's round trip) is kept, the notebook is reported as kept
(exit status 1, "run the build again"), and the next build takes the new edit in.

Outputs and execution counts are not kept (they come back when the notebook runs): the ``.ipynb`` is
always written without them.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from xaikit._files import backup, write_export, write_text_atomic
from xaikit._validate import bool_flags


def project_root() -> Path:
    """The folder that holds ``notebooks/``: the checkout this package sits in (a clone or an editable
    install), else the current folder (an installed package has no notebooks of its own)."""
    checkout = Path(__file__).resolve().parents[2]
    return checkout if (checkout / "notebooks").is_dir() else Path.cwd()


ROOT = project_root()
NOTEBOOKS = ROOT / "notebooks"
#: the cells each build wrote, per notebook (not committed: a fresh clone's .ipynb match their .py)
RECORD = ".xaikit-build.json"


class NotebookNotFoundError(LookupError):
    """A notebook name or number that matches no ``notebooks/NN_*.py``."""


class NotInCheckoutError(NotebookNotFoundError):
    """A command that works on a checkout's ``notebooks/`` folder, run where there is none (a pip-installed
    xaikit used outside a clone of the repository)."""


#: where a wheel of xaikit keeps the lecture notebooks: the built ``notebooks/NN_*.ipynb``, copied in as
#: package data by ``setup.py`` when the wheel is built (a checkout has no such folder; nothing generated is
#: committed)
PACKAGED = Path(__file__).resolve().parents[1] / "_lectures"
_PATTERN = "[0-9][0-9]_*"


def in_checkout() -> bool:
    """Whether :data:`NOTEBOOKS` holds lecture notebooks (``NN_*.py`` or ``NN_*.ipynb``): a clone of the
    repository, or an editable install run from anywhere."""
    return any(NOTEBOOKS.glob(f"{_PATTERN}.py")) or any(NOTEBOOKS.glob(f"{_PATTERN}.ipynb"))


def lecture_folder() -> Path:
    """The folder to read the lecture notebooks from: the checkout's ``notebooks/`` (or ``notebooks/`` in
    the current folder) when it holds any, else the copy a pip-installed xaikit carries (:data:`PACKAGED`).
    Raises :class:`NotInCheckoutError`, saying where it looked, when there is neither."""
    if in_checkout():
        return NOTEBOOKS
    if any(PACKAGED.glob(f"{_PATTERN}.ipynb")):
        return PACKAGED
    raise NotInCheckoutError(
        f"no lecture notebooks found: {NOTEBOOKS} holds none, and this xaikit ({PACKAGED.parent}) carries "
        "none (an install from a source tree without notebooks/). Install xaikit from a wheel built from "
        "a checkout (`pip wheel --no-deps .` there), or work in a clone of the repository")


def not_in_checkout(command: str) -> str:
    """What to say when ``command`` needs a checkout's ``notebooks/`` and there is none."""
    return (f"xaikit {command}: this command works on the notebooks/ folder of a clone of the xaikit repository "
            f"(it writes notebooks/NN_*.ipynb from their NN_*.py sources), and there is none here "
            f"({NOTEBOOKS} holds no NN_*.py or NN_*.ipynb). With a pip-installed xaikit, copy the lecture notebooks into a "
            "folder of your own with `xaikit notebooks copy DIR` and open them in Jupyter; `xaikit homework "
            "build` and `xaikit homework nbgrader` work from the notebooks xaikit carries")


def matches(stem: str, name: str) -> bool:
    """Whether the notebook ``stem`` is the one ``name`` asks for: the stem itself or its start ("01")."""
    return stem == name or stem.startswith(name)


def check_names(names: list[str] | None, stems) -> None:
    """Raise :class:`NotebookNotFoundError` naming every one of ``names`` that matches none of ``stems`` (the
    notebooks there are) and listing those: a name that matches nothing is never dropped in silence."""
    stems = sorted(set(stems))
    names = [names] if isinstance(names, str) else names  # one name, as the other course functions take it
    missing = [n for n in names or [] if not any(matches(s, n) for s in stems)]
    if missing:
        which = ", ".join(repr(n) for n in missing)
        raise NotebookNotFoundError(f"no notebook matches {which}; have {', '.join(stems) or 'none'} (name each "
                                    "by its number, e.g. 01, or its full name)")


def sources(names: list[str] | None = None) -> list[Path]:
    """The jupytext sources, optionally filtered by stem or number prefix ("01", "02_integrated..."). A name
    that matches no notebook (``.py``, or an ``.ipynb`` without one, which :func:`orphans` reports) raises
    :class:`NotebookNotFoundError`."""
    found = sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.py"))
    if isinstance(names, str):  # one name, not its characters ("01" would match every notebook starting "0")
        names = [names]
    if names:
        check_names(names, [p.stem for p in found] + [p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")])
        found = [p for p in found if any(matches(p.stem, n) for n in names)]
        if not found:
            raise NotebookNotFoundError(f"no notebook matches {names}; have {[p.stem for p in sorted(NOTEBOOKS.glob('*.py'))]}")
    return found


def to_notebook(source: Path):
    return _from_text(Path(source).read_text(encoding="utf-8"))


def _from_text(text: str):
    """The notebook of the py:percent ``text``, with the Colab setup cell of :mod:`xaikit.course.colab`
    inserted after the presenter switch, cell ids cell-000, ... and no outputs."""
    import jupytext

    from xaikit.course.colab import insert_cell

    nb = jupytext.reads(text, fmt="py:percent")
    insert_cell(nb)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata.setdefault("jupytext", {})["formats"] = "ipynb,py:percent"
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i:03d}"  # nbformat would draw random ids, so every build would differ
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def _dump(nb) -> str:
    import nbformat

    return nbformat.writes(nb) + "\n"


def cells_digest(nb) -> str:
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


def notebook_metadata(nb) -> dict:
    """``nb``'s notebook-level metadata that a person set (not :data:`VOLATILE_NOTEBOOK_METADATA`)."""
    return {k: v for k, v in nb.metadata.items() if k not in VOLATILE_NOTEBOOK_METADATA}


def content_digest(nb) -> str:
    """SHA-256 of everything a person puts into a notebook: each cell's type, source, metadata (tags,
    nbgrader points, ...) and attachments (images pasted into markdown), and the notebook's metadata. Not
    outputs, execution counts, ids, or the metadata that running or saving changes
    (:data:`VOLATILE_NOTEBOOK_METADATA`, :data:`VOLATILE_CELL_METADATA`)."""
    cells = [[cell.cell_type, cell.source, _cell_metadata(cell), cell.get("attachments") or {}]
             for cell in nb.cells]
    data = json.dumps([notebook_metadata(nb), cells], ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(data.encode()).hexdigest()


def attachments(nb) -> list[tuple[int, str]]:
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


@bool_flags
def ensure_folder(path: Path, what: str, make: bool = True) -> Path:
    """``path`` as a folder to write into, made if missing (with its parents) when ``make``. Raises
    NotADirectoryError naming ``what`` (the option or parameter that gave it) when ``path`` or one of its
    parents is a file."""
    path = Path(path).expanduser()
    for part in (path, *path.parents):
        if part.exists() and not part.is_dir():
            which = "that" if part == path else str(part)
            raise NotADirectoryError(f"{what} {path}: {which} is a file, not a folder; name a folder to write "
                                     "into (it is made if missing)")
    if make:
        path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class Built:
    """What :func:`build` did with one notebook: ``action`` is "unchanged", "written", "synced" (the
    edited notebook's cells went into the ``.py``) or "kept" (left as it is; ``message`` says why)."""

    target: Path
    action: str
    message: str = ""
    #: the ``.py`` was written from the notebook (action "synced", or "kept" when the notebook changed again
    #: while that was written): the record holds the source's new content
    source_written: bool = False


def _read_record() -> dict[str, str]:
    try:
        data = json.loads((NOTEBOOKS / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


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


def _committed(path: Path) -> bytes | None:
    """``path`` as committed in git (``git show HEAD:...``), or None (not in a repository, not committed,
    no git)."""
    try:
        done = subprocess.run(["git", "-C", str(path.parent), "show", f"HEAD:./{path.name}"],
                              capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _as_built(nb, built) -> str:
    """The text a build writes for ``nb``'s cells: ``built``'s notebook metadata, ids cell-000, ..., no
    outputs. A notebook saved by Jupyter differs from it (its metadata, outputs or new cells' ids); one
    saved by ``nbformat.write`` or a kernel-less save may not, so this says nothing about who wrote it."""
    canon = copy.deepcopy(built)
    canon.cells = copy.deepcopy(nb.cells)
    for i, cell in enumerate(canon.cells):
        cell.id = f"cell-{i:03d}"
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return _dump(canon)


def _source_text(nb, old: str) -> str:
    """``nb`` as py:percent text, keeping the YAML header of the old source text ``old`` (unless ``nb``'s
    notebook metadata differs from the one that header gives: then jupytext writes a header that holds it).
    The Colab setup cell stays out of the source: the build inserts it."""
    import jupytext

    from xaikit.course.colab import remove_cell

    def split(text: str) -> tuple[str, str]:
        lines = text.splitlines(keepends=True)
        if lines and lines[0].rstrip() == "# ---":
            for j in range(1, len(lines)):
                if lines[j].rstrip() == "# ---":
                    return "".join(lines[:j + 1]), "".join(lines[j + 1:])
        return "", text

    header, _ = split(old)
    nb = copy.deepcopy(nb)
    remove_cell(nb)
    if notebook_metadata(nb) != notebook_metadata(_from_text(old)):
        header = ""
        keys = sorted(notebook_metadata(nb))
        settings = nb.metadata.setdefault("jupytext", {})
        if keys:  # jupytext writes only the metadata its filter names into a header
            settings["notebook_metadata_filter"] = ",".join(keys)
        else:
            settings.pop("notebook_metadata_filter", None)
    new_header, body = split(jupytext.writes(nb, fmt="py:percent"))
    return (header or new_header) + body


@bool_flags
def build_notebooks(names: list[str] | None = None, force: bool = False, verbose: bool = True) -> list[Built]:
    """Write each ``notebooks/NN_*.ipynb`` from its ``.py`` without discarding edits made to the
    ``.ipynb`` (see the module docstring); returns what was done with each. ``force``: rebuild every
    ``.ipynb`` from its ``.py``, copying an edited one to ``backup-NN_name-<time>.ipynb`` first. Holds the
    notebooks' build lock throughout, so a second build at the same time waits for this one."""
    import nbformat

    from xaikit.models.cache import build_lock

    with build_lock(NOTEBOOKS, what="notebooks", progress=verbose):
        record = _read_record()
        done = []
        for src in sources(names):
            target = src.with_suffix(".ipynb")
            source_text = src.read_text(encoding="utf-8")
            built = _from_text(source_text)
            result = _build_one(src, target, built, _dump(built), record.get(src.stem), force, nbformat,
                                source_text)
            if result.source_written:  # "kept" here: the notebook changed again, so its old time is kept
                stamp = _mtime(target) if result.action != "kept" else _split_entry(record.get(src.stem))[1]
                record[src.stem] = _entry(CONTENT + content_digest(to_notebook(src)), stamp)
            elif result.action != "kept":
                record[src.stem] = _entry(CONTENT + content_digest(built), _mtime(target))
            if verbose and result.message:
                print(result.message, file=sys.stderr if result.action == "kept" else sys.stdout, flush=True)
            done.append(result)
        write_text_atomic(NOTEBOOKS / RECORD, json.dumps(record, indent=1, sort_keys=True) + "\n")
    return done


class ChangedOnDisk(RuntimeError):
    """A file changed between the build reading it and writing it (an editor's autosave)."""


def _replace_if_unchanged(path: Path, read: str | None, text: str) -> None:
    """Write ``text`` to ``path`` (:func:`write_text_atomic`) if ``path`` still holds ``read`` (None: no file),
    what the build read from it; else raise :class:`ChangedOnDisk` and touch nothing."""
    try:
        now = path.read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        now = None
    if now != read:
        raise ChangedOnDisk(f"{path.name} changed while the build was working on it")
    write_text_atomic(path, text)


def _build_one(src: Path, target: Path, built, text: str, recorded: str | None, force: bool, nbformat,
               source_text: str | None = None) -> Built:
    """:func:`_decide`, with every write made only if the file still holds what the build read (an autosave
    between reading and writing is kept, and the build says so)."""
    if source_text is None:
        source_text = src.read_text(encoding="utf-8")
    current = target.read_text(encoding="utf-8", errors="surrogateescape") if target.exists() else None
    try:
        return _decide(src, target, built, text, recorded, force, nbformat, source_text, current)
    except ChangedOnDisk as err:
        written = isinstance(err, SourceSynced)
        return Built(target, "kept", f"{target.name} was left as it is: {err}"
                     + (f" (after its earlier cells were copied into {src.name})" if written else "")
                     + ", so nothing was overwritten; run the build again", source_written=written)


class SourceSynced(ChangedOnDisk):
    """The notebook changed again after its cells were written into the ``.py``."""


def _decide(src: Path, target: Path, built, text: str, recorded: str | None, force: bool, nbformat,
            source_text: str, current: str | None) -> Built:
    def write_target(new: str) -> None:
        _replace_if_unchanged(target, current, new)

    if current is None:
        write_target(text)
        return Built(target, "written")
    if current == text:
        return Built(target, "unchanged")
    advice = "jupytext"
    # A notebook file written after the build recorded it, and after its .py was last written, may hold an
    # edit whose content happens to equal what that build wrote (the same edit made again after `git checkout`
    # undid both files): it counts as edited, not as the build's own output. (Run and saved in Jupyter before
    # the .py was edited, it is older than the .py, and rebuilt as before.)
    stamp, written = _split_entry(recorded)[1], _mtime(target)
    rewritten = (stamp is not None and written is not None and written != stamp
                 and written > (_mtime(src) or 0))
    try:
        nb = nbformat.reads(current, as_version=4)
        mine = content_digest(nb)
    except Exception as err:  # noqa: BLE001 - any unreadable file is kept, not overwritten
        why = f"it cannot be read as a notebook ({type(err).__name__}: {err})"
    else:
        as_left = _recorded_as(recorded, nb)
        if mine == content_digest(built) or (as_left and not rewritten):
            write_target(text)  # same content, or as the last build left it: nothing of yours lost
            return Built(target, "written")
        pasted = attachments(nb)
        if pasted:
            advice = "images"
            where = ", ".join(f"{name!r} in cell {i}" for i, name in pasted[:5]) + (", ..." if len(pasted) > 5 else "")
            why = (f"it holds {len(pasted)} image{'s' if len(pasted) > 1 else ''} pasted into its cells ({where}), "
                   f"which {src.name} cannot hold (a .py has no place for cell attachments), so rebuilding "
                   f"from it would delete {'them' if len(pasted) > 1 else 'it'}")
        elif _recorded_as(recorded, built):
            if _sync_source(src, nb, source_text, target, current):
                try:
                    write_target(_dump(to_notebook(src)))
                except ChangedOnDisk as err:
                    raise SourceSynced(str(err)) from None
                return Built(target, "synced", f"{target.name} was edited since the last build and {src.name} "
                                               f"was not: its cells and metadata were copied into {src.name} "
                                               "(jupytext)", source_written=True)
            why = (f"it was edited since the last build ({_differences(nb, built)}), and jupytext could not "
                   f"write that into {src.name} without changing it")
        elif target.read_bytes() == _committed(target):
            write_target(text)  # as committed: git keeps it
            return Built(target, "written")
        elif recorded is None and current == _as_built(nb, built):
            # a build's output for other cells (a fresh clone whose .py changed) or the same file edited by a
            # script: nothing tells which, so rebuild, keeping a copy
            saved = backup(target)
            write_target(text)
            return Built(target, "written", f"{target.name}: its cells differ from {src.name} and there is no "
                                            f"record of the last build; rebuilt from {src.name}, the old notebook "
                                            f"is in {saved.name} (delete it if you did not edit the notebook)")
        elif recorded is None:
            why = (f"its content differs from {src.name} ({_differences(nb, built)}) and there is no record of "
                   "what the last build wrote")
        elif as_left:
            why = (f"the file was written after the last build recorded it (its content is what that build "
                   f"wrote, e.g. an edit made again after `git checkout` undid it), and {src.name} changed since "
                   f"({_differences(nb, built)}): nothing tells which of the two holds your work")
        else:
            why = f"it was edited since the last build ({_differences(nb, built)}), and so was {src.name}"
    if force:
        saved = backup(target)
        write_target(text)
        return Built(target, "written", f"{target.name}: {why}; rebuilt from {src.name} (--force), the old "
                                        f"notebook is in {saved.name}")
    rebuild = (f"to rebuild it from {src.name} instead, run `python -m xaikit notebooks build --force "
               f"{src.stem[:2]}` (it copies the notebook to backup-{target.stem}-<time>.ipynb first)")
    if advice == "images":
        keep = (f"To keep the images, save each as a file in {target.parent.name}/ and link it from its cell "
                "(`![text](picture.png)` instead of `![text](attachment:...)`), then build")
    else:
        keep = (f"To keep the notebook's content, write it into the source with `python -m jupytext --to "
                f"py:percent notebooks/{target.name}` (this replaces {src.name}), then build")
    return Built(target, "kept", f"{target.name} was left as it is: {why}. {keep}; {rebuild}")


def _sync_source(src: Path, nb, source_text: str, target: Path, current: str) -> bool:
    """Write ``nb``'s content into the jupytext source ``src`` if it comes back unchanged; else touch nothing.
    Raises :class:`ChangedOnDisk` (writing nothing) when ``src`` no longer holds ``source_text`` or the notebook
    ``target`` no longer holds ``current``, what the build read from them (an autosave during the round trip)."""
    new = _source_text(nb, source_text)
    if content_digest(_from_text(new)) != content_digest(nb):
        return False
    now = target.read_text(encoding="utf-8", errors="surrogateescape") if target.exists() else None
    if now != current:
        raise ChangedOnDisk(f"{target.name} changed while the build was copying its cells into {src.name}")
    _replace_if_unchanged(src, source_text, new)
    return True


@bool_flags
def build(names: list[str] | None = None, force: bool = False, verbose: bool = True) -> list[Path]:
    """:func:`build_notebooks`, returning the ``.ipynb`` paths (each is either built or kept as it was)."""
    return [b.target for b in build_notebooks(names, force=force, verbose=verbose)]


def orphans(names: list[str] | None = None) -> list[str]:
    """One message per ``notebooks/NN_*.ipynb`` whose ``.py`` source is gone: no build or check sees such a
    notebook, so without this a deleted source would go unnoticed."""
    if isinstance(names, str):
        names = [names]
    found = []
    for nb in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        src = nb.with_suffix(".py")
        if src.exists() or (names and not any(nb.stem == n or nb.stem.startswith(n) for n in names)):
            continue
        found.append(f"{nb.name} has no source {src.name}, so it is neither built nor checked: restore the source "
                     f"(git checkout -- notebooks/{src.name}), or write it from the notebook with "
                     f"`python -m jupytext --to py:percent notebooks/{nb.name}`")
    return found


def check(names: list[str] | None = None) -> list[str]:
    """Problems: a notebook missing, out of sync with its source, committed with outputs, or without its
    source."""
    problems = orphans(names)
    if problems and names and not sources_match(names):
        return problems
    for src in sources(names):
        target = src.with_suffix(".ipynb")
        if not target.exists():
            problems.append(f"{target.name} is missing: run `python -m xaikit notebooks build`")
        elif target.read_text(encoding="utf-8", errors="replace") != _dump(to_notebook(src)):
            problems.append(f"{target.name} differs from {src.name}: run `python -m xaikit notebooks build`")
    return problems


def sources_match(names) -> bool:
    """Whether ``names`` match at least one source (:func:`sources` raises when none does)."""
    try:
        return bool(sources(names))
    except NotebookNotFoundError:
        return False


def execute(path: Path, timeout: int = 600, cwd: Path | None = None):
    """Run one notebook top to bottom in a fresh kernel; returns ``(notebook, seconds)``."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(cwd or path.parent)}})
    # the kernel draws figures as Jupyter does (the inline backend, so a Figure left at the end of a cell is a
    # picture): an MPLBACKEND of this process (the tests set Agg) would make it text, "<Figure size ...>"
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    t0 = time.perf_counter()
    client.execute(env=env)
    return nb, time.perf_counter() - t0


#: MathJax 2's combined configuration that the ``jupyter-server-mathjax`` package ships (TeX and MathML
#: input, HTML-CSS output), the ``Safe`` extension nbconvert also asks for, and ours (below)
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe,local/xaikit"
#: the package ships the STIX web fonts only; left to its defaults, HTML-CSS output asks for the TeX
#: fonts, finds no file and prints "[Math Processing Error]" for every formula
_MATHJAX_LOCAL_CONFIG = """MathJax.Hub.Config({"HTML-CSS": {availableFonts: [], preferredFont: null, webFont: "STIX-Web",
                                imageFont: null}});
MathJax.Ajax.loadComplete("[MathJax]/config/local/xaikit.js");
"""


def export_html(nb, path: Path) -> Path:
    """Write ``nb`` as HTML to ``path`` with formulas typeset offline (the students' page:
    :func:`xaikit.course.pages.export_page`).

    nbconvert's default page loads MathJax from a CDN, so without a network every ``$...$`` stays raw
    text. Here the page loads a local MathJax 2 copied next to it (``<folder>/mathjax/``, or
    ``<folder>/xaikit-mathjax/`` where a ``mathjax/`` folder there is not xaikit's: :func:`offline_folder`) from
    the ``jupyter-server-mathjax`` package on PyPI, which is what Jupyter Server itself serves it from.
    """
    from nbconvert import HTMLExporter

    path = Path(path)
    ensure_folder(path.parent, "the pages' folder")
    url = offline_mathjax(path.parent)
    page = _page(nb)
    import jinja2

    # the page's title: the notebook's own first heading (nbconvert's default is the word "Notebook")
    exporter = HTMLExporter(mathjax_url=url, template_file="xaikit_page.html.j2",
                            extra_loaders=[jinja2.DictLoader({"xaikit_page.html.j2": _PAGE_TEMPLATE})])
    body, _ = exporter.from_notebook_node(page, resources={"metadata": {"name": page_title(nb)}})
    return write_export(path, body, "page")


#: nbconvert's lab page without require.js, which it loads from a CDN for a widget manager that a page of
#: still pictures (:func:`static_pictures`) does not have: the page asks no server for anything
_PAGE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
"""


def _page(nb):
    """``nb`` as a page or slide show shows it: still pictures for widgets (:func:`static_pictures`), no
    Colab setup cell."""
    page = static_pictures(nb)
    from xaikit.course.colab import MARK

    # the Colab setup cell is collapsed in Colab and Jupyter; a page cannot collapse it, and it does nothing there
    page.cells = [c for c in page.cells if not (c.cell_type == "code" and c.source.startswith(MARK))]
    return page


def page_title(nb) -> str:
    """The text of the notebook's first Markdown heading (``# 02 · Integrated Gradients`` gives
    "02 · Integrated Gradients"), or "xaikit notebook" when it has none."""
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for line in cell.source.splitlines():
            found = re.match(r"\s*#{1,6}\s+(.+?)\s*#*\s*$", line)
            if found:
                return re.sub(r"[*_`]", "", found.group(1)).strip()
    return "xaikit notebook"


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def static_pictures(nb):
    """A copy of ``nb`` without live widget views, for a page that has no kernel and no widget manager
    (nbconvert would load one from a CDN; a widget view there is empty space). Each panel output keeps
    its still picture (``widgets.base.Panel._repr_mimebundle_``), redrawn from the notebook's saved widget
    state when it has one: the figure, status line and HTML area as the panel showed them *last* (a later
    cell's ``set()`` included), which is what the live widget shows after a run. A progress bar (tqdm.auto's
    widget) shows how it ended (:func:`_progress_state`), not the "0%" of its text; a widget closed or hidden
    by the end of the run (a finished bar with ``leave=False``) is left out, as Jupyter shows it. HTML outputs
    get valid colours (:func:`repair_numpy_css`). The widget state goes too, so the page loads no widget
    manager."""
    from xaikit.widgets.base import PANEL_METADATA, still_html

    nb = copy.deepcopy(nb)
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for cell in nb.cells:
        kept = []
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if isinstance(data.get("text/html"), str) and "np." in data["text/html"]:
                data["text/html"] = repair_numpy_css(data["text/html"])
            view = data.pop(WIDGET_VIEW, None)
            kept.append(out)
            if view and not ({"image/png", "text/html"} & set(data)):
                model_id = view.get("model_id", "")
                if state and (model_id not in state or _hidden(state, model_id)):
                    kept.pop()  # closed or hidden by the end of the run (a tqdm bar with leave=False): gone in Jupyter too
                    continue
                bar = _progress_state(state, model_id)
                if bar is not None:  # a tqdm bar as it ended, not the "0%" its text had when displayed
                    data["text/plain"], data["text/html"] = bar
                continue
            if not view:
                continue
            last = _panel_state(state, view.get("model_id", ""))
            if last is None:
                continue  # no saved state: the picture taken at display time stays
            png, status, extra = last
            if png:
                data["image/png"] = png
            data["text/html"] = still_html(png, status, extra, name=out.get("metadata", {}).get(PANEL_METADATA, ""))
        if "outputs" in cell:
            cell.outputs = kept
    nb.metadata.pop("widgets", None)
    return nb


_NUMPY_SCALAR = re.compile(r"\bnp\.(?:float|int|uint)(?:16|32|64|128)?\((-?[0-9.]+(?:[eE][-+]?[0-9]+)?)\)")


def repair_numpy_css(html_text: str) -> str:
    """``html_text`` with NumPy 2 scalar reprs such as ``np.float64(255.0)`` replaced by the number.

    SHAP 0.51's ``shap.plots.text`` writes its colours as ``rgb(np.float64(255.0), ...)`` under NumPy 2
    (shap/shap#4146, fixed upstream after 0.51): invalid CSS, so every bar of its force plot is drawn
    black and no token gets its colour. With the numbers written plainly the red and blue come back."""
    return _NUMPY_SCALAR.sub(r"\1", html_text)


def _hidden(state: dict, model_id: str) -> bool:
    """Whether widget ``model_id`` was hidden by its layout when the state was saved (tqdm hides a finished
    bar with ``leave=False`` that way under ipywidgets 8, as well as closing it)."""
    layout = str(state.get(model_id, {}).get("state", {}).get("layout", "")).removeprefix("IPY_MODEL_")
    fields = state.get(layout, {}).get("state", {})
    return fields.get("visibility") == "hidden" or fields.get("display") == "none"


def _progress_state(state: dict, model_id: str) -> tuple[str, str] | None:
    """``(text, HTML)`` of the progress bar whose box is widget ``model_id`` in a notebook's saved widget
    state, as it ended: tqdm.auto's bar in a kernel is a box of an HTML label, a progress bar and an HTML
    label, and its ``text/plain`` was written when it was displayed (at 0%). None when it is no such box."""
    import html

    model = state.get(model_id, {})
    children = [state.get(str(c).removeprefix("IPY_MODEL_"), {}) for c in model.get("state", {}).get("children", [])]
    names = [c.get("model_name", "") for c in children]
    bars = [i for i, name in enumerate(names) if name in ("FloatProgressModel", "IntProgressModel")]
    if not bars:
        return None
    fields = children[bars[0]].get("state", {})
    value, top = float(fields.get("value") or 0), float(fields.get("max") or 0)

    def label(child):
        return html.unescape(str(child.get("state", {}).get("value", ""))) if child.get("model_name") == "HTMLModel" else ""

    left = " ".join(label(c) for c in children[:bars[0]]).replace("\u2007", " ").strip()
    right = " ".join(label(c) for c in children[bars[0] + 1:]).replace("\u2007", " ").strip()
    filled = round(10 * value / top) if top > 0 else 0
    text = f"{left}|{'#' * filled}{' ' * (10 - filled)}| {right}".strip()
    page = (f'<div class="xk-progress"><span>{html.escape(left)}</span> <progress value="{value:g}" '
            f'max="{top:g}"></progress> <span>{html.escape(right)}</span></div>')
    return text, page


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _panel_state(state: dict, model_id: str) -> tuple[str | None, str, str] | None:
    """``(figure PNG as base64 or None, status HTML, HTML area)`` of the panel whose outer box is widget
    ``model_id`` in a notebook's saved widget state (its children with CSS classes ``xk-figure``,
    ``xk-status`` and ``xk-html``), or None when the state does not hold that panel."""
    found: dict[str, object] = {}

    def walk(mid: str, depth: int) -> None:
        model = state.get(mid)
        if model is None or depth > 5:
            return
        fields = model.get("state", {})
        classes = fields.get("_dom_classes", [])
        if "xk-figure" in classes:
            found["png"] = next((b["data"] for b in model.get("buffers", []) if b.get("path") == ["value"]
                                 and b.get("encoding", "base64") == "base64"), None)
        for name in ("xk-status", "xk-html"):
            if name in classes:
                found[name] = fields.get("value", "")
        for child in fields.get("children", []):
            walk(str(child).removeprefix("IPY_MODEL_"), depth + 1)

    walk(model_id, 0)
    if not found:
        return None
    return found.get("png"), str(found.get("xk-status", "")), str(found.get("xk-html", ""))


def offline_mathjax(folder: Path) -> str:
    """Copy MathJax into ``folder/mathjax`` (once per package version, through :func:`offline_folder`, which
    never deletes a ``mathjax/`` folder xaikit did not write: it then uses ``folder/xaikit-mathjax``) and return
    the page-relative URL that loads it."""
    import shutil
    from importlib.metadata import version

    try:
        import jupyter_server_mathjax
    except ImportError:
        raise ImportError("exporting HTML with formulas needs MathJax: pip install jupyter-server-mathjax "
                          "(it is in xaikit's notebooks extra and requirements.lock)") from None
    source = Path(jupyter_server_mathjax.__file__).parent / "static"
    want = f"{version('jupyter-server-mathjax')} {hashlib.sha256(_MATHJAX_LOCAL_CONFIG.encode()).hexdigest()[:12]}"

    def fill(tmp: Path) -> None:
        shutil.copytree(source, tmp, dirs_exist_ok=True)
        (tmp / "config" / "local").mkdir(parents=True, exist_ok=True)
        (tmp / "config" / "local" / "xaikit.js").write_text(_MATHJAX_LOCAL_CONFIG, encoding="utf-8")

    name = offline_folder(folder, "mathjax", ".xaikit-mathjax-version", want, fill, "MathJax")
    return f"{name}/MathJax.js?config={MATHJAX_CONFIG}"


#: the folders :func:`offline_folder` already said it wrote beside (said once per process)
_SAID_BESIDE: set[Path] = set()


def offline_folder(folder: Path, name: str, stamp_name: str, want: str, fill, what: str) -> str:
    """Make ``folder/name`` hold a copy of ``what`` (MathJax, reveal.js) that ``fill(tmp)`` writes into an empty
    temporary folder, and return the page-relative name of the folder that holds it.

    A folder xaikit wrote carries the file ``stamp_name`` (its text ``want`` names the version copied): one of
    this version is used as it is, one of another version is replaced (through a temporary folder renamed
    into place, so an interrupted copy is never used). **A folder xaikit did not write** (no stamp; an
    instructor's own reveal.js with its theme) **is never touched**: the copy goes beside it into
    ``folder/xaikit-<name>``, with a note saying so; if that too is someone else's, FileExistsError names both."""
    import shutil
    import tempfile

    folder = Path(folder)
    for candidate in (name, f"xaikit-{name}"):
        target = folder / candidate
        stamp = target / stamp_name
        if not os.path.lexists(target):
            break
        if target.is_dir() and not target.is_symlink() and stamp.is_file():
            if stamp.read_text(encoding="utf-8", errors="replace") == want:
                return candidate
            break  # xaikit's copy of another version: replaced below
    else:
        raise FileExistsError(
            f"{folder / name} and {folder / f'xaikit-{name}'} are not xaikit's copies of {what} (neither holds "
            f"{stamp_name}), so neither is replaced: write the pages into another folder, or move one of them away")
    if candidate != name and (folder / name) not in _SAID_BESIDE:
        _SAID_BESIDE.add(folder / name)
        print(f"note: {folder / name} is not xaikit's copy of {what} (it has no {stamp_name}), so it is left as it "
              f"is; the pages here use xaikit's copy in {target}", file=sys.stderr, flush=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{candidate}-", suffix=".tmp", dir=folder))
    try:
        fill(tmp)
        (tmp / stamp_name).write_text(want, encoding="utf-8")
        if target.is_dir() and not target.is_symlink() and (target / stamp_name).is_file():
            old = Path(tempfile.mkdtemp(prefix=f".{candidate}-old-", suffix=".tmp", dir=folder))
            try:  # xaikit's copy of another version: moved out of the way, then deleted
                os.replace(target, old / candidate)
            except OSError:
                pass  # another process moved it first
            shutil.rmtree(old, ignore_errors=True)
        try:
            tmp.rename(target)
        except OSError:  # another process (a second test worker) put its copy there first
            stamp = target / stamp_name
            if not (stamp.is_file() and stamp.read_text(encoding="utf-8", errors="replace") == want):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return candidate
