"""``python -m xaikit warm 04 05 [--model ID]``: before class, fill every cache the live path of the named
lecture notebooks reads, and say how long each live cell will then take.

1. The caches ``python -m xaikit prepare`` warms for the embedded models: the models themselves, notebook
   06's attention diagnostics (:func:`xaikit.lab.diagnostics.warm_notebook_cache`) and the rank test's random
   sets (:func:`xaikit.concepts.nullsets.warm_null_sets`).
2. Each named notebook runs once, top to bottom, in a fresh kernel, in the mode of this shell (student mode
   unless ``XAIKIT_FAST`` is set), with ``MODEL`` set to ``--model`` where given: whatever its live path keeps
   on disk is computed then, such as a hub model's TCAV activations and gradients
   (:mod:`xaikit.concepts.activations`).
3. It runs again in another fresh kernel, as the notebook will run in class, and the time of each code cell
   in that run is printed: what the cell takes when it reads the caches.

The notebooks run from their jupytext sources in memory: no file of the checkout is written.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nbformat import NotebookNode

__all__ = ["CellTime", "warm", "warm_notebook", "with_model"]

#: a notebook's model switch, the first code line that sets it (``MODEL = "embedded"``)
_MODEL_LINE = re.compile(r'^MODEL = ["\'][^"\']*["\'][^\n]*$', re.MULTILINE)


@dataclass(frozen=True)
class CellTime:
    """One code cell of a notebook: its index, first line, seconds in the warming run and from the caches."""

    notebook: str
    index: int
    first_line: str
    first_run_s: float
    from_cache_s: float


def with_model(nb: NotebookNode, model: str, name: str = "the notebook") -> NotebookNode:
    """``nb`` with its first ``MODEL = "..."`` line set to ``model`` (a hub id or a folder). A notebook without
    such a line is a ValueError naming ``--model``."""
    if not isinstance(model, str) or not model.strip():
        raise ValueError(f"--model must name a model: a hub id (e.g. google/vit-base-patch16-224) or a saved "
                         f"folder, got {model!r}")
    from xaikit.models.loaders import looks_like_path

    folder = Path(model.strip()).expanduser()
    if looks_like_path(model.strip()) and not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "looks like a folder, but no such folder exists"
        raise ValueError(f"--model {model.strip()!r} {what}; give a folder saved with save_pretrained, or a hub "
                         "id such as google/vit-base-patch16-224")
    for cell in nb.cells:
        if cell.cell_type == "code" and _MODEL_LINE.search(cell.source):
            cell.source = _MODEL_LINE.sub(f"MODEL = {model.strip()!r}", cell.source, count=1)
            return nb
    raise ValueError(f"--model: {name} has no `MODEL = ...` line to set; leave --model out for it, or give it "
                     f"to the notebooks that have one as NN=ID (e.g. --model 05=google/vit-base-patch16-224)")


def _run(nb, cwd: Path, timeout: int):
    """Execute ``nb`` in a fresh kernel (cells' timing recorded in their metadata); returns it and seconds."""
    import copy
    import os

    from nbclient import NotebookClient

    nb = copy.deepcopy(nb)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=True,
                            resources={"metadata": {"path": str(cwd)}})
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}  # the kernel draws as Jupyter does
    t0 = time.perf_counter()
    client.execute(env=env)
    return nb, time.perf_counter() - t0


def _cell_seconds(cell) -> float:
    from datetime import datetime

    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return float("nan")

    def parse(stamp: str) -> datetime:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))

    return (parse(end) - parse(start)).total_seconds()


def _errors(nb) -> list[str]:
    return [f"{o.get('ename')}: {o.get('evalue')}" for c in nb.cells if c.cell_type == "code"
            for o in c.get("outputs", []) if o.get("output_type") == "error"]


def warm_notebook(nb: NotebookNode, name: str, cwd: Path, timeout: int = 1800) -> list[CellTime]:
    """Run ``nb`` twice in fresh kernels (the first fills the caches, the second reads them) and return each
    code cell's times. A cell that fails in either run is a RuntimeError naming the notebook and the error."""
    times = []
    runs = []
    for _ in range(2):
        executed, _seconds = _run(nb, cwd, timeout)
        errors = _errors(executed)
        if errors:
            raise RuntimeError(f"{name} failed while warming its caches: {errors[0]}")
        runs.append(executed)
    first, second = runs
    for i, (a, b) in enumerate(zip(first.cells, second.cells, strict=True)):
        if b.cell_type != "code" or not b.source.strip():
            continue
        line = next((ln.strip() for ln in b.source.splitlines() if ln.strip() and not ln.startswith("#")),
                    b.source.strip().splitlines()[0])
        times.append(CellTime(name, i, line[:70], _cell_seconds(a), _cell_seconds(b)))
    return times


def _models_by_notebook(models: list[str], names: list[str]) -> dict[str, str]:
    """``--model`` values: ``ID`` for every named notebook, or ``NN=ID`` for one."""
    out: dict[str, str] = {}
    for value in models:
        head, sep, tail = value.partition("=")
        if sep and re.fullmatch(r"\d\d", head.strip()):
            if head.strip() not in names:
                raise ValueError(f"--model {value}: notebook {head.strip()} is not among those to warm ({' '.join(names)}); "
                                 f"name it too, e.g. `xaikit warm {' '.join(names)} {head.strip()}`")
            out[head.strip()] = tail
        else:
            out.update({n: value for n in names})
    return out


def warm(names: list[str], models: list[str] | None = None, timeout: int = 1800,
         say: Callable[..., object] = print) -> list[CellTime]:
    """Warm the caches of the embedded models and of the named notebooks' live path (see the module's text)
    and return each code cell's time from the caches, after printing them."""
    from xaikit.course import notebooks as nbtools

    if not names:
        raise ValueError("name the notebooks to warm, e.g. `python -m xaikit warm 04 05`")
    found = nbtools.sources(names)
    numbers = [p.stem[:2] for p in found]
    chosen = _models_by_notebook(list(models or []), numbers)
    prepared = {p.stem: nbtools.to_notebook(p) for p in found}
    for stem, nb in prepared.items():  # every --model checked before anything runs
        if stem[:2] in chosen:
            with_model(nb, chosen[stem[:2]], stem)
    t0 = time.perf_counter()
    say("xaikit warm: the embedded models, the attention diagnostics and the rank test's random sets", flush=True)
    from xaikit.concepts.nullsets import warm_null_sets
    from xaikit.lab.diagnostics import warm_notebook_cache

    warm_notebook_cache(progress=True)
    warm_null_sets(progress=False)
    say(f"xaikit warm: ready in {time.perf_counter() - t0:.1f} s", flush=True)
    every = []
    for src in found:
        t1 = time.perf_counter()
        model = chosen.get(src.stem[:2])
        say(f"xaikit warm: running {src.stem}{f' with MODEL = {model!r}' if model else ''} twice (fills its caches, "
            "then reads them as in class) ...", flush=True)
        cells = warm_notebook(prepared[src.stem], src.stem, src.parent, timeout)
        every.extend(cells)
        say(f"xaikit warm: {src.stem} warmed in {time.perf_counter() - t1:.1f} s", flush=True)
    say(table(every), flush=True)
    return every


def table(cells: list[CellTime], slow: float = 1.0) -> str:
    """What each live cell takes from the caches (and took in the warming run), the notebook's total, and the
    cells that still take more than ``slow`` seconds."""
    lines = ["", "each live cell from the caches (the warming run in brackets):"]
    for name in dict.fromkeys(c.notebook for c in cells):
        mine = [c for c in cells if c.notebook == name]
        lines.append(f"  {name}: {sum(c.from_cache_s for c in mine):.1f} s in all "
                     f"({sum(c.first_run_s for c in mine):.1f} s)")
        for c in mine:
            flag = "  <- slow" if c.from_cache_s > slow else ""
            lines.append(f"    cell {c.index:3d} {c.from_cache_s:7.2f} s ({c.first_run_s:7.2f} s)  {c.first_line}{flag}")
    return "\n".join(lines)
