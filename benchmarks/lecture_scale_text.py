"""The text rows of issue 30 at the lecture's scale: xaikit's text methods on a random-weight bert-base.

A BERT of ``BertConfig()``'s defaults (12 blocks x 768, 110 M parameters; the shape of
``textattack/bert-base-uncased-SST-2``) with two labels is saved with ``save_pretrained`` beside the embedded
model's tokenizer (the hub may be unreachable; a random model needs no particular vocabulary, only ids within
its 30,522 rows) and loaded through :func:`xaikit.load_sentiment`'s folder route, as a student would load
the lecture's model. Each row runs in its own Python process, so its peak memory (the process's maximum
resident set) is its own:

* Grad-SAM on one sentence; SHAP on the five lecture sentences; text IG at 50 steps; rollout; Chefer LRP;
* the faithfulness lab over 10 sentences (issue 30's goal: <= 20 s on 2 cores).

    HF_HUB_OFFLINE=1 python benchmarks/lecture_scale_text.py [--rows lab ig] [--threads 1] [--folder DIR]

``--threads``: torch threads inside the methods (``xaikit.policies.set_method_threads``; ``auto``: the
policy's own choice). Times include nothing of the model's loading. The row names are those of
``benchmarks/lecture_scale.py``'s text rows, so the two can be joined.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: the five sentences of notebook 04's SHAP cell and ten for the lab (short movie-review sentences)
LECTURE = ["a clever piece of cinema", "the plot is dull and the acting is worse", "i like this movie a lot",
           "a wonderful story with a great cast", "not good, not bad, just boring"]
LAB = LECTURE + ["the film is a joy to watch", "an awful script and a waste of time",
                 "the ending surprised me in the best way", "too long and far too slow",
                 "a moving and beautifully shot drama"]
ROWS = ("gradsam", "shap", "ig", "rollout", "lrp", "lab")
GOALS = {"lab": 20.0}


def save_model(folder: Path) -> None:
    """A random bert-base classifier (seeded) and the embedded model's tokenizer, saved in ``folder``."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    import xaikit.models as models

    if (folder / "config.json").is_file():
        return
    torch.manual_seed(0)
    model = BertForSequenceClassification(BertConfig(num_labels=2))
    model.save_pretrained(folder)
    _, tok = models.load_sentiment()
    tok.save_pretrained(folder)


def run_row(row: str, folder: str, threads: str) -> dict:
    """One row, in this process: ``{"seconds": ..., "peak_mb": ...}``."""
    import resource

    import torch

    import xaikit.models as models
    from xaikit.policies import set_method_threads

    if threads != "policy":
        set_method_threads(None if threads == "default" else int(threads))
    model, tok = models.load_sentiment(folder)
    start = time.perf_counter()
    if row == "gradsam":
        from xaikit.text.views import explain
        explain(model, tok, LECTURE[1], "Grad-SAM")
    elif row == "shap":
        from xaikit.text.views import explain
        for text in LECTURE:
            explain(model, tok, text, "SHAP")
    elif row == "ig":
        from xaikit.text.text_ig import text_integrated_gradients
        text_integrated_gradients(model, tok, LECTURE[1], steps=50, progress=False)
    elif row == "rollout":
        from xaikit.text.views import explain
        explain(model, tok, LECTURE[1], "rollout")
    elif row == "lrp":
        from xaikit.text.views import explain
        explain(model, tok, LECTURE[1], "Chefer LRP")
    elif row == "lab":
        from xaikit.text.lab.faithfulness import run_lab
        run_lab(model, tok, LAB, progress=False)
    seconds = time.perf_counter() - start
    del model
    return {"seconds": seconds, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "threads": torch.get_num_threads()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=ROWS)
    parser.add_argument("--threads", default="policy", help="'policy', 'default' or a count")
    parser.add_argument("--folder", default=None, help="where the random bert-base is saved (default: a temp dir)")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a child process: run this row only
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_row(args.one, args.folder, args.threads)))
        return
    folder = Path(args.folder or Path(tempfile.gettempdir()) / "xaikit-bert-base-random")
    save_model(folder)
    print(f"random bert-base in {folder}; threads: {args.threads}")
    print(f"{'row':>8} {'seconds':>8} {'peak MB':>8} {'goal s':>7}")
    for row in args.rows:
        out = subprocess.run([sys.executable, __file__, "--one", row, "--folder", str(folder), "--threads",
                              args.threads], capture_output=True, text=True, env=os.environ.copy())
        if out.returncode:
            print(f"{row:>8} FAILED: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        goal = GOALS.get(row)
        print(f"{row:>8} {r['seconds']:>8.2f} {r['peak_mb']:>8.0f} {goal if goal else '-':>7}", flush=True)


if __name__ == "__main__":
    main()
