"""Homework sheets (xaikit.course.homework): solution markers become stubs, hidden answers go, solutions stay whole;
an exercise sheet whose exercises are marked ``@exercise(check)`` runs to the end on xaikit's references, saying
which stubs are left; one without the marks stops at its first stub. The solution sheets run in full."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from xaikit.course import homework
from xaikit.course import notebooks as _nbtools
from xaikit.course.homework import (
    BEGIN,
    END,
    HIDDEN_BEGIN,
    HIDDEN_END,
    STUB_COMMENT,
    STUB_MESSAGE,
    strip_answers,
    strip_hidden_tests,
    stub_solutions,
)

SOURCES = homework.sources()


# --- the text transforms ---------------------------------------------------------------------------------

def test_stub_keeps_indentation_and_surrounding_code():
    src = (f"import math\n\n\ndef f(x):\n    \"\"\"doc\"\"\"\n    {BEGIN}\n    y = x + 1\n    return y\n"
           f"    {END}\n\n\nprint(f(1))\n")
    out, n = stub_solutions(src)
    assert n == 1
    assert out == (f"import math\n\n\ndef f(x):\n    \"\"\"doc\"\"\"\n    {STUB_COMMENT}\n"
                   f"    raise NotImplementedError({STUB_MESSAGE!r})\n\n\nprint(f(1))\n")
    compile(out, "<stub>", "exec")  # still valid Python
    ns: dict = {}
    exec(compile(out.replace("print(f(1))", ""), "<stub>", "exec"), ns)
    with pytest.raises(NotImplementedError, match="Exercise"):
        ns["f"](1)


def test_stub_two_regions_and_top_level():
    src = f"{BEGIN}\na = 1\n{END}\nb = 2\nif b:\n  {BEGIN}\n  c = 3\n  {END}\n"
    out, n = stub_solutions(src)
    assert n == 2
    assert out.splitlines() == [STUB_COMMENT, f"raise NotImplementedError({STUB_MESSAGE!r})", "b = 2",
                                "if b:", f"  {STUB_COMMENT}", f"  raise NotImplementedError({STUB_MESSAGE!r})"]
    assert stub_solutions("x = 1\n") == ("x = 1\n", 0)


@pytest.mark.parametrize("src, message", [
    (f"{BEGIN}\na = 1\n", "never closed"),
    (f"a = 1\n{END}\n", "without a"),
    (f"{BEGIN}\n{BEGIN}\n{END}\n", "inside another"),
])
def test_unbalanced_markers_are_named(src, message):
    with pytest.raises(ValueError, match=message) as info:
        stub_solutions(src, where="07_demo.py, cell 3")
    assert "07_demo.py, cell 3" in str(info.value)


def test_hidden_tests_are_removed_like_nbgrader_does():
    src = f"assert check(f)\n{HIDDEN_BEGIN}\nassert check(f, verbose=False).passed\n{HIDDEN_END}\n"
    assert strip_hidden_tests(src) == ("assert check(f)", 1)
    assert strip_hidden_tests("x = 1\n") == ("x = 1\n", 0)
    src = f"a = 1\n{HIDDEN_BEGIN}\nb = 2\n{HIDDEN_END}\nc = 3\n"
    assert homework.student_code(src) == ("a = 1\nc = 3", 0)
    with pytest.raises(ValueError, match="never closed"):
        strip_hidden_tests(f"{HIDDEN_BEGIN}\nb = 2\n", where="07_demo.py, cell 3")


def _cell(kind, source, **nbgrader):
    cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
    if nbgrader:
        cell.metadata["nbgrader"] = {"grade": False, "locked": False, "solution": False, "schema_version": 3,
                                     **nbgrader}
    return cell


def test_nbgrader_problems_name_what_nbgrader_would_reject():
    sol = f"def f(x):\n    {BEGIN}\n    return x\n    {END}\n"
    test = f"assert check(f)\n{HIDDEN_BEGIN}\nassert check(f).passed\n{HIDDEN_END}"
    good = nbformat.v4.new_notebook(cells=[
        _cell("markdown", "Write f.", grade_id="f-task", locked=True),
        _cell("code", sol, grade_id="f", solution=True),
        _cell("code", test, grade_id="f-check", grade=True, locked=True, points=2),
        _cell("code", "print(f(1))")])
    assert homework.nbgrader_problems(good) == []
    assert homework.nbgrader_problems(nbformat.v4.new_notebook(cells=[_cell("code", sol)])) == []  # no nbgrader
    bad = nbformat.v4.new_notebook(cells=[
        _cell("code", sol, grade_id="f", locked=True),               # markers outside a solution cell
        _cell("code", test, grade_id="f", locked=True),              # hidden tests outside a grade cell; id twice
        _cell("code", "assert 1", grade_id="g", grade=True),          # no points
        _cell("code", "x = 1", grade_id="h i", locked=True)])         # a space in the id
    problems = "\n".join(homework.nbgrader_problems(bad, "07_demo.ipynb"))
    for text in ("cell 0: a solution block outside a solution cell", "cell 1: hidden tests outside a grade cell",
                 "cell 1: grade_id 'f' is used twice", "cell 2: a grade cell without points",
                 "cell 3: grade_id 'h i'"):
        assert text in problems, problems
    homework.lock_cells(good)
    assert [(c.metadata.get("editable"), c.metadata.get("deletable")) for c in good.cells] == [
        (False, False), (None, False), (False, False), (None, None)]


def test_lecture_metadata_passes_nbgrader_validator():
    """The lecture notebooks' metadata as nbgrader itself reads it (its schema-3 validator), and by the rules
    of homework.nbgrader_problems; every required exercise sits in a solution cell and is graded in a grade
    cell, so `nbgrader autograde` grades it (tests/test_nbgrader.py runs it on two notebooks)."""
    from nbgrader.nbgraderformat import MetadataValidator

    for src in SOURCES:
        nb = homework._source_notebook(src)
        assert homework.nbgrader_problems(nb, src.name) == []
        MetadataValidator().validate_nb(nb)
    states = homework.coverage()
    assert {f"{e.notebook} {e.function}": s for e, s in states.items() if s != "ok"} == {}


def test_written_answer_cells_hold_only_their_question_and_answer():
    """A written-answer cell is the student's to edit (nbgrader's `locked: false`), and its answer region
    becomes YOUR ANSWER HERE: lecture prose after the region would sit inside the student's answer space
    (the skeptic found two such sentences in 03), so nothing but blank lines may follow END SOLUTION."""
    for src in SOURCES:
        nb = homework._source_notebook(src)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "markdown" or "END SOLUTION" not in cell.source:
                continue
            after = cell.source.rsplit("END SOLUTION", 1)[1].split("\n", 1)[1:]
            assert not "".join(after).strip(), f"{src.name}, cell {index}: text after the answer: {after}"


def test_strip_answers_removes_answer_keeps_question():
    md = ("**Exercise.** Why?\n\n<details class=\"xk-answer\"><summary>Answer</summary>\nBecause of "
          "[CLS].\n</details>\n\nAfter.")
    out, n = strip_answers(md)
    assert n == 1 and "Because" not in out and "details" not in out
    assert out == "**Exercise.** Why?\n\nAfter."

    md = ("<details class='xk-answer other'><summary>Question: does <i>it</i> attend to \"cat\"?</summary>"
          "\n\nNo, mostly to [SEP].\n</details>\n<details><summary>Hint</summary>keep me</details>")
    out, n = strip_answers(md)
    assert n == 1
    assert out.startswith('**Question: does it attend to "cat"?**')
    assert "[SEP]" not in out and "keep me" in out  # a <details> that is not an answer stays

    out, n = strip_answers('<details class="xk-answer"><summary>Answer: why not 0.5?</summary>Because.</details>')
    assert (out, n) == ("**Why not 0.5?**", 1)


ANSWER_CELL = ("**Exercise.** Why?\n\n<!-- BEGIN SOLUTION -->\n<details class=\"xk-answer\"><summary>Answer</summary>"
               "\n\nBecause of [CLS].\n</details>\n<!-- END SOLUTION -->\n\nAfter.")


def test_student_markdown_clears_an_answer_region_as_nbgrader_does():
    """nbgrader's ClearSolutions (0.9) on a markdown solution cell: the lines from the one holding "BEGIN
    SOLUTION" to the one holding "END SOLUTION" become "YOUR ANSWER HERE"; the rest is kept as it is."""
    from nbgrader.preprocessors import ClearSolutions

    out, n = homework.student_markdown(ANSWER_CELL)
    assert (out, n) == ("**Exercise.** Why?\n\nYOUR ANSWER HERE\n\nAfter.", 1)
    cell = _cell("markdown", ANSWER_CELL, grade_id="a", grade=True, solution=True, points=0)
    cleared, _ = ClearSolutions().preprocess_cell(cell, {"language": "python"}, 0)
    assert cleared.source == out
    stray = ANSWER_CELL + '\n<details class="xk-answer"><summary>Answer</summary>x</details>'
    assert homework.student_markdown(stray) == (out, 2)  # an unmarked answer is still removed
    assert homework.student_markdown("No answer here.") == ("No answer here.", 0)
    with pytest.raises(ValueError, match="never closed"):
        homework.student_markdown("<!-- BEGIN SOLUTION -->\nx", where="07_demo.py, cell 3")
    with pytest.raises(ValueError, match="without a"):
        homework.student_markdown("x\n<!-- END SOLUTION -->")


def test_nbgrader_problems_name_a_written_answer_stock_nbgrader_would_hand_out():
    answer = _cell("markdown", ANSWER_CELL, grade_id="a", grade=True, solution=True, points=0)
    ok = nbformat.v4.new_notebook(cells=[answer, _cell("markdown", "Task.", grade_id="t", locked=True)])
    assert homework.nbgrader_problems(ok) == []
    unmarked = ANSWER_CELL.replace("<!-- BEGIN SOLUTION -->\n", "").replace("\n<!-- END SOLUTION -->", "")
    bad = nbformat.v4.new_notebook(cells=[
        _cell("markdown", unmarked, grade_id="a", grade=True, solution=True, points=0),  # not in a region
        _cell("markdown", ANSWER_CELL, grade_id="b", locked=True),  # a region outside a solution cell
        _cell("markdown", ANSWER_CELL, grade_id="c", solution=True),  # a solution cell nbgrader needs graded
        _cell("markdown", unmarked)])  # no metadata at all
    problems = "\n".join(homework.nbgrader_problems(bad, "07_demo.ipynb"))
    for text in ("cell 0: a written answer (<details class=\"xk-answer\">, line 3", "stock nbgrader would hand",
                 "cell 1: a written answer's region (<!-- BEGIN SOLUTION -->) outside a solution cell",
                 "cell 2: a markdown cell must be both a solution and a grade cell",
                 "cell 3: a written answer"):
        assert text in problems, problems
    assert "cell 1: a written answer (" not in problems  # inside its region, only the cell's marking is wrong


def test_make_sheets_on_a_small_source(tmp_path):
    src = tmp_path / "09_demo.py"
    src.write_text(
        "# %% [markdown]\n# # Demo\n#\n# **Exercise.** Add one.\n#\n"
        "# <details class=\"xk-answer\"><summary>Answer</summary>\n# x + 1\n# </details>\n\n"
        f"# %%\ndef add_one(x):\n    {BEGIN}\n    return x + 1\n    {END}\n\n\nassert add_one(1) == 2\n")
    sheet = homework.make_sheets(src)
    ex, sol = sheet.exercise, sheet.solution
    assert sheet.stubs == [2] and sheet.answers_removed == 1
    assert ex.cells[0].metadata["xaikit"]["generated"] == "exercise"
    assert "raise NotImplementedError" in ex.cells[2].source and "return x + 1" not in ex.cells[2].source
    assert "xk-answer" not in ex.cells[1].source and "Add one" in ex.cells[1].source
    assert "return x + 1" in sol.cells[2].source and "xk-answer" in sol.cells[1].source
    nbformat.validate(ex)
    nbformat.validate(sol)


def test_cli_builds_both_folders(tmp_path):
    from xaikit.__main__ import main

    assert main(["homework", "build", "--out", str(tmp_path)]) == 0
    for folder in ("exercises", "solutions"):
        assert sorted(p.stem for p in (tmp_path / folder).glob("*.ipynb")) == [p.stem for p in SOURCES]


def test_solution_functions_and_coverage_states(tmp_path):
    src = (f"def a(x):\n    {BEGIN}\n    return x\n    {END}\n\n\n{BEGIN}\ndef b(y):\n    return y\n{END}\n"
           "def c(z):\n    return z\n")
    assert homework.solution_functions(src) == {"a", "b"}
    folder = tmp_path / "nb"
    folder.mkdir()
    (folder / "03_demo.py").write_text(
        f"# %%\nimport xaikit\n\n\ndef my_attention(x, w_q, w_k, w_v):\n    {BEGIN}\n    return x\n    {END}\n\n\n"
        "assert xaikit.check_attention(my_attention)\n")
    (folder / "02_demo.py").write_text("# %%\ndef my_ig(f, x, baseline, steps):\n    return x\n")
    (folder / "04_demo.py").write_text(f"# %%\ndef my_gradsam(a, g):\n    {BEGIN}\n    return a\n    {END}\n")
    (folder / "01_demo.py").write_text(
        '# %% nbgrader={"grade": false, "grade_id": "g", "locked": false, "schema_version": 3, "solution": true}\n'
        f"def my_grad_times_input(f, x):\n    {BEGIN}\n    return x\n    {END}\n\n\n"
        "# %%\nassert xaikit.check_grad_times_input(my_grad_times_input)\n")
    states = {(e.notebook, e.check): s for e, s in homework.coverage(folder).items()}
    assert states[("03", "check_attention")] == "ok"
    assert states[("01", "check_grad_times_input")] == "not autograded"  # its check is not in a grade cell
    assert states[("02", "check_ig_riemann")] == "not marked"
    assert states[("04", "check_gradsam")] == "unchecked"
    assert states[("04", "check_head_plots")] == "missing"
    assert states[("05", "check_cav")] == "no notebook"


def test_every_required_exercise_has_a_check():
    from xaikit.course import checks

    for ex in homework.EXERCISES:
        assert callable(getattr(checks, ex.check)), ex


def test_landed_notebooks_mark_their_exercises():
    """A required exercise's function that exists in a notebook must sit in a solution block (else the sheet
    gives the answer away). Exercises not written yet are listed in the skip reason."""
    states = homework.coverage()
    unmarked = [f"{e.notebook}: {e.function}" for e, s in states.items() if s == "not marked"]
    assert unmarked == [], f"exercise functions outside a solution block: {unmarked}"
    todo = [f"{e.notebook} {e.topic} ({s})" for e, s in states.items() if s != "ok"]
    if todo:
        pytest.skip("exercises not in the notebooks yet: " + "; ".join(todo))


# --- the real notebooks ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sheets(tmp_path_factory):
    out = tmp_path_factory.mktemp("homework")
    return out, {s.name: s for s in homework.build(out, verbose=False)}


def _code(nb):
    return [c.source for c in nb.cells if c.cell_type == "code"]


@pytest.mark.skipif(not SOURCES, reason="no lecture notebook yet")
def test_sheets_match_their_notebook(sheets):
    """Solutions carry exactly the notebook's code (so the notebook tests run them); exercises differ from
    it only inside solution blocks; no answer or marker is left in an exercise sheet."""
    _, by_name = sheets
    for src in SOURCES:
        sheet = by_name[src.stem]
        original = _nbtools.to_notebook(src) if src.suffix == ".py" else nbformat.read(src, as_version=4)
        assert _code(sheet.solution) == _code(original), src.stem
        for ex_code, code in zip(_code(sheet.exercise), _code(original), strict=True):
            assert ex_code == homework.student_code(code)[0]
            assert BEGIN not in ex_code and END not in ex_code and HIDDEN_BEGIN not in ex_code
        for ex_cell, cell in zip(sheet.exercise.cells[1:], original.cells, strict=True):  # cells nbgrader locks
            meta = cell.metadata.get("nbgrader", {})
            if (meta.get("grade") or meta.get("locked")) and not meta.get("solution"):
                assert ex_cell.metadata.get("editable") is False, f"{src.stem}: {meta['grade_id']} not locked"
        for cell in sheet.exercise.cells:
            assert "xk-answer" not in cell.source, f"{src.stem}: an answer is left in the exercise sheet"
        n_answers = sum(len(re.findall(r"class=[\"'][^\"']*xk-answer", c.source)) for c in original.cells
                        if c.cell_type == "markdown")
        assert sheet.answers_removed == n_answers


def _first_error(nb):
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.get("output_type") == "error":
                return index, out
    return None, None


def _run(path: Path, allow_errors: bool):
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=allow_errors,
                            resources={"metadata": {"path": str(_nbtools.NOTEBOOKS)}})
    try:
        client.execute()
    except Exception:  # noqa: BLE001, S110 - the caller asserts on the executed cells' outputs, errors included
        pass
    return nb


STUBBED = [p for p in SOURCES if BEGIN in p.read_text()]


def _exercise_marks(src: Path) -> tuple[set[str], set[str]]:
    """(functions in solution blocks, those of them marked ``@exercise(...)`` on the line above their def)."""
    text = src.read_text()
    solved = homework.solution_functions(text)
    marked = set(re.findall(r"^@(?:\w+\.)*exercise\(.*\)[^\n]*\ndef\s+(\w+)\s*\(", text, re.MULTILINE))
    return solved, marked & solved


def test_every_notebook_marks_every_exercise():
    for src in SOURCES:
        solved, marked = _exercise_marks(src)
        assert solved == marked, f"{src.stem}: exercises without @exercise(check): {sorted(solved - marked)}"


# --- a wrong answer in every exercise ------------------------------------------------------

#: per exercise function: (its check, the mistake the check must name, a wrong body a student might write)
WRONG = {
    "my_grad_times_input": ("check_grad_times_input", "gradient_only",
                            "import torch\nx = x.detach().clone().requires_grad_(True)\n"
                            "(grad,) = torch.autograd.grad(f(x[None]).sum(), x)\nreturn grad"),
    "my_ig": ("check_ig_riemann", "missing_x_minus_baseline",
              "import torch\nalphas = torch.arange(1, steps + 1, dtype=x.dtype) / steps\n"
              "points = (baseline + alphas[:, None] * (x - baseline)).requires_grad_(True)\n"
              "(grads,) = torch.autograd.grad(f(points).sum(), points)\nreturn grads.mean(0)"),
    "my_attention": ("check_attention", "softmax_wrong_dim",
                     "import math\nimport torch\nq, k, v = x @ w_q, x @ w_k, x @ w_v\n"
                     "weights = torch.softmax(q @ k.T / math.sqrt(k.shape[-1]), dim=0)\nreturn weights @ v, weights"),
    "plot_heads": ("check_head_plots", "transposed",
                   "from matplotlib.figure import Figure\nfig = Figure()\n"
                   "for ax, (layer, head) in zip(fig.subplots(1, len(picks)), picks):\n"
                   "    ax.imshow(attentions[layer, head].numpy().T, vmin=0, vmax=1)\nreturn fig"),
    "my_gradsam": ("check_gradsam", "relu_after_sum",
                   "import torch\nL, M, N, _ = attentions.shape\n"
                   "return torch.relu((attentions * gradients).sum(dim=(0, 1, 3))) / (L * M * N)"),
    "capture_attention_grads": ("check_attention_grads", "wrong_output",
                                "import torch\nout = model(**inputs, output_attentions=True)\n"
                                "p = torch.softmax(out.logits[0], -1)[target]\n"
                                "grads = torch.autograd.grad(p, out.attentions)\n"
                                "return torch.stack([a[0] for a in out.attentions]).detach(), "
                                "torch.stack([g[0] for g in grads])"),
    "cls_share": ("check_cls_share", "wrong_axis",
                  "import torch\nh = (attentions * torch.relu(gradients)).sum(dim=(1, 2))\nreturn h[:, 0] / h.sum(1)"),
    "my_cav": ("check_cav", "sign_flipped",
               "import numpy as np\nw = np.mean(negative_acts, 0) - np.mean(concept_acts, 0)\n"
               "return w / np.linalg.norm(w)"),
    "my_tcav_score": ("check_tcav_score", "greater_equal", "import numpy as np\nreturn float(np.mean(grads @ cav >= 0))"),
    "my_cav_cosines": ("check_cav_cosines", "dot_product", "import numpy as np\nreturn np.asarray(acts) @ cav"),
    "my_rank_p": ("check_rank_p", "one_sided", "import numpy as np\nnull = np.asarray(null)\n"
                  "return (1 + np.sum(null >= value)) / (len(null) + 1)"),
    "my_rollout": ("check_rollout", "wrong_order",
                   "import torch\neye = torch.eye(attentions.shape[-1], dtype=attentions.dtype)\nr = eye.clone()\n"
                   "for layer in attentions.mean(dim=1):\n    step = 0.5 * layer + 0.5 * eye\n"
                   "    r = r @ (step / step.sum(-1, keepdim=True))\nreturn r"),
}


def _wrong_function(name: str, signature: str):
    ns: dict = {}
    body = "".join(f"    {line}\n" for line in WRONG[name][2].splitlines())
    exec(f"def {name}({signature}):\n{body}", ns)
    return ns[name]


def _fill_in_wrong(source: str) -> tuple[str, list[str]]:
    """An exercise sheet's code cell with each stub replaced by the wrong body of its function."""
    stub = f"raise NotImplementedError({STUB_MESSAGE!r})"
    out, filled, current = [], [], None
    for line in source.splitlines():
        match = re.match(r"\s*def\s+(\w+)\s*\(", line)
        current = match.group(1) if match else current
        if line.strip() == stub:
            indent = line[: len(line) - len(line.lstrip())]
            out.extend(indent + body_line for body_line in WRONG[current][2].splitlines())
            filled.append(current)
        elif line.strip() != STUB_COMMENT:
            out.append(line)
    return "\n".join(out), filled


def test_every_exercise_has_a_wrong_answer_its_check_names():
    """The wrong answers the executed sheets below use, each named by its check as the mistake it is."""
    from xaikit.course import checks

    functions = set().union(*(_exercise_marks(src)[0] for src in SOURCES)) if SOURCES else set()
    assert functions == set(WRONG), "an exercise without a wrong answer here (or one that left the notebooks)"
    for name, (check, mistake, _) in WRONG.items():
        reference = getattr(checks, check)
        signature = {"check_grad_times_input": "f, x", "check_ig_riemann": "f, x, baseline, steps",
                     "check_attention": "x, w_q, w_k, w_v", "check_head_plots": "attentions, tokens, picks",
                     "check_gradsam": "attentions, gradients", "check_cls_share": "attentions, gradients",
                     "check_cav": "concept_acts, negative_acts", "check_tcav_score": "grads, cav",
                     "check_rank_p": "value, null", "check_cav_cosines": "acts, cav",
                     "check_attention_grads": "model, inputs, target",
                     "check_rollout": "attentions"}[check]
        result = reference(_wrong_function(name, signature), verbose=False)
        assert not result.passed and result.mistake == mistake, f"{name}: {result.report()}"


def _outputs(nb) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                   if o.get("output_type") == "stream")


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.prepared
@pytest.mark.parametrize("src", STUBBED, ids=[p.stem for p in STUBBED])
def test_exercise_sheet_runs_to_the_end_or_stops_at_a_stub(src, sheets):
    out, by_name = sheets
    sheet = by_name[src.stem]
    solved, marked = _exercise_marks(src)
    nb = _run(out / "exercises" / f"{src.stem}.ipynb", allow_errors=False)
    index, error = _first_error(nb)
    if solved and marked == solved:  # every exercise falls back to the reference: "Run All" reaches the end
        assert error is None, f"{src.stem}: the exercise sheet stopped at cell {index}: {error}"
        printed = _outputs(nb)
        for name in sorted(solved):
            assert f"{name} still raises NotImplementedError" in printed, f"{src.stem}: no note for the stub {name}"
        assert all(c.execution_count for c in nb.cells if c.cell_type == "code"), f"{src.stem}: a cell did not run"
        return
    assert error is not None, f"{src.stem}: the exercise sheet ran to the end despite its stubs"
    assert error["ename"] == "NotImplementedError" and STUB_MESSAGE in error["evalue"], (
        f"{src.stem}: the first error is not a stub's: {error['ename']}: {error['evalue']}")
    assert index >= sheet.stubs[0], f"{src.stem}: failed in cell {index}, before the first stub"
    ran = [c for c in nb.cells[:index] if c.cell_type == "code"]
    assert all(c.execution_count for c in ran), f"{src.stem}: a cell before the stub did not run"


# The solution sheets run in full: `test_sheets_match_their_notebook` shows a solution sheet's code is its
# notebook's code, cell for cell, and `tests/test_notebooks.py` runs every notebook top to bottom. Running the
# sheets again here would only double the slowest part of the suite.


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.prepared
@pytest.mark.parametrize("src", STUBBED, ids=[p.stem for p in STUBBED])
def test_exercise_sheet_with_every_answer_wrong_runs_to_the_end(src, sheets, tmp_path):
    """Every exercise of the sheet written wrong: the sheet runs to its last cell without an
    error; each check names its exercise's mistake (on stderr, which nbgrader counts as a failed grade cell);
    every later cell that calls the function runs xaikit's reference and says so."""
    out, _ = sheets
    nb = nbformat.read(out / "exercises" / f"{src.stem}.ipynb", as_version=4)
    filled, calls_after = [], {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        cell.source, names = _fill_in_wrong(cell.source)
        filled += names
        for name in filled:  # a later call: `name(` outside a check of it
            if re.search(rf"(?<![\w.]){name}\(", cell.source) and not names:
                calls_after.setdefault(name, index)
    assert sorted(filled) == sorted(_exercise_marks(src)[0]), f"{src.stem}: not every stub was filled in"
    path = tmp_path / f"{src.stem}.ipynb"
    nbformat.write(nb, path)
    nb = _run(path, allow_errors=False)
    index, error = _first_error(nb)
    assert error is None, f"{src.stem}: a wrong answer stopped the sheet at cell {index}: {error}"
    assert all(c.execution_count for c in nb.cells if c.cell_type == "code"), f"{src.stem}: a cell did not run"
    stderr = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                     if o.get("output_type") == "stream" and o.get("name") == "stderr")
    printed = _outputs(nb)
    for name in filled:
        check, mistake, _ = WRONG[name]
        assert f"{check}: some checks failed (mistake: {mistake})" in stderr, f"{src.stem}: {name}'s failure unnamed"
        if name in calls_after:
            assert f"NOTE: {name} failed {check}({name}) ({mistake}), so this cell used xaikit's reference" in (
                printed), f"{src.stem}: cell {calls_after[name]} called {name} without the reference's note"
    assert {"my_gradsam", "plot_heads", "cls_share"} <= set(calls_after) or src.stem[:2] != "04"
