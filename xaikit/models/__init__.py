"""Models for the notebooks: the embedded offline defaults and the data they are trained on (the digits,
the movie reviews, the generated image world), hub loaders, architecture helpers, forward hooks and the
attention implementation switch. ``python -m xaikit prepare`` (:mod:`xaikit.prepare`) builds the cache."""

from __future__ import annotations

from xaikit._lazy import attach

_EXPORTS = {
    "load_sentiment": "loaders",
    "load_vit": "loaders",
    "clear_cache": "loaders",
    "HubUnreachableError": "loaders",
    "load_movie_reviews": "sentiment",
    "ensure_embedded_sentiment": "sentiment",
    "ensure_shuffled_sentiment": "sentiment",
    "ensure_subset_sentiment": "sentiment",
    "ensure_eager": "arch",
    "encoder_layers": "arch",
    "embeddings_module": "arch",
    "attention_modules": "arch",
    "n_layers": "arch",
    "n_heads": "arch",
    "forward_hooks": "hooks",
    "count_passes": "passes",
    "lecture_costs": "costs",
    "recorded_costs": "costs",
    "Passes": "passes",
    "Cost": "passes",
    "attention_implementation": "hooks",
    "tiny_bert": "tiny",
    "tiny_vit": "tiny",
    "tiny_tokenizer": "tiny",
}


__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = attach(__name__, _EXPORTS)
