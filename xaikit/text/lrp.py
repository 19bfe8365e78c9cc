"""Relevance propagation through BERT's blocks, and Chefer et al.'s attention relevance view built on it.

Chefer, Gur & Wolf 2021, "Transformer Interpretability Beyond Attention Visualization", CVPR. The lecture on
attention-based explainability (seeds/003, "Aggregating over Layers", lines 176-186) lists it as the
"Transformer Attention" aggregation: per block b, with R^{A_b} the LRP relevance of the attention
probabilities and nabla A_b the gradient of the explained logit with respect to them,

    Abar_b = I + mean_h ( nabla A_b o R^{A_b} )^+ ,        C = Abar_L ... Abar_2 Abar_1 ,

and the scores are C's [CLS] row. Used by notebook 06, sections 1 (one more view of a sentence) and 2-6 (one
more ranking of the faithfulness lab).

**How the relevance is computed.** :func:`relevance_forward` runs the classifier again from its own weights
in float64 with plain tensor operations (embeddings, and per block: Q, K, V, the two attention matmuls,
softmax, the output projection, the residual adds, LayerNorm, the feed-forward network; then BERT's pooler
and the classifier), keeping every intermediate that relevance propagation needs. :func:`propagate` then
sends relevance from the explained logit (one-hot, total 1) down to the input of block 0, with the paper's
rules:

* **linear layers** (Q, K, V, the projections, the feed-forward layers, pooler and classifier): the
  z+ rule, LRP-alpha1-beta0 as the paper's code applies it, R_j = sum_i (x_j^+ w_ij^+ + x_j^- w_ij^-) / z_i^+ R_i
  with z_i^+ the sum over j of the same terms. The bias takes no relevance, so the rule conserves relevance
  exactly wherever z_i^+ > 0 (a row with z_i^+ = 0 passes nothing on). :func:`lrp_linear` also has the
  LRP-0 rule (``rule="0"``), x_j w_ij / z_i, for the ReLU-network check in the tests;
* **two-operand operations** (the residual adds u + v, the matmuls Q K^T and A V): each operand gets the
  "non-parametric" relevance of the paper's eq. 5-6, R^u_j = u_j sum_i (dy_i/du_j) R_i / y_i, and the two
  are then rescaled as in eq. 7-8 so that together they carry exactly the relevance that came in, in the
  ratio of the magnitudes of their sums;
* **LayerNorm, GELU, softmax, the pooler's tanh** and the 1/sqrt(d) scaling: relevance passes through
  unchanged, element by element, as in the paper's implementation.

The rules themselves know no architecture and live in :mod:`xaikit._lrp` (shared with the ViT's version,
:mod:`xaikit.image.lrp`, notebook 07 section 4); this module re-exports them.

So the relevance entering a block equals the relevance leaving it, up to rows with z^+ = 0 (none were met
on the models here); :class:`LRPDetail` records the totals at every block boundary, and the tests hold them
to 1e-10 relative. What biases and normalisation absorb under other rules is simply not assigned here.

The gradient nabla A is the derivative of the explained class's logit, taken by autograd through the same
float64 forward. As in the paper's code, the [CLS] entry of the row (its relevance to itself, dominated by
the identity) is set to the row's smallest value before the scores are returned; ``detail.matrix`` keeps C
as computed.

One difference from that code: the paper's BERT code (``BERT_explainability/.../ExplanationGenerator.py``,
``compute_rollout_attention``) also divides each I + mean_h(...) by its row sums before multiplying; its
ViT code and the paper's eq. 13-14 do not, and neither does :func:`chefer_matrix`. The mean term is small
next to I here (about 1e-4 per entry of the [CLS] row on the embedded model), so the order of the words
is the same either way (Kendall tau 1.0 on 20 held-out sentences); the values differ.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np
import torch

from xaikit._fn import model_device, to_cpu
from xaikit._lrp import (
    LINEAR_RULES,
    LRPDetail,
    chefer_matrix,
    lrp_add,
    lrp_linear,
    lrp_matmul,
    propagate_blocks,
)
from xaikit._text_input import PreparedText, Tokenizer, run_text
from xaikit._types import Target
from xaikit.models.passes import record_passes
from xaikit.policies import float64_device, to_float64
from xaikit.text.registry import TextMethod, register
from xaikit.text.tokens import TokenScores

__all__ = ["LINEAR_RULES", "lrp_linear", "lrp_add", "lrp_matmul", "BertTrace", "relevance_forward", "propagate",
           "chefer_matrix", "chefer_lrp"]
# the rules (lrp_linear, lrp_add, lrp_matmul) and chefer_matrix know no architecture: they live in xaikit._lrp,
# shared with the ViT's re-run (xaikit.image.lrp), and are re-exported here


# ----------------------------------------------------------------------------------------------- the forward
@dataclass
class _Block:
    """What one block's forward kept (float64, no batch dimension; M heads, N tokens, D = M * d)."""

    x: torch.Tensor  # (N, D) the block's input
    q: torch.Tensor  # (M, N, d)
    k: torch.Tensor  # (M, N, d)
    v: torch.Tensor  # (M, N, d)
    probs: torch.Tensor  # (M, N, N) attention A, with grad for nabla A
    context: torch.Tensor  # (N, D) A V, heads concatenated
    attn_out: torch.Tensor  # (N, D) the output projection of the context
    h: torch.Tensor  # (N, D) LayerNorm(attn_out + x)
    inter: torch.Tensor  # (N, F) the activation (GELU) of the first feed-forward layer
    ffn_out: torch.Tensor  # (N, D)
    out: torch.Tensor  # (N, D) LayerNorm(ffn_out + h), the next block's input


@dataclass
class BertTrace:
    """The float64 re-run of a BERT classifier on one text (:func:`relevance_forward`).

    ``blocks``: per encoder block, its kept intermediates; ``pooled``: the pooler's output (D,);
    ``logits``: (C,), still attached to the graph (for nabla A).
    """

    blocks: list[_Block]
    cls: torch.Tensor  # (D,) the last block's [CLS] vector, the pooler's input
    pooled: torch.Tensor  # (D,)
    logits: torch.Tensor  # (C,)
    scale: float
    weights: dict

    @property
    def attentions(self) -> torch.Tensor:
        """``(L, M, N, N)`` attention probabilities, detached."""
        return torch.stack([b.probs.detach() for b in self.blocks])


def _check_bert(model) -> None:
    """chefer_lrp re-implements BERT's layers: refuse another architecture with the names and the fix."""
    from xaikit.models.arch import base_model

    config = model.config
    base = base_model(model)
    kind = getattr(config, "model_type", None)
    fix = ("chefer_lrp re-implements BertForSequenceClassification's layers; use a BERT classifier, e.g. "
           "xaikit.models.load_sentiment() or xaikit.models.tiny_bert()")
    if kind != "bert" or getattr(base, "pooler", None) is None or not hasattr(model, "classifier"):
        raise ValueError(f"model is a {type(model).__name__} (model_type {kind!r}, pooler "
                         f"{'present' if getattr(base, 'pooler', None) is not None else 'missing'}); {fix}")
    position = getattr(config, "position_embedding_type", "absolute") or "absolute"
    if position != "absolute":
        raise ValueError(f"model uses position_embedding_type={position!r}; {fix} with absolute positions")


#: per model, its float64 weights for the re-run, with the key they were made for (weak references: a model
#: that is deleted takes its copy with it). Listed in :mod:`xaikit.policies`.
_WEIGHTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _weights(model) -> dict:
    """Every parameter the re-run needs, as float64 tensors on the model's device (on the CPU if that device
    holds no float64: :func:`xaikit.policies.float64_device`); linear layers as ``(W, b, W^+, W^-)``. The
    word embedding stays as it is (only the text's rows are cast).

    Made once per model and kept while every parameter is the same tensor at the same version (an in-place
    change, ``load_state_dict`` or ``.to()`` makes a new copy): casting and splitting the weights took
    about half of each call.
    """
    key = (float64_device(model_device(model)),
           tuple((p.data_ptr(), p._version, p.dtype, p.device) for p in model.parameters()))
    kept = _WEIGHTS.get(model)
    if kept is not None and kept[0] == key:
        return kept[1]
    weights = _make_weights(model)
    _WEIGHTS[model] = (key, weights)
    return weights


def _make_weights(model) -> dict:
    from xaikit.models.arch import base_model

    def w(t):
        return to_float64(t.detach())

    def linear(module):
        weight = w(module.weight)
        return weight, w(module.bias), weight.clamp(min=0), weight.clamp(max=0)

    base = base_model(model)
    emb = base.embeddings
    blocks = []
    for layer in base.encoder.layer:
        sa, so = layer.attention.self, layer.attention.output
        blocks.append({
            "q": linear(sa.query), "k": linear(sa.key), "v": linear(sa.value), "o": linear(so.dense),
            "ln1": (w(so.LayerNorm.weight), w(so.LayerNorm.bias), so.LayerNorm.eps),
            "f1": linear(layer.intermediate.dense), "act": layer.intermediate.intermediate_act_fn,
            "f2": linear(layer.output.dense),
            "ln2": (w(layer.output.LayerNorm.weight), w(layer.output.LayerNorm.bias), layer.output.LayerNorm.eps),
        })
    return {
        "word": emb.word_embeddings.weight, "position": w(emb.position_embeddings.weight),
        "type": w(emb.token_type_embeddings.weight),
        "ln0": (w(emb.LayerNorm.weight), w(emb.LayerNorm.bias), emb.LayerNorm.eps),
        "blocks": blocks, "pool": linear(base.pooler.dense), "cls": linear(model.classifier),
        "heads": int(model.config.num_attention_heads),
    }


def _layer_norm(x, params):
    weight, bias, eps = params
    return torch.nn.functional.layer_norm(x, x.shape[-1:], weight, bias, eps)


def _one_text(model, inputs: dict):
    """What a float64 re-run of ``model`` needs from ``inputs`` (one text, no padding): the device it runs on,
    the weights (:func:`_weights`), the token ids ``(N,)`` and token types ``(N,)`` on that device."""
    _check_bert(model)
    device = float64_device(model_device(model))
    p = _weights(model)
    ids = inputs["input_ids"].to(device)
    if ids.ndim != 2 or ids.shape[0] != 1:
        raise ValueError(f"inputs['input_ids'] must hold one text, shape (1, N), got {tuple(ids.shape)}")
    mask = inputs.get("attention_mask")
    if mask is not None and not bool((mask != 0).all()):
        raise ValueError("inputs hold padding (attention_mask has zeros); pass one text tokenized without padding")
    ids = ids[0]
    types = inputs.get("token_type_ids")
    types = torch.zeros_like(ids) if types is None else types.to(device)[0]
    return device, p, ids, types


def relevance_forward(model, inputs: dict) -> BertTrace:
    """Re-run the BERT classifier ``model`` on one tokenized text from its own weights, in float64, keeping
    what :func:`propagate` needs. ``inputs``: ``input_ids`` ``(1, N)`` (and ``token_type_ids``); a single text
    without padding. Its logits and attention equal the model's own (the tests hold them to 1e-9 against the
    model in float64). Notebook 06, section 1. Runs on the model's device, or on the CPU where that device
    holds no float64 (Apple's MPS; :func:`xaikit.policies.float64_device`).
    """
    device, p, ids, types = _one_text(model, inputs)
    n = ids.shape[0]
    words = to_float64(p["word"][ids.to(p["word"].device)].detach())  # the text's rows, cast where they may be
    x = words + p["position"][torch.arange(n, device=device)] + p["type"][types]
    x = _layer_norm(x, p["ln0"])
    if torch.is_grad_enabled():  # the weights are detached copies: start the graph here, for nabla A
        x = x.requires_grad_(True)
    m = p["heads"]
    d = x.shape[-1] // m
    scale = 1.0 / math.sqrt(d)
    blocks = []
    for b in p["blocks"]:
        def heads(t):
            return t.view(n, m, d).transpose(0, 1)  # (M, N, d)

        q, k, v = (heads(torch.nn.functional.linear(x, *b[name][:2])) for name in ("q", "k", "v"))
        probs = torch.softmax(scale * (q @ k.transpose(-1, -2)), dim=-1)  # (M, N, N)
        context = (probs @ v).transpose(0, 1).reshape(n, m * d)  # (N, D)
        attn_out = torch.nn.functional.linear(context, *b["o"][:2])
        h = _layer_norm(attn_out + x, b["ln1"])
        inter = b["act"](torch.nn.functional.linear(h, *b["f1"][:2]))
        ffn_out = torch.nn.functional.linear(inter, *b["f2"][:2])
        out = _layer_norm(ffn_out + h, b["ln2"])
        blocks.append(_Block(x, q, k, v, probs, context, attn_out, h, inter, ffn_out, out))
        x = out
    cls = x[0]
    pooled = torch.tanh(torch.nn.functional.linear(cls, *p["pool"][:2]))
    logits = torch.nn.functional.linear(pooled, *p["cls"][:2])
    return BertTrace(blocks, cls, pooled, logits, scale, p)


# ------------------------------------------------------------------------------------------ the propagation
def propagate(trace: BertTrace, target: int) -> tuple[list[torch.Tensor], torch.Tensor, np.ndarray]:
    """Relevance from the logit of ``target`` (one-hot, total 1) down to block 0's input.

    Returns the relevance of each block's attention probabilities ``R^{A_b}`` ``(M, N, N)`` (in block order),
    the relevance of block 0's input ``(N, D)``, and the total relevance at every boundary ``(L + 2,)``: at the
    logits, then at the output of block L-1, L-2, ..., 0, then at block 0's input, in float64.
    """
    p = trace.weights
    with torch.no_grad():
        r = torch.zeros_like(trace.logits)
        r[target] = 1.0
        totals = [float(r.sum())]
        r = lrp_linear(trace.pooled.detach(), p["cls"][0], r, parts=p["cls"][2:])  # classifier
        # the pooler's tanh: identity; then its dense layer
        r = lrp_linear(trace.cls.detach(), p["pool"][0], r, parts=p["pool"][2:])
        blk = trace.blocks[-1]
        r_out = torch.zeros_like(blk.out)
        r_out[0] = r  # only [CLS] reaches the pooler
        r_attention, r_in, below = propagate_blocks(trace.blocks, p["blocks"], r_out, _block_relevance,
                                                    trace.scale, p["heads"])
    return r_attention, r_in, np.array(totals + below)


def _block_relevance(blk: _Block, b: dict, r_out: torch.Tensor, scale: float, m: int):
    """One block, top to bottom: (relevance of its input (N, D), relevance of its attention (M, N, N))."""
    n, dim = blk.x.shape
    d = dim // m
    det = {k: getattr(blk, k).detach() for k in ("x", "q", "k", "v", "probs", "context", "attn_out", "h",
                                                   "inter", "ffn_out")}
    # LayerNorm 2: identity; the residual add ffn_out + h
    r_ffn, r_h = lrp_add(det["ffn_out"], det["h"], r_out)
    r_inter = lrp_linear(det["inter"], b["f2"][0], r_ffn, parts=b["f2"][2:])  # second feed-forward layer
    # GELU: identity; the first feed-forward layer; h feeds both branches, so their relevance adds up
    r_h = r_h + lrp_linear(det["h"], b["f1"][0], r_inter, parts=b["f1"][2:])
    # LayerNorm 1: identity; the residual add attn_out + x
    r_attn, r_x = lrp_add(det["attn_out"], det["x"], r_h)
    r_context = lrp_linear(det["context"], b["o"][0], r_attn, parts=b["o"][2:])
    r_context = r_context.view(n, m, d).transpose(0, 1)  # (M, N, d)
    r_probs, r_v = lrp_matmul(det["probs"], det["v"], r_context)  # context = A V
    # softmax: identity; scores = scale * Q K^T
    r_q, r_kt = lrp_matmul(det["q"], det["k"].transpose(-1, -2), r_probs, scale=scale)
    r_k = r_kt.transpose(-1, -2)

    def merged(t):
        return t.transpose(0, 1).reshape(n, dim)

    x = det["x"]
    for name, r in (("q", r_q), ("k", r_k), ("v", r_v)):  # x feeds Q, K, V and the residual branch
        r_x = r_x + lrp_linear(x, b[name][0], merged(r), parts=b[name][2:])
    return r_x, r_probs


def chefer_lrp(model: torch.nn.Module, tokenizer: Tokenizer, text: str, *,
               target: Target = None) -> TokenScores:
    """Chefer, Gur & Wolf's relevance view (CVPR 2021) of one text: the [CLS] row of
    C = prod_b (I + mean_h (nabla A_b o R^{A_b})^+). Notebook 06, sections 1-6.

    Args:
        model: a BERT sequence classifier (``model_type`` ``"bert"``, with a pooler); an SDPA model is switched
            to eager attention with a warning, like every text method (the re-run does not need it).
        tokenizer: its tokenizer.
        text: one sentence; longer than the model takes, it is cut to its first words (one warning).
        target: the class whose logit is explained; ``None``: the predicted class.

    Returns:
        :class:`~xaikit.text.tokens.TokenScores` (non-negative, ``signed=False``), detail :class:`LRPDetail`.
        Computed in float64 on the model's device (on the CPU where that device holds no float64, e.g. Apple's
        MPS: :func:`xaikit.policies.float64_device`), returned on the CPU.
    """
    return run_text(_chefer_lrp, model, tokenizer, text, target, method="chefer_lrp", heavy=True)


def _chefer_lrp(prepared: PreparedText) -> TokenScores:
    """:func:`chefer_lrp` of a prepared text (its target resolved) of a BERT model."""
    model, target = prepared.model, int(prepared.target)
    _check_bert(model)
    with torch.enable_grad():
        trace = relevance_forward(model, prepared.inputs)
        grads = torch.autograd.grad(trace.logits[target], [b.probs for b in trace.blocks])
    r_a, r_in, totals = propagate(trace, target)
    # a float64 copy's forward pass, autograd's backward and the relevance sweep: no block hook sees them
    record_passes(model, forward=1, backward=2)
    g = torch.stack([t.detach() for t in grads])
    r_a = torch.stack(r_a)
    c = chefer_matrix(r_a, g)
    row = c[0].clone()
    row[0] = row.min()  # the paper's code: [CLS]'s relevance to itself is the identity's, not a token's
    detail = LRPDetail(to_cpu(c).numpy(), to_cpu(r_a).numpy(), to_cpu(g).numpy(), to_cpu(r_in.sum(-1)).numpy(),
                       totals, to_cpu(trace.logits).numpy())
    return TokenScores(prepared.tokens, to_cpu(row), "Chefer LRP", target, signed=False, detail=detail)


register(TextMethod("Chefer LRP", _chefer_lrp, order=8, heavy=True))  # float64 re-run: worth the idle cores
