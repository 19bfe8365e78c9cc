"""Chefer et al.'s LRP-based relevance for a Vision Transformer (notebook 07, section 4).

Chefer, Gur & Wolf 2021, "Transformer Interpretability Beyond Attention Visualization", CVPR: the method
of their Table 1 (ViT-B on ImageNet, positive/negative perturbation). Per block b, with R^{A_b} the LRP
relevance of the attention probabilities and nabla A_b the gradient of the explained logit with respect to
them (eq. 13-14),

    Abar_b = I + mean_h ( nabla A_b o R^{A_b} )^+ ,        C = Abar_L ... Abar_2 Abar_1 ,

and the map is C's [CLS] row over the patch tokens, laid out on the (grid, grid) patch grid. The lecture on
attention-based explainability (seeds/003, "Aggregating over Layers") lists it as the "Transformer
Attention" aggregation; :mod:`xaikit.text.lrp` is the same method for BERT (notebook 06).

**How it is computed.** :func:`relevance_forward` runs a ``ViTForImageClassification`` again from its own
weights, in float64, with plain tensor operations, keeping every intermediate the propagation needs: the
patch embedding (the convolution with kernel = stride = patch size, written as one linear layer over each
patch's pixels), the [CLS] token, the position embeddings, and per block: LayerNorm, Q, K, V, softmax
attention, the output projection, the residual add, LayerNorm, the MLP (linear, GELU, linear), the residual
add; then the final LayerNorm and the classifier on [CLS]. Its logits equal the model's own (the tests hold
them to 1e-5 relative against the float32 model, 1e-10 against a float64 copy). The attention
implementation the model was loaded with (eager or SDPA) does not matter: the re-run computes the attention
itself.

:func:`propagate` sends relevance from the explained logit (one-hot, total 1) down to the input of block 0
with the rules of :mod:`xaikit._lrp` (shared with the BERT version): the z+ rule (LRP-alpha1-beta0) for
every linear layer (Q, K, V, the output projection, both MLP layers, the classifier), the non-parametric
rule with the rescaling of eq. 5-8 for the two residual adds and the two attention matmuls (Q K^T and A V),
and relevance passed through unchanged by LayerNorm, GELU, the softmax and the 1/sqrt(d) scale; a token
that feeds both the attention branch and the residual (and Q, K and V) gets the sum of their relevances.
The z+ rule conserves relevance wherever its denominator is positive, and the rescaling conserves it by
construction, so the total relevance is the same at every block boundary up to rounding:
:class:`ViTLRP` records it (``totals``) and the tests hold it to 1e-10 relative, on a tiny random ViT and on
the embedded ones. nabla A_b is the derivative of the explained logit, by autograd through the same float64
forward.

**Against the authors' released code** (``Transformer-Explainability``, ``baselines/ViT/ViT_LRP.py`` with
``ViT_explanation_generator.py``, the ``transformer_attribution`` method): the same rules, in the same
order, and the same aggregation (their ``compute_rollout_attention`` adds I and multiplies without
normalising rows; the map is the [CLS] row over the patches). What differs: (1) their two attention matmuls
halve each operand's relevance instead of applying eq. 8; each operand alone carries all of the relevance
wherever no product entry is 0, so the two agree there exactly; (2) their ``safe_divide`` adds 1e-9 to
every denominator, this module passes nothing through a denominator below 1e-12 in magnitude
(:mod:`xaikit._lrp`; about 5e-7 relative on a tiny BERT); (3) they run in float32 on a timm ViT (one fused
QKV layer: the z+ rule works per output unit, so fused or separate Q, K, V give the same relevance), this
module in float64 on the Hugging Face one; (4) ``block`` below ends the product early (the module's
convention for every propagated map, :func:`xaikit.image.registry.relevance`); their
``start_layer`` starts it late.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from xaikit._fn import ensure_eval, model_device, to_cpu
from xaikit._lrp import LRPDetail, chefer_matrix, lrp_add, lrp_linear, lrp_matmul, propagate_blocks
from xaikit._types import Target
from xaikit.concepts.images import check_pixels
from xaikit.image.registry import ImageMethod, PreparedImage, prepare_image, register
from xaikit.models.passes import record_passes
from xaikit.policies import float64_device, method_threads, to_float64

__all__ = ["ViTTrace", "relevance_forward", "propagate", "ViTLRP", "chefer_lrp"]

_FIX = ("chefer_lrp re-implements ViTForImageClassification's layers; pass a Hugging Face ViT image classifier, "
        "e.g. xaikit.models.load_vit() or xaikit.models.tiny_vit()")


# ----------------------------------------------------------------------------------------------- the model
def _parts(layer) -> dict:
    """One ViT block's modules under transformers 5.x names (``attention.q_proj``, ``mlp.fc1``) or 4.x names
    (``attention.attention.query``, ``intermediate.dense``)."""
    att = layer.attention
    if hasattr(att, "q_proj"):  # transformers 5.x
        return {"q": att.q_proj, "k": att.k_proj, "v": att.v_proj, "o": att.o_proj, "f1": layer.mlp.fc1,
                "act": layer.mlp.activation_fn, "f2": layer.mlp.fc2,
                "ln1": layer.layernorm_before, "ln2": layer.layernorm_after}
    inner = att.attention  # transformers 4.x
    return {"q": inner.query, "k": inner.key, "v": inner.value, "o": att.output.dense,
            "f1": layer.intermediate.dense, "act": layer.intermediate.intermediate_act_fn, "f2": layer.output.dense,
            "ln1": layer.layernorm_before, "ln2": layer.layernorm_after}


def _check_vit(model) -> None:
    """Refuse anything but a ViT image classifier (a linear head on [CLS]), naming what was passed and the fix."""
    config = getattr(model, "config", None)
    kind = getattr(config, "model_type", None)
    base = getattr(model, "vit", None)
    head = getattr(model, "classifier", None)
    if kind != "vit" or base is None or not isinstance(head, torch.nn.Linear):
        raise ValueError(f"model is a {type(model).__name__} (model_type {kind!r}, classifier "
                         f"{type(head).__name__ if head is not None else 'missing'}); {_FIX}")
    try:
        from xaikit.models.arch import encoder_layers

        for layer in encoder_layers(model):
            _parts(layer)
    except AttributeError as e:
        raise ValueError(f"model's blocks are not laid out as transformers' ViTLayer ({e}); {_FIX}") from None


def _make_weights(model) -> dict:
    """Every parameter the re-run needs, as float64 tensors on :func:`xaikit.policies.float64_device` of the
    model's device; linear layers as ``(W, b, W^+, W^-)``. Made per call (a ViT's cast is cheap next to its
    propagation; the BERT version keeps its copies because texts are many and short)."""
    from xaikit.models.arch import encoder_layers

    def w(t):
        return None if t is None else to_float64(t.detach())

    def linear(module):
        weight = w(module.weight)
        return weight, w(module.bias), weight.clamp(min=0), weight.clamp(max=0)

    def norm(module):
        return w(module.weight), w(module.bias), module.eps

    base = model.vit
    emb = base.embeddings
    conv = emb.patch_embeddings.projection
    blocks = []
    for layer in encoder_layers(model):
        p = _parts(layer)
        blocks.append({**{k: linear(p[k]) for k in ("q", "k", "v", "o", "f1", "f2")}, "act": p["act"],
                       "ln1": norm(p["ln1"]), "ln2": norm(p["ln2"])})
    patch_w = w(conv.weight)
    return {"patch": (patch_w.reshape(patch_w.shape[0], -1), w(conv.bias)), "cls_token": w(emb.cls_token)[0, 0],
            "position": w(emb.position_embeddings)[0], "blocks": blocks, "ln": norm(base.layernorm),
            "head": linear(model.classifier), "heads": int(model.config.num_attention_heads),
            "patch_size": int(model.config.patch_size)}


def _layer_norm(x, params):
    weight, bias, eps = params
    return torch.nn.functional.layer_norm(x, x.shape[-1:], weight, bias, eps)


# ----------------------------------------------------------------------------------------------- the forward
@dataclass
class _Block:
    """What one block's forward kept (float64, no batch dimension; M heads, N tokens, D = M * d)."""

    x: torch.Tensor  # (N, D) the block's input (the residual stream)
    ln1: torch.Tensor  # (N, D) LayerNorm(x), the input of Q, K, V
    q: torch.Tensor  # (M, N, d)
    k: torch.Tensor  # (M, N, d)
    v: torch.Tensor  # (M, N, d)
    probs: torch.Tensor  # (M, N, N) attention A, with grad for nabla A
    context: torch.Tensor  # (N, D) A V, heads concatenated
    attn_out: torch.Tensor  # (N, D) the output projection of the context
    h: torch.Tensor  # (N, D) attn_out + x
    ln2: torch.Tensor  # (N, D) LayerNorm(h), the MLP's input
    inter: torch.Tensor  # (N, F) GELU of the first MLP layer
    mlp_out: torch.Tensor  # (N, D)
    out: torch.Tensor  # (N, D) mlp_out + h, the next block's input


@dataclass
class ViTTrace:
    """The float64 re-run of a ViT classifier on one image (:func:`relevance_forward`).

    ``tokens``: the embeddings entering block 0 ``(N, D)`` ([CLS] first, then the patches row by row);
    ``blocks``: per block, its kept intermediates; ``cls``: the final LayerNorm's [CLS] vector ``(D,)``, the
    classifier's input; ``logits``: ``(C,)``, still attached to the graph (for nabla A).
    """

    tokens: torch.Tensor
    blocks: list[_Block]
    cls: torch.Tensor
    logits: torch.Tensor
    scale: float
    grid: int
    weights: dict

    @property
    def attentions(self) -> torch.Tensor:
        """``(L, M, N, N)`` attention probabilities, detached."""
        return torch.stack([b.probs.detach() for b in self.blocks])


def relevance_forward(model: torch.nn.Module, pixels: torch.Tensor) -> ViTTrace:
    """Re-run the ViT classifier ``model`` on one image ``pixels`` ``(1, 3, H, W)`` (normalised, as
    :func:`xaikit.models.vitworld.to_pixels` makes it) from its own weights, in float64, keeping what
    :func:`propagate` needs. Runs on the model's device, or on the CPU where that device holds no float64
    (Apple's MPS; :func:`xaikit.policies.float64_device`). Notebook 07, section 4."""
    _check_vit(model)
    pixels = check_pixels(model, pixels)
    device = float64_device(model_device(model))
    p = _make_weights(model)
    x = pixels[0].to(device).to(torch.float64)  # (C, H, W)
    c, size = x.shape[0], x.shape[1]
    ps = p["patch_size"]
    g = size // ps
    # the convolution with kernel = stride = patch size: one linear layer over each patch's (C, ps, ps) pixels,
    # patches row by row as the convolution's flattened output orders them
    patches = x.reshape(c, g, ps, g, ps).permute(1, 3, 0, 2, 4).reshape(g * g, c * ps * ps)
    embedded = torch.nn.functional.linear(patches, *p["patch"])
    x = torch.cat([p["cls_token"][None], embedded]) + p["position"]
    if torch.is_grad_enabled():  # the weights are detached copies: start the graph here, for nabla A
        x = x.requires_grad_(True)
    tokens = x
    n, dim = x.shape
    m = p["heads"]
    d = dim // m
    scale = 1.0 / math.sqrt(d)

    def heads(t):
        return t.view(n, m, d).transpose(0, 1)  # (M, N, d)

    blocks = []
    for b in p["blocks"]:
        ln1 = _layer_norm(x, b["ln1"])
        q, k, v = (heads(torch.nn.functional.linear(ln1, *b[name][:2])) for name in ("q", "k", "v"))
        probs = torch.softmax(scale * (q @ k.transpose(-1, -2)), dim=-1)
        context = (probs @ v).transpose(0, 1).reshape(n, dim)
        attn_out = torch.nn.functional.linear(context, *b["o"][:2])
        h = attn_out + x
        ln2 = _layer_norm(h, b["ln2"])
        inter = b["act"](torch.nn.functional.linear(ln2, *b["f1"][:2]))
        mlp_out = torch.nn.functional.linear(inter, *b["f2"][:2])
        out = mlp_out + h
        blocks.append(_Block(x, ln1, q, k, v, probs, context, attn_out, h, ln2, inter, mlp_out, out))
        x = out
    cls = _layer_norm(x, p["ln"])[0]
    logits = torch.nn.functional.linear(cls, *p["head"][:2])
    return ViTTrace(tokens, blocks, cls, logits, scale, g, p)


# ------------------------------------------------------------------------------------------ the propagation
def propagate(trace: ViTTrace, target: int) -> tuple[list[torch.Tensor], torch.Tensor, np.ndarray]:
    """Relevance from the logit of ``target`` (one-hot, total 1) down to block 0's input.

    Returns the relevance of each block's attention probabilities R^{A_b} ``(M, N, N)`` (in block order), the
    relevance of block 0's input ``(N, D)``, and the total relevance at every boundary ``(L + 2,)``: at the
    logits, at the output of block L-1, L-2, ..., 0, and at block 0's input.
    """
    p = trace.weights
    with torch.no_grad():
        r = torch.zeros_like(trace.logits)
        r[target] = 1.0
        totals = [float(r.sum())]
        r_cls = lrp_linear(trace.cls.detach(), p["head"][0], r, parts=p["head"][2:])  # the classifier
        r_out = torch.zeros_like(trace.blocks[-1].out)
        r_out[0] = r_cls  # the final LayerNorm passes relevance on unchanged; only [CLS] reaches the head
        r_attention, r_in, below = propagate_blocks(trace.blocks, p["blocks"], r_out, _block_relevance,
                                                    trace.scale, p["heads"])
    return r_attention, r_in, np.array(totals + below)


def _block_relevance(blk: _Block, b: dict, r_out: torch.Tensor, scale: float, m: int):
    """One pre-LayerNorm block, top to bottom: (relevance of its input (N, D), of its attention (M, N, N))."""
    n, dim = blk.x.shape
    d = dim // m
    t = {k: getattr(blk, k).detach() for k in ("x", "ln1", "q", "k", "v", "probs", "context", "attn_out", "h",
                                                "ln2", "inter", "mlp_out")}
    r_mlp, r_h = lrp_add(t["mlp_out"], t["h"], r_out)  # out = mlp_out + h
    r_inter = lrp_linear(t["inter"], b["f2"][0], r_mlp, parts=b["f2"][2:])
    # GELU and LayerNorm 2 pass relevance on unchanged; h feeds the MLP and the residual: the two add up
    r_h = r_h + lrp_linear(t["ln2"], b["f1"][0], r_inter, parts=b["f1"][2:])
    r_attn, r_x = lrp_add(t["attn_out"], t["x"], r_h)  # h = attn_out + x
    r_context = lrp_linear(t["context"], b["o"][0], r_attn, parts=b["o"][2:]).view(n, m, d).transpose(0, 1)
    r_probs, r_v = lrp_matmul(t["probs"], t["v"], r_context)  # context = A V
    # the softmax passes relevance on unchanged; scores = scale * Q K^T
    r_q, r_kt = lrp_matmul(t["q"], t["k"].transpose(-1, -2), r_probs, scale=scale)

    def merged(r):
        return r.transpose(0, 1).reshape(n, dim)

    # LayerNorm 1 passes relevance on unchanged; x feeds Q, K, V and the residual branch
    for name, r in (("q", r_q), ("k", r_kt.transpose(-1, -2)), ("v", r_v)):
        r_x = r_x + lrp_linear(t["ln1"], b[name][0], merged(r), parts=b[name][2:])
    return r_x, r_probs


# ------------------------------------------------------------------------------------------------ the view
@dataclass
class ViTLRP(LRPDetail):
    """What :func:`chefer_lrp` computed: the record every Chefer LRP keeps (:class:`xaikit._lrp.LRPDetail`,
    the same for the BERT version, :mod:`xaikit.text.lrp`) and the image's map, as NumPy arrays on the CPU
    (float64).

    Attributes:
        map: the relevance map ``(grid, grid)``: C's [CLS] row over the patch tokens, patches row by row.
        target: the explained class.
        matrix, attention_relevance, gradients, input_relevance, totals, logits: as in
            :class:`~xaikit._lrp.LRPDetail` (``attention_relevance`` and ``gradients`` cover every block,
            ``matrix`` the blocks used, ``block``); N = 1 + grid * grid tokens, [CLS] first.
    """

    map: np.ndarray
    target: int


def chefer_lrp(model: torch.nn.Module, pixels: torch.Tensor, *, target: Target = None,
               block: int | None = None) -> ViTLRP:
    """Chefer, Gur & Wolf's (CVPR 2021) relevance map of one image for a ViT classifier: the [CLS] row of
    C = prod_b (I + mean_h (nabla A_b o R^{A_b})^+) over the patches. Notebook 07, section 4.

    Args:
        model: a Hugging Face ``ViTForImageClassification`` (the embedded ones, ``xaikit.models.load_vit()``,
            or any other of that class; eager or SDPA attention alike).
        pixels: one normalised image ``(1, 3, H, W)`` of the model's ``image_size``
            (``xaikit.models.vitworld.to_pixels(images[:1])``).
        target: the class whose logit is explained (an index or a class name); ``None``: the predicted class.
        block: the last block whose Abar enters the product (default: the last block); relevance is
            propagated from the logit through every block either way.

    Returns:
        :class:`ViTLRP`. Reports its passes to :func:`xaikit.models.passes.count_passes` (one forward, and
        two backward sweeps: autograd's for nabla A and the relevance sweep), which no block hook sees; with
        ``target=None`` the image family's entry adds the forward pass that finds the predicted class.
    """
    _check_vit(model)
    ensure_eval(model, "chefer_lrp")
    with method_threads(model):  # the embedded ViTs are tiny: one thread (vit-base: the idle cores)
        return _chefer_lrp(prepare_image(model, pixels, target=target, block=block))


def _chefer_lrp(prepared: PreparedImage) -> ViTLRP:
    """:func:`chefer_lrp` on an image the family's entry checked, its target resolved."""
    model, target, block = prepared.model, prepared.target, prepared.block
    with torch.enable_grad():
        trace = relevance_forward(model, prepared.pixels)
        grads = torch.autograd.grad(trace.logits[target], [b.probs for b in trace.blocks])
    r_a, r_in, totals = propagate(trace, target)
    record_passes(model, forward=1, backward=2)  # a float64 copy's forward, autograd's sweep, the relevance sweep
    g = torch.stack([t.detach() for t in grads])
    r_a = torch.stack(r_a)
    c = chefer_matrix(r_a[:block + 1], g[:block + 1])
    rmap = c[0, 1:].reshape(trace.grid, trace.grid)
    return ViTLRP(map=to_cpu(rmap).numpy(), target=target, matrix=to_cpu(c).numpy(),
                  attention_relevance=to_cpu(r_a).numpy(), gradients=to_cpu(g).numpy(),
                  input_relevance=to_cpu(r_in.sum(-1)).numpy(), totals=totals, logits=to_cpu(trace.logits).numpy())


def _chefer_lrp_map(prepared: PreparedImage):
    """The registered method: the map alone (a model that is no ViT is refused before the re-run)."""
    _check_vit(prepared.model)
    return _chefer_lrp(prepared).map


register(ImageMethod("chefer_lrp", _chefer_lrp_map, order=4))
