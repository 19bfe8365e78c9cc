"""The model cells' cost sentence: derived from benchmarks/lecture_scale.py's record, never typed in, and
plain (no machine, load, date or benchmark command); the full record stays for benchmarks/."""

import ast
import json
import re
from pathlib import Path

import pytest

from xaikit.models import costs

ROOT = Path(__file__).resolve().parents[1]


def _rows_printed_by_notebooks() -> set[str]:
    names = set()
    for path in sorted((ROOT / "notebooks").glob("0*.py")):
        for call in re.findall(r"lecture_costs\(([^)]*)\)", path.read_text()):
            names |= {ast.literal_eval(a.strip()) for a in call.split(",") if a.strip()}
    return names


def test_every_row_a_notebook_prints_is_a_benchmark_row():
    from xaikit.course import lecture_scale

    printed = _rows_printed_by_notebooks()
    assert printed, "no notebook prints lecture_costs"
    assert printed <= {r.name for r in lecture_scale.ROWS if r.fn is not None}
    if costs.RECORD.is_file():  # the shipped record holds every printed row on the CPU
        assert printed <= set(json.loads(costs.RECORD.read_text())["cpu"]["rows"])


def test_the_full_record_per_device_for_benchmarks(tmp_path, monkeypatch):
    record = tmp_path / "lecture_scale.json"
    record.write_text(json.dumps({"cpu": {"machine": "Test CPU, 2 cores", "load": 0.2, "date": "2026-11-27",
                                          "rows": {"gradsam": {"seconds": 0.61, "peak_gb": 0.8,
                                                               "what": "Grad-SAM"},
                                                   "lab": {"seconds": 150.0, "peak_gb": 1.3, "what": "the lab", "load": 0.2}}}}))
    monkeypatch.setattr(costs, "RECORD", record)
    text = costs.recorded_costs("gradsam", "lab")
    cpu, gpu = text.splitlines()
    assert cpu == "CPU (Test CPU, 2 cores, load 0.2, 2026-11-27): Grad-SAM: 0.6 s, 0.8 GB; the lab: 2.5 min, 1.3 GB"
    assert gpu.startswith("GPU: not measured yet")
    data = json.loads(record.read_text())
    data["cpu"]["rows"]["lab"]["load"] = 3.5  # rows measured at different loads: the range
    record.write_text(json.dumps(data))
    assert ", load 0.2-3.5, " in costs.recorded_costs("gradsam", "lab")
    with pytest.raises(ValueError, match="shap"):
        costs.recorded_costs("shap")


@pytest.mark.parametrize("seconds, said", [(0.16, "under a second"), (3.57, "a few seconds"),
                                           (6.96, "about 5 seconds"), (9.55, "about 10 seconds"),
                                           (32.8, "about 30 seconds"), (75, "about a minute"),
                                           (317.5, "about 5 minutes"), (7300, "about 2 hours")])
def test_durations_as_a_student_says_them(seconds, said):
    assert costs.roughly(seconds) == said


def test_the_students_sentence_from_the_record(tmp_path, monkeypatch):
    record = tmp_path / "lecture_scale.json"
    cpu = {"machine": "Some CPU(R), 4 cores", "load": 3.8, "date": "2026-11-27",
           "rows": {"gradsam": {"seconds": 3.57, "peak_gb": 0.8, "what": "Grad-SAM, bert-base, one sentence"},
                    "shap": {"seconds": 62.0, "peak_gb": 1.0, "what": "SHAP, bert-base, the five lecture sentences"}}}
    record.write_text(json.dumps({"cpu": cpu}))
    monkeypatch.setattr(costs, "RECORD", record)
    text = costs.lecture_costs("gradsam", "shap")
    assert text == ("With the lecture's bert-base, a 4-core CPU takes a few seconds for Grad-SAM (one sentence) "
                    "and about a minute for SHAP (the five lecture sentences).")
    record.write_text(json.dumps({"cpu": cpu, "cuda": {**cpu, "machine": "NVIDIA H200", "rows": {
        "gradsam": {"seconds": 0.05, "gpu_peak_gb": 0.9, "what": "Grad-SAM, bert-base, one sentence"}}}}))
    both = costs.lecture_costs("gradsam", "shap")
    assert both.endswith("; a GPU takes under a second for Grad-SAM (one sentence).") and both.count(".") == 1
    with pytest.raises(ValueError, match="lab"):
        costs.lecture_costs("lab")
    monkeypatch.setattr(costs, "RECORD", tmp_path / "none.json")
    assert costs.lecture_costs("gradsam") == ""  # nothing recorded: nothing said


def test_the_shipped_sentences_are_plain():
    """What the notebooks print: one sentence, no machine, load, date, benchmark or 'not measured'."""
    for path in sorted((ROOT / "notebooks").glob("0*.py")):
        for call in re.findall(r"lecture_costs\(([^)]*)\)", path.read_text()):
            rows = [ast.literal_eval(a.strip()) for a in call.split(",") if a.strip()]
            text = costs.lecture_costs(*rows)
            assert text.startswith("With the lecture's ") and "\n" not in text, (path.name, text)
            for word in ("load", "2026", "Xeon", "Intel", "benchmark", "not measured", "GB", " s,", "record"):
                assert word not in text, (path.name, word, text)
