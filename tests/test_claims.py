"""The claims ledger (issue 25): its entries are well formed, it names the same claims as the notebooks, and
``claim()`` asserts, prints and logs what the claims matrix collects."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from xaikit import claims
from xaikit.claims import Claim, ClaimFailed, claim

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
    assert {"01", "02", "03", "04", "05", "06"} <= set(found)
    assert set(found) == {nn for nn in found if claims.by_notebook(nn)}, "a notebook without a ledger file"
    for nn, ids in found.items():
        ledger = [c.id for c in claims.by_notebook(nn)]
        missing = sorted(set(ids) - set(ledger))
        unused = sorted(set(ledger) - set(ids))
        assert not missing, f"notebook {nn} checks claims the ledger lacks (add them to xaikit/claims/nb{nn}.py): {missing}"
        assert not unused, f"xaikit/claims/nb{nn}.py lists claims notebook {nn} never checks: {unused}"
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
    assert claim(entry.id, 0.75) == 0.75
    assert "01.1-unit-test-claim: 0.75" in capsys.readouterr().out
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
