"""AttnLRP: attention-aware relevance propagation through BERT, in one backward pass.

Achtibat, Hatefi, Dreyer, Jain, Wiegand, Lapuschkin & Samek 2024, "AttnLRP: Attention-Aware Layer-Wise
Relevance Propagation for Transformers", ICML (arXiv 2402.05602). Notebook 06, beside Chefer et al.'s LRP
(:mod:`xaikit.text.lrp`), whose float64 copy of the weights it shares.

The classifier is run again in float64 from its own weights, with each operation replaced by one whose
backward function carries *relevance* instead of gradient; one call to ``backward`` from the explained logit
(its relevance is the logit's value) then leaves every token's relevance in the input embeddings' grad slot.
The rules, as the paper states them:

* **linear layers** (Q, K, V, the projections, the feed-forward layers, pooler, classifier): epsilon-LRP,
  R_j = x_j sum_i w_ij R_i / (z_i + eps sign z_i), z including the bias; the bias keeps b_i R_i / z_i;
* **softmax** (the paper's Prop. 3.1, from its Taylor expansion at the input): R_j = x_j (R_j^out - s_j
  sum_k R_k^out), with x the softmax input (the scaled scores) and s its output; the rest is absorbed;
* **the bilinear products** Q K^T and A V (Prop. 3.3): the uniform rule, each operand half of the epsilon
  relevance of the product, R^a_ik = 1/2 a_ik sum_j b_kj R_ij / y_ij (and likewise for b);
* **LayerNorm** (Prop. 3.4): the identity rule through the normalisation, i.e. the standard deviation held
  as a constant; what is left, w (x - mean) / std + b, is linear and takes the epsilon rule (b keeps its share);
* **elementwise nonlinearities** (GELU, the pooler's tanh): the identity rule, R_in = R_out;
* **the residual additions**: epsilon rule over the two summands.

Where relevance goes: only biases (and the epsilon, and the softmax's expansion remainder) absorb any, so
at every block boundary the relevance leaving a block (at its input) plus what its biases and softmax absorbed
equals the relevance entering it (at its output). :class:`AttnLRPDetail` records both per block.
Chefer et al.'s rules (z+ for linear layers, identity through softmax, the rescaled split of products) are
the ones this module replaces; the two that differ most are the softmax rule and the uniform product rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from xaikit._fn import to_cpu
from xaikit._text_input import PreparedText, Tokenizer, run_text
from xaikit._types import Target
from xaikit.models.passes import record_passes
from xaikit.policies import to_float64
from xaikit.text.lrp import _one_text
from xaikit.text.registry import TextMethod, register
from xaikit.text.tokens import TokenScores

__all__ = ["EPSILON", "AttnLRPDetail", "attnlrp", "attnlrp_relevance"]

#: the epsilon of the epsilon rule (float64; small next to every pre-activation met on the models here).
EPSILON = 1e-9


def _stab(z: torch.Tensor) -> torch.Tensor:
    """z + eps sign(z) (sign 0 counts +)."""
    return z + EPSILON * torch.where(z >= 0, 1.0, -1.0).to(z.dtype)


class _Sink:
    """Relevance absorbed (by biases, epsilon and the softmax remainder) per block, while one backward runs."""

    def __init__(self, n_blocks: int):
        self.absorbed = np.zeros(n_blocks + 2)  # blocks 0..L-1, then the embeddings' LayerNorm (L), the head (L+1)
        self.where = n_blocks + 1

    def add(self, where: int, amount: torch.Tensor) -> None:
        self.absorbed[where] += float(amount)


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, sink, where):
        z = x @ weight.T + bias
        ctx.save_for_backward(x, weight, bias, z)
        ctx.sink, ctx.where = sink, where
        return z

    @staticmethod
    def backward(ctx, r):
        x, weight, bias, z = ctx.saved_tensors
        s = r / _stab(z)
        r_x = x * (s @ weight)
        ctx.sink.add(ctx.where, r.sum() - r_x.sum())
        return r_x, None, None, None, None


class _Add(torch.autograd.Function):
    @staticmethod
    def forward(ctx, u, v, sink, where):
        ctx.save_for_backward(u, v)
        ctx.sink, ctx.where = sink, where
        return u + v

    @staticmethod
    def backward(ctx, r):
        u, v = ctx.saved_tensors
        s = r / _stab(u + v)
        r_u, r_v = u * s, v * s
        ctx.sink.add(ctx.where, r.sum() - r_u.sum() - r_v.sum())
        return r_u, r_v, None, None


class _MatMul(torch.autograd.Function):
    """y = scale * a @ b with the uniform rule: each operand half of the epsilon relevance."""

    @staticmethod
    def forward(ctx, a, b, scale, sink, where):
        y = scale * (a @ b)
        ctx.save_for_backward(a, b, y)
        ctx.scale, ctx.sink, ctx.where = scale, sink, where
        return y

    @staticmethod
    def backward(ctx, r):
        a, b, y = ctx.saved_tensors
        s = ctx.scale * r / _stab(y)
        r_a = 0.5 * a * (s @ b.transpose(-1, -2))
        r_b = 0.5 * b * (a.transpose(-1, -2) @ s)
        ctx.sink.add(ctx.where, r.sum() - r_a.sum() - r_b.sum())
        return r_a, r_b, None, None, None


class _Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, sink, where):
        s = torch.softmax(x, dim=-1)
        ctx.save_for_backward(x, s)
        ctx.sink, ctx.where = sink, where
        return s

    @staticmethod
    def backward(ctx, r):
        x, s = ctx.saved_tensors
        r_x = x * (r - s * r.sum(-1, keepdim=True))
        ctx.sink.add(ctx.where, r.sum() - r_x.sum())
        return r_x, None, None


class _Identity(torch.autograd.Function):
    """An elementwise nonlinearity f with the identity rule: R_in = R_out."""

    @staticmethod
    def forward(ctx, x, fn):
        return fn(x)

    @staticmethod
    def backward(ctx, r):
        return r, None


class _LayerNorm(torch.autograd.Function):
    """w (x - mean) / std + b with std held constant: a linear map of x plus the bias b, epsilon rule."""

    @staticmethod
    def forward(ctx, x, params, sink, where):
        weight, bias, eps = params
        y = torch.nn.functional.layer_norm(x, x.shape[-1:], weight, bias, eps)
        std = torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps)
        ctx.save_for_backward(x, y, weight, bias, std)
        ctx.sink, ctx.where = sink, where
        return y

    @staticmethod
    def backward(ctx, r):
        x, y, weight, bias, std = ctx.saved_tensors
        s = r / _stab(y) * weight / std  # relevance over z, through the affine weight and 1/std
        r_x = x * (s - s.mean(-1, keepdim=True))  # the centring's transpose: (I - 1/N) is symmetric
        ctx.sink.add(ctx.where, r.sum() - r_x.sum())
        return r_x, None, None, None


@dataclass
class AttnLRPDetail:
    """What :func:`attnlrp` computed besides the scores (float64, on the CPU).

    Attributes:
        logit: the explained logit's value, the relevance the backward pass starts from.
        input_relevance: ``(N, D)`` relevance of the input embeddings (word + position + type).
        block_out: ``(L,)`` total relevance at each block's output (entering it, from above).
        block_in: ``(L,)`` total relevance at each block's input (leaving it, downwards).
        absorbed: ``(L + 2,)`` relevance kept by biases, epsilon and the softmax remainder: per block, then
            the embeddings' LayerNorm, then the head (pooler and classifier).
    """

    logit: float
    input_relevance: np.ndarray
    block_out: np.ndarray
    block_in: np.ndarray
    absorbed: np.ndarray

    @property
    def block_errors(self) -> np.ndarray:
        """Per block, |R_out - (R_in + absorbed)| / |R_out|: zero where relevance is conserved."""
        gap = self.block_out - (self.block_in + self.absorbed[: len(self.block_out)])
        return np.abs(gap) / np.maximum(np.abs(self.block_out), 1e-300)

    @property
    def conservation_error(self) -> float:
        """The largest relative block-boundary error, and the logit against input relevance plus absorbed."""
        total = float(self.input_relevance.sum()) + float(self.absorbed.sum())
        whole = abs(self.logit - total) / max(abs(self.logit), 1e-300)
        return float(max(whole, self.block_errors.max(initial=0.0)))


def attnlrp_relevance(model, inputs: dict, target: int) -> tuple[np.ndarray, AttnLRPDetail]:
    """Token relevance ``(N,)`` of the ``target`` logit by AttnLRP, and its :class:`AttnLRPDetail`.

    ``inputs``: ``input_ids`` ``(1, N)`` of one text without padding (and ``token_type_ids``).
    """
    device, p, ids, types = _one_text(model, inputs)
    n = ids.shape[0]
    n_blocks = len(p["blocks"])
    sink = _Sink(n_blocks)
    m = p["heads"]
    with torch.enable_grad():
        words = to_float64(p["word"][ids.to(p["word"].device)].detach()).requires_grad_(True)
        position = p["position"][torch.arange(n, device=device)]
        kind = p["type"][types]
        x0 = words + position + kind
        x0.retain_grad()
        x = _LayerNorm.apply(x0, p["ln0"], sink, n_blocks)
        d = x.shape[-1] // m
        scale = 1.0 / math.sqrt(d)
        ins, outs = [], []
        for i, b in enumerate(p["blocks"]):
            x.retain_grad()
            ins.append(x)

            def heads(t):
                return t.reshape(n, m, d).transpose(0, 1)

            q, k, v = (heads(_Linear.apply(x, b[name][0], b[name][1], sink, i)) for name in ("q", "k", "v"))
            scores = _MatMul.apply(q, k.transpose(-1, -2), scale, sink, i)
            probs = _Softmax.apply(scores, sink, i)
            context = _MatMul.apply(probs, v, 1.0, sink, i).transpose(0, 1).reshape(n, m * d)
            attn = _Linear.apply(context, b["o"][0], b["o"][1], sink, i)
            h = _LayerNorm.apply(_Add.apply(attn, x, sink, i), b["ln1"], sink, i)
            inter = _Identity.apply(_Linear.apply(h, b["f1"][0], b["f1"][1], sink, i), b["act"])
            ffn = _Linear.apply(inter, b["f2"][0], b["f2"][1], sink, i)
            x = _LayerNorm.apply(_Add.apply(ffn, h, sink, i), b["ln2"], sink, i)
            x.retain_grad()
            outs.append(x)
        head = n_blocks + 1
        pooled = _Identity.apply(_Linear.apply(x[0], p["pool"][0], p["pool"][1], sink, head), torch.tanh)
        logits = _Linear.apply(pooled, p["cls"][0], p["cls"][1], sink, head)
        logit = logits[target]
        logit.backward(logit.detach().clone())  # the logit's value is the relevance at the top
    record_passes(model, forward=1, backward=1)  # on a float64 copy: no block hook sees them
    r_words = words.grad
    if r_words is None:
        raise RuntimeError("AttnLRP's backward pass reached no input relevance")
    # the input relevance of a token: its embedding sum's relevance (word, position and type share it)
    r_in = x0.grad.detach()
    detail = AttnLRPDetail(
        logit=float(logit.detach()),
        input_relevance=to_cpu(r_in).numpy(),
        block_out=np.array([float(o.grad.sum()) for o in outs]),
        block_in=np.array([float(t.grad.sum()) for t in ins]),
        absorbed=sink.absorbed.copy())
    return to_cpu(r_in.sum(-1)).numpy(), detail


def attnlrp(model: torch.nn.Module, tokenizer: Tokenizer, text: str, *, target: Target = None) -> TokenScores:
    """AttnLRP (Achtibat et al., ICML 2024) of one text: each token's relevance for the ``target`` logit,
    from one backward pass with the paper's rules (module docstring). Notebook 06.

    Args:
        model: a BERT sequence classifier (``model_type`` ``"bert"``, with a pooler); an SDPA model is switched
            to eager attention with a warning, like every text method.
        tokenizer: its tokenizer.
        text: one sentence; longer than the model takes, it is cut to its first words (one warning).
        target: the class whose logit is explained; ``None``: the predicted class.

    Returns:
        :class:`~xaikit.text.tokens.TokenScores` (signed: relevance for and against the class), detail
        :class:`AttnLRPDetail`.
    """
    return run_text(_attnlrp, model, tokenizer, text, target, method="attnlrp", heavy=True)


def _attnlrp(prepared: PreparedText) -> TokenScores:
    """:func:`attnlrp` of a prepared text (its target resolved)."""
    scores, detail = attnlrp_relevance(prepared.model, prepared.inputs, int(prepared.target))
    return TokenScores(prepared.tokens, torch.from_numpy(scores), "AttnLRP", int(prepared.target), signed=True,
                       detail=detail)


register(TextMethod("AttnLRP", _attnlrp, signed=True, order=9, heavy=True))  # float64 re-run: worth the idle cores
