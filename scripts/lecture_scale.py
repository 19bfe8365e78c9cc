"""Time xaikit's methods at the lecture's model sizes: bert-base and vit-base-patch16-224.

The hub is not needed: random-weight models of the hub configurations (``BertConfig()`` and ``ViTConfig()``
defaults: 12 layers, hidden 768; ViT 224 px, patch 16) are saved once with ``save_pretrained`` into
``<cache>/lecture-scale/`` and loaded through xaikit's folder route (``load_sentiment`` / ``load_vit``), as a
student with a downloaded model would. Random weights cost the same time and memory as trained ones.

Each row runs in its own Python process, so its peak resident memory (``ru_maxrss`` of that process) is the
row's own. Rows are registered in :data:`xaikit.course.lecture_scale.ROWS` (name, goal seconds, goal GB, the
function here that measures it); a row with no function is listed as "not measured yet".

    .venv/bin/python scripts/lecture_scale.py                 # every row, full size
    .venv/bin/python scripts/lecture_scale.py --quick         # fewer images and runs: a smoke test
    .venv/bin/python scripts/lecture_scale.py --rows tcav_activations,tcav_score
    .venv/bin/python scripts/lecture_scale.py --record        # and keep the figures for the notebooks

Goals are for a 2-core laptop CPU; on a shared machine the times inflate. The ``tcav_floor`` row
has no time goal: it prints the whole TCAV significance call against its forward-pass floor, the forward
passes alone timed in the same process at the same torch thread count, a ratio that a busy machine inflates
on both sides (goal at most 1.2), the load average, and the row's peak memory beside the call's own (the floor's
pixel values are not held through the call).

    .venv/bin/python scripts/lecture_scale.py --rows tcav_floor       # the ratio at vit-base (minutes)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from xaikit.course.lecture_scale import FLOOR_RATIO_GOAL, ROWS, Row

#: TCAV's block at vit-base (the lecture's block)
VIT_LAYER = 10
_DISK_MIN = None  # xaikit's threshold for the on-disk activation cache, switched off in the other rows


def models_folder() -> Path:
    from xaikit._config import cache_dir

    return Path(cache_dir()) / "lecture-scale"


def build_models(folder: Path) -> tuple[Path, Path]:
    """Save the random vit-base and bert-base (with a tokenizer) into ``folder`` unless they are there."""
    import torch

    vit_dir, bert_dir = folder / "vit-base-patch16-224-random-1000", folder / "bert-base-random"
    if not (vit_dir / "config.json").exists():
        from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

        torch.manual_seed(0)
        config = ViTConfig()  # vit-base-patch16-224: 12 x 768, 224 px, patch 16
        # the hub model's head: ImageNet's 1,000 classes, "zebra" at index 340 as in google/vit-base-patch16-224
        config.id2label = {i: f"imagenet class {i}" for i in range(1000)} | {340: "zebra"}
        config.label2id = {v: k for k, v in config.id2label.items()}
        ViTForImageClassification(config).save_pretrained(vit_dir)
        ViTImageProcessor(size={"height": 224, "width": 224}).save_pretrained(vit_dir)
    if not (bert_dir / "config.json").exists():
        from transformers import BertConfig, BertForSequenceClassification

        from xaikit.models import load_sentiment

        torch.manual_seed(0)
        config = BertConfig(num_labels=2)  # bert-base-uncased: 12 x 768, vocabulary 30522
        BertForSequenceClassification(config).save_pretrained(bert_dir)
        # the embedded sentiment model's tokenizer (the bert-base-uncased vocabulary size fits)
        load_sentiment()[1].save_pretrained(bert_dir)
    return vit_dir, bert_dir


# -- rows: each returns a dict of extra numbers to print; the harness times it -------------------------------

def _tcav_inputs(quick: bool):
    from xaikit.models import imageworld as iw

    n = 10 if quick else 50
    concepts = {c: iw.concept_images(c, n) for c in ("striped", "dotted", "bubbly")}
    return n, concepts, iw.class_images("zebra", n)


def row_tcav_activations(vit_dir: Path, bert_dir: Path, quick: bool, clock):
    from xaikit.concepts import tcav
    from xaikit.models import imageworld as iw
    from xaikit.models import load_vit

    model, processor = load_vit(vit_dir)
    n = 10 if quick else 50
    images = iw.random_images(n, seed=1)
    clock.start()
    a = tcav.activations(model, images, VIT_LAYER, "flatten", processor)
    clock.stop()
    clock.start()
    tcav.activations(model, images, VIT_LAYER, "flatten", processor)  # the same images again: from memory
    again = clock.stop(count=False)
    return {"images": n, "shape": list(a.shape), "again_s": round(again, 3)}


def row_tcav_activations_disk(vit_dir: Path, bert_dir: Path, quick: bool, clock):
    """The activations of 50 images in a new kernel when an earlier one kept them on disk."""
    from xaikit.concepts import activations as acts_module
    from xaikit.concepts import tcav
    from xaikit.models import imageworld as iw
    from xaikit.models import load_vit

    if not hasattr(acts_module, "_on_disk"):
        raise RuntimeError("this xaikit has no on-disk activation cache")
    acts_module._DISK_CACHE_MIN_PARAMS = _DISK_MIN  # on for this row
    model, processor = load_vit(vit_dir)
    images = iw.random_images(10 if quick else 50, seed=2)
    t = time.perf_counter()
    tcav.activations(model, images, VIT_LAYER, "flatten", processor)  # computed, or already on disk
    first = time.perf_counter() - t
    tcav.clear_cache()  # as a new kernel: nothing in memory
    clock.start()
    tcav.activations(model, images, VIT_LAYER, "flatten", processor)
    clock.stop()
    return {"first_call_s": round(first, 2)}


def row_tcav_score(vit_dir: Path, bert_dir: Path, quick: bool, clock):
    from xaikit.concepts import tcav
    from xaikit.models import imageworld as iw
    from xaikit.models import load_vit

    model, processor = load_vit(vit_dir)
    n, concepts, zebras = _tcav_inputs(quick)
    clock.start()
    r = tcav.tcav(model, concepts["striped"], iw.random_images(n, seed=1), zebras, target="zebra", layer=VIT_LAYER,
                  processor=processor)
    clock.stop()
    return {"score": round(r.score, 3)}


def row_tcav_significance(vit_dir: Path, bert_dir: Path, quick: bool, clock):
    from xaikit.concepts import tcav
    from xaikit.models import load_vit

    model, processor = load_vit(vit_dir)
    n, concepts, zebras = _tcav_inputs(quick)
    R = 3 if quick else 10
    clock.start()
    res = tcav.tcav_significance(model, concepts, zebras, target="zebra", layer=VIT_LAYER, R=R, n_random=n,
                                 processor=processor)
    clock.stop()
    return {"R": R, "p": {c: round(s.p_value, 4) for c, s in res.concepts.items()}}


def _forward_floor(model, batches: list, layer: int, through_head: bool) -> float:
    """Seconds of the forward passes alone, without gradients: each batch of pixel values through encoder block
    ``layer`` (stopped there), or through the whole model with ``through_head`` (the class images, whose
    gradient needs the logits)."""
    import torch

    from xaikit.models.arch import encoder_layers

    class Stop(Exception):
        pass

    def stop(_module, _inputs, _output):
        raise Stop

    t = time.perf_counter()
    with torch.no_grad():
        for x in batches:
            handle = None if through_head else encoder_layers(model)[layer].register_forward_hook(stop)
            try:
                model(pixel_values=x)
            except Stop:
                pass
            finally:
                if handle is not None:
                    handle.remove()
    return time.perf_counter() - t


def row_tcav_floor(vit_dir: Path, bert_dir: Path, quick: bool, clock):
    """The whole TCAV significance call (t-test, 3 concepts, R runs, empty caches) against its forward-pass
    floor in the same process: every image the call feeds the model, through the chosen block (concept and
    random sets) or the whole model (the class images), without gradients, in batches of 64; timed before and
    after the call, and the shorter of the two taken.

    Both run with one torch thread count: ``XAIKIT_THREADS`` if set, else torch's default (the call would
    otherwise take its own count, :func:`xaikit.policies.method_thread_count`: one thread under
    ``XAIKIT_THREADS=1``, or the cores idle when it starts, against the floor's torch default). The floor's
    pixel values (450 MB at full size) are dropped before the call and made again after it, so the row's peak
    memory is the call's own (or the floor's, whichever is larger); ``call_peak_gb`` is the resident memory's
    peak during the call, sampled."""
    import torch

    from xaikit import policies
    from xaikit.concepts import tcav
    from xaikit.concepts.images import pixel_values
    from xaikit.models import imageworld as iw
    from xaikit.models import load_vit

    threads = policies.env_threads()
    threads = threads if isinstance(threads, int) else torch.get_num_threads()
    torch.set_num_threads(threads)
    policies.set_method_threads(threads)
    model, processor = load_vit(vit_dir)
    n, concepts, zebras = _tcav_inputs(quick)
    R = 3 if quick else 10
    randoms = [iw.random_images(n, seed=i) for i in range(R + 1)]  # the call's default sets (seed 0)

    def batches(images):
        x = pixel_values(model, images, processor)
        return [x[i:i + 64] for i in range(0, len(x), 64)]

    def floor_once():
        to_block = [b for imgs in (*concepts.values(), *randoms) for b in batches(imgs)]
        to_head = batches(zebras)
        seconds = _forward_floor(model, to_block, VIT_LAYER, False) + _forward_floor(model, to_head, VIT_LAYER, True)
        return seconds, sum(len(b) for b in to_block) + sum(len(b) for b in to_head)

    _forward_floor(model, batches(zebras)[:1], VIT_LAYER, False)  # warm-up: first-call allocations, thread pool
    before, images = floor_once()  # its pixel values are dropped on return: not held through the call
    tcav.clear_cache()
    sampler = _PeakRSS()
    clock.start()
    with sampler:
        res = tcav.tcav_significance(model, concepts, zebras, target="zebra", layer=VIT_LAYER, R=R, n_random=n,
                                     processor=processor)
    whole = clock.stop()
    after, _ = floor_once()
    floor = min(before, after)  # timed before and after the call: the quieter of the two (a shared machine's load drifts)
    print(f"tcav_floor: whole call {whole:.1f} s, forward passes alone {floor:.1f} s ({images} images, "
          f"{threads} threads, load {os.getloadavg()[0]:.1f}): ratio {whole / floor:.2f} (goal <= {FLOOR_RATIO_GOAL}), "
          f"call's peak {sampler.peak / 1e9:.2f} GB", file=sys.stderr)
    return {"R": R, "images": images, "threads": threads, "call_peak_gb": round(sampler.peak / 1e9, 2),
            "floor_s": round(floor, 1), "floor_before_after_s": [round(before, 1), round(after, 1)],
            "ratio": round(whole / floor, 3),
            "ratio_goal": FLOOR_RATIO_GOAL, "p": {c: round(s.p_value, 4) for c, s in res.concepts.items()}}


class _PeakRSS:
    """The peak resident memory of this process while the block runs, sampled every 10 ms (Linux's
    ``/proc/self/statm``; 0 elsewhere)."""

    def __init__(self):
        self.peak = 0

    def _rss(self) -> int:
        try:
            return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return 0

    def _watch(self):
        while not self._done.wait(0.01):
            self.peak = max(self.peak, self._rss())

    def __enter__(self):
        import threading

        self.peak, self._done = self._rss(), threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())


def row_tcav_significance_next_kernel(vit_dir: Path, bert_dir: Path, quick: bool, clock):
    """The t-test row again in a new kernel, with the activations and gradients an earlier one kept on disk."""
    from xaikit.concepts import activations as acts_module
    from xaikit.concepts import tcav
    from xaikit.models import load_vit

    if not hasattr(acts_module, "_on_disk"):
        raise RuntimeError("this xaikit has no on-disk activation cache")
    acts_module._DISK_CACHE_MIN_PARAMS = _DISK_MIN
    model, processor = load_vit(vit_dir)
    n, concepts, zebras = _tcav_inputs(quick)
    R = 3 if quick else 10

    def run():
        return tcav.tcav_significance(model, concepts, zebras, target="zebra", layer=VIT_LAYER, R=R, n_random=n,
                                      processor=processor)

    run()  # fills the disk cache (or finds it filled)
    tcav.clear_cache()  # as a new kernel: nothing in memory
    clock.start()
    res = run()
    clock.stop()
    return {"R": R, "p": {c: round(s.p_value, 4) for c, s in res.concepts.items()}}


def row_tcav_rank(vit_dir: Path, bert_dir: Path, quick: bool, clock):
    import warnings

    from xaikit.concepts import tcav
    from xaikit.models import load_vit

    model, processor = load_vit(vit_dir)
    n, concepts, zebras = _tcav_inputs(quick)
    R, K = (3, 10) if quick else (10, 100)
    clock.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # quick: K too small to reach alpha, said in the output
        res = tcav.tcav_significance(model, concepts, zebras, target="zebra", layer=VIT_LAYER, R=R, n_random=n,
                                     processor=processor, test="rank", n_null=K)
    clock.stop()
    return {"R": R, "K": K, "p": {c: round(s.p_value, 4) for c, s in res.concepts.items()}}


# -- text rows: the random bert-base through load_sentiment's folder route ----------------------------------

#: the five sentences of notebook 04's SHAP cell and ten for notebook 06's lab (short movie-review sentences)
LECTURE = ["a clever piece of cinema", "the plot is dull and the acting is worse", "i like this movie a lot",
           "a wonderful story with a great cast", "not good, not bad, just boring"]
LAB = LECTURE + ["the film is a joy to watch", "an awful script and a waste of time",
                 "the ending surprised me in the best way", "too long and far too slow",
                 "a moving and beautifully shot drama"]


def _text_row(view: str | None, sentences: list[str]):
    def row(vit_dir: Path, bert_dir: Path, quick: bool, clock):
        from xaikit.models import load_sentiment
        from xaikit.text.views import explain

        model, tok = load_sentiment(bert_dir)
        clock.start()
        for text in sentences[:2] if quick else sentences:
            explain(model, tok, text, view)
        clock.stop()
        return {"sentences": len(sentences[:2] if quick else sentences)}
    return row


def row_text_ig(vit_dir: Path, bert_dir: Path, quick: bool, clock):
    from xaikit.models import load_sentiment
    from xaikit.text.text_ig import text_integrated_gradients

    model, tok = load_sentiment(bert_dir)
    clock.start()
    r = text_integrated_gradients(model, tok, LECTURE[1], steps=50, progress=False)
    clock.stop()
    return {"steps": 50, "relative_gap": round(float(r.detail.relative_gap), 4)}


def row_lab(vit_dir: Path, bert_dir: Path, quick: bool, clock):
    from xaikit.lab.faithfulness import run_lab
    from xaikit.models import load_sentiment

    model, tok = load_sentiment(bert_dir)
    sentences = LAB[:3] if quick else LAB
    clock.start()
    run_lab(model, tok, sentences, progress=False)
    clock.stop()
    return {"sentences": len(sentences)}


row_gradsam = _text_row("Grad-SAM", LECTURE[1:2])
row_shap = _text_row("SHAP", LECTURE)
row_rollout = _text_row("rollout", LECTURE[1:2])
row_lrp = _text_row("Chefer LRP", LECTURE[1:2])


def _measure(row: Row) -> Callable:
    """The function of this script that measures ``row`` (the table's ``fn`` names it)."""
    return globals()[row.fn]


class _Clock:
    """Sums the wall time between start() and stop() (loading the model is not counted)."""

    def __init__(self):
        self.total, self._t = 0.0, None

    def start(self):
        self._t = time.perf_counter()

    def stop(self, count: bool = True) -> float:
        dt = time.perf_counter() - self._t
        if count:
            self.total += dt
        return dt


def _child(name: str, quick: bool) -> None:
    row = next(r for r in ROWS if r.name == name)
    vit_dir, bert_dir = build_models(models_folder())
    clock = _Clock()
    from xaikit.concepts import activations as acts_module

    global _DISK_MIN
    _DISK_MIN = getattr(acts_module, "_DISK_CACHE_MIN_PARAMS", None)
    if _DISK_MIN is not None:  # every row times cold work, except the disk cache's own row
        acts_module._DISK_CACHE_MIN_PARAMS = float("inf")
    extra = _measure(row)(vit_dir, bert_dir, quick, clock)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    import torch

    if torch.cuda.is_available():
        extra["gpu_peak_gb"] = round(torch.cuda.max_memory_allocated() / 1e9, 2)
    print("ROW " + json.dumps({"seconds": clock.total, "peak_gb": peak * 1024 / 1e9, "extra": extra,
                               "load": os.getloadavg()[0]}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer images, runs and null sets")
    parser.add_argument("--rows", default="", help="comma-separated row names (default: all); "
                        f"rows: {', '.join(r.name for r in ROWS)}")
    parser.add_argument("--record", action="store_true",
                        help=f"write the rows measured into {RECORD.relative_to(RECORD.parents[2])} (the notebooks' "
                             "model cells print them)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.quick)
        return 0
    wanted = [w for w in args.rows.split(",") if w]
    unknown = sorted(set(wanted) - {r.name for r in ROWS})
    if unknown:
        parser.error(f"--rows: unknown {unknown}; rows are {[r.name for r in ROWS]}")
    build_models(models_folder())
    print(f"lecture scale ({'quick' if args.quick else 'full'}), cpu count {os.cpu_count()}, load average "
          f"{os.getloadavg()[0]:.1f} (a shared machine inflates the times)")
    print(f"{'row':<18} {'seconds':>8} {'goal':>6} {'peak GB':>8} {'goal':>5}  what / extra")
    failed = False
    measured = {}
    for row in ROWS:
        if wanted and row.name not in wanted:
            continue
        if row.fn is None:
            print(f"{row.name:<18} {'-':>8} {row.goal_s or '-':>6} {'-':>8} {row.goal_gb or '-':>5}  "
                  f"{row.what}: not measured yet")
            continue
        cmd = [sys.executable, __file__, "--child", row.name] + (["--quick"] if args.quick else [])
        proc = subprocess.run(cmd, capture_output=True, text=True)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("ROW ")]
        if proc.returncode or not lines:
            failed = True
            print(f"{row.name:<18} FAILED (exit {proc.returncode})\n{proc.stderr[-2000:]}")
            continue
        r = json.loads(lines[-1][4:])
        ok_t = (row.goal_s is None or r["seconds"] <= row.goal_s) and r["extra"].get("ratio", 0) <= FLOOR_RATIO_GOAL
        ok_m = row.goal_gb is None or r["peak_gb"] <= row.goal_gb
        print(f"{row.name:<18} {r['seconds']:8.1f} {row.goal_s or '-':>6} {r['peak_gb']:8.2f} {row.goal_gb or '-':>5}"
              f"  {'OK ' if ok_t and ok_m else 'OVER'} {row.what}; {r['extra']}", flush=True)
        if "ratio" in r["extra"]:
            print(f"{'':<18} whole call / forward passes alone = {r['seconds']:.1f} s / {r['extra']['floor_s']:.1f} s = "
                  f"{r['extra']['ratio']:.2f} (goal <= {FLOOR_RATIO_GOAL}), {r['extra']['threads']} threads, load "
                  f"{r['load']:.1f}; peak {r['peak_gb']:.2f} GB (the call's own {r['extra']['call_peak_gb']:.2f} GB)",
                  flush=True)
        measured[row.name] = {"seconds": round(r["seconds"], 2), "peak_gb": round(r["peak_gb"], 2),
                              "load": round(r.get("load", 0.0), 1),
                              "what": row.what, **({"gpu_peak_gb": r["extra"]["gpu_peak_gb"]}
                                                   if "gpu_peak_gb" in r["extra"] else {})}
    if args.record and not args.quick and measured:
        record(measured)
    return 1 if failed else 0


#: the measurements the notebooks' model cells sum up (:func:`xaikit.models.costs.lecture_costs`; in full:
#: :func:`xaikit.models.costs.recorded_costs`)
RECORD = Path(__file__).resolve().parents[1] / "xaikit" / "models" / "lecture_scale.json"


def record(measured: dict) -> None:
    """Merge ``measured`` into :data:`RECORD` under this machine's device (``cpu`` or ``cuda``)."""
    import datetime
    import platform

    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    name = torch.cuda.get_device_name() if device == "cuda" else _cpu_name()
    data = json.loads(RECORD.read_text()) if RECORD.is_file() else {}
    entry = data.setdefault(device, {"rows": {}})
    entry.update({"machine": f"{name}, {os.cpu_count()} cores" if device == "cpu" else name,
                  "date": datetime.date.today().isoformat(),
                  "python": platform.python_version(), "torch": torch.__version__})
    entry["rows"].update(measured)
    RECORD.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"recorded in {RECORD}")


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "CPU"


if __name__ == "__main__":
    sys.exit(main())
