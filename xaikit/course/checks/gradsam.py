"""Checks of notebook 04: Grad-SAM (``check_gradsam``, Barkan et al. 2021), the [CLS] row's share of it
(``check_cls_share``) and the homework's two attention heads (``check_head_plots``), with the references an
exercise falls back to while it is a stub. The skeleton they share is
:func:`xaikit.course.checks._core._run_check`.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from xaikit.course.checks._core import CheckResult, _close, _largest_gap, _own, _reshaped, _run_check, _tensor

__all__ = ["check_gradsam", "check_cls_share", "check_head_plots"]


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


def check_gradsam(student_fn, verbose: bool = True) -> CheckResult:
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


def check_cls_share(student_fn, verbose: bool = True) -> CheckResult:
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


def check_head_plots(student_fn, verbose: bool = True) -> CheckResult:
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
