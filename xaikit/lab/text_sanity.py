"""Sanity checks for the text methods: does a token ranking depend on what the model learned? (notebook 06)

Adebayo, Gilmer, Muelly, Goodfellow, Hardt & Kim (2018), "Sanity Checks for Saliency Maps", NeurIPS, carried
from image maps (:mod:`xaikit.lab.tensor_sanity`, notebook 01) to a transformer's token scores:

* **Model randomisation, cascading** (:func:`randomise_blocks`): re-draw the top ``k`` encoder blocks
  (block ``L-1``, then ``L-2`` as well, ...), or the classification head alone, each module by its own
  ``reset_parameters``, on a copy of the model; the model given is never changed.
* **Similarity** (:func:`ranking_similarity`): per sentence, Spearman's rank correlation of a method's token
  scores on the original and the randomised model (``|score|`` for signed methods, which are ranked by
  magnitude), averaged over sentences. Both models explain the same class: the original model's prediction.
* **Data randomisation** (:func:`model_similarities`, Adebayo et al. section 4): the same similarity between
  the trained model and one fine-tuned from the same start on shuffled labels
  (``load_sentiment("embedded-shuffled")``, :func:`xaikit.models.sentiment.ensure_shuffled_sentiment`).

An explanation that keeps its ranking when the weights it should describe are replaced by random ones shows
the input and the architecture more than what the model learned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from xaikit._text_input import Tokenizer
from xaikit._validate import bool_flags, check_int, check_names
from xaikit.lab.tensor_sanity import _redrawn_copy, spearman
from xaikit.models.arch import encoder_layers
from xaikit.text.tokens import TokenScores

__all__ = ["HEAD", "head_modules", "block_names", "randomise_blocks", "randomised_modules", "ranking_similarity",
           "cascade_similarities", "model_similarities"]

#: the slider's value that randomises the classification head and nothing else
HEAD = "head only"


def _check_model(model) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (a sentiment transformer), got {type(model).__name__}")
    return model


def block_names(model: nn.Module) -> list[str]:
    """The names of the encoder blocks, in forward order (``bert.encoder.layer.0`` ... ``.L-1``)."""
    blocks = {id(b) for b in encoder_layers(_check_model(model))}
    return [name for name, m in model.named_modules() if id(m) in blocks]


def head_modules(model: nn.Module) -> list[str]:
    """The head's modules: what maps the encoder's output to the logits (BERT's ``pooler`` and ``classifier``;
    whatever holds parameters outside the embeddings and the encoder blocks)."""
    _check_model(model)
    inside = set()
    for name in block_names(model):
        inside.add(name)
    embeddings = [n for n, _ in model.named_modules() if n.endswith("embeddings")]
    roots = tuple(p + "." for p in (*inside, *embeddings))
    found = []
    for name, m in model.named_modules():
        if name in inside or name in embeddings or name.startswith(roots) or not name:
            continue
        if next(m.parameters(recurse=False), None) is not None:
            found.append(name)
    if not found:
        raise ValueError(f"{type(model).__name__} has no head outside its embeddings and encoder blocks")
    return found


def randomised_modules(model: nn.Module, blocks: int | str) -> list[str]:
    """The modules :func:`randomise_blocks` re-draws: every module holding parameters inside the top
    ``blocks`` encoder blocks, or inside the head when ``blocks == HEAD``."""
    names = block_names(model)
    if blocks == HEAD:
        roots = head_modules(model)
    else:
        k = check_int(blocks, "blocks", 0, len(names),
                      hint=f"blocks counts encoder blocks from the top (0 .. {len(names)}), or pass {HEAD!r}")
        roots = names[len(names) - k:]
    out = []
    for name, m in model.named_modules():
        if any(name == r or name.startswith(r + ".") for r in roots):
            if next(m.parameters(recurse=False), None) is not None:
                out.append(name)
    return out


def randomise_blocks(model: nn.Module, blocks: int | str, seed: int = 0) -> nn.Module:
    """A copy of ``model`` with its top ``blocks`` encoder blocks re-drawn, or its head alone (``HEAD``).

    Each module holding parameters (linear layers, layer norms) is re-drawn by its own ``reset_parameters``
    under a seed of its own (``seed`` and its name), on the CPU, so the cascade is nested: block ``L-1`` is
    the same whether one block is randomised or three. ``blocks=0`` gives an exact copy. Adebayo et al. (2018),
    section 3; notebook 06.
    """
    names = randomised_modules(_check_model(model), blocks)
    return _redrawn_copy(model, names, check_int(seed, "seed", 0))


@bool_flags
def ranking_similarity(original: TokenScores, randomised: TokenScores, signed: bool) -> float:
    """Spearman's rank correlation of two :class:`~xaikit.text.tokens.TokenScores` of the same tokens
    (``|score|`` when ``signed``: such methods rank tokens by magnitude). NaN when a ranking is constant."""
    a, b = np.asarray(original.scores, float), np.asarray(randomised.scores, float)
    if list(original.tokens) != list(randomised.tokens):
        raise ValueError("the two TokenScores explain different tokens; explain the same sentence on both models")
    return spearman(torch.from_numpy(a), torch.from_numpy(b), absolute=signed)


@bool_flags
def cascade_similarities(model: nn.Module, tokenizer: Tokenizer, texts: Sequence[str],
                         steps: Sequence[int | str], methods: Sequence[str], seed: int = 0,
                         progress: bool = False, **costs: int) -> dict:
    """Mean Spearman similarity per step and method: ``{step: {method: mean over texts}}``.

    ``steps``: block counts and/or ``HEAD``; ``methods``: text method names; ``costs`` as
    :func:`~xaikit.text.views.all_views` takes them (``ig_steps=8``). The target of every text is the original
    model's predicted class, on both models. Also returns ``"scores"``: ``{step: [views per text]}`` with
    step ``0`` the original model's views, and ``"costs"``: what the views cost over every model and text,
    ``{part: Cost}`` as :func:`~xaikit.text.views.all_views` counts them with hooks (``"prepare"``, ``"shared
    pass"``, and each method that ran its own passes).
    """
    texts = _check_texts(texts)
    methods = check_names(methods, "methods", tuple(_registry_entries()))
    spent: dict = {}
    entries, (original, targets) = _registry_entries(), _explain(model, tokenizer, texts, methods, costs,
                                                                 spent=spent)
    out, scores = {}, {0: original}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(steps), desc="randomised models")
    for step in steps:
        changed = randomise_blocks(model, step, seed=seed)
        views, _ = _explain(changed, tokenizer, texts, methods, costs, targets, spent=spent)
        scores[step] = views
        out[step] = _mean_similarity(original, views, methods, entries)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return {"similarity": out, "scores": scores, "targets": targets, "costs": spent}


def model_similarities(model: nn.Module, other: nn.Module, tokenizer: Tokenizer, texts: Sequence[str],
                       methods: Sequence[str], original: Sequence[dict] | None = None, **costs: int) -> dict:
    """Mean Spearman similarity per method of two models' token rankings: ``{method: mean over texts}``.

    The data randomisation test of Adebayo et al. (2018, section 4), notebook 06: ``model`` is the trained
    model, ``other`` the same architecture fine-tuned on shuffled labels (or any model that shares
    ``tokenizer``). Both explain the class ``model`` predicts for each text, as in :func:`cascade_similarities`,
    whose per-sentence similarity (:func:`ranking_similarity`) and averaging (NaN sentences left out) it
    shares. ``original``: ``model``'s views of ``texts`` computed already (``cascade_similarities(...)
    ["scores"][0]``, same methods and costs), so they are not computed again. Returns ``{"similarity": ...,
    "scores": {"model": views per text, "other": views per text}, "targets": [class per text], "costs": {part:
    Cost}}``, the costs counted as in :func:`cascade_similarities` (``model``'s only when computed here).
    """
    _check_model(other)
    texts = _check_texts(texts)
    methods = check_names(methods, "methods", tuple(_registry_entries()))
    spent: dict = {}
    if original is None:
        original, targets = _explain(model, tokenizer, texts, methods, costs, spent=spent)
    else:
        original = list(original)
        if len(original) != len(texts) or not all(isinstance(v, dict) and set(methods) <= set(v) for v in original):
            raise ValueError(f"original must hold one dict of views per text ({len(texts)}) with every method of "
                             f"{list(methods)}, e.g. cascade_similarities(...)['scores'][0] for the same texts")
        targets = [next(iter(v.values())).target for v in original]
    views, _ = _explain(other, tokenizer, texts, methods, costs, targets, spent=spent)
    return {"similarity": _mean_similarity(original, views, methods, _registry_entries()),
            "scores": {"model": original, "other": views}, "targets": targets, "costs": spent}


def _registry_entries() -> dict:
    from xaikit.text import registry

    return registry.entries()


def _check_texts(texts) -> list[str]:
    if isinstance(texts, str):
        raise TypeError(f"texts must be a list of sentences, got one string {texts[:40]!r}; pass [text]")
    texts = list(texts)
    if not texts:
        raise ValueError("texts is empty; pass at least one sentence (e.g. load_movie_reviews('test')[:8])")
    return texts


def _explain(model: nn.Module, tokenizer, texts: list[str], methods: Sequence[str], costs: dict,
             targets: list[int] | None = None, spent: dict | None = None) -> tuple[list[dict], list[int]]:
    """Every method's views of every text on ``model`` (for the given targets, or its own predictions), and the
    targets used. ``spent``: a dict the views' costs are added to, part by part (``all_views``' ``spent``)."""
    from xaikit.text.views import all_views

    _check_model(model)
    if targets is not None and len(targets) != len(texts):
        raise ValueError(f"targets has {len(targets)} classes for {len(texts)} texts; pass one per text")
    views = []
    for i, text in enumerate(texts):
        here: dict | None = {} if spent is not None else None
        target = None if targets is None else targets[i]
        views.append(all_views(model, tokenizer, text, target=target, methods=list(methods), spent=here, **costs))
        for part, cost in (here or {}).items():
            spent[part] = spent[part] + cost if part in spent else cost
    if targets is not None:
        return views, list(targets)
    return views, [next(iter(v.values())).target for v in views]  # the model's own predictions


def _mean_similarity(original: list[dict], views: list[dict], methods: Sequence[str], entries: dict) -> dict:
    """``{method: mean Spearman over texts}``, NaN sentences (a constant ranking) left out; NaN if all are."""
    out = {}
    for m in methods:
        sims = [ranking_similarity(o[m], v[m], entries[m].signed) for o, v in zip(original, views, strict=True)]
        sims = [s for s in sims if not math.isnan(s)]
        out[m] = float(np.mean(sims)) if sims else float("nan")
    return out
