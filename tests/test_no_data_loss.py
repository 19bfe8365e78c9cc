"""Nothing a person put into a notebook is lost by a rebuild.

* ``homework build`` never overwrites an exercise or solution sheet whose cells or cell metadata changed since
  it was written: it keeps it, lists it, exits 1, and with ``--force`` backs it up before overwriting.
* ``notebooks build`` never overwrites cells edited in an ``.ipynb``: if only the notebook changed, its
  cells go into the ``.py``; if both changed, both are kept (exit 1) until ``--force``, which backs up.
* An ``.ipynb`` saved without outputs or ``language_info`` (``nbformat.write``, a kernel-less save, a script)
  is byte for byte what a build writes for its cells, and still counts as edited; two builds at once do not
  revert a synced notebook.
* Images pasted into markdown cells (cell attachments), which a ``.py`` cannot hold, are kept.
* Cell metadata (nbgrader points, tags) and notebook metadata edited in an ``.ipynb`` go into the source.
* ``--force`` may stand before the notebook names.

Each test edits a notebook the way Jupyter or a script saves it (new cells get random ids, a kernel adds
``language_info``, running adds outputs), on demo notebooks in a temporary folder, never on ``notebooks/``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path

import nbformat
import pytest

from tests.fixtures.demo_notebook import HEADER, SOURCE, _jupyter_edit
from xaikit.__main__ import main
from xaikit.course import homework
from xaikit.course import notebooks as _nbtools
from xaikit.course.homework import STUB_COMMENT

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def _sources(nb) -> list[str]:
    return [c.source for c in nb.cells]


# --- homework sheets -------------------------------------------------------------------------------------------

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


# --- lecture notebooks -----------------------------------------------------------------------------------------

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


def _build(**kw) -> list[_nbtools.Built]:
    return _nbtools.build_notebooks(verbose=False, **kw)


def _script_edit(path: Path, edit) -> str:
    """Edit a notebook as ``nbformat.write`` (a script, a kernel-less save) leaves it: no outputs, no
    ``language_info``, ids kept. Returns the new text."""
    nb = nbformat.read(path, as_version=4)
    edit(nb)
    nbformat.write(nb, path)
    return path.read_text()


def _retitle(nb, title="# Demo, as I wrote it"):
    nb.cells[0].source = nb.cells[0].source.replace("# Demo", title)


# --- an edited .ipynb that looks as a build writes it ----------------------------------------------------------

def test_script_saved_edit_goes_into_the_source(notebooks):
    """Before: `current == _as_built(nb, built)` was true, the notebook was rebuilt (exit 0) and the edit was
    gone from both files."""
    assert _actions() == ["written"]
    ipynb, py = notebooks / "01_demo.ipynb", notebooks / "01_demo.py"
    _script_edit(ipynb, _retitle)
    assert ipynb.read_text() == _nbtools._as_built(nbformat.read(ipynb, as_version=4), _nbtools.to_notebook(py))
    assert _actions() == ["synced"]
    assert "# Demo, as I wrote it" in py.read_text() and "# Demo, as I wrote it" in ipynb.read_text()
    assert _nbtools.check() == []


def test_script_saved_edit_and_edited_source_are_both_kept(notebooks, capsys):
    """The README's "both edited -> exit 1, both kept", for a notebook saved without outputs."""
    _actions()
    ipynb, py = notebooks / "01_demo.ipynb", notebooks / "01_demo.py"
    mine = _script_edit(ipynb, _retitle)
    theirs = SOURCE.replace("Add one.", "Add one to x.")
    py.write_text(theirs)
    assert main(["notebooks", "build"]) == 1
    err = capsys.readouterr().err
    assert "left as it is" in err and "the source of cell 0" in err and "--force" in err
    assert ipynb.read_text() == mine and py.read_text() == theirs
    assert main(["notebooks", "build", "--force"]) == 0
    backups = list(notebooks.glob("backup-01_demo-*.ipynb"))
    assert len(backups) == 1 and backups[0].read_text() == mine


def test_script_saved_edit_without_a_record_is_backed_up(notebooks, capsys):
    """No record (a fresh clone, an older xaikit): nothing tells a build's output from a script's edit, so
    the notebook is rebuilt only after a copy is made, and the build says where it is."""
    _actions()
    (notebooks / _nbtools.RECORD).unlink()
    ipynb = notebooks / "01_demo.ipynb"
    mine = _script_edit(ipynb, _retitle)
    (notebooks / "01_demo.py").write_text(SOURCE.replace("Add one.", "Add one to x."))
    assert main(["notebooks", "build"]) == 0
    out = capsys.readouterr().out
    backups = list(notebooks.glob("backup-01_demo-*.ipynb"))
    assert len(backups) == 1 and backups[0].read_text() == mine and backups[0].name in out


def test_two_builds_at_once_do_not_revert_a_synced_notebook(notebooks, monkeypatch):
    """Build B reads the .py, then build A syncs the edited notebook into the .py and rebuilds it, then B
    goes on with the .py it read. Before, B took A's notebook for "as built" and wrote the old cells back
    (3 of 4 trials in the issue); now B waits for A's lock, or finds the notebook edited."""
    _actions()
    ipynb = notebooks / "01_demo.ipynb"

    def jupyter_save(nb):  # a save with a kernel (language_info), which the old build did sync
        _retitle(nb)
        nb.metadata["language_info"] = {"name": "python", "version": "3.11.2"}

    _script_edit(ipynb, jupyter_save)
    real = _nbtools.to_notebook
    paused, go = threading.Event(), threading.Event()

    def slow(src):
        nb = real(src)
        if threading.current_thread().name == "B" and not paused.is_set():
            paused.set()
            go.wait(10)
        return nb

    monkeypatch.setattr(_nbtools, "to_notebook", slow)
    results: dict[str, list[str]] = {}
    b = threading.Thread(target=lambda: results.setdefault("B", _actions()), name="B")
    a = threading.Thread(target=lambda: results.setdefault("A", _actions()), name="A")
    b.start()
    assert paused.wait(10)
    a.start()
    a.join(1.0)  # with the lock A waits for B; without it A syncs now
    go.set()
    a.join(30)
    b.join(30)
    assert "# Demo, as I wrote it" in ipynb.read_text()
    assert "# Demo, as I wrote it" in (notebooks / "01_demo.py").read_text()
    assert sorted(results["A"] + results["B"]) == ["synced", "unchanged"]


def test_a_build_waits_for_the_lock(notebooks):
    from xaikit.models.cache import build_lock

    done = threading.Event()
    with build_lock(notebooks, what="notebooks", progress=False):
        t = threading.Thread(target=lambda: (_actions(), done.set()))
        t.start()
        assert not done.wait(0.5)  # held by another build
    t.join(30)
    assert done.is_set() and (notebooks / "01_demo.ipynb").exists()


def test_notebook_as_committed_is_rebuilt_with_a_stale_record(notebooks):
    """`git pull` brings a new .py and its .ipynb; the .py is edited before any build: the record is from
    before the pull, but the notebook is byte for byte as committed, so git keeps it and it is rebuilt."""
    if shutil.which("git") is None:
        pytest.skip("no git")
    _actions()
    stale = (notebooks / _nbtools.RECORD).read_text()
    py = notebooks / "01_demo.py"
    py.write_text(SOURCE.replace("Add one.", "Add one (pulled)."))
    _actions()
    (notebooks / _nbtools.RECORD).write_text(stale)
    git = ["git", "-C", str(notebooks), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "01_demo.py", "01_demo.ipynb"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "pull"], check=True)
    py.write_text(SOURCE.replace("Add one.", "Add one (edited after the pull)."))
    assert _actions() == ["written"]
    assert "edited after the pull" in (notebooks / "01_demo.ipynb").read_text()
    assert not list(notebooks.glob("backup-*"))


# --- images pasted into markdown cells -------------------------------------------------------------------------

def _paste(nb):
    nb.cells[0].source += "\n\n![plot](attachment:plot.png)"
    nb.cells[0].attachments = {"plot.png": {"image/png": PNG}}


def test_pasted_image_is_kept_without_pairing(notebooks, capsys):
    """Before: the sync path wrote the cell's text into the .py, rebuilt the notebook from it and said the
    cells "were copied": the image was gone."""
    _actions()
    ipynb, py = notebooks / "01_demo.ipynb", notebooks / "01_demo.py"
    mine = _script_edit(ipynb, _paste)
    assert main(["notebooks", "build"]) == 1
    err = capsys.readouterr().err
    assert "'plot.png' in cell 0" in err and "cannot hold" in err and "attachment:" in err and "--force" in err
    assert ipynb.read_text() == mine and py.read_text() == SOURCE
    assert main(["notebooks", "build", "--force"]) == 0  # the way out keeps a copy with the image
    backups = list(notebooks.glob("backup-01_demo-*.ipynb"))
    assert len(backups) == 1 and backups[0].read_text() == mine


def test_pasted_image_is_kept_with_pairing(notebooks):
    """With jupytext pairing, JupyterLab saves the cell's text into the .py and the image only into the
    .ipynb. Before: the cells matched, so the build rewrote the .ipynb from the .py, without a backup."""
    _actions()
    ipynb, py = notebooks / "01_demo.ipynb", notebooks / "01_demo.py"
    mine = _script_edit(ipynb, _paste)
    py.write_text(SOURCE.replace("Add one.", "Add one.\n#\n# ![plot](attachment:plot.png)"))
    assert _nbtools.cells_digest(nbformat.read(ipynb, as_version=4)) == _nbtools.cells_digest(
        _nbtools.to_notebook(py))  # the cells' text is the same: only the image differs
    assert _actions() == ["kept"]
    assert ipynb.read_text() == mine
    assert _actions() == ["kept"]  # and at every later start, until someone chooses


def test_pasted_image_in_a_homework_sheet_is_kept(tmp_path):
    notebooks, out = tmp_path / "nb", tmp_path / "out"
    notebooks.mkdir()
    (notebooks / "02_demo.py").write_text(SOURCE)
    homework.build(out, notebooks_dir=notebooks, verbose=False)
    sheet = out / "exercises" / "02_demo.ipynb"

    def attach_only(nb):  # the image alone, e.g. pasted into a cell that already linked it
        nb.cells[1].attachments = {"plot.png": {"image/png": PNG}}

    mine = _script_edit(sheet, attach_only)
    (notebooks / "02_demo.py").write_text(SOURCE.replace("Add one.", "Add one to x."))
    with pytest.raises(homework.SheetChangedError) as info:
        homework.build(out, notebooks_dir=notebooks, verbose=False)
    assert info.value.paths == [sheet] and sheet.read_text() == mine


# --- metadata --------------------------------------------------------------------------------------------------

def _regrade(nb):
    cell = nb.cells[2]
    cell.metadata["nbgrader"]["points"] = 5
    cell.metadata["tags"] = ["check", "hard"]


def test_points_and_tags_edited_in_the_notebook_go_into_the_source(notebooks):
    """An unpaired .ipynb whose nbgrader points and tags were edited (Jupyter's property inspector). Before:
    the cells' types and sources matched the record, so the notebook was rebuilt and the edit reverted."""
    _actions()
    ipynb, py = notebooks / "01_demo.ipynb", notebooks / "01_demo.py"
    _script_edit(ipynb, _regrade)
    assert _actions() == ["synced"]
    assert '"points": 5' in py.read_text() and '"hard"' in py.read_text()
    cell = nbformat.read(ipynb, as_version=4).cells[2]
    assert cell.metadata["nbgrader"]["points"] == 5 and cell.metadata["tags"] == ["check", "hard"]
    assert _nbtools.check() == [] and _actions() == ["unchanged"]


def test_points_edited_in_the_notebook_and_an_edited_source_are_both_kept(notebooks, capsys):
    _actions()
    ipynb, py = notebooks / "01_demo.ipynb", notebooks / "01_demo.py"
    mine = _script_edit(ipynb, _regrade)
    theirs = SOURCE.replace("Add one.", "Add one to x.")
    py.write_text(theirs)
    assert main(["notebooks", "build"]) == 1
    assert "the metadata of cell 2" in capsys.readouterr().err
    assert ipynb.read_text() == mine and py.read_text() == theirs


def test_notebook_metadata_edited_in_the_notebook_goes_into_the_source(notebooks):
    _actions()
    ipynb, py = notebooks / "01_demo.ipynb", notebooks / "01_demo.py"

    def describe(nb):
        nb.metadata["title"] = "Demo, a title of mine"
        nb.metadata["authors"] = [{"name": "A. Student"}]

    _script_edit(ipynb, describe)
    assert _actions() == ["synced"]
    assert "Demo, a title of mine" in py.read_text() and "A. Student" in py.read_text()
    meta = nbformat.read(ipynb, as_version=4).metadata
    assert meta["title"] == "Demo, a title of mine" and meta["authors"] == [{"name": "A. Student"}]
    assert _nbtools.check() == [] and _actions() == ["unchanged"]


def test_running_and_saving_is_not_an_edit(notebooks):
    """What a kernel, JupyterLab or jupytext add on a run and a save (outputs, language_info, another
    kernelspec, collapsed and timing metadata) is not content: the notebook is rebuilt, no exit 1."""
    _actions()
    ipynb = notebooks / "01_demo.ipynb"

    def run(nb):
        nb.metadata["language_info"] = {"name": "python", "version": "3.11.2"}
        nb.metadata["kernelspec"]["display_name"] = "Python 3 (ipykernel)"
        nb.metadata["jupytext"]["text_representation"]["jupytext_version"] = "1.19.6"
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.execution_count = 1
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
                cell.metadata.update(collapsed=False, scrolled=True, execution={"iopub.status.idle": "2025"},
                                     jupyter={"outputs_hidden": False})

    _script_edit(ipynb, run)
    (notebooks / "01_demo.py").write_text(SOURCE.replace("Add one.", "Add one to x."))
    assert _actions() == ["written"] and _nbtools.check() == []


def test_tags_edited_in_a_homework_sheet_are_kept(tmp_path):
    """Before: the sheet's record covered types and sources only, so the tagged sheet was overwritten."""
    notebooks, out = tmp_path / "nb", tmp_path / "out"
    notebooks.mkdir()
    (notebooks / "02_demo.py").write_text(SOURCE)
    homework.build(out, notebooks_dir=notebooks, verbose=False)
    sheet = out / "exercises" / "02_demo.ipynb"
    mine = _script_edit(sheet, lambda nb: nb.cells[2].metadata.setdefault("tags", []).append("todo"))
    (notebooks / "02_demo.py").write_text(SOURCE.replace("Add one.", "Add one to x."))
    with pytest.raises(homework.SheetChangedError, match="metadata") as info:
        homework.build(out, notebooks_dir=notebooks, verbose=False)
    assert info.value.paths == [sheet] and sheet.read_text() == mine
    # running and saving the untouched solution sheet is still not a change
    solution = out / "solutions" / "02_demo.ipynb"
    _script_edit(solution, lambda nb: nb.metadata.update(language_info={"name": "python"}))
    (notebooks / "02_demo.py").write_text(SOURCE.replace("Add one.", "Add one to x, again."))
    with pytest.raises(homework.SheetChangedError) as info:
        homework.build(out, notebooks_dir=notebooks, verbose=False)
    assert info.value.paths == [sheet] and "again" in solution.read_text()


# --- flags before names ----------------------------------------------------------------------------------------

def test_force_before_the_names(notebooks, tmp_path, capsys):
    (notebooks / "02_other.py").write_text(SOURCE)
    assert main(["notebooks", "build"]) == 0
    for stem in ("01_demo", "02_other"):
        _script_edit(notebooks / f"{stem}.ipynb", _retitle)
        (notebooks / f"{stem}.py").write_text(SOURCE.replace("Add one.", "Add one to x."))
    assert main(["notebooks", "build", "--force", "01"]) == 0  # the command the build's own advice names
    assert len(list(notebooks.glob("backup-01_demo-*"))) == 1 and not list(notebooks.glob("backup-02_*"))
    assert main(["notebooks", "build", "02", "--force"]) == 0
    out = tmp_path / "course"
    assert main(["homework", "build", "--force", "02", "--out", str(out)]) == 0
    assert [p.name for p in (out / "exercises").iterdir()] == ["02_other.ipynb"]
    with pytest.raises(SystemExit):
        main(["notebooks", "build", "--force", "01", "--nope"])
    assert "unrecognized arguments: --nope" in capsys.readouterr().err
    assert json.loads((notebooks / _nbtools.RECORD).read_text()).keys() == {"01_demo", "02_other"}


def test_same_edit_made_again_after_checkout_is_kept(notebooks, capsys):
    """Edit the .ipynb, build (the edit is synced into the .py), undo both files (as `git checkout` does), make
    the same edit again and build: before, the re-made notebook equalled the record of the sync, was taken for
    the build's own output and rebuilt from the restored .py (exit 0, nothing said, the edit in neither file)."""
    import os

    ipynb, py = notebooks / "01_demo.ipynb", notebooks / "01_demo.py"
    assert _actions() == ["written"]
    old_nb, old_py = ipynb.read_text(), py.read_text()
    mine = _script_edit(ipynb, _retitle)
    assert _actions() == ["synced"]
    synced = ipynb.read_text()
    ipynb.write_text(old_nb)  # undo both files
    py.write_text(old_py)
    ipynb.write_text(synced)  # the same edit made again: byte for byte what the record holds
    stamp = py.stat().st_mtime_ns + 5_000_000_000  # made after the checkout, on any file system's clock
    os.utime(ipynb, ns=(stamp, stamp))
    assert main(["notebooks", "build", "01"]) == 1
    err = capsys.readouterr().err
    assert "written after the last build recorded it" in err and "--force" in err
    assert "# Demo, as I wrote it" in ipynb.read_text() and py.read_text() == old_py
    assert "# Demo, as I wrote it" in mine
    assert main(["notebooks", "build", "--force", "01"]) == 0  # the advice it gives works, with a backup
    assert len(list(notebooks.glob("backup-01_demo-*"))) == 1 and "as I wrote it" not in ipynb.read_text()


def test_untouched_notebook_is_still_rebuilt_when_only_the_source_changed(notebooks):
    """The record's time does not stop the ordinary case: a notebook nobody touched is rebuilt from its .py."""
    ipynb, py = notebooks / "01_demo.ipynb", notebooks / "01_demo.py"
    assert _actions() == ["written"]
    _script_edit(ipynb, _retitle)
    assert _actions() == ["synced"]
    py.write_text(py.read_text().replace("Add one.", "Add one to x."))
    assert _actions() == ["written"] and "Add one to x." in ipynb.read_text()
    assert _actions() == ["unchanged"]
