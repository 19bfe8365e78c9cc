"""A student's own copies of the lecture notebooks (``xaikit notebooks copy``), the command line's
``--version``, ``--help`` and options in any order, and clear messages where there are no notebooks.

The copy rules (:mod:`xaikit.course.copies`): a new copy is written; a copy with the lecture's content is
left as it is (outputs and all); an unchanged copy is updated when the lecture changes; a copy its owner
changed is never overwritten: it is kept silently while the lecture is as it was copied, and when the
lecture changed too its new version goes beside it (``NN_name-new.ipynb``), unless ``--force`` (a backup
first).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.demo_notebook import SOURCE
from xaikit.__main__ import main
from xaikit.course import copies
from xaikit.course import notebooks as _nbtools


@pytest.fixture
def lectures(tmp_path, monkeypatch):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "01_demo.py").write_text(SOURCE)
    (folder / "02_other.py").write_text(SOURCE.replace("# # Demo", "# # Other"))
    monkeypatch.setattr(_nbtools, "NOTEBOOKS", folder)
    monkeypatch.setattr(_nbtools, "PACKAGED", tmp_path / "no-package-data")
    return folder


def _read(path: Path) -> dict:
    return json.loads(path.read_text())


def _edit(path: Path, cell: int = 1, text: str = "# my note\n") -> None:
    nb = _read(path)
    src = nb["cells"][cell]["source"]
    nb["cells"][cell]["source"] = text + ("".join(src) if isinstance(src, list) else src)
    path.write_text(json.dumps(nb))


def _run(path: Path) -> None:
    """What running and saving in JupyterLab adds: outputs, execution counts, language_info."""
    nb = _read(path)
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            cell["execution_count"] = i
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["ran\n"]}]
    nb["metadata"]["language_info"] = {"name": "python", "version": "3.0"}
    path.write_text(json.dumps(nb, indent=2))


def _actions(done) -> dict[str, str]:
    return {c.name: c.action for c in done}


def test_a_copy_is_a_plain_notebook_on_the_default_kernel(lectures, tmp_path):
    done = copies.copy_notebooks(tmp_path / "mine", verbose=False)
    assert _actions(done) == {"01_demo": "written", "02_other": "written"}
    nb = _read(tmp_path / "mine" / "01_demo.ipynb")
    assert nb["metadata"]["kernelspec"] == copies.KERNELSPEC == {
        "display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    assert "jupytext" not in nb["metadata"]  # no pairing: saving writes this one file
    assert nb["metadata"]["language_info"]["name"] == "python"
    assert nb["metadata"]["xaikit"]["copy"] == {
        "lecture": "01_demo", "content_sha256": _nbtools.content_digest(_nbtools.to_notebook(lectures / "01_demo.py"))}
    assert ["".join(c["source"]) for c in nb["cells"]] == [c.source for c in _nbtools.to_notebook(lectures / "01_demo.py").cells]
    import nbformat

    nbformat.validate(nbformat.reads(json.dumps(nb), as_version=4))
    assert not list(lectures.glob("*.ipynb")), "copying wrote into the lecture folder"


def test_a_run_copy_is_current_and_left_alone(lectures, tmp_path):
    dest = tmp_path / "mine"
    copies.copy_notebooks(dest, verbose=False)
    _run(dest / "01_demo.ipynb")
    before = (dest / "01_demo.ipynb").read_bytes()
    assert _actions(copies.copy_notebooks(dest, verbose=False)) == {"01_demo": "current", "02_other": "current"}
    assert (dest / "01_demo.ipynb").read_bytes() == before  # outputs kept


def test_a_changed_copy_is_never_overwritten(lectures, tmp_path, capsys):
    dest = tmp_path / "mine"
    copies.copy_notebooks(dest, verbose=False)
    _edit(dest / "01_demo.ipynb")
    mine = (dest / "01_demo.ipynb").read_bytes()
    # the lecture is as it was copied: the copy is the student's, nothing to say, nothing written beside it
    assert _actions(copies.copy_notebooks(dest, verbose=False))["01_demo"] == "yours"
    assert (dest / "01_demo.ipynb").read_bytes() == mine and not (dest / "01_demo-new.ipynb").exists()

    # a new lecture version: the unchanged copy (02) is updated, the changed one (01) kept, the new one beside it
    for stem in ("01_demo", "02_other"):
        src = lectures / f"{stem}.py"
        src.write_text(src.read_text().replace("Add one.", "Add one to x."))
    done = copies.copy_notebooks(dest)
    out = capsys.readouterr()
    assert _actions(done) == {"01_demo": "kept", "02_other": "updated"}
    assert (dest / "01_demo.ipynb").read_bytes() == mine
    assert "Add one to x." in (dest / "02_other.ipynb").read_text()
    beside = dest / "01_demo-new.ipynb"
    assert done[0].beside == beside and "Add one to x." in beside.read_text()
    assert "01_demo.ipynb was kept as it is (you changed it since it was copied, and the lecture changed too)" in out.err
    assert "01_demo-new.ipynb" in out.err and "1 changed by you, kept, new lecture version beside" in out.out

    # again: nothing changes; the -new copy is current
    assert _actions(copies.copy_notebooks(dest, verbose=False)) == {"01_demo": "kept", "02_other": "current"}
    assert (dest / "01_demo.ipynb").read_bytes() == mine

    # the student edits the -new copy too, and the lecture changes again: neither is overwritten
    _edit(beside, text="# second note\n")
    theirs = beside.read_bytes()
    (lectures / "01_demo.py").write_text((lectures / "01_demo.py").read_text().replace("to x.", "to x, once."))
    done = copies.copy_notebooks(dest)
    assert done[0].action == "kept" and done[0].beside is None
    assert beside.read_bytes() == theirs and (dest / "01_demo.ipynb").read_bytes() == mine
    assert "was not written beside it either" in capsys.readouterr().err

    # --force: a backup of the student's copy, then the lecture
    done = copies.copy_notebooks(dest, force=True, verbose=False)
    assert done[0].action == "replaced" and done[0].backup.read_bytes() == mine
    assert "to x, once." in (dest / "01_demo.ipynb").read_text()


def test_an_unreadable_or_foreign_file_is_kept(lectures, tmp_path):
    dest = tmp_path / "mine"
    dest.mkdir()
    (dest / "01_demo.ipynb").write_text("{ not json")
    nb = json.loads(_nbtools._dump(_nbtools.to_notebook(lectures / "02_other.py")))
    nb["cells"][1]["source"] = "# someone else's notebook"
    (dest / "02_other.ipynb").write_text(json.dumps(nb))
    done = copies.copy_notebooks(dest, verbose=False)
    assert _actions(done) == {"01_demo": "kept", "02_other": "kept"}
    assert (dest / "01_demo.ipynb").read_text() == "{ not json"
    assert "someone else's notebook" in (dest / "02_other.ipynb").read_text()
    assert (dest / "01_demo-new.ipynb").exists() and (dest / "02_other-new.ipynb").exists()


def test_copies_come_from_the_package_data_outside_a_checkout(tmp_path, monkeypatch):
    """A pip-installed xaikit: no notebooks/ here, the built .ipynb that the wheel carries (setup.py)."""
    packaged = tmp_path / "site" / "xaikit" / "_lectures"
    packaged.mkdir(parents=True)
    (packaged / "03_third.ipynb").write_text(_nbtools._dump(_nbtools._from_text(SOURCE)))
    monkeypatch.setattr(_nbtools, "NOTEBOOKS", tmp_path / "empty" / "notebooks")
    monkeypatch.setattr(_nbtools, "PACKAGED", packaged)
    assert not _nbtools.in_checkout() and _nbtools.lecture_folder() == packaged
    assert main(["notebooks", "copy", str(tmp_path / "mine")]) == 0
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["03_third.ipynb"]
    assert main(["homework", "build", "--out", str(tmp_path / "course")]) == 0  # works from the same notebooks
    assert (tmp_path / "course" / "exercises" / "03_third.ipynb").exists()


def test_no_notebooks_anywhere_is_said_not_a_silent_success(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(_nbtools, "NOTEBOOKS", tmp_path / "notebooks")
    monkeypatch.setattr(_nbtools, "PACKAGED", tmp_path / "no-package-data")
    out = tmp_path / "course"
    assert main(["homework", "build", "--out", str(out)]) == 2
    assert not out.exists(), "homework build made folders with nothing to put in them"
    assert "no lecture notebooks found" in capsys.readouterr().err
    assert main(["homework", "nbgrader", "--out", str(out)]) == 2 and not out.exists()
    assert main(["notebooks", "copy", str(tmp_path / "mine")]) == 2 and not (tmp_path / "mine").exists()
    for action in ("build", "check", "run"):
        assert main(["notebooks", action]) == 2
        err = capsys.readouterr().err
        assert f"xaikit notebooks {action}: this command works on the notebooks/ folder of a clone" in err
        assert "xaikit notebooks copy DIR" in err and "Traceback" not in err


def test_a_missing_notebooks_extra_is_named(monkeypatch, capsys, tmp_path):
    import builtins

    real = builtins.__import__

    def no_nbformat(name, *args, **kw):
        if name == "nbformat" or name.startswith("nbformat."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_nbformat)
    assert main(["homework", "build", "02", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "xaikit homework build: this needs the Python package 'nbformat'" in err
    assert 'pip install "xaikit[notebooks]"' in err


def test_copy_cli_names_the_folder_first(lectures, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["notebooks", "copy", "01"])
    assert exit_.value.code == 2 and "name the folder first" in capsys.readouterr().err
    assert main(["notebooks", "copy", "--force", "mine", "02"]) == 0  # flags anywhere
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["02_other.ipynb"]


def test_version_and_help(capsys):
    import xaikit

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"xaikit {xaikit.__version__} (")
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "examples:" in text and "xaikit notebooks copy my-notebooks" in text
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert pyproject["project"]["version"] == xaikit.__version__
    assert pyproject["project"]["license"] == "MIT" and pyproject["project"]["license-files"] == ["LICENSE"]
    assert "MIT License" in (Path(__file__).resolve().parents[1] / "LICENSE").read_text()


def test_options_in_any_order(tmp_path):
    """``homework nbgrader --out DIR 02`` is ``homework nbgrader 02 --out DIR``."""
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["homework", "nbgrader", "--out", str(a), "02"]) == 0
    assert main(["homework", "nbgrader", "02", "--out", str(b)]) == 0
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert [p.name for p in (a / "source").iterdir()] == ["02_integrated_gradients"]
    with pytest.raises(SystemExit):
        main(["homework", "nbgrader", "--nope", "02"])


def test_an_empty_folder_name_is_refused_not_read_as_here(tmp_path, monkeypatch):
    from xaikit.course.copies import copy_notebooks

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="folder to copy into is empty"):
        copy_notebooks("", ["01"], verbose=False)
    assert list(tmp_path.iterdir()) == []


def test_notebooks_copy_names_a_folder_it_may_not_write(tmp_path, monkeypatch, capsys):
    from xaikit.__main__ import main
    from xaikit.course import copies
    from xaikit.course import notebooks as _nbtools

    def refuse(path, text):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(_nbtools, "write_text_atomic", refuse)
    with pytest.raises(PermissionError, match=r"cannot write into the folder .*ro: permission denied"):
        copies.copy_notebooks(tmp_path / "ro", ["01"], verbose=False)
    assert main(["notebooks", "copy", str(tmp_path / "ro"), "01"]) == 1
    assert "cannot write into the folder" in capsys.readouterr().err
