"""What the course commands do with names and folders they are given:

* a notebook name that matches nothing is refused, named, with the notebooks there listed (``notebooks copy
  DIR 01 99``, ``homework build 01 99``, ``homework nbgrader``, ``notebooks build``), and nothing is written;
* ``notebooks copy 01 DIR`` advises ``notebooks copy DIR 01``, which works;
* ``homework build --out FILE`` and ``homework nbgrader --out FILE`` name the option and the fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from xaikit.__main__ import main
from xaikit.course import homework
from xaikit.course import notebooks as nbtools

STEMS = sorted(p.stem for p in nbtools.NOTEBOOKS.glob("[0-9][0-9]_*.py"))


@pytest.mark.parametrize("command", [["notebooks", "copy", "{out}", "01", "99"],
                                     ["homework", "build", "--out", "{out}", "01", "99"],
                                     ["homework", "nbgrader", "--out", "{out}", "01", "99"],
                                     ["notebooks", "slides", "--out", "{out}", "01", "99"]])
def test_a_name_that_matches_nothing_is_refused(tmp_path: Path, capsys, command: list[str]):
    out = tmp_path / "out"
    assert main([w.replace("{out}", str(out)) for w in command]) == 2
    err = capsys.readouterr().err
    assert "no notebook matches '99'" in err and "'01'" not in err.split("matches")[1].split(";")[0]
    assert STEMS[0] in err  # what there is
    assert not out.exists()  # nothing written, no folder made


def test_build_refuses_a_name_that_matches_nothing(capsys):
    assert main(["notebooks", "build", "01", "99"]) == 2
    assert "no notebook matches '99'" in capsys.readouterr().err


def test_homework_sources_refuse_each_unmatched_name():
    with pytest.raises(homework.NoNotebookError, match=r"'9', 'x'"):
        homework.sources(["01", "9", "x"])
    assert [p.stem for p in homework.sources(["01", "02"])] == STEMS[:2]


def test_copy_advice_for_name_then_folder_works(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        main(["notebooks", "copy", "01", "course-copies"])
    err = capsys.readouterr().err
    assert "`xaikit notebooks copy course-copies 01`" in err
    advised = err.split("`xaikit ")[1].split("`")[0].split()
    assert main(advised) == 0
    assert [p.name for p in (tmp_path / "course-copies").iterdir()] == [f"{STEMS[0]}.ipynb"]


@pytest.mark.parametrize("action", ["build", "nbgrader"])
def test_homework_out_a_file_is_refused(tmp_path: Path, capsys, action: str):
    out = tmp_path / "course"
    out.write_text("my notes", encoding="utf-8")
    assert main(["homework", action, "02", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and str(out) in err and "is a file, not a folder" in err and "Traceback" not in err
    assert out.read_text(encoding="utf-8") == "my notes"


def test_homework_out_inside_a_file_is_refused(tmp_path: Path, capsys):
    (tmp_path / "f").write_text("x", encoding="utf-8")
    assert main(["homework", "build", "02", "--out", str(tmp_path / "f" / "course")]) == 2
    assert f"{tmp_path / 'f'} is a file" in capsys.readouterr().err


def test_homework_exercises_a_file_is_refused(tmp_path: Path, capsys):
    (tmp_path / "exercises").write_text("x", encoding="utf-8")
    assert main(["homework", "build", "02", "--out", str(tmp_path)]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    assert not (tmp_path / "solutions").exists()


@pytest.mark.parametrize("words, said", [
    (["notebooks", "copy", ""], "the folder to copy into is empty (an unset shell variable?)"),
    (["notebooks", "copy", " "], "the folder to copy into is empty"),
    (["notebooks", "slides", "01", "--out", ""], "--out is empty (an unset shell variable?); name a folder"),
    (["notebooks", "run", "01", "--html", ""], "--html is empty"),
    (["homework", "build", "--out", ""], "--out is empty"),
    (["claims", "report", "--out", ""], "--out is empty (an unset shell variable?); name a file"),
    (["notebooks", "build", "01", ""], "a notebook name is empty"),
])
def test_cli_refuses_an_empty_folder_or_name(tmp_path, monkeypatch, capsys, words, said):
    from xaikit.__main__ import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(words)
    assert exit_.value.code == 2 and said in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written into the current folder


def test_one_notebook_name_as_a_str_is_that_notebook():
    from xaikit.course import homework, notebooks

    for sources in (notebooks.sources, homework.sources):
        assert [p.stem for p in sources("01")] == ["01_gradients"]  # was every notebook: "0" and "1" matched


def test_cli_timeouts_and_missing_model_folder_refused_up_front(capsys):
    from xaikit.__main__ import main

    for argv in (["notebooks", "run", "--timeout", "-5", "01"], ["warm", "--timeout", "-1", "01"],
                 ["warm", "--timeout", "0", "01"], ["notebooks", "run", "--timeout", "x", "01"]):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        assert "--timeout must be" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main(["warm", "--model", "/nonexistent/model", "05"])
    assert stop.value.code == 2
    err = capsys.readouterr()
    assert "--model '/nonexistent/model' looks like a folder, but no such folder exists" in err.err
    assert "running" not in err.out and "embedded models" not in err.out  # refused before any work
