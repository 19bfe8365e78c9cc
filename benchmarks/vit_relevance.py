"""Notebook 07's section 4 measured over training seeds: localisation on the zebra body,
pointing game, Chefer et al.'s positive/negative perturbation AUC (with a random-order control), the
control ViT's body share and lift (share over the body's share of the frame), and each method's passes and
seconds (count_passes). Chefer et al.'s CVPR 2021 LRP method ("chefer_lrp") also gets its largest relative
conservation error over the zebras, and each build a line on their Table 1 ordering (LRP method < rollout <
raw attention in positive-perturbation AUC). A build whose cache folder lacks a trained ViT is skipped (this
script never trains one).

    python benchmarks/vit_relevance.py --caches /work/main/artifacts/claims-matrix/caches --seeds 0 1 2 3 4 \
        --builds native avx2
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from xaikit.image import lrp as vit_lrp
from xaikit.lab import pixel_scores as ps
from xaikit.models import imageworld as iw
from xaikit.models import vitworld
from xaikit.models.hooks import set_attention_implementation
from xaikit.models.vitworld import RECIPE_VERSION


def load(folder: Path):
    from transformers import ViTForImageClassification

    if not folder.exists():  # training seed N > 0 lives in vit-<world>-<version>-seedN
        folder = folder.with_name(f"{folder.name}-{folder.parent.name.split('-')[0]}")
    if not (folder / "model.safetensors").is_file():
        return None  # not built: skipped, never trained here
    model = ViTForImageClassification.from_pretrained(folder, use_safetensors=True).eval()
    set_attention_implementation(model, "eager")
    return model


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--caches", default="/work/main/artifacts/claims-matrix/caches")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--n", type=int, default=12)
    ap.add_argument("--builds", nargs="+", default=["native"], help="cache folder suffixes: seed<N>-<build>")
    a = ap.parse_args()
    torch.set_num_threads(1)
    main_scenes = iw.scenes("zebra", a.n, "main", seed=5)
    control_scenes = iw.scenes("zebra", a.n, "control", seed=5)
    for seed in a.seeds:
        for build in a.builds:
            run(Path(a.caches) / f"seed{seed}-{build}", main_scenes, control_scenes)


def run(root: Path, main_scenes, control_scenes) -> None:
    mm = load(root / f"vit-main-{RECIPE_VERSION}")
    cm = load(root / f"vit-control-{RECIPE_VERSION}")
    if mm is None or cm is None:
        print(f"{root.name}: no trained ViT in {root}; skipped")
        return
    res, rand = ps.compare_methods(mm, main_scenes)
    ctl, _ = ps.compare_methods(cm, control_scenes, perturb=False)
    conservation = max(vit_lrp.chefer_lrp(model, vitworld.to_pixels(s.image()[None])).conservation_error
                       for model, scenes in ((mm, main_scenes), (cm, control_scenes)) for s in scenes)
    print(f"{root.name}: random-order AUC {rand:.3f}; body area share {res[0].body_area:.3f} (main), "
          f"{ctl[0].body_area:.3f} (control); chefer_lrp conservation error {conservation:.1e} (largest, both models)")
    print(f"  {'method':15s} {'loc':>6s} {'lift':>5s} {'ctl loc':>7s} {'lift':>5s} {'point':>6s} {'pos AUC':>8s} "
          f"{'neg AUC':>8s} {'fwd':>5s} {'bwd':>5s} {'ms':>7s}")
    for r, c in zip(res, ctl, strict=True):
        print(f"  {r.method:15s} {r.localisation:6.3f} {r.localisation / r.body_area:5.2f} {c.localisation:7.3f} "
              f"{c.localisation / c.body_area:5.2f} {r.pointing:6.2f} {r.pos_auc:8.3f} {r.neg_auc:8.3f} "
              f"{r.forward:5.1f} {r.backward:5.1f} {1000 * r.seconds:7.1f}")
    by = {r.method: r for r in res}
    lrp, roll, att = by["chefer_lrp"].pos_auc, by["rollout"].pos_auc, by["attention"].pos_auc
    print(f"  Table 1 ordering (pos AUC): chefer_lrp {lrp:.3f} {'<' if lrp < roll else '>='} rollout {roll:.3f} "
          f"{'<' if roll < att else '>='} attention {att:.3f}; rollout - chefer_lrp {roll - lrp:+.3f}, "
          f"rollout - chefer {roll - by['chefer'].pos_auc:+.3f}, attention - rollout {att - roll:+.3f}", flush=True)


if __name__ == "__main__":
    main()
