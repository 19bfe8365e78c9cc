"""What the lecture's model sizes cost on this project's machines, as ``benchmarks/lecture_scale.py`` measured.

The notebooks run on small embedded models; each model cell says what swapping in the lecture's model
(bert-base for 02-04 and 06, vit-base-patch16-224 for 05) costs, by printing :func:`lecture_costs` for the cells
that notebook runs. The figures come from ``lecture_scale.json`` beside this module, written by
``python benchmarks/lecture_scale.py --record`` (random-weight models of the hub configurations, which cost
what trained ones cost), one entry per device: ``cpu`` and, where a GPU was lent, ``cuda``. Issue 30.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["lecture_costs"]

RECORD = Path(__file__).with_name("lecture_scale.json")


def lecture_costs(*rows: str) -> str:
    """One line per device: the seconds and peak memory of ``rows`` (names of ``benchmarks/lecture_scale.py``'s
    rows, e.g. ``"gradsam"``, ``"shap"``, ``"lab"``, ``"tcav_significance"``), and where they were measured.

    >>> print(lecture_costs("gradsam", "shap"))      # doctest: +SKIP
    CPU (Intel(R) Xeon(R) Processor, 2 cores, load 0.3, 2026-11-27): Grad-SAM, bert-base, one sentence 0.6 s ...
    GPU: not measured yet (run benchmarks/lecture_scale.py --record where a GPU is lent)
    """
    data = json.loads(RECORD.read_text()) if RECORD.is_file() else {}
    known = {name for entry in data.values() for name in entry.get("rows", {})}
    unknown = [r for r in rows if r not in known]
    if data and unknown:
        raise ValueError(f"rows {unknown} are not in {RECORD.name}; measured rows: {sorted(known)}")
    lines = []
    for device, label in (("cpu", "CPU"), ("cuda", "GPU")):
        entry = data.get(device)
        if not entry:
            lines.append(f"{label}: not measured yet (run benchmarks/lecture_scale.py --record "
                         f"{'where a GPU is lent' if device == 'cuda' else 'on a CPU'})")
            continue
        parts, loads = [], []
        for name in rows:
            r = entry["rows"].get(name)
            if r is None:
                parts.append(f"{name}: not measured on this device")
                continue
            memory = f"{r['gpu_peak_gb']:.1f} GB GPU" if "gpu_peak_gb" in r else f"{r['peak_gb']:.1f} GB"
            loads.append(r.get("load", entry.get("load")))
            parts.append(f"{r['what']}: {_seconds(r['seconds'])}, {memory}")
        known_loads = [x for x in loads if x is not None]
        low, high = (min(known_loads), max(known_loads)) if known_loads else (None, None)
        load = "" if low is None else f", load {low}" if low == high else f", load {low}-{high}"
        lines.append(f"{label} ({entry['machine']}{load}, {entry['date']}): " + "; ".join(parts))
    return "\n".join(lines)


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 120 else f"{s / 60:.1f} min"
