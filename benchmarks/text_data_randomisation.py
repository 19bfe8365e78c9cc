"""The data randomisation test of notebook 06 over training seeds (Adebayo et al. 2018, section 4; issue 31).

For each training seed given, builds (or finds in the cache) the embedded sentiment model and its
shuffled-label twin (:func:`xaikit.models.sentiment.ensure_shuffled_sentiment`: the same recipe and steps over
2,000 training texts, labels permuted by ``random.Random(LABEL_SEED_OFFSET + seed)``), then prints how much of
its shuffled training labels it fits, both held-out accuracies and the
mean Spearman similarity of each cheap method's token ranking on the two models
(:func:`xaikit.lab.text_sanity.model_similarities`), on the first ``--n`` held-out sentences as in notebook 06's
student mode. A seed not yet in the cache costs two trainings of about 4-5 minutes each on 2 cores.

    python benchmarks/text_data_randomisation.py            # seed 0
    python benchmarks/text_data_randomisation.py 0 1 2 3 4  # the seeds of the claims matrix
"""

from __future__ import annotations

import argparse
import json

from xaikit.lab import text_sanity as sanity
from xaikit.models import load_sentiment
from xaikit.models.sentiment import ensure_embedded_sentiment, ensure_shuffled_sentiment, load_movie_reviews

METHODS = ["Grad-SAM", "attention", "rollout", "grad-weighted attention", "Chefer LRP"]


def measure(seed: int, n: int = 6) -> dict:
    """Held-out accuracies and mean similarities per method for training seed ``seed``."""
    real, shuffled = ensure_embedded_sentiment(seed=seed), ensure_shuffled_sentiment(seed=seed)
    model, tokenizer = load_sentiment(real)
    other, _ = load_sentiment(shuffled)
    texts = [t for t, _ in load_movie_reviews("test", progress=False)[:n]]
    sims = sanity.model_similarities(model, other, tokenizer, texts, METHODS)["similarity"]
    metrics = {name: json.loads((folder / "metrics.json").read_text())
               for name, folder in (("real", real), ("shuffled", shuffled))}
    accuracy = {name: m["test_accuracy"] for name, m in metrics.items()}
    return {"seed": seed, "accuracy": accuracy, "fits": metrics["shuffled"].get("train_accuracy"),
            "similarity": sims}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seeds", type=int, nargs="*", default=[0], help="training seeds (default: 0)")
    parser.add_argument("--n", type=int, default=6, help="held-out sentences (notebook 06's student mode: 6)")
    args = parser.parse_args()
    rows = [measure(seed, args.n) for seed in args.seeds]
    print(f"\nmean Spearman over {args.n} held-out sentences, trained vs shuffled-label model")
    print(f"{'seed':>4} | {'fits':>5} | {'acc real':>8} | {'acc shuf':>8} | "
          + " | ".join(f"{m[:12]:>12}" for m in METHODS))
    for r in rows:
        print(f"{r['seed']:>4} | {r['fits']:5.3f} | {r['accuracy']['real']:8.3f} | {r['accuracy']['shuffled']:8.3f} | "
              + " | ".join(f"{r['similarity'][m]:+12.2f}" for m in METHODS))
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
