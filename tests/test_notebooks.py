"""Every lecture notebook runs top to bottom, headless, in a fresh kernel: since each claim in a notebook
is an executed assert, a notebook that runs is a notebook whose claims hold.

Run times are printed in the session summary; the time targets are checked by reading that summary and
`benchmarks/`, not by a timed assertion that would flake on a busy machine.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from xaikit.course import notebooks as _nbtools

from .conftest import record_notebook_time

NOTEBOOKS = sorted(_nbtools.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"


#: what a student must not read in a notebook's output: a claim id ("04.5-shap-cls-never-first"), the
#: claims matrix's words, issue numbers. Plain "build" (building a model) and "seed" (a seeded draw the lecture
#: explains) are lecture words and allowed.
LEDGER_OUTPUT = re.compile(r"\b\d\d\.\d+[a-z]?-[a-z]|build matrix|claims matrix|\bbuilds\b|worst over|"
                           r"not asserted|\bissues?\b|\[(?:shown|claim|identity)\]", re.IGNORECASE)


def output_texts(nb) -> list[str]:
    """Every text a run put under the code cells: streams, and the plain, HTML and Markdown of displays."""
    texts = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for o in cell.get("outputs", []):
            if "text" in o:
                texts.append("".join(o["text"]))
            for kind in ("text/plain", "text/html", "text/markdown"):
                if kind in o.get("data", {}):
                    texts.append("".join(o["data"][kind]))
    return texts


def ledger_words(texts) -> list[str]:
    """The ledger's words found in ``texts``, each with a little context."""
    found = []
    for text in texts:
        for m in LEDGER_OUTPUT.finditer(text):
            found.append(text[max(0, m.start() - 60):m.end() + 60].replace("\n", " "))
    return found


class _OutputAreas(HTMLParser):
    """The text inside an exported page's output areas (nbconvert's ``jp-OutputArea``), not its code or prose."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.texts = [], []

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        classes = dict(attrs).get("class") or ""
        self.stack.append((tag, "jp-OutputArea" in classes, tag in ("script", "style")))

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        if any(out for _, out, _ in self.stack) and not any(skip for _, _, skip in self.stack):
            self.texts.append(data)


def page_outputs(page: str) -> str:
    parser = _OutputAreas()
    parser.feed(page)
    return "".join(parser.texts)


def test_the_ledger_check_finds_what_it_looks_for():
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x")]
    lines = ["[claim] 04.5-shap-cls-never-first: 0, bound <= 0.2; worst over the build matrix 0",
             "[shown] 02.8-gl-over-right: 1.2  (not asserted: it flips)", "over 7 builds of the claims matrix",
             "see issue 27", "04.7b-data-rand-fits"]
    for line in lines:
        nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text=line + "\n")]
        assert ledger_words(output_texts(nb)), line
    fine = ["IG adds up to f(x) - f(x') (completeness): 1.2e-07", "gap 0.25-0.5 of the way, 12.5-13 s",
            "seed | keys x 1: query dependence", "building the digits CNN", "varies with the training seed: 0 to 0.41"]
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="\n".join(fine))]
    assert ledger_words(output_texts(nb)) == []
    page = ('<div class="jp-Cell"><div class="jp-InputArea"><pre>claim("01.4-digits-accuracy", a)</pre></div>'
            '<div class="jp-OutputArea jp-Cell-outputArea"><div><pre>test accuracy 0.97<br>[claim] x</pre>'
            '<img src="a.png"><script>var issue = 1;</script></div></div></div>')
    assert page_outputs(page) == "test accuracy 0.97[claim] x"


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 1, "no notebooks found under notebooks/"


def test_notebooks_in_sync_and_clean():
    assert _nbtools.check() == []
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                assert cell.get("outputs") == [] and cell.get("execution_count") is None, (
                    f"{path.name} is committed with outputs")


def test_first_code_cell_is_the_instructors_presenter_switch(monkeypatch):
    """Every notebook opens with the presenter-mode lines, commented out; uncommented, they switch it on."""
    from xaikit.course import presenter

    monkeypatch.delenv("XAIKIT_FAST", raising=False)
    for path in NOTEBOOKS:
        first = next(c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
        source = "".join(first["source"])
        assert "# xaikit.course.presenter.on()" in source, path.name
        code = "\n".join(line[2:] for line in source.splitlines() if line.startswith("# import xaikit")
                         or line.startswith("# xaikit.course.presenter.on()"))
        try:
            exec(compile(code, path.name, "exec"), {})
            assert presenter.is_on()
        finally:
            presenter.off()
        assert not presenter.is_on()


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path):
    nb, seconds = _nbtools.execute(path, timeout=600)
    record_notebook_time(path.stem, seconds)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, f"{path.name} produced errors: {errors[:1]}"
    # nbgrader gives a grade cell no points if it writes to stderr (nbgrader.utils.determine_grade), so with
    # the solutions in, a grade cell must print no warning (tests/test_nbgrader.py autogrades 01 and 03 only)
    noisy = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells
             if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")
             and any(o.get("name") == "stderr" for o in c.get("outputs", []))]
    assert not noisy, f"{path.name}: grade cells that write to stderr, which nbgrader scores 0: {noisy}"
    # every panel carries a picture of its figure for renderers without widgets, and the
    # headless HTML export shows one image per picture, with no empty widget view left
    from xaikit.widgets.base import PANEL_METADATA

    panels = [o for o in outputs if PANEL_METADATA in o.get("metadata", {})]
    assert panels, f"{path.name} displays no panel"
    blind = [o["metadata"][PANEL_METADATA] for o in panels
             if _nbtools.WIDGET_VIEW not in o["data"] or not {"image/png", "text/html"} & set(o["data"])]
    assert not blind, f"{path.name}: panels without a live widget and a static picture: {blind}"
    # no figure or Axes printed as its text instead of drawn ("<Axes: xlabel=...>" after a SHAP
    # plot, and 04's figures that were "<Figure size ...>" until pyplot had drawn one)
    stray = ["".join(o["data"]["text/plain"]) for o in outputs if set(o.get("data", {})) == {"text/plain"}
             and "".join(o["data"]["text/plain"]).startswith(("<Axes", "<Figure", "<matplotlib"))]
    assert not stray, f"{path.name}: figures shown as text: {stray}"
    pictures = sum("image/png" in o.get("data", {}) for o in outputs)
    # the export goes to artifacts/html/ (git-ignored), where scripts/screenshot_html.py opens it offline
    page = _nbtools.export_html(nb, ARTIFACTS / "html" / f"{path.stem}.html").read_text()
    assert page.count("<img") >= pictures and _nbtools.WIDGET_VIEW not in page
    # the student sees the lecture, not the claims ledger: no claim id, no build matrix, no issue number in
    # anything the run printed or displayed, nor in the output areas of the students' page of the same run
    leaked = ledger_words(output_texts(nb))
    assert not leaked, f"{path.name} prints the ledger's words to the student: {leaked[:5]}"
    from xaikit.course import pages

    student = pages.export_page(nb, ARTIFACTS / "student-html" / f"{path.stem}.html", student=True).read_text()
    shown = page_outputs(student)
    assert shown.strip(), f"{path.name}: no output text found on the students' page"
    leaked = ledger_words([shown])
    assert not leaked, f"{path.name}'s students' page shows the ledger's words: {leaked[:5]}"
    n_asserts = sum(c.source.count("assert ") + c.source.count("check_") for c in nb.cells
                    if c.cell_type == "code")
    assert n_asserts >= 3, f"{path.name} asserts too little ({n_asserts}): every claim should be checked"


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.prepared
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_student_mode(path: Path, tmp_path: Path, monkeypatch):
    """Every notebook as a student runs it, fast mode off: the 12-epoch digits CNN, the full lab,
    every student-mode sample count. Each ledger claim it checks is logged and must hold, and every claim of
    its notebook must be reached. Time budgets are printed by ``benchmarks/notebook_times.py``, not asserted."""
    from xaikit.course import claims

    log = tmp_path / "claims.jsonl"
    monkeypatch.delenv("XAIKIT_FAST", raising=False)  # the kernel inherits this process's environment
    monkeypatch.delenv(claims.COLLECT_ENV, raising=False)
    monkeypatch.setenv(claims.LOG_ENV, str(log))
    nb, seconds = _nbtools.execute(path, timeout=900)
    record_notebook_time(f"{path.stem} (student mode)", seconds)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, f"{path.name} in student mode produced errors: {errors[:1]}"
    logged = [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []
    assert all(e["holds"] for e in logged), [e for e in logged if not e["holds"]]
    reached = {e["id"] for e in logged}
    ledger = {c.id for c in claims.by_notebook(path.name[:2])}
    assert ledger <= reached, f"{path.name}: ledger claims the student-mode run never checked: {sorted(ledger - reached)}"


#: the notebooks that call a transformer cell by cell (their own code builds inputs for the model).
MODEL_NOTEBOOKS = [p for p in NOTEBOOKS if p.stem.startswith(("03", "04", "06"))]


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.prepared
@pytest.mark.parametrize("path", MODEL_NOTEBOOKS, ids=[p.stem for p in MODEL_NOTEBOOKS])
def test_notebook_runs_with_float64_models(path: Path, monkeypatch):
    """The CPU stand-in for a GPU run: with ``XAIKIT_MODEL_DTYPE=float64`` the loaders give
    float64 models, so a float32 tensor that a cell builds on the CPU and feeds to the model unmoved fails
    on the same line as a CPU tensor would on CUDA."""
    import os

    from xaikit.models.sentiment import is_built

    if not is_built():
        message = "the embedded sentiment model is not built (run `python -m xaikit prepare`)"
        if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:
            pytest.fail(message)
        pytest.skip(message)
    monkeypatch.setenv("XAIKIT_MODEL_DTYPE", "float64")  # the kernel inherits this process's environment
    nb, seconds = _nbtools.execute(path, timeout=600)
    record_notebook_time(f"{path.stem} (float64)", seconds)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, f"{path.name} with float64 models produced errors: {errors[:1]}"
    printed = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "torch.float64" in printed, f"{path.name} did not run on a float64 model (it prints the dtype)"



@pytest.mark.notebook
def test_exported_panel_shows_its_last_figure(tmp_path: Path):
    """A panel displayed in one cell and changed by set() in a later one: the HTML export shows the figure
    as it ended (from the saved widget state), like the live widget in Jupyter, not the one at display."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("from xaikit.widgets import GradientSaturationPanel\n"
                                          "p = GradientSaturationPanel()\np"),
                nbformat.v4.new_code_cell("import base64\np.set(x1=0.3, x2=0.4)\n"
                                          "print(base64.b64encode(p.image.value).decode())")]
    path = tmp_path / "two_cells.ipynb"
    nbformat.write(nb, path)
    ran, _ = _nbtools.execute(path, timeout=300)
    at_display = ran.cells[0].outputs[0]["data"]["image/png"]
    last = ran.cells[1].outputs[0]["text"].strip()
    assert at_display != last
    static = _nbtools.static_pictures(ran)
    assert static.cells[0].outputs[0]["data"]["image/png"] == last
    assert last in static.cells[0].outputs[0]["data"]["text/html"]  # the still picture HTML shows it too
    assert _nbtools.WIDGET_VIEW not in static.cells[0].outputs[0]["data"] and "widgets" not in static.metadata
