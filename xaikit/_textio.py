"""Shared entry checks for the text methods of notebook 04 (Grad-SAM, SHAP, attention views, editing, lab).

Every public text method starts with :func:`encode_one`: it checks the text, the model and the tokenizer,
puts the model in eval mode with eager attention (SDPA returns no attention weights), tokenizes with
truncation at the model's real maximum length (warning when it cuts), and resolves the target class.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch

from xaikit._validate import check_int, check_text

SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[PAD]", "<s>", "</s>", "<pad>")


@dataclass
class Encoded:
    """One tokenized text on the model's device: ``input_ids`` etc., its tokens and the class explained."""

    inputs: dict
    tokens: list[str]
    target: int | None
    logits: torch.Tensor | None  # (C,) logits of the unedited model, no grad

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)


def check_model(model, tokenizer, method: str, strict: bool = False):
    """A sequence classifier in eval mode with eager attention, and a callable tokenizer."""
    from xaikit._fn import ensure_eval
    from xaikit.models.arch import ensure_eager

    if not isinstance(model, torch.nn.Module) or not hasattr(model, "config"):
        raise TypeError(f"model must be a transformers sequence-classification model, got {type(model).__name__}; "
                        "load one with xaikit.models.load_sentiment() or "
                        "AutoModelForSequenceClassification.from_pretrained(name, attn_implementation='eager')")
    if not callable(tokenizer) or not hasattr(tokenizer, "convert_ids_to_tokens"):
        raise TypeError(f"tokenizer must be a transformers tokenizer (the one saved with the model), got "
                        f"{type(tokenizer).__name__}")
    ensure_eval(model, method)
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        ensure_eager(model, strict=strict)
    return model


def max_tokens(model, tokenizer) -> int:
    """The longest input the model takes: the tokenizer's limit capped by the position embeddings."""
    limits = [getattr(model.config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)]
    limits = [int(x) for x in limits if isinstance(x, int) and 0 < x < 100_000]
    return min(limits) if limits else 512


def n_classes(model) -> int:
    return int(getattr(model.config, "num_labels", 2))


def check_target(model, target, predicted: int) -> int:
    if target is None:
        return int(predicted)
    c = n_classes(model)
    return check_int(target, "target", 0, c - 1,
                     hint=f"the model has {c} classes ({_labels(model)}); use None for the predicted class")


def _labels(model) -> str:
    id2label = getattr(model.config, "id2label", None) or {}
    return ", ".join(f"{k}={v}" for k, v in sorted(id2label.items())) or "0..C-1"


def tokenize(model, tokenizer, texts: list[str], name: str = "text") -> dict:
    """Batch-tokenize with padding to the longest text and truncation at the model's limit (warns)."""
    limit = max_tokens(model, tokenizer)
    enc = tokenizer(texts, return_tensors="pt", padding=True, truncation=True, max_length=limit)
    full = tokenizer(texts, truncation=False, add_special_tokens=True)["input_ids"]
    long = [i for i, ids in enumerate(full) if len(ids) > limit]
    if long:
        warnings.warn(f"{name}: {len(long)} text(s) are longer than the model's {limit} tokens (the longest has "
                      f"{max(len(full[i]) for i in long)}); xaikit truncated them to the first {limit} tokens.",
                      UserWarning, stacklevel=3)
    device = next(model.parameters()).device
    return {k: v.to(device) for k, v in enc.items()}


def encode_one(model, tokenizer, text, target=None, method: str = "this method", name: str = "text",
               forward: bool = True) -> Encoded:
    """Validate and tokenize one text; ``target=None`` becomes the predicted class.

    ``forward=False`` skips the model's forward pass (``logits`` is None and a ``None`` target stays None)
    for a caller that runs the model itself.
    """
    text = check_text(text, name)
    check_model(model, tokenizer, method)
    if target is not None:  # type and range checked before any model work
        check_target(model, target, 0)
    inputs = tokenize(model, tokenizer, [text], name)
    logits = None
    if forward:
        with torch.no_grad():
            logits = model(**inputs).logits[0].detach()
        target = check_target(model, target, int(logits.argmax()))
    tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist())
    return Encoded(inputs, list(tokens), target, logits)


def check_texts(texts, name: str = "texts") -> list[str]:
    """One string or a non-empty list of non-empty strings, as a list."""
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, (list, tuple)):
        raise TypeError(f"{name} must be a str or a list of str, got {type(texts).__name__}")
    if not texts:
        raise ValueError(f"{name} is an empty list; pass at least one sentence")
    return [check_text(t, f"{name}[{i}]") for i, t in enumerate(texts)]


def fitting_threads():
    """One torch thread while the CPU is already busy (see :func:`xaikit._config.cpu_busy`), else torch's
    default; the thread count is restored afterwards. On an idle machine nothing changes."""
    from xaikit._config import cpu_busy, torch_threads

    return torch_threads(1 if cpu_busy() else None)
