"""The folders the pages and slides are written to: xaikit's MathJax and reveal.js copies go beside a page,
and a ``mathjax/`` or ``reveal.js/`` folder there that xaikit did not write (an instructor's course site with
its own reveal.js theme) is never deleted: the copy goes into ``xaikit-mathjax/`` or ``xaikit-reveal.js/``
beside it, and where that name is taken too the export refuses, naming both. A folder given as ``--out`` that
is a file is refused with the option's name.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from xaikit.__main__ import main
from xaikit.course import notebooks as nbtools
from xaikit.course import pages

NOTEBOOKS = sorted(nbtools.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def _needs_reveal():
    try:
        pages.reveal_source()
    except ModuleNotFoundError as err:
        pytest.skip(str(err))


def _site(folder: Path) -> dict[Path, str]:
    """An instructor's own reveal.js theme and MathJax configuration in ``folder``: ``{file: text}``."""
    files = {folder / "reveal.js" / "css" / "theme" / "course.css": ".reveal { color: #123; }\n",
             folder / "mathjax" / "config" / "course.js": "MathJax.Hub.Config({});\n"}
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return files


def _small_notebook():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title\n\n$x^2$"), nbformat.v4.new_code_cell("x = 1")]
    return nb


def test_cli_slides_keep_a_reveal_and_mathjax_folder_not_xaikits(tmp_path: Path, capsys):
    _needs_reveal()
    files = _site(tmp_path)
    assert main(["notebooks", "slides", "01", "--out", str(tmp_path)]) == 0
    for path, text in files.items():
        assert path.read_text(encoding="utf-8") == text, path
    assert not (tmp_path / "reveal.js" / ".xaikit-reveal-version").exists()
    assert (tmp_path / "xaikit-reveal.js" / "js" / "reveal.js").is_file()
    assert (tmp_path / "xaikit-mathjax" / "MathJax.js").is_file()
    page = (tmp_path / f"{NOTEBOOKS[0].stem}.slides.html").read_text(encoding="utf-8")
    assert 'src="xaikit-reveal.js/js/reveal.js"' in page and "xaikit-mathjax/MathJax.js" in page
    err = capsys.readouterr().err
    assert f"{tmp_path / 'reveal.js'} is not xaikit's copy" in err and "left as it is" in err
    # a second export uses the copies beside them and still leaves the site alone
    assert main(["notebooks", "slides", "01", "--out", str(tmp_path)]) == 0
    assert all(path.read_text(encoding="utf-8") == text for path, text in files.items())


def test_export_html_and_student_page_keep_a_mathjax_folder_not_xaikits(tmp_path: Path):
    files = _site(tmp_path)
    page = nbtools.export_html(_small_notebook(), tmp_path / "page.html").read_text(encoding="utf-8")
    assert "xaikit-mathjax/MathJax.js" in page
    pages.export_page(_small_notebook(), tmp_path / "student.html", student=True)
    assert all(path.read_text(encoding="utf-8") == text for path, text in files.items())
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary folder left


def test_xaikits_own_copy_of_another_version_is_replaced(tmp_path: Path):
    nbtools.export_html(_small_notebook(), tmp_path / "page.html")
    stamp = tmp_path / "mathjax" / ".xaikit-mathjax-version"
    stamp.write_text("0.0 old", encoding="utf-8")
    (tmp_path / "mathjax" / "MathJax.js").write_text("// old", encoding="utf-8")
    page = nbtools.export_html(_small_notebook(), tmp_path / "page.html").read_text(encoding="utf-8")
    assert '"mathjax/MathJax.js' in page and stamp.read_text(encoding="utf-8") != "0.0 old"
    assert (tmp_path / "mathjax" / "MathJax.js").read_text(encoding="utf-8") != "// old"
    assert not (tmp_path / "xaikit-mathjax").exists()


def test_both_names_taken_refuses_naming_both(tmp_path: Path):
    files = _site(tmp_path)
    (tmp_path / "xaikit-mathjax").mkdir()
    (tmp_path / "xaikit-mathjax" / "mine.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(FileExistsError, match="xaikit-mathjax") as err:
        nbtools.export_html(_small_notebook(), tmp_path / "page.html")
    assert str(tmp_path / "mathjax") in str(err.value)
    assert all(path.read_text(encoding="utf-8") == text for path, text in files.items())
    assert (tmp_path / "xaikit-mathjax" / "mine.txt").read_text(encoding="utf-8") == "mine"


def test_a_file_named_like_the_copy_is_not_replaced(tmp_path: Path):
    (tmp_path / "mathjax").write_text("a file of mine", encoding="utf-8")
    page = nbtools.export_html(_small_notebook(), tmp_path / "page.html").read_text(encoding="utf-8")
    assert (tmp_path / "mathjax").read_text(encoding="utf-8") == "a file of mine"
    assert "xaikit-mathjax/MathJax.js" in page


@pytest.mark.parametrize("option", ["--html", "--student-html", "--slides"])
def test_cli_run_refuses_a_file_as_folder_before_running(tmp_path: Path, capsys, option: str, monkeypatch):
    monkeypatch.setattr(nbtools, "execute", lambda *a, **k: pytest.fail("ran a notebook"))
    out = tmp_path / "pages"
    out.write_text("not a folder", encoding="utf-8")
    assert main(["notebooks", "run", "01", option, str(out)]) == 2
    err = capsys.readouterr().err
    assert option in err and "is a file, not a folder" in err and "Traceback" not in err


def test_cli_slides_refuses_a_file_as_out(tmp_path: Path, capsys):
    out = tmp_path / "slides"
    out.write_text("not a folder", encoding="utf-8")
    assert main(["notebooks", "slides", "01", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "is a file, not a folder" in err
    assert out.read_text(encoding="utf-8") == "not a folder"
