"""Checks of notebook 04: Grad-SAM (``check_gradsam``, Barkan et al. 2021), the [CLS] row's share of it
(``check_cls_share``), the homework's two attention heads (``check_head_plots``) and the capture of the
attention and its gradient that Grad-SAM starts from (``check_attention_grads``), with the references an
exercise falls back to while it is a stub. The skeleton they share is
:func:`xaikit.course.checks._core._run_check`.
"""

from __future__ import annotations

import copy
import functools
import math
import warnings
from collections.abc import Callable

import numpy as np
import torch

from xaikit.course.checks._core import (
    CheckResult,
    ExerciseFunction,
    _close,
    _finish,
    _largest_gap,
    _own,
    _reshaped,
    _run_check,
    _tensor,
)

__all__ = ["check_gradsam", "check_cls_share", "check_head_plots", "check_attention_grads"]


# -- Grad-SAM (notebook 04) ----------------------------------------------------------------------------------
def _gradsam_reference(a: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    from xaikit.text.gradsam import gradsam_scores

    return gradsam_scores(a, g)


def _synthetic_attention(seed: int = 0, L: int = 3, M: int = 2, N: int = 5):
    """Random softmax attention and signed gradients; in layer 0 head 0 the gradients are all positive,
    so a missing ReLU shows only in the other heads (and the report can say which)."""
    gen = torch.Generator().manual_seed(seed)
    a = torch.softmax(torch.randn(L, M, N, N, generator=gen, dtype=torch.float64) * 2, dim=-1)
    g = torch.randn(L, M, N, N, generator=gen, dtype=torch.float64)
    g[0, 0] = g[0, 0].abs()
    return a, g


@functools.lru_cache(maxsize=1)
def _bert_case():
    """A tiny seeded BERT, its tokenizer and one sentence: attention, its gradient, and the tokens."""
    from xaikit.models.tiny import tiny_bert, tiny_tokenizer
    from xaikit.text.gradsam import attention_and_gradients

    model, tok = tiny_bert(seed=0), tiny_tokenizer()
    text = "I like the movie"
    enc = tok(text, return_tensors="pt")
    with torch.no_grad():
        target = int(model(**enc).logits[0].argmax())
    a, g, _ = attention_and_gradients(model, dict(enc), target=target)
    tokens = tok.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    return a.double(), g.double(), tokens


def _gradsam_cases():
    a, g = _synthetic_attention()
    cases = [("random attention (3 layers, 2 heads, 5 tokens)", a, g, [f"t{i}" for i in range(a.shape[-1])])]
    try:
        ba, bg, tokens = _bert_case()
        cases.append(("tiny BERT on 'I like the movie'", ba, bg, tokens))
    except Exception:  # noqa: BLE001, S110 - the synthetic case still runs without transformers
        pass
    return cases


def _gradsam_variants(a, g) -> dict:
    L, M, N, _ = a.shape
    relu = torch.relu(g)
    return {
        "wrong_axis": ("you sum over the queries (dim 2, a column); Grad-SAM sums along token i's own row, "
                       "over the keys j (the last axis)", (a * relu).sum(dim=(0, 1, 2)) / (L * M * N)),
        "transposed_attention": ("you transpose the attention but not its gradient: A^{lm} and dS/dA^{lm} "
                                 "multiply entry by entry, [A o ReLU(G)]_{ij} = A_ij ReLU(G_ij), both (query, key)",
                                 (a.transpose(-1, -2) * relu).sum(dim=(0, 1, 3)) / (L * M * N)),
        "relu_after_sum": ("you apply the ReLU after the sum: it belongs on each gradient entry, before "
                           "anything is summed, so that a negative gradient never cancels a positive one",
                           torch.relu((a * g).sum(dim=(0, 1, 3))) / (L * M * N)),
        "relu_after_row_sum": ("you apply the ReLU to each head's row sum: it belongs on each gradient entry, "
                               "before the sum over the keys j",
                               torch.relu((a * g).sum(dim=3)).sum(dim=(0, 1)) / (L * M * N)),
        "missing_relu": ("the ReLU on the gradient is missing: negative gradients must count as 0",
                         (a * g).sum(dim=(0, 1, 3)) / (L * M * N)),
        "abs_not_relu": ("you take |gradient|; Grad-SAM keeps only positive gradients: ReLU",
                         (a * g.abs()).sum(dim=(0, 1, 3)) / (L * M * N)),
        "missing_normalisation": ("the sum is not divided by L * M * N", (a * relu).sum(dim=(0, 1, 3))),
        "normalised_by_lm_only": ("divide by L * M * N (layers, heads and tokens), not only L * M",
                                  (a * relu).sum(dim=(0, 1, 3)) / (L * M)),
    }


def check_gradsam(student_fn: Callable, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(attentions, gradients) -> (N,)`` against Grad-SAM (Barkan et al. 2021; notebook 04):
    ``r_i = 1/(L M N) sum_l sum_m sum_j [A^{lm} o ReLU(dS/dA^{lm})]_{ij}``, both inputs ``(L, M, N, N)``
    (layer, head, query, key). Differences are located by token, and by layer and head (your function is
    also run on each single head)."""
    own = _own(student_fn)  # an exercise's own function, never the reference it falls back to
    cases = (((a.clone(), g.clone()), (label, a, g, tokens, _gradsam_reference(a, g), own))
             for label, a, g, tokens in _gradsam_cases())
    return _run_check("check_gradsam", student_fn, cases, _grade_gradsam, verbose)


def _grade_gradsam(result: CheckResult, answer, label: str, a: torch.Tensor, g: torch.Tensor, tokens: list[str],
                   ref: torch.Tensor, student_fn) -> None:
    """One attention stack ``a`` with its gradients ``g``; ``student_fn`` is run again on single heads."""
    got = _reshaped(result, _tensor(answer), ref.shape, label, "one score per token")
    if got is None:
        return
    if _close(got, ref):
        top = int(ref.argmax())
        result.ok(f"{label}: all {len(ref)} token scores match (top token {tokens[top]!r})")
        return
    (i,), gap = _largest_gap(got, ref)
    result.fail(f"{label}: token {i} ({tokens[i]!r}) differs: {gap}")
    for name, (message, cand) in _gradsam_variants(a, g).items():
        if _close(got, cand):
            result.fail(message, name)
            break
    _locate_heads(result, student_fn, a, g)


def _locate_heads(result, student_fn, a, g) -> None:
    """Run the student's function on each (layer, head) alone and list where it disagrees."""
    L, M, N, _ = a.shape
    bad = []
    for l in range(L):
        for m in range(M):
            one_a, one_g = a[l:l + 1, m:m + 1].clone(), g[l:l + 1, m:m + 1].clone()
            try:
                got = _tensor(student_fn(one_a, one_g))
            except Exception:  # noqa: BLE001 - a function that only works on full stacks: skip locating
                return
            ref = _gradsam_reference(one_a, one_g)
            if got is None or got.numel() != ref.numel() or not _close(got.reshape(ref.shape), ref):
                bad.append((l, m))
    if bad and len(bad) < L * M:
        result.hint("run on one head at a time, your function differs in "
                    + ", ".join(f"layer {l} head {m}" for l, m in bad)
                    + f" and agrees in the other {L * M - len(bad)} head(s)")
    elif bad:
        result.hint("run on one head at a time, your function differs in every layer and head")


# -- SHAP vs Grad-SAM: the [CLS] question (notebook 04) ---------------------------------------------------
def _cls_share_reference(a, g) -> torch.Tensor:
    h = (a * torch.relu(g)).sum(dim=(1, 3))  # (L, N): each layer's Grad-SAM mass per query row
    total = h.sum(dim=1)  # (L,)
    return torch.where(total > 0, h[:, 0] / total.clamp_min(1e-300), torch.zeros_like(total))


def check_cls_share(student_fn: Callable, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(attentions, gradients) -> (L,)``: for each layer, the share of that layer's Grad-SAM
    mass ``sum_m sum_j [A o ReLU(G)]_{ij}`` that falls on the [CLS] row ``i = 0``.

    The point of the exercise (SHAP vs Grad-SAM, notebook 04): the classifier reads only the [CLS] output,
    so in the last layer the gradient reaches the [CLS] row alone and its share is exactly 1, which is why
    [CLS] so often tops Grad-SAM (3 of the lecture's 5 sentences on the embedded model). SHAP's text masker never hides [CLS], so [CLS] has no effect of its
    own; with the lecture's ``fixed_context=1`` it gets only its share of the interactions that the Partition
    explainer hands down to every token of a group (:func:`xaikit.text.shaptext.credit_split`), and 0 with
    ``fixed_context=None``.
    """
    cases = (((a.clone(), g.clone()), (label, a, g, tokens, _cls_share_reference(a, g)))
             for label, a, g, tokens in _gradsam_cases())
    return _run_check("check_cls_share", student_fn, cases, _grade_cls_share, verbose)


def _grade_cls_share(result: CheckResult, answer, label: str, a: torch.Tensor, g: torch.Tensor, tokens: list[str],
                     ref: torch.Tensor) -> None:
    """One attention stack ``a`` with its gradients ``g``."""
    got = _reshaped(result, _tensor(answer), ref.shape, label, "one share per layer")
    if got is None:
        return
    if _close(got, ref):
        result.ok(f"{label}: shares per layer match: {[round(float(s), 3) for s in ref]}")
        if tokens[0] == "[CLS]":
            result.ok(f"{label}: in the last layer the [CLS] row holds {float(ref[-1]):.0%} of the mass: "
                      "only [CLS]'s output reaches the classifier")
        return
    (layer,), gap = _largest_gap(got, ref)
    result.fail(f"{label}: layer {layer} differs: {gap}")
    h_relu, h_raw = a * torch.relu(g), a * g
    column = h_relu.sum(dim=(1, 2))  # attention *to* [CLS]: the column
    variants = {
        "wrong_axis": ("you take the [CLS] column (how much others attend to [CLS]); Grad-SAM's score of "
                       "[CLS] is its own row (what [CLS] attends to, as the query)",
                       column[:, 0] / column.sum(1)),
        "missing_relu": ("the ReLU on the gradient is missing",
                         h_raw.sum(dim=(1, 3))[:, 0] / h_raw.sum(dim=(1, 2, 3))),
        "not_a_share": ("return a share (the [CLS] row's mass divided by the layer's total), not the mass",
                        h_relu.sum(dim=(1, 3))[:, 0]),
    }
    for name, (message, cand) in variants.items():
        if _close(got, cand):
            result.fail(message, name)
            break


# -- two heads of two layers (notebook 04, homework 3) -------------------------------------------------------
def _images(fig) -> list[tuple[object, np.ndarray]]:
    """(axes, data) for every image-like artist: imshow/matshow images and pcolormesh meshes."""
    from matplotlib.collections import QuadMesh
    from matplotlib.image import AxesImage

    found = []
    for ax in fig.axes:
        for artist in ax.get_children():
            if isinstance(artist, AxesImage):
                found.append((ax, np.asarray(artist.get_array(), dtype=np.float64), artist))
            elif isinstance(artist, QuadMesh):
                data = np.asarray(artist.get_array(), dtype=np.float64)
                coords = artist.get_coordinates()
                data = data.reshape(coords.shape[0] - 1, coords.shape[1] - 1)
                found.append((ax, data, artist))
    return found


def check_head_plots(student_fn: Callable, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(attentions, tokens, picks) -> Figure`` (homework: pick two layers, plot one head of
    each). ``attentions`` is ``(L, M, N, N)``, ``picks`` is ``[(layer, head), (layer, head)]``. The figure
    (or an Axes / array of Axes) must hold one heatmap per pick showing exactly ``attentions[layer, head]``
    with queries as rows, token labels on both axes, and a fixed 0-1 colour range so heads can be compared.
    """
    try:
        a, _, tokens = _bert_case()
    except Exception:  # noqa: BLE001 - without transformers: a random stack with made-up tokens
        a, _ = _synthetic_attention(L=2, M=4, N=6)
        tokens = ["[CLS]", "the", "movie", "was", "good", "[SEP]"]
    L, M, _, _ = a.shape
    picks = [(0, 1), (L - 1, M - 1)]
    cases = [((a.float().clone(), list(tokens), list(picks)), (a, tokens, picks))]
    return _run_check("check_head_plots", student_fn, cases, _grade_head_plots, verbose)


def _grade_head_plots(result: CheckResult, got, a: torch.Tensor, tokens: list[str], picks: list) -> None:
    """The student's figure for ``picks``, two (layer, head) of the attention stack ``a``."""
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    L, M, N, _ = a.shape
    if isinstance(got, Axes):
        got = got.figure
    elif isinstance(got, np.ndarray | list | tuple) and len(got) and isinstance(np.ravel(got)[0], Axes):
        got = np.ravel(got)[0].figure
    if not isinstance(got, Figure):
        result.fail(f"return the Matplotlib Figure (or its Axes); got {type(got).__name__}", "no_figure")
        return
    images = _images(got)
    if len(images) < len(picks):
        result.fail(f"expected {len(picks)} heatmaps (imshow, matshow or pcolormesh), found {len(images)}",
                    "missing_heatmap")
        return
    used = set()
    for layer, head in picks:
        want = a[layer, head].numpy()
        hit = next((k for k, (_, data, _) in enumerate(images) if k not in used and data.shape == want.shape
                    and np.allclose(data, want, atol=1e-5)), None)
        if hit is not None:
            used.add(hit)
            ax, _, artist = images[hit]
            result.ok(f"layer {layer} head {head}: heatmap shows attentions[{layer}, {head}] (queries as rows)")
            labels = [t.get_text() for t in ax.get_xticklabels()], [t.get_text() for t in ax.get_yticklabels()]
            if labels[0] != list(tokens) or labels[1] != list(tokens):
                result.fail(f"layer {layer} head {head}: label both axes with the tokens {list(tokens)} "
                            f"(got x {labels[0][:N]}, y {labels[1][:N]})", "missing_labels")
            lo, hi = artist.get_clim()
            if not (math.isclose(lo, 0.0, abs_tol=1e-9) and math.isclose(hi, 1.0, abs_tol=1e-9)):
                result.fail(f"layer {layer} head {head}: fix the colour range to 0-1 (vmin=0, vmax=1) so the "
                            f"two heads can be compared; yours is {lo:.3g}-{hi:.3g}", "colour_range")
            continue
        data_list = [data for _, data, _ in images]
        if any(d.shape == want.shape and np.allclose(d, want.T, atol=1e-5) for d in data_list):
            result.fail(f"layer {layer} head {head}: the matrix is transposed: rows must be the queries "
                        "(attentions[layer, head][i, j] = how much token i attends to token j)", "transposed")
        elif any(d.shape == want.shape and np.allclose(d, a[layer].mean(0).numpy(), atol=1e-5) for d in data_list):
            result.fail(f"layer {layer} head {head}: you plot the mean over heads; plot the one head",
                        "mean_of_heads")
        else:
            other = [(l, m) for l in range(L) for m in range(M)
                     if any(d.shape == want.shape and np.allclose(d, a[l, m].numpy(), atol=1e-5) for d in data_list)]
            where = (f"; a heatmap shows layer {other[0][0]} head {other[0][1]} instead (an index off by one?)"
                     if other else "")
            result.fail(f"layer {layer} head {head}: no heatmap shows attentions[{layer}, {head}]{where}",
                        "wrong_head" if other else "wrong_values")


# -- the reference an exercise falls back to while it is a stub ------------------------------------------------
def _head_plots_reference(attentions, tokens, picks):
    from matplotlib.figure import Figure

    from xaikit.widgets.attention import draw_attention

    fig = Figure(figsize=(5 * len(picks), 4.4), layout="constrained")
    for ax, (layer, head) in zip(fig.subplots(1, len(picks), squeeze=False)[0], picks, strict=True):
        draw_attention(ax, attentions[layer, head], tokens, title=f"layer {layer}, head {head}")
    return fig


# -- capturing the attention and its gradient (notebook 04, section 4c) ----------------------------------------
def _attention_grads_reference(model, inputs, target):
    """xaikit's capture: ``(A, dS/dA)``, both ``(L, M, N, N)``, with S the logit of ``target``."""
    from xaikit.text.gradsam import attention_and_gradients

    a, g, _ = attention_and_gradients(model, inputs, target=target)
    return a, g


#: the outputs a student might differentiate instead of the logit S of the target class
_OTHER_OUTPUTS = {
    "probability": ("the softmax probability of the target class",
                    lambda logits, t: torch.softmax(logits, -1)[t]),
    "log_probability": ("the log-probability of the target class (log_softmax)",
                        lambda logits, t: torch.log_softmax(logits, -1)[t]),
    "loss": ("the cross-entropy loss with the target as label (the loss goes down where the logit goes up)",
             lambda logits, t: -torch.log_softmax(logits, -1)[t]),
    "sum_of_logits": ("the sum of all the logits (logits.sum())", lambda logits, t: logits.sum()),
}

#: what autograd says when the attention was cut from the graph before the backward pass could reach it
_DETACHED_ERRORS = ("does not require grad", "retain_grad", "not have been used in the graph", "grad_fn",
                    "element 0 of tensors")

_DETACHED = ("the attention was cut from the graph before the forward pass ended (a .detach() or "
             "torch.no_grad() in the forward pass, or a hook that keeps a detached copy), so no gradient reaches "
             "it: keep the very tensor the model computes with (output_attentions=True returns it), call "
             ".retain_grad() on it before the backward pass, and detach only afterwards")

#: what PyTorch warns when ``.grad`` is read on a tensor that autograd computed and was not asked to keep
_NOT_LEAF_WARNING = "not a leaf Tensor"

_NOT_RETAINED = ("the attention's gradient was never kept: the attention tensors are computed by the model, "
                 "not leaves of the graph, and the backward pass fills .grad only on leaves unless asked, so "
                 "a.grad stays None (PyTorch warns of it). Call a.retain_grad() on each attention tensor before "
                 "S.backward(), or keep its gradient with a hook (a.register_hook(...)) or "
                 "torch.autograd.grad(S, attentions)")


def _alternative_gradients(model, inputs: dict, target: int) -> dict[str, tuple[str, torch.Tensor]]:
    """The gradient of the attention for each output a student might differentiate by mistake, ``(L, M, N, N)``
    each: every other class's logit and the outputs of :data:`_OTHER_OUTPUTS`."""
    out = model(**inputs, output_attentions=True)
    attentions = out.attentions  # L x (1, M, N, N)
    logits = out.logits[0]  # (C,)
    outputs = {f"logit_{c}": (f"the logit of class {c}, another class than the target {target}", logits[c])
               for c in range(logits.shape[0]) if c != target}
    outputs |= {name: (what, fn(logits, target)) for name, (what, fn) in _OTHER_OUTPUTS.items()}
    found = {}
    for name, (what, value) in outputs.items():
        grads = torch.autograd.grad(value, attentions, retain_graph=True)  # L x (1, M, N, N)
        found[name] = (what, torch.stack([g[0] for g in grads]).detach().double())  # (L, M, N, N)
    return found


@functools.lru_cache(maxsize=1)
def _capture_setup():
    """The tiny seeded BERT on one sentence, for its predicted class and the other class: the inputs, the
    reference A and dS/dA and the alternative gradients of each target. Built once, without moving the
    caller's random state; the student's function gets a copy of the model (a hook left behind stays on it)."""
    from xaikit.models.tiny import tiny_bert, tiny_tokenizer

    with torch.random.fork_rng(devices=[]):
        model, tok = tiny_bert(seed=0), tiny_tokenizer()
    text = "I like the movie"
    enc = dict(tok(text, return_tensors="pt"))
    with torch.no_grad():
        predicted = int(model(**enc).logits[0].argmax())
    tokens = tok.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    targets = []
    for target, which in ((predicted, "the predicted class"), (1 - predicted, "the other class")):
        a, g = _attention_grads_reference(model, enc, target)
        targets.append((target, f"tiny BERT on {text!r}, target={target} ({which})", a.double(), g.double(),
                        _alternative_gradients(model, enc, target)))
    return model, enc, tokens, targets


def _capture_cases():
    model, enc, tokens, targets = _capture_setup()
    theirs = copy.deepcopy(model)
    return [((theirs, {k: v.clone() for k, v in enc.items()}, target), (label, a, g, alternatives, tokens, theirs))
            for target, label, a, g, alternatives in targets]


def check_attention_grads(student_fn: Callable, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(model, inputs, target) -> (attentions, gradients)``, both ``(L, M, N, N)`` (layer, head,
    query, key): the attention of every layer and head, and the gradient of the target class's logit S with
    respect to it, captured by the student (a hook on the attention modules, or ``output_attentions=True`` and
    ``retain_grad()``). Compared with xaikit's capture (:func:`xaikit.text.gradsam.attention_and_gradients`) on
    a tiny seeded BERT, for the predicted class and the other class. Names the usual mistakes: the gradient of
    another output (the other class's logit, the probability, the loss), attention detached before the forward
    pass ended (no gradient, or all zeros), the gradient never kept (``.grad`` read on the attention without
    ``retain_grad()``, which PyTorch warns of and answers with None), and the transposed matrix. Notebook 04,
    section 4c (Barkan et al. 2021's Grad-SAM needs exactly these two tensors)."""
    cases = _capture_cases()
    with warnings.catch_warnings(record=True) as caught:  # the student's call is the only code run in here
        warnings.simplefilter("always")
        result = _run_check("check_attention_grads", student_fn, cases,
                            functools.partial(_grade_attention_grads, caught=caught), False)
    not_retained = _read_unkept_grad(caught)
    for w in caught:  # every other warning reaches the student as it would have without the check
        if _NOT_LEAF_WARNING not in str(w.message):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    raised = next((line for line in result.lines if "your function raised" in line), None)
    if result.mistake == "raised" and raised and (not_retained
                                                  or any(words in raised for words in _DETACHED_ERRORS)):
        result.mistake = None
        result.fail(_NOT_RETAINED if not_retained else _DETACHED, "not_retained" if not_retained else "detached")
        if isinstance(student_fn, ExerciseFunction):
            student_fn._graded(result)
    return _finish(result, verbose)


def _read_unkept_grad(caught: list) -> bool:
    """Whether the student's code read ``.grad`` on a tensor that autograd computed without ``retain_grad()``."""
    return any(_NOT_LEAF_WARNING in str(w.message) for w in caught)


def _stacked(value) -> torch.Tensor | None | str:
    """A student's attention or gradient stack as one float64 CPU tensor; ``"none"`` when it holds a None
    (a gradient that never arrived), ``None`` when it is no tensor at all."""
    if value is None:
        return "none"
    if isinstance(value, list | tuple):
        if any(v is None for v in value):
            return "none"
        if all(isinstance(v, torch.Tensor) for v in value):
            value = torch.stack([v.detach().cpu().reshape(v.shape[-3:]) for v in value])  # (L, M, N, N)
    return _tensor(value)


def _near(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Equal up to float32 rounding, relative to the largest entry (gradients can be small everywhere)."""
    scale = float(want.abs().max())
    return got.shape == want.shape and float((got - want).abs().max()) <= 1e-4 * scale + 1e-9


def _grade_attention_grads(result: CheckResult, answer, label: str, a: torch.Tensor, g: torch.Tensor,
                           alternatives: dict, tokens: list[str], model, caught: list = ()) -> None:
    """One sentence and target: the student's ``(attentions, gradients)`` against the reference ``a``, ``g``.
    ``caught``: the warnings the student's call raised (a ``.grad`` read without ``retain_grad()`` is one)."""
    model.zero_grad(set_to_none=True)  # a student's .backward() leaves gradients on the parameters
    if not isinstance(answer, list | tuple) or len(answer) != 2:
        result.fail(f"{label}: return the pair (attentions, gradients), got {type(answer).__name__}", "shape")
        return
    L, M, N, _ = a.shape
    got_a, got_g = (_stacked(x) for x in answer)
    if isinstance(got_a, str):
        result.fail(f"{label}: the attentions are None: ask the model for them (output_attentions=True) or "
                    "keep them in a hook", "shape")
        return
    got_a = _reshaped(result, got_a, a.shape, label, f"the attentions of {L} layers x {M} heads x {N} x {N} tokens")
    if got_a is None:
        return
    transposed = a.transpose(-1, -2)
    if not _near(got_a, a):
        if _near(got_a, transposed):
            result.fail(f"{label}: your attention is transposed: transformers returns (batch, head, query, key), "
                        "row i holds what token i attends to; keep that order, do not transpose", "transposed")
            return
        (l, m, i, j), gap = _largest_gap(got_a, a)
        result.fail(f"{label}: attention of layer {l} head {m}, query {tokens[i]!r} key {tokens[j]!r}: {gap}")
        return
    result.ok(f"{label}: attention of all {L} layers x {M} heads matches")
    if isinstance(got_g, str) or (got_g is not None and got_g.numel() and float(got_g.abs().max()) == 0.0):
        what = "None" if isinstance(got_g, str) else "all zero"
        if _read_unkept_grad(caught):
            result.fail(f"{label}: your gradients are {what}: {_NOT_RETAINED}", "not_retained")
        else:
            result.fail(f"{label}: your gradients are {what}: {_DETACHED}", "detached")
        return
    got_g = _reshaped(result, got_g, g.shape, label, f"one gradient per attention weight, {tuple(g.shape)}")
    if got_g is None:
        return
    if _near(got_g, g):
        result.ok(f"{label}: dS/dA of all {L} layers x {M} heads matches (S = the logit of the target class)")
        return
    if _near(got_g, g.transpose(-1, -2)):
        result.fail(f"{label}: your gradient is transposed: dS/dA has the attention's shape (query, key), entry "
                    "(i, j) is the derivative by A_ij; do not transpose it", "transposed")
        return
    for what, cand in alternatives.values():
        if _near(got_g, cand):
            result.fail(f"{label}: you differentiate {what}; Grad-SAM differentiates S, the logit of the target "
                        "class you are given (out.logits[0, target]), before any softmax or loss", "wrong_output")
            return
    (l, m, i, j), gap = _largest_gap(got_g, g)
    result.fail(f"{label}: dS/dA of layer {l} head {m}, query {tokens[i]!r} key {tokens[j]!r}: {gap}")
