"""Every notebook claim, measured over every build a student can get.

A *build* is one cache of embedded models made by ``python -m xaikit prepare --seed N`` under one set of CPU
kernels. By default the matrix has seven: training seeds 0-4 with this machine's own kernels, and seeds 0
and 1 again under the AVX2 variables (``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
MKL_ENABLE_INSTRUCTIONS=AVX2``), where the build itself differs (the sentiment model trains in bfloat16 on
a CPU with AMX, in float32 under AVX2). For each build it prepares the cache (reused when it is there
already: ``--root`` keeps the caches), then runs every notebook (lectures and labs) in student mode (``XAIKIT_FAST`` off)
in fresh kernels with ``XAIKIT_CLAIMS_LOG`` and ``XAIKIT_CLAIMS_COLLECT`` set, so that a failing claim is
recorded and the notebook goes on to measure the rest.

It prints the matrix claim x build -> value and margin (how far inside its bound; negative means the claim
failed), the worst value of every empirical claim, the notebook times against their student-mode budgets,
and exits non-zero if any asserted claim failed on any build, a notebook raised, or an asserted claim was
not reached on some build.

    python scripts/claims_matrix.py                         # the seven builds (about 1.5 h on 2 cores)
    python scripts/claims_matrix.py --seeds 0 --avx2-seeds  # one build
    python scripts/claims_matrix.py --notebooks 04 05       # some notebooks only (merged into the
                                                               # builds' last records: the others stay)
    python scripts/claims_matrix.py --report                # print the table of the last run again

Results go to ``<root>/matrix.json`` (default root: ``artifacts/claims-matrix``, git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
#: student-mode budgets on 2 cores, first run after prepare included
BUDGETS = {"01": 60.0, "02": 60.0, "03": 60.0, "04": 60.0, "05": 60.0, "06": 90.0, "07": 60.0}


def build_env(seed: int, kernels: str, cache: Path, log: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in AVX2 and k not in ("XAIKIT_FAST", "XAIKIT_SEED")}
    if kernels == "avx2":
        env.update(AVX2)
    env.update({
        "XAIKIT_CACHE": str(cache), "XAIKIT_CLAIMS_LOG": str(log), "XAIKIT_CLAIMS_COLLECT": "1",
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0",
        "TQDM_MININTERVAL": "30",
    })
    return env


def run_build(seed: int, kernels: str, root: Path, notebooks: list[str], prepare_only: bool = False,
              prepare: bool = True) -> dict:
    """Prepare one build's cache and run the notebooks on it; returns its record. ``prepare=False`` uses the
    cache as it is (a notebook trains what it lacks, with the build's seed and kernels)."""
    name = f"seed{seed}-{kernels}"
    cache, log = root / "caches" / name, root / f"{name}.claims.jsonl"
    cache.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)
    env = build_env(seed, kernels, cache, log)
    record = {"build": name, "seed": seed, "kernels": kernels, "notebooks": {}, "claims": {}}
    print(f"== {name}: {'prepare' if prepare else 'no prepare,'} --seed {seed} into {cache}", flush=True)
    t0 = time.perf_counter()
    if not prepare:
        env["XAIKIT_SEED"] = str(seed)
    prep = subprocess.run([sys.executable, "-m", "xaikit", "prepare", "--seed", str(seed)] if prepare else
                          [sys.executable, "-c", "pass"], env=env, cwd=ROOT, capture_output=True, text=True)
    record["prepare_seconds"] = round(time.perf_counter() - t0, 1)
    if prep.returncode != 0:
        record["prepare_error"] = prep.stderr[-3000:]
        print(f"   prepare FAILED:\n{prep.stderr[-3000:]}", flush=True)
        return record
    metrics = cache / "training-seed.json"
    record["recorded_seed"] = json.loads(metrics.read_text())["seed"] if metrics.is_file() else None
    for sent in cache.glob("sentiment-*/metrics.json"):
        m = json.loads(sent.read_text())
        record["sentiment"] = {"accuracy": m["test_accuracy"], "precision": m["precision"], "seed": m.get("seed")}
    print(f"   prepared in {record['prepare_seconds']} s {record.get('sentiment', '')}", flush=True)
    if prepare_only:
        return record
    for nn in notebooks:
        worker = subprocess.run([sys.executable, __file__, "--run-one", nn], env=env, cwd=ROOT,
                                capture_output=True, text=True)
        try:
            result = json.loads(worker.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            result = {"error": (worker.stderr or worker.stdout)[-3000:], "seconds": None}
        record["notebooks"][nn] = result
        status = "ok" if not result.get("error") else "ERROR " + result["error"].strip().splitlines()[-1][:200]
        print(f"   {nn}: {result.get('seconds')} s  {status}", flush=True)
    if log.is_file():
        for line in log.read_text().splitlines():
            entry = json.loads(line)
            record["claims"].setdefault(entry["id"], []).append(entry["value"])
    return record


def run_one(nn: str) -> None:
    """In a build's environment: execute notebook ``nn`` in a fresh kernel; print one JSON line."""
    from xaikit.course import notebooks as nbtools

    path = next(nbtools.NOTEBOOKS.glob(f"{nn}_*.ipynb"))
    t0 = time.perf_counter()
    try:
        nb, seconds = nbtools.execute(path, timeout=1800)
        errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                  if o.get("output_type") == "error"]
        error = f"{errors[0]['ename']}: {errors[0]['evalue']}" if errors else None
        slowest = sorted(((_cell_seconds(c), i) for i, c in enumerate(nb.cells) if c.cell_type == "code"),
                         reverse=True)[:5]
    except Exception as err:  # noqa: BLE001 - nbclient raises CellExecutionError and others; all are reported
        seconds, error, slowest = time.perf_counter() - t0, f"{type(err).__name__}: {str(err)[-2000:]}", []
    print(json.dumps({"seconds": round(seconds, 1), "error": error,
                      "slowest_cells": [[i, round(t, 1)] for t, i in slowest]}))


def _cell_seconds(cell) -> float:
    """Wall time of one executed cell from nbclient's timing metadata (0 when it has none)."""
    from datetime import datetime

    timing = cell.get("metadata", {}).get("execution", {})
    try:
        start = datetime.fromisoformat(timing["iopub.execute_input"].replace("Z", "+00:00"))
        end = datetime.fromisoformat(timing["shell.execute_reply"].replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return 0.0
    return (end - start).total_seconds()


def report(records: list[dict], record: bool = False) -> int:
    """Print the matrix and return the exit status (1 if any asserted claim failed or was not reached).
    ``record``: write each empirical claim's worst value and build to ``xaikit/course/claims/measured.json``."""
    from xaikit.course.claims import LEDGER, MEASURED_FILE

    builds = [r["build"] for r in records]
    notebooks = sorted({nn for r in records for nn in r["notebooks"]})
    width = max(len(b) for b in builds) if builds else 8
    failures = []
    print("\n## Claims: value (margin inside the bound; negative = fails) per build\n")
    print("| claim | kind | bound | " + " | ".join(builds) + " | worst |")
    print("|---|---|---|" + "---|" * len(builds) + "---|")
    worst_of = {}
    for cid, entry in LEDGER.items():
        if entry.notebook not in notebooks:
            continue
        cells, worst = [], None
        for r in records:
            values = r["claims"].get(cid)
            if not values:
                cells.append("not reached")
                if entry.kind != "shown":
                    failures.append(f"{cid}: not reached on {r['build']}")
                continue
            # a claim is checked once per run; if a cell ran twice, the worst value counts
            v = min(values, key=lambda x: entry.margin(x) if entry.margin(x) is not None else 0.0)
            m = entry.margin(v)
            cells.append(f"{v:.4g}" + (f" ({m:+.3g})" if m is not None else ""))
            if m is not None and (worst is None or m < worst[1]):
                worst = (v, m, r["build"])
            if entry.kind != "shown" and not entry.holds(v):
                failures.append(f"{cid}: {v:.4g} on {r['build']} (bound {entry.bound_text()})")
        shown_range = ""
        if entry.kind == "shown":
            vals = [x for r in records for x in r["claims"].get(cid, [])]
            shown_range = f"{min(vals):.3g}..{max(vals):.3g}" if vals else ""
        worst_of[cid] = worst
        last = f"{worst[0]:.4g} ({worst[2]})" if worst else shown_range
        print(f"| {cid} | {entry.kind} | {entry.bound_text()} | " + " | ".join(cells) + f" | {last} |")
    if record:
        measured = {cid: {"worst": w[0], "worst_build": w[2], "margin": round(w[1], 6)}
                    for cid, w in worst_of.items() if w is not None and LEDGER[cid].kind == "empirical"}
        for cid, entry in LEDGER.items():  # a shown claim's range, printed beside a build's own value
            vals = [x for r in records for x in r["claims"].get(cid, [])]
            if entry.kind == "shown" and entry.notebook in notebooks and vals:
                measured[cid] = {"range": [round(min(vals), 6), round(max(vals), 6)],
                                 "builds": sum(1 for r in records if r["claims"].get(cid))}
        MEASURED_FILE.write_text(json.dumps({
            "builds": builds, "date": time.strftime("%Y-%m-%d"),
            "note": "worst value of each empirical claim, and the range of each shown claim, over these builds "
                    "(scripts/claims_matrix.py --record)",
            "claims": measured}, indent=1, sort_keys=True) + "\n")
        print(f"\nwrote {MEASURED_FILE} ({len(measured)} claims over {len(builds)} builds)")
    print("\n## Notebook times in student mode (s; budget on 2 cores, first run after prepare)\n")
    print(f"| {'build':<{width}} | prepare | " + " | ".join(f"{nn} (<= {BUDGETS.get(nn, 0):.0f})" for nn in notebooks)
          + " |")
    for r in records:
        cells = []
        for nn in notebooks:
            res = r["notebooks"].get(nn, {})
            if res.get("error"):
                failures.append(f"notebook {nn} raised on {r['build']}: {res['error'].strip().splitlines()[-1][:300]}")
            sec = res.get("seconds")
            cells.append("-" if sec is None else f"{sec:.0f}" + (" ERR" if res.get("error") else ""))
        if r.get("prepare_error"):
            failures.append(f"prepare failed on {r['build']}")
        print(f"| {r['build']:<{width}} | {r.get('prepare_seconds', '-')} | " + " | ".join(cells) + " |")
    print("\n## Builds\n")
    for r in records:
        print(f"- {r['build']}: recorded seed {r.get('recorded_seed')}, sentiment {r.get('sentiment')}")
    if failures:
        print(f"\n{len(failures)} problem(s):")
        for f in failures:
            print(f"  - {f}")
        return 1
    print("\nevery asserted claim held on every build")
    return 0


def _merged(old: dict | None, new: dict, notebooks: list[str]) -> dict:
    """``new`` (a run of some notebooks) on top of the build's previous record: the notebooks run now replace
    their own times and claims, the others keep theirs, so a rerun of one notebook leaves a whole build."""
    if old is None:
        return new
    merged = {**old, **{k: v for k, v in new.items() if k not in ("notebooks", "claims")}}
    merged["notebooks"] = {**old.get("notebooks", {}), **new["notebooks"]}
    merged["claims"] = {cid: v for cid, v in old.get("claims", {}).items() if cid[:2] not in notebooks}
    merged["claims"].update(new["claims"])
    return merged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2, 3, 4],
                        help="training seeds built with this machine's own kernels")
    parser.add_argument("--avx2-seeds", type=int, nargs="*", default=[0, 1],
                        help="training seeds built and run again under the AVX2 variables")
    parser.add_argument("--notebooks", nargs="*", default=sorted(BUDGETS))
    parser.add_argument("--root", type=Path, default=ROOT / "artifacts" / "claims-matrix",
                        help="where the builds' caches, logs and matrix.json go (kept between runs)")
    parser.add_argument("--prepare-only", action="store_true", help="build the caches, run no notebook")
    parser.add_argument("--no-prepare", action="store_true",
                        help="use each build's cache under --root as it is (e.g. models trained elsewhere for these "
                             "notebooks); what a notebook lacks it trains with the build's seed and kernels")
    parser.add_argument("--report", action="store_true", help="print the table of <root>/matrix.json again")
    parser.add_argument("--also", type=Path, nargs="*", default=[],
                        help="with --report: more roots whose matrix.json joins the table (runs split across roots)")
    parser.add_argument("--record", action="store_true",
                        help="write each empirical claim's worst value to xaikit/course/claims/measured.json")
    parser.add_argument("--run-one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_one:
        run_one(args.run_one)
        return 0
    args.root = args.root.resolve()  # the kernels run in notebooks/: every path handed to them is absolute
    out = args.root / "matrix.json"
    if args.report:
        records = json.loads(out.read_text())
        for extra in args.also:
            records += json.loads((extra.resolve() / "matrix.json").read_text())
        order = {f"seed{s}-{k}": i for i, (s, k) in enumerate(
            [(s, "native") for s in range(100)] + [(s, "avx2") for s in range(100)])}
        records.sort(key=lambda r: order.get(r["build"], 10**6))
        return report(records, record=args.record)
    args.root.mkdir(parents=True, exist_ok=True)
    builds = [(s, "native") for s in args.seeds] + [(s, "avx2") for s in args.avx2_seeds]
    previous = {r["build"]: r for r in json.loads(out.read_text())} if out.is_file() else {}
    records = []
    for seed, kernels in builds:
        record = run_build(seed, kernels, args.root, args.notebooks, args.prepare_only, not args.no_prepare)
        if args.prepare_only:
            records.append(record)
            continue
        record = _merged(previous.get(record["build"]), record, args.notebooks)
        records.append(record)
        previous[record["build"]] = record
        out.write_text(json.dumps(list(previous.values()), indent=1))  # after every build: a partial run survives
    return 0 if args.prepare_only else report(records, record=args.record)


if __name__ == "__main__":
    sys.exit(main())
