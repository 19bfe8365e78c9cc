"""nbgrader, for real: the lecture notebooks as an nbgrader course, in a temporary folder, with the
nbgrader package itself. ``generate_assignment`` gives a student version without solutions, hidden tests or
answers; ``autograde`` gives a submission with the solutions written in full marks and the blank student
version zero on every exercise, while the blank one still runs to its last cell. Scores are read from
nbgrader's gradebook database.

Two notebooks are graded, to keep the suite's time: 01 (its exercise falls back to xaikit's reference, so
the cells after it run on a stub) and 03 (an exercise in the middle of a notebook that loads the embedded
model). The metadata of every notebook is checked without running it (``tests/test_homework.py``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from xaikit.course import homework, nbgrading
from xaikit.course.homework import BEGIN, END, HIDDEN_BEGIN, STUB_MESSAGE

from .conftest import record_notebook_time

GRADED = ["01_gradients", "03_self_attention"]


def _nbgrader(course: Path, *args: str) -> None:
    """Run the ``nbgrader`` command in ``course`` with this interpreter (its scripts, e.g. alembic, on PATH)."""
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env, capture_output=True,
                          text=True, timeout=900)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "| ERROR]" not in log, f"nbgrader {' '.join(args)} failed:\n{log[-6000:]}"


def _meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def _filled_in(release, source):
    """The student version with each solution cell written as the lecture writes it (markers dropped)."""
    answers = {_meta(c)["grade_id"]: c.source for c in source.cells if _meta(c).get("solution")}
    nb = nbformat.from_dict(release)
    for cell in nb.cells:
        if _meta(cell).get("solution"):
            lines = answers[_meta(cell)["grade_id"]].splitlines()
            cell.source = "\n".join(line for line in lines if line.strip() not in (BEGIN, END)
                                    and "SOLUTION -->" not in line)  # a written answer's markers too
    return nb


def _make_course(root: Path) -> None:
    """The course, its student versions, one filled-in and one blank submission each, autograded."""
    made = nbgrading.make_course(root, GRADED, verbose=False)
    assert made.assignments == GRADED and made.kept == []
    for name in GRADED:
        _nbgrader(root, "generate_assignment", name)
        release = nbformat.read(root / "release" / name / f"{name}.ipynb", as_version=4)
        source = nbformat.read(root / "source" / name / f"{name}.ipynb", as_version=4)
        for student, nb in (("blank", release), ("full", _filled_in(release, source))):
            folder = root / "submitted" / student / name
            folder.mkdir(parents=True)
            nbformat.write(nb, folder / f"{name}.ipynb")
    for name in GRADED:
        t0 = time.perf_counter()
        _nbgrader(root, "autograde", name)
        record_notebook_time(f"nbgrader autograde {name} (x2)", time.perf_counter() - t0)


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.prepared
def test_generate_and_autograde(tmp_path):
    """One test, not three on a shared fixture: under pytest-xdist each worker would set up the course again."""
    _make_course(tmp_path)
    _student_version_has_no_solutions(tmp_path)
    _full_marks_and_zero(tmp_path)
    _blank_submission_runs_to_the_end(tmp_path)


def test_make_course_keeps_a_changed_file(tmp_path):
    made = nbgrading.make_course(tmp_path, ["01"], verbose=False)
    config = tmp_path / "nbgrader_config.py"
    config.write_text(config.read_text() + "c.CourseDirectory.course_id = 'xai101'\n")
    again = nbgrading.make_course(tmp_path, ["01"], verbose=False)
    assert again.kept == [config] and "xai101" in config.read_text()
    nbgrading.make_course(tmp_path, ["01"], force=True, verbose=False)
    assert "xai101" not in config.read_text()
    assert [p.name for p in tmp_path.glob("backup-nbgrader_config-*.py")], "no backup of the changed config"
    assert made.assignments == ["01_gradients"]


def _student_version_has_no_solutions(course: Path) -> None:
    for name in GRADED:
        source = nbformat.read(course / "source" / name / f"{name}.ipynb", as_version=4)
        release = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
        assert len(release.cells) == len(source.cells)
        n_solutions = 0
        for src, cell in zip(source.cells, release.cells, strict=True):
            meta = _meta(cell)
            assert "BEGIN SOLUTION" not in cell.source and HIDDEN_BEGIN not in cell.source
            assert "xk-answer" not in cell.source, f"{name}: an answer is left in the student version"
            if meta.get("solution"):
                n_solutions += 1
                if cell.cell_type == "code":  # the stub of nbgrading.configure: the config was read
                    assert STUB_MESSAGE in cell.source
                else:  # a written answer: nbgrader's own text stub under the question
                    assert cell.source == homework.student_markdown(src.source)[0]
                    assert homework.TEXT_STUB in cell.source
                assert cell.metadata.get("deletable") is False
            elif meta.get("grade") or meta.get("locked"):
                assert cell.metadata.get("editable") is False and cell.metadata.get("deletable") is False
                if src.cell_type == "code":  # a locked code cell is handed out as written, less the hidden tests
                    assert cell.source == homework.strip_hidden_tests(src.source)[0]
        assert n_solutions == sum(1 for c in source.cells if _meta(c).get("solution")) >= 1


def _scores(course: Path) -> dict[tuple[str, str], tuple[float, float]]:
    from nbgrader.api import Gradebook

    scores = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for name in GRADED:
            for student in ("blank", "full"):
                submission = gb.find_submission_notebook(name, name, student)
                scores[(name, student)] = (submission.score, submission.max_score)
    return scores


def _full_marks_and_zero(course: Path) -> None:
    scores = _scores(course)
    for name in GRADED:
        source = nbformat.read(course / "source" / name / f"{name}.ipynb", as_version=4)
        points = sum(_meta(c).get("points", 0) for c in source.cells if _meta(c).get("grade"))
        assert points >= 1
        assert scores[(name, "full")] == (points, points), f"{name}: the filled-in submission lost points"
        assert scores[(name, "blank")] == (0, points), f"{name}: the blank submission got points"


def _blank_submission_runs_to_the_end(course: Path) -> None:
    """A stub fails its grade cell and nothing else: every cell ran, and the only errors are the grade cells'
    hidden asserts (the @exercise fallback keeps the later cells on xaikit's reference)."""
    for name in GRADED:
        for student in ("blank", "full"):
            nb = nbformat.read(course / "autograded" / student / name / f"{name}.ipynb", as_version=4)
            code = [c for c in nb.cells if c.cell_type == "code"]
            assert all(c.execution_count for c in code), f"{name}, {student}: a cell did not run"
            failed = [c for c in code if any(o.output_type == "error" for o in c.outputs)]
            if student == "full":
                assert failed == [], f"{name}: the filled-in submission raised in {failed[0].source[:200]}"
                continue
            assert failed and all(_meta(c).get("grade") for c in failed), (
                f"{name}: a blank submission failed outside its grade cells: {[c.source[:120] for c in failed]}")
            for cell in failed:
                error = next(o for o in cell.outputs if o.output_type == "error")
                assert error.ename == "AssertionError" and "graded:" in error.evalue, error



# --- a stock nbgrader course: the written answers are marked the way nbgrader itself reads them ---

def _answer_text(source: str) -> list[str]:
    """The lines of a markdown cell's written-answer regions that say something (not the markers or tags)."""
    lines, inside = [], False
    for line in source.splitlines():
        if "BEGIN SOLUTION" in line or "END SOLUTION" in line:
            inside = "BEGIN SOLUTION" in line
        elif inside and len(line.strip()) > 20 and "<details" not in line:
            lines.append(line.strip())
    return lines


@pytest.mark.slow
def test_stock_nbgrader_course_hands_out_no_answer(tmp_path):
    """`nbgrader quickstart`'s own configuration (none of xaikit's), run offline on every lecture notebook:
    `generate_assignment` leaves no written answer in the student version, keeps every question, and writes
    each answer cell exactly as `homework build`'s exercise sheet has it (`YOUR ANSWER HERE` under the
    question). Before, the answers were cleared only by a preprocessor in xaikit's own config."""
    _nbgrader(tmp_path, "quickstart", "course101")
    course = tmp_path / "course101"
    config = (course / "nbgrader_config.py").read_text()
    assert "xaikit" not in config and "ClearSolutions" in config  # the stock file, its settings commented out
    names = [src.stem for src in homework.sources()]
    from xaikit.course.notebooks import _dump

    for src in homework.sources():
        folder = course / "source" / src.stem
        folder.mkdir(parents=True)
        (folder / f"{src.stem}.ipynb").write_text(_dump(homework._source_notebook(src)))
    for name in names:
        _nbgrader(course, "generate_assignment", name)
    n_answers = 0
    for src in homework.sources():
        source = homework._source_notebook(src)
        release = nbformat.read(course / "release" / src.stem / f"{src.stem}.ipynb", as_version=4)
        student = release.cells[len(release.cells) - len(source.cells):]  # after the quickstart's header cells
        handed_out = "\n".join(c.source for c in release.cells)
        assert "xk-answer" not in handed_out and "SOLUTION" not in handed_out, src.stem
        for cell, out in zip(source.cells, student, strict=True):
            assert out.cell_type == cell.cell_type
            if cell.cell_type != "markdown":
                continue
            answer = _answer_text(cell.source)
            if not answer:
                assert out.source == cell.source, f"{src.stem}: a markdown cell without an answer changed"
                continue
            n_answers += 1
            leaked = [line for line in answer if line in handed_out]
            assert leaked == [], f"{src.stem}: answer text in the student version: {leaked[:2]}"
            assert out.source == homework.student_markdown(cell.source)[0], src.stem  # = the exercise sheet's
            assert homework.TEXT_STUB in out.source
            question = out.source.replace(homework.TEXT_STUB, "").strip()
            if question:  # a question in the answer's cell: every line of it handed out
                assert all(line in cell.source for line in question.splitlines())
    n_details = sum(len(re.findall(r"class=\"xk-answer\"", c.source))
                    for src in homework.sources() for c in homework._source_notebook(src).cells)
    assert n_answers == n_details >= 20  # every answer of every notebook went through nbgrader
