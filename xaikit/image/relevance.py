"""Where a ViT looks, against the pixels we drew (notebook 07, section 4).

Relevance maps for a ViT's class decision over its patch grid, scored against the image world's own
ground truth (:meth:`xaikit.models.imageworld.Scene.masks`):

* ``"attention"``: raw attention, the [CLS] row of the last block, averaged over heads.
* ``"rollout"``: attention rollout (Abnar & Zuidema 2020, "Quantifying attention flow in transformers"):
  per block the head-mean attention plus the identity (the residual), rows renormalised, multiplied from
  the first block to the last; the [CLS] row.
* ``"chefer"``: Chefer, Gur & Wolf's gradient-weighted relevance propagation, the rule of their ICCV 2021
  paper ("Generic attention-model explainability for interpreting bi-modal and encoder-decoder
  transformers", Eqs. 5-6): R starts as the identity and each block adds mean_h((dy/dA * A)^+) R.
* ``"chefer_lrp"``: the method of their CVPR 2021 paper ("Transformer interpretability beyond attention
  visualization", the one in its Table 1): the LRP relevance of A in place of A, Abar_b = I +
  mean_h((dy/dA * R^A)^+), C = Abar_L ... Abar_1, the [CLS] row. Computed by :mod:`xaikit.concepts.vit_lrp`
  on a float64 re-run of the model (relevance conserved block by block).
* ``"grad_attention"``: gradient-weighted attention of the last block alone, mean_h((dy/dA * A)^+), [CLS] row.
* ``"grad_input"``: gradient x input on the pixels, summed over colour channels.
* ``"ig"``: integrated gradients on the pixels (Sundararajan et al. 2017), a grey (zero after normalising)
  baseline, a right Riemann sum.

Pixel methods are pooled to patches by summing over each patch's pixels, so every map is (grid, grid).

Scores (:func:`localisation`, :func:`pointing_game`, :func:`perturbation_curve`): the ground-truth masks are
pooled to patches (the fraction of each patch's pixels in the mask), which is the same as upsampling patch
relevance uniformly to its pixels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from xaikit._validate import bool_flags, check_choice, check_int, check_names
from xaikit.concepts.images import check_pixels, resolve_class

__all__ = ["METHODS", "relevance", "pool_mask", "localisation", "pointing_game", "perturbation_curve",
           "PerturbationResult", "rollout_from", "chefer_from", "MethodRow", "compare_methods"]

METHODS = ("attention", "rollout", "chefer", "chefer_lrp", "grad_attention", "grad_input", "ig")


def _grid(model) -> int:
    c = model.config
    return c.image_size // c.patch_size


def _forward(model, pixels: torch.Tensor, target: int | None):
    """One forward pass with attentions kept for their gradients; returns (attentions, class score, target)."""
    out = model(pixel_values=pixels, output_attentions=True)
    atts = out.attentions
    if not atts or len(atts) != model.config.num_hidden_layers or any(a is None for a in atts):
        raise ValueError("model returned no attention weights: switch it to eager attention "
                         "(xaikit.models.hooks.set_attention_implementation(model, 'eager'))")
    if target is None:
        target = int(out.logits[0].argmax())
    return atts, out.logits[0, target], target


def rollout_from(atts: list[torch.Tensor]) -> torch.Tensor:
    """Abnar & Zuidema's rollout from per-block attentions ``(heads, T, T)``: the (T, T) product."""
    t = atts[0].shape[-1]
    eye = torch.eye(t, dtype=atts[0].dtype)
    r = eye.clone()
    for a in atts:
        a_hat = 0.5 * a.mean(0) + 0.5 * eye
        a_hat = a_hat / a_hat.sum(-1, keepdim=True)
        r = a_hat @ r
    return r


def chefer_from(atts: list[torch.Tensor], grads: list[torch.Tensor]) -> torch.Tensor:
    """Chefer et al.'s (ICCV 2021) rule from per-block attentions and their gradients ``(heads, T, T)``."""
    t = atts[0].shape[-1]
    r = torch.eye(t, dtype=atts[0].dtype)
    for a, g in zip(atts, grads, strict=True):
        r = r + (g * a).clamp(min=0).mean(0) @ r
    return r


def relevance(model, pixels: torch.Tensor, method: str, *, target: int | None = None, steps: int = 16,
              block: int | None = None):
    """The (grid, grid) relevance map of ``method`` (see :data:`METHODS`) for class ``target`` (an index, or a
    class name such as "zebra"; None: the predicted class) of one image ``pixels`` (1, 3, H, W), normalised as :func:`xaikit.models.vitworld.to_pixels`
    makes it. Returns ``(map, target)``; the map is a float64 NumPy array.

    ``block`` (default: the last) is the attention block read by ``"attention"`` and ``"grad_attention"``,
    and the last block ``"rollout"``, ``"chefer"`` and ``"chefer_lrp"`` propagate through; the pixel methods
    ignore it."""
    from xaikit.policies import method_threads

    with method_threads(model):  # xaikit.policies: one thread for the embedded ViTs
        return _relevance(model, pixels, method, target=target, steps=steps, block=block)


def _relevance(model, pixels: torch.Tensor, method: str, *, target: int | None = None, steps: int = 16,
              block: int | None = None):
    """:func:`relevance` under the caller's thread count."""
    check_choice(method, "method", METHODS)
    n_blocks = model.config.num_hidden_layers
    block = n_blocks - 1 if block is None else check_int(block, "block", 0, n_blocks - 1)
    pixels = check_pixels(model, pixels)
    if isinstance(target, str):  # a class name, as tcav takes it ("zebra")
        target = resolve_class(model, target)[0]
    elif target is not None:
        target = check_int(target, "target", 0, model.config.num_labels - 1,
                           hint=f"the model has {model.config.num_labels} classes")
    g = _grid(model)
    p = model.config.patch_size
    if method in ("attention", "rollout"):
        with torch.no_grad():
            atts, _, target = _forward(model, pixels, target)
        atts = [a[0] for a in atts[:block + 1]]
        row = atts[-1].mean(0)[0, 1:] if method == "attention" else rollout_from(atts)[0, 1:]
        return row.reshape(g, g).double().numpy(), target
    if method == "chefer_lrp":  # a float64 re-run from the weights: any attention implementation will do
        from xaikit.concepts.vit_lrp import _chefer_lrp

        found = _chefer_lrp(model, pixels, target=target, block=block)
        return found.map, found.target
    if method in ("chefer", "grad_attention"):
        atts, score, target = _forward(model, pixels, target)
        grads = torch.autograd.grad(score, atts)
        atts = [a[0].detach() for a in atts[:block + 1]]
        grads = [x[0] for x in grads[:block + 1]]
        if method == "chefer":
            row = chefer_from(atts, grads)[0, 1:]
        else:
            row = (grads[-1] * atts[-1]).clamp(min=0).mean(0)[0, 1:]
        return row.reshape(g, g).double().numpy(), target
    if method == "grad_input":
        x = pixels.clone().requires_grad_(True)
        _, score, target = _forward(model, x, target)
        (grad,) = torch.autograd.grad(score, x)
        pix = (grad * x.detach())[0].sum(0)
    else:
        steps = check_int(steps, "steps", 1, 100_000)
        if target is None:
            with torch.no_grad():
                target = int(model(pixel_values=pixels).logits[0].argmax())
        alphas = torch.arange(1, steps + 1, dtype=pixels.dtype) / steps
        total = torch.zeros_like(pixels[0])
        for i in range(0, steps, ig_batch_size(pixels)):  # a bounded batch: 1,500 steps cost time, not gigabytes
            path = (alphas[i:i + ig_batch_size(pixels)].view(-1, 1, 1, 1) * pixels).requires_grad_(True)  # 0 -> pixels
            score = model(pixel_values=path).logits[:, target].sum()
            (grad,) = torch.autograd.grad(score, path)
            total += grad.sum(0)
        pix = (total / steps * pixels[0]).sum(0)
    pooled = pix.detach().reshape(g, p, g, p).sum((1, 3))
    return pooled.double().numpy(), target


#: the most IG path points :func:`relevance` sends through the ViT in one pass
IG_BATCH = 32
#: about this many pixel values per pass, as the tensor IG paths bound theirs
#: (``xaikit.tensor.integrated.BATCH_NUMBERS``): 3 path points of a 224x224 image, 32 of the embedded 64x64 ViT's
IG_BATCH_NUMBERS = 2 ** 19


def ig_batch_size(pixels: torch.Tensor) -> int:
    """Path points per forward/backward pass of ``"ig"``: about :data:`IG_BATCH_NUMBERS` pixel values, at most
    :data:`IG_BATCH` points (a ViT's activations are many times its pixels)."""
    return max(1, min(IG_BATCH, IG_BATCH_NUMBERS // max(1, pixels[0].numel())))


def pool_mask(mask: np.ndarray, grid: int) -> np.ndarray:
    """A (H, W) bool mask pooled to a (grid, grid) patch grid: the fraction of each patch's pixels set."""
    m = np.asarray(mask, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] % grid:
        raise ValueError(f"mask must be a square (H, W) array whose side the {grid}x{grid} patch grid divides "
                         f"(the picture's own size), got shape {m.shape}: use scene.masks()['body']")
    h = m.shape[0] // grid
    return m.reshape(grid, h, grid, h).mean((1, 3))


def localisation(rmap: np.ndarray, mask: np.ndarray) -> float:
    """Share of the positive relevance that lies on ``mask`` (pixels; pooled to the map's grid).

    NaN when the map has no positive relevance at all (nothing to share out). A map holding NaN or inf and
    an empty mask are refused: the share would be NaN, or 0 whatever the map."""
    rmap, frac = _map_and_mask(rmap, mask, "localisation")
    pos = np.clip(rmap, 0, None)
    total = pos.sum()
    if total <= 0:
        return float("nan")
    return float((pos * frac).sum() / total)


def _map_and_mask(rmap, mask, method: str) -> tuple[np.ndarray, np.ndarray]:
    """A finite square relevance map and the mask pooled to its grid, the mask holding at least one pixel."""
    rmap = np.asarray(rmap, dtype=np.float64)
    if rmap.ndim != 2 or rmap.shape[0] != rmap.shape[1] or rmap.size == 0:
        raise ValueError(f"{method}: rmap must be a square (grid, grid) relevance map, got shape {rmap.shape}")
    if not np.isfinite(rmap).all():
        raise ValueError(f"{method}: rmap holds NaN or inf (first at {tuple(int(i) for i in np.argwhere(~np.isfinite(rmap))[0])}), "
                         "so the share of relevance on the mask is undefined; the map came from a failed "
                         "computation (check the image for NaN pixels) or pass a finite map")
    frac = pool_mask(mask, rmap.shape[0])
    if not (np.asarray(mask) != 0).any():
        raise ValueError(f"{method}: mask is empty (no pixel set), so no relevance can lie on it and the score "
                         "would say the map missed the object, whatever the map; pass the object's mask, e.g. "
                         "scene.masks()['body']")
    return rmap, frac


def pointing_game(rmap: np.ndarray, mask: np.ndarray) -> bool:
    """Whether the patch of highest relevance lies on ``mask``: at least half its pixels in it."""
    rmap, frac = _map_and_mask(rmap, mask, "pointing_game")
    return bool(frac.ravel()[int(np.argmax(rmap))] >= 0.5)


@dataclass
class PerturbationResult:
    """Chefer et al.'s perturbation test on one image: ``fractions`` of patches removed (set to grey, 0 after
    normalising) and the probability of the originally predicted class after each step."""

    fractions: np.ndarray
    probs: np.ndarray

    @property
    def auc(self) -> float:
        """Area under the probability curve over the removed fraction (trapezoid rule)."""
        return float(np.trapezoid(self.probs, self.fractions))


def perturbation_curve(model, pixels: torch.Tensor, order: np.ndarray, target: int,
                       fractions=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)) -> PerturbationResult:
    """Remove patches in ``order`` (patch indices, first removed first): the positive test passes the
    patches by decreasing relevance, the negative by increasing, the control a random permutation."""
    g = _grid(model)
    p = model.config.patch_size
    target = resolve_class(model, target)[0] if isinstance(target, str) else check_int(
        target, "target", 0, model.config.num_labels - 1, hint=f"the model has {model.config.num_labels} classes")
    order = np.array(order, dtype=np.int64)
    if sorted(order.tolist()) != list(range(g * g)):
        raise ValueError(f"order must be a permutation of the {g * g} patch indices")
    batch = []
    for f in fractions:
        keep = torch.ones(g * g)
        keep[torch.as_tensor(order[: int(round(f * g * g))], dtype=torch.long)] = 0
        m = keep.reshape(g, 1, g, 1).expand(g, p, g, p).reshape(g * p, g * p)
        batch.append(pixels[0] * m)
    with torch.no_grad():
        probs = model(pixel_values=torch.stack(batch)).logits.softmax(-1)[:, target]
    return PerturbationResult(np.asarray(fractions, dtype=np.float64), probs.double().numpy())


@dataclass
class MethodRow:
    """One method's means over the scenes: ``localisation`` (share of positive relevance on the body),
    ``body_area`` (the body's share of the frame: what a map spread evenly would score), ``pointing`` (the
    pointing game's hit rate), ``pos_auc`` / ``neg_auc`` (perturbation AUCs, NaN when not run), and its cost:
    ``forward`` / ``backward`` passes per image counted by :func:`xaikit.models.passes.count_passes`, ``seconds``
    per image."""

    method: str
    localisation: float
    body_area: float
    pointing: float
    pos_auc: float
    neg_auc: float
    forward: float
    backward: float
    seconds: float


@bool_flags
def compare_methods(model, scenes, methods=METHODS, *, perturb: bool = True, seed: int = 0, steps: int = 16):
    """Every method in ``methods`` on the predicted class of every scene (``imageworld.Scene``): a list of
    :class:`MethodRow`, and the random-order control's positive AUC (NaN without ``perturb``)."""
    from xaikit.models.passes import count_passes
    from xaikit.models.vitworld import to_pixels

    methods = check_names(methods, "methods", METHODS)
    scenes = list(scenes)
    if not scenes:
        raise ValueError("scenes must hold at least one imageworld.Scene (imageworld.scenes('zebra', n, world))")
    from xaikit.policies import method_threads

    with method_threads(model):  # xaikit.policies: one thread for the embedded ViTs (127 s on two busy cores)
        return _compare(model, scenes, methods, perturb, check_int(seed, "seed", 0), steps, count_passes, to_pixels)


def _compare(model, scenes, methods, perturb, seed, steps, count_passes, to_pixels):
    rng = np.random.default_rng(seed)
    acc = {m: [] for m in methods}
    rand = []
    for scene in scenes:
        pixels = to_pixels(scene.image()[None])
        body = scene.masks()["body"]
        for m in methods:
            with count_passes(model) as cost:
                rmap, target = relevance(model, pixels, m, steps=steps)
            row = [localisation(rmap, body), body.mean(), pointing_game(rmap, body), np.nan, np.nan,
                   cost.forward, cost.backward, cost.seconds]
            if perturb:
                order = np.argsort(-rmap.ravel(), kind="stable")
                row[3] = perturbation_curve(model, pixels, order, target).auc
                row[4] = perturbation_curve(model, pixels, order[::-1], target).auc
            acc[m].append(row)
        if perturb:
            rand.append(perturbation_curve(model, pixels, rng.permutation(rmap.size), target).auc)
    rows = []
    for m in methods:
        table = np.array(acc[m], dtype=np.float64)  # (scenes, 8)
        means = [float(np.nanmean(c)) if np.isfinite(c).any() else float("nan") for c in table.T]
        rows.append(MethodRow(m, *means))
    return rows, (float(np.mean(rand)) if perturb else float("nan"))
