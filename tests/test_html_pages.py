"""The pages and slides ``start.sh --headless`` writes, checked by reading the HTML.

* The students' page of every lecture notebook holds no solution code, no hidden test and no written answer,
  and the instructors' page holds all three (so the grep can fail): what a solution, a hidden test and an
  answer are is read from the notebook's own markers (``### BEGIN SOLUTION``, ``### BEGIN HIDDEN TESTS``,
  ``<details class="xk-answer">``), not listed here.
* A tqdm bar is shown as it ended (not frozen at "0%"), one closed during the run is gone, and SHAP's text
  plot has valid colours (no ``np.float64(...)`` in its CSS), from a notebook run in a real kernel.
* The slide show has one slide per section (the title and each ``##`` heading) and loads reveal.js and
  MathJax from files beside it, no http(s) address.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from xaikit.course import homework, pages
from xaikit.course import notebooks as nbtools

NOTEBOOKS = sorted(nbtools.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def page_text(page: str) -> str:
    """What a page says, without any white space: its tags removed (pygments splits a line of code into
    spans, Markdown a sentence across lines), entities decoded. Needles of 20 characters and more compared
    this way match only what the page says."""
    body = re.sub(r"<(script|style)\b.*?</\1>", "", page, flags=re.DOTALL | re.IGNORECASE)
    return squash(html.unescape(re.sub(r"<[^>]+>", "", body)))


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _regions(source: str, begin: str, end: str) -> list[str]:
    lines, out, inside = source.splitlines(), [], False
    for line in lines:
        if line.strip() == begin:
            inside = True
        elif line.strip() == end:
            inside = False
        elif inside and len(line.strip()) >= 20:
            out.append(line)
    return out


def secrets(nb) -> dict[str, list[str]]:
    """The lines of ``nb``'s solution blocks and hidden tests, and the sentences of its written answers, each
    one that occurs nowhere else in the notebook (so its absence from a page means it was cut)."""
    solution = [line for c in nb.cells if c.cell_type == "code"
                for line in _regions(c.source, homework.BEGIN, homework.END)]
    hidden = [line for c in nb.cells if c.cell_type == "code"
              for line in _regions(c.source, homework.HIDDEN_BEGIN, homework.HIDDEN_END)]
    answers = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for block in homework._DETAILS.finditer(cell.source):
                body = homework._SUMMARY.sub("", block.group("body"))
                answers += [s for s in re.split(r"(?<=[.?!])\s+|\n\s*\n", body)
                            if len(s) >= 40 and not re.search(r"[`*_$<>\[\]\\|]", s)]  # plain prose only
    rest = "\n".join(c.source for c in pages.student_page(nb).cells)
    return {"solution": [squash(s) for s in solution if s.strip() not in rest],
            "hidden": [squash(s) for s in hidden if s.strip() not in rest],
            "answer": [squash(s) for s in answers if squash(s) not in squash(rest)]}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_student_page_has_no_solution_hidden_test_or_answer(path: Path, tmp_path: Path):
    nb = nbformat.read(path, as_version=4)
    cut = secrets(nb)
    assert cut["solution"] and cut["answer"], f"{path.name}: found no solution or answer to look for"
    teacher = nbtools.export_html(nb, tmp_path / "html" / f"{path.stem}.html").read_text()
    student = pages.export_page(nb, tmp_path / "student" / f"{path.stem}.html", student=True).read_text()
    said, said_to_students = page_text(teacher), page_text(student)
    for kind, lines in cut.items():
        missing = [line for line in lines if line not in said]
        assert not missing, f"{path.name}: the instructors' page lacks {kind} text {missing[:2]}"
        leaked = [line for line in lines if line in said_to_students]
        assert not leaked, f"{path.name}: the students' page shows {kind} text {leaked[:2]}"
    for marker in (homework.BEGIN, homework.END, homework.HIDDEN_BEGIN, homework.HIDDEN_END):
        assert squash(marker) not in said_to_students
    assert squash(homework.BEGIN) in said and 'class="xk-answer"' in teacher
    assert 'class="xk-answer"' not in student and "xk-answer" not in student
    assert said_to_students.count(squash(homework.STUB_COMMENT)) == sum(
        homework.BEGIN in line for c in nb.cells for line in c.source.splitlines())
    if cut["hidden"]:
        assert squash(homework.HIDDEN_BEGIN) in said
    # the same page otherwise: title, formulas' MathJax, every section
    assert student.count("<h2") == teacher.count("<h2") > 0
    assert (tmp_path / "student" / "mathjax" / "MathJax.js").is_file()


def test_student_page_drops_what_a_solution_printed(tmp_path: Path):
    nb = nbformat.v4.new_notebook()
    solved = nbformat.v4.new_code_cell(f"def f(x):\n    {homework.BEGIN}\n    return 41 + x\n    {homework.END}\nf(1)")
    solved.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "42"}, execution_count=1)]
    later = nbformat.v4.new_code_cell("print('the lecture goes on')")
    later.outputs = [nbformat.v4.new_output("stream", name="stdout", text="the lecture goes on\n")]
    nb.cells = [solved, later, nbformat.v4.new_markdown_cell(
        'Why?\n\n<details class="xk-answer"><summary>Why 42?</summary>\n\nBecause forty-one and one.\n</details>')]
    page = pages.student_page(nb)
    assert "41 + x" not in page.cells[0].source and homework.STUB_COMMENT in page.cells[0].source
    assert page.cells[0].outputs == [] and page.cells[1].outputs == later.outputs
    assert "forty-one" not in page.cells[2].source and "Why 42?" in page.cells[2].source
    assert "41 + x" in nb.cells[0].source and nb.cells[0].outputs  # the notebook itself is untouched
    with pytest.raises(TypeError, match="student must be True or False"):
        pages.export_page(nb, tmp_path / "page.html", student="yes")
    assert not list(tmp_path.iterdir())  # refused before anything was written


def test_student_page_hides_what_a_check_reported_on_the_solution(tmp_path: Path):
    """A check cell ran against the solution: under the stub its "all checks passed" and the expected values
    would hand the answer over, so the page shows one line saying when the check runs instead."""
    nb = nbformat.v4.new_notebook()
    solved = nbformat.v4.new_code_cell(f"def my_f(x):\n    {homework.BEGIN}\n    return 41 + x\n    {homework.END}")
    solved.metadata["nbgrader"] = {"grade": False, "solution": True, "grade_id": "my_f", "locked": False}
    check = nbformat.v4.new_code_cell(f"assert check_f(my_f)\n{homework.HIDDEN_BEGIN}\nassert check_f(my_f).passed\n"
                                      f"{homework.HIDDEN_END}")
    check.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": "my_f-check", "points": 1}
    check.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                            text="check_f: all checks passed\n  ok    f(1) = 42\n")]
    check.execution_count = 2
    plain = nbformat.v4.new_code_cell("assert my_f(1) == 42  # a lecture cell, no grader's")  # not a check cell
    plain.outputs = [nbformat.v4.new_output("stream", name="stdout", text="the lecture goes on\n")]
    nb.cells = [solved, check, plain]
    page = pages.student_page(nb)
    shown = "".join(o.get("text", "") for o in page.cells[1].outputs)
    assert "all checks passed" not in shown and "42" not in shown
    assert shown == pages.check_note(check) + "\n" and "written my_f above" in shown
    assert page.cells[1].execution_count is None
    assert page.cells[2].outputs == plain.outputs
    assert check.outputs[0]["text"].startswith("check_f: all checks passed")  # the notebook itself is untouched
    said = page_text(pages.export_page(nb, tmp_path / "page.html", student=True).read_text())
    assert squash("all checks passed") not in said and squash(pages.check_note(check)) in said
    # a check cell told by its hidden tests alone (no nbgrader metadata) is cleared too
    del check.metadata["nbgrader"]
    bare = pages.student_page(nb).cells[1]
    assert "all checks passed" not in bare.outputs[0]["text"] and "exercise's function" in bare.outputs[0]["text"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_check_cell_of_a_lecture_is_seen_as_one(path: Path):
    """Every exercise's ``-check`` cell of the lecture notebooks is recognised, so none keeps its run's report."""
    nb = nbformat.read(path, as_version=4)
    checks = [c for c in nb.cells if c.cell_type == "code"
              and str(c.metadata.get("nbgrader", {}).get("grade_id", "")).endswith("-check")]
    assert checks, f"{path.name}: no check cell found to look at"
    assert all(pages._is_check(c) for c in checks)
    assert not any(pages._is_check(c) for c in nb.cells if c.cell_type == "code" and c not in checks
                   and homework.HIDDEN_BEGIN not in c.source)


class _Sections(HTMLParser):
    """The ``<section>`` elements of a reveal.js page: how many at the top (slides) and below (subslides)."""

    def __init__(self):
        super().__init__()
        self.depth, self.top, self.nested = 0, 0, 0

    def handle_starttag(self, tag, attrs):
        if tag == "section":
            self.depth += 1
            self.top += self.depth == 1
            self.nested += self.depth == 2

    def handle_endtag(self, tag):
        if tag == "section":
            self.depth -= 1


def sections(nb) -> int:
    """The title and each ``##`` section of ``nb``: Markdown cells with a heading of level 1 or 2."""
    return sum(1 for c in nb.cells if c.cell_type == "markdown"
               and re.search(r"^\s{0,3}#{1,2}\s+\S", c.source, re.MULTILINE))


def _needs_reveal():
    import os

    try:
        pages.reveal_source()
    except ModuleNotFoundError as err:
        if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:
            pytest.fail(str(err))
        pytest.skip(str(err))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_slides_one_per_section_and_offline(path: Path, tmp_path: Path):
    _needs_reveal()
    nb = nbformat.read(path, as_version=4)
    page = pages.export_slides(nb, tmp_path / "slides" / f"{path.stem}.slides.html").read_text()
    found = _Sections()
    found.feed(page)
    assert found.depth == 0, "unbalanced <section> tags"
    assert found.top == sections(nb) >= 5, (found.top, sections(nb))
    assert found.nested > found.top  # subslides below the sections, so a slide fits a screen
    loaded = re.findall(r"""<(?:script|link)\b[^>]*?(?:src|href)\s*=\s*["']([^"']+)""", page)
    assert any("reveal.js/js/reveal.js" in u for u in loaded) and any("mathjax/MathJax.js" in u for u in loaded)
    assert not [u for u in loaded if re.match(r"(https?:)?//", u)], loaded
    assert not re.search(r"https?://[^\s\"']*(reveal|mathjax|require|jquery|mermaid)", page, re.IGNORECASE)
    folder = tmp_path / "slides"
    for part in ("reveal.js/js/reveal.js", "reveal.js/css/reveal.css", "reveal.js/css/theme/white.css",
                 "reveal.js/plugin/notes/notes.js", "reveal.js/LICENSE", "mathjax/MathJax.js"):
        assert (folder / part).is_file(), part
    assert nbtools.page_title(nb) in page  # <title>


def test_slide_boundaries_from_headings():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_markdown_cell("## 1. First"), nbformat.v4.new_markdown_cell("more text"),
                nbformat.v4.new_code_cell("x"), nbformat.v4.new_markdown_cell("text after code"),
                nbformat.v4.new_markdown_cell("### A subsection"), nbformat.v4.new_markdown_cell("## 2. Second"),
                nbformat.v4.new_markdown_cell("kept as its author set it")]
    nb.cells[-1].metadata["slideshow"] = {"slide_type": "notes"}
    kinds = [c.metadata["slideshow"]["slide_type"] for c in pages.slide_boundaries(nb).cells]
    assert kinds == ["slide", "-", "slide", "-", "-", "subslide", "subslide", "slide", "notes"]
    assert "slideshow" not in nb.cells[0].metadata  # a copy


@pytest.mark.notebook
def test_progress_bars_and_shap_text_as_they_ended(tmp_path: Path):
    """Run in a kernel as the lecture notebooks are: tqdm.auto draws widget bars there, whose text was
    written at 0%; SHAP 0.51 writes its text plot's colours as np.float64(...) under NumPy 2."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("from tqdm.auto import tqdm\nfor i in tqdm(range(7), desc='kept bar'):\n    pass"),
        nbformat.v4.new_code_cell("for i in tqdm(range(5), desc='closed bar', leave=False):\n    pass"),
        nbformat.v4.new_code_cell(
            "import numpy as np, shap\n"
            "e = shap.Explanation(values=np.array([0.8, -0.5, 0.1]), base_values=0.2,\n"
            "                     data=np.array(['good ', 'bad ', 'film']))\n"
            "shap.plots.text(e)"),
    ]
    path = tmp_path / "bars.ipynb"
    nbformat.write(nb, path)
    ran, _ = nbtools.execute(path, timeout=300)
    raw = [o.get("data", {}) for c in ran.cells for o in c.outputs]
    assert any("0%" in str(d.get("text/plain", "")) for d in raw)  # what the export must not show
    shap_html = next(d["text/html"] for d in raw if "text/html" in d)
    if isinstance(shap_html, list):
        shap_html = "".join(shap_html)
    assert re.search(r"rgba?\(\s*[0-9.]", shap_html) or "np.float64(" in shap_html

    page = nbtools.export_html(ran, tmp_path / "html" / "bars.html").read_text()
    said = page_text(page)
    assert "keptbar:100%" in said and "7/7" in said, said[:500]
    assert "closedbar:" not in said  # its text (the name alone is in the code)
    assert not re.search(r"\b0%\|", said)
    assert 'progress value="7" max="7"' in page or 'max="7" value="7"' in page
    assert "np.float64(" not in page and "np.float" not in page
    shown = next(o["data"]["text/html"] for c in nbtools.static_pictures(ran).cells for o in c.outputs
                 if "shap.plots.text" in c.source and "text/html" in o.get("data", {}))
    colours = re.findall(r"rgba?\(([^)]*)\)", shown)  # every colour of SHAP's plot is valid CSS: numbers
    assert colours and all(re.fullmatch(r"\s*[0-9.]+(\s*,\s*[0-9.]+)*\s*", c) for c in colours), colours[:5]
    assert "rgb(255.0, 0.0, 81" in shown  # SHAP's red (its colours are fixed, not the page's)


def test_repair_numpy_css():
    css = "fill:rgb(np.float64(255.0), np.float64(0.0), np.float64(81.08)); background: rgba(np.float32(1e-3))"
    assert nbtools.repair_numpy_css(css) == "fill:rgb(255.0, 0.0, 81.08); background: rgba(1e-3)"
    assert nbtools.repair_numpy_css("np.float64 is a type") == "np.float64 is a type"


def test_cli_options_go_with_their_action(capsys):
    from xaikit.__main__ import main

    with pytest.raises(SystemExit):
        main(["notebooks", "build", "--student-html", "x"])
    assert "--student-html" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["notebooks", "run", "--out", "x"])
    assert "go with `notebooks slides`" in capsys.readouterr().err


def test_cli_slides_writes_them(tmp_path: Path):
    _needs_reveal()
    from xaikit.__main__ import main

    assert main(["notebooks", "slides", "01", "--out", str(tmp_path), "--student"]) == 0
    page = (tmp_path / f"{NOTEBOOKS[0].stem}.slides.html").read_text()
    assert squash(homework.BEGIN) not in page_text(page) and squash(homework.STUB_COMMENT) in page_text(page)
