"""Single-source notebooks: each ``notebooks/NN_name.py`` (jupytext ``py:percent``) is the source, and
``NN_name.ipynb`` is built from it without outputs. Also runs notebooks headless (nbclient) for the tests
and the ``--headless`` start command.
"""

from __future__ import annotations

import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def sources(names: list[str] | None = None) -> list[Path]:
    """The jupytext sources, optionally filtered by stem or number prefix ("01", "02_integrated...")."""
    found = sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.py"))
    if names:
        found = [p for p in found if any(p.stem == n or p.stem.startswith(n) for n in names)]
        if not found:
            raise SystemExit(f"no notebook matches {names}; have {[p.stem for p in sorted(NOTEBOOKS.glob('*.py'))]}")
    return found


def to_notebook(source: Path):
    import jupytext

    nb = jupytext.read(source, fmt="py:percent")
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata.setdefault("jupytext", {})["formats"] = "ipynb,py:percent"
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i:03d}"  # nbformat would draw random ids, so every build would differ
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def _dump(nb) -> str:
    import nbformat

    return nbformat.writes(nb) + "\n"


def build(names: list[str] | None = None) -> list[Path]:
    out = []
    for src in sources(names):
        target = src.with_suffix(".ipynb")
        text = _dump(to_notebook(src))
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
        out.append(target)
    return out


def check(names: list[str] | None = None) -> list[str]:
    """Problems: a notebook missing, out of sync with its source, or committed with outputs."""
    problems = []
    for src in sources(names):
        target = src.with_suffix(".ipynb")
        if not target.exists():
            problems.append(f"{target.name} is missing: run `python -m xaikit notebooks build`")
        elif target.read_text() != _dump(to_notebook(src)):
            problems.append(f"{target.name} differs from {src.name}: run `python -m xaikit notebooks build`")
    return problems


def execute(path: Path, timeout: int = 600, cwd: Path | None = None):
    """Run one notebook top to bottom in a fresh kernel; returns ``(notebook, seconds)``."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(cwd or path.parent)}})
    t0 = time.perf_counter()
    client.execute()
    return nb, time.perf_counter() - t0


def run(names: list[str] | None = None, html_dir: str | None = None, timeout: int = 600) -> None:
    for target in build(names):
        nb, seconds = execute(target, timeout=timeout)
        print(f"{target.name}: ran in {seconds:.1f} s")
        if html_dir:
            from nbconvert import HTMLExporter

            out = Path(html_dir)
            out.mkdir(parents=True, exist_ok=True)
            body, _ = HTMLExporter().from_notebook_node(nb)
            (out / f"{target.stem}.html").write_text(body)
