"""Every notebook section says where in the lecture it comes from, and each reference points at what it claims.

For the instructor: directly under every ``## N.`` heading of ``notebooks/NN_*.py`` stands one
italic line, either

    *Lecture: <short lecture name> (seeds/00X), <where>.*      <where>: "p. 12", "pp. 13-14", "pp. 30, 33"
                                                               or "line 646", "lines 254-362, 403-448"
    *Lecture: <short lecture name>, slide "<title>".*          several: 'slides "<title>", "<title>"'
    *Beyond the lectures: <paper, year>.*                      several papers: "<paper, year>; <paper, year>"

The lecture texts are the course's ``seeds/`` files (``../shared/seeds/`` beside the repository, or the
folder named by ``XAIKIT_SEEDS``). A text with page markers (``[End of Page N]``) is cited by page; a text
without them by the titles of its slides (a line of the text, as the student sees it on the slide), which
a student can find without the extract's line numbers (the older form by line is still read). A slide's
text is its title line and the ``SLIDE_LINES`` lines after it. Each cited place must exist, and must
contain the keywords stored for it in ``KEYWORDS`` below, so a reference that points at the wrong slide
fails here.

"Pause here" markers are markdown cells of their own, quoting a question the lecture asks the room:

    > **Pause here.** The lecture asks: "<question, verbatim>" (<short lecture name>, seeds/00X, <where>)
    > **Pause here.** The lecture asks: "<question, verbatim>" (<short lecture name>, slide "<title>")

and the quoted question must be found, word for word (up to spacing, case, curly quotes and emphasis),
at the cited place.

The format checks read only the notebooks and always run; the checks against the lecture texts are
skipped, saying so, where the seeds folder is not there. The checker itself is tested on a made-up
notebook and made-up seeds, so those tests run everywhere.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_SOURCES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))

#: the short name each lecture text is cited by (seeds/README.md says what each file is)
LECTURES = {
    "000": "Gradient/attention-based explanations",
    "001": "Attention is not not explanation",
    "002": "XAI for transformers",
    "003": "Attention-based explainability",
    "004": "Interpreting with attention",
}

#: (seed, where) -> words that must occur at that place of the lecture text (compared after
#: normalising spaces, case, curly quotes and "*"). One entry per place a section line cites.
KEYWORDS: dict[tuple[str, str], tuple[str, ...]] = {
    # notebook 01
    ("000", "pp. 6-11"): ("Gradient-based Explanation", "Feature importance", "One backpropagation"),
    ("000", "p. 12"): ("saturated outputs lead to unintuitive gradients", "Shrikumar"),
    ("000", "pp. 13-14"): ("discontinuous gradients (e.g., thresholding)", "Softplus"),
    ("000", "pp. 15-17"): ("sensitive to slight perturbations", "noisy saliency map", "SmoothGrad"),
    ("000", "pp. 12-18"): ("Problem 1", "Problem 2", "Problem 3", "SmoothGrad", "Integrated Gradients"),
    # notebook 02
    ("000", "pp. 21-22"): ("Sensitivity", "Gradients violate Sensitivity"),
    ("000", "pp. 23-26"): ("Implementation invariance", "LRP and DeepLift"),
    ("000", "pp. 27-30"): ("baseline", "straight line", "Cumulate these gradients", "completeness"),
    ("000", "p. 40"): ("approximated via a summation", "the number of steps"),
    ("000", "pp. 30, 33"): ("completeness", "Shapley"),
    ("000", "pp. 35-39"): ("Each path yields a different attribution method", "symmetry-preserving"),
    ("000", "pp. 21, 27"): ("a clever piece of cinema", "zero embedding"),
    ("000", "pp. 21-40"): ("Gradients violate Sensitivity", "Implementation invariance", "completeness",
                           "symmetry-preserving"),
    # notebook 03
    ("002", 'slides "Tokens and embedding", "Fixed positional encoding"'): (
        "token embedding", "positional encoding", "sine and cosine"),
    ("003", 'slides "How do you compute the attention?", "Attention Workflow"'): (
        "How do you compute the attention?", "Softmax", "input #3"),
    ("002", 'slide "The scaled dot-product attention is computed as"'): (
        "sqrt{d_k}", "causing the softmax to saturate", "vanishing gradients"),
    ("002", 'slides "GPT - Transformers for text generation", "BERT - Transformers for text understanding"'): (
        "masked multi-head self-attention", "uses no masking"),
    ("002", 'slides "Multi-head attention", "Code implementation of multi-head self-attention"'): (
        "Multi-head attention", "Concatenate the output from each head"),
    ("003", 'slide "Attention is permutation equivariant"'): ("Permutation equivariant", "Positional Encoding"),
    ("002", 'slide "Attention mechanism"'): ('how the token "it" attends', 'the correct token "cat"',
                                            "attention weights"),
    ("003", 'slide "The Transformer Model"'): ("per-token", "Residual connections"),
    ("001", 'slide "Types of attention"'): ("Bahdanau attention (additive attention)",
                                          "Luong attention (multiplicative attention)"),
    # notebooks 04 and 06
    ("001", 'slide "LIME [Ribeiro et al., 2016]"'): ("Prediction probabilities", "atheism", "christian"),
    ("002", 'slide "Get the gradients for Grad-SAM"'): ("get_grads_gradsam", "retain_grad",
                                                      "Backward from the model prediction"),
    ("002", 'slide "BERT predictions for sentiment classification"'): (
        "bert-base-uncased-SST-2", "The sentiment of the sentence 'I like the movie' is 1"),
    ("002", 'slide "Homework"'): ("Choose two layers and plot the attention weights",),
    ("002", 'slides "Grad-SAM", "Grad-SAM scores for BERT sentiment classification", '
            '"Technicality regarding Grad-SAM implementation"'): (
        "proposed Grad-SAM", "Which token is always important?", "different from Vaswani"),
    ("002", 'slides "SHAP for BERT sentiment classification", '
            '"SHAP for explaining BERT predictions for sentiment classification"'): (
        "What does the SHAP value of a feature tell us?", 'padding="max_length"'),
    ("002", 'slide "SHAP vs Grad-SAM for BERT sentiment classification"'): (
        "SHAP vs Grad-SAM", "The CLS token almost always ends up"),
    ("003", 'slide "Self-Attention Explanations"'): ("Multiple heads", "Rollout", "gradient-information"),
    ("001", 'slide "Attention as explanation?"'): ("Serrano and Smith", "Decision flips", "Jain and Wallace",
                                                   "Wiegreffe and Pinter"),
    ("002", 'slide "Attention is not not Explanation"'): ("Attention is not not Explanation", "diagnostic"),
    # notebooks 05 and 07
    ("002", 'slide "ViT - Transformers for image classification"'): ("ViT (Vision Transformer)",
                                                                      "divided into patches"),
    ("002", 'slide "TCAV for explaining ViT - in short"'): ("Get data loaders for concept and target images",
                                                            '"striped" vs "dotted"', "layer[10]",
                                                            "Choose model layer"),
    ("002", 'slides "TCAV for explaining ViT", "TCAV for explaining ViT - in short"'): (
        "concept activation vector is the normal vector", "logistic regressor", "directional derivatives",
        "Compute TCAV score", '"dotted" vs "bubbly" is ~0.05'),
}
#: the lines after a slide's title line that count as the slide's text (the extracts mark no slide's end)
SLIDE_LINES = 36

HEADING = re.compile(r"^## (\d+[a-z]?)\.\s+\S")  # "## 4." and "## 4b."
REF_START = re.compile(r"^\*(Lecture|Beyond the lectures)\b")
WHERE = r"(?P<unit>pp?\.|lines?) (?P<spans>\d+(?:-\d+)?(?:, \d+(?:-\d+)?)*)"
LECTURE_LINE = re.compile(r"^\*Lecture: (?P<name>[^()*]+?) \(seeds/(?P<seed>\d{3})\), " + WHERE + r"\.\*$")
SLIDES = r'(?P<sunit>slides?) (?P<titles>"[^"]+"(?:, "[^"]+")*)'
LECTURE_SLIDE_LINE = re.compile(r"^\*Lecture: (?P<name>[^()*,]+), " + SLIDES + r"\.\*$")
BEYOND_LINE = re.compile(r"^\*Beyond the lectures: (?P<works>[^*]+)\.\*$")
YEAR_AT_END = re.compile(r", (1[89]|20)\d\d[a-z]?$")
PAUSE_START = "> **Pause here.**"
PAUSE = re.compile(r'^> \*\*Pause here\.\*\* The lecture asks: "(?P<question>.+\?)" '
                   r"\((?P<name>[^()]+), seeds/(?P<seed>\d{3}), " + WHERE + r"\)$")
PAUSE_SLIDE = re.compile(r'^> \*\*Pause here\.\*\* The lecture asks: "(?P<question>.+\?)" '
                         r"\((?P<name>[^()]+?), " + SLIDES + r"\)$")
HOW_TO_ADD = ("add directly under the heading one italic line, either '*Lecture: <short lecture name> "
              "(seeds/00X), <p. N | pp. N-M>.*' or '*Lecture: <short lecture name>, slide \"<title>\".*' (short names: "
              + ", ".join(f"seeds/{k} '{v}'" for k, v in LECTURES.items())
              + ") or '*Beyond the lectures: <paper, year>.*'")


@dataclass
class Reference:
    """One cited place: the lecture, and the pages or lines (inclusive spans)."""

    where_in_notebook: str
    seed: str
    name: str
    unit: str  # "page", "line" or "slide"
    where: str  # as written, e.g. "pp. 13-14" or 'slide "TCAV for explaining ViT"'
    spans: list[tuple[int, int]]  # pages or lines; empty for slides
    titles: list[str] = field(default_factory=list)  # the cited slides' titles
    text: str | None = None  # the cited text, once read from the lecture


@dataclass
class PauseMarker:
    where_in_notebook: str
    question: str
    ref: Reference


@dataclass
class Collected:
    sections: list[str] = field(default_factory=list)  # "notebook §N"
    references: list[Reference] = field(default_factory=list)
    beyond: list[str] = field(default_factory=list)
    pauses: list[PauseMarker] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def markdown_cells(source: str) -> list[tuple[int, list[str]]]:
    """The markdown cells of a jupytext percent file: (line number of the cell's first text line, lines)."""
    cells, current, start = [], None, 0
    for number, line in enumerate(source.splitlines(), start=1):
        if line.startswith("# %%"):
            if current is not None:
                cells.append((start, current))
            current = [] if "[markdown]" in line else None
            start = number + 1
        elif current is not None:
            if line.strip() == "":
                continue  # blank lines separate the cells; a blank line of markdown is a bare "#"
            if not line.startswith("#"):
                raise ValueError(f"line {number}: markdown cell line without '#': {line!r}")
            current.append(line[2:] if line.startswith("# ") else line[1:])
    if current is not None:
        cells.append((start, current))
    return cells


def parse_where(unit: str, spans: str) -> tuple[str, list[tuple[int, int]]] | str:
    """("pp.", "13-14, 20") -> ("page", [(13, 14), (20, 20)]), or a problem."""
    kind = "page" if unit.startswith("p") else "line"
    out = []
    for part in spans.split(", "):
        a, _, b = part.partition("-")
        lo, hi = int(a), int(b or a)
        if b and lo >= hi:
            return f"the span {part!r} does not run forwards"
        out.append((lo, hi))
    single = unit in ("p.", "line")
    if single != (len(out) == 1 and out[0][0] == out[0][1]):
        return f"{unit!r} does not fit {spans!r}: write 'p.'/'line' for one, 'pp.'/'lines' for several"
    return kind, out


def _slide_reference(where_in_notebook: str, m: re.Match) -> Reference | str:
    """A reference by slide title: the lecture is named by its short name alone."""
    seeds = [seed for seed, name in LECTURES.items() if name == m["name"]]
    if not seeds:
        return f"{where_in_notebook}: {m['name']!r} is not a lecture's short name ({', '.join(LECTURES.values())})"
    titles = re.findall(r'"([^"]+)"', m["titles"])
    if (m["sunit"] == "slide") != (len(titles) == 1):
        return f"{where_in_notebook}: write 'slide' for one title, 'slides' for several"
    return Reference(where_in_notebook, seeds[0], m["name"], "slide", f"{m['sunit']} {m['titles']}", [], titles)


def _reference(where_in_notebook: str, m: re.Match) -> Reference | str:
    if "titles" in m.groupdict():
        return _slide_reference(where_in_notebook, m)
    parsed = parse_where(m["unit"], m["spans"])
    if isinstance(parsed, str):
        return f"{where_in_notebook}: {parsed}"
    if m["seed"] not in LECTURES:
        return f"{where_in_notebook}: seeds/{m['seed']} is not one of the lectures {sorted(LECTURES)}"
    if m["name"] != LECTURES[m["seed"]]:
        return (f"{where_in_notebook}: seeds/{m['seed']} is cited as {m['name']!r}; "
                f"its short name is {LECTURES[m['seed']]!r}")
    unit, spans = parsed
    return Reference(where_in_notebook, m["seed"], m["name"], unit, f"{m['unit']} {m['spans']}", spans)


def collect(paths: list[Path]) -> Collected:
    """Read every notebook source: its sections' reference lines and its pause markers (format checks)."""
    out = Collected()
    for path in paths:
        section = None  # the notebook's current "## N." section
        for start, lines in markdown_cells(path.read_text()):
            where_cell = f"{path.name} line {start}"
            if lines and lines[0].startswith(PAUSE_START):
                text = " ".join(lines)
                if not all(line.startswith(">") for line in lines):
                    out.problems.append(f"{where_cell}: a pause marker is a cell of its own, every line starting '>'")
                    continue
                if section is None:
                    out.problems.append(f"{where_cell}: pause marker before the first numbered section")
                m = PAUSE.match(_join_quote(lines)) or PAUSE_SLIDE.match(_join_quote(lines))
                if m is None:
                    out.problems.append(f"{where_cell}: pause marker not in the form '> **Pause here.** The lecture "
                                        f"asks: \"<question?>\" (<short name>, seeds/00X, <where>)': {text!r}")
                    continue
                ref = _reference(f"{path.name} pause marker at line {start}", m)
                if isinstance(ref, str):
                    out.problems.append(ref)
                else:
                    out.pauses.append(PauseMarker(ref.where_in_notebook, m["question"], ref))
                continue
            if any("Pause here." in line for line in lines):
                out.problems.append(f"{where_cell}: a pause marker is a markdown cell of its own, starting "
                                    f"'{PAUSE_START}'")
            consumed = set()  # the index of each heading's reference line in this cell
            for i, line in enumerate(lines):
                heading = HEADING.match(line)
                if heading:
                    section = f"{path.name} §{heading[1]} ({line!r}, line {start})"
                    out.sections.append(section)
                    after = [j for j in range(i + 1, len(lines)) if lines[j].strip()]  # blank lines may sit between
                    if after and REF_START.match(lines[after[0]]):
                        consumed.add(after[0])
                        _read_reference(section, lines[after[0]], out)
                    else:
                        later = any(REF_START.match(lines[j]) for j in after)
                        what = "has its reference line not directly under the heading" if later else "has no reference line"
                        out.problems.append(f"{section} {what}: {HOW_TO_ADD}; a lecture reference also "
                                            "needs its keywords in KEYWORDS in tests/test_lecture_refs.py")
                elif REF_START.match(line) and i not in consumed:
                    out.problems.append(f"{section or where_cell}: a second or stray reference line {line!r}; "
                                        "each section has exactly one, directly under its heading")
    return out


def _join_quote(lines: list[str]) -> str:
    """A quoted markdown block as one line: the '>' of each continuation line dropped."""
    return " ".join([lines[0].strip()] + [line[1:].strip() for line in lines[1:]])


def _read_reference(section: str, line: str, out: Collected) -> None:
    if line.startswith("*Lecture"):
        m = LECTURE_LINE.match(line) or LECTURE_SLIDE_LINE.match(line)
        if m is None:
            out.problems.append(f"{section}: {line!r} is not of the form '*Lecture: <short lecture name> "
                                "(seeds/00X), <p. N | pp. N-M | line N | lines N-M>.*'")
            return
        ref = _reference(section, m)
        if isinstance(ref, str):
            out.problems.append(ref)
        else:
            out.references.append(ref)
    else:
        m = BEYOND_LINE.match(line)
        works = [w.strip() for w in m["works"].split(";")] if m else []
        if not works or not all(YEAR_AT_END.search(w) and len(w) > 12 for w in works):
            out.problems.append(f"{section}: {line!r} is not of the form '*Beyond the lectures: <paper, year>.*' "
                                "(several: '<paper, year>; <paper, year>')")
        else:
            out.beyond.append(section)


def normalise(text: str) -> str:
    text = text.translate({ord("“"): '"', ord("”"): '"', ord("‘"): "'", ord("’"): "'", ord("*"): None})
    return " ".join(text.split()).lower()


class Lecture:
    """One seeds/ text, cut into pages (where it has page markers) or lines."""

    def __init__(self, path: Path):
        self.path = path
        self.lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        self.paged = any(line.strip() == "[End of Page 1]" for line in self.lines)
        self.pages: dict[int, list[str]] = {}
        if self.paged:
            block: list[str] = []
            for line in self.lines:
                m = re.fullmatch(r"\[End of Page (\d+)\]", line.strip())
                if m:
                    self.pages[int(m[1])] = block
                    block = []
                elif not set(line.strip()) <= {"-"}:
                    block.append(line)

    def text(self, unit: str, spans: list[tuple[int, int]], titles: list[str] = ()) -> str:
        """The cited text, or raises LookupError saying what is wrong."""
        if unit == "slide":
            if self.paged:
                raise LookupError(f"{self.path.name} has page markers: cite pages")
            chunks = []
            for title in titles:
                # a title line as the extract has it: plain, or a markdown heading ("# Title"); a title may
                # also be the first words of a line that goes on ("Homework :)")
                heads = [normalise(line.lstrip("#").strip()) for line in self.lines]
                at = ([i for i, line in enumerate(heads) if line == normalise(title)]
                      or [i for i, line in enumerate(heads) if line.startswith(normalise(title))])
                if not at:
                    raise LookupError(f"{self.path.name} has no slide titled {title!r} (no line reads so)")
                chunks += self.lines[at[0]:at[0] + 1 + SLIDE_LINES]
            return "\n".join(chunks)
        if unit == "page" and not self.paged:
            raise LookupError(f"{self.path.name} has no page markers: cite lines")
        if unit == "line" and self.paged:
            raise LookupError(f"{self.path.name} has page markers: cite pages")
        chunks = []
        for lo, hi in spans:
            if unit == "page":
                missing = [p for p in range(lo, hi + 1) if p not in self.pages]
                if missing:
                    raise LookupError(f"{self.path.name} has pages 1-{max(self.pages)}; no page {missing[0]}")
                chunks += [line for p in range(lo, hi + 1) for line in self.pages[p]]
            else:
                if lo < 1 or hi > len(self.lines):
                    raise LookupError(f"{self.path.name} has lines 1-{len(self.lines)}; {lo}-{hi} is outside")
                chunks += self.lines[lo - 1:hi]
        return "\n".join(chunks)


def load_lectures(folder: Path) -> dict[str, Lecture]:
    out = {}
    for seed in LECTURES:
        found = sorted(folder.glob(f"{seed}_*.txt"))
        if len(found) == 1:
            out[seed] = Lecture(found[0])
    return out


def check_against_lectures(found: Collected, folder: Path, keywords: dict[tuple[str, str], tuple[str, ...]]
                           ) -> list[str]:
    """Each cited place exists and holds its keywords; each pause question is found where it is cited."""
    lectures = load_lectures(folder)
    problems = []
    for ref in found.references + [p.ref for p in found.pauses]:
        if ref.seed not in lectures:
            problems.append(f"{ref.where_in_notebook}: no file seeds/{ref.seed}_*.txt in {folder}")
            continue
        try:
            ref.text = lectures[ref.seed].text(ref.unit, ref.spans, ref.titles)
        except LookupError as err:
            problems.append(f"{ref.where_in_notebook}: seeds/{ref.seed}, {ref.where}: {err}")
    for ref in found.references:
        if ref.text is None:
            continue
        words = keywords.get((ref.seed, ref.where))
        if not words:
            problems.append(f"{ref.where_in_notebook} cites seeds/{ref.seed}, {ref.where}, which has no keywords: add "
                            f"({ref.seed!r}, {ref.where!r}): (<words found there>,) to KEYWORDS in "
                            "tests/test_lecture_refs.py")
            continue
        text = normalise(ref.text)
        for word in words:
            if normalise(word) not in text:
                problems.append(f"{ref.where_in_notebook}: {word!r} is not in seeds/{ref.seed}, {ref.where}: "
                                "does the reference point at the right place?")
    for pause in found.pauses:
        if pause.ref.text is not None and normalise(pause.question) not in normalise(pause.ref.text):
            problems.append(f"{pause.where_in_notebook}: the question {pause.question!r} is not asked in "
                            f"seeds/{pause.ref.seed}, {pause.ref.where}")
    return problems


def seeds_folder() -> Path | None:
    """XAIKIT_SEEDS if set; else shared/seeds inside or beside the repository; None if there is none."""
    named = os.environ.get("XAIKIT_SEEDS")
    if named:
        return Path(named)
    for candidate in (ROOT / "shared" / "seeds", ROOT.parent / "shared" / "seeds"):
        if candidate.is_dir():
            return candidate
    return None


@pytest.fixture(scope="module")
def found() -> Collected:
    return collect(NOTEBOOK_SOURCES)


@pytest.fixture(scope="module")
def seeds() -> Path:
    folder = seeds_folder()
    if folder is None:
        if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:
            pytest.fail("CI runs with ../shared beside the clone, but no seeds/ folder was found there")
        pytest.skip("the lecture texts (seeds/) are not beside this checkout: set XAIKIT_SEEDS=<folder> to check "
                    "the references against them")
    assert folder.is_dir(), f"XAIKIT_SEEDS={folder} is not a folder"
    return folder


# ---- the notebooks ---------------------------------------------------------------------------------------

def test_there_are_notebook_sources():
    assert len(NOTEBOOK_SOURCES) >= 5, NOTEBOOK_SOURCES


def test_every_section_has_exactly_one_reference_line(found):
    assert len(found.sections) >= 30, found.sections  # the parser sees the notebooks' sections
    assert found.problems == [], "\n".join(found.problems)
    assert len(found.references) + len(found.beyond) == len(found.sections)


def test_references_and_pause_questions_are_found_in_the_lectures(found, seeds):
    problems = check_against_lectures(found, seeds, KEYWORDS)
    assert problems == [], "\n".join(problems)
    assert all(r.text for r in found.references + [p.ref for p in found.pauses])  # every place was read


def test_every_stored_keyword_entry_is_cited(found):
    cited = {(r.seed, r.where) for r in found.references}
    stale = sorted(set(KEYWORDS) - cited)
    assert stale == [], f"KEYWORDS entries that no section cites any more (remove them): {stale}"


def test_pause_markers_are_spread_over_the_notebooks(found):
    """About six questions to the room, in at least four notebooks, none asked twice."""
    assert len(found.pauses) >= 6, [p.where_in_notebook for p in found.pauses]
    assert len({p.where_in_notebook.split()[0] for p in found.pauses}) >= 4
    assert len({normalise(p.question) for p in found.pauses}) == len(found.pauses), "a question is asked twice"


# ---- the checker, on a made-up notebook and made-up lecture texts ----------------------------------------

FAKE_PAGED = "\n".join(["Title", "1", "-" * 20, "[End of Page 1]", "2", "Saturation of gradients", "-" * 20,
                        "[End of Page 2]", "3", "Why is the sky", "blue?", "[End of Page 3]"])
FAKE_LINES = "\n".join(["Attention maths", "Permutation equivariant property", "Do you see any weaknesses?"])


def _fake(tmp_path: Path, body: str) -> Collected:
    seeds = tmp_path / "seeds"
    seeds.mkdir(exist_ok=True)
    (seeds / "000_fake.txt").write_text(FAKE_PAGED)
    (seeds / "003_fake.txt").write_text(FAKE_LINES)
    nb = tmp_path / "09_fake.py"
    nb.write_text("# %%\nx = 1\n\n" + body)
    return collect([nb])


GOOD = """# %% [markdown]
# ## 1. Saturation
# *Lecture: Gradient/attention-based explanations (seeds/000), p. 2.*
#
# Text.

# %% [markdown]
# > **Pause here.** The lecture asks: "Why is the sky blue?"
# > (Gradient/attention-based explanations, seeds/000, p. 3)

# %% [markdown]
# ## 2. Permutations
# *Lecture: Attention-based explainability (seeds/003), lines 1-2.*

# %% [markdown]
# ## 3. Something new
# *Beyond the lectures: Someone et al., A paper, 2024.*
"""
GOOD_KEYWORDS = {("000", "p. 2"): ("saturation",), ("003", "lines 1-2"): ("permutation equivariant",)}


def _all_problems(tmp_path: Path, body: str, keywords=None) -> list[str]:
    found = _fake(tmp_path, body)
    return found.problems + check_against_lectures(found, tmp_path / "seeds", keywords or GOOD_KEYWORDS)


def test_checker_passes_a_good_notebook(tmp_path):
    found = _fake(tmp_path, GOOD)
    assert found.problems == [] and len(found.sections) == 3 and len(found.pauses) == 1
    assert check_against_lectures(found, tmp_path / "seeds", GOOD_KEYWORDS) == []
    assert found.references[0].spans == [(2, 2)] and found.references[1].unit == "line"


def test_checker_says_what_to_add_to_a_section_without_a_line(tmp_path):
    problems = _all_problems(tmp_path, GOOD + "\n# %% [markdown]\n# ## 4. A new section\n#\n# Text.\n")
    assert len(problems) == 1 and "§4" in problems[0] and "no reference line" in problems[0]
    assert "*Lecture: <short lecture name> (seeds/00X)" in problems[0] and "Beyond the lectures" in problems[0]


@pytest.mark.parametrize(("change", "expected"), [
    (("p. 2.*", "p. 9.*"), "no page 9"),                                               # no such page
    (("p. 2.*", "line 2.*"), "has page markers: cite pages"),
    (("lines 1-2.*", "lines 1-4.*"), "has lines 1-3; 1-4 is outside"),
    (("lines 1-2.*", "pp. 1-2.*"), "has no page markers: cite lines"),
    (("lines 1-2.*", "lines 2-1.*"), "does not run forwards"),
    (("(seeds/003)", "(seeds/004)"), "its short name is 'Interpreting with attention'"),
    (("(seeds/003)", "(seeds/007)"), "not one of the lectures"),
    (("*Lecture: Gradient", "*Lecture: gradient"), "its short name is"),
    (("A paper, 2024.*", "A paper.*"), "Beyond the lectures: <paper, year>"),
    (('"Why is the sky blue?"', '"Why is the sea blue?"'), "is not asked in seeds/000, p. 3"),
    (("seeds/000, p. 3)", "seeds/000, p. 2)"), "is not asked in seeds/000, p. 2"),
    (("# > (Gradient", "# (Gradient"), "every line starting '>'"),
    (("# *Lecture: Gradient/attention-based explanations (seeds/000), p. 2.*\n#\n# Text.",
      "# Text.\n# *Lecture: Gradient/attention-based explanations (seeds/000), p. 2.*"), "not directly under the heading"),
    (("# Text.", "# Text.\n# *Beyond the lectures: Other, B paper, 2023.*"), "second or stray reference line"),
])
def test_checker_catches(tmp_path, change, expected):
    old, new = change
    assert old in GOOD
    problems = _all_problems(tmp_path, GOOD.replace(old, new, 1))
    assert any(expected in p for p in problems), problems


SLIDE_NOTEBOOK = """# %% [markdown]
# ## 1. Permutations
# *Lecture: Attention-based explainability, slide "Permutation equivariant property".*

# %% [markdown]
# > **Pause here.** The lecture asks: "Do you see any weaknesses?"
# > (Attention-based explainability, slide "Attention maths")
"""


def test_checker_reads_references_by_slide_title(tmp_path):
    keywords = {("003", 'slide "Permutation equivariant property"'): ("weaknesses",)}
    found = _fake(tmp_path, SLIDE_NOTEBOOK)
    assert found.problems == [] and found.references[0].titles == ["Permutation equivariant property"]
    assert check_against_lectures(found, tmp_path / "seeds", keywords) == []
    assert found.pauses[0].ref.unit == "slide"
    wrong_title = _fake(tmp_path, SLIDE_NOTEBOOK.replace('slide "Permutation', 'slide "Permutations'))
    problems = check_against_lectures(wrong_title, tmp_path / "seeds", keywords)
    assert len(problems) == 1 and "no slide titled 'Permutations equivariant property'" in problems[0]
    wrong_keyword = check_against_lectures(found, tmp_path / "seeds", {("003", 'slide "Permutation equivariant '
                                                                               'property"'): ("softmax",)})
    assert len(wrong_keyword) == 1 and "'softmax' is not in seeds/003" in wrong_keyword[0]
    bad = _fake(tmp_path, SLIDE_NOTEBOOK.replace("Attention-based explainability, slide", "Attention maths, slide", 1))
    assert any("is not a lecture's short name" in p for p in bad.problems)


def test_checker_catches_a_reference_to_the_wrong_place(tmp_path):
    wrong = {**GOOD_KEYWORDS, ("000", "p. 3"): ("saturation",)}  # the keyword of page 2, filed under page 3
    problems = _all_problems(tmp_path, GOOD.replace("p. 2.*", "p. 3.*"), wrong)
    assert problems == ["09_fake.py §1 ('## 1. Saturation', line 5): 'saturation' is not in seeds/000, p. 3: "
                        "does the reference point at the right place?"]


def test_checker_allows_a_blank_line_under_the_heading(tmp_path):
    found = _fake(tmp_path, GOOD.replace("# ## 1. Saturation\n", "# ## 1. Saturation\n#\n"))
    assert found.problems == [] and len(found.references) == 2


def test_checker_asks_for_keywords_of_a_new_place(tmp_path):
    problems = _all_problems(tmp_path, GOOD.replace("p. 2.*", "pp. 1-2.*"))
    assert len(problems) == 1 and "add ('000', 'pp. 1-2'): (<words found there>,) to KEYWORDS" in problems[0]


def test_normalise_matches_across_lines_quotes_and_emphasis():
    assert normalise("the token “it”\n*attends*  to") == 'the token "it" attends to'
    lecture = Lecture.__new__(Lecture)
    lecture.path, lecture.paged, lecture.lines = Path("x"), False, ["a", "b", "c"]
    assert lecture.text("line", [(1, 1), (3, 3)]) == "a\nc"


def test_notebook_sources_hold_no_control_characters():
    """A backslash escape lost on the way (``\\bar`` written as a backspace and "ar", ``\\text`` as a tab and
    "ext") renders as broken LaTeX; no notebook source may hold a control character but the newline."""
    import re

    for path in sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            bad = re.search(r"[\x00-\x09\x0b-\x1f\x7f]", line)
            assert bad is None, f"{path.name}:{number} holds the control character {bad.group()!r}: {line[:80]!r}"
