"""Cutting a lecture notebook into its exercise sheet: the markers and the cell metadata that nbgrader reads, and
the text transforms that turn a solution into a stub, drop the hidden tests and the written answers, and lock
the cells nbgrader locks. The sheets themselves are written by :mod:`xaikit.course.homework`.

**Written answers.** A lecture notebook folds each written answer in ``<details class="xk-answer">`` and marks
it the way stock nbgrader understands, so that a course run with nbgrader's own configuration hands out no
answer: the block sits between the lines ``<!-- BEGIN SOLUTION -->`` and ``<!-- END SOLUTION -->`` (HTML
comments, unseen in the rendered notebook) in a markdown cell that nbgrader's metadata marks as a manually
graded answer (``"solution": true, "grade": true``, 0 points: read, not scored, unless the instructor gives it
points); the question stays outside the region. nbgrader's ``ClearSolutions`` replaces the region by ``YOUR
ANSWER HERE``, and so does the exercise sheet (:func:`student_markdown`).

**Cell metadata.** A lecture notebook marks its exercises with nbgrader's cell metadata (schema 3), written on
the jupytext cell marker, e.g. ``# %% nbgrader={"grade": false, "grade_id": "my_ig", ...}``: per exercise a
locked task cell (the question), a solution cell (the function, its body between the solution markers), a
grade cell worth points (the check, with its hidden strict assert) and, where later code uses the function,
a locked cell. A notebook that carries nbgrader metadata must keep nbgrader's rules, checked here as
nbgrader checks them: solution markers only in solution cells, hidden tests only in grade cells, unique
``grade_id`` values, written answers only inside a solution region of a manually graded answer cell
(:func:`nbgrader_problems`). A notebook with no nbgrader metadata is cut by its markers
alone.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nbformat import NotebookNode

__all__ = ["ANSWER_BEGIN", "ANSWER_END", "BEGIN", "END", "HIDDEN_BEGIN", "HIDDEN_END", "STUB_COMMENT",
           "STUB_MESSAGE", "TEXT_STUB", "lock_cells", "nbgrader_problems", "strip_answers", "strip_hidden_tests",
           "student_code", "student_markdown", "stub_solutions", "uses_nbgrader"]

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
HIDDEN_END = "### END HIDDEN TESTS"
STUB_COMMENT = "# YOUR CODE HERE"
STUB_MESSAGE = "Exercise: replace this line with your solution."
#: a written answer's region in a markdown cell, as HTML comments (hidden when the notebook is shown); nbgrader's
#: ClearSolutions finds any line holding "BEGIN SOLUTION" / "END SOLUTION" and puts :data:`TEXT_STUB` there
ANSWER_BEGIN = "<!-- BEGIN SOLUTION -->"
ANSWER_END = "<!-- END SOLUTION -->"
TEXT_STUB = "YOUR ANSWER HERE"  # nbgrader's ClearSolutions.text_stub, its default

_DETAILS = re.compile(
    r"<details\b[^>]*\bclass\s*=\s*['\"][^'\"]*\bxk-answer\b[^'\"]*['\"][^>]*>(?P<body>.*?)</details>",
    re.DOTALL | re.IGNORECASE)
_SUMMARY = re.compile(r"<summary\b[^>]*>(?P<text>.*?)</summary>", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"<[^>]+>")


# --- nbgrader cell metadata -----------------------------------------------------------------------------

def _nbgrader(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def uses_nbgrader(nb: NotebookNode) -> bool:
    """Whether any cell of ``nb`` carries nbgrader metadata."""
    return any(_nbgrader(cell) for cell in nb.cells)


def _has_line(source: str, marker: str) -> bool:
    return any(line.strip() == marker for line in source.splitlines())


def nbgrader_problems(nb: NotebookNode, where: str = "notebook") -> list[str]:
    """What nbgrader would reject in ``nb``'s cell metadata (empty for a notebook without any): solution
    markers outside a solution cell, hidden tests outside a grade cell, a grade cell without points, a
    solution, grade or locked cell without a ``grade_id``, a ``grade_id`` used twice. The same rules as
    nbgrader's ``ClearSolutions``, ``ClearHiddenTests`` and ``CheckCellMetadata``, without importing it."""
    if not uses_nbgrader(nb):
        return []
    problems: list[str] = []
    seen: set[str] = set()
    for index, cell in enumerate(nb.cells):
        meta = _nbgrader(cell)
        here = f"{where}, cell {index}"
        if cell.cell_type == "markdown":
            problems += _markdown_problems(cell, meta, here)
        if cell.cell_type == "code" and _has_line(cell.source, BEGIN) and not meta.get("solution"):
            problems.append(f"{here}: a solution block outside a solution cell (nbgrader metadata "
                            "\"solution\": true)")
        if cell.cell_type == "code" and _has_line(cell.source, HIDDEN_BEGIN) and not meta.get("grade"):
            problems.append(f"{here}: hidden tests outside a grade cell (nbgrader metadata \"grade\": true)")
        if not meta:
            continue
        if meta.get("schema_version") != 3:
            problems.append(f"{here}: nbgrader metadata without \"schema_version\": 3")
        if meta.get("grade") and not isinstance(meta.get("points"), int | float):
            problems.append(f"{here}: a grade cell without points")
        if meta.get("grade") or meta.get("solution") or meta.get("locked"):
            grade_id = meta.get("grade_id")
            if not grade_id or not re.fullmatch(r"[A-Za-z0-9_\-]+", str(grade_id)):
                problems.append(f"{here}: grade_id {grade_id!r} is empty or not letters, digits, _ and -")
            elif grade_id in seen:
                problems.append(f"{here}: grade_id {grade_id!r} is used twice")
            seen.add(grade_id)
    return problems


def _answer_regions(source: str) -> list[tuple[int, int]]:
    """(first, last) line numbers of each written-answer region of a markdown cell, by nbgrader's rule (a line
    holding "BEGIN SOLUTION", one holding "END SOLUTION"); an unclosed region runs to the end."""
    regions, start = [], None
    lines = source.splitlines()
    for number, line in enumerate(lines):
        if "BEGIN SOLUTION" in line and start is None:
            start = number
        elif "END SOLUTION" in line and start is not None:
            regions.append((start, number))
            start = None
    if start is not None:
        regions.append((start, len(lines)))
    return regions


def _markdown_problems(cell, meta: dict, here: str) -> list[str]:
    """What stock nbgrader would reject in a markdown cell, or hand to students: a written-answer region in a
    cell that is not a solution cell, a solution cell that is not a grade cell (or the other way round), an
    ``xk-answer`` block outside a region."""
    problems = []
    source = cell.source
    regions = _answer_regions(source)
    if regions and not meta.get("solution"):
        problems.append(f"{here}: a written answer's region ({ANSWER_BEGIN}) outside a solution cell (nbgrader "
                        "metadata \"solution\": true, \"grade\": true, as a manually graded answer)")
    if not meta.get("task") and bool(meta.get("solution")) != bool(meta.get("grade")):
        problems.append(f"{here}: a markdown cell must be both a solution and a grade cell for nbgrader (a "
                        "manually graded answer), or neither")
    lines = source.splitlines()
    for match in _DETAILS.finditer(source):
        line = source.count("\n", 0, match.start())
        if not any(first < line <= last for first, last in regions):
            problems.append(f"{here}: a written answer (<details class=\"xk-answer\">, line {line + 1}: "
                            f"{lines[line][:60]!r}) outside a solution region: stock nbgrader would hand it to "
                            f"students; put it between a line {ANSWER_BEGIN} and a line {ANSWER_END}")
    return problems


def lock_cells(nb: NotebookNode) -> None:
    """Lock ``nb``'s cells as nbgrader's ``LockCells`` does (its defaults): grade and locked cells can be
    neither edited nor deleted, solution cells not deleted."""
    for cell in nb.cells:
        meta = _nbgrader(cell)
        if meta.get("solution"):
            cell.metadata["deletable"] = False
        elif meta.get("grade") or meta.get("locked"):
            cell.metadata["deletable"] = False
            cell.metadata["editable"] = False


# --- text transforms ------------------------------------------------------------------------------------

def stub_solutions(source: str, where: str = "cell") -> tuple[str, int]:
    """Replace each ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` region of a code cell's source by a
    stub that raises ``NotImplementedError``. Returns ``(new source, number of regions)``.

    Raises ``ValueError`` naming ``where`` if the markers do not pair up.
    """
    out: list[str] = []
    n = 0
    inside = False
    for lineno, line in enumerate(source.splitlines(keepends=True), 1):
        marker = line.strip()
        if marker == BEGIN:
            if inside:
                raise ValueError(f"{where}, line {lineno}: '{BEGIN}' inside another solution block; "
                                 f"close the first one with '{END}'")
            inside = True
            n += 1
            indent = line[: len(line) - len(line.lstrip())]
            newline = "\n" if line.endswith("\n") else ""
            out.append(f"{indent}{STUB_COMMENT}\n{indent}raise NotImplementedError({STUB_MESSAGE!r}){newline}")
        elif marker == END:
            if not inside:
                raise ValueError(f"{where}, line {lineno}: '{END}' without a '{BEGIN}' before it")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{where}: '{BEGIN}' is never closed; add a line '{END}' after the solution")
    return "".join(out), n


def strip_hidden_tests(source: str, where: str = "cell") -> tuple[str, int]:
    """Remove each ``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS`` region of a code cell's source, as
    nbgrader's ``ClearHiddenTests`` does for the student version. Returns ``(new source, number of regions)``;
    raises ``ValueError`` naming ``where`` if the markers do not pair up."""
    out: list[str] = []
    n = 0
    inside = False
    for lineno, line in enumerate(source.splitlines(keepends=True), 1):
        marker = line.strip()
        if marker == HIDDEN_BEGIN:
            if inside:
                raise ValueError(f"{where}, line {lineno}: '{HIDDEN_BEGIN}' inside another hidden block")
            inside, n = True, n + 1
        elif marker == HIDDEN_END:
            if not inside:
                raise ValueError(f"{where}, line {lineno}: '{HIDDEN_END}' without a '{HIDDEN_BEGIN}' before it")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{where}: '{HIDDEN_BEGIN}' is never closed; add a line '{HIDDEN_END}'")
    return "".join(out).rstrip("\n") if n else source, n


def student_code(source: str, where: str = "cell") -> tuple[str, int]:
    """A code cell as the exercise sheet has it: hidden tests removed, solution blocks stubbed. Returns
    ``(new source, number of solution blocks)``."""
    source, _ = strip_hidden_tests(source, where)
    return stub_solutions(source, where)


def student_markdown(markdown: str, where: str = "cell") -> tuple[str, int]:
    """A markdown cell as the exercise sheet has it, and as nbgrader's ``ClearSolutions`` writes it: each
    written-answer region (a line holding "BEGIN SOLUTION" to one holding "END SOLUTION") becomes
    :data:`TEXT_STUB` at the marker's indentation; an ``xk-answer`` block outside a region is removed
    (:func:`strip_answers`). Returns ``(new text, answers removed)``; raises ``ValueError`` naming ``where`` if
    the markers do not pair up."""
    out: list[str] = []
    n = 0
    inside = False
    for lineno, line in enumerate(markdown.split("\n"), 1):
        if "BEGIN SOLUTION" in line:
            if inside:
                raise ValueError(f"{where}, line {lineno}: '{ANSWER_BEGIN}' inside another answer region")
            inside, n = True, n + 1
            out.append(line[: len(line) - len(line.lstrip())] + TEXT_STUB)
        elif "END SOLUTION" in line:
            if not inside:
                raise ValueError(f"{where}, line {lineno}: '{ANSWER_END}' without a '{ANSWER_BEGIN}' before it")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{where}: '{ANSWER_BEGIN}' is never closed; add a line '{ANSWER_END}' after the answer")
    text, stray = strip_answers("\n".join(out)) if _DETAILS.search("\n".join(out)) else ("\n".join(out), 0)
    return text, n + stray


def strip_answers(markdown: str) -> tuple[str, int]:
    """Remove every ``<details class="xk-answer">`` block from markdown; keep a question written in its
    ``<summary>`` (a summary that only says "Answer" is dropped). Returns ``(new text, blocks removed)``."""

    def replace(match: re.Match) -> str:
        summary = _SUMMARY.search(match.group("body"))
        text = html.unescape(_TAG.sub("", summary.group("text"))).strip() if summary else ""
        text = " ".join(text.split())
        if not text or re.fullmatch(r"(show\s+)?(the\s+)?answers?[.:]?", text, re.IGNORECASE):
            return ""
        text = re.sub(r"^answers?\s*[:\-]\s*", "", text, flags=re.IGNORECASE)  # "Answer: why ...?"
        return f"**{text[:1].upper()}{text[1:]}**"

    new, n = _DETAILS.subn(replace, markdown)
    new = re.sub(r"\n{3,}", "\n\n", new).strip("\n")
    return new, n
