"""What the lecture's model sizes cost, as ``scripts/lecture_scale.py`` measured them.

The notebooks run on small embedded models; each model cell tells the student, in one plain sentence, what
the lecture's own model (bert-base for 02-04 and 06, vit-base-patch16-224 for 05 and 07) would cost for the cells that
notebook runs: :func:`lecture_costs`, e.g. "With the lecture's bert-base, a 2-core CPU takes a few seconds
for Grad-SAM (one sentence) and about 10 seconds for SHAP (the five lecture sentences)." The figures come from
``lecture_scale.json`` beside this module, written by ``python scripts/lecture_scale.py --record``
(random-weight models of the hub configurations, which cost what trained ones cost), one entry per device:
``cpu`` and, where a GPU was lent, ``cuda``. The full record (seconds, peak memory, machine, load, date) is
:func:`recorded_costs`, for ``benchmarks/``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

__all__ = ["lecture_costs", "recorded_costs", "roughly"]

RECORD = Path(__file__).with_name("lecture_scale.json")
_DEVICES = (("cpu", "CPU"), ("cuda", "GPU"))


def _record(rows: tuple[str, ...]) -> dict:
    data = json.loads(RECORD.read_text()) if RECORD.is_file() else {}
    known = {name for entry in data.values() for name in entry.get("rows", {})}
    unknown = [r for r in rows if r not in known]
    if data and unknown:
        raise ValueError(f"rows {unknown} are not in {RECORD.name}; measured rows: {sorted(known)}")
    return data


def roughly(seconds: float) -> str:
    """A duration as a student would say it: "under a second", "a few seconds", "about 10 seconds",
    "about a minute", "about 5 minutes", "about 2 hours"."""
    s = float(seconds)
    if s < 1:
        return "under a second"
    if s < 5:
        return "a few seconds"
    if s < 20:
        return f"about {max(5, round(s / 5) * 5)} seconds"
    if s < 50:
        return f"about {round(s / 10) * 10} seconds"
    if s < 90:
        return "about a minute"
    if s < 3000:
        return f"about {round(s / 60)} minutes"
    hours = round(s / 3600)
    return f"about {hours} hour{'s' if hours != 1 else ''}"


_MODEL = re.compile(r"^(bert|vit|roberta|distilbert)[\w.-]*$|-base$", re.I)


def _phrase(what: str, seconds: float) -> tuple[str | None, str]:
    """``"Grad-SAM, bert-base, one sentence"`` -> ``("bert-base", "a few seconds for Grad-SAM (one sentence)")``."""
    parts = [p.strip() for p in what.split(",")]
    model = next((p for p in parts[1:] if _MODEL.search(p)), None)
    rest = [p for p in parts[1:] if p != model]
    scope = f" ({', '.join(rest)})" if rest else ""
    return model, f"{roughly(seconds)} for {parts[0]}{scope}"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def lecture_costs(*rows: str) -> str:
    """One plain sentence: what ``rows`` (names of ``scripts/lecture_scale.py``'s rows, e.g. ``"gradsam"``,
    ``"shap"``, ``"lab"``, ``"tcav_significance"``) take with the lecture's model, rounded as a student would
    say it, on the CPU that was measured and, where one was measured, on a GPU. Empty when nothing is
    recorded.

    >>> print(lecture_costs("gradsam", "shap"))      # doctest: +SKIP
    With the lecture's bert-base, a 2-core CPU takes a few seconds for Grad-SAM (one sentence) and about 10
    seconds for SHAP (the five lecture sentences).
    """
    data = _record(rows)
    clauses, models = [], []
    for device, _label in _DEVICES:
        entry = data.get(device)
        if not entry:
            continue
        phrases = []
        for name in rows:
            r = entry["rows"].get(name)
            if r is None:
                continue
            model, phrase = _phrase(r["what"], r["seconds"])
            if model and model not in models:
                models.append(model)
            phrases.append(phrase)
        if not phrases:
            continue
        cores = re.search(r"(\d+) cores", entry.get("machine", "")) if device == "cpu" else None
        where = f"a {cores.group(1)}-core CPU" if cores else ("a CPU" if device == "cpu" else "a GPU")
        clauses.append(f"{where} takes {_and(phrases)}")
    if not clauses:
        return ""
    whose = f"the lecture's {_and(models)}" if models else "the lecture's model"
    return f"With {whose}, " + "; ".join(clauses) + "."


def recorded_costs(*rows: str) -> str:
    """The full record, one line per device: the seconds and peak memory of ``rows``, and the machine, its
    load and the date they were measured on (for ``benchmarks/``; the notebooks print :func:`lecture_costs`).

    One line per device: ``CPU (<processor>, <cores>, load <load>, <date>): Grad-SAM, bert-base, one sentence
    <seconds> ...``, or ``GPU: not measured yet (run scripts/lecture_scale.py --record where a GPU is lent)``.
    """
    data = _record(rows)
    lines = []
    for device, label in _DEVICES:
        entry = data.get(device)
        if not entry:
            lines.append(f"{label}: not measured yet (run scripts/lecture_scale.py --record "
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
