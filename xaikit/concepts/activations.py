"""Activations and directional derivatives at an encoder block, steps 1 and 3 of TCAV (Kim et al. 2018,
"Interpretability beyond feature attribution: quantitative testing with concept activation vectors (TCAV)",
ICML; notebook 05), with the per-model cache that the significance runs reuse.

1. **Activations** ``a_l(x)`` of a set at layer l, taken by a forward hook on encoder block l and pooled:
   the [CLS] token (``"cls"``), the mean of the patch tokens (``"mean"``) or all tokens flattened
   (``"flatten"``, as in the lecture's code).
3. **Directional derivative** of the class logit ``h_k`` along a CAV, for each image x of class k:
   ``S_C,k,l(x) = grad h_k(a_l(x)) . v_C``. For pooled modes, the CAV is a direction in pooled space and is
   added to the tokens it pools ([CLS] only, or every patch token for the mean), so the derivative is
   the gradient summed over those tokens, dotted with ``v_C``.

From the derivatives, step 4's **TCAV score** ``|{x in X_k : S(x) > 0}| / |X_k|`` and its magnitude variant
``sum_{S>0} S / sum |S|`` (``_score``).

Works on Hugging Face transformers models directly: hooks find the blocks through
:func:`xaikit.models.arch.encoder_layers` (4.x ``vit.encoder.layer`` / 5.x ``vit.layers``), accept tuple
or tensor block outputs, and call the model with ``pixel_values=``. Activations and gradients are cached
per model, image set, pooling and target, for every layer at once when they fit in memory, so a layer
switch with warm caches only retrains the (cached) CAVs (listed in :mod:`xaikit.policies`).

At the lecture's size (vit-base-patch16-224) three things keep a laptop's memory and time in
bounds: the passes run in batches bounded by an estimate of their intermediate tensors (a backward pass
keeps those of every block it records, about 20 MB per image and block at vit-base: 50 class images through
all 12 blocks at once peaked at 10 GB; :func:`_bounded_batch`), a gradient pass records only the blocks above
the hooked one (the blocks below run without gradients), activation passes stop at the deepest block
needed, and a model of 20 M parameters
or more keeps its activations and gradients on disk as well (:func:`_on_disk`, checksummed through
:func:`xaikit.models.cache.ensure`), so a new kernel does not compute the same images again.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from xaikit._fn import ensure_eval
from xaikit._types import Target
from xaikit._validate import check_choice, check_int
from xaikit.concepts.cav import CAV
from xaikit.concepts.images import pixel_values, resolve_class

if TYPE_CHECKING:
    from xaikit.concepts.images import ImageSet

__all__ = ["POOLINGS", "activations", "directional_derivatives", "gradients", "clear_cache"]

POOLINGS = ("cls", "mean", "flatten")
_ALL_LAYERS_BYTES = 64 * 2**20  # cache every layer at once below this size


# -- activations and gradients (cached) ---------------------------------------------------------------------
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def clear_cache(model: nn.Module | None = None) -> None:
    """Forget cached activations, gradients and CAVs (of one model, or all). A model whose weights change is
    noticed without it (see :func:`_store`)."""
    if model is None:
        _CACHE.clear()
    else:
        _CACHE.pop(model, None)


def _store(model) -> dict:
    """The model's cache of activations, gradients and CAVs, emptied when its weights changed since it was
    filled: an in-place edit (``p.mul_(-1)``, training, ``load_state_dict``) bumps a parameter's version
    counter, and ``p.data = ...`` moves its storage (a classifier flipped in place must not be served the
    old scores)."""
    weights = tuple((p.data_ptr(), p._version) for p in model.parameters())
    entry = _CACHE.get(model)
    if entry is None or entry[0] != weights:
        entry = _CACHE[model] = (weights, {})
    return entry[1]


def _fingerprint(x: torch.Tensor) -> str:
    return hashlib.sha1(x.detach().cpu().numpy().tobytes()).hexdigest()[:16]


def _pool(h: torch.Tensor, pooling: str) -> torch.Tensor:
    """(B, T, D) block output -> pooled (B, D) or (B, T*D)."""
    if pooling == "cls":
        return h[:, 0]
    if pooling == "mean":
        return h[:, 1:].mean(1)
    return h.flatten(1)


def _lift(g: torch.Tensor, pooling: str) -> torch.Tensor:
    """(B, T, D) gradient at the block output -> gradient along a pooled-space direction (see module doc)."""
    if pooling == "cls":
        return g[:, 0]
    if pooling == "mean":
        return g[:, 1:].sum(1)  # the CAV is added to every patch token, so the mean moves by the CAV
    return g.flatten(1)


def _layers_to_keep(model, layer: int, pooling: str, n: int) -> list[int]:
    from xaikit.models.arch import n_layers

    total = n_layers(model)
    cfg = model.config
    tokens = (int(getattr(cfg, "image_size", 224)) // int(getattr(cfg, "patch_size", 16))) ** 2 + 1
    width = cfg.hidden_size * (tokens if pooling == "flatten" else 1)
    return list(range(total)) if n * width * total * 4 < _ALL_LAYERS_BYTES else [layer]


#: memory one batch of :func:`_run` may hold: the backward pass keeps the intermediate tensors of every block
#: it records for each image (about 20 MB per image and block at vit-base-patch16-224, so 50 images through
#: all 12 blocks at once peaked at 10 GB); the forward pass without gradients only the current block's
_GRAD_BATCH_BYTES = 768 * 2**20
_FORWARD_BATCH_BYTES = 256 * 2**20


def _bounded_batch(model, batch_size: int, backward: bool, from_block: int = 0) -> int:
    """``batch_size`` capped so that one batch's intermediate tensors stay near :data:`_GRAD_BATCH_BYTES`
    (backward) or :data:`_FORWARD_BATCH_BYTES` (forward only). Per image and block the estimate counts the
    token tensors (about 24 of width ``hidden_size``, the MLP's four times wider ones included) and the
    attention maps (3 of ``heads x tokens x tokens``); for a backward pass every block from ``from_block`` up
    (the graph :func:`_run` records starts at that block's output; the head counted as one more block), one
    for a forward pass. Each image's activations and gradients do not depend on the batch it is in, so the cap changes
    the memory, not the result (beyond the order of float sums inside a matrix product)."""
    from xaikit.models.arch import n_layers

    cfg = model.config
    tokens = (int(getattr(cfg, "image_size", 224)) // int(getattr(cfg, "patch_size", 16))) ** 2 + 1
    heads = int(getattr(cfg, "num_attention_heads", 1))
    per_block = tokens * (24 * int(cfg.hidden_size) + 3 * heads * tokens) * 4
    per_image = per_block * (max(1, n_layers(model) - from_block) if backward else 1)
    budget = _GRAD_BATCH_BYTES if backward else _FORWARD_BATCH_BYTES
    return max(1, min(batch_size, budget // max(per_image, 1)))


class _Stop(Exception):
    """Raised by the hook of the last block :func:`_run` needs, to skip the blocks above it."""


def _run(model, x: torch.Tensor, layers: list[int], pooling: str, target: int | None, batch_size: int,
         stop: bool = False):
    """Forward (and backward, if ``target`` is set) with hooks on ``layers``; pooled activations or lifted
    gradients per layer, each (N, D). ``stop=True`` (activations only): the forward pass ends at the last
    of ``layers``; the blocks above it and the head are not run (the activations are the same)."""
    from xaikit.models.arch import encoder_layers
    from xaikit.models.hooks import forward_hooks

    blocks = encoder_layers(model)
    outs: dict[int, torch.Tensor] = {}
    stop = stop and target is None
    last, first = max(layers), min(layers)

    def hook(i):
        def fn(_module, _inputs, output):
            h = output[0] if isinstance(output, (tuple, list)) else output  # 4.x tuple, 5.x tensor
            if target is not None and i == first:
                # the gradient at the hooked blocks depends only on what runs after the lowest of them: the
                # blocks below ran without a graph (no_grad), and recording starts from this output, a leaf
                torch.set_grad_enabled(True)  # the caller's no_grad block restores the mode when it ends
                h = h.detach().requires_grad_(True)
                output = (h, *output[1:]) if isinstance(output, (tuple, list)) else h
            outs[i] = h
            if stop and i == last:
                raise _Stop
            return output if target is not None and i == first else None
        return fn

    device = next(model.parameters()).device
    batch_size = _bounded_batch(model, batch_size, backward=target is not None, from_block=first)
    pieces: dict[int, list[torch.Tensor]] = {i: [] for i in layers}
    with forward_hooks(*((blocks[i], hook(i)) for i in layers)):
        for s in range(0, len(x), batch_size):
            xb = x[s:s + batch_size].to(device=device, dtype=next(model.parameters()).dtype)
            if target is None:
                with torch.no_grad():
                    try:
                        model(pixel_values=xb)
                    except _Stop:
                        pass
                for i in layers:
                    pieces[i].append(_pool(outs[i], pooling).float().cpu())
            else:
                with torch.no_grad():  # until the lowest hooked block, whose hook turns recording on
                    logits = model(pixel_values=xb).logits  # (B, C)
                    hs = [outs[i] for i in layers]
                    grads = torch.autograd.grad(logits[:, target].sum(), hs)  # each (B, T, D)
                for i, g in zip(layers, grads, strict=True):
                    pieces[i].append(_lift(g, pooling).float().cpu())
    return {i: torch.cat(p).numpy() for i, p in pieces.items()}


def _cached(model, x: torch.Tensor, layer: int, pooling: str, target: int | None,
            batch_size: int) -> np.ndarray:
    """Activations (``target=None``) or lifted gradients at ``layer``, computed once per model (weights),
    image set (its pixel values' digest), pooling and target in this process; a model of at least
    :data:`_DISK_CACHE_MIN_PARAMS` parameters also keeps them on disk (:func:`_on_disk`). An activation
    pass stops at the deepest block it needs."""
    store = _store(model)
    key = (_fingerprint(x), pooling, target)
    per_layer = store.setdefault(key, {})
    if layer not in per_layer:
        from xaikit.policies import method_threads

        def compute(layers):
            with method_threads(model):  # xaikit.policies: the thread count the user set
                return _run(model, x, layers, pooling, target, batch_size, stop=target is None)

        layers = _layers_to_keep(model, layer, pooling, len(x))
        if _n_params(model) >= _DISK_CACHE_MIN_PARAMS:
            fresh: dict[int, np.ndarray] = {}  # one pass for every layer missing on disk

            def one(i):
                if not fresh:
                    fresh.update(compute(layers))
                return fresh[i]

            for i in layers:
                per_layer[i] = _on_disk(model, x, i, pooling, lambda i=i: one(i), target)
        else:
            per_layer.update(compute(layers))
    return per_layer[layer]


# -- the on-disk activation cache ------------------------------------------------------------------------
#: models with at least this many parameters keep activations on disk: at vit-base-patch16-224 (86 M) 50
#: images take about half a minute per block on a laptop CPU, reading them back a fraction of a second;
#: the embedded ViTs (under 1 M) compute them faster than their weights hash
_DISK_CACHE_MIN_PARAMS = 20_000_000
_ACTS_FILE = "activations.npy"


def _n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def _weights_digest(model) -> str:
    """SHA-256 of the model's class, parameter names, dtypes and bytes (first 16 hex digits); kept in the
    model's in-memory store, which a change of weights empties (:func:`_store`)."""
    store = _store(model)
    if "weights-digest" not in store:
        h = hashlib.sha256(type(model).__name__.encode())
        for name, t in model.state_dict().items():
            t = t.detach().cpu().contiguous()
            h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
            h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        store["weights-digest"] = h.hexdigest()[:16]
    return store["weights-digest"]


def _disk_folder(model, name: str):
    from pathlib import Path

    from xaikit._config import cache_dir

    return Path(cache_dir()) / "activations" / f"{_weights_digest(model)}-{name}"


def _activations_folder(model, x: torch.Tensor, layer: int, pooling: str, target: int | None = None):
    what = "acts" if target is None else f"grad{target}"
    return _disk_folder(model, f"block{layer}-{pooling}-{what}-{_fingerprint(x)}")


def _on_disk(model, x: torch.Tensor, layer: int, pooling: str, compute, target: int | None = None) -> np.ndarray:
    """``compute()``'s activations (or, with ``target``, the lifted gradients of that class's logit), kept
    under ``cache_dir()/activations/`` keyed by the weights' digest, the block, the pooling, the target and
    the pixel values' digest (:func:`_disk_kept`)."""
    try:
        folder = _activations_folder(model, x, layer, pooling, target)
    except (OSError, ValueError):  # XAIKIT_CACHE unusable: compute, keep nothing
        return compute()
    return _disk_kept(folder, compute)


def _disk_kept(folder, compute, what: str = "TCAV activations") -> np.ndarray:
    """The array ``compute()`` returns, kept in ``folder`` through :func:`xaikit.models.cache.ensure`:
    checksummed, so a damaged file is computed again and replaced, never loaded. A folder that cannot be
    written (a full disk, no permission) leaves the result computed and not kept."""
    from xaikit.models import cache

    made = []

    def build(tmp):
        made.append(compute())
        np.save(tmp / _ACTS_FILE, made[0])

    try:
        found = cache.ensure(folder, build, required=(_ACTS_FILE,), what=what, progress=False)
        return made[0] if made else np.load(found / _ACTS_FILE)
    except OSError:  # a full disk or a read-only folder: the result still serves this call
        return made[0] if made else compute()


def _check_common(model, layer, pooling):
    from xaikit.models.arch import check_layer

    if not isinstance(model, torch.nn.Module) or not hasattr(model, "config"):
        raise TypeError(f"model must be a transformers image classifier (e.g. ViTForImageClassification), got "
                        f"{type(model).__name__}")
    if not hasattr(model.config, "image_size") or hasattr(model.config, "vocab_size"):
        raise TypeError(f"model is a {type(model).__name__} ({getattr(model.config, 'model_type', '?')}), not an image "
                        "classifier: TCAV here feeds pixel_values to a ViT-style model. For a text model use "
                        "xaikit.gradsam, xaikit.shap_text or text integrated gradients")
    check_choice(pooling, "pooling", POOLINGS)
    ensure_eval(model, "tcav")
    return check_layer(model, layer)


def activations(model: nn.Module, images: ImageSet, layer: int, pooling: str = "flatten",
                processor: object | None = None, batch_size: int = 64) -> np.ndarray:
    """Pooled activations (N, D) of encoder block ``layer`` for ``images`` (cached)."""
    layer = _check_common(model, layer, pooling)
    x = pixel_values(model, images, processor)
    return _activations(model, x, layer, pooling, check_int(batch_size, "batch_size", 1))


def _activations(model, x: torch.Tensor, layer: int, pooling: str, batch_size: int = 64) -> np.ndarray:
    """:func:`activations` of pixel values ``x`` (N, 3, S, S) at a block index and pooling already checked
    (:func:`_check_common`): what the entry points call after checking their arguments once."""
    return _cached(model, x, layer, pooling, None, batch_size)


def gradients(model: nn.Module, images: ImageSet, layer: int, *, target: Target, pooling: str = "flatten",
              processor: object | None = None, batch_size: int = 64) -> np.ndarray:
    """The gradient (N, D) of the ``target`` logit at encoder block ``layer``, pooled as the CAVs are (cached):
    ``directional_derivatives`` is this times the CAV. With ``"flatten"`` the first ``hidden_size`` numbers of
    a row are the [CLS] token's."""
    layer = _check_common(model, layer, pooling)
    idx, _ = resolve_class(model, target)
    x = pixel_values(model, images, processor, "class_images")
    return _cached(model, x, layer, pooling, idx, check_int(batch_size, "batch_size", 1))


def directional_derivatives(model: nn.Module, images: ImageSet, layer: int,
                            cav: CAV | np.ndarray | Sequence[float], *, target: Target,
                            pooling: str = "flatten", processor: object | None = None,
                            batch_size: int = 64) -> np.ndarray:
    """``S(x) = grad h_target(a_layer(x)) . cav`` for each image, (N,) (Kim et al. 2018, eq. 1)."""
    layer = _check_common(model, layer, pooling)
    idx, _ = resolve_class(model, target)
    v = cav.vector if isinstance(cav, CAV) else np.asarray(cav, dtype=np.float32)
    x = pixel_values(model, images, processor, "class_images")
    return _directional_derivatives(model, x, layer, v, idx, pooling, check_int(batch_size, "batch_size", 1))


def _directional_derivatives(model, x: torch.Tensor, layer: int, v: np.ndarray, index: int, pooling: str,
                             batch_size: int = 64) -> np.ndarray:
    """:func:`directional_derivatives` of pixel values ``x`` along the CAV vector ``v`` for the class index
    ``index``, with the block index and pooling already checked."""
    g = _cached(model, x, layer, pooling, index, batch_size)  # (N, D)
    if v.shape != (g.shape[1],):
        raise ValueError(f"cav has {v.shape[0] if v.ndim else 0} dimensions but layer {layer} with pooling "
                         f"{pooling!r} has {g.shape[1]}; train the CAV at the same layer and pooling")
    return g @ v


def _score(s: np.ndarray) -> tuple[float, float]:
    score = float((s > 0).mean())
    total = np.abs(s).sum()
    magnitude = float(s[s > 0].sum() / total) if total > 0 else 0.5
    return score, magnitude
