"""One-off data randomisation measurement for notebook 04 (issue 31; Adebayo et al. 2018, section 4).

Fine-tunes the embedded recipe (``train_sentiment``, the same 391 steps) on labels shuffled by
``random.Random(12345)``, into a folder under /tmp (not the cache), then prints the shuffled model's held-out
accuracy and the mean Spearman similarity of each cheap method's token ranking against the real model on the
first 6 held-out sentences. Not yet cached through ``xaikit.models.cache.ensure`` nor built by
``python -m xaikit prepare`` (left for a follow-up).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np

import xaikit
import xaikit.models.sentiment as sentiment
from xaikit.text import registry
from xaikit.text import sanity as text_sanity
from xaikit.text.views import all_views

METHODS = ["Grad-SAM", "attention", "rollout", "grad-weighted attention", "Chefer LRP"]


def main(folder: Path = Path("/tmp/xaikit_shuffled_sentiment"), n: int = 6) -> None:
    real = sentiment.training_pairs

    def shuffled(progress=True):
        pairs = real(progress)
        labels = [y for _, y in pairs]
        random.Random(12345).shuffle(labels)
        return [(t, y) for (t, _), y in zip(pairs, labels, strict=True)]

    sentiment.training_pairs = shuffled  # train_sentiment reads the module global
    try:
        m = sentiment.train_sentiment(folder, progress=True, threads=1, seed=0)
    finally:
        sentiment.training_pairs = real
    print(json.dumps({"accuracy": m["test_accuracy"], "steps": m["n_steps"], "seconds": m["train_seconds"]}))
    model, tok = xaikit.models.load_sentiment()
    other, _ = xaikit.models.load_sentiment(str(folder))
    sims = {m: [] for m in METHODS}
    for text, _ in sentiment.load_movie_reviews("test", progress=False)[:n]:
        a = all_views(model, tok, text, methods=METHODS)
        target = next(iter(a.values())).target
        b = all_views(other, tok, text, target=target, methods=METHODS)
        for name in METHODS:
            sims[name].append(text_sanity.ranking_similarity(a[name], b[name], registry.entry(name).signed))
    print(json.dumps({name: float(np.nanmean(v)) for name, v in sims.items()}))


if __name__ == "__main__":
    main()
