"""A student's own copies of the lecture notebooks: ``xaikit notebooks copy [DIR]``.

The lecture notebooks in a checkout (``notebooks/NN_name.py`` and the ``.ipynb`` built from it) are the
course's files: running one in Jupyter wrote outputs into the committed ``.ipynb`` and a kernelspec into the
``.py`` header, so one run would dirty the checkout. A student works in a copy instead:
``bash scripts/start.sh`` copies the lectures into ``my-notebooks/`` (git-ignored) and opens JupyterLab
there; ``xaikit notebooks copy DIR`` does the same into any folder, and works from a pip-installed xaikit too,
which carries the built notebooks as package data (:data:`xaikit.course.notebooks.PACKAGED`).

A copy is a plain ``.ipynb`` (no jupytext pairing, so saving writes that one file) with the kernelspec of
the default Python kernel, ``python3``, which ``start.sh`` points at the project's ``.venv`` (see
``jupyter/README.md``) and which any Jupyter that has ipykernel in xaikit's environment has.

**A copy is never overwritten once its owner changed it.** Each copy records, in its notebook metadata
(``metadata.xaikit.copy``), the lecture it came from and the SHA-256 of the content it was written with
(:func:`xaikit.course.notebooks.content_digest`: cells, their metadata and pasted images, and the notebook's
metadata; not outputs, execution counts or what running and saving add). On the next copy, per notebook:

* no file there: the lecture is written;
* the file's content is the lecture's current content: left as it is (outputs and all);
* the file is as it was written (its content matches its record) and the lecture changed since: the file
  is replaced by the new version (only outputs, which come back on the next run, are not kept);
* its owner changed it and the lecture is as it was when copied: left as it is, nothing to say;
* otherwise (its owner changed it, it has no record, or it cannot be read): it is kept as it is. If the
  lecture differs from it, the lecture's current version is written beside it as ``NN_name-new.ipynb``
  (which follows the same rules: a ``-new`` copy its owner changed is kept too), and the command says so.
  ``force=True`` (``--force``) instead copies the file to ``backup-NN_name-<time>.ipynb`` and replaces it.

Only the standard library is needed to copy (a wheel installed without the ``[notebooks]`` extra can copy;
running the copies needs Jupyter). In a checkout with jupytext, each copy is made from the ``.py`` source.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from xaikit._validate import bool_flags
from xaikit.course import notebooks as _nbtools

#: the kernelspec every copy carries: the default Python kernel, as ipykernel itself names it (JupyterLab
#: writes the running kernel's spec into the notebook; an equal one leaves the notebook unmodified)
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
#: the folder ``start.sh`` copies into, in the checkout (git-ignored)
DEFAULT_DIR = "my-notebooks"
#: the suffix of a lecture's new version, written beside a copy its owner changed
NEW = "-new"


def language_info() -> dict:
    """The ``language_info`` that ipykernel reports for this Python, which JupyterLab writes into a notebook
    when its kernel starts: a copy that already holds it is not marked unsaved on opening."""
    return {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
            "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
            "pygments_lexer": "ipython3", "version": sys.version.split()[0]}


@dataclass
class Copied:
    """What :func:`copy_notebooks` did with one lecture: ``action`` is "written" (a new copy), "updated"
    (an unchanged copy replaced by the lecture's new version), "current" (the copy has the lecture's
    content), "yours" (its owner changed it, and the lecture is as it was when copied), "kept" (its owner
    changed it and the lecture changed too: the copy is kept, ``beside`` is where the new version went, if
    anywhere) or "replaced" (``--force``; ``backup`` holds the old file)."""

    name: str
    target: Path
    action: str
    message: str = ""
    beside: Path | None = None
    backup: Path | None = None


class _Node(dict):
    """A dict whose keys read as attributes, the way :func:`content_digest` reads an nbformat node."""

    __getattr__ = dict.get


def _node(obj):
    if isinstance(obj, dict):
        node = _Node((k, _node(v)) for k, v in obj.items())
        if isinstance(node.get("source"), list):  # the .ipynb format may split a cell's source into lines
            node["source"] = "".join(node["source"])
        return node
    if isinstance(obj, list):
        return [_node(v) for v in obj]
    return obj


def digest(nb: dict) -> str:
    """:func:`xaikit.course.notebooks.content_digest` of a notebook read as plain JSON."""
    return _nbtools.content_digest(_node(nb))


def lectures(names: list[str] | None = None) -> list[tuple[str, dict]]:
    """``(stem, notebook as JSON)`` of each lecture notebook: built from its ``.py`` in a checkout with
    jupytext, else the ``.ipynb`` in the checkout or the one a pip-installed xaikit carries."""
    if isinstance(names, str):
        names = [names]
    folder = _nbtools.lecture_folder()
    found = {p.stem: p for p in sorted(folder.glob("[0-9][0-9]_*.ipynb"))}
    sources = {p.stem: p for p in sorted(folder.glob("[0-9][0-9]_*.py"))}
    try:
        import jupytext  # noqa: F401 - only to know whether the sources can be read
    except ImportError:
        sources = {}
    stems = sorted(set(found) | set(sources))
    if names:
        _nbtools.check_names(names, stems)
        stems = [s for s in stems if any(s == n or s.startswith(n) for n in names)]
        if not stems:
            raise _nbtools.NotebookNotFoundError(
                f"no notebook matches {names}; have {sorted(set(found) | set(sources))}")
    out = []
    for stem in stems:
        if stem in sources:
            text = _nbtools._dump(_nbtools.to_notebook(sources[stem]))
        elif stem in found:
            text = found[stem].read_text(encoding="utf-8")
        else:
            raise _nbtools.NotebookNotFoundError(f"{stem}.py needs jupytext to be read: pip install jupytext")
        out.append((stem, json.loads(text)))
    return out


def student_copy(stem: str, nb: dict) -> str:
    """The text of ``nb`` as a student's copy: the kernelspec of the default Python kernel and the
    ``language_info`` of this Python (what JupyterLab would write on opening it), no jupytext pairing, no
    outputs, and the record of its content (``metadata.xaikit.copy``)."""
    nb = json.loads(json.dumps(nb))
    meta = nb.setdefault("metadata", {})
    meta["kernelspec"] = dict(KERNELSPEC)
    meta["language_info"] = language_info()
    meta.pop("jupytext", None)
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    info = meta.get("xaikit") if isinstance(meta.get("xaikit"), dict) else {}
    meta["xaikit"] = {**info, "copy": {"lecture": stem, "content_sha256": digest(nb)}}
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _state(path: Path, lecture_digest: str) -> tuple[str, str]:
    """``(state, why)`` of the file at ``path``: "absent", "current" (the lecture's content), "as written"
    (unchanged since a copy wrote it), "yours" (changed by its owner, and the lecture is as it was when
    copied) or "changed" (changed, and so was the lecture, or no record; ``why`` says how)."""
    if not path.exists():
        return "absent", ""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        mine = digest(nb)
        record = (nb.get("metadata", {}).get("xaikit") or {}).get("copy") or {}
    except (OSError, ValueError, TypeError, AttributeError) as err:
        return "changed", f"it cannot be read as a notebook ({type(err).__name__})"
    if mine == lecture_digest:
        return "current", ""
    recorded = record.get("content_sha256") if isinstance(record, dict) else None
    if recorded is None:
        return "changed", "it has no record of being copied by xaikit"
    if mine == recorded:
        return "as written", ""
    if recorded == lecture_digest:
        return "yours", "you changed it since it was copied"
    return "changed", "you changed it since it was copied, and the lecture changed too"


@bool_flags
def copy_notebooks(dest: str | Path, names: list[str] | None = None, force: bool = False,
                   verbose: bool = True) -> list[Copied]:
    """Copy the lecture notebooks (or those ``names`` picks) into the folder ``dest`` as the student's own
    ``.ipynb`` files, never overwriting one its owner changed (see the module docstring)."""
    if not isinstance(force, bool):
        raise TypeError(f"force must be True or False, got {type(force).__name__} {force!r}")
    if not str(dest).strip():  # "" from an unset shell variable would mean the current folder
        raise ValueError("the folder to copy into is empty (an unset shell variable?); name it, e.g. "
                         "`xaikit notebooks copy my-notebooks 01`")
    dest = Path(dest).expanduser()
    if dest.exists() and not dest.is_dir():
        raise NotADirectoryError(f"{dest} is a file, not a folder: name a folder to copy the notebooks into")
    todo = lectures(names)
    made = not dest.exists()
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except PermissionError:
        raise PermissionError(f"cannot make the folder {dest}: permission denied; name a folder you may write to, "
                              f"e.g. one in your home folder (`xaikit notebooks copy ~/my-notebooks`)") from None
    try:
        done = _copy_each(dest, todo, force, verbose)
    except BaseException as err:
        if made and not any(dest.iterdir()):
            dest.rmdir()  # made here for copies none of which was written: no empty folder is left
        if isinstance(err, PermissionError):
            raise PermissionError(f"cannot write into the folder {dest}: permission denied (it is read-only, or "
                                  f"not yours); nothing was changed there for the notebook that failed. Name a "
                                  f"folder you may write to, e.g. `xaikit notebooks copy ~/my-notebooks`") from None
        raise
    if verbose:
        words = {"written": "new", "updated": "updated to the new lecture", "current": "up to date",
                 "yours": "changed by you, kept", "kept": "changed by you, kept, new lecture version beside",
                 "replaced": "replaced (--force)"}
        summary = ", ".join(f"{n} {w}" for a, w in words.items() if (n := sum(c.action == a for c in done)))
        print(f"xaikit notebooks copy: {len(done)} notebook(s) in {dest} ({summary})", flush=True)
    return done


def _copy_each(dest: Path, todo: list[tuple[str, dict]], force: bool, verbose: bool) -> list[Copied]:
    done = []
    for stem, nb in todo:
        text = student_copy(stem, nb)
        want = digest(nb)
        target = dest / f"{stem}.ipynb"
        state, why = _state(target, want)
        if state == "absent":
            _nbtools.write_text_atomic(target, text)
            result = Copied(stem, target, "written")
        elif state == "current":
            result = Copied(stem, target, "current")
        elif state == "yours" and not force:
            result = Copied(stem, target, "yours")  # the lecture is as it was copied: nothing new to offer
        elif state == "as written":
            _nbtools.write_text_atomic(target, text)
            result = Copied(stem, target, "updated", f"{target}: the lecture changed and you had not changed "
                                                     "your copy: it now holds the new version")
        elif force:
            saved = _nbtools.backup(target)
            _nbtools.write_text_atomic(target, text)
            result = Copied(stem, target, "replaced", f"{target}: {why}; replaced by the lecture (--force), "
                                                      f"your version is in {saved.name}", backup=saved)
        else:
            beside = dest / f"{stem}{NEW}.ipynb"
            state_new, why_new = _state(beside, want)
            if state_new in ("absent", "as written"):
                _nbtools.write_text_atomic(beside, text)
            if state_new == "changed":
                note = (f"the lecture's current version was not written beside it either: {beside.name} is "
                        f"there and {why_new.replace('you changed it', 'you changed that one')}")
                result = Copied(stem, target, "kept", f"{target} was kept as it is ({why}); {note}. Rerun with "
                                                      "--force to replace it (a backup is made first)")
            else:
                result = Copied(stem, target, "kept",
                                f"{target} was kept as it is ({why}); the lecture's current version is beside "
                                f"it in {beside.name}. To replace yours instead, rerun with --force (a backup "
                                "is made first)", beside=beside)
        if verbose and result.message:
            print(result.message, file=sys.stderr if result.action == "kept" else sys.stdout, flush=True)
        done.append(result)
    return done


_NAME = re.compile(r"^\d\d(_\w+)?$")


def looks_like_a_name(word: str) -> bool:
    """Whether ``word`` reads as a notebook name or number ("01", "02_integrated_gradients")."""
    return bool(_NAME.match(word))
