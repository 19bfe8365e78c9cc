"""``notebooks build`` and the commands that build before they write (``notebooks slides``):

* an autosave of the ``.ipynb`` while the build copies its cells into the ``.py`` (jupytext's round trip) is
  kept: the build writes a file only if it still holds what the build read, and says so when it did not;
* ``notebooks slides`` says what its build did (a notebook's cells copied into its ``.py``), and writes no
  slides for a notebook the build kept as it is (both files edited), naming it, exit status 1.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from tests.fixtures.demo_notebook import SOURCE, _jupyter_edit
from xaikit.__main__ import main
from xaikit.course import notebooks as _nbtools
from xaikit.course import pages


@pytest.fixture
def notebooks(tmp_path, monkeypatch):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "01_demo.py").write_text(SOURCE, encoding="utf-8")
    monkeypatch.setattr(_nbtools, "NOTEBOOKS", folder)
    assert [b.action for b in _nbtools.build_notebooks(verbose=False)] == ["written"]
    return folder


def _autosave_during(monkeypatch, ipynb: Path, code: str, step: str = "_source_text") -> list[str]:
    """Make the next call of ``_nbtools.<step>`` save ``code`` as a new cell into ``ipynb`` first, as
    JupyterLab's autosave would in the middle of the build; returns the saved texts."""
    real = getattr(_nbtools, step)
    saved: list[str] = []

    def autosave(*args, **kwargs):
        if not saved:
            saved.append(_jupyter_edit(ipynb, code=code))
        return real(*args, **kwargs)

    monkeypatch.setattr(_nbtools, step, autosave)
    return saved


def test_autosave_during_the_sync_is_kept(notebooks, monkeypatch, capsys):
    ipynb, py = notebooks / "01_demo.ipynb", notebooks / "01_demo.py"
    _jupyter_edit(ipynb, code="edit_a = 'synced'")
    saved = _autosave_during(monkeypatch, ipynb, "edit_b = 'autosaved'")
    assert main(["notebooks", "build"]) == 1
    err = capsys.readouterr().err
    assert "changed while the build" in err and "run the build again" in err
    assert ipynb.read_text(encoding="utf-8") == saved[0]  # edit B is on disk, as saved
    assert "edit_a" not in py.read_text(encoding="utf-8")  # nothing half-done in the .py either
    monkeypatch.undo()
    monkeypatch.setattr(_nbtools, "NOTEBOOKS", notebooks)
    assert [b.action for b in _nbtools.build_notebooks(verbose=False)] == ["synced"]
    assert "edit_a = 'synced'" in py.read_text(encoding="utf-8")
    assert "edit_b = 'autosaved'" in py.read_text(encoding="utf-8")
    assert "edit_b = 'autosaved'" in ipynb.read_text(encoding="utf-8")


def test_autosave_after_the_source_was_written_is_kept(notebooks, monkeypatch, capsys):
    """Edit A went into the ``.py``; edit B, saved before the ``.ipynb`` is rewritten from it, stays, and
    the next build brings it into the ``.py`` too."""
    ipynb, py = notebooks / "01_demo.ipynb", notebooks / "01_demo.py"
    _jupyter_edit(ipynb, code="edit_a = 'synced'")
    real = _nbtools._sync_source
    saved: list[str] = []

    def sync_then_autosave(*args, **kwargs):
        done = real(*args, **kwargs)
        saved.append(_jupyter_edit(ipynb, code="edit_b = 'autosaved'"))
        return done

    monkeypatch.setattr(_nbtools, "_sync_source", sync_then_autosave)
    results = _nbtools.build_notebooks()
    assert [b.action for b in results] == ["kept"] and "run the build again" in results[0].message
    assert ipynb.read_text(encoding="utf-8") == saved[0]
    assert "edit_a = 'synced'" in py.read_text(encoding="utf-8")
    monkeypatch.setattr(_nbtools, "_sync_source", real)
    assert [b.action for b in _nbtools.build_notebooks(verbose=False)] == ["synced"]
    text = py.read_text(encoding="utf-8")
    assert "edit_a = 'synced'" in text and "edit_b = 'autosaved'" in text


def test_source_saved_during_the_build_is_kept(notebooks, monkeypatch):
    ipynb, py = notebooks / "01_demo.ipynb", notebooks / "01_demo.py"
    _jupyter_edit(ipynb, code="edit_a = 'in the notebook'")
    real = _nbtools._source_text
    theirs = SOURCE.replace("# # Demo", "# # Demo, saved in the editor meanwhile")

    def editor_saves(*args, **kwargs):
        py.write_text(theirs, encoding="utf-8")
        return real(*args, **kwargs)

    monkeypatch.setattr(_nbtools, "_source_text", editor_saves)
    assert [b.action for b in _nbtools.build_notebooks(verbose=False)] == ["kept"]
    assert py.read_text(encoding="utf-8") == theirs
    assert "edit_a" in ipynb.read_text(encoding="utf-8")


def _needs_reveal():
    try:
        pages.reveal_source()
    except ModuleNotFoundError as err:
        pytest.skip(str(err))


def test_slides_say_what_the_build_did(notebooks, tmp_path, capsys):
    _needs_reveal()
    ipynb, py = notebooks / "01_demo.ipynb", notebooks / "01_demo.py"
    _jupyter_edit(ipynb, code="edit_in_the_notebook = 1")
    assert main(["notebooks", "slides", "--out", str(tmp_path / "slides")]) == 0
    out = capsys.readouterr().out
    assert "were copied into 01_demo.py" in out and "slides: " in out
    assert "edit_in_the_notebook" in py.read_text(encoding="utf-8")


def test_slides_refuse_a_notebook_the_build_kept(notebooks, tmp_path, capsys):
    _needs_reveal()
    ipynb, py = notebooks / "01_demo.ipynb", notebooks / "01_demo.py"
    _jupyter_edit(ipynb, code="mine = 1")
    py.write_text(SOURCE.replace("# # Demo", "# # Demo, edited in the .py"), encoding="utf-8")
    out_dir = tmp_path / "slides"
    assert main(["notebooks", "slides", "--out", str(out_dir)]) == 1
    err = capsys.readouterr().err
    assert "left as it is" in err and "no slides for 01_demo.ipynb" in err
    assert not (out_dir / "01_demo.slides.html").exists()
    assert not out_dir.exists()  # no empty folder either
    nb = nbformat.read(ipynb, as_version=4)
    assert any("mine = 1" in c.source for c in nb.cells)


def test_notebooks_check_reports_a_notebook_without_its_source(tmp_path, monkeypatch, capsys):
    from tests.fixtures.demo_notebook import SOURCE
    from xaikit.__main__ import main
    from xaikit.course import notebooks as _nbtools

    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "01_demo.py").write_text(SOURCE)
    (folder / "02_other.py").write_text(SOURCE)
    monkeypatch.setattr(_nbtools, "NOTEBOOKS", folder)
    _nbtools.build_notebooks(verbose=False)
    assert _nbtools.check() == []
    (folder / "01_demo.py").unlink()
    capsys.readouterr()
    assert main(["notebooks", "check"]) == 1
    err = capsys.readouterr().err
    assert "01_demo.ipynb has no source 01_demo.py" in err and "git checkout -- notebooks/01_demo.py" in err
    assert main(["notebooks", "check", "01"]) == 1
    assert main(["notebooks", "check", "02"]) == 0
    assert main(["notebooks", "build"]) == 1
    assert "01_demo.ipynb has no source" in capsys.readouterr().err
    assert (folder / "01_demo.ipynb").exists()
