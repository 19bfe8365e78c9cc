"""Models for the notebooks: the embedded offline defaults, hub loaders, and architecture helpers."""

from __future__ import annotations

import importlib

_EXPORTS = {
    "load_sentiment": "loaders",
    "load_vit": "loaders",
    "clear_cache": "loaders",
    "HubUnreachableError": "loaders",
    "load_movie_reviews": "sentiment",
    "ensure_embedded_sentiment": "sentiment",
    "prepare": "prepare",
    "ensure_eager": "arch",
    "encoder_layers": "arch",
    "embeddings_module": "arch",
    "attention_modules": "arch",
    "n_layers": "arch",
    "n_heads": "arch",
    "tiny_bert": "tiny",
    "tiny_vit": "tiny",
    "tiny_tokenizer": "tiny",
}


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"xaikit.models.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'xaikit.models' has no attribute {name!r}")


__all__ = sorted(_EXPORTS)
