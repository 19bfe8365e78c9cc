"""The instructor's page of the claims ledger: every claim of the lecture notebooks with how it is known.

``python -m xaikit claims report [--out FILE.html|FILE.md] [NN ...]`` writes one table per notebook: the id,
the kind, the sentence, the asserted bound, the worst value over the build matrix and the build that gave it
(empirical claims), the range over the builds (shown claims), the lecture's or paper's number, and ``why``.
Without ``--out`` the Markdown goes to standard output. The students' notebooks print none of this (see
:mod:`xaikit.course.claims`).
"""

from __future__ import annotations

import html
from pathlib import Path

from xaikit.course.claims import LEDGER, Claim, _matrix_builds

__all__ = ["COLUMNS", "rows", "markdown", "to_html", "write"]

COLUMNS = ("id", "notebook", "kind", "sentence", "bound", "worst", "worst build", "seen range", "lecture", "why")


def _notebooks(names: list[str] | None) -> list[str]:
    present = sorted({c.notebook for c in LEDGER.values()})
    if not names:
        return present
    if isinstance(names, str):  # one notebook: "04" (as the course commands take one name)
        names = [names]
    wanted = []
    for name in names:
        nn = str(name).strip()[:2]
        nn = nn.zfill(2) if nn.isdigit() else nn
        if nn not in present:
            raise ValueError(f"claims report: no ledger for notebook {name!r}; the ledger has notebooks "
                             f"{', '.join(present)} (give their two-digit numbers, e.g. 01 04)")
        if nn not in wanted:
            wanted.append(nn)
    return wanted


def _row(c: Claim) -> dict[str, str]:
    worst = "" if c.worst is None else f"{c.worst:.4g}"
    seen = "" if c.seen is None else f"{c.seen[0]:.3g} to {c.seen[1]:.3g}"
    if c.seen is not None and c.seen_builds:
        seen += f" ({c.seen_builds} builds)"
    return {"id": c.id, "notebook": c.notebook, "kind": c.kind, "sentence": c.sentence,
            "bound": "" if c.kind == "shown" else c.bound_text(), "worst": worst, "worst build": c.worst_build,
            "seen range": seen, "lecture": c.lecture, "why": c.why}


def rows(names: list[str] | None = None) -> list[dict[str, str]]:
    """One dict per claim (keys :data:`COLUMNS`), notebook by notebook in ledger order; ``names``: notebook
    numbers or stems (default: every notebook with a ledger)."""
    wanted = _notebooks(names)
    return [_row(c) for nn in wanted for c in LEDGER.values() if c.notebook == nn]


def _header(names: list[str] | None) -> str:
    builds = _matrix_builds()
    over = f"{len(builds)} builds ({', '.join(builds)})" if builds else "no build matrix recorded yet"
    return (f"Claims ledger of notebooks {', '.join(_notebooks(names))}: {len(rows(names))} claims; "
            f"worst values and ranges over {over}.")


def markdown(names: list[str] | None = None) -> str:
    """The ledger as Markdown, one table per notebook."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    out = ["# Claims ledger", "", _header(names), ""]
    table = rows(names)
    for nn in _notebooks(names):
        out += [f"## Notebook {nn}", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        out += ["| " + " | ".join(cell(r[k]) for k in COLUMNS) + " |" for r in table if r["notebook"] == nn]
        out.append("")
    return "\n".join(out)


def to_html(names: list[str] | None = None) -> str:
    """The ledger as one self-contained HTML page, one table per notebook."""
    parts = ["<!DOCTYPE html>", '<html><head><meta charset="utf-8"><title>Claims ledger</title>',
             "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;font-size:0.85em}"
             "td,th{border:1px solid #999;padding:3px 5px;vertical-align:top}th{background:#eee}"
             "td.id{white-space:nowrap;font-family:monospace}</style></head><body>",
             "<h1>Claims ledger</h1>", f"<p>{html.escape(_header(names))}</p>"]
    table = rows(names)
    for nn in _notebooks(names):
        parts.append(f"<h2>Notebook {nn}</h2><table><tr>"
                     + "".join(f"<th>{html.escape(k)}</th>" for k in COLUMNS) + "</tr>")
        for r in table:
            if r["notebook"] == nn:
                parts.append("<tr>" + "".join(f'<td class="{"id" if k == "id" else ""}">{html.escape(r[k])}</td>'
                                              for k in COLUMNS) + "</tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write(out: str | Path | None, names: list[str] | None = None) -> str:
    """Write the page to ``out`` (``.html``/``.htm``: HTML; ``.md``: Markdown) and return its path, or with
    ``out=None`` return the Markdown."""
    if out is None:
        return markdown(names)
    path = Path(out)
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm"):
        text = to_html(names)
    elif suffix in (".md", ".markdown"):
        text = markdown(names)
    else:
        got = suffix or "no suffix"
        raise ValueError(f"claims report --out {out}: the file must end in .html or .md (got {got}), "
                         "e.g. --out claims.html")
    path.parent.mkdir(parents=True, exist_ok=True)
    from xaikit._files import write_export

    return str(write_export(path, text, "claims report"))
