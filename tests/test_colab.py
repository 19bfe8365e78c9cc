"""The Colab setup cell (xaikit.course.colab.CELL), run against a stand-in ``google.colab`` module: it does
nothing outside Colab, installs from the first source it finds, builds the models, turns on Colab's widget
manager, and says how to give a source when there is none."""

from __future__ import annotations

import glob
import importlib.machinery
import importlib.util
import subprocess
import sys
import types

import pytest

from xaikit.course import colab
from xaikit.course import notebooks as nbtools

_REAL_FIND_SPEC = importlib.util.find_spec


class FakeColab:
    """``google.colab`` as the cell sees it, recording every command it would run."""

    def __init__(self, monkeypatch, installed: bool, files: dict[str, list[str]] | None = None):
        self.calls: list[list[str]] = []
        self.widget_manager = 0
        google = types.ModuleType("google")
        colab_mod = types.ModuleType("google.colab")
        output = types.ModuleType("google.colab.output")
        output.enable_custom_widget_manager = self._enable
        colab_mod.output = output
        google.colab = colab_mod
        for name, mod in {"google": google, "google.colab": colab_mod, "google.colab.output": output}.items():
            monkeypatch.setitem(sys.modules, name, mod)
        monkeypatch.setattr(subprocess, "check_call", lambda cmd: self.calls.append(list(cmd)) or 0)
        real_find_spec = importlib.util.find_spec
        monkeypatch.setattr(importlib.util, "find_spec",
                            lambda name, *a: None if name == "xaikit" and not installed else real_find_spec(name, *a))
        files = files or {}
        monkeypatch.setattr(glob, "glob", lambda pattern: list(files.get(pattern, [])))
        monkeypatch.delenv("XAIKIT_SOURCE", raising=False)

    def _enable(self):
        self.widget_manager += 1

    def run(self):
        exec(compile(colab.CELL, "colab-cell", "exec"), {"__name__": "__main__"})

    @property
    def installs(self):
        return [c[c.index("install") + 2:] for c in self.calls if "pip" in c]

    @property
    def prepares(self):
        return [c for c in self.calls if c[-2:] == ["xaikit", "prepare"]]


def test_outside_colab_it_does_nothing(monkeypatch):
    calls = []
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.setattr(subprocess, "check_call", lambda cmd: calls.append(cmd))
    exec(compile(colab.CELL, "colab-cell", "exec"), {"__name__": "__main__"})
    assert calls == []


def test_installs_from_xaikit_source_then_prepares(monkeypatch):
    fake = FakeColab(monkeypatch, installed=False,
                     files={"/content/xaikit-*.whl": ["/content/xaikit-0.1.0-py3-none-any.whl"]})
    monkeypatch.setenv("XAIKIT_SOURCE", "git+https://example.org/course/xaikit.git")
    fake.run()
    assert fake.installs == [["git+https://example.org/course/xaikit.git"]]  # the variable wins over a wheel
    assert fake.calls[0][:4] == [sys.executable, "-m", "pip", "install"]
    assert fake.prepares == [[sys.executable, "-m", "xaikit", "prepare"]]
    assert fake.calls.index(fake.prepares[0]) > 0  # after the install
    assert fake.widget_manager == 1


def test_newest_uploaded_wheel_before_a_clone(monkeypatch, tmp_path):
    clone = tmp_path / "xaikit-main"
    clone.mkdir()
    (clone / "pyproject.toml").write_text('[project]\nname = "xaikit"\n')
    fake = FakeColab(monkeypatch, installed=False, files={
        "/content/xaikit-*.whl": ["/content/xaikit-0.1.0-py3-none-any.whl", "/content/xaikit-0.2.0-py3-none-any.whl"],
        "/content/*/pyproject.toml": [str(clone / "pyproject.toml")]})
    fake.run()
    assert fake.installs == [["/content/xaikit-0.2.0-py3-none-any.whl"]]


def test_a_clone_of_the_repository_and_not_another_project(monkeypatch, tmp_path):
    other, ours = tmp_path / "a-other", tmp_path / "b-ours"
    for folder, name in ((other, "something-else"), (ours, "xaikit")):
        folder.mkdir()
        (folder / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n')
    fake = FakeColab(monkeypatch, installed=False, files={
        "/content/*/pyproject.toml": [str(other / "pyproject.toml"), str(ours / "pyproject.toml")]})
    fake.run()
    assert fake.installs == [[str(ours)]]


def test_a_clone_named_xaikit_in_the_working_directory_is_not_an_install(monkeypatch, tmp_path):
    """`!git clone <url>` in Colab's working directory /content makes /content/xaikit, which find_spec
    reports as a namespace package (origin None): the cell must still install from that clone."""
    clone = tmp_path / "xaikit"
    (clone / "xaikit").mkdir(parents=True)
    (clone / "pyproject.toml").write_text('[project]\nname = "xaikit"\n')
    namespace = importlib.machinery.PathFinder.find_spec("xaikit", [str(tmp_path)])
    assert namespace is not None and namespace.origin is None  # what find_spec("xaikit") gives there
    fake = FakeColab(monkeypatch, installed=False, files={"/content/*/pyproject.toml": [str(clone / "pyproject.toml")]})
    real = _REAL_FIND_SPEC
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: namespace if name == "xaikit" else real(name, *a))
    fake.run()
    assert fake.installs == [[str(clone)]] and len(fake.prepares) == 1


def test_already_installed_skips_pip_but_prepares(monkeypatch):
    fake = FakeColab(monkeypatch, installed=True)
    fake.run()
    assert fake.installs == [] and len(fake.prepares) == 1 and fake.widget_manager == 1


def test_no_source_says_how_to_give_one(monkeypatch):
    fake = FakeColab(monkeypatch, installed=False)
    with pytest.raises(RuntimeError, match="XAIKIT_SOURCE") as err:
        fake.run()
    assert "/content" in str(err.value) and "pip wheel" in str(err.value)
    assert fake.calls == []


def test_the_clone_test_matches_this_repository():
    """The cell recognises a clone by its pyproject.toml; this repository's must pass that test."""
    assert 'name = "xaikit"' in (nbtools.project_root() / "pyproject.toml").read_text()


def test_every_built_notebook_has_the_cell_as_a_collapsed_form():
    """The sources carry no copy of the cell; every built lecture notebook carries it once, as its second code
    cell (after the presenter switch), equal to xaikit.course.colab.CELL."""
    import nbformat

    for src in nbtools.sources():
        assert colab.MARK not in src.read_text(encoding="utf-8"), src.name
        for nb in (nbtools.to_notebook(src), nbformat.read(src.with_suffix(".ipynb"), as_version=4)):
            code = [c for c in nb.cells if c.cell_type == "code"]
            assert colab.PRESENTER_LINE in code[0].source, src.name
            assert code[1].source.strip() == colab.CELL.strip(), src.name
            assert sum(colab.MARK in c.source for c in nb.cells) == 1, src.name
            assert code[1].source.startswith("#@title"), src.name  # Colab shows the title, not the code
            assert code[1].metadata.get("cellView") == "form", src.name
            assert code[1].metadata.get("jupyter", {}).get("source_hidden") is True, src.name


def test_the_cell_stays_out_of_a_source_written_back_from_its_notebook():
    """Writing a built notebook's cells back into its source leaves the cell out; building again puts it back."""
    src = nbtools.sources(["01"])[0]
    text = src.read_text(encoding="utf-8")
    back = nbtools._source_text(nbtools.to_notebook(src), text)
    assert colab.MARK not in back
    assert nbtools.content_digest(nbtools._from_text(back)) == nbtools.content_digest(nbtools.to_notebook(src))
    plain = nbtools._from_text("# %%\nprint('no presenter switch')\n")  # not a lecture notebook: no cell
    assert all(colab.MARK not in c.source for c in plain.cells)



def test_an_ipywidgets_upgraded_under_the_kernel_asks_for_a_restart(monkeypatch):
    fake = FakeColab(monkeypatch, installed=False)
    monkeypatch.setenv("XAIKIT_SOURCE", "/content/xaikit-0.1.0-py3-none-any.whl")
    old = types.ModuleType("ipywidgets")
    old.__version__ = "7.7.1"  # what Colab had imported before pip put 8.x on disk
    monkeypatch.setitem(sys.modules, "ipywidgets", old)
    with pytest.raises(RuntimeError, match="Restart session"):
        fake.run()
    assert len(fake.installs) == 1 and fake.prepares == []  # installed; models wait for the restart


def test_the_html_export_leaves_the_cell_out(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("# import xaikit.course.presenter"), nbformat.v4.new_code_cell(colab.CELL),
                nbformat.v4.new_code_cell("print('kept')")]
    page = nbtools.export_html(nb, tmp_path / "page.html").read_text()
    assert "Colab setup" not in page and "import xaikit.course.presenter" in page and "kept" in page


def test_colab_badges_one_per_lecture_notebook():
    """`xaikit notebooks badges OWNER/NAME`: a Markdown table for a README, one Colab link per notebook, at the
    address Colab opens a GitHub notebook from (xaikit has no address of its own: the caller names it)."""
    import re

    names = sorted(p.name for p in nbtools.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    table = colab.badges("my-course/xaikit", names, branch="ws2026")
    links = re.findall(r"\]\((https://colab\.research\.google\.com/github/[^)]+)\)", table)
    assert {"05_tcav.ipynb", "06_attention_lab.ipynb", "07_tcav_lab.ipynb"} <= set(names) and links == [
        f"https://colab.research.google.com/github/my-course/xaikit/blob/ws2026/notebooks/{n}" for n in names]
    assert table.count(colab.BADGE_IMAGE) == len(names)
    for bad, param in ((dict(repo="https://github.com/a/b"), "repo"), (dict(repo="xaikit"), "repo"),
                       (dict(repo="a/b", branch="two words"), "branch")):
        with pytest.raises(ValueError, match=param):
            colab.badges(notebooks=names, **bad)
    with pytest.raises(ValueError, match="notebook"):
        colab.colab_url("a/b", "../secret.ipynb")


def test_badges_command(capsys):
    from xaikit.__main__ import main

    assert main(["notebooks", "badges", "my-course/xaikit"]) == 0
    assert "github/my-course/xaikit/blob/main/notebooks/01_" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["notebooks", "badges"])
    assert "owner/name" in capsys.readouterr().err
