"""The image family's one record and one entry: every relevance map of a ViT's class decision over its patch
grid, by the name notebook 07 (section 4), its panel and the lab's scoring use.

Each method module of :mod:`xaikit.image` declares its own :class:`ImageMethod` next to the method and calls
:func:`register` when it is imported; :func:`entries` imports every module of the family once (no list of
them is kept anywhere), so the registry is complete whenever it is read. :func:`relevance` is the entry: it
checks the method name, the pixels, the block and ``target`` before any forward pass, resolves ``target``
once (a class index, a class name such as ``"zebra"``, or ``None``: the predicted class, from one forward
pass), and runs the method in eval mode, in float32 and under the thread policy
(:func:`xaikit.policies.method_threads`). The methods trust what it hands them (a :class:`PreparedImage`),
as Captum's ``attribute`` checks once and ``_attribute`` trusts. Adding an image method is one module (see
``ARCHITECTURE.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from xaikit._registry import Registry, run_options
from xaikit._types import Target

__all__ = ["ImageMethod", "PreparedImage", "register", "unregister", "entries", "entry", "method_names",
           "check_model", "prepare_image", "relevance"]


@dataclass(frozen=True)
class ImageMethod:
    """One image relevance method as the entry, the panel and the lab's scoring see it.

    Attributes:
        name: the name in menus and tables and the ``method`` of :func:`relevance` (``"rollout"``).
        run: ``(prepared, **options) -> (grid, grid) map``, the method's trusting function: the pixels, the
            block and the target are checked and resolved (:class:`PreparedImage`) before it is called. The
            map is a float64 NumPy array over the patch grid, patches row by row.
        order: its place in the menus and in the comparison table (ties: registration order).
        uses_block: whether it reads ``block`` (the attention methods) or ignores it (the pixel methods).
    """

    name: str
    run: Callable
    order: float = float("inf")
    uses_block: bool = True

    def options(self) -> tuple[str, ...]:
        """The options ``run`` takes (its keywords after the prepared image)."""
        return run_options(self.run)


@dataclass(frozen=True)
class PreparedImage:
    """One image checked for one ViT: ``pixels`` ``(1, C, H, W)``, the resolved class ``target``, the last
    ``block`` a propagated map goes through, the patch ``grid`` (patches per side) and the ``patch`` size."""

    model: torch.nn.Module
    pixels: torch.Tensor
    target: int
    block: int
    grid: int
    patch: int

    def to_grid(self, pixel_map: torch.Tensor) -> np.ndarray:
        """A ``(H, W)`` pixel map pooled to the patch grid by summing each patch's pixels (float64)."""
        g, p = self.grid, self.patch
        return pixel_map.detach().reshape(g, p, g, p).sum((1, 3)).double().numpy()


_REGISTRY: Registry[ImageMethod] = Registry("image", ImageMethod, __name__)


def register(method: ImageMethod) -> ImageMethod:
    """Add ``method`` to the registry (a name may be registered once)."""
    return _REGISTRY.register(method)


def unregister(name: str) -> ImageMethod:
    """Remove the method ``name`` from the registry and return its entry."""
    return _REGISTRY.unregister(name)


def entries() -> dict[str, ImageMethod]:
    """Every registered method by name, in menu order (``order``, then registration)."""
    return _REGISTRY.entries()


def method_names() -> tuple[str, ...]:
    """The registered names, in menu order."""
    return _REGISTRY.names()


def entry(name: str) -> ImageMethod:
    """The entry of the method ``name`` (a ValueError naming the registered ones otherwise)."""
    return _REGISTRY.entry(name)


def check_model(model: torch.nn.Module) -> None:
    """Refuse anything but a ViT image classifier, naming what was passed and the fix."""
    config = getattr(model, "config", None)
    if not isinstance(model, torch.nn.Module) or not all(
            hasattr(config, a) for a in ("image_size", "patch_size", "num_hidden_layers", "num_labels")):
        raise TypeError(f"model must be a ViT image classifier (a transformers ViTForImageClassification, e.g. "
                        f"xaikit.models.load_vit() or xaikit.models.tiny_vit()), got {type(model).__name__}; a "
                        f"text classifier is explained by the text methods (xaikit.text.views.explain)")


def prepare_image(model: torch.nn.Module, pixels: torch.Tensor, *, target: Target = None,
                  block: int | None = None) -> PreparedImage:
    """Check one image for the ViT ``model`` and resolve ``target`` once: an int is checked against the
    classes, a str is a class name (:func:`xaikit.concepts.images.resolve_class`), ``None`` is the class of
    one forward pass without gradients. ``block`` (default: the last) is checked against the blocks."""
    from xaikit._validate import check_int
    from xaikit.concepts.images import check_pixels, resolve_class

    check_model(model)
    config = model.config
    n_blocks = int(config.num_hidden_layers)
    block = n_blocks - 1 if block is None else check_int(block, "block", 0, n_blocks - 1)
    pixels = check_pixels(model, pixels)
    if isinstance(target, str):  # a class name, as tcav takes it ("zebra")
        target = resolve_class(model, target)[0]
    elif target is not None:
        target = check_int(target, "target", 0, config.num_labels - 1,
                           hint=f"the model has {config.num_labels} classes")
    else:
        with torch.no_grad():
            target = int(model(pixel_values=pixels).logits[0].argmax())
    grid = int(config.image_size) // int(config.patch_size)
    return PreparedImage(model, pixels, int(target), block, grid, int(config.patch_size))


def relevance(model: torch.nn.Module, pixels: torch.Tensor, method: str, *, target: Target = None,
              steps: int = 16, block: int | None = None) -> tuple[np.ndarray, int]:
    """The (grid, grid) relevance map of ``method`` (one of :func:`method_names`) for class ``target`` (an
    index, or a class name such as "zebra"; None: the predicted class) of one image ``pixels`` (1, 3, H, W),
    normalised as :func:`xaikit.models.vitworld.to_pixels` makes it. Returns ``(map, target)``; the map is a
    float64 NumPy array.

    ``block`` (default: the last) is the attention block read by ``"attention"`` and ``"grad_attention"``,
    and the last block ``"rollout"``, ``"chefer"`` and ``"chefer_lrp"`` propagate through; the pixel methods
    ignore it. ``steps`` is IG's number of path points (the methods that take no ``steps`` ignore it)."""
    from xaikit._fn import computing, ensure_eval

    found = entry(method)
    check_model(model)
    ensure_eval(model, method)
    with computing(model):  # float32, and xaikit.policies' thread count (one thread for the embedded ViTs)
        prepared = prepare_image(model, pixels, target=target, block=block)
        options = {"steps": steps} if "steps" in found.options() else {}
        return found.run(prepared, **options), prepared.target
