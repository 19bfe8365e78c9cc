"""Integrated Gradients for transformers: from token ids, through the embedding layer, summed per token.

Token ids are integers, so IG cannot move along a line between two sentences; it moves instead between the
*outputs of the embedding layer* (word + position + segment embeddings after LayerNorm) of the input and of
a baseline text, and sums each token's attributions over the hidden dimension (Sundararajan, Taly & Yan
2017, section 6.3; Captum's ``LayerIntegratedGradients`` does the same). The baselines replace every word
by ``[PAD]``, ``[MASK]`` or ``[UNK]``, or set the word's embedding output to zero; ``[CLS]`` and ``[SEP]``
stay as they are, so the baseline is still a well-formed input of the same length.

Returns a :class:`xaikit.text.tokens.TokenScores` (so notebook 06 can compare IG with Grad-SAM and SHAP) whose
``detail`` is the full :class:`xaikit.tensor.integrated.IGResult` (completeness gap, F(x), F(x'), token ids).
Notebook 02, section 8.
"""

from __future__ import annotations

import torch

from xaikit import _aliases
from xaikit._fn import computing, ensure_eval, model_device
from xaikit._text_input import PreparedText, Tokenizer, resolve_inputs_target, run_text
from xaikit._types import Target
from xaikit._validate import bool_flags, check_choice, check_fraction, check_int, check_names
from xaikit.models.arch import embeddings_module
from xaikit.models.hooks import attention_implementation, forward_hooks
from xaikit.tensor.integrated import (
    RULES,
    IGResult,
    ToleranceSearch,
    _PathCache,
    alphas_and_weights,
    integrate_path,
    steps_for_tolerance,
    warn_gap,
)
from xaikit.text.registry import TextMethod, register
from xaikit.text.tokens import TokenScores

__all__ = ["TEXT_BASELINES", "text_integrated_gradients", "embedding_integrated_gradients", "baseline_ids",
           "text_steps_for_tolerance"]

TEXT_BASELINES = ("pad", "mask", "unk", "zero")


def _kept_ids(tokenizer) -> set[int]:
    """Ids that every baseline keeps: [CLS] and [SEP] (or <s> and </s>)."""
    names = ("cls_token_id", "sep_token_id", "bos_token_id", "eos_token_id")
    return {int(i) for i in (getattr(tokenizer, n, None) for n in names) if i is not None}


def baseline_ids(input_ids: torch.Tensor, tokenizer, baseline: str = "pad") -> torch.Tensor:
    """``input_ids`` with every token but [CLS]/[SEP] replaced by [PAD], [MASK] or [UNK] (``"zero"``: unchanged)."""
    baseline = check_choice(baseline, "baseline", TEXT_BASELINES)
    if baseline == "zero":
        return input_ids.clone()
    token_id = getattr(tokenizer, f"{baseline}_token_id", None)
    if token_id is None:
        raise ValueError(f"the tokenizer has no [{baseline.upper()}] token; use another baseline "
                         f"({', '.join(b for b in TEXT_BASELINES if b != baseline)})")
    keep = torch.zeros_like(input_ids, dtype=torch.bool)
    for i in _kept_ids(tokenizer):
        keep |= input_ids == i
    return torch.where(keep, input_ids, torch.full_like(input_ids, int(token_id)))


class _EmbeddingSwap:
    """Calls the model on fixed token ids with the embedding layer's output replaced by given tensors."""

    def __init__(self, model, input_ids: torch.Tensor, attention_mask: torch.Tensor):
        self.model, self.ids, self.mask = model, input_ids, attention_mask  # (1, T) each
        self.module = embeddings_module(model)

    def __call__(self, emb: torch.Tensor) -> torch.Tensor:  # (S, T, H) -> (S, C)
        S = emb.shape[0]
        with forward_hooks((self.module, lambda module, args, out: emb)):
            out = self.model(input_ids=self.ids.expand(S, -1), attention_mask=self.mask.expand(S, -1))
        return out.logits if hasattr(out, "logits") else out

    def embed(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The embedding outputs ``(B, T, H)`` and logits ``(B, C)`` of a batch of id rows, in one forward."""
        seen = {}

        def grab(module, args, out):
            seen["emb"] = out

        with forward_hooks((self.module, grab)), torch.no_grad():
            out = self.model(input_ids=ids, attention_mask=self.mask.expand(ids.shape[0], -1))
        logits = out.logits if hasattr(out, "logits") else out
        return seen["emb"].detach(), logits.detach()


def _fast_attention(model, enabled: bool = True):
    """Run with PyTorch's fused attention (SDPA) instead of the eager one, then switch back.

    IG needs no attention weights, and SDPA computes the same function (to float rounding) faster; the
    notebooks load models with eager attention for the attention views, so IG borrows SDPA for its own
    forward and backward passes only. Models that cannot switch (transformers without
    ``set_attn_implementation``, which builds the attention modules once) stay as they are.
    """
    from xaikit.models.arch import attn_implementation

    switch = (enabled and attn_implementation(model) == "eager"
              and callable(getattr(model, "set_attn_implementation", None)))
    return attention_implementation(model, "sdpa" if switch else None)


@bool_flags
@_aliases.captum_keywords({**_aliases.IG_STEPS, "baselines": _aliases.Alias("baseline_input_ids")})
def embedding_integrated_gradients(model: torch.nn.Module, input_ids, baseline_input_ids=None,
                                   attention_mask=None, *, target: Target = None, steps: int = 50,
                                   rule: str = "riemann_right", batch_size: int | None = None, zero_rows=None,
                                   fast_attention: bool = True, progress: bool | None = None) -> IGResult:
    """Layer IG at the embedding output of a BERT-family classifier for one row of token ids.

    Args:
        model: a ``...ForSequenceClassification`` model (BERT, DistilBERT, RoBERTa, MiniLM, ...).
        input_ids: ``(T,)`` or ``(1, T)`` token ids.
        baseline_input_ids: ids of the baseline text, same length. Default: the model's padding id
            (``model.config.pad_token_id``, 0 when it has none) at every position. In a BERT vocabulary that
            is id 0, [PAD], so the default is Captum's ``LayerIntegratedGradients`` default (zero ids).
            :func:`text_integrated_gradients` (``baseline="pad"``) keeps [CLS] and [SEP] fixed instead; it
            knows them from the tokenizer, this function sees ids only. Passing the input itself gives a
            zero path (every attribution 0) unless ``zero_rows`` is set.
        attention_mask: ``(T,)`` or ``(1, T)``; default all ones.
        target: the class (``None``: the predicted class).
        zero_rows: boolean ``(T,)`` or a list of token positions: rows of the baseline's embedding output set to zero (the zero baseline).
        fast_attention: compute with SDPA attention while IG runs (same function, faster; see
            :func:`_fast_attention`); the model is switched back afterwards.
        batch_size: path points per forward/backward pass; ``None`` bounds the memory
            (:func:`xaikit.tensor.integrated.default_batch_size`), so 10,000 steps cost time, not gigabytes.
        progress: a tqdm bar over the batches: ``None`` on runs over two seconds, ``True``, ``False``.

    Returns an :class:`IGResult` over the embedding output: ``attributions`` is ``(T, H)``.

    Sundararajan, Taly & Yan (2017); notebook 02, section 8.
    """
    with computing(model):  # the entry: float32 and the thread policy for the whole call
        return _embedding_ig(model, input_ids, baseline_input_ids, attention_mask, target=target, steps=steps,
                             rule=rule, batch_size=batch_size, zero_rows=zero_rows, fast_attention=fast_attention,
                             progress=progress, method="embedding_integrated_gradients")


def _embedding_ig(model, input_ids, baseline_input_ids, attention_mask, *, target, steps, rule, batch_size,
                  zero_rows, fast_attention, progress, method: str) -> IGResult:
    """:func:`embedding_integrated_gradients`, its warnings naming ``method`` (the function the user called);
    ``target=None`` is resolved here, once, by the family's entry (:func:`xaikit._text_input.resolve_inputs_target`)."""
    rule = check_choice(rule, "rule", RULES)
    steps = check_int(steps, "steps", 1, 100_000, hint="use e.g. steps=50")
    if batch_size is not None:
        batch_size = check_int(batch_size, "batch_size", 1)
    ensure_eval(model, method)
    dev = model_device(model)
    ids = _as_ids(input_ids, "input_ids").to(dev)
    if baseline_input_ids is None:
        pad = getattr(getattr(model, "config", None), "pad_token_id", None)
        base = torch.full_like(ids, 0 if pad is None else int(pad))
    else:
        base = _as_ids(baseline_input_ids, "baseline_input_ids").to(dev)
    if base.shape != ids.shape:
        raise ValueError(f"baseline_input_ids must have the same length as input_ids: {tuple(base.shape)} vs "
                         f"{tuple(ids.shape)}")
    rows = model.get_input_embeddings().num_embeddings
    for name, t in (("input_ids", ids), ("baseline_input_ids", base)):
        if int(t.max()) >= rows or int(t.min()) < 0:
            raise ValueError(f"{name} holds token id {int(t.max()) if int(t.max()) >= rows else int(t.min())}, "
                             f"outside the model's {rows:,} embedding rows: the ids come from another model's "
                             "tokenizer; tokenize with the tokenizer saved with the model")
    mask = torch.ones_like(ids) if attention_mask is None else _as_mask(attention_mask, ids).to(dev)
    if zero_rows is not None:
        zero_rows = _as_zero_rows(zero_rows, ids.shape[1]).to(dev)
    target = resolve_inputs_target(model, {"input_ids": ids, "attention_mask": mask}, target)
    swap = _EmbeddingSwap(model, ids, mask)
    with _fast_attention(model, fast_attention):
        return _layer_ig(swap, ids, base, target, steps, rule, batch_size, zero_rows, progress, method)


def _layer_ig(swap, ids, base, target, steps, rule, batch_size, zero_rows, progress=None,
              method: str = "text_integrated_gradients") -> IGResult:
    emb, logits = swap.embed(torch.cat([ids, base]))  # (2, T, H), (2, C)
    n_classes = logits.shape[1]
    target = check_int(target, "target", 0, n_classes - 1, hint=f"the model has {n_classes} classes")
    x, b = emb[0], emb[1].clone()  # (T, H) each
    if zero_rows is not None:
        b[zero_rows.to(device=b.device, dtype=torch.bool)] = 0.0
        ends = None
    else:
        ends = (float(logits[1, target]), float(logits[0, target]))
    alphas, weights = alphas_and_weights(rule, steps)
    result = integrate_path(swap, x, b, alphas, weights, target, batch_size, rule, progress, ends=ends)
    warn_gap(method, result.gap, result.f_x, result.f_baseline, steps, rule)
    result.input_ids = ids[0].tolist()
    result.baseline_ids = base[0].tolist()
    return result


@bool_flags
@_aliases.captum_keywords(_aliases.IG_STEPS, refused={"baselines": _aliases.TEXT_BASELINES})
def text_integrated_gradients(model: torch.nn.Module, tokenizer: Tokenizer, text: str, *, target: Target = None,
                              baseline: str = "pad", steps: int = 50, rule: str = "riemann_right",
                              batch_size: int | None = None, max_length: int | None = None,
                              fast_attention: bool = True, progress: bool | None = None) -> TokenScores:
    """IG per token of ``text`` for a sentiment-style classifier: attributions summed over the hidden size.

    ``baseline`` is ``"pad"``, ``"mask"``, ``"unk"`` or ``"zero"``; [CLS] and [SEP] are kept fixed. The
    result's ``detail`` is the :class:`IGResult` (``gap`` in logits, ``relative_gap``, ``f_x``,
    ``f_baseline``, ``rule``, ``steps``, ``input_ids``, ``baseline_ids``).

    A text longer than the model takes (or than ``max_length`` tokens, if given) is cut to its first words
    with a warning, as in every text method (:func:`xaikit._text_input.fit_text`), so IG's tokens are
    Grad-SAM's and SHAP's.

    Sundararajan, Taly & Yan (2017); notebook 02, section 8.
    """
    return run_text(_text_ig, model, tokenizer, text, target, method="text_integrated_gradients",
                    max_length=max_length, eager=False, baseline=baseline, steps=steps, rule=rule,
                    batch_size=batch_size, fast_attention=fast_attention, progress=progress)


def _text_ig(prepared: PreparedText, *, baseline: str = "pad", steps: int = 50, rule: str = "riemann_right",
             batch_size: int | None = None, fast_attention: bool = True, progress: bool | None = None,
             method: str = "Integrated Gradients") -> TokenScores:
    """:func:`text_integrated_gradients` of a prepared text (its target resolved); ``method`` names the scores."""
    ids, base, mask, zero_rows = _baseline_of(prepared, baseline)
    result = _embedding_ig(prepared.model, ids, base, mask, target=prepared.target, steps=steps, rule=rule,
                           batch_size=batch_size, zero_rows=zero_rows, fast_attention=fast_attention,
                           progress=progress, method="text_integrated_gradients")
    scores = result.attributions.sum(-1)  # (T,)
    return TokenScores(prepared.tokens, scores, method, result.target, True, result)


def _baseline_of(prepared: PreparedText, baseline: str):
    """The prepared text's ids ``(1, T)``, the baseline's ids, the attention mask and the rows a ``"zero"``
    baseline sets to zero (``None`` for the others)."""
    baseline = check_choice(baseline, "baseline", TEXT_BASELINES)
    ids = prepared.inputs["input_ids"]  # (1, T)
    tokenizer = prepared.tokenizer
    base = baseline_ids(ids, tokenizer, baseline)
    zero_rows = None
    if baseline == "zero":
        kept = torch.zeros_like(ids[0], dtype=torch.bool)
        for i in _kept_ids(tokenizer):
            kept |= ids[0] == i
        zero_rows = ~kept
    return ids, base, prepared.inputs.get("attention_mask"), zero_rows


@bool_flags
def text_steps_for_tolerance(model: torch.nn.Module, tokenizer: Tokenizer, text: str, rules=RULES,
                             tolerance: float = 0.05, *, target: Target = None, baseline: str = "pad",
                             start: int = 2, max_steps: int = 1024, batch_size: int | None = None,
                             max_length: int | None = None, fast_attention: bool = True) -> dict[str,
                             ToleranceSearch]:
    """The doubling search of :func:`xaikit.tensor.integrated.steps_for_tolerance`, one per rule in ``rules``,
    on the path that :func:`text_integrated_gradients` integrates (the embedding outputs of ``text`` and of
    its baseline text): ``{rule: ToleranceSearch}``.

    Each search's ``evaluations`` counts the gradient evaluations (a forward and a backward pass per path
    point) it would spend alone; the searches share one path cache, so a node that two rules use (the
    Riemann rules' nodes lie on one grid) is computed once. ``steps`` is where a search stopped. The
    attributions are per hidden unit ``(T, H)``; sum over the last axis for tokens. Notebook 02, section 8.
    """
    rules = check_names(rules, "rules", RULES)
    tolerance = check_fraction(tolerance, "tolerance", what=" of |F(x) - F(x')|")
    return run_text(_steps_for_tolerance, model, tokenizer, text, target, method="text_steps_for_tolerance",
                    max_length=max_length, eager=False, rules=rules, tolerance=tolerance, baseline=baseline,
                    start=start, max_steps=max_steps, batch_size=batch_size, fast_attention=fast_attention)


def _steps_for_tolerance(prepared: PreparedText, *, rules, tolerance: float, baseline: str, start: int,
                         max_steps: int, batch_size: int | None, fast_attention: bool) -> dict[str, ToleranceSearch]:
    """:func:`text_steps_for_tolerance` of a prepared text (its target resolved)."""
    model = prepared.model
    ids, base, mask, zero_rows = _baseline_of(prepared, baseline)
    dev = model_device(model)
    ids, base = ids.to(dev), base.to(dev)
    mask = torch.ones_like(ids) if mask is None else mask.to(dev)
    swap = _EmbeddingSwap(model, ids, mask)
    with _fast_attention(model, fast_attention):
        emb, logits = swap.embed(torch.cat([ids, base]))  # (2, T, H), (2, C)
        x, b = emb[0], emb[1].clone()
        if zero_rows is not None:
            b[zero_rows.to(b.device)] = 0.0
        target = prepared.target
        shared = _PathCache(swap, target, batch_size)
        return {r: steps_for_tolerance(swap, x, b, rule=r, tolerance=tolerance, start=start if r != "riemann_trapezoid"
                                       else max(start, 2), max_steps=max_steps, target=target,
                                       batch_size=batch_size, shared=shared)
                for r in rules}


def _as_ids(ids, name: str) -> torch.Tensor:
    if isinstance(ids, (str, bytes)):
        raise TypeError(f"{name} must be token ids (a tensor or list of ints), got str {ids!r}; tokenize the text "
                        f"first: tokenizer(text, return_tensors='pt')['input_ids']")
    try:
        t = torch.as_tensor(ids)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"{name} must be token ids (a tensor or list of ints), got {type(ids).__name__}") from err
    if t.dtype.is_floating_point or t.dtype == torch.bool or t.is_complex():
        raise TypeError(f"{name} must hold integer token ids, got dtype {t.dtype}")
    if t.ndim == 1:
        t = t[None]
    if t.ndim != 2 or t.shape[0] != 1:
        raise ValueError(f"{name} must be one row of ids, shape (T,) or (1, T); got {tuple(t.shape)}")
    if t.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(t.shape)}): there is no token to attribute to; tokenize a "
                         f"non-empty text, e.g. tokenizer('I like the movie', return_tensors='pt')['input_ids']")
    return t.long()


def _as_mask(mask, ids: torch.Tensor) -> torch.Tensor:
    """The attention mask ``(1, T)`` as integers: 1 for a token the model attends to, 0 for padding. Bool and
    float masks holding only 0 and 1 are read as such; it must match ``input_ids`` and keep one token."""
    if isinstance(mask, (str, bytes)):
        raise TypeError(f"attention_mask must be a tensor or list of 0s and 1s, got str {mask!r}")
    try:
        t = torch.as_tensor(mask)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"attention_mask must be a tensor or list of 0s and 1s, got {type(mask).__name__}") from err
    if t.ndim == 1:
        t = t[None]
    if tuple(t.shape) != tuple(ids.shape):
        raise ValueError(f"attention_mask must have the shape of input_ids, {tuple(ids.shape)} (or "
                         f"({ids.shape[1]},)), one 0 or 1 per token; got {tuple(torch.as_tensor(mask).shape)}. Pass "
                         f"the tokenizer's inputs['attention_mask'] for the same text, or None (every token)")
    if t.is_complex() or not bool(((t == 0) | (t == 1)).all()):
        raise ValueError("attention_mask must hold only 0 (padding) and 1 (a token the model attends to), as the "
                         "tokenizer's inputs['attention_mask'] does")
    if not bool((t == 1).any()):
        raise ValueError("attention_mask is all 0: no token is attended to, so the model's output depends on no "
                         "token and every attribution would be meaningless. Pass 1 for the real tokens (the "
                         "tokenizer's inputs['attention_mask']), or None (every token)")
    return t.long()


def _as_zero_rows(zero_rows, n_tokens: int) -> torch.Tensor:
    """``zero_rows`` as a boolean mask over the ``n_tokens`` positions: a boolean mask of that length, or
    integer positions ``0..T-1``."""
    try:
        t = torch.as_tensor(zero_rows)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"zero_rows must be a boolean mask over the {n_tokens} tokens or a list of token "
                        f"positions, got {type(zero_rows).__name__}") from err
    hint = (f"zero_rows is a boolean mask of length {n_tokens} (True: that token's baseline row is the zero "
            f"vector) or a list of positions 0..{n_tokens - 1}")
    if t.dtype == torch.bool:
        if tuple(t.reshape(-1).shape) != (n_tokens,):
            raise ValueError(f"zero_rows has {t.numel()} entries but input_ids has {n_tokens} tokens; {hint}")
        return t.reshape(-1)
    if t.dtype.is_floating_point or t.is_complex() or t.ndim > 1:
        raise TypeError(f"zero_rows must be booleans or integer positions, got dtype {t.dtype}, shape "
                        f"{tuple(t.shape)}; {hint}")
    positions = t.reshape(-1).long()
    if positions.numel() and (int(positions.min()) < 0 or int(positions.max()) >= n_tokens):
        bad = int(positions.max()) if int(positions.max()) >= n_tokens else int(positions.min())
        raise ValueError(f"zero_rows holds position {bad}, outside the {n_tokens} tokens of input_ids; {hint}")
    rows = torch.zeros(n_tokens, dtype=torch.bool)
    rows[positions] = True
    return rows


def _ig_entry(prepared: PreparedText, *, baseline: str = "pad", steps: int = 50, rule: str = "riemann_right",
              batch_size: int | None = None, fast_attention: bool = True, progress: bool | None = None) -> TokenScores:
    """Text IG as the registry runs it: the scores named "IG"."""
    return _text_ig(prepared, baseline=baseline, steps=steps, rule=rule, batch_size=batch_size,
                    fast_attention=fast_attention, progress=progress, method="IG")


register(TextMethod("IG", _ig_entry, signed=True, order=2, cost="steps", cost_keyword="ig_steps",
                    cost_hint="IG's steps, e.g. 32", defaults={"steps": 32}))
