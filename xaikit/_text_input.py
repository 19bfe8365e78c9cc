"""The one entry of every text method and of the attention capture: the text input rules, below both
families (the text methods of notebooks 02 and 04, and :mod:`xaikit.attention`'s capture and norms of
notebook 03).

:func:`prepare_text` checks the text, the model and the tokenizer (that they belong together:
:func:`check_pair`), puts the model in eval mode with eager attention (SDPA returns no attention weights),
cuts an over-long text to the model's real maximum length, tokenizes it once, runs one forward pass and
resolves ``target=None`` to the predicted class, once. The :class:`PreparedText` it returns is what the
methods' private functions trust (Captum's ``attribute`` validates, ``_attribute`` trusts).

:func:`run_text` is the family's entry: a public text method is one call of it with the method's private
function. It applies float32 (a float16/bfloat16 model's weights widened for the call) and the thread
policy once for the whole call (:func:`xaikit._fn.computing`), then prepares the text and runs the private
function on it. Methods that take token ids or several texts resolve ``target`` here too
(:func:`resolve_inputs_target`, :func:`resolve_texts_target`), so no method resolves it itself.

**One truncation rule** (:func:`fit_text`). A text longer than the model takes is cut once, to its longest
prefix of whole words that fits, with one :class:`TruncationWarning`; Grad-SAM, SHAP, text IG,
``capture_attention`` and every view then explain that same prefix, so their tokens are the same and
panels that put two methods side by side agree.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from xaikit._fn import computing, warn
from xaikit._types import Target
from xaikit._validate import check_int, check_text

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase as Tokenizer
else:
    Tokenizer = Any  # a transformers tokenizer; named here without importing transformers

SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[PAD]", "<s>", "</s>", "<pad>")


@dataclass(frozen=True, eq=False)
class PreparedText:
    """One checked, tokenized text on the model's device, as :func:`prepare_text` returns it.

    Attributes:
        inputs: ``input_ids``, ``attention_mask`` (and ``token_type_ids``), ``(1, N)`` each, on the model's device.
        tokens: the model's tokens, special ones included.
        target: the class explained: the caller's, or the predicted class for ``target=None`` (``None`` only
            when prepared with ``forward=False`` and no target was given).
        logits: ``(C,)`` logits of the model on the text, no grad (``None`` when no forward pass was run:
            a target was given, or ``forward=False``).
        text: the text explained: the input, or its prefix that fits the model (:func:`fit_text`).
        special: ``(N,)`` bool on the CPU, True at the special tokens the tokenizer added ([CLS], [SEP]).
        model, tokenizer: the pair it was prepared for.
    """

    inputs: dict
    tokens: list[str]
    target: int | None
    logits: torch.Tensor | None
    text: str = ""
    special: torch.Tensor | None = None
    model: Any = field(default=None, repr=False)
    tokenizer: Any = field(default=None, repr=False)

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)


#: the earlier name of :class:`PreparedText`
Encoded = PreparedText


def check_model(model: torch.nn.Module, tokenizer: Tokenizer, method: str, strict: bool = False,
                eager: bool = True) -> torch.nn.Module:
    """A sequence classifier in eval mode with eager attention (``eager=False``: as it is), and a callable
    tokenizer."""
    from xaikit._fn import ensure_eval
    from xaikit.models.arch import ensure_eager

    if not isinstance(model, torch.nn.Module) or not hasattr(model, "config"):
        raise TypeError(f"model must be a transformers sequence-classification model, got {type(model).__name__}; "
                        "load one with xaikit.models.load_sentiment() or "
                        "AutoModelForSequenceClassification.from_pretrained(name, attn_implementation='eager')")
    from xaikit.models.arch import is_vision_model

    if is_vision_model(model):  # it had failed deep inside with "'NoneType' object has no attribute 'dtype'"
        raise TypeError(f"model is an image model ({type(model).__name__}), and {method} explains text: pass a text "
                        "classifier (xaikit.models.load_sentiment()), or explain the ViT with the image methods "
                        "(xaikit.image.registry.relevance(model, pixels, method), "
                        "capture_attention(model, pixel_values=pixels))")
    if not callable(tokenizer) or not hasattr(tokenizer, "convert_ids_to_tokens"):
        raise TypeError(f"tokenizer must be a transformers tokenizer (the one saved with the model), got "
                        f"{type(tokenizer).__name__}")
    check_pair(model, tokenizer, method)
    ensure_eval(model, method)
    if not eager:
        return model
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        ensure_eager(model, strict=strict)
    return model


#: a tokenizer this many tokens smaller than the model's embedding is probably another model's
_SMALLER_BY = 512


def check_pair(model: torch.nn.Module, tokenizer: Tokenizer, method: str = "this method") -> None:
    """Refuse a tokenizer that does not belong to ``model``, naming the mismatch.

    A larger vocabulary than the model's embedding has rows gave ``IndexError: index out of range in self``
    from inside torch; a special token (``[CLS]``, ``[SEP]``, ``[PAD]``, ...) outside the embedding, or a
    ``[PAD]``/``<s>``/``</s>`` id that differs from the model's config, means another model's tokenizer
    (e.g. BERT's for a RoBERTa model), whose scores would look plausible and mean nothing. A vocabulary
    much smaller than the embedding (by more than 512 tokens) only warns: some models pad their embedding.
    """
    emb = model.get_input_embeddings() if callable(getattr(model, "get_input_embeddings", None)) else None
    rows = getattr(emb, "num_embeddings", None) or getattr(getattr(model, "config", None), "vocab_size", None)
    try:
        size = len(tokenizer)
    except TypeError:
        return
    if not isinstance(rows, int) or not isinstance(size, int):
        return
    fix = ("pass the tokenizer saved with the model: xaikit.models.load_sentiment(name) returns the pair, "
           "or load it with AutoTokenizer.from_pretrained(<the model's name or folder>)")
    what = f"{method}: the tokenizer does not match the model"
    if size > rows:
        raise ValueError(f"{what}: the tokenizer has {size:,} tokens but the model's embedding has {rows:,} rows, "
                         f"so token ids {rows:,} to {size - 1:,} would fail inside the model ('index out of range'); "
                         f"{fix}")
    for name in ("cls", "sep", "pad", "unk", "mask", "bos", "eos"):
        token_id = getattr(tokenizer, f"{name}_token_id", None)
        if isinstance(token_id, int) and not 0 <= token_id < rows:
            raise ValueError(f"{what}: its [{name.upper()}] token has id {token_id}, outside the model's {rows:,} "
                             f"embedding rows; {fix}")
    config = getattr(model, "config", None)
    for name in ("pad", "bos", "eos"):
        want, have = getattr(config, f"{name}_token_id", None), getattr(tokenizer, f"{name}_token_id", None)
        if isinstance(want, int) and isinstance(have, int) and want != have:
            raise ValueError(f"{what}: the model's config has {name}_token_id={want}, the tokenizer's "
                             f"[{name.upper()}] token is id {have} (a tokenizer of another model family?); {fix}")
    if rows - size > _SMALLER_BY:
        warn(f"{what}? the tokenizer has {size:,} tokens, the model's embedding {rows:,} rows; if it is not the "
             f"tokenizer saved with the model, the scores look plausible and mean nothing. If it is, ignore this")


def max_tokens(model: torch.nn.Module, tokenizer: Tokenizer) -> int:
    """The longest input the model takes: the tokenizer's limit capped by the position embeddings."""
    limits = [getattr(model.config, "max_position_embeddings", None), getattr(tokenizer, "model_max_length", None)]
    limits = [int(x) for x in limits if isinstance(x, int) and 0 < x < 100_000]
    return min(limits) if limits else 512


class TruncationWarning(UserWarning):
    """A text was longer than the model takes: xaikit explains its first words, the same in every method."""


class SpecialTokenWarning(UserWarning):
    """A text holds a special token typed as text ("[SEP]"): the tokenizer reads it as the special token."""


def _warn_special_tokens(tokenizer, text: str, name: str) -> None:
    """Warn when the user's text holds a special token's spelling (``"good movie [SEP] bad ending"``): the
    tokenizer turns it into that special token, so the model reads a second segment (``[SEP]``) or a
    sentence start (``[CLS]``), and the methods give it no word score, as they do to the real ones."""
    found = [t for t in dict.fromkeys(getattr(tokenizer, "all_special_tokens", None) or [])
             if isinstance(t, str) and len(t) > 1 and t in text]
    if found:
        warn(f"{name} holds {', '.join(found)} typed as text: the tokenizer reads each as its special "
                      f"token, not as a word, so the model sees {found[0]} where you typed it and the explanation "
                      f"scores it as a special token. Remove it, or write it differently (e.g. "
                      f"{found[0].strip('[]<>')!r}) if you meant a word", SpecialTokenWarning)


def fit_text(model: torch.nn.Module, tokenizer: Tokenizer, text: str, name: str = "text",
             limit: int | None = None) -> str:
    """``text`` itself if the model takes all of it, else its longest prefix of whole words that fits.

    ``limit`` is the most tokens, special ones included (``None``: :func:`max_tokens`, the model's
    maximum). The cut falls between words (a word split into pieces is kept whole or left out), so the
    prefix tokenizes to exactly the first tokens of the text; one :class:`TruncationWarning` names the
    counts and where the cut falls. Each text method calls this, so a text is cut the same way everywhere.
    """
    _warn_special_tokens(tokenizer, text, name)
    limit = max_tokens(model, tokenizer) if limit is None else min(limit, max_tokens(model, tokenizer))
    budget = limit - tokenizer.num_special_tokens_to_add(pair=False)
    fast = bool(getattr(tokenizer, "is_fast", False))
    enc = tokenizer(text, add_special_tokens=False, truncation=False, verbose=False, return_offsets_mapping=fast)
    ids = enc["input_ids"]
    if len(ids) <= budget:
        return text
    keep = budget
    if fast:
        words = enc.word_ids()
        if words[keep] is not None and words[keep] == words[keep - 1]:  # the cut would split a word
            start = keep
            while start > 0 and words[start - 1] == words[keep]:
                start -= 1
            keep = start or keep  # a single word longer than the limit is cut inside
        cut = text[:enc["offset_mapping"][keep - 1][1]]
    else:  # a slow tokenizer has no offsets: rebuild the text from the kept tokens
        cut = tokenizer.convert_tokens_to_string(tokenizer.convert_ids_to_tokens(ids[:keep]))
    tail = " ".join(cut.split()[-6:])
    warn(
        f"{name} has {len(ids)} tokens, but the model takes {limit} ({limit - budget} of them special); xaikit "
        f"truncated it to its first {keep} tokens, up to '... {tail}' ({len(cut.split())} of {len(text.split())} words), "
        "the same tokens in every method (Grad-SAM, SHAP, IG, attention). Explain the rest as a text of its own",
        TruncationWarning)
    return cut


def n_classes(model: torch.nn.Module) -> int:
    return int(getattr(model.config, "num_labels", 2))


def check_target(model: torch.nn.Module, target: int | str | None, predicted: int) -> int:
    if target is None:
        return int(predicted)
    c = n_classes(model)
    if isinstance(target, str):  # a class name, as the model's config labels it ('positive' for POSITIVE)
        id2label = getattr(model.config, "id2label", None) or {}
        hits = [int(k) for k, v in id2label.items() if str(v).lower() == target.strip().lower()]
        if len(hits) == 1:
            return hits[0]
        raise ValueError(f"target {target!r} is not a class name of this model; the model has {c} classes "
                         f"({_labels(model)}): pass the index or the name, or None for the predicted class")
    return check_int(target, "target", 0, c - 1,
                     hint=f"the model has {c} classes ({_labels(model)}); use None for the predicted class")


def _labels(model) -> str:
    id2label = getattr(model.config, "id2label", None) or {}
    return ", ".join(f"{k}={v}" for k, v in sorted(id2label.items())) or "0..C-1"


def tokenize(model: torch.nn.Module, tokenizer: Tokenizer, texts: list[str], name: str = "text") -> dict:
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


def prepare_text(model: torch.nn.Module, tokenizer: Tokenizer, text: str, target: Target = None, *,
                 method: str = "this method", name: str = "text", max_length: int | None = None, forward: bool | None = None,
                 eager: bool = True) -> PreparedText:
    """Check, cut and tokenize one text, and resolve the target, once (the entry of every text method).

    Args:
        model, tokenizer: a transformers model and its own tokenizer (:func:`check_model`).
        text: one non-empty string; longer than the model takes (or than ``max_length`` tokens), it is cut
            to its first words with one warning (:func:`fit_text`).
        target: the class to explain; ``None`` is the predicted class. An int is checked against the
            number of classes before any model work.
        method, name: how errors and warnings name the caller and the argument.
        forward: run the model once on the text (``logits``, and ``target=None`` resolved to the predicted
            class); ``None``: only when the target is to be resolved; ``False`` for a caller whose own pass is
            the one forward pass (the attention capture).
        eager: switch an SDPA model to eager attention, which returns attention weights (one warning);
            ``False`` for a method that reads none (text IG).

    Returns:
        A frozen :class:`PreparedText` on the model's device.
    """
    text = check_text(text, name)
    check_model(model, tokenizer, method, eager=eager)
    if target is not None:  # type and range checked before any model work
        target = check_target(model, target, 0)
    if max_length is not None:
        max_length = check_int(max_length, "max_length", 3, hint="or None for the model's maximum")
    text = fit_text(model, tokenizer, text, name, max_length)
    enc = tokenizer([text], return_tensors="pt", padding=True, truncation=True,
                    max_length=max_tokens(model, tokenizer), return_special_tokens_mask=True)
    special = enc.pop("special_tokens_mask")[0].bool()  # (N,)
    device = next(model.parameters()).device
    inputs = {k: v.to(device) for k, v in enc.items()}
    logits = None
    if forward or (forward is None and target is None):
        with torch.no_grad():
            logits = model(**inputs).logits[0].detach()
        target = check_target(model, target, int(logits.argmax()))
    tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist())
    return PreparedText(inputs, list(tokens), target, logits, text, special, model, tokenizer)


def check_texts(texts: str | Sequence[str], name: str = "texts") -> list[str]:
    """One string or a non-empty list of non-empty strings, as a list."""
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, (list, tuple)):
        raise TypeError(f"{name} must be a str or a list of str, got {type(texts).__name__}")
    if not texts:
        raise ValueError(f"{name} is an empty list; pass at least one sentence")
    return [check_text(t, f"{name}[{i}]") for i, t in enumerate(texts)]


def run_text(run: Callable[..., Any], model: torch.nn.Module, tokenizer: Tokenizer, text: str, target: Target = None,
             *, method: str, heavy: bool = False, max_length: int | None = None, eager: bool = True,
             **options: Any) -> Any:
    """The entry of every text method: ``run(prepare_text(...), **options)`` with float32 and the thread
    policy applied once for the whole call (:func:`xaikit._fn.computing`; ``heavy`` for float64 re-runs).

    ``method`` names the public function in errors and warnings; ``max_length`` and ``eager`` go to
    :func:`prepare_text`. ``run`` is the method's private function, which trusts the prepared text (its
    target resolved).
    """
    with computing(model, heavy):
        prepared = prepare_text(model, tokenizer, text, target, method=method, max_length=max_length, eager=eager)
        return run(prepared, **options)


def resolve_inputs_target(model: torch.nn.Module, inputs: dict, target: Target) -> int:
    """``target`` checked against the model's classes; ``None``: the class the model predicts for the first
    row of ``inputs`` (a tokenizer's output, or ``input_ids`` and ``attention_mask``), from one forward pass
    without gradients. The entry of the methods that take token ids rather than a text."""
    if target is not None:
        return check_target(model, target, 0)
    from xaikit._fn import inputs_to_model

    with torch.no_grad():
        logits = model(**inputs_to_model(model, inputs)).logits
    return check_target(model, None, int(logits[0].argmax()))


def resolve_texts_target(model: torch.nn.Module, tokenizer: Tokenizer, texts: list[str], target: Target) -> int:
    """``target`` checked against the model's classes; ``None``: the class the model predicts for every one of
    ``texts`` (a ValueError when they are predicted different classes: one explainer explains one output).
    The entry of the methods that explain several texts at once."""
    if target is not None:
        return check_target(model, target, 0)
    with torch.no_grad():
        logits = model(**tokenize(model, tokenizer, texts, "texts")).logits  # (B, C)
    classes = [int(c) for c in logits.argmax(-1)]
    if len(set(classes)) > 1:
        raise ValueError(f"target=None explains the predicted class, but the texts are predicted different classes "
                         f"{classes}; pass target=<class>, or explain each text on its own")
    return classes[0]
