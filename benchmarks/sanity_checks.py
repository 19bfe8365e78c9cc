"""Do notebook 01's sanity-check claims hold for every training seed and randomisation seed? (Adebayo et al. 2018)

For each training seed of the digits CNN (``--train-seeds``, default 0-2) and each randomisation seed
(``--seeds``, default 0-2), runs the cascading randomisation test on the notebook's test images
(:func:`xaikit.lab.tensor_sanity.cascade_scores`) and prints the mean similarity to the trained model's map
(Spearman, Spearman of absolute values, SSIM) of each method with 0..all layers randomised; then the data
randomisation test (the same CNN trained on shuffled labels, same seed) on the same images.

    python benchmarks/sanity_checks.py                       # fast mode off: 12 epochs, as for a student
    XAIKIT_FAST=1 python benchmarks/sanity_checks.py         # the CI / fast-mode model (6 epochs)
    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 python benchmarks/sanity_checks.py --no-cache

The notebook asserts only what every row printed here keeps, with margin. Trained models are cached
(``xaikit.cache_dir() / "toys"``); a run takes about a minute per training seed on one thread.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from xaikit import pick
from xaikit.lab import tensor_sanity as S
from xaikit.tensor import toys


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--images", type=int, default=None, help="test images (default: the notebook's)")
    parser.add_argument("--no-cache", action="store_true",
                        help="train every model afresh, not from the disk cache (to test other CPU kernels)")
    parser.add_argument("--data-only", action="store_true", help="only the data randomisation test")
    args = parser.parse_args()
    torch.set_num_threads(1)
    n_images = args.images or pick(12, 8)
    opts = dict(n=pick(50, 20), steps=16)  # notebook 01's N_SAMPLES
    for train_seed in args.train_seeds:
        trained = toys.digits_classifier(seed=train_seed, progress=False, disk_cache=not args.no_cache)
        images = trained.data.test_x[:n_images]
        print(f"\n== training seed {train_seed}: {trained.epochs} epochs, test accuracy {trained.accuracy:.3f}, "
              f"{n_images} images")
        for seed in [] if args.data_only else args.seeds:
            t0 = time.perf_counter()
            scores = S.cascade_scores(trained.model, images, seed=seed, **opts)
            took = time.perf_counter() - t0
            print(f"-- randomisation seed {seed} ({took:.1f} s); rows: layers randomised from the top "
                  f"{['none', *scores.layers]}")
            for measure in scores.MEASURES:
                table = scores.mean(measure)
                cells = "  ".join(f"{name[:10]:>10s} " + " ".join(f"{v:5.2f}" for v in table[:, m])
                                  for m, name in enumerate(scores.methods))
                print(f"   {measure:12s} {cells}")
            last = scores.values[-1, :, :, 1]  # (methods, images): Spearman of |maps|, every layer randomised
            print("   all layers, per-image spearman_abs range: " + ", ".join(
                f"{name} {np.nanmin(last[m]):.2f}..{np.nanmax(last[m]):.2f}" for m, name in enumerate(scores.methods)))
        shuffled = S.data_randomised_digits(seed=train_seed, progress=False, disk_cache=not args.no_cache)
        sims = S.compare_models(trained.model, shuffled.model, images, **opts)
        mean = np.nanmean(sims, axis=1)
        print(f"-- data randomisation: shuffled-label CNN test accuracy {shuffled.accuracy:.3f}, train accuracy "
              f"on its shuffled labels {shuffled.train_accuracy:.3f}")
        for m, name in enumerate(S.METHODS):
            print(f"   {name:22s} spearman {mean[m, 0]:5.2f}  spearman_abs {mean[m, 1]:5.2f}  ssim {mean[m, 2]:5.2f}")


if __name__ == "__main__":
    main()
