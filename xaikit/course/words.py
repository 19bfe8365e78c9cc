"""How much a student reads and does in each notebook: words of prose, lines of code, exercises, time.

Reads each jupytext source ``notebooks/NN_*.py``. Lectures are notebooks 01-05 (one 75-minute lecture each,
at most ``LECTURE_WORDS`` words of prose), labs are 06 and up (at most ``LAB_WORDS``).

* **words**: the student-visible prose of the markdown cells. Left out: hidden answers (the regions between
  ``<!-- BEGIN SOLUTION -->`` and ``<!-- END SOLUTION -->``, which hold the ``<details class="xk-answer">``
  blocks that ``homework build`` strips from the students' sheets), LaTeX formulas (``$...$`` and ``$$...$$``)
  and HTML tags. A word is a run of characters with a letter or digit in it.
* **code**: non-blank lines of code cells that are not comments, without the solution regions
  (``### BEGIN SOLUTION`` ... ``### END SOLUTION``) and hidden tests; the Colab set-up cell counts too.
* **exercises**: what a student hands in, as nbgrader marks it: each written answer (a markdown cell with
  ``"solution": true``) and each function to write (a code cell with ``"solution": true``). An exercise
  states its time and difficulty, ``(10 min, ★★☆)``, in its own text or, for a function, in the markdown cell
  that sets the task just above it; one without is counted at ``DEFAULT_EXERCISE_MIN`` and listed as
  "untimed". An exercise set as homework says so, ``(homework, 25 min, ★★☆)``: its minutes are counted
  apart, as homework, and not in the class time.
* **time**: reading at ``READING_WPM`` words a minute (technical prose read with care, formulas and code
  glanced at), plus the stated minutes of the exercises done in class: the lecture's 75 minutes. Running
  cells and watching panels are not included.

    python benchmarks/notebook_words.py            # the table; exit 1 when a notebook is over its limit

The word limits come from the course material (``CURRICULUM.md``): a lecture is read and worked in one
75-minute session.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

#: the notebook sources of a clone (``notebooks/`` beside the package)
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
LECTURE_WORDS = 3500  # a 75-minute lecture
LAB_WORDS = 5000
READING_WPM = 150
DEFAULT_EXERCISE_MIN = 5.0
FIRST_LAB = 6

_SOLUTION_MD = re.compile(r"<!-- BEGIN SOLUTION -->.*?<!-- END SOLUTION -->", re.S)
_DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.S)
_INLINE_MATH = re.compile(r"(?<!\\)\$[^$\n]+?(?<!\\)\$")
_TAG = re.compile(r"<[^>]+>")
_WORD = re.compile(r"\S*[A-Za-z0-9]\S*")
_SOLUTION_CELL = re.compile(r'"solution": true')
_TIME = re.compile(r"\((homework, )?(\d+(?:\.\d+)?) min, ([★☆]{3})\)")


@dataclass
class Count:
    name: str
    words: int = 0
    code: int = 0
    exercise_minutes: list[float] = field(default_factory=list)  # every exercise, in class or homework
    homework_minutes: list[float] = field(default_factory=list)  # those set as homework
    untimed: int = 0

    @property
    def lab(self) -> bool:
        return int(self.name[:2]) >= FIRST_LAB

    @property
    def limit(self) -> int:
        return LAB_WORDS if self.lab else LECTURE_WORDS

    @property
    def class_minutes(self) -> float:
        """The stated minutes of the exercises done in class."""
        return sum(self.exercise_minutes) - sum(self.homework_minutes)

    @property
    def minutes(self) -> float:
        """Time in class: reading plus the in-class exercises (homework is not in it)."""
        return self.words / READING_WPM + self.class_minutes


def cells(source: str) -> list[tuple[str, str, bool]]:
    """(kind, text, is an exercise) of each cell of a jupytext percent source; markdown text without its
    leading '# '."""
    out, kind, lines, graded = [], None, [], False
    for line in source.splitlines():
        if line.startswith("# %%"):
            if kind is not None:
                out.append((kind, "\n".join(lines), graded))
            kind, lines = ("markdown" if "[markdown]" in line else "code"), []
            graded = bool(_SOLUTION_CELL.search(line))
        elif kind == "markdown":
            lines.append(line[2:] if line.startswith("# ") else line.lstrip("#"))
        elif kind is not None:
            lines.append(line)
    if kind is not None:
        out.append((kind, "\n".join(lines), graded))
    return out


def visible_prose(markdown: str) -> str:
    """The words a student reads in one markdown cell: no hidden answers, formulas or tags."""
    text = _SOLUTION_MD.sub(" ", markdown)
    text = _DISPLAY_MATH.sub(" ", text)
    text = _INLINE_MATH.sub(" ", text)
    return _TAG.sub(" ", text)


def code_lines(code: str) -> int:
    """Non-blank lines of one code cell that are not comments, solution regions or hidden tests."""
    n, hidden = 0, False
    for line in code.splitlines():
        s = line.strip()
        if s.startswith(("### BEGIN SOLUTION", "### BEGIN HIDDEN TESTS")):
            hidden = True
        elif s.startswith(("### END SOLUTION", "### END HIDDEN TESTS")):
            hidden = False
        elif s and not s.startswith("#") and not hidden:
            n += 1
    return n


def count(path: Path) -> Count:
    """Words, code lines and exercises of one jupytext source."""
    c = Count(path.stem)
    last_prose = ""  # the markdown just above a cell: where a function's task is set
    for kind, text, graded in cells(path.read_text(encoding="utf-8")):
        if kind == "code":
            c.code += code_lines(text)
            own = ""
        else:
            own = visible_prose(text)
            c.words += len(_WORD.findall(own))
        if graded:
            stated = _TIME.search(own) or _TIME.search(last_prose)
            minutes = float(stated[2]) if stated else DEFAULT_EXERCISE_MIN
            c.exercise_minutes.append(minutes)
            if stated and stated[1]:
                c.homework_minutes.append(minutes)
            c.untimed += stated is None
        if kind == "markdown":
            last_prose = own
    return c


def table(folder: Path = NOTEBOOKS) -> int:
    """Print one row per notebook source ``NN_*.py`` in ``folder``; 1 when a notebook is over its limit."""
    paths = sorted(Path(folder).glob("[0-9][0-9]_*.py"))
    rows = [count(p) for p in paths]
    print(f"reading rate {READING_WPM} words/min; each exercise at its stated minutes "
          f"({DEFAULT_EXERCISE_MIN:g} min where it states none); class min = reading + in-class exercises "
          f"(homework apart); limits: lecture {LECTURE_WORDS} words, lab {LAB_WORDS}")
    header = f"{'notebook':28} {'kind':7} {'words':>6} {'limit':>6} {'code':>5} {'exercises':>9} {'untimed':>7} " \
             f"{'read min':>8} {'class ex':>8} {'homework':>8} {'class min':>9}  flag"
    print(header)
    print("-" * len(header))
    over = []
    for r in rows:
        flag = "OVER" if r.words > r.limit else ""
        if flag:
            over.append(r.name)
        print(f"{r.name:28} {'lab' if r.lab else 'lecture':7} {r.words:6d} {r.limit:6d} {r.code:5d} "
              f"{len(r.exercise_minutes):9d} {r.untimed:7d} {r.words / READING_WPM:8.0f} "
              f"{r.class_minutes:8.0f} {sum(r.homework_minutes):8.0f} {r.minutes:9.0f}  {flag}")
    if over:
        print(f"over the word limit: {', '.join(over)}")
    return 1 if over else 0
