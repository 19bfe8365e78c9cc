"""Nothing a person put into a notebook is lost by a rebuild, round two (issue 26, items 1-3 and 14).

* Item 1: an ``.ipynb`` edited and saved without outputs or ``language_info`` (``nbformat.write``, a
  Jupyter save with no kernel, a script) is byte for byte what a build writes for its cells; the build
  took that for "as built" and overwrote it. Two builds at once reverted a synced notebook.
* Item 2: images pasted into markdown cells (cell attachments), which a ``.py`` cannot hold.
* Item 3: cell metadata (nbgrader points, tags) and notebook metadata edited in an ``.ipynb``; tags in a
  homework sheet.
* Item 14: ``notebooks build --force 01`` and ``homework build --force 02 --out DIR`` (flags before names).

Every test works on demo notebooks in a temporary folder, never on ``notebooks/``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path

import nbformat
import pytest

from xaikit.__main__ import main
from xaikit.course import homework
from xaikit.course import notebooks as _nbtools
from xaikit.course.homework import BEGIN, END

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
SOLUTION = ('nbgrader={"grade": false, "grade_id": "add_one", "locked": false, "schema_version": 3, '
            '"solution": true}')
GRADE = ('nbgrader={"grade": true, "grade_id": "check_add", "locked": true, "points": 1, '
         '"schema_version": 3, "solution": false}')
SOURCE = HEADER + f"""
# %% [markdown]
# # Demo
#
# **Exercise.** Add one.

# %% {SOLUTION}
def add_one(x):
    {BEGIN}
    return x + 1
    {END}


# %% tags=["check"] {GRADE}
assert add_one(1) == 2
"""
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


@pytest.fixture
def notebooks(tmp_path, monkeypatch):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "01_demo.py").write_text(SOURCE)
    monkeypatch.setattr(_nbtools, "NOTEBOOKS", folder)
    return folder


def _build(**kw) -> list[_nbtools.Built]:
    return _nbtools.build_notebooks(verbose=False, **kw)


def _actions(**kw) -> list[str]:
    return [b.action for b in _build(**kw)]


def _script_edit(path: Path, edit) -> str:
    """Edit a notebook as ``nbformat.write`` (a script, a kernel-less save) leaves it: no outputs, no
    ``language_info``, ids kept. Returns the new text."""
    nb = nbformat.read(path, as_version=4)
    edit(nb)
    nbformat.write(nb, path)
    return path.read_text()


def _retitle(nb, title="# Demo, as I wrote it"):
    nb.cells[0].source = nb.cells[0].source.replace("# Demo", title)


# --- item 1: an edited .ipynb that looks as a build writes it ---------------------------------------------

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


# --- item 2: images pasted into markdown cells ------------------------------------------------------------

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


# --- item 3: metadata -------------------------------------------------------------------------------------

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


# --- item 14: flags before names --------------------------------------------------------------------------

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
