"""The rank test's random concepts (notebook 07, section 1): image sets of the generated world
(:func:`xaikit.models.imageworld.random_images`) posing as concepts, against which
:func:`xaikit.concepts.significance.tcav_significance` ranks each concept's TCAV score (Kim et al. 2018
compare with random sets by a t-test; the rank among them is exact at any number of runs). Drawn once into
the cache and read back, keyed by the image world's code.

Each set is drawn on its own seed, so no two share an image. Drawing them instead as subsets of one smaller
pool of P images (P forward passes instead of K x size, the obvious saving at vit-base) would make the random
concepts overlap: their scores would spread less than independent sets' (for a mean over a set, by the
finite-population factor (P - size) / (P - 1), 0.8 for P = 250 and size 50), and sit about the pool's quirks,
so a concept that is one more random set would land beyond them more often than the p-value says. The rank
test would no longer hold its level, so the sets are drawn independently.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from xaikit._validate import bool_flags

__all__ = ["default_null_sets", "null_sets_on_disk", "warm_null_sets"]


@functools.lru_cache(maxsize=1)
def default_null_sets(size: int, seed: int, n_null: int) -> tuple[np.ndarray, ...]:
    """The rank test's random concepts, drawn once per session (100 sets of 50 take about 10 s to draw, and
    notebook 07 tests two models against the same sets) and kept on disk by :func:`null_sets_on_disk`."""
    try:
        return null_sets_on_disk(size, seed, n_null, progress=False)
    except OSError:  # no usable cache folder: draw them here
        return _draw_null_sets(size, seed, n_null)


def _draw_null_sets(size: int, seed: int, n_null: int) -> tuple[np.ndarray, ...]:
    from xaikit.models.imageworld import random_images

    return tuple(random_images(size, seed=900_000 + seed * 1000 + k) for k in range(n_null))


@bool_flags
def null_sets_on_disk(size: int = 50, seed: int = 0, n_null: int = 100,
                      progress: bool = True) -> tuple[np.ndarray, ...]:
    """The rank test's default random concepts (``n_null`` sets of ``size`` images), drawn once into the cache
    (``xaikit.cache_dir()/imageworld/``, checksummed like the models: a damaged file is drawn again, never
    loaded) and read back in a fraction of a second. The folder is keyed by the image world's source code
    (:mod:`xaikit.models.imageworld` and :mod:`xaikit.models.textures`), so a changed world draws them again. ``python -m xaikit prepare`` draws notebook 07's (50 images, 100
    sets, seed 0) while the ViTs train. Returns the sets as a tuple of uint8 arrays."""
    from xaikit.models import cache

    folder = _null_sets_folder(size, seed, n_null)

    def build(tmp):
        np.save(tmp / _NULL_FILE, np.stack(_draw_null_sets(size, seed, n_null)))

    folder = cache.ensure(folder, build, required=(_NULL_FILE,), what="rank test's random sets", progress=progress)
    sets = np.load(folder / _NULL_FILE)
    return tuple(sets[k] for k in range(len(sets)))


_NULL_FILE = "null-sets.npy"


def _null_sets_folder(size: int, seed: int, n_null: int):
    """Where :func:`null_sets_on_disk` keeps one draw: keyed by its arguments and the image world's code."""
    import hashlib
    from pathlib import Path

    from xaikit._config import cache_dir
    from xaikit.models import imageworld, textures

    code = hashlib.sha256(b"".join(Path(m.__file__).read_bytes() for m in (imageworld, textures))).hexdigest()[:12]
    return cache_dir() / "imageworld" / f"null-sets-{size}x{n_null}-seed{seed}-{code}"


@bool_flags
def warm_null_sets(progress: bool = True) -> Path:
    """Draw the rank test's random sets (50 images, seed 0) into the cache unless they are there: 100 sets
    for notebook 07, 200 for lecture 05's one-sided test; called by ``python -m xaikit prepare``. Returns the
    folder of the larger draw."""
    from xaikit._config import located

    null_sets_on_disk(50, 0, 100, progress=progress)
    null_sets_on_disk(50, 0, 200, progress=progress)
    return located(_null_sets_folder(50, 0, 200))
