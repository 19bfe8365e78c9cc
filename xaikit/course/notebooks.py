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
always written without them. A notebook's content and its digest are :mod:`xaikit.course.content`; writing a
notebook as a page is :mod:`xaikit.course.export`.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from xaikit._files import backup, write_text_atomic
from xaikit._validate import bool_flags
from xaikit.course.content import (  # noqa: F401  (the content's names, re-exported where users import them)
    CONTENT,
    VOLATILE_CELL_METADATA,
    VOLATILE_NOTEBOOK_METADATA,
    _differences,
    _entry,
    _mtime,
    _recorded_as,
    _split_entry,
    attachments,
    cells_digest,
    content_digest,
    notebook_metadata,
)
from xaikit.course.export import (  # noqa: F401  (the export's names, re-exported where users import them)
    MATHJAX_CONFIG,
    WIDGET_STATE,
    WIDGET_VIEW,
    ensure_folder,
    execute,
    export_html,
    offline_folder,
    offline_mathjax,
    page_title,
    repair_numpy_css,
    static_pictures,
)

if TYPE_CHECKING:
    from nbformat import NotebookNode


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


def check_names(names: list[str] | None, stems: Iterable[str]) -> None:
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


def to_notebook(source: Path) -> NotebookNode:
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


def sources_match(names: str | list[str] | None) -> bool:
    """Whether ``names`` match at least one source (:func:`sources` raises when none does)."""
    try:
        return bool(sources(names))
    except NotebookNotFoundError:
        return False

