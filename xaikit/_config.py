"""Seeds, device choice, fast mode and the cache directory: the few global settings of xaikit.

Nothing here imports torch at module level, so ``import xaikit`` stays cheap.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

FAST_ENV = "XAIKIT_FAST"
CACHE_ENV = "XAIKIT_CACHE"
DEVICE_ENV = "XAIKIT_DEVICE"
MODEL_DTYPE_ENV = "XAIKIT_MODEL_DTYPE"  # read by xaikit.models.loaders


def set_seed(seed: int = 0) -> int:
    """Seed Python's ``random``, NumPy and torch (CPU and every GPU) with one integer.

    Returns the seed so a notebook can print what it used. Torch is seeded only if it is importable,
    which it always is in a full install.
    """
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    random.seed(seed)
    import numpy as np

    np.random.seed(seed % 2**32)  # noqa: NPY002 - seeding the legacy global generator is the point
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a hard dependency
        return seed
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
    return seed


def device(prefer: str | None = None):
    """The torch device xaikit puts models on: CUDA if present, else Apple MPS, else CPU.

    ``prefer`` (or the ``XAIKIT_DEVICE`` environment variable) forces a choice, e.g. ``"cpu"`` on a GPU
    machine to reproduce the lecture's CPU numbers.
    """
    import torch

    choice = prefer or os.environ.get(DEVICE_ENV)
    if choice:
        return torch.device(choice)
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def fast_mode() -> bool:
    """True when ``XAIKIT_FAST`` is set to 1/true/yes: CI's switch that shrinks sample counts."""
    return os.environ.get(FAST_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def pick(normal, fast):
    """``fast`` in fast mode, ``normal`` otherwise: ``n = pick(50, 10)``."""
    return fast if fast_mode() else normal


def cache_dir(create: bool = True) -> Path:
    """Where prepared models and data live: ``$XAIKIT_CACHE`` or the user's cache directory."""
    env = os.environ.get(CACHE_ENV)
    if env:
        path = Path(env).expanduser()
    else:
        from platformdirs import user_cache_dir

        path = Path(user_cache_dir("xaikit", appauthor=False))
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def cpu_busy() -> bool:
    """Used only by the sentiment model's build recipe (its thread count is part of the recorded recipe);
    every method takes its thread count from :mod:`xaikit.policies` instead.

    True when other processes already keep the cores busy (1-minute load average near the core count).

    On such a machine torch's OpenMP threads wait for each other, and one thread is several times faster
    than two (measured on 2 shared cores at load 10: one Grad-SAM pass 4.6 s with 2 threads, 0.18 s with 1).
    """
    return load_average() > (os.cpu_count() or 1) - 0.5


def load_average() -> float:
    """The 1-minute load average (0.0 where the platform has none, e.g. Windows)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


# torch_threads lives in xaikit.policies with every other process-wide setting; imported here for the
# model builders that read it from _config.
from xaikit.policies import torch_threads as torch_threads  # noqa: E402
