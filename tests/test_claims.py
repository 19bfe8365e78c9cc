"""The claims ledger: its entries are well formed, it names the same claims as the notebooks, and ``claim()``
asserts, logs what the claims matrix collects, and prints the student's line (sentence and value) or, in the
instructor's view, the ledger's; ``xaikit claims report`` writes the instructor's page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from xaikit.course import claims
from xaikit.course.claims import Claim, ClaimFailed, claim

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
CALL = re.compile(r"""\bclaim\(\s*["']([^"']+)["']""")


def notebook_claims() -> dict[str, list[str]]:
    """The ids of every ``claim("...")`` call in each notebook's jupytext source, in order."""
    found = {}
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py")):
        found[path.name[:2]] = CALL.findall(path.read_text())
    return found


def test_every_notebook_claim_is_in_the_ledger_and_every_ledger_claim_in_its_notebook():
    found = notebook_claims()
    assert {"01", "02", "03", "04", "05", "06", "07"} <= set(found)
    assert set(found) == {nn for nn in found if claims.by_notebook(nn)}, "a notebook without a ledger file"
    for nn, ids in found.items():
        ledger = [c.id for c in claims.by_notebook(nn)]
        missing = sorted(set(ids) - set(ledger))
        unused = sorted(set(ledger) - set(ids))
        assert not missing, f"notebook {nn} checks claims the ledger lacks (add them to xaikit/course/claims/nb{nn}.py): {missing}"
        assert not unused, f"xaikit/course/claims/nb{nn}.py lists claims notebook {nn} never checks: {unused}"
        twice = sorted({i for i in ids if ids.count(i) > 1})
        assert not twice, f"notebook {nn} checks these claims more than once (one call per claim): {twice}"


def test_every_notebook_checks_claims_through_the_ledger():
    for nn, ids in notebook_claims().items():
        assert ids, f"notebook {nn} checks no claim through the ledger"
        kinds = {claims.LEDGER[i].kind for i in ids}
        assert kinds & {"identity", "empirical"}, f"notebook {nn} asserts no claim"


def test_ledger_entries_are_complete():
    for entry in claims.LEDGER.values():
        assert entry.sentence.strip(), entry.id
        if entry.kind == "empirical":
            assert entry.lower is not None or entry.upper is not None, entry.id
        if entry.worst is not None:
            assert entry.kind == "empirical" and entry.worst_build, entry.id


def test_every_claim_was_measured_over_the_build_matrix():
    """The committed record (``benchmarks/claims_matrix.py --record``) has every empirical claim's worst value
    and every shown claim's range, which the notebooks print beside a build's own value: a claim added or
    renamed since the last matrix run fails here until the matrix measures it."""
    import json

    measured = json.loads(claims.MEASURED_FILE.read_text())["claims"]
    missing = [e.id for e in claims.LEDGER.values() if e.kind in ("empirical", "shown") and e.id not in measured]
    assert not missing, f"not measured over the build matrix (run benchmarks/claims_matrix.py --record): {missing}"
    stale = sorted(set(measured) - set(claims.LEDGER))
    assert not stale, f"measured.json names claims the ledger no longer has: {stale}"
    for entry in claims.LEDGER.values():
        if entry.kind == "shown":
            assert entry.seen is not None and entry.seen[0] <= entry.seen[1], entry.id


def test_notebooks_have_no_bitwise_float_asserts():
    """torch.equal / np.array_equal on computed floats broke on an AVX-512 CPU; a line that keeps one says
    why it is exact by construction in a comment, on the line or in a comment line just above it."""
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py")):
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines, 1):
            if re.search(r"torch\.equal\(|array_equal\(", line):
                said = line + (lines[number - 2] if number > 1 and lines[number - 2].lstrip().startswith("#") else "")
                assert "exact" in said.lower(), (
                    f"{path.name}:{number} compares floats bitwise without saying why that is exact: {line.strip()}")


def _entry(**kw) -> Claim:
    base = {"id": "01.1-test", "sentence": "a test", "kind": "empirical", "lower": 0.5}
    return Claim(**{**base, **kw})


def test_bounds_and_margins():
    c = _entry(lower=0.5, upper=0.9)
    assert c.holds(0.5) and c.holds(0.9) and not c.holds(0.49) and not c.holds(0.91)
    assert not c.holds(float("nan"))
    assert c.margin(0.6) == pytest.approx(0.1) and c.margin(0.85) == pytest.approx(0.05)
    assert c.margin(0.4) == pytest.approx(-0.1)
    strict = _entry(lower=0.0, strict=True)
    assert not strict.holds(0.0) and strict.holds(1e-9)
    shown = _entry(kind="shown", lower=None, why="flips with the seed")
    assert shown.holds(-1e9) and shown.margin(3.0) is None and shown.bound_text() == "shown, not asserted"


@pytest.mark.parametrize("bad, message", [
    ({"id": "1.1-x"}, "NN.S-short-name"), ({"id": "01-x"}, "NN.S-short-name"), ({"id": "01.1"}, "NN.S"),
    ({"kind": "guess"}, "kind must be"), ({"kind": "shown", "why": "x"}, "no bound"),
    ({"lower": None}, "needs a lower or an upper"), ({"kind": "identity", "upper": 1e-6, "lower": None}, "say why"),
])
def test_malformed_entries_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        _entry(**bad)


def test_claim_asserts_prints_and_logs(monkeypatch, tmp_path, capsys):
    entry = _entry(id="01.1-unit-test-claim", lower=0.5)
    monkeypatch.setitem(claims.LEDGER, entry.id, entry)
    log = tmp_path / "claims.jsonl"
    monkeypatch.setenv(claims.LOG_ENV, str(log))
    monkeypatch.delenv(claims.COLLECT_ENV, raising=False)
    monkeypatch.delenv(claims.LEDGER_ENV, raising=False)
    assert claim(entry.id, 0.75) == 0.75
    assert capsys.readouterr().out == "a test: 0.75\n"
    with pytest.raises(ClaimFailed, match="does not hold on this build: value 0.25, bound >= 0.5"):
        claim(entry.id, 0.25)
    with pytest.raises(AssertionError):  # a failed claim fails a notebook like any assert
        claim(entry.id, float("nan"))
    monkeypatch.setenv(claims.COLLECT_ENV, "1")  # the claims matrix: record, print, go on
    assert claim(entry.id, 0.1) == 0.1
    assert "FAILED" in capsys.readouterr().out
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["value"], e["holds"]) for e in logged[:2]] == [(0.75, True), (0.25, False)]
    assert logged[-1]["value"] == 0.1 and not logged[-1]["holds"]


def test_claim_refuses_unknown_ids_and_non_numbers(monkeypatch):
    with pytest.raises(KeyError, match="not in the ledger"):
        claim("01.1-no-such-claim", 1.0)
    entry = _entry(id="01.1-unit-test-claim")
    monkeypatch.setitem(claims.LEDGER, entry.id, entry)
    with pytest.raises(TypeError, match="one number"):
        claim(entry.id, [1.0, 2.0])
    import torch

    assert claim(entry.id, torch.tensor(0.75), quiet=True) == pytest.approx(0.75)


#: what the student's line must never carry: a claim id, the ledger's words, a bound
LEDGER_WORDS = re.compile(r"\b\d\d\.\d+[a-z]?-[a-z]|build matrix|\bbuilds?\b|worst over|not asserted|\bissue\b|"
                          r"\bbound\b|\bidentity\b|\bempirical\b|\bshown\b|\[claim\]|claims matrix", re.I)


@pytest.fixture
def student_view(monkeypatch):
    monkeypatch.delenv(claims.LEDGER_ENV, raising=False)
    monkeypatch.delenv(claims.COLLECT_ENV, raising=False)
    monkeypatch.delenv(claims.LOG_ENV, raising=False)
    claims.instructor(None)
    yield
    claims.instructor(None)


def _value_inside(entry: Claim) -> float:
    if entry.lower is not None and entry.upper is not None:
        return (entry.lower + entry.upper) / 2
    if entry.lower is not None:
        return entry.lower + max(abs(entry.lower), 1e-3) / 2
    if entry.upper is not None:
        return entry.upper - max(abs(entry.upper), 1e-3) / 2
    return 0.5


def test_the_students_line_is_the_sentence_and_the_value_for_every_claim(student_view, capsys):
    """Every ledger claim, printed as a student sees it: its sentence and its value, none of the ledger."""
    for entry in claims.LEDGER.values():
        value = _value_inside(entry)
        claim(entry.id, value, note="a note")
        line = capsys.readouterr().out
        assert line.count("\n") == 1 and line.startswith(entry.sentence.strip().rstrip(".")), entry.id
        assert "(a note)" in line, entry.id
        bad = LEDGER_WORDS.findall(line)
        assert not bad, f"{entry.id}: the student's line carries {bad}: {line}"
        assert entry.why not in line, entry.id


def test_ledger_sentences_read_as_lecture_statements():
    """A sentence is what the student reads: no bound ('>= 0.9', 'at least 0.4'), no ledger words."""
    for entry in claims.LEDGER.values():
        assert not LEDGER_WORDS.search(entry.sentence), (entry.id, entry.sentence)
        # a bound reads ">= 0.9", "> 0.9" or "at least 0.4"; "x > 0" (a pixel's value) and "(> 0: ...)" are prose
        assert not re.search(r"[<>]=\s*\d|[<>]\s*\d*\.\d|\bat (least|most) \d", entry.sentence), (entry.id, entry.sentence)


def test_seed_spread_is_printed_from_the_measured_range_only_where_it_is_the_lesson(student_view, capsys):
    assert claims.SEED_SPREAD <= set(claims.LEDGER)
    for cid in claims.SEED_SPREAD:
        entry = claims.LEDGER[cid]
        assert entry.kind == "shown" and entry.seen is not None, cid
        claim(cid, 0.5)
        out = capsys.readouterr().out
        assert f"varies with the training seed: {claims._number(entry.seen[0])} to {claims._number(entry.seen[1])}" in out
    other = next(c for c in claims.LEDGER.values() if c.kind == "shown" and c.id not in claims.SEED_SPREAD)
    claim(other.id, 0.5)
    assert "varies" not in capsys.readouterr().out


def test_instructor_view_prints_the_ledger_line(student_view, monkeypatch, capsys):
    shown = _entry(id="01.1-unit-test-shown", kind="shown", lower=None, why="it flips with the seed",
                   seen=(0.2, 0.9), seen_builds=7)
    asserted = _entry(id="01.1-unit-test-claim", lower=0.5, worst=0.61, worst_build="seed3-native")
    monkeypatch.setitem(claims.LEDGER, shown.id, shown)
    monkeypatch.setitem(claims.LEDGER, asserted.id, asserted)
    claim(shown.id, 0.4)
    claim(asserted.id, 0.75)
    assert capsys.readouterr().out == "a test: 0.4\na test: 0.75\n"
    claims.instructor(True)
    claim(shown.id, 0.4)
    claim(asserted.id, 0.75)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("[shown] 01.1-unit-test-shown: 0.4; over 7 builds of the claims matrix 0.2 to 0.9  "
                      "(not asserted: it flips with the seed)")
    assert out[1] == "[claim] 01.1-unit-test-claim: 0.75, bound >= 0.5; worst over the build matrix 0.61"
    claims.instructor(False)
    monkeypatch.setenv(claims.LEDGER_ENV, "1")  # the switch wins over the environment ...
    claim(asserted.id, 0.75)
    assert capsys.readouterr().out == "a test: 0.75\n"
    claims.instructor(None)  # ... and None goes back to it
    claim(asserted.id, 0.75)
    assert capsys.readouterr().out.startswith("[claim] 01.1-unit-test-claim")
    with pytest.raises(TypeError, match="on must be True or False"):
        claims.instructor("yes")


def test_a_failing_claim_still_raises_with_the_full_detail_in_the_students_view(student_view, monkeypatch):
    entry = _entry(id="01.1-unit-test-claim", lower=0.5, worst=0.61, worst_build="seed3-native",
                   why="the lecture's bound")
    monkeypatch.setitem(claims.LEDGER, entry.id, entry)
    with pytest.raises(ClaimFailed) as err:
        claim(entry.id, 0.25, quiet=True)
    text = str(err.value)
    for part in ("01.1-unit-test-claim", "value 0.25", "bound >= 0.5", "worst over the build matrix: 0.61",
                 "seed3-native", "a test", "the lecture's bound"):
        assert part in text, part


def test_claims_report_lists_every_claim(tmp_path):
    from xaikit.__main__ import main
    from xaikit.course.claims import report

    page = tmp_path / "claims.html"
    assert main(["claims", "report", "--out", str(page)]) == 0
    text = page.read_text()
    assert all(f">{cid}<" in text for cid in claims.LEDGER)
    assert "<th>worst build</th>" in text and "<th>seen range</th>" in text
    md = tmp_path / "claims.md"
    assert main(["claims", "report", "04", "--out", str(md)]) == 0
    lines = [line for line in md.read_text().splitlines() if line.startswith("| ")]
    ids = [line.split(" | ")[0][2:] for line in lines[1:]]
    assert ids == [c.id for c in claims.by_notebook("04")]
    empirical = next(c for c in claims.by_notebook("04") if c.kind == "empirical" and c.worst is not None)
    row = next(r for r in report.rows(["04"]) if r["id"] == empirical.id)
    assert row["bound"] == empirical.bound_text() and row["worst"] == f"{empirical.worst:.4g}"
    assert row["worst build"] == empirical.worst_build and row["why"] == empirical.why
    shown = next(r for r in report.rows(["02"]) if r["kind"] == "shown")
    assert " to " in shown["seen range"] and shown["bound"] == ""
    with pytest.raises(ValueError, match="no ledger for notebook"):
        report.rows(["42"])
    with pytest.raises(SystemExit):
        main(["claims", "report", "--out", str(tmp_path / "claims.txt")])


# A shown claim is printed, not checked, so its sentence must not state its outcome as a fact: it is a question
# ("Is ... high, as in the lecture?"), or an indirect question ("How steep ...", "Where along the path ..."), or
# the name of what is measured ("Grad-SAM's ranking on ... (mean Spearman)") with no finite verb that states
# a result. Parentheses say which number is printed, so only the text outside them is read.
_QUESTION_WORDS = ("how", "what", "where", "which", "whether", "when", "who")
_CLAIM_VERBS = re.compile(
    r"\b(is|are|was|were|has|have|does|do|did|keeps?|moves?|flips?|beats?|agrees?|gives?|lies?|"
    r"scores?|leads?|tops?|sides?|raises?|follows?|weighs?|depends?|stays?|holds?|wins?|loses?|needs?)\b",
    re.IGNORECASE)


def _outside_parentheses(text: str) -> str:
    out, depth = [], 0
    for ch in text:
        depth += ch == "("
        if depth == 0:
            out.append(ch)
        depth -= ch == ")" and depth > 0
    return "".join(out)


def shown_sentence_asserts(sentence: str) -> bool:
    """Whether a shown claim's sentence states a result (see the rule above)."""
    text = _outside_parentheses(sentence).strip().rstrip(".").strip()
    if text.endswith("?") or text.lstrip(".").split(" ", 1)[0].lower() in _QUESTION_WORDS:
        return False
    return bool(_CLAIM_VERBS.search(text))


@pytest.mark.parametrize("sentence, asserts", [
    ("Is TCAV(striped vs dotted, zebra) high, as in the lecture?", False),
    ("How steep the output still is at x (its slope at x over its steepest slope).", False),
    ("Grad-SAM's ranking on the trained and the shuffled-label model (mean Spearman).", False),
    ("...and on average? (mean gain)", False),
    ("TCAV(dotted vs bubbly, zebra) is low, as in the lecture (zebra sides with bubbly).", True),
    ("Erasing the top-attended word moves the output more than erasing a random word (share of sentences).", True),
    ("The same count for the rank test.", False),
    ("A random order is the worst on both measures (how many pairs do no better than random).", True),
])
def test_the_shown_sentence_rule(sentence, asserts):
    assert shown_sentence_asserts(sentence) is asserts


def test_shown_claims_ask_or_describe_and_never_assert():
    """A shown claim is printed with its value and not checked, so its sentence asks a question or names what
    is measured; a sentence that states the outcome would be a fact the student reads but nobody checked."""
    bad = [(c.id, c.sentence) for c in claims.LEDGER.values()
           if c.kind == "shown" and shown_sentence_asserts(c.sentence)]
    assert not bad, bad


def test_a_number_written_as_text_is_refused():
    some_id = next(iter(claims.LEDGER))
    with pytest.raises(TypeError, match="must be one number"):
        claims.claim(some_id, "0.5")
