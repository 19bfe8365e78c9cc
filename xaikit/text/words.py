r"""LIME's features for a text: its words, each mapped to the tokenizer's pieces (Ribeiro, Singh & Guestrin
2016, as the ``lime`` package's ``LimeTextExplainer`` splits a text; notebook 04, section 4b).

A word is a run of word characters (``\w+``): what the package's ``split_expression=r'\W+'`` leaves between
separators. The fast tokenizer's character offsets map each word to its pieces ("unwatchable" is
``un ##watch ##able``: one feature); a slow tokenizer has none, and the pieces are then grouped by
WordPiece's ``##`` mark, with a warning. :mod:`xaikit.text.lime` removes words by these groups.
"""

from __future__ import annotations

import re

import numpy as np

from xaikit._fn import warn
from xaikit._validate import bool_flags

__all__ = ["word_groups"]

_WORD = re.compile(r"\w+")  # the package's words: what its split_expression=r"\W+" leaves


@bool_flags
def word_groups(tokenizer, text: str, input_ids, special, bow: bool = True) -> tuple[list[str], np.ndarray, str]:
    """The words of ``text`` as LIME's features and the token pieces of each.

    ``input_ids`` ``(N,)``: the text's tokens as the model sees them; ``special`` ``(N,)`` bool: the tokens the
    tokenizer added. Returns ``(words, groups, grouping)``: the ``d`` features, the ``(d, N)`` bool matrix of
    their pieces, and ``"offsets"`` or ``"wordpiece"`` (see the module's docstring). A word is a ``\\w+`` run
    of the text; with ``bow`` equal words are one feature. Tokens in no word (special, punctuation) are in no
    group.
    """
    ids = [int(i) for i in input_ids]
    special = np.asarray(special, dtype=bool)
    owner = _owners_by_offsets(tokenizer, text, ids, special)  # (N,) word occurrence of each token, -1: none
    if owner is not None:
        grouping = "offsets"
        occurrences = [m.group() for m in _WORD.finditer(text)]
    else:
        grouping = "wordpiece"
        owner, occurrences = _owners_by_wordpiece(tokenizer.convert_ids_to_tokens(ids), special)
        warn("the tokenizer gives no character offsets (a slow tokenizer), so LIME groups WordPiece pieces by "
             "their '##' marks into words; load the fast tokenizer (use_fast=True) to get the lime package's "
             "words exactly")
    words, index, rows = [], {}, []
    for k, word in enumerate(occurrences):
        members = owner == k
        if not members.any():  # a word without a piece of its own changes nothing the model sees
            continue
        key = word if bow else k
        if key not in index:
            index[key] = len(words)
            words.append(word)
            rows.append(np.zeros(len(ids), dtype=bool))
        rows[index[key]] |= members
    groups = np.array(rows, dtype=bool).reshape(len(words), len(ids))  # (d, N)
    return words, groups, grouping


def _owners_by_offsets(tokenizer, text, ids, special) -> np.ndarray | None:
    """Each token's word occurrence (index into the ``\\w+`` runs of ``text``), -1 for none; ``None`` when the
    tokenizer gives no offsets or tokenizes ``text`` otherwise than ``ids``."""
    if not getattr(tokenizer, "is_fast", False):
        return None
    try:
        enc = tokenizer(text, return_offsets_mapping=True, truncation=True, max_length=max(len(ids), 2))
    except (NotImplementedError, TypeError, ValueError):
        return None
    if list(enc["input_ids"]) != ids:
        return None
    spans = [m.span() for m in _WORD.finditer(text)]
    starts = np.array([s for s, _ in spans], dtype=int)  # (W,)
    owner = np.full(len(ids), -1)
    for i, (start, end) in enumerate(enc["offset_mapping"]):
        if special[i] or end <= start:
            continue
        k = int(np.searchsorted(starts, start, side="right")) - 1
        if k >= 0 and start < spans[k][1]:
            owner[i] = k
    return owner


def _owners_by_wordpiece(tokens, special) -> tuple[np.ndarray, list[str]]:
    """The slow tokenizer's fallback: a ``##`` piece joins the word before it, a piece without a word character
    is punctuation (no word)."""
    owner, words = np.full(len(tokens), -1), []
    for i, t in enumerate(tokens):
        if special[i]:
            continue
        if t.startswith("##") and words and owner[i - 1] == len(words) - 1:
            owner[i] = len(words) - 1
            words[-1] += t[2:]
        elif _WORD.search(t):
            owner[i] = len(words)
            words.append(t)
    return owner, words
