"""Grad-SAM: gradient-weighted self-attention token scores (Barkan et al. 2021, "Grad-SAM: Explaining
Transformers via Gradient Self-Attention Maps", CIKM). Used by notebook 04, sections 3 and 5.

For a text x with N tokens, a model with L encoder layers of M heads, and S the logit of the explained
class, the score of token i is

    r_i = 1/(L M N) * sum_l sum_m sum_j [ A^{lm} o ReLU(dS/dA^{lm}) ]_{ij}

where A^{lm} (N x N) is the attention of head m in layer l, ``o`` is the elementwise (Hadamard) product
and the inner sum runs along row i (token i as the *query*). A token scores high when it attends to
other tokens *and* the prediction would grow if that attention grew.

Convention note. The paper writes A = softmax((W_q U)^T (W_k U) / sqrt(d)) with tokens as the *columns*
of U, i.e. Q^T K; Vaswani et al. and BERT write softmax(Q K^T / sqrt(d_k)) with tokens as rows. Both give
the same (N x N) matrix whose row i holds query token i's weights over the keys, and that row is what we
sum over. transformers returns exactly this matrix, shape (batch, heads, query, key).

``gradsam_scores`` is the vectorised form; ``gradsam_loop`` is the plain triple loop, the readable reference
that the tests hold the vectorised form to (1e-6).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from xaikit._fn import computing, inputs_to_model, to_cpu
from xaikit._text_input import PreparedText, Tokenizer, resolve_inputs_target, run_text
from xaikit._types import Target
from xaikit._validate import bool_flags
from xaikit.models.arch import assert_attentions
from xaikit.text.registry import TextMethod, register
from xaikit.text.tokens import TokenScores


@dataclass
class GradSAMDetail:
    """What :func:`gradsam` computed besides the scores, as NumPy arrays on the CPU.

    Attributes:
        attentions, gradients: ``A`` and ``dS/dA``, ``(L, M, N, N)`` (layer, head, query, key).
        per_layer: ``(L, N)``, each layer's share of the score (sums to the scores over layers).
        logits, probs: the model's output on the text, ``(C,)`` each.
    """

    attentions: np.ndarray
    gradients: np.ndarray
    per_layer: np.ndarray
    logits: np.ndarray
    probs: np.ndarray

__all__ = ["GradSAMDetail", "gradsam", "gradsam_scores", "gradsam_loop", "attention_and_gradients"]


def attention_and_gradients(model: torch.nn.Module, inputs: dict, *,
                            target: Target = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One forward and one backward pass: attention A, its gradient dS/dA, and the logits.

    ``target=None`` explains the predicted class. Returns ``A`` and ``G`` of shape ``(L, M, N, N)`` (layer,
    head, query, key) for the first text of the batch, and the logits ``(C,)``, all on the CPU whatever
    device the model is on (``inputs`` are moved to the model's device first). Gradients are taken with
    ``torch.autograd.grad``, so the model's own ``.grad`` fields are left alone. Notebook 04, section 3.
    """
    with computing(model):  # the entry: float32 and the thread policy for the call
        target = resolve_inputs_target(model, inputs, target)
        a, g, logits = _attention_and_gradients(model, inputs, target)
    return to_cpu(a), to_cpu(g), to_cpu(logits)


def _attention_and_gradients(model, inputs: dict, target: int):
    """:func:`attention_and_gradients` with the tensors left on the model's device, for a resolved ``target``."""
    inputs = inputs_to_model(model, inputs)
    out = model(**inputs, output_attentions=True)
    attentions = assert_attentions(out.attentions, model)  # L x (B, M, N, N)
    score = out.logits[0, target]  # S: the explained class's logit
    grads = torch.autograd.grad(score, attentions, allow_unused=True)
    if any(g is None for g in grads):
        missing = [i for i, g in enumerate(grads) if g is None]
        raise RuntimeError(f"the prediction does not depend on the returned attention of layers {missing}; "
                           "the model computes attention in a way xaikit cannot differentiate (use eager attention)")
    a = torch.stack([t[0] for t in attentions]).detach()  # (L, M, N, N)
    g = torch.stack([t[0] for t in grads]).detach()  # (L, M, N, N)
    return a, g, out.logits[0].detach()


def gradsam_scores(attentions: torch.Tensor, gradients: torch.Tensor) -> torch.Tensor:
    """Vectorised Grad-SAM: ``(L, M, N, N)`` attention and gradient -> ``(N,)`` token scores."""
    L, M, N, _ = attentions.shape
    h = attentions * torch.relu(gradients)  # H^{lm} = A^{lm} o ReLU(G^{lm}), (L, M, N, N)
    return h.sum(dim=(0, 1, 3)) / (L * M * N)  # sum over layers, heads and the row (keys j)


def gradsam_loop(attentions: torch.Tensor, gradients: torch.Tensor) -> torch.Tensor:
    """The same sum written as the lecture's loops over layers, heads, query rows and key columns.

    The loops read the numbers on the CPU (one element at a time from a GPU would be slow); the scores come
    back on the device and in the dtype of ``attentions``, like :func:`gradsam_scores`'s.
    """
    where, dtype = attentions.device, attentions.dtype
    attentions, gradients = attentions.detach().cpu(), gradients.detach().cpu()
    L, M, N, _ = attentions.shape
    r = torch.zeros(N, dtype=torch.float64)
    for l in range(L):
        for m in range(M):
            for i in range(N):
                total = 0.0
                for j in range(N):
                    g = float(gradients[l, m, i, j])
                    total += float(attentions[l, m, i, j]) * (g if g > 0 else 0.0)
                r[i] += total
    return (r / (L * M * N)).to(device=where, dtype=dtype)


@bool_flags
def gradsam(model: torch.nn.Module, tokenizer: Tokenizer, text: str, *, target: Target = None,
            reference: bool = False) -> TokenScores:
    """Grad-SAM token scores of one text (Barkan et al. 2021; notebook 04 section 3).

    Args:
        model: a BERT-family sequence classifier; SDPA models are switched to eager attention (warning).
        tokenizer: its tokenizer.
        text: one sentence. Longer than the model's limit: truncated, with a warning.
        target: the class whose logit S is explained; ``None`` = the predicted class.
        reference: use the plain loop instead of the vectorised sum (slow; for checking).

    Returns:
        :class:`~xaikit.text.tokens.TokenScores` (non-negative, ``signed=False``) whose ``detail`` is a
        :class:`GradSAMDetail`. The scores are computed on the model's device in its dtype.
    """
    return run_text(_gradsam, model, tokenizer, text, target, method="gradsam", reference=reference)


def _gradsam(prepared: PreparedText, *, reference: bool = False) -> TokenScores:
    """:func:`gradsam` of a prepared text (its target resolved)."""
    a, g, logits = _attention_and_gradients(prepared.model, prepared.inputs, prepared.target)  # one forward, one backward
    r = gradsam_loop(a, g) if reference else gradsam_scores(a, g)
    L, M, N, _ = a.shape
    per_layer = (a * torch.relu(g)).sum(dim=(1, 3)) / (L * M * N)  # (L, N), sums to r over layers
    detail = GradSAMDetail(to_cpu(a).numpy(), to_cpu(g).numpy(), to_cpu(per_layer).numpy(), to_cpu(logits).numpy(),
                           to_cpu(torch.softmax(logits, -1)).numpy())
    return TokenScores(prepared.tokens, to_cpu(r), "Grad-SAM", prepared.target, signed=False, detail=detail)


register(TextMethod("Grad-SAM", _gradsam, lambda a, g, layer: gradsam_scores(a, g), order=0))
