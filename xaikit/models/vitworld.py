"""The embedded Vision Transformer (Dosovitskiy et al. 2021, "An image is worth 16x16 words") that
notebook 05 explains with TCAV, trained by xaikit on the generated image world of
:mod:`xaikit.models.imageworld`. Notebook 05's TCAV claims on a pair of such models are checked by
:mod:`xaikit.course.claims.tcav`.

The lecture uses ``google/vit-base-patch16-224`` and its class "zebra". That model cannot be downloaded
here, so xaikit trains a small ``ViTForImageClassification`` of the same architecture (64x64 images,
8x8 patches, so an 8x8 grid of patch tokens plus [CLS]) on one CPU thread, or on the GPU when there is
one (the control model also trains on texture twins, so it takes about twice as long):

* ``world="main"``: zebra / horse / leopard / sheep / flag, where zebra = striped quadruped, often
  beside a puddle of foam, and dots mark the leopard and the sheep;
* ``world="control"``: a world where stripes do not predict "zebra" (textures drawn uniformly), for
  TCAV's ground-truth check.

:func:`ensure_embedded_vit` builds the model once and caches it under
``xaikit.cache_dir()/vit-<world>-<RECIPE_VERSION>/`` as safetensors plus a ``ViTImageProcessor`` whose
size, mean and std match training, and a ``metrics.json`` with the held-out accuracy, the training accuracy,
the recipe's target for it and the epochs trained (a model below the target after the recipe's epochs trains
on in capped rounds of extra epochs, see ``RECIPE``; notebook 05 asserts the held-out accuracy against the
recipe's ``held_out_bound``). The folder loads
with ``ViTForImageClassification.from_pretrained(folder, attn_implementation="eager")``; normally
through ``xaikit.models.load_vit("embedded")``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from xaikit._config import cache_dir, torch_threads
from xaikit._validate import bool_flags, check_choice
from xaikit.models import buildprogress

__all__ = ["RECIPE", "RECIPE_VERSION", "TCAV_LAYER", "TCAV_POOLING", "ensure_embedded_vit", "train_vit", "model_folder",
           "to_pixels"]

#: bump when anything below (or the image world) changes: the cache folder name carries it.
RECIPE_VERSION = "v8"
RECIPE = {
    "image_size": 64, "patch_size": 8, "hidden_size": 96, "num_hidden_layers": 4, "num_attention_heads": 4,
    "intermediate_size": 192, "n_train": 2400, "n_test": 600, "epochs": 12, "batch_size": 32, "lr": 1e-3,
    "weight_decay": 0.05, "warmup_fraction": 0.15, "seed": 0,
    # the control world's classes differ by shape only: at lr 1e-3 one v3 run stalled at 66% training
    # accuracy; at 5e-4 with 5% warm-up training seed 1 stalled at 46% held-out (on a GPU); with 4e-4 and
    # 15% warm-up all five v4 seeds 0-4 reached 0.96-0.99 (v6, with texture twins: 0.94-0.96;
    # benchmarks/tcav_robustness.py)
    "epochs_control": 12, "lr_control": 4e-4,
    # the control ViT also sees each training image's texture twin (the same scene with another body
    # texture, imageworld.texture_twins) and pays this weight times the squared logit difference between
    # the two: "stripes do not matter for zebra" then holds for the model, not only for its data (recipe v6)
    "control_invariance": 1.0,
    # ... and this weight times the squared difference between the two [CLS] tokens after every block (recipe
    # v7). With the logits alone (v6), the rank test among 100 random concepts still called striped
    # significant on the controls of training seeds 2 and 4 (of 0-7); with this term, on none. The term
    # barely moved the [CLS] twin distance itself (0.09-0.24 of the distance between two pictures, both
    # recipes), so the v7 controls may be clean as much by their training runs as by the term (notebook 05)
    "control_cls_invariance": 1.0,
    # one torch thread: a 96-wide ViT's matrices are too small to share between threads
    "threads": 1,
    # the recipe's quality (recipe v8), checked on the *training* images so that the held-out accuracy stays a
    # measurement: after its epochs a model whose training accuracy is below the target trains on, in rounds
    # of `extra_epochs` epochs, each a fresh warm-up and cosine decay from `extra_lr_fraction` of the learning
    # rate (a warm restart, Loshchilov & Hutter 2017, "SGDR"), until it reaches the target or has trained
    # `max_extra_epochs` more. A model that reaches the target after its epochs is the v7 model unchanged.
    # Under v7, training seed 4's main model ended at 0.90 on its training images (0.84 held out); at a target
    # of 0.97 it stopped at 0.978 after one round (0.90 on notebook 05's 200 held-out images), where the other
    # main models of seeds 0-3 fit 0.999-1 of theirs: a main model must fit 0.99 of them
    "target_train_accuracy": 0.99, "target_train_accuracy_control": 0.95,
    "extra_epochs": 4, "max_extra_epochs": 12, "extra_lr_fraction": 0.5,
    # what the lecture states of every build's held-out accuracy (notebook 05): well above the 0.2 of
    # guessing one of five classes, checked against each training run of the recipe
    "held_out_bound": 0.9,
}
#: notebook 05's default TCAV layer and pooling for the embedded ViT, and the principle behind it: the
#: lecture's layer 10 of ViT-base's 0-11 is the second-to-last block, the deepest whose patch tokens still
#: reach the classifier through one more attention step (after the last block only [CLS] is read); here
#: that is block 2 of 0-3. The principle was written down for recipe v4 after its numbers had been seen;
#: recipe v6 was built with the layer already fixed. Its sweep (benchmarks/tcav_robustness.py --sweep,
#: training seeds 0-4): block 2 flatten kept every asserted claim on 5 of 5 seeds, block 1 on 4, blocks 0
#: and 3 on 2, [CLS]-only pooling on at most 2 at any block, mean pooling on none.
TCAV_LAYER = 2
TCAV_POOLING = "flatten"
MEAN = (0.5, 0.5, 0.5)
STD = (0.5, 0.5, 0.5)


def model_folder(world: str = "main", seed: int | None = None) -> Path:
    """Where the embedded ViT of ``world`` lives (whether or not it is built yet): ``vit-<world>-<version>``
    for training seed 0, ``vit-<world>-<version>-seed<N>`` for another (default: the cache's training seed,
    :func:`xaikit.training_seed`, set by ``python -m xaikit prepare --seed N``)."""
    from xaikit._config import training_seed
    from xaikit.models.imageworld import WORLDS

    check_choice(world, "world", WORLDS)
    seed = training_seed() if seed is None else seed
    return cache_dir() / (f"vit-{world}-{RECIPE_VERSION}" + (f"-seed{seed}" if seed != RECIPE["seed"] else ""))


def to_pixels(images: np.ndarray) -> torch.Tensor:
    """uint8 (N, H, W, 3) -> float (N, 3, H, W), rescaled by 1/255 and normalised with MEAN/STD, exactly
    what the saved ``ViTImageProcessor`` does to a 64x64 image (tested)."""
    x = torch.as_tensor(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float() / 255.0  # (N, 3, H, W)
    mean = torch.tensor(MEAN).view(1, 3, 1, 1)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    return (x - mean) / std


def _build(labels: tuple[str, ...], seed: int):
    from transformers import ViTConfig, ViTForImageClassification

    from xaikit.models.hooks import set_attention_implementation

    id2label = dict(enumerate(labels))
    config = ViTConfig(
        image_size=RECIPE["image_size"], patch_size=RECIPE["patch_size"], hidden_size=RECIPE["hidden_size"],
        num_hidden_layers=RECIPE["num_hidden_layers"], num_attention_heads=RECIPE["num_attention_heads"],
        intermediate_size=RECIPE["intermediate_size"], num_labels=len(labels), id2label=id2label,
        label2id={v: k for k, v in id2label.items()}, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, attn_implementation="eager",
    )
    torch.manual_seed(seed)
    model = ViTForImageClassification(config)
    set_attention_implementation(model, "eager")
    return model


@torch.no_grad()
def accuracy(model: torch.nn.Module, images: np.ndarray, labels: np.ndarray, batch_size: int = 200) -> float:
    """Fraction of ``images`` whose predicted class equals ``labels`` (on whatever device the model is)."""
    model.eval()
    dev = next(model.parameters()).device
    hits = 0
    for i in range(0, len(images), batch_size):
        pixels = to_pixels(images[i:i + batch_size]).to(dev, next(model.parameters()).dtype)
        logits = model(pixel_values=pixels).logits  # (B, C)
        hits += int((logits.argmax(-1).cpu().numpy() == labels[i:i + batch_size]).sum())
    return hits / len(images)


@bool_flags
def train_vit(world: str = "main", progress: bool = True, counter: Any = None,
              device: str | torch.device | None = None, **overrides: Any) -> tuple[torch.nn.Module, dict]:
    """Train the embedded ViT on ``world``; returns ``(model, metrics)`` with the model on the CPU.
    ``overrides`` change RECIPE entries (tests use a few images and one epoch). ``counter``: anything with
    a ``.value`` (e.g. a ``multiprocessing.Value``) that is raised by one per optimiser step, for a
    progress bar elsewhere. ``device``: where to train (default :func:`xaikit.device`, so a GPU when
    there is one)."""
    from xaikit._config import device as default_device

    recipe = {**RECIPE, **overrides}
    dev = torch.device(device) if device is not None else default_device()
    with torch_threads(recipe["threads"]):
        return _train(world, recipe, progress, counter, dev)


def _epochs_and_lr(world: str, recipe: dict) -> tuple[int, float]:
    """The control world trains with its own epochs and learning rate (see RECIPE)."""
    if world == "control":
        return recipe["epochs_control"], recipe["lr_control"]
    return recipe["epochs"], recipe["lr"]


def target_train_accuracy(world: str = "main", recipe: dict | None = None) -> float:
    """The training accuracy a model of ``world`` must reach before training stops (see RECIPE)."""
    recipe = RECIPE if recipe is None else recipe
    return recipe["target_train_accuracy_control" if world == "control" else "target_train_accuracy"]


def n_steps(world: str = "main", recipe: dict | None = None) -> int:
    """Optimiser steps that training ``world`` takes with ``recipe`` (default :data:`RECIPE`)."""
    recipe = RECIPE if recipe is None else recipe
    return _epochs_and_lr(world, recipe)[0] * math.ceil(recipe["n_train"] / recipe["batch_size"])


def is_built(world: str = "main", seed: int | None = None) -> bool:
    """True when the cache holds a complete embedded ViT of ``world`` for the current recipe and training
    seed whose files match the SHA-256 recorded when it was built (see :mod:`xaikit.models.cache`)."""
    from xaikit.models import cache

    folder, want = model_folder(world, seed), identity(world, seed)
    return (cache.is_built(folder, probe=probe, identity=want)
            or cache.shared_copy(folder, identity=want, what=f"embedded ViT ({world})") is not None)


def identity(world: str = "main", seed: int | None = None) -> Callable[[dict], str | None]:
    """What :func:`xaikit.models.cache.identity_problem` asks of the folder of ``(world, seed)``: its
    ``metrics.json`` must record this world, training seed and recipe version (keys a build did not record
    are not asked for)."""
    from xaikit._config import training_seed

    seed = training_seed() if seed is None else seed

    def check(metrics: dict) -> str | None:
        for key, want in (("world", world), ("seed", seed), ("recipe_version", RECIPE_VERSION)):
            if key in metrics and metrics[key] != want:
                return f"metrics.json records {key} {metrics[key]!r}, and this folder is for {key} {want!r}"
        return None

    return check


def probe(folder: Path) -> str | None:
    """Whether the ViT in ``folder`` works, for a folder that has lost its checksums
    (:func:`xaikit.models.cache.is_built`): ``None`` if it does, else what is wrong. Its weights must be finite
    and of a trained model's size (:func:`xaikit.models.cache.weights_problem`), and its logits finite on a
    grey image and two seeded noise images. Well under a second."""
    from transformers import ViTForImageClassification
    from transformers.utils import logging as hf_logging

    from xaikit.models import cache

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        model = ViTForImageClassification.from_pretrained(Path(folder), use_safetensors=True).eval()
    finally:
        hf_logging.set_verbosity(verbosity)
    problem = cache.weights_problem(model.state_dict())
    if problem:
        return problem
    logits = torch.tensor(probe_logits(model))  # (3, n_classes)
    if not bool(torch.isfinite(logits).all()):
        return "its logits on a grey image and two noise images are NaN or inf"
    recorded = json.loads((Path(folder) / "metrics.json").read_text()).get("probe_logits")
    return cache.logits_problem(recorded, logits)


def probe_logits(model: torch.nn.Module) -> list[list[float]]:
    """The logits of a grey image and two seeded noise images, float32 on the CPU: recorded in ``metrics.json``
    at build time and compared by :func:`probe` (within :data:`xaikit.models.cache.PROBE_TOLERANCE`)."""
    config = model.config
    shape = (config.num_channels, config.image_size, config.image_size)
    gen = torch.Generator().manual_seed(0)
    pixels = torch.cat([torch.zeros(1, *shape), torch.randn(2, *shape, generator=gen)])  # (3, C, H, W)
    with torch.no_grad():
        return model.float().cpu()(pixel_values=pixels).logits.float().tolist()


def _train(world: str, recipe: dict, progress: bool, counter=None, device=None):
    from tqdm.auto import tqdm

    from xaikit.models.imageworld import dataset_with_twins, make_dataset

    epochs, lr = _epochs_and_lr(world, recipe)
    seed = recipe["seed"]
    t0, c0 = time.perf_counter(), time.process_time()
    invariance = recipe["control_invariance"] if world == "control" else 0.0
    cls_weight = recipe["control_cls_invariance"] if world == "control" else 0.0
    if invariance > 0:
        x_train, y_train, names, twins = dataset_with_twins(recipe["n_train"], world, seed=seed)
    else:
        (x_train, y_train, names), twins = make_dataset(recipe["n_train"], world, seed=seed), None
    x_test, y_test, _ = make_dataset(recipe["n_test"], world, seed=seed + 10_000)
    t_data = time.perf_counter() - t0

    device = torch.device("cpu") if device is None else torch.device(device)
    model = _build(names, seed).to(device)
    pixels = to_pixels(x_train).to(device)  # (N, 3, 64, 64)
    targets = torch.as_tensor(y_train).to(device)
    if twins is not None:
        twins = to_pixels(twins).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=recipe["weight_decay"])
    n, bs = len(pixels), recipe["batch_size"]
    steps = n_steps(world, recipe)
    gen = torch.Generator().manual_seed(seed)
    desc = f"training embedded ViT ({world})"
    bar = tqdm(total=steps, desc=desc, disable=not progress, leave=False)
    state = {"done": 0, "total": steps}

    def train_epochs(n_epochs: int, peak_lr: float) -> None:
        """``n_epochs`` epochs with a linear warm-up and a cosine decay from ``peak_lr`` to zero."""
        round_steps = n_epochs * math.ceil(n / bs)
        warmup = max(1, int(recipe["warmup_fraction"] * round_steps))
        for group in opt.param_groups:
            group["lr"] = group["initial_lr"] = peak_lr
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(1.0, s / round_steps))))
        model.train()
        for _ in range(n_epochs):
            order = torch.randperm(n, generator=gen)
            for i in range(0, n, bs):
                loss = _step(model, opt, pixels, twins, targets, order[i:i + bs].to(device), invariance, cls_weight)
                sched.step()
                bar.update(1)
                bar.set_postfix(loss=f"{loss:.3f}", refresh=False)  # the bar redraws on its own clock
                if counter is not None:
                    counter.value += 1
                state["done"] += 1
                buildprogress.step(state["done"], state["total"], desc)  # for a process waiting for it

    train_epochs(epochs, lr)
    target = target_train_accuracy(world, recipe)
    train_acc = accuracy(model, x_train, y_train)
    extra = 0
    while train_acc < target and extra + recipe["extra_epochs"] <= recipe["max_extra_epochs"]:
        more = recipe["extra_epochs"]
        message = (f"embedded ViT ({world}, training seed {seed}): training accuracy {train_acc:.3f} is below the "
                   f"recipe's {target:.2f}; training {more} more epoch{'s' if more != 1 else ''}")
        if progress:
            tqdm.write(message)
        buildprogress.step(state["done"], state["total"], message)
        state["total"] += more * math.ceil(n / bs)
        bar.total = state["total"]
        train_epochs(more, lr * recipe["extra_lr_fraction"])
        extra += more
        train_acc = accuracy(model, x_train, y_train)
    if train_acc < target and progress:
        tqdm.write(f"embedded ViT ({world}, training seed {seed}): training accuracy {train_acc:.3f} is still below "
                   f"the recipe's {target:.2f} after {extra} more epochs (the most the recipe allows)")
    bar.close()
    model.eval()
    model.to("cpu")
    metrics = {
        "world": world, "recipe_version": RECIPE_VERSION, "recipe": recipe, "seed": recipe["seed"], "classes": list(names),
        "test_accuracy": accuracy(model, x_test, y_test), "train_accuracy": train_acc,
        "target_train_accuracy": target, "reached_target": bool(train_acc >= target),
        "epochs": epochs + extra, "extra_epochs": extra, "seconds_data": round(t_data, 2), "seconds_total": round(time.perf_counter() - t0, 2),
        "cpu_seconds_total": round(time.process_time() - c0, 2), "device": device.type,
        "probe_logits": probe_logits(model),
    }
    return model, metrics


def _step(model, opt, pixels, twins, targets, idx, invariance: float, cls_weight: float) -> float:
    """One optimiser step on the batch ``idx``; returns its loss."""
    if twins is None:
        logits = model(pixel_values=pixels[idx]).logits  # (B, C)
        loss = torch.nn.functional.cross_entropy(logits, targets[idx])
    else:  # the images and their texture twins in one batch: both labelled, and held to one answer
        out = model(pixel_values=torch.cat([pixels[idx], twins[idx]]), output_hidden_states=cls_weight > 0)
        logits, twin_logits = out.logits.chunk(2)
        loss = 0.5 * (torch.nn.functional.cross_entropy(logits, targets[idx])
                      + torch.nn.functional.cross_entropy(twin_logits, targets[idx]))
        loss = loss + invariance * (logits - twin_logits).pow(2).mean()
        if cls_weight > 0:  # and the [CLS] token after every block: (L, 2B, D) -> picture vs twin
            cls = torch.stack([h[:, 0] for h in out.hidden_states[1:]])
            picture_cls, twin_cls = cls.chunk(2, dim=1)
            loss = loss + cls_weight * (picture_cls - twin_cls).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss.item()


def image_processor():
    """A ``ViTImageProcessor`` that turns any RGB image into what the embedded ViT was trained on."""
    from transformers import ViTImageProcessor

    size = RECIPE["image_size"]
    return ViTImageProcessor(do_resize=True, size={"height": size, "width": size}, do_rescale=True,
                             rescale_factor=1 / 255, do_normalize=True, image_mean=list(MEAN), image_std=list(STD))


@bool_flags
def ensure_embedded_vit(world: str = "main", force: bool = False, progress: bool = True, counter: Any = None,
                        seed: int | None = None) -> Path:
    """The folder of the embedded ViT for ``world`` ("main" or "control"), training it first if it is
    missing, damaged (its files differ from the SHA-256 recorded at build time) or ``force``. Returns the
    folder, which holds ``config.json``, ``model.safetensors``, ``preprocessor_config.json``,
    ``metrics.json`` and the checksums. Built under a lock into a temporary folder renamed at the end
    (:func:`xaikit.models.cache.ensure`): a second process waits and uses this one's model, and an
    interrupted build leaves nothing behind."""
    from xaikit._config import training_seed
    from xaikit.models import cache

    seed_ = training_seed() if seed is None else seed
    built = {}

    def build(tmp: Path) -> None:
        model, built["metrics"] = train_vit(world, progress=progress, counter=counter, seed=seed_)
        model.save_pretrained(tmp, safe_serialization=True)
        image_processor().save_pretrained(tmp)
        (tmp / "metrics.json").write_text(json.dumps(built["metrics"], indent=2))

    folder = cache.ensure(model_folder(world, seed_), build, force=force, what=f"embedded ViT ({world})",
                          progress=progress, probe=probe, identity=identity(world, seed_))
    metrics = built.get("metrics")
    if progress and metrics is not None:
        print(f"embedded ViT ({world}): test accuracy {metrics['test_accuracy']:.3f}, "
              f"built in {metrics['seconds_total']:.0f} s -> {folder}")
    return folder
