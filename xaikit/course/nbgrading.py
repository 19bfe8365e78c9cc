"""The lecture notebooks as an nbgrader course: ``python -m xaikit homework nbgrader [NN ...] --out DIR``.

The notebooks carry nbgrader's cell metadata (schema 3; see :mod:`xaikit.course.homework`): per exercise a
locked task cell, a solution cell, a grade cell with points and, where later code uses the function, a
locked cell. :func:`make_course` lays them out the way nbgrader expects (its "managing assignment files"
guide): one assignment per lecture notebook, ``DIR/source/NN_name/NN_name.ipynb``, and a
``DIR/nbgrader_config.py`` that calls :func:`configure`. Then, in ``DIR``::

    nbgrader generate_assignment 01_gradients      # release/01_gradients/: the student version
    nbgrader autograde 01_gradients                # submitted/<student>/01_gradients/ -> gradebook.db

**What the grader runs.** Each grade cell is the check the student sees,
``assert check_gradsam(my_gradsam)``, plus a hidden test (``### BEGIN HIDDEN TESTS``, removed from the
student version, put back by ``autograde``): ``assert check_gradsam(my_gradsam, verbose=False).passed``. A
stub passes the first (the check says NOT WRITTEN YET and the sheet runs on, see
:mod:`xaikit.course.checks`) and fails the second, so a blank submission scores zero on every exercise while
it still runs to the end: later cells use xaikit's reference for an ``@exercise`` function left as a stub,
and nbgrader runs on past a failing cell (its ``Execute.allow_errors``). nbgrader gives a grade cell no
points when it raises or writes to stderr (``nbgrader.utils.determine_grade``): a wrong ``@exercise`` passes
the first assert too (so the sheet runs on, later cells on the reference), but its check's report goes to
stderr, so the cell scores zero, in ``nbgrader validate`` as in ``autograde``, even before the hidden test.

:func:`configure` sets what these notebooks need beyond nbgrader's defaults: a cell may run for 600 s
(nbgrader's default, 30 s, is less than training a model takes), and the stub is the one ``homework build``
writes. Nothing else: the written answers (``<details class="xk-answer">``) are marked the way nbgrader
itself reads them, a solution region in a manually graded answer cell (see :mod:`xaikit.course.homework`), so
a course with nbgrader's stock configuration (``nbgrader quickstart``) hands out no answer either; its
``ClearSolutions`` leaves ``YOUR ANSWER HERE`` in their place and keeps the question.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from xaikit._validate import bool_flags

if TYPE_CHECKING:
    from traitlets.config import Config

#: seconds a cell may run when nbgrader executes a notebook (``Execute.timeout``; nbgrader's default is 30)
CELL_TIMEOUT = 600

CONFIG = '''\
# nbgrader's configuration for the xaikit lecture notebooks, written by `python -m xaikit homework nbgrader`.
# See xaikit/course/nbgrading.py; add your own settings (course id, exchange, students) below.
from xaikit.course.nbgrading import configure

c = get_config()  # noqa: F821 - nbgrader defines get_config when it reads this file
configure(c)
'''


def configure(c: Config) -> None:
    """Set nbgrader's config object ``c`` (the ``c`` of ``nbgrader_config.py``) for the lecture notebooks: a
    cell timeout of :data:`CELL_TIMEOUT` seconds, and ``homework build``'s stub for a solution block. (The
    written answers need nothing here: nbgrader's own ``ClearSolutions`` removes them.)"""
    from xaikit.course.cutting import STUB_COMMENT, STUB_MESSAGE

    c.Execute.timeout = CELL_TIMEOUT
    c.ClearSolutions.code_stub = {"python": f"{STUB_COMMENT}\nraise NotImplementedError({STUB_MESSAGE!r})"}


@dataclass
class Course:
    """What :func:`make_course` wrote: the course folder, its assignments, and the files it kept."""

    root: Path
    assignments: list[str] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)


@bool_flags
def make_course(out: str | Path, names: list[str] | None = None, force: bool = False,
                verbose: bool = True) -> Course:
    """Write an nbgrader course folder at ``out``: ``source/NN_name/NN_name.ipynb`` for each lecture
    notebook with nbgrader metadata (or those ``names`` picks) and ``nbgrader_config.py``.

    A file already there with other contents (an instructor's edits) is kept and listed in
    :attr:`Course.kept`, unless ``force``, which first copies it to ``backup-<name>-<time>`` beside it.
    """
    import nbformat

    from xaikit.course.cutting import nbgrader_problems, uses_nbgrader
    from xaikit.course.export import ensure_folder
    from xaikit.course.homework import _source_notebook, sources
    from xaikit.course.notebooks import _dump, backup, write_text_atomic

    course = Course(ensure_folder(out, "--out", make=False))
    paths = sources(names)  # before the folder is made: none is made when there are no notebooks
    files: list[tuple[Path, str]] = [(course.root / "nbgrader_config.py", CONFIG)]
    for path in paths:
        nb = _source_notebook(path)
        if not uses_nbgrader(nb):
            if names and verbose:
                print(f"{path.stem}: no nbgrader metadata, no exercise to grade; skipped")
            continue
        problems = nbgrader_problems(nb, path.name)
        if problems:
            raise ValueError(f"{path.name}: nbgrader would reject its metadata:\n  " + "\n  ".join(problems))
        nbformat.validate(nb)
        files.append((course.root / "source" / path.stem / f"{path.stem}.ipynb", _dump(nb)))
        course.assignments.append(path.stem)
    course.root.mkdir(parents=True, exist_ok=True)  # after every notebook was read and checked
    for target, text in files:
        if target.exists() and target.read_text(encoding="utf-8", errors="replace") != text:
            if not force:
                course.kept.append(target)
                continue
            saved = backup(target)
            if verbose:
                print(f"{target}: changed since it was written; your version is saved as {saved.name}")
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(target, text)
    if verbose:
        # nbgrader must be this environment's (the config imports xaikit) with its alembic on PATH
        print(f"nbgrader course in {course.root}: {len(course.assignments)} assignment(s), "
              f"{', '.join(course.assignments)}. With this environment active (`source "
              f"{Path(sys.executable).parent / 'activate'}`), in that folder: `nbgrader generate_assignment NAME`, "
              "then `nbgrader autograde NAME`.")
        if importlib.util.find_spec("nbgrader") is None:
            print("note: nbgrader is not installed here: `pip install nbgrader` (this repository's dev extra has it)")
    return course
