"""Do notebook 07's section 3 claims hold for every training seed? Images sorted by a CAV (Kim et al. 2018,
Fig. 2) and relative CAVs against concept-vs-random ones.

For each training seed of the embedded main ViT (seed 0: the prepared model; others trained here like
``benchmarks/tcav_robustness.py`` does, main world only) and each image draw, at block ``TCAV_LAYER`` with all
tokens flattened:

* **sorting**: 20 zebras and 20 horses sorted by R striped-vs-random CAVs (striped against random set i+1,
  CAV seed i, the runs of ``tcav_significance``); per CAV: zebras among the top 10, zebras among the bottom
  10, and the share of (zebra, horse) pairs in which the zebra is more similar to the CAV (an AUC), also
  for the dot product and for the cosine after subtracting the random images' mean activation;
* **relative CAVs**: the mean TCAV score of striped, dotted and bubbly against R random sets
  (``tcav_significance``, 100 zebras), the random CAVs' mean, and the relative scores bubbly vs dotted and
  striped vs dotted.

Draw 0 is notebooks 05's and 07's own draw (concepts, zebras and random sets with seed 0, as in 05's sections 2 and 5);
draw d > 0 draws every set afresh. Prints one row per seed and draw, then the range of each number.

    python benchmarks/cav_sort_robustness.py --seeds 0 1 2 3 4 --draws 3 --out /tmp/models
    ATEN_CPU_CAPABILITY=avx2 python benchmarks/cav_sort_robustness.py --no-prepared --out /tmp/avx2-models
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

N_GALLERY = 20  # zebras and horses each, as in notebook 07's section 3


def load_main(seed: int, out: Path, prepared: bool = True):
    """The main ViT of training ``seed``: the prepared model for seed 0 (unless ``prepared`` is false), else
    trained into ``out`` once."""
    from transformers import ViTForImageClassification

    from xaikit.models import vitworld

    if seed == 0 and prepared:
        folder = vitworld.ensure_embedded_vit("main", progress=False)
    else:
        from benchmarks.tcav_robustness import _train_one

        _train_one((seed, "main", "cpu", str(out), False))
        folder = out / f"seed{seed}-cpu-main"
    return ViTForImageClassification.from_pretrained(folder, attn_implementation="eager").eval()


def images_for(draw: int, R: int):
    """Concept sets, 100 zebras, the gallery's zebras and horses, and R+1 random sets of one draw."""
    from xaikit.models import imageworld as iw

    s = 0 if draw == 0 else 1000 + draw
    concepts = {c: iw.concept_images(c, 50, seed=s) for c in ("striped", "dotted", "bubbly")}
    zebras = iw.class_images("zebra", 100, "main", seed=s)
    horses = iw.class_images("horse", N_GALLERY, "main", seed=s)
    randoms = [iw.random_images(50, seed=(0 if draw == 0 else 5000 + 100 * draw) + i) for i in range(R + 1)]
    return concepts, zebras, horses, randoms


def sort_metrics(model, concepts, zebras, horses, randoms, R: int) -> list[dict]:
    """Per striped-vs-random CAV: zebras in the top and bottom 10, and the zebra-first share of pairs."""
    import numpy as np

    from xaikit.concepts import tcav
    from xaikit.models import vitworld

    layer, pooling, proc = vitworld.TCAV_LAYER, vitworld.TCAV_POOLING, vitworld.image_processor()
    pool = np.concatenate([zebras[:N_GALLERY], horses])
    is_zebra = np.r_[np.ones(N_GALLERY, bool), np.zeros(len(horses), bool)]
    a_striped = tcav.activations(model, concepts["striped"], layer, pooling, proc)
    a_pool = tcav.activations(model, pool, layer, pooling, proc).astype(np.float64)  # (40, D)
    a_rand = [tcav.activations(model, r, layer, pooling, proc) for r in randoms[1:R + 1]]
    centre = np.concatenate(a_rand).mean(0)  # the random images' mean activation

    def share(sim):
        return float((sim[is_zebra][:, None] > sim[~is_zebra][None, :]).mean())

    rows = []
    for i in range(R):
        cav = tcav.train_cav(a_striped, a_rand[i], seed=i, concept="striped", negative="random", layer=layer,
                             pooling=pooling)
        r = tcav.sort_by_cav(model, pool, cav, processor=proc)
        v = cav.vector.astype(np.float64)
        centred = a_pool - centre
        rows.append({"top10": int(is_zebra[r.top(10)].sum()), "bottom10": int(is_zebra[r.bottom(10)].sum()),
                     "pair_share": share(r.similarity), "cav_acc": cav.accuracy,
                     # two variants that are not Kim et al.'s: the dot product (no length), and the cosine
                     # after subtracting the random images' mean activation
                     "pair_share_dot": share(a_pool @ v),
                     "pair_share_centred": share(centred @ v / np.linalg.norm(centred, axis=1))})
    return rows


def relative_metrics(model, concepts, zebras, randoms, R: int) -> dict:
    from xaikit.concepts import tcav
    from xaikit.models import vitworld

    layer, pooling, proc = vitworld.TCAV_LAYER, vitworld.TCAV_POOLING, vitworld.image_processor()
    sig = tcav.tcav_significance(model, concepts, zebras, target="zebra", layer=layer, random_sets=randoms,
                                 R=R,
                                 pooling=pooling, processor=proc)
    pairs = tcav.pair_scores(model, concepts, zebras, target="zebra", layer=layer,
                             pairs=(("bubbly", "dotted"), ("striped", "dotted"), ("striped", "bubbly")),
                             pooling=pooling, processor=proc)
    return {"mean": {c: sig[c].mean for c in concepts}, "random": float(sig.random_scores.mean()),
            "significant": {c: sig[c].significant for c in concepts},
            "pairs": {f"{a} vs {b}": v for (a, b), v in pairs.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--R", type=int, default=10)
    parser.add_argument("--out", default=None, help="model folder (default <xaikit cache>/robustness/<recipe>)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--no-prepared", action="store_true", help="seed 0 too from --out, not the prepared model "
                        "(e.g. models trained under other CPU kernels)")
    args = parser.parse_args()
    import numpy as np
    import torch

    from xaikit._config import cache_dir
    from xaikit.models import vitworld

    torch.set_num_threads(1)
    out = Path(args.out or cache_dir() / "robustness") / vitworld.RECIPE_VERSION
    out.mkdir(parents=True, exist_ok=True)
    results = []
    print(f"{'seed':>4} {'draw':>4} {'top10':>7} {'bot10':>5} {'pairs':>11} {'striped':>7} {'dotted':>6} "
          f"{'bubbly':>6} {'random':>6} {'bub-dot':>7} {'rel b/d':>7} {'rel s/d':>7} {'rel s/b':>7}", flush=True)
    for seed in args.seeds:
        t0 = time.perf_counter()
        model = load_main(seed, out, prepared=not args.no_prepared)
        for draw in range(args.draws):
            concepts, zebras, horses, randoms = images_for(draw, args.R)
            srt = sort_metrics(model, concepts, zebras, horses, randoms, args.R)
            rel = relative_metrics(model, concepts, zebras, randoms, args.R)
            results.append({"seed": seed, "draw": draw, "sort": srt, "relative": rel})
            top = [r["top10"] for r in srt]
            bot = [r["bottom10"] for r in srt]
            share = [r["pair_share"] for r in srt]
            m = rel["mean"]
            print(f"{seed:>4} {draw:>4} {min(top):>3}-{max(top):<3} {max(bot):>5} {min(share):.2f}-{max(share):.2f} "
                  f"{m['striped']:>7.2f} {m['dotted']:>6.2f} {m['bubbly']:>6.2f} {rel['random']:>6.2f} "
                  f"{m['bubbly'] - m['dotted']:>7.2f} {rel['pairs']['bubbly vs dotted']:>7.2f} "
                  f"{rel['pairs']['striped vs dotted']:>7.2f} {rel['pairs']['striped vs bubbly']:>7.2f}"
                  f"   ({time.perf_counter() - t0:.0f} s)", flush=True)
    allsort = [r for x in results for r in x["sort"]]
    rels = [x["relative"] for x in results]
    print(f"\nover {len(allsort)} striped-vs-random CAVs: zebras in top 10 {min(r['top10'] for r in allsort)}-"
          f"{max(r['top10'] for r in allsort)}, in bottom 10 at most {max(r['bottom10'] for r in allsort)}, "
          f"zebra-first pair share {min(r['pair_share'] for r in allsort):.2f}-"
          f"{max(r['pair_share'] for r in allsort):.2f}")
    diff = [r["mean"]["bubbly"] - r["mean"]["dotted"] for r in rels]
    print(f"over {len(rels)} runs: bubbly minus dotted (vs random) {min(diff):.2f}-{max(diff):.2f}; "
          f"bubbly vs random minus random CAVs {min(r['mean']['bubbly'] - r['random'] for r in rels):.2f}-"
          f"{max(r['mean']['bubbly'] - r['random'] for r in rels):.2f}; relative bubbly vs dotted "
          f"{min(r['pairs']['bubbly vs dotted'] for r in rels):.2f}-{max(r['pairs']['bubbly vs dotted'] for r in rels):.2f}")
    for key in ("pair_share_dot", "pair_share_centred"):
        print(f"zebra-first pair share by {key[11:]}: {min(r[key] for r in allsort):.2f}-"
              f"{max(r[key] for r in allsort):.2f}")
    gap = [r["pairs"]["bubbly vs dotted"] - r["mean"]["bubbly"] for r in rels]
    print(f"relative bubbly vs dotted minus bubbly vs random: {min(gap):.2f}-{max(gap):.2f}; mean striped "
          f"{np.min([r['mean']['striped'] for r in rels]):.2f}-{np.max([r['mean']['striped'] for r in rels]):.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
