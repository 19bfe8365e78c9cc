"""Image input for TCAV (Kim et al. 2018, "Interpretability beyond feature attribution: quantitative testing
with concept activation vectors (TCAV)", ICML; notebook 05): the concept, counterpart and class sets as
(H, W, 3) uint8 arrays, the model's ``pixel_values`` through its image processor, and a class given by index or
name. Used by :mod:`xaikit.concepts.activations`, :mod:`xaikit.concepts.significance` and
:mod:`xaikit.concepts.tcav`.
"""

from __future__ import annotations

import difflib
import os
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from xaikit._validate import check_int

if TYPE_CHECKING:
    #: a set of images: an array or tensor (N, H, W[, C]), or a sequence of (H, W[, C]) arrays, PIL images or
    #: image file names (what :func:`prepare_images` reads)
    ImageSet = np.ndarray | torch.Tensor | Sequence[Any]

__all__ = ["prepare_images", "pixel_values", "resolve_class", "check_pixels"]


def check_not_one_image(images: ImageSet, name: str = "images") -> None:
    """Refuse one (H, W, 3) image where a set of images belongs: iterating it would give its pixel rows as
    "images". Arrays and tensors are checked; lists and other inputs pass."""
    shape = tuple(images.shape) if isinstance(images, (np.ndarray, torch.Tensor)) else None
    if shape is not None and len(shape) == 3 and shape[-1] in (3, 4) and min(shape[:2]) > 4:
        raise ValueError(f"{name} looks like one image of shape {shape} (H, W, channels), but a set of "
                         f"images is expected; pass a batch (N, H, W, 3), e.g. images[None] for a set of one, or "
                         f"a list of images (TCAV's sets usually have 30-100)")


def prepare_images(images: ImageSet, name: str = "images", min_count: int = 2) -> list[np.ndarray]:
    """A list of (H, W, 3) uint8 arrays from a uint8/float array (N, H, W[, C]) or a list of PIL images /
    arrays. Grayscale and RGBA are converted to RGB with a warning; anything else is rejected."""
    if isinstance(images, torch.Tensor):
        images = images.detach().cpu().numpy()
    if isinstance(images, np.ndarray):
        check_not_one_image(images, name)
        if images.ndim not in (3, 4):
            raise ValueError(f"{name} must be a batch of images (N, H, W, 3) (or (N, H, W) grayscale), got an "
                             f"array of shape {images.shape}; for one image use images[None]")
        items = list(images)
    elif isinstance(images, Sequence) and not isinstance(images, (str, bytes)):
        items = list(images)
    else:
        raise TypeError(f"{name} must be an array (N, H, W, 3) or a list of PIL images/arrays, got "
                        f"{type(images).__name__}")
    if len(items) < min_count:
        raise ValueError(f"{name} has {len(items)} image(s); a concept or class set needs at least {min_count} "
                         "(TCAV's sets usually have 30-100)")
    converted, notes = [], set()
    for i, item in enumerate(items):
        arr, note = _one_image(item, f"{name}[{i}]")
        converted.append(arr)
        if note:
            notes.add(note)
    if notes:
        warnings.warn(f"{name}: converted {' and '.join(sorted(notes))} images to RGB", UserWarning, stacklevel=3)
    return converted


def _one_image(item, name: str) -> tuple[np.ndarray, str]:
    if isinstance(item, (str, os.PathLike)):  # a file name: opened with PIL, then read like a PIL image
        item = _open_image(item, name)
    if hasattr(item, "convert") and hasattr(item, "mode"):  # a PIL image
        mode = item.mode
        if mode == "RGB":
            return np.asarray(item), ""
        if mode in ("L", "LA", "1", "I;16", "P", "RGBA", "CMYK", "I", "F"):
            note = "RGBA" if mode in ("RGBA", "LA") else "grayscale" if mode in ("L", "1", "I;16", "I", "F") else mode
            return np.asarray(item.convert("RGB")), note
        raise ValueError(f"{name} has PIL mode {mode!r}; convert it with image.convert('RGB')")
    a = np.asarray(item)
    if a.dtype == np.uint8:
        pass
    elif a.dtype.kind == "f":
        if not np.isfinite(a).all() or a.min() < 0 or a.max() > 1:
            raise ValueError(f"{name} is a float image with values outside [0, 1] (or NaN); pass uint8 0-255 or "
                             "floats in [0, 1]")
        a = (a * 255 + 0.5).astype(np.uint8)
    else:
        raise TypeError(f"{name} has dtype {a.dtype}; images must be uint8 (0-255) or float in [0, 1]")
    if a.ndim == 2:
        return np.repeat(a[..., None], 3, axis=-1), "grayscale"
    if a.ndim == 3 and a.shape[-1] == 1:
        return np.repeat(a, 3, axis=-1), "grayscale"
    if a.ndim == 3 and a.shape[-1] == 4:
        return a[..., :3], "RGBA"
    if a.ndim == 3 and a.shape[-1] == 3:
        return a, ""
    raise ValueError(f"{name} has shape {a.shape}; an image must be (H, W, 3) RGB, (H, W, 4) RGBA or (H, W) "
                     "grayscale (channels last)")


def _open_image(path, name: str):
    """The image file ``path`` as a PIL image, or an error naming ``name`` and the file."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            image.load()
            return image
    except FileNotFoundError:
        raise FileNotFoundError(f"{name} is the file name {str(path)!r}, but there is no such file; pass image "
                                f"files that exist, or the images themselves (arrays or PIL images)") from None
    except (UnidentifiedImageError, OSError) as err:
        raise ValueError(f"{name} is the file {str(path)!r}, which PIL cannot read as an image ({err}); pass a "
                         f"PNG or JPEG file, or the image itself (an array or PIL image)") from None


def check_pixels(model: torch.nn.Module, pixels: torch.Tensor) -> torch.Tensor:
    """``pixels`` if it is one normalised image ``(1, C, H, W)`` of the size and channel count the ViT ``model``
    was built for; else an error that names the parameter and the fix (a grayscale picture, a wrong size, a
    batch, a NumPy array). Used by every per-image ViT explanation (:mod:`xaikit.image.relevance`,
    :mod:`xaikit.image.lrp`)."""
    config = model.config
    size, channels = int(config.image_size), int(config.num_channels)
    make = "make it with xaikit.models.vitworld.to_pixels(images[:1]) or the model's image processor"
    if not isinstance(pixels, torch.Tensor):
        raise TypeError(f"pixels must be a torch tensor (1, {channels}, {size}, {size}), got "
                        f"{type(pixels).__name__}: {make}")
    if not pixels.is_floating_point():
        raise TypeError(f"pixels must be floating point (normalised), got {pixels.dtype}: {make}")
    if pixels.dim() == 4 and pixels.shape[0] == 1 and pixels.shape[-1] == channels and pixels.shape[1] != channels:
        raise ValueError(f"pixels has its channels last, shape {tuple(pixels.shape)}; the model takes them first, "
                         f"(1, {channels}, {size}, {size}): pass pixels.permute(0, 3, 1, 2), or {make}")
    if pixels.dim() != 4 or pixels.shape[0] != 1:
        raise ValueError(f"pixels must be one image of shape (1, {channels}, {size}, {size}), got "
                         f"{tuple(pixels.shape)}: take one row, e.g. to_pixels(images[:1])")
    if pixels.shape[1] != channels:
        raise ValueError(f"pixels has {pixels.shape[1]} channel(s) but the model takes {channels} (shape "
                         f"{tuple(pixels.shape)}): a grayscale image must be converted to RGB first (e.g. "
                         f"PIL's image.convert('RGB'), or pixels.expand(-1, 3, -1, -1)); {make}")
    if tuple(pixels.shape[2:]) != (size, size):
        raise ValueError(f"pixels is {pixels.shape[2]}x{pixels.shape[3]} but the model was built for {size}x{size} "
                         f"(config.image_size): resize the picture first; {make}")
    finite = torch.isfinite(pixels)
    if not bool(finite.all()):
        bad = int((~finite).sum())
        raise ValueError(f"pixels contains NaN or inf ({bad} value{'s' if bad > 1 else ''}): every relevance map "
                         f"would be NaN; {make}")
    low, high = float(pixels.min()), float(pixels.max())
    if max(-low, high) > PIXEL_RANGE:
        from xaikit._fn import warn

        warn(f"pixels range from {low:.3g} to {high:.3g}, far outside what an image processor gives (about -1..1, "
             "or -2.1..2.6 with ImageNet's mean and std): is the image still in 0..255? The "
             f"model explains such pixels as another picture; {make}")
    return pixels


#: the largest |value| :func:`check_pixels` takes without a warning: normalised pixels lie within about -1..1
#: (mean 0.5, std 0.5) or -2.1..2.6 (ImageNet's mean and std), test images drawn from a standard normal within
#: about -5..5; an image in 0..255 reaches hundreds
PIXEL_RANGE = 10.0


def check_processor(processor: object | None) -> object | None:
    """``processor``: None (the model's own preprocessing) or an image processor; a tokenizer or a name is
    refused, naming the parameter and the fix."""
    if processor is None:
        return None
    if hasattr(processor, "convert_tokens_to_ids") or hasattr(processor, "tokenize"):
        raise TypeError(f"processor is a tokenizer ({type(processor).__name__}); TCAV feeds images, so pass the "
                        "model's image processor (e.g. ViTImageProcessor, as load_vit returns) or None")
    if isinstance(processor, (str, bytes)) or not callable(processor):
        raise TypeError(f"processor must be the model's image processor (e.g. ViTImageProcessor, the second value "
                        f"load_vit returns) or None for the model's own; got {type(processor).__name__} "
                        f"{processor!r}")
    return processor


def _processor(model, processor):
    if check_processor(processor) is not None:
        return processor
    from transformers import ViTImageProcessor

    size = int(getattr(model.config, "image_size", 224))
    return ViTImageProcessor(size={"height": size, "width": size})


def pixel_values(model: torch.nn.Module, images: ImageSet, processor: object | None = None,
                 name: str = "images") -> torch.Tensor:
    """(N, 3, S, S) model inputs: the processor's resize/rescale/normalise. Images already at the model's
    size skip the (slow, per-image) resize and are normalised in one vectorised step."""
    arrays = prepare_images(images, name) if not (isinstance(images, list) and images
                                                    and isinstance(images[0], np.ndarray)
                                                    and images[0].dtype == np.uint8
                                                    and images[0].ndim == 3 and images[0].shape[-1] == 3) else images
    proc = _processor(model, processor)
    size = int(getattr(model.config, "image_size", 224))
    same = all(a.shape[:2] == (size, size) for a in arrays)
    if same and getattr(proc, "do_rescale", True) and not getattr(proc, "do_center_crop", False):
        x = torch.as_tensor(np.stack(arrays)).permute(0, 3, 1, 2).float()  # (N, 3, S, S)
        x = x * float(getattr(proc, "rescale_factor", 1 / 255))
        if getattr(proc, "do_normalize", True):
            mean = torch.tensor(proc.image_mean, dtype=torch.float32).view(1, 3, 1, 1)
            std = torch.tensor(proc.image_std, dtype=torch.float32).view(1, 3, 1, 1)
            x = (x - mean) / std
        return x
    return proc(images=[a for a in arrays], return_tensors="pt")["pixel_values"].float()


def resolve_class(model: torch.nn.Module, target: int | str) -> tuple[int, str]:
    """``(index, name)`` of a class given by index or name (case-insensitive; for ImageNet-style labels
    like "tabby, tabby cat" any comma-separated part matches). Unknown names list the close matches."""
    id2label = {int(k): str(v) for k, v in model.config.id2label.items()}
    if isinstance(target, (int, np.integer)) and not isinstance(target, bool):
        idx = check_int(target, "target", 0, len(id2label) - 1, hint="a class index of the model")
        return idx, id2label[idx]
    if not isinstance(target, str):
        raise TypeError(f"target must be a class name or index, got {type(target).__name__}")
    wanted = target.strip().lower()
    for idx, label in id2label.items():
        if wanted == label.lower() or wanted in [p.strip().lower() for p in label.split(",")]:
            return idx, label
    names = [p.strip() for label in id2label.values() for p in label.split(",")]
    close = difflib.get_close_matches(target, names, n=5, cutoff=0.5)
    hint = f" Close matches: {', '.join(map(repr, close))}." if close else ""
    some = ", ".join(repr(v) for v in list(id2label.values())[:8])
    raise ValueError(f"target {target!r} is not a class of this model ({len(id2label)} classes, e.g. {some}).{hint}")


def _imgs(images, name):
    return prepare_images(images, name)
