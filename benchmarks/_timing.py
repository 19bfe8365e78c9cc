"""Time how long a panel takes to recompute and redraw after a control change.

Importable by every benchmark script::

    from benchmarks._timing import time_panel, print_table
    rows = [time_panel(MyPanel(), [{"steps": 10}, {"steps": 20}], repeats=20)]
    print_table(rows)

Each measurement is one ``panel.set(**change)``: compute, draw and PNG rendering, exactly what a student
waits for after releasing a slider. The first ``warmup`` changes are not counted (fonts, caches, lazy
imports), and the changes cycle so consecutive values always differ.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

TARGET_MS = 100.0


@dataclass
class PanelTiming:
    name: str
    times_ms: list[float]
    compute_ms: list[float]
    cpu_ms: list[float]
    target_ms: float = TARGET_MS

    @property
    def median(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def p90(self) -> float:
        xs = sorted(self.times_ms)
        return xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]

    @property
    def compute_median(self) -> float:
        return statistics.median(self.compute_ms)

    @property
    def cpu_median(self) -> float:
        """Median CPU time of this process per change: close to the wall time on an idle machine, and much
        less sensitive to other processes than the wall time on a busy one."""
        return statistics.median(self.cpu_ms)

    @property
    def ratio(self) -> float:
        """median / target: below 1 meets the target."""
        return self.median / self.target_ms


def time_panel(panel, changes: list[dict], repeats: int = 20, warmup: int = 2, name: str | None = None,
               target_ms: float = TARGET_MS) -> PanelTiming:
    """Apply ``changes`` cyclically ``warmup + repeats`` times; time each ``panel.set``.

    Raises if the panel shows an error, so a broken panel cannot produce a fast-looking number.
    """
    if len(changes) < 2:
        raise ValueError("changes needs at least two different settings, so each set() really changes a control")
    times, computes, cpus = [], [], []
    for i in range(warmup + repeats):
        change = changes[i % len(changes)]
        t0, c0 = time.perf_counter(), time.process_time()
        panel.set(**change)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
        if panel.error is not None:
            raise RuntimeError(f"{type(panel).__name__} failed on {change}: {panel.error!r}")
        if i >= warmup:
            times.append(1000 * elapsed)
            computes.append(1000 * panel.timings.get("compute", float("nan")))
            cpus.append(1000 * cpu)
    return PanelTiming(name or type(panel).__name__, times, computes, cpus, target_ms)


def print_table(rows: list[PanelTiming]) -> str:
    """Print (and return) a table per panel: wall-clock median and p90, the compute part of the median, CPU
    time, the target and ratio = median / target (below 1 meets it)."""
    head = (f"{'panel':34s} {'n':>3s} {'median ms':>10s} {'p90 ms':>8s} {'compute ms':>11s} {'cpu ms':>7s} "
            f"{'target':>7s} {'ratio':>6s}")
    lines = [head, "-" * len(head)]
    for r in rows:
        flag = "ok" if r.ratio <= 1 else "SLOW"
        lines.append(f"{r.name:34s} {len(r.times_ms):3d} {r.median:10.1f} {r.p90:8.1f} {r.compute_median:11.1f} "
                     f"{r.cpu_median:7.1f} {r.target_ms:7.0f} {r.ratio:6.2f} {flag}")
    lines.append("ratio = median wall time / target. On a busy machine (load average above the core count) wall "
                 "times include waiting for a CPU; 'cpu ms' is this process's own CPU time per change.")
    text = "\n".join(lines)
    print(text)
    return text
