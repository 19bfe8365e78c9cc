"""Where a ViT looks (notebook 07, section 4): relevance maps of a ViT's class decision over its patch grid,
each registered with the image family's entry (:func:`xaikit.image.registry.relevance`), which checks the
pixels, the block and the target and resolves the target once before a method runs. The lab scores them
against the image world's own ground truth (:mod:`xaikit.lab.pixel_scores`):

* ``"attention"``: raw attention, the [CLS] row of the last block, averaged over heads.
* ``"rollout"``: attention rollout (Abnar & Zuidema 2020, "Quantifying attention flow in transformers"):
  per block the head-mean attention plus the identity (the residual), rows renormalised, multiplied from
  the first block to the last; the [CLS] row.
* ``"chefer"``: Chefer, Gur & Wolf's gradient-weighted relevance propagation, the rule of their ICCV 2021
  paper ("Generic attention-model explainability for interpreting bi-modal and encoder-decoder
  transformers", Eqs. 5-6): R starts as the identity and each block adds mean_h((dy/dA * A)^+) R.
* ``"chefer_lrp"``: the method of their CVPR 2021 paper ("Transformer interpretability beyond attention
  visualization", the one in its Table 1): the LRP relevance of A in place of A, Abar_b = I +
  mean_h((dy/dA * R^A)^+), C = Abar_L ... Abar_1, the [CLS] row. Registered by :mod:`xaikit.image.lrp`
  (a float64 re-run of the model, relevance conserved block by block).
* ``"grad_attention"``: gradient-weighted attention of the last block alone, mean_h((dy/dA * A)^+), [CLS] row.
* ``"grad_input"``: gradient x input on the pixels, summed over colour channels.
* ``"ig"``: integrated gradients on the pixels (Sundararajan et al. 2017), a grey (zero after normalising)
  baseline, a right Riemann sum.

Pixel methods are pooled to patches by summing over each patch's pixels, so every map is (grid, grid).
"""

from __future__ import annotations

import torch

from xaikit._validate import check_int
from xaikit.attention.relevance import grad_attention_matrix, rollout_matrix
from xaikit.image.registry import ImageMethod, PreparedImage, register

__all__ = ["IG_BATCH", "IG_BATCH_NUMBERS", "ig_batch_size"]


def _forward(prepared: PreparedImage, pixels: torch.Tensor | None = None):
    """One forward pass with attentions kept for their gradients; returns (attentions, the target's score)."""
    model = prepared.model
    out = model(pixel_values=prepared.pixels if pixels is None else pixels, output_attentions=True)
    atts = out.attentions
    if not atts or len(atts) != model.config.num_hidden_layers or any(a is None for a in atts):
        raise ValueError("model returned no attention weights: switch it to eager attention "
                         "(xaikit.models.hooks.set_attention_implementation(model, 'eager'))")
    return atts, out.logits[0, prepared.target]


def _cls_row(prepared: PreparedImage, row: torch.Tensor):
    """The [CLS] row over the patches ``(T - 1,)`` laid out on the patch grid, float64 NumPy."""
    g = prepared.grid
    return row.reshape(g, g).double().numpy()


def _attention(prepared: PreparedImage):
    """Raw attention: the [CLS] row of ``block``, averaged over heads."""
    with torch.no_grad():
        atts, _ = _forward(prepared)
    return _cls_row(prepared, atts[prepared.block][0].mean(0)[0, 1:])


def _rollout(prepared: PreparedImage):
    """Abnar & Zuidema's rollout through blocks 0..``block`` (:func:`xaikit.attention.relevance.rollout_matrix`)."""
    with torch.no_grad():
        atts, _ = _forward(prepared)
    stacked = torch.stack([a[0] for a in atts[:prepared.block + 1]])  # (L, heads, T, T)
    return _cls_row(prepared, rollout_matrix(stacked)[0, 1:])


def _attention_gradients(prepared: PreparedImage):
    atts, score = _forward(prepared)
    grads = torch.autograd.grad(score, atts)
    b = prepared.block
    return [a[0].detach() for a in atts[:b + 1]], [x[0] for x in grads[:b + 1]]


def _chefer(prepared: PreparedImage):
    """Chefer et al.'s ICCV 2021 rule through blocks 0..``block``
    (:func:`xaikit.attention.relevance.grad_attention_matrix`)."""
    atts, grads = _attention_gradients(prepared)
    return _cls_row(prepared, grad_attention_matrix(atts, grads)[0, 1:])


def _grad_attention(prepared: PreparedImage):
    """Gradient-weighted attention of ``block`` alone, mean_h((dy/dA * A)^+), [CLS] row."""
    atts, grads = _attention_gradients(prepared)
    return _cls_row(prepared, (grads[-1] * atts[-1]).clamp(min=0).mean(0)[0, 1:])


def _grad_input(prepared: PreparedImage):
    """Gradient x input on the pixels, summed over colour channels, pooled to the patches."""
    x = prepared.pixels.clone().requires_grad_(True)
    _, score = _forward(prepared, x)
    (grad,) = torch.autograd.grad(score, x)
    return prepared.to_grid((grad * x.detach())[0].sum(0))


def _ig(prepared: PreparedImage, steps: int = 16):
    """Integrated gradients on the pixels from a grey (zero) baseline, a right Riemann sum of ``steps``
    points, summed over colour channels and pooled to the patches."""
    steps = check_int(steps, "steps", 1, 100_000)
    model, pixels, target = prepared.model, prepared.pixels, prepared.target
    alphas = torch.arange(1, steps + 1, dtype=pixels.dtype) / steps
    total = torch.zeros_like(pixels[0])
    size = ig_batch_size(pixels)
    for i in range(0, steps, size):  # a bounded batch: 1,500 steps cost time, not gigabytes
        path = (alphas[i:i + size].view(-1, 1, 1, 1) * pixels).requires_grad_(True)  # 0 -> pixels
        score = model(pixel_values=path).logits[:, target].sum()
        (grad,) = torch.autograd.grad(score, path)
        total += grad.sum(0)
    return prepared.to_grid((total / steps * pixels[0]).sum(0))


#: the most IG path points ``"ig"`` sends through the ViT in one pass
IG_BATCH = 32
#: about this many pixel values per pass, as the tensor IG paths bound theirs
#: (``xaikit.tensor.integrated.BATCH_NUMBERS``): 3 path points of a 224x224 image, 32 of the embedded 64x64 ViT's
IG_BATCH_NUMBERS = 2 ** 19


def ig_batch_size(pixels: torch.Tensor) -> int:
    """Path points per forward/backward pass of ``"ig"``: about :data:`IG_BATCH_NUMBERS` pixel values, at most
    :data:`IG_BATCH` points (a ViT's activations are many times its pixels)."""
    return max(1, min(IG_BATCH, IG_BATCH_NUMBERS // max(1, pixels[0].numel())))


register(ImageMethod("attention", _attention, order=1))
register(ImageMethod("rollout", _rollout, order=2))
register(ImageMethod("chefer", _chefer, order=3))
register(ImageMethod("grad_attention", _grad_attention, order=5))
register(ImageMethod("grad_input", _grad_input, order=6, uses_block=False))
register(ImageMethod("ig", _ig, order=7, uses_block=False))
