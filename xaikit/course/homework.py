"""Homework sheets cut from the lecture notebooks: one source, two sheets, nothing kept by hand.

Each lecture notebook (``notebooks/NN_name.py``, jupytext ``py:percent``; or the built ``.ipynb`` when
there is no source) is the single source of two generated notebooks, in the spirit of fastbook's
``tools/clean.py``, read from the same markers and cell metadata that nbgrader reads (a course that runs
nbgrader generates and autogrades the same notebooks, see :mod:`xaikit.course.nbgrading`):

* ``exercises/NN_name.ipynb``: every code region between the comment lines ``### BEGIN SOLUTION`` and
  ``### END SOLUTION`` becomes ``# YOUR CODE HERE`` plus ``raise NotImplementedError(...)`` (at the
  indentation of the marker, so a function body stays a function body; a function marked
  ``@exercise(check)`` then runs xaikit's reference with a note, so the sheet runs to the end, see
  :mod:`xaikit.course.checks`), and every written answer is replaced by ``YOUR ANSWER HERE`` (see
  "Written answers" in :mod:`xaikit.course.cutting`; an unmarked ``<details class="xk-answer">...</details>`` is removed, a question
  written in its ``<summary>`` kept as plain text). Code between ``### BEGIN HIDDEN TESTS`` and
  ``### END HIDDEN TESTS`` (nbgrader's hidden tests: the grader's strict ``check(...).passed``, which a stub
  fails) is removed, and the cells nbgrader locks are locked the way nbgrader's ``LockCells`` does it
  (``editable``/``deletable`` false in the cell metadata, which Jupyter honours without nbgrader).
* ``solutions/NN_name.ipynb``: the full notebook, answers kept.

Both are written without outputs. ``python -m xaikit homework build [NN ...] [--out DIR]`` writes them
under ``DIR`` (default: the repository root); ``exercises/`` and ``solutions/`` are build outputs, not
committed. Students check their stubs with :mod:`xaikit.course.checks`.

**A rebuild never overwrites a sheet someone changed.** Each sheet records the SHA-256 of the content it
was written with (every cell's type, source, metadata such as tags, and pasted images, and the notebook's
metadata: :func:`xaikit.course.notebooks.content_digest`) in its notebook metadata
(``metadata.xaikit.content_sha256``; sheets of an older xaikit hold ``cells_sha256``, types and sources
only). A sheet on disk whose content no longer matches that record (a student filled in a stub, added a
note, tagged a cell or pasted an image), or that has no record, or cannot be read, is left as it is: the
other sheets are written, the changed ones are listed, and :func:`build` raises :class:`SheetChangedError`
(the command exits with status 1). Outputs and metadata that running or saving a sheet adds do not count
as changes. ``force=True``
(``--force``) copies each changed sheet to ``backup-NN_name-<time>.ipynb`` beside it, then overwrites it.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path

from xaikit._validate import bool_flags
from xaikit.course.cutting import (  # noqa: F401  (the cutting's names, re-exported where users import them)
    _DETAILS,
    _SUMMARY,
    ANSWER_BEGIN,
    ANSWER_END,
    BEGIN,
    END,
    HIDDEN_BEGIN,
    HIDDEN_END,
    STUB_COMMENT,
    STUB_MESSAGE,
    TEXT_STUB,
    _nbgrader,
    lock_cells,
    nbgrader_problems,
    strip_answers,
    strip_hidden_tests,
    stub_solutions,
    student_code,
    student_markdown,
    uses_nbgrader,
)
from xaikit.course.notebooks import NotebookNotFoundError


@dataclass(frozen=True)
class Exercise:
    """A homework exercise: the function a notebook's solution block defines and the check that grades it."""

    notebook: str   # number prefix, e.g. "03"
    function: str   # the name the solution block defines
    check: str      # the xaikit.course.checks function that grades it
    topic: str


#: the exercises the homework must cover (IG Riemann sum, Grad-SAM, SHAP vs Grad-SAM and [CLS],
#: two heads of two layers, a CAV and its TCAV score, scaled dot-product attention).
EXERCISES = (
    Exercise("01", "my_grad_times_input", "check_grad_times_input", "gradient x input"),
    Exercise("02", "my_ig", "check_ig_riemann", "the IG Riemann sum"),
    Exercise("03", "my_attention", "check_attention", "scaled dot-product attention"),
    Exercise("04", "my_gradsam", "check_gradsam", "Grad-SAM"),
    Exercise("04", "cls_share", "check_cls_share", "SHAP vs Grad-SAM: why [CLS] tops Grad-SAM"),
    Exercise("04", "plot_heads", "check_head_plots", "one head of each of two layers"),
    Exercise("04", "capture_attention_grads", "check_attention_grads",
             "homework 1: capture the attention and its gradient yourself"),
    Exercise("05", "my_cav", "check_cav", "a CAV"),
    Exercise("05", "my_tcav_score", "check_tcav_score", "its TCAV score"),
    Exercise("05", "my_rank_p", "check_rank_p", "the rank test's p-value among random concepts"),
    Exercise("07", "my_cav_cosines", "check_cav_cosines", "images' cosines with a CAV, to sort them by it"),
    Exercise("06", "my_rollout", "check_rollout", "attention rollout"),
)


def solution_functions(source: str) -> set[str]:
    """Names of the functions whose body (or definition) lies inside a solution block of ``source``."""
    names: set[str] = set()
    current = None
    inside = False
    for line in source.splitlines():
        stripped = line.strip()
        match = re.match(r"def\s+([A-Za-z_]\w*)\s*\(", stripped)
        if match:
            current = match.group(1)
            if inside:
                names.add(current)
        elif stripped == BEGIN:
            inside = True
            if current:
                names.add(current)
        elif stripped == END:
            inside = False
    return names


def coverage(notebooks_dir: Path | None = None) -> dict[Exercise, str]:
    """For each required exercise, its state in the notebooks:

    * ``"ok"``: a function defined in a solution block is graded by ``xaikit.<check>(...)`` in the notebook
      (in a notebook with nbgrader metadata: the block sits in a solution cell and the check in a grade cell);
    * ``"not autograded"``: as "ok", but the notebook carries nbgrader metadata and the function is not in a
      solution cell or its check not in a grade cell, so nbgrader would not grade it;
    * ``"unchecked"``: the function is in a solution block but the notebook never calls the check on it;
    * ``"not marked"``: the function exists but is not inside a solution block;
    * ``"missing"``: no such function; ``"no notebook"``: that notebook is not written yet.
    """
    notebooks = {path.stem[:2]: _source_notebook(path) for path in sources(None, notebooks_dir)}
    status = {}
    for ex in EXERCISES:
        nb = notebooks.get(ex.notebook)
        if nb is None:
            status[ex] = "no notebook"
            continue
        text = _code_text(nb)
        solved = solution_functions(text)
        graded = set(re.findall(rf"\b{ex.check}\(\s*([A-Za-z_]\w*)", text))
        if solved & graded:
            status[ex] = "ok"
            if uses_nbgrader(nb):
                in_solution_cells = solution_functions(_code_text(nb, "solution"))
                in_grade_cells = set(re.findall(rf"\b{ex.check}\(\s*([A-Za-z_]\w*)", _code_text(nb, "grade")))
                if not solved & graded & in_solution_cells & in_grade_cells:
                    status[ex] = "not autograded"
        elif ex.function in solved:
            status[ex] = "unchecked"
        elif re.search(rf"def\s+{ex.function}\s*\(", text):
            status[ex] = "not marked"
        else:
            status[ex] = "missing"
    return status


def _code_text(nb, kind: str | None = None) -> str:
    """The code of ``nb``'s code cells, or of its nbgrader ``"solution"`` or ``"grade"`` cells only."""
    return "\n".join(c.source for c in nb.cells
                     if c.cell_type == "code" and (kind is None or _nbgrader(c).get(kind)))


class SheetChangedError(FileExistsError):
    """Some sheets on disk were changed since ``homework build`` wrote them, so they were not overwritten."""

    def __init__(self, message: str, paths: list[Path]):
        super().__init__(message)
        self.paths = paths


@dataclass
class Sheet:
    """What :func:`make_sheets` produced for one notebook."""

    name: str
    exercise: object  # nbformat.NotebookNode
    solution: object
    stubs: list[int] = field(default_factory=list)  # indices of exercise cells holding a stub
    answers_removed: int = 0


# --- notebooks ------------------------------------------------------------------------------------------

def _source_notebook(path: Path):
    """The notebook for a jupytext source (``.py``) or a built ``.ipynb``, without outputs."""
    import nbformat

    if path.suffix == ".py":
        from xaikit.course.notebooks import to_notebook

        return to_notebook(path)
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def _header(name: str, kind: str, n_stubs: int):
    if kind == "exercise":
        if n_stubs == 0:
            return _markdown(f"# Exercise sheet: {name}\n\nGenerated from the lecture notebook `{name}`. "
                             "It has no code to write; the questions are yours to answer in your own words.",
                             kind)
        text = (f"# Exercise sheet: {name}\n\n"
                f"Generated from the lecture notebook `{name}`. There {'is' if n_stubs == 1 else 'are'} "
                f"**{n_stubs}** cell{'s' if n_stubs != 1 else ''} marked `{STUB_COMMENT}`: replace the "
                "`raise NotImplementedError(...)` line with your code. Cells that follow an exercise use "
                "your function, and `xaikit.course.checks.check_...(your_function)` tells you what passes or "
                "exactly what differs. Until you have written a function marked `@exercise(...)`, its check "
                "says NOT WRITTEN YET and the cells that call it use xaikit's reference and print a note, so "
                "Run All reaches the end and the notes list what is left. A function that fails its check is "
                "treated the same way: the check names the mistake (in red) and the cells after it use the "
                "reference until it passes. Each written question has `YOUR ANSWER HERE` under it: answer in "
                "your own words.")
    else:
        text = (f"# Solution sheet: {name}\n\nThe full lecture notebook `{name}` with every solution and "
                "answer, for instructors and for after the deadline.")
    return _markdown(text, kind)


def _markdown(text: str, kind: str):
    import nbformat

    cell = nbformat.v4.new_markdown_cell(text)
    cell.metadata["xaikit"] = {"generated": kind}
    return cell


def make_sheets(path: Path) -> Sheet:
    """The exercise and solution notebooks for one lecture notebook source."""
    path = Path(path)
    name = path.stem
    nb = _source_notebook(path)
    problems = nbgrader_problems(nb, path.name)
    if problems:
        raise ValueError("the notebook's nbgrader metadata does not fit its markers:\n  " + "\n  ".join(problems))
    exercise = copy.deepcopy(nb)
    lock_cells(exercise)
    stubs: list[int] = []
    answers = 0
    for index, cell in enumerate(exercise.cells):
        if cell.cell_type == "code":
            cell.source, n = student_code(cell.source, where=f"{path.name}, cell {index}")
            if n:
                stubs.append(index)
        elif cell.cell_type == "markdown":
            cell.source, n = student_markdown(cell.source, where=f"{path.name}, cell {index}")
            answers += n
    solution = copy.deepcopy(nb)
    exercise.cells.insert(0, _header(name, "exercise", len(stubs)))
    solution.cells.insert(0, _header(name, "solution", len(stubs)))
    from xaikit.course.notebooks import cells_digest, content_digest

    for kind, sheet in (("exercise", exercise), ("solution", solution)):
        sheet.nbformat, sheet.nbformat_minor = 4, max(int(sheet.get("nbformat_minor", 0)), 5)
        for i, cell in enumerate(sheet.cells):  # fresh, stable cell ids
            cell["id"] = f"{name[:2]}-{i:03d}"
        sheet.metadata["xaikit"] = {"sheet": kind, "source": name, "cells_sha256": cells_digest(sheet),
                                    "content_sha256": content_digest(sheet)}
    return Sheet(name, exercise, solution, [i + 1 for i in stubs], answers)


def changed_since_built(path: Path) -> str | None:
    """Why the sheet at ``path`` must not be overwritten, or None (absent, or its cells are as written)."""
    import nbformat

    from xaikit.course.notebooks import attachments, cells_digest, content_digest

    if not path.exists():
        return None
    try:
        nb = nbformat.read(path, as_version=4)
        content, cells = content_digest(nb), cells_digest(nb)
    except Exception as err:  # noqa: BLE001 - an unreadable sheet may still be someone's work
        return f"it cannot be read as a notebook ({type(err).__name__})"
    info = nb.metadata.get("xaikit", {})
    info = info if isinstance(info, dict) else {}
    if info.get("content_sha256") is not None:  # cells, their metadata (tags, ...), images, notebook metadata
        if content != info["content_sha256"]:
            return "its cells, their metadata (tags, points, ...) or its metadata were changed since it was built"
        return None
    if info.get("cells_sha256") is None:
        return "it has no record of being written by `homework build`"
    if cells != info["cells_sha256"]:  # a sheet of an older xaikit: types and sources only
        return "its cells were changed since it was built"
    if attachments(nb):
        return "it holds images pasted into its cells, which the record of an older xaikit does not cover"
    return None


def sources(names: list[str] | None = None, notebooks_dir: Path | None = None) -> list[Path]:
    """The lecture notebooks to cut sheets from: each ``NN_*.py`` source, or the ``.ipynb`` if no source."""
    from xaikit.course.notebooks import check_names, lecture_folder

    folder = Path(notebooks_dir) if notebooks_dir else lecture_folder()
    found: dict[str, Path] = {p.stem: p for p in sorted(folder.glob("[0-9][0-9]_*.ipynb"))}
    found.update({p.stem: p for p in sorted(folder.glob("[0-9][0-9]_*.py"))})
    paths = [found[k] for k in sorted(found)]
    if isinstance(names, str):  # one name, not its characters ("01" would match every notebook starting "0")
        names = [names]
    if names:
        try:
            check_names(names, found)
        except NotebookNotFoundError as err:
            raise NoNotebookError(str(err)) from None
        paths = [p for p in paths if any(p.stem == n or p.stem.startswith(n) for n in names)]
        if not paths:
            raise NoNotebookError(f"no notebook matches {names}; have {sorted(found)}")
    elif not paths:
        raise NoNotebookError(f"{folder} holds no lecture notebook (NN_name.py or NN_name.ipynb)")
    return paths


class NoNotebookError(NotebookNotFoundError, ValueError):
    """No lecture notebook matches the names asked for, or the folder holds none (a ValueError, as before,
    and a :class:`~xaikit.course.notebooks.NotebookNotFoundError`, which the command line reports)."""


@bool_flags
def build(out: str | Path | None = None, names: list[str] | None = None, notebooks_dir: Path | None = None,
          verbose: bool = True, force: bool = False) -> list[Sheet]:
    """Write ``exercises/NN_*.ipynb`` and ``solutions/NN_*.ipynb`` under ``out`` (default: repo root).

    A sheet changed since it was written is not overwritten (see the module docstring): the others are
    written, then :class:`SheetChangedError` lists the kept ones. ``force=True`` overwrites them after
    copying each to ``backup-NN_name-<time>.ipynb`` in the same folder.
    """
    import nbformat

    from xaikit.course.export import ensure_folder
    from xaikit.course.notebooks import ROOT, _dump, backup, write_text_atomic

    if not isinstance(force, bool):
        raise TypeError(f"force must be True or False, got {type(force).__name__} {force!r}")
    base = Path(out).expanduser() if out is not None else ROOT
    for folder in (base, base / "exercises", base / "solutions"):
        ensure_folder(folder, "--out" if folder == base else "the sheets' folder", make=False)
    paths = sources(names, notebooks_dir)
    # every sheet is cut before any folder is made: a notebook that cannot be cut leaves no empty folder
    made = [make_sheets(path) for path in paths]
    (base / "exercises").mkdir(parents=True, exist_ok=True)
    (base / "solutions").mkdir(parents=True, exist_ok=True)
    sheets, kept = [], []
    for sheet in made:
        for folder, nb in (("exercises", sheet.exercise), ("solutions", sheet.solution)):
            target = base / folder / f"{sheet.name}.ipynb"
            text = _dump(nb)
            if target.exists() and target.read_text(encoding="utf-8", errors="replace") == text:
                continue
            why = changed_since_built(target)
            if why and not force:
                kept.append((target, why))
                continue
            if why:
                saved = backup(target)
                if verbose:
                    print(f"{target}: {why}; your version is saved as {saved.name} (--force)")
            nbformat.validate(nb)
            write_text_atomic(target, text)
        if verbose:
            print(f"{sheet.name}: {len(sheet.stubs)} exercise stub(s), {sheet.answers_removed} hidden "
                  f"answer(s) removed -> {base / 'exercises'}, {base / 'solutions'}")
        sheets.append(sheet)
    if verbose and names is None:
        for ex, state in coverage(notebooks_dir).items():
            if state != "ok":
                print(f"note: exercise {ex.topic!r} (notebook {ex.notebook}, xaikit.{ex.check}): {state}")
    if kept:
        lines = "\n".join(f"  {target}: {why}" for target, why in kept)
        raise SheetChangedError(
            f"{len(kept)} sheet(s) were changed since they were built and were NOT overwritten (nothing of "
            f"yours is lost):\n{lines}\nTo get the new sheets without touching these, build into another "
            f"folder with --out DIR; to replace them, rerun with --force, which first copies each one to "
            f"backup-NN_name-<time>.ipynb beside it.", [target for target, _ in kept])
    return sheets
