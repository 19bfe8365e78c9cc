"""The model cells' cost lines (issue 30): read from benchmarks/lecture_scale.py's record, never typed in."""

import ast
import json
import re
import sys
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
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import lecture_scale
    finally:
        sys.path.pop(0)
    printed = _rows_printed_by_notebooks()
    assert printed, "no notebook prints lecture_costs"
    assert printed <= {r.name for r in lecture_scale.ROWS if r.fn is not None}
    if costs.RECORD.is_file():  # the shipped record holds every printed row on the CPU
        assert printed <= set(json.loads(costs.RECORD.read_text())["cpu"]["rows"])


def test_lines_per_device_from_the_record(tmp_path, monkeypatch):
    record = tmp_path / "lecture_scale.json"
    record.write_text(json.dumps({"cpu": {"machine": "Test CPU, 2 cores", "load": 0.2, "date": "2026-11-27",
                                          "rows": {"gradsam": {"seconds": 0.61, "peak_gb": 0.8,
                                                               "what": "Grad-SAM"},
                                                   "lab": {"seconds": 150.0, "peak_gb": 1.3, "what": "the lab", "load": 0.2}}}}))
    monkeypatch.setattr(costs, "RECORD", record)
    text = costs.lecture_costs("gradsam", "lab")
    cpu, gpu = text.splitlines()
    assert cpu == "CPU (Test CPU, 2 cores, load 0.2, 2026-11-27): Grad-SAM: 0.6 s, 0.8 GB; the lab: 2.5 min, 1.3 GB"
    assert gpu.startswith("GPU: not measured yet")
    data = json.loads(record.read_text())
    data["cpu"]["rows"]["lab"]["load"] = 3.5  # rows measured at different loads: the range
    record.write_text(json.dumps(data))
    assert ", load 0.2-3.5, " in costs.lecture_costs("gradsam", "lab")
    with pytest.raises(ValueError, match="shap"):
        costs.lecture_costs("shap")
