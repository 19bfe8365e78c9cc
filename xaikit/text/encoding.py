"""The text input rules under the names the text methods and notebook 04 use; they live in
:mod:`xaikit._text_input`, below the text methods and :mod:`xaikit.attention`, which share them.

:func:`encode_one` is :func:`~xaikit._text_input.prepare_text` with the target as its fourth argument.
"""

from __future__ import annotations

from xaikit._text_input import (
    SPECIAL_TOKENS,
    Encoded,
    PreparedText,
    TruncationWarning,
    check_model,
    check_pair,
    check_target,
    check_texts,
    fit_text,
    max_tokens,
    n_classes,
    prepare_text,
    tokenize,
)
from xaikit._types import Target
from xaikit._validate import bool_flags

__all__ = ["SPECIAL_TOKENS", "Encoded", "PreparedText", "TruncationWarning", "check_model", "check_pair",
           "check_target", "check_texts", "fit_text", "max_tokens", "n_classes", "prepare_text", "tokenize",
           "encode_one"]


@bool_flags
def encode_one(model, tokenizer, text: str, target: Target = None, method: str = "this method",
               name: str = "text", forward: bool = True) -> PreparedText:
    """Validate and tokenize one text; ``target=None`` becomes the predicted class
    (:func:`~xaikit._text_input.prepare_text`)."""
    return prepare_text(model, tokenizer, text, target, method=method, name=name, forward=forward)
