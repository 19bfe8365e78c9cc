"""The course commands read and write notebooks and text as UTF-8 whatever the locale: under ``LC_ALL=C``
with Python's UTF-8 mode off (the preferred encoding is ASCII) ``notebooks copy`` and ``homework build``
write the lecture notebooks (which hold "·", "≈", ...) unchanged, and a command that fails leaves no empty
folder behind. Each runs in a subprocess, since the locale is read when Python starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from xaikit.course import notebooks as nbtools

ROOT = Path(__file__).resolve().parents[1]


def _run_c_locale(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIOENCODING"))}
    env.update(LC_ALL="C", LANG="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "xaikit", *args], cwd=cwd, env=env, capture_output=True,
                          timeout=600, check=False)


def test_the_c_locale_is_ascii(tmp_path: Path):
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    done = subprocess.run([sys.executable, "-c", "import locale; print(locale.getpreferredencoding(False))"],
                          env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip().lower() in {"ansi_x3.4-1968", "ascii", "us-ascii"}, done.stdout


def _non_ascii(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    assert any(ord(ch) > 127 for ch in text), f"{path.name} holds only ASCII: the test could not fail"
    return text


def test_copy_under_the_c_locale(tmp_path: Path):
    done = _run_c_locale(["notebooks", "copy", str(tmp_path / "mine"), "02"], tmp_path)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    copy = tmp_path / "mine" / "02_integrated_gradients.ipynb"
    source = nbtools.to_notebook(nbtools.NOTEBOOKS / "02_integrated_gradients.py")
    _non_ascii(copy)
    cells = json.loads(copy.read_text(encoding="utf-8"))["cells"]
    assert ["".join(c["source"]) for c in cells] == [c.source for c in source.cells]


def test_homework_build_under_the_c_locale(tmp_path: Path):
    done = _run_c_locale(["homework", "build", "--out", str(tmp_path / "hw"), "02"], tmp_path)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    for kind in ("exercises", "solutions"):
        _non_ascii(tmp_path / "hw" / kind / "02_integrated_gradients.ipynb")
    source = nbtools.to_notebook(nbtools.NOTEBOOKS / "02_integrated_gradients.py")
    solution = json.loads((tmp_path / "hw" / "solutions" / "02_integrated_gradients.ipynb").read_text(encoding="utf-8"))
    assert ["".join(c["source"]) for c in solution["cells"][1:]] == [c.source for c in source.cells]


def test_nbgrader_course_under_the_c_locale(tmp_path: Path):
    done = _run_c_locale(["homework", "nbgrader", "--out", str(tmp_path / "course"), "02"], tmp_path)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    _non_ascii(tmp_path / "course" / "source" / "02_integrated_gradients" / "02_integrated_gradients.ipynb")


@pytest.mark.parametrize("command", [["homework", "build", "--out", "{out}", "02", "99"],
                                     ["notebooks", "copy", "{out}", "02", "99"]])
def test_a_failed_command_leaves_no_empty_folder(tmp_path: Path, command: list[str]):
    out = tmp_path / "out"
    done = _run_c_locale([w.replace("{out}", str(out)) for w in command], tmp_path)
    assert done.returncode == 2 and b"99" in done.stderr and b"Traceback" not in done.stderr
    assert not out.exists()


def test_homework_build_leaves_no_empty_folder_when_a_notebook_cannot_be_cut(tmp_path: Path):
    """A lecture whose nbgrader metadata does not fit its markers fails the build before any folder is made."""
    import nbformat

    from xaikit.course import homework

    folder = tmp_path / "lectures"
    folder.mkdir()
    nb = nbformat.v4.new_notebook()
    bad = nbformat.v4.new_code_cell(f"x = 1 · 2\n{homework.BEGIN}\ny = 2\n{homework.END}")
    bad.metadata["nbgrader"] = {"grade": False, "solution": False, "locked": True, "grade_id": "a",
                                "schema_version": 3}
    nb.cells = [bad]
    nbformat.write(nb, folder / "01_bad.ipynb")
    with pytest.raises(ValueError, match="nbgrader"):
        homework.build(tmp_path / "hw", notebooks_dir=folder, verbose=False)
    assert not (tmp_path / "hw").exists()
