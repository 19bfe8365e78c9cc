"""Nothing a person typed is lost by a rebuild (issue 14, items 1 and 2).

* ``homework build`` never overwrites an exercise or solution sheet whose cells changed since it was
  written: it keeps it, lists it, exits 1, and with ``--force`` backs it up before overwriting.
* ``notebooks build`` never overwrites cells edited in an ``.ipynb``: if only the notebook changed, its
  cells go into the ``.py``; if both changed, both are kept (exit 1) until ``--force``, which backs up.

Each test edits a notebook the way Jupyter saves it (new cells get random ids, a kernel adds
``language_info``, running adds outputs).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import nbformat
import pytest

from xaikit.__main__ import main
from xaikit.course import homework
from xaikit.course import notebooks as _nbtools
from xaikit.course.homework import BEGIN, END, STUB_COMMENT

HEADER = """# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---
"""
SOURCE = HEADER + f"""
# %% [markdown]
# # Demo
#
# **Exercise.** Add one.

# %%
def add_one(x):
    {BEGIN}
    return x + 1
    {END}


# %%
assert add_one(1) == 2
"""


def _jupyter_edit(path: Path, code: str | None = None, replace: tuple[str, str] | None = None,
                  outputs: bool = True) -> str:
    """Edit a notebook as JupyterLab saves it; returns the new file's text."""
    nb = nbformat.read(path, as_version=4)
    if replace:
        for cell in nb.cells:
            cell.source = cell.source.replace(*replace)
    if code is not None:
        cell = nbformat.v4.new_code_cell(code)
        cell.id = uuid.uuid4().hex[:8]
        nb.cells.append(cell)
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.2"}
    if outputs:
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.execution_count = 1
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
    nbformat.write(nb, path)
    return path.read_text()


def _sources(nb) -> list[str]:
    return [c.source for c in nb.cells]


# --- homework sheets (item 1) ------------------------------------------------------------------------------

@pytest.fixture
def course(tmp_path):
    notebooks = tmp_path / "nb"
    notebooks.mkdir()
    (notebooks / "02_demo.py").write_text(SOURCE)
    return notebooks, tmp_path / "out"


def test_unchanged_sheets_are_rebuilt_silently(course):
    notebooks, out = course
    homework.build(out, notebooks_dir=notebooks, verbose=False)
    sheet = out / "exercises" / "02_demo.ipynb"
    assert nbformat.read(sheet, as_version=4).metadata["xaikit"]["sheet"] == "exercise"
    (notebooks / "02_demo.py").write_text(SOURCE.replace("# # Demo", "# # Demo, second edition"))
    homework.build(out, notebooks_dir=notebooks, verbose=False)  # no error: nobody touched the sheets
    assert "second edition" in sheet.read_text()
    # running and saving a sheet (outputs, language_info) is not a change of its cells
    _jupyter_edit(sheet)
    homework.build(out, notebooks_dir=notebooks, verbose=False)
    assert '"outputs": []' in sheet.read_text() and "language_info" not in sheet.read_text()


def test_filled_in_sheet_is_kept_and_force_backs_it_up(course):
    notebooks, out = course
    homework.build(out, notebooks_dir=notebooks, verbose=False)
    sheet = out / "exercises" / "02_demo.ipynb"
    solution = out / "solutions" / "02_demo.ipynb"
    mine = _jupyter_edit(sheet, code="# my notes: x + 1 works", replace=(STUB_COMMENT, "return x + 1  # mine"))
    (notebooks / "02_demo.py").write_text(SOURCE.replace("# # Demo", "# # Demo v2"))

    with pytest.raises(homework.SheetChangedError, match="--force") as info:
        homework.build(out, notebooks_dir=notebooks, verbose=False)
    assert info.value.paths == [sheet]
    assert sheet.read_text() == mine  # the student's work, byte for byte
    assert "Demo v2" in solution.read_text()  # the untouched solution sheet was still rebuilt

    homework.build(out, notebooks_dir=notebooks, verbose=False, force=True)
    backups = list((out / "exercises").glob("backup-02_demo-*.ipynb"))
    assert len(backups) == 1 and backups[0].read_text() == mine
    assert "Demo v2" in sheet.read_text() and "# mine" not in sheet.read_text()


@pytest.mark.parametrize("damage", ["no record", "unreadable"])
def test_sheet_without_record_or_unreadable_is_kept(course, damage):
    notebooks, out = course
    homework.build(out, notebooks_dir=notebooks, verbose=False)
    sheet = out / "solutions" / "02_demo.ipynb"
    if damage == "no record":  # e.g. written by an older xaikit, or by hand
        nb = nbformat.read(sheet, as_version=4)
        del nb.metadata["xaikit"]
        nbformat.write(nb, sheet)
    else:
        sheet.write_text(sheet.read_text()[:100])
    before = sheet.read_text()
    (notebooks / "02_demo.py").write_text(SOURCE + "\n# %%\nprint('new')\n")
    with pytest.raises(homework.SheetChangedError, match="no record|cannot be read"):
        homework.build(out, notebooks_dir=notebooks, verbose=False)
    assert sheet.read_text() == before


def test_cli_exit_status_and_message(tmp_path, capsys):
    out = tmp_path / "course"
    assert main(["homework", "build", "02", "--out", str(out)]) == 0
    sheet = out / "exercises" / "02_integrated_gradients.ipynb"
    mine = _jupyter_edit(sheet, code="# notes")
    capsys.readouterr()
    assert main(["homework", "build", "02", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "NOT overwritten" in err and str(sheet) in err and "--force" in err and "--out" in err
    assert sheet.read_text() == mine
    assert main(["homework", "build", "02", "--out", str(out), "--force"]) == 0
    assert len(list(sheet.parent.glob("backup-02_integrated_gradients-*.ipynb"))) == 1


# --- lecture notebooks (item 2) ----------------------------------------------------------------------------

@pytest.fixture
def notebooks(tmp_path, monkeypatch):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "01_demo.py").write_text(SOURCE)
    monkeypatch.setattr(_nbtools, "NOTEBOOKS", folder)
    return folder


def _actions(**kw) -> list[str]:
    return [b.action for b in _nbtools.build_notebooks(verbose=False, **kw)]


def test_notebook_edits_go_into_the_source(notebooks):
    assert _actions() == ["written"]
    ipynb, py = notebooks / "01_demo.ipynb", notebooks / "01_demo.py"
    _jupyter_edit(ipynb, code="# a student's cell\ny = add_one(41)", replace=("return x + 1", "return 1 + x"))
    edited = _sources(nbformat.read(ipynb, as_version=4))
    assert _actions() == ["synced"]
    assert "# a student's cell\ny = add_one(41)" in py.read_text() and "return 1 + x" in py.read_text()
    assert py.read_text().startswith(HEADER)  # the source's own header is kept
    assert _sources(nbformat.read(ipynb, as_version=4)) == edited
    assert _nbtools.check() == []  # the pair is in sync again, the notebook without outputs
    assert _actions() == ["unchanged"]


def test_source_edits_still_rebuild_the_notebook(notebooks):
    _actions()
    py = notebooks / "01_demo.py"
    py.write_text(SOURCE.replace("# # Demo", "# # Demo, edited in the .py"))
    assert _actions() == ["written"]
    assert "edited in the .py" in (notebooks / "01_demo.ipynb").read_text()
    # a notebook that was only run (outputs) is rebuilt too: its cells are all in the .py
    _jupyter_edit(notebooks / "01_demo.ipynb")
    assert _actions() == ["written"] and _nbtools.check() == []


def test_both_edited_keeps_both_until_force(notebooks, capsys):
    _actions()
    ipynb, py = notebooks / "01_demo.ipynb", notebooks / "01_demo.py"
    mine = _jupyter_edit(ipynb, code="z = 'mine'")
    theirs = SOURCE.replace("# # Demo", "# # Demo from the instructor")
    py.write_text(theirs)
    assert main(["notebooks", "build"]) == 1
    err = capsys.readouterr().err
    assert "left as it is" in err and "--force" in err and "jupytext --to py:percent" in err
    assert ipynb.read_text() == mine and py.read_text() == theirs
    assert main(["notebooks", "build", "--force"]) == 0
    backups = list(notebooks.glob("backup-01_demo-*.ipynb"))
    assert len(backups) == 1 and backups[0].read_text() == mine
    assert "from the instructor" in ipynb.read_text() and "mine" not in ipynb.read_text()
    assert [p.name for p in _nbtools.sources()] == ["01_demo.py"]  # the backup is not a notebook


def test_without_a_record(notebooks):
    """A fresh clone (or an older xaikit) has no record: a notebook as a build writes it is rebuilt from an
    edited .py, but one that Jupyter saved with other cells is kept."""
    _actions()
    (notebooks / _nbtools.RECORD).unlink()
    py = notebooks / "01_demo.py"
    py.write_text(SOURCE.replace("# # Demo", "# # Demo 2"))
    assert _actions() == ["written"]
    (notebooks / _nbtools.RECORD).unlink()
    mine = _jupyter_edit(notebooks / "01_demo.ipynb", code="w = 'mine'")
    py.write_text(SOURCE.replace("# # Demo", "# # Demo 3"))
    assert _actions() == ["kept"]
    assert (notebooks / "01_demo.ipynb").read_text() == mine


def test_unreadable_notebook_is_kept(notebooks):
    _actions()
    ipynb = notebooks / "01_demo.ipynb"
    half = ipynb.read_text()[:200]  # e.g. a save cut short
    ipynb.write_text(half)
    assert _actions() == ["kept"] and ipynb.read_text() == half


# --- end to end --------------------------------------------------------------------------------------------

def test_end_to_end_edit_sheet_and_notebook_then_rebuild(tmp_path, monkeypatch, capsys):
    """The issue's steps, on the real notebook 02: build the homework, fill in the three stubs of the
    exercise sheet and add a notes cell; edit a lecture notebook in Jupyter; rebuild both. Nothing is lost."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    real = _nbtools.NOTEBOOKS / "02_integrated_gradients.py"
    (folder / real.name).write_text(real.read_text())
    monkeypatch.setattr(_nbtools, "NOTEBOOKS", folder)
    out = tmp_path / "course"

    assert main(["notebooks", "build"]) == 0
    assert main(["homework", "build", "--out", str(out)]) == 0
    sheet = out / "exercises" / "02_integrated_gradients.ipynb"
    nb = nbformat.read(sheet, as_version=4)
    stubs = [c for c in nb.cells if STUB_COMMENT in c.source]
    assert len(stubs) >= 1
    for i, cell in enumerate(stubs):
        cell.source = cell.source.replace(STUB_COMMENT, f"# student answer {i}")
    nb.cells.append(nbformat.v4.new_markdown_cell("My notes: the gap shrinks with more steps."))
    nb.cells[-1].id = "notes-1"
    nbformat.write(nb, sheet)
    sheet_text = sheet.read_text()

    lecture = folder / "02_integrated_gradients.ipynb"
    _jupyter_edit(lecture, code="# my own experiment\nprint('steps=500')")

    # a new version of the course arrives, and start.sh / the instructor rebuild everything
    assert main(["notebooks", "build"]) == 0
    assert main(["homework", "build", "--out", str(out)]) == 1
    capsys.readouterr()

    assert sheet.read_text() == sheet_text  # every answer and the notes are still there
    assert "# my own experiment" in (folder / "02_integrated_gradients.py").read_text()
    assert "# my own experiment" in lecture.read_text()
    assert json.loads(lecture.read_text())["cells"][-1]["outputs"] == []
