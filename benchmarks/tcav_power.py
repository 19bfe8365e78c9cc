r"""How much power has the rank test of TCAV's significance (Kim et al. 2018; notebook 05 section 5, notebook 07
section 1), and which protocol would give it more, calibrated, at what cost?

The rank test (:func:`xaikit.concepts.significance.tcav_significance` with ``test="rank"``) ranks a concept's mean
TCAV score over R runs among the mean scores of K random image sets posing as concepts, each put through the same
R runs (:func:`~xaikit.concepts.significance.rank_p`), and multiplies p by the three concepts tested (Bonferroni).
This script trains nothing: it reads the main and control ViT pairs that ``benchmarks/tcav_robustness.py --out
DIR`` trained (one folder per training seed), and for each pair measures, per protocol:

* power: striped's corrected p on the main model, where stripes are the zebra's evidence;
* false alarm on the control model, where they are not: striped's corrected p there;
* false alarms among random sets: each of K + 1 random sets posing as the concept, ranked among the other K
  (a calibrated test calls at most 0.05 / 3 = 1.7% of them significant).

Protocols, all at notebook 07's layer and pooling and with the lecture's image draws per seed (concepts
``100 + seed``, zebras ``200 + seed``, counterparts ``(300 + seed) * 1000 + i``, as
:func:`xaikit.course.claims.tcav.lecture_claims`):

* the current one: 50 images a set, K = 100, R = 10, two-sided about the median (``rank_p``);
* more random concepts: K = 200, 300 (the smallest corrected p drops from 3/101 to 3/301);
* larger sets: 100 images in every concept, counterpart and random set, K = 100;
* one-sided: p = (1 + #{random concepts scoring at least as high}) / (K + 1), the question "is stripes' score
  *higher* than a random set's?" (Kim et al. test two-sided, since a concept may raise or lower a class; the
  lecture's question about stripes and the zebra is directional, known before any score is seen).

The random concepts are one pool of independent random sets (:func:`xaikit.models.imageworld.random_images`,
seeds ``5_000_000 + k``, drawn once into ``--out``), shared by every model: protocol K uses the first K, so the
protocols differ in K alone, not in their draw. Each model's K x R table comes from one call of
``tcav_significance`` per set size, split in two calls (random sets 0-100 and 101-300) so that the first call's
time is the current protocol's cost and the sum the cost of K = 300; every row of the table depends on its own
set only (:func:`xaikit.concepts.nullscores._null_score_table`), which ``tests/test_tcav_power.py`` checks.

Rule, fixed before any build was evaluated: a protocol replaces the current default only if (1) striped is
significant (corrected p < 0.05) on the main model of every measured build, at least training seeds 0-4 with
native kernels; (2) it is calibrated: striped is not significant on any control model, and the share of random
sets called significant, pooled over every model, is at most 0.05 / 3 plus two binomial standard errors; and (3)
it costs at most twice the current protocol's time. Among protocols that pass, the cheapest; a two-sided one
before a one-sided one at equal cost. If none passes, the default stays.

    python benchmarks/tcav_robustness.py --out artifacts/power --seeds 0 1 2 3 4   # train the pairs first
    python benchmarks/tcav_power.py --out artifacts/power                          # table and power curve
    python benchmarks/tcav_power.py --out artifacts/power --draw notebook --sizes 50  # notebook 07's own sets

The AVX2 builds (models trained by ``tcav_robustness.py --kernels avx2`` into folders tagged ``cpu-avx2``) are
measured with the same variables set, so that their scores come from the kernels a student's older CPU uses, and
the table labels them ``s0/cpu-avx2``:

    python benchmarks/tcav_robustness.py --out DIR --seeds 0 1 --kernels avx2 --train-only
    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 \
        python benchmarks/tcav_power.py --out DIR --seeds 0 1 --builds cpu-avx2 --draw notebook --sizes 50 --max-k 100
    python benchmarks/tcav_power.py --out DIR --builds cpu cpu-avx2 --draw notebook --sizes 50 --max-k 100  # the table

``--max-k 100`` measures the first call only (the protocols with K = 100, a third of the time).

``--draw notebook`` puts every model through notebook 07's own image sets instead (concepts, zebras and
counterparts with seed 0, its random concepts ``900_000 + k`` continued past its 100): the same images for every
model, as the notebook shows them, so that the table separates what the training seed does from what one draw
of images does. Results are kept per model in ``--out`` and reused; ``--jobs`` models are measured at once.

Measured with recipe v8 (``--draw notebook --sizes 50 --max-k 100``, R = 10; seeds 0-4 with this machine's
AVX-512 kernels, seeds 0-1 with AVX2), striped's corrected p on main / control:

    protocol                s0         s1         s2         s3         s4         s0/avx2    s1/avx2    power alarms
    n=50, K=100 two-sided   0.030/1.00 0.059/1.00 0.089/0.30 0.030/1.00 0.059/1.00 0.030/1.00 0.059/1.00  43%  0.9%
    n=50, K=100 one-sided   0.030/1.00 0.030/0.74 0.030/0.18 0.030/1.00 0.030/1.00 0.030/1.00 0.030/0.83 100%  1.0%

The one-sided test passes the rule on all seven builds; notebook 05 runs it with each concept's direction taken
from its intervention (``alternative=``), and lab 07 draws its power curve against K.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ALPHA = 0.05
N_CONCEPTS = 3                 # striped, dotted, bubbly: Bonferroni x3 as in the claims
POOL_SEED = 5_000_000          # random concept k is random_images(n, seed=POOL_SEED + k)
FIRST_CALL = 101               # random sets 0..100: K = 100 plus one to pose as the concept
#: set size -> the number of random sets drawn at that size (K at most one less)
POOL = {50: 301, 100: 101}
#: (label, set size, K, sided): every protocol measured; the first is the current one
PROTOCOLS = (
    ("current: n=50, K=100", 50, 100, "two"),
    ("n=50, K=200", 50, 200, "two"),
    ("n=50, K=300", 50, 300, "two"),
    ("n=100, K=100", 100, 100, "two"),
    ("one-sided n=50, K=100", 50, 100, "one"),
    ("one-sided n=50, K=300", 50, 300, "one"),
    ("one-sided n=100, K=100", 100, 100, "one"),
)


def rank_p_greater(value: float, null) -> float:
    """One-sided Monte Carlo p-value: ``(1 + #{k: null_k >= value}) / (K + 1)`` (Davison & Hinkley 1997,
    section 4.2), :func:`xaikit.concepts.significance.rank_p` with ``alternative="greater"``; exact when ``value``
    and the K null values are exchangeable."""
    from xaikit.concepts.significance import rank_p

    return rank_p(value, null, alternative="greater")


def _p(value, null, sided: str) -> float:
    from xaikit.concepts.significance import rank_p

    p = rank_p(value, null) if sided == "two" else rank_p_greater(value, null)
    return min(1.0, N_CONCEPTS * p)


def pool_sets(out: Path, size: int, draw: str = "lecture") -> list:
    """The first ``POOL[size]`` random sets of ``size`` images, drawn once into ``out`` and read back.

    ``draw="lecture"``: seeds ``POOL_SEED + k``; sets of 50 are the first 50 images of the sets of 100 where those
    exist (``random_images`` draws image by image). ``draw="notebook"``: notebook 07's random concepts, seeds
    ``900_000 + k`` (:func:`xaikit.concepts.nullsets.default_null_sets` with seed 0), continued past its 100."""
    import numpy as np

    from xaikit.models import imageworld as iw

    path = out / f"pool{'' if draw == 'lecture' else '-' + draw}-{size}x{POOL[size]}.npy"
    if not path.is_file():
        if draw == "notebook":
            sets = [iw.random_images(size, seed=900_000 + k) for k in range(POOL[size])]
        elif size == 50 and (have := out / f"pool-100x{POOL[100]}.npy").is_file():
            big = np.load(have)[:, :50]
            sets = [*big, *(iw.random_images(50, seed=POOL_SEED + k) for k in range(len(big), POOL[50]))]
        else:
            sets = [iw.random_images(size, seed=POOL_SEED + k) for k in range(POOL[size])]
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, np.stack(sets))
        tmp.replace(path)
    return list(np.load(path))


def _measure(job: tuple[int, str, str, str, int]) -> dict:
    """One model of one build, every set size: the K x R tables and the concepts' R scores."""
    seed, tag, world, out, R, draw, set_sizes, max_k = job
    import numpy as np
    import torch
    from transformers import ViTForImageClassification

    from xaikit.concepts import tcav
    from xaikit.course.claims.tcav import CLAIM_CONCEPTS, N_CLASS_IMAGES
    from xaikit.models import imageworld as iw
    from xaikit.models import vitworld

    torch.set_num_threads(1)
    out = Path(out)
    processor = vitworld.image_processor()
    model = ViTForImageClassification.from_pretrained(
        out / vitworld.RECIPE_VERSION / f"seed{seed}-{tag}-{world}", attn_implementation="eager").eval()
    # the lecture_claims draw changes with the training seed; notebook 07's draw is the same for every model
    first = {"lecture": (100 + seed, 200 + seed, (300 + seed) * 1000, 300 + seed), "notebook": (0, 0, 0, 0)}[draw]
    zebras = iw.class_images("zebra", N_CLASS_IMAGES, world, seed=first[1])
    sizes = {}
    for size in set_sizes:
        nulls = pool_sets(out, size, draw)
        concepts = {c: iw.concept_images(c, size, seed=first[0]) for c in CLAIM_CONCEPTS}
        randoms = [iw.random_images(size, seed=first[2] + i) for i in range(R + 1)]
        tables, seconds, scores = [], [], None
        for part in (nulls[:FIRST_CALL], nulls[FIRST_CALL:max_k + 1]):
            if not part:
                continue
            t0 = time.perf_counter()
            r = tcav.tcav_significance(model, concepts, zebras, target="zebra", layer=vitworld.TCAV_LAYER,
                                       random_sets=randoms, R=R, pooling=vitworld.TCAV_POOLING,
                                       processor=processor, test="rank", null_sets=part, seed=first[3])
            seconds.append(time.perf_counter() - t0)
            tables.append(r.null_scores)
            scores = {c: r[c].scores.tolist() for c in CLAIM_CONCEPTS}
            tcav.clear_cache(model)  # the second call pays for its concepts' CAVs again, as a fresh call would
        sizes[str(size)] = {"null_scores": np.concatenate(tables).tolist(), "scores": scores, "seconds": seconds}
    return {"seed": seed, "build": tag, "world": world, "R": R, "draw": draw, "sizes": sizes,
            "cpu_capability": torch.backends.cpu.get_cpu_capability()}


def protocol_row(build: dict, size: int, k: int, sided: str) -> dict:
    """One protocol on one build: striped's corrected p on each model, the random sets called significant."""
    import numpy as np

    row = {}
    alarms = []
    for world in ("main", "control"):
        if world not in build["models"]:
            row[f"p_{world}"] = float("nan")
            continue
        m = build["models"][world]["sizes"][str(size)]
        null = np.asarray(m["null_scores"])[:, :build["R"]].mean(1)
        row[f"p_{world}"] = _p(float(np.mean(m["scores"]["striped"])), null[:k], sided)
        pool = null[:k + 1]  # each of K + 1 random sets ranked among the other K
        alarms += [_p(pool[j], np.delete(pool, j), sided) < ALPHA for j in range(k + 1)]
    row["alarms"] = alarms
    # seconds: the current protocol's call, plus the share of the second call's random sets this K uses
    secs = np.zeros(2)
    for world in ("main",):  # one model's test
        s = build["models"][world]["sizes"][str(size)]["seconds"]
        extra = (k + 1 - FIRST_CALL) / (POOL[size] - FIRST_CALL) * s[1] if k + 1 > FIRST_CALL else 0.0
        secs += [s[0] * min(1.0, (k + 1) / FIRST_CALL), extra]
    row["seconds"] = float(secs.sum())
    return row


#: the builds the rule needs measured, both models each, before a protocol can pass it
REQUIRED = {(seed, "cpu") for seed in range(5)}


def table(builds: list[dict]) -> list[dict]:
    import numpy as np

    complete = REQUIRED <= {(b["seed"], b["build"]) for b in builds if len(b["models"]) == 2}
    rows = []
    for label, size, k, sided in PROTOCOLS:
        if any(str(size) not in m["sizes"] or len(m["sizes"][str(size)]["null_scores"]) < k + 1
               for b in builds for m in b["models"].values()):
            continue
        per = [protocol_row(b, size, k, sided) for b in builds]
        alarms = [a for r in per for a in r["alarms"]]
        rows.append({"protocol": label, "size": size, "K": k, "sided": sided,
                     "p_main": [r["p_main"] for r in per], "p_control": [r["p_control"] for r in per],
                     "alarm_share": float(np.mean(alarms)), "n_alarm_sets": len(alarms),
                     "seconds": float(np.mean([r["seconds"] for r in per])),
                     "per_build_seconds": [r["seconds"] for r in per]})
    base = np.array(rows[0]["per_build_seconds"])
    for r in rows:
        # against the current protocol on the same build and in the same process: the load of a shared machine
        # moves between builds more than between one build's calls
        r["cost"] = float(np.mean(np.array(r["per_build_seconds"]) / base))
        nominal = ALPHA / N_CONCEPTS
        controls = [p for p in r["p_control"] if not np.isnan(p)]
        r["calibrated"] = bool(all(p >= ALPHA for p in controls) and r["alarm_share"] <= nominal + 2 * np.sqrt(
            nominal * (1 - nominal) / r["n_alarm_sets"]))
        r["power"] = float(np.mean([p < ALPHA for p in r["p_main"]]))
        r["complete"] = complete
        r["passes"] = bool(complete and r["power"] == 1.0 and r["calibrated"] and r["cost"] <= 2.0)
    return rows


def print_table(rows: list[dict], builds: list[dict]) -> None:
    names = [f"s{b['seed']}{'' if b['build'] == 'cpu' else '/' + b['build']}" for b in builds]
    head = f"{'protocol':<24} " + " ".join(f"{n:>11}" for n in names) + \
        f" {'power':>6} {'alarms':>7} {'s/model':>8} {'cost':>5}  rule"
    print(head)
    print(" " * 25 + " ".join(f"{'main/ctrl':>11}" for _ in names))
    print("-" * len(head))
    for r in rows:
        cells = " ".join(f"{pm:>5.3f}/{pc:<5.2f}" for pm, pc in zip(r["p_main"], r["p_control"], strict=True))
        failed = [w for w, bad in (("power", r["power"] < 1), ("calibration", not r["calibrated"]),
                                   ("cost", r["cost"] > 2)) if bad]
        verdict = "PASS" if r["passes"] else ("fail: " + ", ".join(failed) if failed else
                                              "so far so good (seeds 0-4 not all measured)")
        print(f"{r['protocol']:<24} {cells} {r['power']:>6.0%} {r['alarm_share']:>7.1%} {r['seconds']:>8.1f} "
              f"{r['cost']:>4.1f}x  {verdict}")
    print(f"p: striped's corrected p for zebra (x{N_CONCEPTS}, alpha {ALPHA}) on the main / control model; power: "
          "share of builds significant on main;\nalarms: share of random sets, each posing as the concept among the "
          f"other K, called significant (calibrated: at most {ALPHA / N_CONCEPTS:.1%}), pooled over both models of "
          "every build;\ns/model: seconds of tcav_significance for one model on this machine; cost: against the "
          "current protocol")


def power_curve(builds: list[dict], path: Path) -> None:
    """Striped's corrected p on each main model against K (50 images a set), two- and one-sided, with the
    smallest p the test can give, and the 100-image sets at K = 100."""
    import matplotlib.pyplot as plt
    import numpy as np

    ks = np.array([25, 50, 75, 100, 150, 200, 250, 300])
    have = min(len(m["sizes"]["50"]["null_scores"]) for b in builds for m in b["models"].values())
    ks = ks[ks < have]  # the random sets each model was measured against
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    colours = plt.get_cmap("viridis")(np.linspace(0, 0.85, len(builds)))
    for ax, sided in zip(axes, ("two", "one"), strict=True):
        for b, colour in zip(builds, colours, strict=True):
            label = f"seed {b['seed']}" + ("" if b["build"] == "cpu" else f" ({b['build']})")
            ps = [protocol_row(b, 50, int(k), sided)["p_main"] for k in ks]
            ax.plot(ks, ps, "o-", color=colour, label=label, ms=4)
            if "100" in b["models"]["main"]["sizes"]:
                ax.plot([100], [protocol_row(b, 100, 100, sided)["p_main"]], "s", color=colour, ms=8, mfc="none")
        ax.plot(ks, np.minimum(1, N_CONCEPTS / (ks + 1)), "k:", label="smallest p, 3/(K+1)")
        ax.axhline(ALPHA, color="grey", lw=1)
        ax.set_yscale("log")
        ax.set_xlabel("K, random sets posing as concepts")
        ax.set_title(f"{sided}-sided rank test, main models")
    axes[0].set_ylabel("striped's corrected p for zebra")
    axes[0].legend(fontsize=8)
    fig.suptitle("circles: 50 images a set; squares: 100 images a set (K = 100); grey line: alpha = 0.05",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"power curve saved to {path}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="artifacts/power", help="the folder tcav_robustness.py --out trained into")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--builds", nargs="+", default=["cpu"], help="model folder tags, e.g. cpu cpu-avx2")
    parser.add_argument("--runs", type=int, default=10, help="R, runs per concept (default 10, as the lab)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--draw", choices=("lecture", "notebook"), default="lecture",
                        help="image sets drawn per training seed as lecture_claims draws them (default), or notebook "
                             "07's own sets, the same for every model")
    parser.add_argument("--sizes", type=int, nargs="+", default=sorted(POOL), choices=sorted(POOL),
                        help="images per concept and random set")
    parser.add_argument("--max-k", type=int, default=max(POOL.values()) - 1, choices=(100, 300),
                        help="the most random sets a protocol ranks against (100: the first call only)")
    parser.add_argument("--figure", default=None, help="power curve file (default <out>/tcav_power.png)")
    args = parser.parse_args()
    from xaikit.models import vitworld

    out = Path(args.out)
    for size in sorted(args.sizes, reverse=True):  # the sets of 100 first: those of 50 are their first halves
        pool_sets(out, size, args.draw)
    tail = f"R{args.runs}{'' if args.draw == 'lecture' else '-' + args.draw}"
    if args.sizes != sorted(POOL):
        tail += "-n" + "-".join(map(str, args.sizes))
    if args.max_k < max(POOL.values()) - 1:
        tail += f"-K{args.max_k}"
    jobs, measured = [], {}
    for tag in args.builds:
        for seed in args.seeds:
            for world in ("main", "control"):
                saved = out / f"power-seed{seed}-{tag}-{world}-{tail}.json"
                if saved.is_file():
                    measured[seed, tag, world] = json.loads(saved.read_text())
                elif (out / vitworld.RECIPE_VERSION / f"seed{seed}-{tag}-{world}" / "metrics.json").is_file():
                    jobs.append((seed, tag, world, str(out), args.runs, args.draw, args.sizes, args.max_k))
                else:
                    print(f"seed {seed} {world} ({tag}): no trained model under {out / vitworld.RECIPE_VERSION}")
    import multiprocessing as mp

    with ProcessPoolExecutor(max_workers=max(1, args.jobs), mp_context=mp.get_context("spawn")) as pool:
        for job, m in zip(jobs, pool.map(_measure, jobs), strict=True):
            (out / f"power-seed{job[0]}-{job[1]}-{job[2]}-{tail}.json").write_text(json.dumps(m))
            print(f"measured seed {job[0]} {job[2]} ({job[1]}): {[round(t) for t in m['sizes']['50']['seconds']]} s",
                  flush=True)
            measured[job[:3]] = m
    builds = [{"seed": seed, "build": tag, "R": args.runs,
               "models": {w: measured[seed, tag, w] for w in ("main", "control") if (seed, tag, w) in measured}}
              for tag in args.builds for seed in args.seeds if (seed, tag, "main") in measured]
    if not builds:
        print("nothing measured")
        return 1
    builds.sort(key=lambda b: (b["build"], b["seed"]))
    rows = table(builds)
    print(f"\nRank test of striped for zebra, R = {args.runs}, {len(builds)} builds, {args.draw}'s image sets:")
    print_table(rows, builds)
    (out / f"tcav_power-{tail}.json").write_text(json.dumps(rows, indent=1))
    print("\nthe models (held-out accuracy on 600 images / training accuracy, epochs; recipe "
          f"{vitworld.RECIPE_VERSION}):")
    for b in builds:
        cells = []
        for world in ("main", "control"):
            path = out / vitworld.RECIPE_VERSION / f"seed{b['seed']}-{b['build']}-{world}" / "metrics.json"
            if path.is_file():
                m = json.loads(path.read_text())
                cells.append(f"{world} {m['test_accuracy']:.3f}/{m['train_accuracy']:.3f}, {m['epochs']} epochs")
        print(f"  s{b['seed']}{'' if b['build'] == 'cpu' else '/' + b['build']}: " + "; ".join(cells))
    power_curve(builds, Path(args.figure) if args.figure else out / f"tcav_power-{tail}.png")
    passing = [r for r in rows if r["passes"]]
    print("\nprotocols that pass the rule:", ", ".join(r["protocol"] for r in passing) or "none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
