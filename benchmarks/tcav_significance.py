"""Time a full TCAV significance run on the embedded ViT (Kim et al. 2018; notebook 05).

Prints: the cold run (3 concepts, R = 10, one layer: activations, gradients, 40 CAVs), the same run with
warm caches, and a layer switch with warm caches (activations of every layer are cached in one pass, so a
switch only trains CAVs). Target: the cold run under 30 s on 2 cores. Needs `python -m xaikit prepare`.

    python benchmarks/tcav_significance.py [--R 10] [--layer 1]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--R", type=int, default=10)
    parser.add_argument("--layer", type=int, default=None)
    parser.add_argument("--pooling", default=None)
    args = parser.parse_args()

    from xaikit.concepts import tcav
    from xaikit.models import imageworld as iw
    from xaikit.models import load_vit
    from xaikit.models.vitworld import TCAV_LAYER, TCAV_POOLING

    t0 = time.perf_counter()
    model, processor = load_vit("embedded")
    t_load = time.perf_counter() - t0
    layer = TCAV_LAYER if args.layer is None else args.layer
    pooling = args.pooling or TCAV_POOLING
    concepts = {c: iw.concept_images(c, 50) for c in ("striped", "dotted", "bubbly")}
    zebras = iw.class_images("zebra", 40)
    randoms = [iw.random_images(50, seed=i) for i in range(args.R + 1)]

    def run(at):
        t = time.perf_counter()
        res = tcav.tcav_significance(model, concepts, zebras, target="zebra", layer=at, random_sets=randoms,
                                     R=args.R,
                                     pooling=pooling, processor=processor)
        return time.perf_counter() - t, res

    tcav.clear_cache()
    cold, res = run(layer)
    warm, _ = run(layer)
    other = (layer + 1) % model.config.num_hidden_layers
    switch, _ = run(other)  # activations cached for every layer; only the CAVs are new
    back, _ = run(layer)
    print(res.summary())
    print(f"load model:                          {t_load:6.2f} s")
    print(f"significance run, cold caches:       {cold:6.2f} s   (3 concepts, R={args.R}, layer {layer}, "
          f"{pooling}; target < 30 s on 2 cores: {'OK' if cold < 30 else 'SLOW'})")
    print(f"same run, warm caches:               {warm:6.2f} s   (ratio cold/warm {cold / max(warm, 1e-9):.1f}x)")
    print(f"layer switch {layer}->{other}, warm activations: {switch:6.2f} s   (ratio cold/switch "
          f"{cold / max(switch, 1e-9):.1f}x)")
    print(f"switch back to layer {layer}:             {back:6.2f} s")
    print(f"cpu count {os.cpu_count()}, load average {os.getloadavg()[0]:.1f} (shared machine: times inflate)")


if __name__ == "__main__":
    main()
