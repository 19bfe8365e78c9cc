"""How long each lecture notebook takes as a student runs it (fast mode off), against its budget.

Budgets on 2 CPU cores, the first run after ``python -m xaikit prepare`` included (``scripts/claims_matrix.py``'s ``BUDGETS``):
60 s for each lecture, 90 s for the lab notebook 06. Each notebook runs in a fresh kernel, one after the other, the way a student
opens them in order.

    python benchmarks/notebook_times.py               # on the current cache (prepared already)
    python benchmarks/notebook_times.py --fresh       # prepare into an empty cache first (timed too), then run
    python benchmarks/notebook_times.py 04 05 --runs 2

The second run of a notebook finds its own caches warm (the digits CNN, Wiegreffe & Pinter's attention,
the TCAV activations); ``--runs 2`` prints both. A benchmark, not a test: a shared machine's timings vary.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from claims_matrix import BUDGETS, ROOT


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", default=sorted(BUDGETS))
    parser.add_argument("--fresh", action="store_true", help="prepare into a new empty cache first")
    parser.add_argument("--runs", type=int, default=1, help="runs of each notebook (the first is the cold one)")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "XAIKIT_FAST"}
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MPLBACKEND": "Agg", "TQDM_MININTERVAL": "30"})
    held = None
    if args.fresh:
        held = tempfile.TemporaryDirectory(prefix="xaikit-times-")
        env["XAIKIT_CACHE"] = held.name
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "xaikit", "prepare"], env=env, cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        print(f"prepare into an empty cache: {time.perf_counter() - t0:.0f} s")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{os.cpu_count()} cores, load average {load:.1f} before the runs; fast mode off\n")
    print("| notebook | budget (s) | " + " | ".join(f"run {i + 1} (s)" for i in range(args.runs))
          + " | run 1 / budget |")
    print("|---|---|" + "---|" * args.runs + "---|")
    over = 0
    for nn in args.notebooks:
        times = []
        for _ in range(args.runs):
            out = subprocess.run([sys.executable, str(ROOT / "scripts" / "claims_matrix.py"), "--run-one", nn],
                                 env=env, cwd=ROOT, capture_output=True, text=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            if result.get("error"):
                print(f"| {nn} | failed: {result['error'].strip().splitlines()[-1][:200]} |")
                return 1
            times.append(result["seconds"])
        budget = BUDGETS.get(nn, 60.0)
        over += times[0] > budget
        print(f"| {nn} | {budget:.0f} | " + " | ".join(f"{t:.1f}" for t in times) + f" | {times[0] / budget:.2f} |")
    if held is not None:
        held.cleanup()
    print(f"\n{over} notebook(s) over budget" if over else "\nevery notebook within its budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
