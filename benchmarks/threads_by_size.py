"""Do more torch threads pay off at the lecture's model sizes?

Times, at one torch thread and at torch's default, interleaved: Grad-SAM over the five lecture sentences,
text IG (50 steps) on one sentence, and the TCAV activations of 8 images (flatten), each on the embedded
model and on the random-weight bert-base / vit-base-patch16-224 of ``scripts/lecture_scale.py``. Prints
each median, the ratio default / one thread (below 1: more threads pay off) and the 1-minute load average:
where other processes keep the cores busy, extra threads wait for a core and cost more than they give.

    PYTHONPATH=. HF_HUB_OFFLINE=1 python benchmarks/threads_by_size.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import lecture_scale

    from xaikit.concepts import activations, tcav
    from xaikit.models import imageworld as iw
    from xaikit.models import load_sentiment, load_vit
    from xaikit.models.sentiment import LECTURE_SENTENCES
    from xaikit.policies import set_method_threads
    from xaikit.text.gradsam import gradsam
    from xaikit.text.text_ig import text_integrated_gradients

    vit_dir, bert_dir = lecture_scale.build_models(lecture_scale.models_folder())
    sentences = [s for s, _ in LECTURE_SENTENCES]
    images = iw.concept_images("striped", 8)
    default = torch.get_num_threads()
    activations._DISK_CACHE_MIN_PARAMS = float("inf")  # time the forward passes, not the disk

    def gradsam_work(pair):
        return lambda: [gradsam(*pair, s) for s in sentences]

    def ig_work(pair):
        return lambda: text_integrated_gradients(*pair, sentences[0], steps=50, progress=False)

    def image_work(model, processor, layer):
        def run():
            tcav.clear_cache(model)
            tcav.activations(model, images, layer, "flatten", processor)
        return run

    small, big = load_sentiment(), load_sentiment(str(bert_dir))
    small_vit, big_vit = load_vit(), load_vit(str(vit_dir))
    work = {"Grad-SAM x5, embedded MiniLM": gradsam_work(small),
            "Grad-SAM x5, bert-base": gradsam_work(big),
            "text IG 50 steps, embedded MiniLM": ig_work(small),
            "text IG 50 steps, bert-base": ig_work(big),
            "TCAV activations x8, embedded ViT": image_work(*small_vit, layer=3),
            "TCAV activations x8, vit-base": image_work(*big_vit, layer=10)}
    print(f"cores {os.cpu_count()}, torch default threads {default}, repeats {args.repeats}")
    print(f"{'work':36s} {'1 thread s':>10s} {f'{default} threads s':>11s} {'ratio':>6s} {'load':>5s}")
    for name, fn in work.items():
        set_method_threads(1)
        fn()  # warm-up
        times: dict[int, list[float]] = {1: [], default: []}
        load = os.getloadavg()[0]
        for _ in range(args.repeats):
            for n in times:
                set_method_threads(n)
                t0 = time.perf_counter()
                fn()
                times[n].append(time.perf_counter() - t0)
        one, many = statistics.median(times[1]), statistics.median(times[default])
        print(f"{name:36s} {one:10.3f} {many:11.3f} {many / one:6.2f} {load:5.1f}", flush=True)
    set_method_threads(None)


if __name__ == "__main__":
    main()
