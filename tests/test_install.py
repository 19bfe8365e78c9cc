"""A wheel built from this checkout, installed into a fresh virtual environment, used from
an empty folder, does what the README promises.

* The wheel is built offline from a copy of the working tree (``pip wheel --no-deps --no-build-isolation
  --no-index``, this environment's setuptools); the test skips when that is impossible here.
* It goes into a new venv with ``--no-deps``: xaikit alone, no numpy, no torch, no nbformat. There,
  ``xaikit --version`` and ``--help`` work, ``xaikit notebooks copy DIR`` writes the five lecture notebooks
  (the package data ``setup.py`` adds), a copy the user changed survives a second copy, and every other
  command says what is missing (``pip install "xaikit[notebooks]"``, a dependency's name, or that
  ``notebooks build`` needs a checkout) with exit status 2 and no traceback.
* Then this environment's packages are made visible to that venv (a ``.pth`` file, after the venv's own
  site-packages, so its xaikit is still the wheel's): ``homework build`` and ``homework nbgrader`` work from
  the notebooks the wheel carries.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.worktree import copy_worktree

pytestmark = pytest.mark.slow

LECTURES = sorted(p.stem for p in (Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.py"))


def _pip(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], capture_output=True,
                          text=True, timeout=600, **kw)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    src = copy_worktree(tmp / "src")
    done = _pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(tmp / "dist"), str(src))
    wheels = list((tmp / "dist").glob("xaikit-*.whl"))
    if done.returncode != 0 or not wheels:
        pytest.skip(f"cannot build a wheel of xaikit offline here: {(done.stderr or done.stdout)[-1500:]}")
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    done = _pip("--python", str(python), "install", "--no-deps", "--no-index", str(wheel))
    if done.returncode != 0:
        pytest.skip(f"pip cannot install into another environment here (pip --python): {done.stderr[-800:]}")
    return root


def _env(venv: Path) -> dict[str, str]:
    """The environment of a person who activated ``venv`` (no PYTHONPATH pointing at this checkout)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def _xaikit(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "xaikit"), *args], cwd=cwd, env=_env(venv), capture_output=True,
                          text=True, timeout=300)


def test_the_wheel_carries_the_notebooks_and_the_license(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert sorted(n for n in names if n.startswith("xaikit/_lectures/")) == [
        f"xaikit/_lectures/{stem}.ipynb" for stem in LECTURES]
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: MIT" in metadata


def test_xaikit_alone_from_an_empty_folder(venv, tmp_path):
    work = tmp_path / "empty"
    work.mkdir()
    done = _xaikit(venv, work, "--version")
    assert done.returncode == 0 and done.stdout.startswith("xaikit 0.1.0 (") and str(venv) in done.stdout, done
    done = _xaikit(venv, work, "--help")
    assert done.returncode == 0 and "examples:" in done.stdout

    done = _xaikit(venv, work, "notebooks", "copy", "mine")
    assert done.returncode == 0, done.stderr
    mine = work / "mine"
    assert sorted(p.stem for p in mine.iterdir()) == LECTURES
    for path in mine.iterdir():
        nb = json.loads(path.read_text())
        assert nb["metadata"]["kernelspec"]["name"] == "python3" and "jupytext" not in nb["metadata"]

    changed = mine / "02_integrated_gradients.ipynb"
    nb = json.loads(changed.read_text())
    nb["cells"][1]["source"] = ["# my own note\n"] + list(nb["cells"][1]["source"])
    changed.write_text(json.dumps(nb))
    before = changed.read_bytes()
    done = _xaikit(venv, work, "notebooks", "copy", "mine")
    assert done.returncode == 0 and changed.read_bytes() == before, done
    assert f"{len(LECTURES) - 1} up to date, 1 changed by you, kept" in done.stdout

    # every other command: what is missing and how to get it, exit status 2, no traceback
    expect = {("homework", "build"): 'pip install "xaikit[notebooks]"',
              ("homework", "nbgrader", "--out", "grading", "02"): 'pip install "xaikit[notebooks]"',
              ("notebooks", "build"): "works on the notebooks/ folder of a clone of the xaikit repository",
              ("notebooks", "check"): "works on the notebooks/ folder of a clone of the xaikit repository",
              ("notebooks", "run", "01"): "works on the notebooks/ folder of a clone of the xaikit repository",
              ("prepare",): "one of xaikit's own dependencies"}
    for args, says in expect.items():
        done = _xaikit(venv, work, *args)
        assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr, (args, done)
    assert sorted(p.name for p in work.iterdir()) == ["mine"], "a failed command left folders behind"


def test_with_the_notebooks_extra_homework_works_outside_a_checkout(venv, tmp_path):
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             env=_env(venv), capture_output=True, text=True, check=True).stdout.strip()
    pth = Path(purelib) / "zz-this-environment.pth"
    pth.write_text("\n".join(site.getsitepackages()) + "\n")
    try:
        work = tmp_path / "empty"
        work.mkdir()
        where = subprocess.run([str(venv / "bin" / "python"), "-c", "import xaikit, nbformat; print(xaikit.__file__)"],
                               cwd=work, env=_env(venv), capture_output=True, text=True)
        assert where.returncode == 0 and where.stdout.startswith(purelib), where
        done = _xaikit(venv, work, "homework", "build", "--out", "course", "02")
        assert done.returncode == 0, done.stderr
        assert [p.name for p in (work / "course" / "exercises").iterdir()] == ["02_integrated_gradients.ipynb"]
        done = _xaikit(venv, work, "homework", "nbgrader", "--out", "grading", "02")
        assert done.returncode == 0, done.stderr
        assert (work / "grading" / "source" / "02_integrated_gradients" / "02_integrated_gradients.ipynb").exists()
    finally:
        pth.unlink()
