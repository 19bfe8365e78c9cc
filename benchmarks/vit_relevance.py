"""Issue 31, notebook 05's new section measured over training seeds: localisation on the zebra body,
pointing game, Chefer et al.'s positive/negative perturbation AUC (with a random-order control), the
control ViT's body share, and each method's passes and seconds (count_passes).

    python benchmarks/vit_relevance.py --caches /work/main/artifacts/claims-matrix/caches --seeds 0 1 2 3 4
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from xaikit.concepts import vit_relevance as vr
from xaikit.models import imageworld as iw
from xaikit.models.hooks import set_attention_implementation
from xaikit.models.passes import count_passes
from xaikit.models.vitworld import RECIPE_VERSION, to_pixels


def load(folder: Path):
    from transformers import ViTForImageClassification

    if not folder.exists():  # training seed N > 0 lives in vit-<world>-<version>-seedN
        folder = folder.with_name(f"{folder.name}-{folder.parent.name.split('-')[0]}")
    model = ViTForImageClassification.from_pretrained(folder, use_safetensors=True).eval()
    set_attention_implementation(model, "eager")
    return model


def measure(model, scenes, perturb: bool = True, rng_seed: int = 0):
    rng = np.random.default_rng(rng_seed)
    rows = {m: {"loc": [], "point": [], "pos": [], "neg": [], "fwd": 0.0, "bwd": 0.0, "sec": 0.0}
            for m in vr.METHODS}
    rand = []
    for scene in scenes:
        pixels = to_pixels(scene.image()[None])
        body = scene.masks()["body"]
        for m in vr.METHODS:
            with count_passes(model) as cost:
                rmap, target = vr.relevance(model, pixels, m)
            r = rows[m]
            r["fwd"] += cost.forward
            r["bwd"] += cost.backward
            r["sec"] += cost.seconds
            r["loc"].append(vr.localisation(rmap, body))
            r["point"].append(vr.pointing_game(rmap, body))
            if perturb:
                order = np.argsort(-rmap.ravel(), kind="stable")
                r["pos"].append(vr.perturbation_curve(model, pixels, order, target).auc)
                r["neg"].append(vr.perturbation_curve(model, pixels, order[::-1], target).auc)
        if perturb:
            rand.append(vr.perturbation_curve(model, pixels, rng.permutation(rmap.size), target).auc)
    n = len(scenes)
    out = {m: {"loc": float(np.nanmean(r["loc"])), "point": float(np.mean(r["point"])),
               "pos": float(np.mean(r["pos"])) if perturb else float("nan"),
               "neg": float(np.mean(r["neg"])) if perturb else float("nan"),
               "fwd": r["fwd"] / n, "bwd": r["bwd"] / n, "sec": r["sec"] / n} for m, r in rows.items()}
    return out, (float(np.mean(rand)) if perturb else float("nan"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--caches", default="/work/main/artifacts/claims-matrix/caches")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--n", type=int, default=12)
    a = ap.parse_args()
    torch.set_num_threads(1)
    main_scenes = iw.scenes("zebra", a.n, "main", seed=5)
    control_scenes = iw.scenes("zebra", a.n, "control", seed=5)
    for seed in a.seeds:
        root = Path(a.caches) / f"seed{seed}-native"
        mm = load(root / f"vit-main-{RECIPE_VERSION}")
        cm = load(root / f"vit-control-{RECIPE_VERSION}")
        res, rand = measure(mm, main_scenes)
        ctl, _ = measure(cm, control_scenes, perturb=False)
        print(f"seed {seed}: random-order AUC {rand:.3f}; body area share "
              f"{np.mean([s.masks()['body'].mean() for s in main_scenes]):.3f} (main), "
              f"{np.mean([s.masks()['body'].mean() for s in control_scenes]):.3f} (control)")
        print(f"  {'method':15s} {'loc':>6s} {'ctl loc':>7s} {'point':>6s} {'pos AUC':>8s} {'neg AUC':>8s} "
              f"{'fwd':>5s} {'bwd':>5s} {'ms':>7s}")
        for m, r in res.items():
            print(f"  {m:15s} {r['loc']:6.3f} {ctl[m]['loc']:7.3f} {r['point']:6.2f} {r['pos']:8.3f} "
                  f"{r['neg']:8.3f} {r['fwd']:5.1f} {r['bwd']:5.1f} {1000 * r['sec']:7.1f}")


if __name__ == "__main__":
    main()
