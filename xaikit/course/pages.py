"""What ``start.sh --headless`` writes from one run of each lecture notebook, besides the instructors'
pages (:func:`xaikit.course.notebooks.export_html`): the students' pages and reveal.js slides.

* **Students' pages** (:func:`student_page`, :func:`export_page`): the lecture cut by the exercise sheet's own
  transforms (:mod:`xaikit.course.homework`: :func:`~xaikit.course.homework.student_code`,
  :func:`~xaikit.course.homework.student_markdown`), so a page never shows what the sheet hides.
* **Slides** (:func:`export_slides`, :func:`slides`): slide boundaries set from the section headings when the
  slides are written (:func:`slide_boundaries`; the notebook sources carry no slide metadata), reveal.js copied
  beside the page from the ``rise`` package and MathJax as for the pages, so they work with no network.

A module of its own because it joins :mod:`~xaikit.course.notebooks` and :mod:`~xaikit.course.homework`,
which already imports the former.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import TYPE_CHECKING

from xaikit._files import write_export
from xaikit._validate import bool_flags
from xaikit.course import export
from xaikit.course import notebooks as nbtools
from xaikit.course.cutting import HIDDEN_BEGIN, student_code, student_markdown

if TYPE_CHECKING:
    from nbformat import NotebookNode


@bool_flags
def export_page(nb: NotebookNode, path: Path, student: bool = False) -> Path:
    """:func:`~xaikit.course.notebooks.export_html`, or with ``student=True`` the students' page
    (:func:`student_page`: no solutions, no hidden tests, no written answers)."""
    return export.export_html(_student(nb, student), path)


def _student(nb, student: bool):
    if not isinstance(student, bool):
        raise TypeError(f"student must be True or False, got {type(student).__name__} {student!r}")
    return student_page(nb) if student else nb


def student_page(nb: NotebookNode) -> NotebookNode:
    """A copy of a lecture notebook (run or not) as students may see it, cut by the exercise sheet's own
    transforms (:mod:`xaikit.course.homework`): in each code cell the hidden tests are removed and every
    solution block becomes the ``# YOUR CODE HERE`` stub (:func:`~xaikit.course.homework.student_code`), and
    the outputs of such a cell go too (they show what the solution printed or drew); in each Markdown cell
    every written answer becomes "YOUR ANSWER HERE", as on the sheet and under nbgrader
    (:func:`~xaikit.course.homework.student_markdown`). An exercise's check cell (nbgrader's ``grade`` cell, or
    one with hidden tests) ran against the solution, so its report ("all checks passed" and the expected
    values) is replaced by one line saying the check runs when the student has written the function
    (:func:`check_note`). What later cells printed stays: it is the lecture's."""
    import nbformat

    nb = copy.deepcopy(nb)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            check = _is_check(cell)
            cell.source, stubs = student_code(cell.source, where=f"cell {index}")
            if stubs:
                cell.outputs = []
                cell.execution_count = None
            elif check:
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=check_note(cell) + "\n")]
                cell.execution_count = None
        elif cell.cell_type == "markdown":
            cell.source, _ = student_markdown(cell.source, where=f"cell {index}")
    return nb


def _is_check(cell) -> bool:
    """Whether a code cell checks an exercise: nbgrader's ``grade`` cell that is no solution, or a cell holding
    hidden tests (:data:`~xaikit.course.homework.HIDDEN_BEGIN`)."""
    meta = cell.metadata.get("nbgrader", {})
    graded = isinstance(meta, dict) and meta.get("grade") is True and not meta.get("solution")
    return graded or any(line.strip() == HIDDEN_BEGIN for line in cell.source.splitlines())


def check_note(cell: NotebookNode) -> str:
    """The line a students' page shows instead of a check cell's output: the exercise's function, named from the
    cell's ``grade_id`` (``my_cav-check``: ``my_cav``) or else said plainly."""
    meta = cell.metadata.get("nbgrader", {})
    grade_id = meta.get("grade_id", "") if isinstance(meta, dict) else ""
    name = grade_id[:-len("-check")] if isinstance(grade_id, str) and grade_id.endswith("-check") else ""
    what = name or "the exercise's function"
    return f"(This check runs when you have written {what} above: it reports each case it tries.)"


def run(names: list[str] | None = None, html_dir: str | None = None, timeout: int = 600,
        student_dir: str | None = None, slides_dir: str | None = None) -> None:
    """Build and execute each notebook once, writing from that one run: the instructors' pages to
    ``html_dir``, the students' pages (:func:`student_page`) to ``student_dir``, reveal.js slides
    (:func:`export_slides`) to ``slides_dir``; each folder is self-contained (its own MathJax and reveal.js).
    A folder that is a file is refused before any notebook runs."""
    for option, folder in (("--html", html_dir), ("--student-html", student_dir), ("--slides", slides_dir)):
        if folder:
            export.ensure_folder(folder, option, make=False)
    for target in nbtools.build(names):
        nb, seconds = nbtools.execute(target, timeout=timeout)
        print(f"{target.name}: ran in {seconds:.1f} s")
        if html_dir:
            export.export_html(nb, Path(html_dir) / f"{target.stem}.html")
        if student_dir:
            export_page(nb, Path(student_dir) / f"{target.stem}.html", student=True)
        if slides_dir:
            export_slides(nb, Path(slides_dir) / f"{target.stem}.slides.html")


#: a Markdown line that opens a section (``#`` or ``##``) or a subsection (``###``)
_HEADING = re.compile(r"^\s{0,3}(#{1,3})\s+\S", re.MULTILINE)


def slide_boundaries(nb: NotebookNode) -> NotebookNode:
    """A copy of ``nb`` with reveal.js slide metadata (``metadata.slideshow.slide_type``) set from its
    headings, so the notebook sources carry none: a Markdown cell with a ``#`` or ``##`` heading starts a
    slide (one per section: the title, then 1., 2., ...), one with a ``###`` heading a subslide below it, and
    so does a Markdown cell that follows code (each stretch of text and the code after it is one vertical
    subslide, which fits a screen better than a whole section). A cell that already has a slide type keeps it."""
    nb = copy.deepcopy(nb)
    previous = None
    for cell in nb.cells:
        show = cell.metadata.get("slideshow")
        if isinstance(show, dict) and show.get("slide_type"):
            previous = cell.cell_type
            continue
        kind = "-"
        if cell.cell_type == "markdown":
            levels = [len(m.group(1)) for m in _HEADING.finditer(cell.source)]
            if levels and min(levels) <= 2:
                kind = "slide"
            elif levels or previous == "code":
                kind = "subslide"
        cell.metadata["slideshow"] = {"slide_type": kind}
        previous = cell.cell_type
    return nb


#: the files of reveal.js a slide show loads, copied from the ``rise`` package (reveal.js 3.9, MIT licence)
_REVEAL_PARTS = ("LICENSE", "js/reveal.js", "css/reveal.css", "css/theme/white.css", "lib/font/source-sans-pro",
                 "plugin/notes/notes.js", "plugin/notes/notes.html")


def reveal_source() -> Path:
    """The reveal.js folder inside the installed ``rise`` package (found without importing it: its
    ``__init__`` needs ``pkg_resources``). Raises ``ModuleNotFoundError`` saying how to install it."""
    import importlib.util

    spec = importlib.util.find_spec("rise")
    folder = Path(next(iter(spec.submodule_search_locations or []), "")) / "static" / "reveal.js" if spec else None
    if folder is None or not (folder / "js" / "reveal.js").is_file():
        raise ModuleNotFoundError("slides need reveal.js, which xaikit copies from the `rise` package: pip install "
                                  "rise (it is in xaikit's slides extra and requirements.lock)", name="rise")
    return folder


def offline_reveal(folder: Path) -> str:
    """Copy the parts of reveal.js a slide show needs into ``folder/reveal.js`` (once per ``rise`` version,
    through :func:`~xaikit.course.notebooks.offline_folder`, as :func:`~xaikit.course.notebooks.offline_mathjax`:
    a ``reveal.js/`` folder xaikit did not write is never touched, the copy goes to ``folder/xaikit-reveal.js``)
    and return the page-relative folder that holds them."""
    import shutil
    from importlib.metadata import version

    source = reveal_source()

    def fill(tmp: Path) -> None:
        for part in _REVEAL_PARTS:
            (tmp / part).parent.mkdir(parents=True, exist_ok=True)
            if (source / part).is_dir():
                shutil.copytree(source / part, tmp / part)
            else:
                shutil.copy2(source / part, tmp / part)

    return export.offline_folder(folder, "reveal.js", ".xaikit-reveal-version", f"rise {version('rise')}", fill,
                                  "reveal.js")


#: the slide page: nbconvert's reveal template with every script and style sheet from files beside the page
#: (nbconvert's own loads reveal.js, require.js, jQuery and mermaid from CDNs); reveal.js 3.9's API
_SLIDES_TEMPLATE = """{%- extends 'index.html.j2' -%}
{% from 'mathjax.html.j2' import mathjax %}
{%- block header -%}
<!DOCTYPE html>
<html lang="{{ resources.language_code }}">
<head>
<meta charset="utf-8" />
<meta name="viewport" content="width=device-width, initial-scale=1" />
<title>{{ resources['metadata']['name'] | escape_html_keep_quotes }}: slides</title>
<link rel="stylesheet" href="{{ resources.reveal.url_prefix }}/css/reveal.css">
<link rel="stylesheet" href="{{ resources.reveal.url_prefix }}/css/theme/white.css" id="theme">
{% for css in resources.inlining.css -%}
<style type="text/css">{{ css }}</style>
{% endfor %}
{{ resources.include_css("static/index.css") }}
{{ resources.include_css("static/theme-light.css") }}
{{ resources.include_css("static/custom_reveal.css") }}
<style type="text/css">
a.anchor-link { display: none; }
.jp-Notebook { padding: 0; }
/* reveal.js 3 sizes its slides from .reveal, which nbconvert's page wraps in <main> */
html, body, main { width: 100%; height: 100%; margin: 0; overflow: hidden; }
/* a subslide taller than the screen scrolls instead of running off it */
.reveal .slides > section > section { max-height: 100%; overflow-y: auto; }
.reveal .slides img { max-height: none; }
</style>
{{ mathjax(resources.mathjax_url) }}
</head>
{%- endblock header -%}

{% block footer_js %}
<script src="{{ resources.reveal.url_prefix }}/js/reveal.js"></script>
<script>
Reveal.initialize({
  controls: true, progress: true, history: true, center: false, slideNumber: true, transition: "none",
  width: 1200, height: 800,
  dependencies: [{src: "{{ resources.reveal.url_prefix }}/plugin/notes/notes.js", async: true}]
});
Reveal.addEventListener("slidechanged", function () {
  if (window.MathJax && MathJax.Hub) { MathJax.Hub.Rerender(Reveal.getCurrentSlide()); }
});
</script>
{% endblock footer_js %}
"""


@bool_flags
def export_slides(nb: NotebookNode, path: Path, student: bool = False) -> Path:
    """Write ``nb`` as a reveal.js slide show to ``path`` that works with no network: one slide per section,
    a subslide per stretch of text and code (:func:`slide_boundaries`), reveal.js copied beside it from the
    ``rise`` package (:func:`offline_reveal`) and MathJax as for the pages (:func:`offline_mathjax`).
    ``student=True``: from :func:`student_page`. Arrow keys move between slides, ``s`` opens speaker notes."""
    import jinja2
    from nbconvert import SlidesExporter

    path = Path(path)
    export.ensure_folder(path.parent, "the slides' folder")
    prefix = offline_reveal(path.parent)
    url = export.offline_mathjax(path.parent)
    page = slide_boundaries(export._page(_student(nb, student)))
    exporter = SlidesExporter(mathjax_url=url, reveal_url_prefix=prefix, template_file="xaikit_slides.html.j2",
                              extra_loaders=[jinja2.DictLoader({"xaikit_slides.html.j2": _SLIDES_TEMPLATE})])
    body, _ = exporter.from_notebook_node(page, resources={"metadata": {"name": export.page_title(nb)}})
    return write_export(path, body, "slide show")


class SlidesNotWritten(RuntimeError):
    """Some notebooks got no slides: the build kept them as they are (their ``.ipynb`` and ``.py`` both
    changed, or the notebook cannot be read), so neither file is known to be the lecture. ``written`` lists
    the slides that were written."""

    def __init__(self, message: str, written: list[Path]):
        super().__init__(message)
        self.written = written


@bool_flags
def slides(names: list[str] | None = None, out: str | Path | None = None, student: bool = False,
           verbose: bool = True) -> list[Path]:
    """Slides of the lecture notebooks as they are built (code and text, no outputs: run them with
    ``notebooks run --slides DIR`` for figures), written to ``out`` (default ``notebooks/slides/``).

    The build says what it did (:func:`~xaikit.course.notebooks.build_notebooks`: a notebook's cells copied
    into its ``.py``, a notebook rebuilt with a backup) unless ``verbose=False``. A notebook the build kept as
    it is gets no slides (which of its two files is the lecture is for its author to say): the others are
    written, then :class:`SlidesNotWritten` names it."""
    import nbformat

    folder = Path(out) if out is not None else nbtools.NOTEBOOKS / "slides"
    export.ensure_folder(folder, "--out", make=False)
    written, kept = [], []
    for result in nbtools.build_notebooks(names, verbose=verbose):
        if result.action == "kept":
            kept.append(result.target)
            continue
        written.append(export_slides(nbformat.read(result.target, as_version=4),
                                     folder / f"{result.target.stem}.slides.html", student=student))
    if kept:
        raise SlidesNotWritten(f"no slides for {', '.join(p.name for p in kept)}: the build left "
                               f"{'it' if len(kept) == 1 else 'them'} as {'it is' if len(kept) == 1 else 'they are'} "
                               "(see above), so the slides would show one of two versions; settle that with "
                               "`xaikit notebooks build` first", written)
    return written
