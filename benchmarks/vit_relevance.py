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
from xaikit.models.vitworld import RECIPE_VERSION


def load(folder: Path):
    from transformers import ViTForImageClassification

    if not folder.exists():  # training seed N > 0 lives in vit-<world>-<version>-seedN
        folder = folder.with_name(f"{folder.name}-{folder.parent.name.split('-')[0]}")
    model = ViTForImageClassification.from_pretrained(folder, use_safetensors=True).eval()
    set_attention_implementation(model, "eager")
    return model


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
        res, rand = vr.compare_methods(mm, main_scenes)
        ctl, _ = vr.compare_methods(cm, control_scenes, perturb=False)
        print(f"seed {seed}: random-order AUC {rand:.3f}; body area share "
              f"{np.mean([s.masks()['body'].mean() for s in main_scenes]):.3f} (main), "
              f"{np.mean([s.masks()['body'].mean() for s in control_scenes]):.3f} (control)")
        print(f"  {'method':15s} {'loc':>6s} {'ctl loc':>7s} {'point':>6s} {'pos AUC':>8s} {'neg AUC':>8s} "
              f"{'fwd':>5s} {'bwd':>5s} {'ms':>7s}")
        for r, c in zip(res, ctl, strict=True):
            print(f"  {r.method:15s} {r.localisation:6.3f} {c.localisation:7.3f} {r.pointing:6.2f} {r.pos_auc:8.3f} "
                  f"{r.neg_auc:8.3f} {r.forward:5.1f} {r.backward:5.1f} {1000 * r.seconds:7.1f}")


if __name__ == "__main__":
    main()
