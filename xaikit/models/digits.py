"""The digits CNN of notebooks 01 and 02: a small convolutional network trained on scikit-learn's bundled
8x8 digits (no download), for SmoothGrad (Smilkov et al. 2017, "SmoothGrad: removing noise by adding
noise"), Integrated Gradients on images (notebook 02) and, trained on permuted labels, the data
randomisation test of Adebayo et al. (2018, "Sanity checks for saliency maps"), notebook 01.

:func:`digits_classifier` trains it seeded, keeps it in memory for the session and on disk as safetensors
with its SHA-256 beside it (``xaikit.cache_dir()/toys/``); :mod:`xaikit.tensor.toys` reaches these names
beside the lecture's other toys.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from xaikit._config import cache_dir, fast_mode, torch_threads, training_seed
from xaikit._validate import bool_flags, check_float, check_int
from xaikit.models import buildprogress

#: the version in a cached CNN's file name (``..._v1.safetensors``): a changed recipe gets a new one, and
#: ``python -m xaikit cache prune`` removes files of the older ones
FILE_VERSION = "v1"

__all__ = ["DigitsClassifier", "DigitsData", "TrainedDigits", "load_digits", "digits_classifier", "digits_setup",
           "shuffled_labels"]


class DigitsClassifier(nn.Module):
    """A small CNN for 8x8 grey digits: ``(B, 1, 8, 8)`` pixels in [0, 1] -> ``(B, 10)`` logits."""

    def __init__(self, channels: int = 8):
        super().__init__()
        self.conv1 = nn.Conv2d(1, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, 2 * channels, 3, padding=1)
        self.head = nn.Linear(2 * channels * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.conv1(x))  # (B, c, 8, 8)
        h = torch.relu(self.conv2(h))  # (B, 2c, 8, 8)
        h = nn.functional.max_pool2d(h, 2)  # (B, 2c, 4, 4)
        return self.head(h.flatten(1))  # (B, 10)


@dataclass
class DigitsData:
    """scikit-learn's 8x8 digits as tensors ``(N, 1, 8, 8)`` in [0, 1] with labels, split train/test."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor


@dataclass
class TrainedDigits:
    """A trained :class:`DigitsClassifier` with its data and test accuracy."""

    model: DigitsClassifier
    data: DigitsData
    accuracy: float
    seed: int
    epochs: int
    seconds: float
    from_cache: bool
    #: trained on labels permuted before training (Adebayo et al. 2018's data randomisation test)
    shuffled_labels: bool = False
    #: accuracy on the labels it was trained on (the permuted ones when ``shuffled_labels``)
    train_accuracy: float | None = None
    #: the safetensors file in the cache (None with ``disk_cache=False``)
    path: Path | None = None


def load_digits(test_fraction: float = 0.25) -> DigitsData:
    """The 1797 bundled digits (a CSV shipped inside scikit-learn: no download), with a fixed stratified split.

    The file is read directly (the same data as ``sklearn.datasets.load_digits``), which avoids importing
    scikit-learn and SciPy: seconds on a busy machine.
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    test_fraction = check_float(test_fraction, "test_fraction", 0.0, 0.9, strict_min=True)
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("load_digits needs scikit-learn installed (it ships the digits data); pip install scikit-learn")
    csv = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data" / "digits.csv.gz"
    table = np.loadtxt(csv, delimiter=",", dtype=np.float32)  # (1797, 65): 64 pixels in 0..16, then the label
    x = torch.from_numpy(table[:, :64] / 16.0).reshape(-1, 1, 8, 8)  # (N, 1, 8, 8)
    y = torch.from_numpy(table[:, 64].astype(np.int64))  # (N,)
    rng = np.random.RandomState(0)
    test = np.zeros(len(y), dtype=bool)
    for c in range(10):  # stratified: the same fraction of every digit in the test set
        idx = np.flatnonzero(table[:, 64] == c)
        test[rng.permutation(idx)[: round(test_fraction * len(idx))]] = True
    train = torch.from_numpy(~test)
    test = torch.from_numpy(test)
    return DigitsData(x[train], y[train], x[test], y[test])


_MEMORY: dict[tuple[int, int, bool], TrainedDigits] = {}
#: each cached model's :func:`~xaikit.models.fingerprint.fingerprint` when it was handed out: one changed in
#: place since (a student's randomisation experiment) is loaded again instead of served as trained
_SEEN: dict[tuple[int, int, bool], tuple] = {}


def shuffled_labels(labels: torch.Tensor, seed: int) -> torch.Tensor:
    """``labels`` permuted by a generator seeded with ``seed`` (the global RNG is untouched): the same
    labels in a random order, so no image keeps a reason for its label (Adebayo et al. 2018, section 4)."""
    generator = torch.Generator().manual_seed(check_int(seed, "seed", 0))
    return labels[torch.randperm(len(labels), generator=generator)]


@bool_flags
def digits_classifier(seed: int | None = None, epochs: int | None = None, progress: bool = True,
                      disk_cache: bool = True, shuffle_labels: bool = False, force: bool = False) -> TrainedDigits:
    """A :class:`DigitsClassifier` trained on the bundled digits in a few seconds on a laptop CPU.

    Seeded (same seed, same weights), cached in memory for the session and, with ``disk_cache``, as
    safetensors under ``xaikit.cache_dir() / "toys"`` with its SHA-256 in a ``.sha256`` file beside it: a file
    that does not match it (or has none, or holds NaN) is trained again, with a message. The global RNG is
    never touched. The model is returned in eval mode. Notebook 01, §4.

    Args:
        seed: seeds the initialisation and the batch order (the global RNG is left untouched). ``None``: the
            cache's training seed (:func:`xaikit.training_seed`, 0 unless ``python -m xaikit prepare --seed N``
            chose another), so notebooks 01 and 02 use the digits CNN of the build they run on.
        epochs: passes over the training set (default 12; 6 in fast mode; with ``shuffle_labels`` 60, 30 in
            fast mode).
        force: train again even if the memory or disk cache has this model (``python -m xaikit prepare --force``).
        progress: show a tqdm bar while training.
        disk_cache: read and write the trained weights in the cache directory.
        shuffle_labels: train on the training labels permuted by :func:`shuffled_labels` (seeded by
            ``seed``): the data randomisation test of Adebayo et al. (2018), notebook 01. ``data`` keeps the
            true labels; ``train_accuracy`` is measured on the permuted ones. Such a model learns more slowly
            (Adam at 3e-3 instead of 1e-2, which collapsed 4 of 5 seeds to a constant prediction whose gradient
            is exactly 0 everywhere) and longer: 60 epochs fit 43-50% of the permuted labels
            (chance: 10%) over seeds 0-4, 30 epochs 30-35%.
    """
    seed = training_seed() if seed is None else check_int(seed, "seed", 0)
    from xaikit._validate import check_bool

    shuffle_labels = check_bool(shuffle_labels, "shuffle_labels")
    force, disk_cache = check_bool(force, "force"), check_bool(disk_cache, "disk_cache")
    default_epochs = (30 if fast_mode() else 60) if shuffle_labels else (6 if fast_mode() else 12)
    epochs = check_int(default_epochs if epochs is None else epochs, "epochs", 1)
    key = (seed, epochs, shuffle_labels)
    if key in _MEMORY and not force:
        if _fingerprint(_MEMORY[key]) == _SEEN.get(key):
            return _MEMORY[key]
        del _MEMORY[key]
        print("xaikit: the digits CNN (or its data) that digits_classifier() handed out earlier in this session "
              "was changed since (its weights, its train/eval mode or its tensors), so it is loaded again as "
              "trained; the changed one is still the object you hold", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    data = load_digits()
    train_y = shuffled_labels(data.train_y, seed) if shuffle_labels else data.train_y
    kind = "shuffled_" if shuffle_labels else ""
    path = (cache_dir() / "toys" / f"digits_cnn_{kind}seed{seed}_epochs{epochs}_{FILE_VERSION}.safetensors" if disk_cache
            else None)
    with torch.random.fork_rng(devices=[]):  # the layers' default initialisation draws from the global RNG;
        model = DigitsClassifier()  # _train re-initialises under the seed, so leave the caller's RNG alone
    labelled = DigitsData(data.train_x, train_y, data.test_x, data.test_y)
    desc = "training the digits CNN on shuffled labels" if shuffle_labels else "training the digits CNN"
    lr = 3e-3 if shuffle_labels else 1e-2
    shared = None if path is None or force or path.is_file() else _shared_file(path)
    if shared is not None and _load_checked(model, shared, shared=True):
        path, from_cache = shared, True  # the course's prepared cache holds it (read only)
    elif path is None:
        _train(model, labelled, seed, epochs, progress, desc, lr=lr)
        from_cache = False
    else:
        from xaikit.models.cache import build_lock

        # two processes asking for the same model train it once: the second waits, then reads the first's file
        with build_lock(path, "digits CNN", progress):
            from_cache = not force and _load_checked(model, path)
            if not from_cache:
                _train(model, labelled, seed, epochs, progress, desc, lr=lr)
                _save_checked(model, path)
    model.eval()
    with torch.no_grad():
        accuracy = float((model(data.test_x).argmax(1) == data.test_y).float().mean())
        train_accuracy = float((model(data.train_x).argmax(1) == train_y).float().mean())
    trained = TrainedDigits(model, data, accuracy, seed, epochs, time.perf_counter() - t0, from_cache,
                            shuffle_labels, train_accuracy, path)
    _MEMORY[key] = trained
    _SEEN[key] = _fingerprint(trained)
    return trained


def _fingerprint(trained: TrainedDigits) -> tuple:
    from xaikit.models.fingerprint import fingerprint

    d = trained.data
    return fingerprint(trained.model, d.train_x, d.train_y, d.test_x, d.test_y)


def _sidecar(path: Path) -> Path:
    """The checksum file beside a cached digits CNN: ``<name>.safetensors.sha256`` (``sha256sum`` format)."""
    return path.with_name(path.name + ".sha256")


def _shared_file(path: Path) -> Path | None:
    """``path``'s twin in the shared cache (``$XAIKIT_SHARED_CACHE``) if that holds the file, else ``None``."""
    from xaikit._config import located

    found = located(path)
    return found if found != path and found.is_file() else None


def _load_checked(model: nn.Module, path: Path, shared: bool = False) -> bool:
    """Load ``path`` into ``model`` if it is there, matches the SHA-256 recorded beside it when it was saved,
    and holds finite weights. False (with a message when a file was there) means: train it again.

    A NaN in ``head.weight`` would give NaN logits and chance accuracy, and one flipped byte a slightly
    different model, without a word. A file without its checksum file (saved by an older xaikit, or by a
    save that was cut off) is trained again: seconds, and the same seeded weights. ``shared``: ``path`` is in
    the course's read-only cache, so a damaged file is reported for the instructor and trained into the
    personal cache instead.
    """
    if not path.is_file():
        return False
    from xaikit.models.cache import sha256_file

    side = _sidecar(path)
    problem = None
    try:
        recorded = side.read_text().split()[0] if side.is_file() else None
    except (OSError, IndexError):
        recorded = ""
    if recorded is None:
        problem = f"it has no checksum file {side.name} (saved before xaikit checked this cache, or cut off)"
    elif recorded != sha256_file(path):
        problem = "its SHA-256 differs from the one recorded when it was saved (changed or corrupt)"
    else:
        from safetensors.torch import load_file

        try:
            model.load_state_dict(load_file(str(path)))
            if not all(bool(torch.isfinite(t).all()) for t in model.state_dict().values()):
                problem = "its weights hold NaN or inf"
        except Exception as err:  # noqa: BLE001 - any failure to read it back means: train it again
            problem = f"it cannot be read back ({type(err).__name__}: {err})"
    if problem is None:
        return True
    if shared:
        from xaikit._config import SHARED_CACHE_ENV

        print(f"xaikit: the digits CNN in the shared cache ({SHARED_CACHE_ENV}) at {path} is damaged: {problem}. xaikit "
              "leaves it as it is (the shared cache is read-only): ask the instructor to rebuild it (`python -m xaikit "
              "prepare --force` with XAIKIT_CACHE set to the shared folder, where it is writable). Until then this "
              "kernel trains its own copy in your personal cache (a few seconds)", file=sys.stderr, flush=True)
        return False
    print(f"xaikit: the cached digits CNN {path} is not usable: {problem}; training it again (a few seconds)",
          flush=True)
    return False


def _save_checked(model: nn.Module, path: Path) -> None:
    """Write the weights and their SHA-256 beside them, each atomically (a temporary file, then a rename).
    The weights go first: a save cut off between the two renames leaves a file that fails its check."""
    import os
    import secrets

    from safetensors.torch import save_file

    from xaikit.models.cache import sha256_file

    path.parent.mkdir(parents=True, exist_ok=True)
    tag = f".{os.getpid()}-{secrets.token_hex(3)}.part"
    tmp, side_tmp = path.with_name(path.name + tag), _sidecar(path).with_name(_sidecar(path).name + tag)
    try:
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(tmp))
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        with open(side_tmp, "w") as fh:
            fh.write(f"{sha256_file(tmp)}  {path.name}\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        os.replace(side_tmp, _sidecar(path))
    finally:
        for leftover in (tmp, side_tmp):
            leftover.unlink(missing_ok=True)


def digits_setup(index: int = 0) -> tuple[nn.Module, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(model, image, baseline, train_images)`` for the IG lessons: the digits CNN of
    :func:`digits_classifier` (the cache's training seed, no progress bar), test image ``index`` ``(1, 8, 8)``, the black image
    as baseline and the training images (for the data-drawn baselines). Notebook 02 and its panels."""
    trained = digits_classifier(progress=False)
    x = trained.data.test_x[index]
    return trained.model, x, torch.zeros_like(x), trained.data.train_x


def _train(model: nn.Module, data: DigitsData, seed: int, epochs: int, progress: bool,
           desc: str = "training the digits CNN", lr: float = 1e-2) -> None:
    from tqdm.auto import tqdm

    batch = 64
    steps_per_epoch = math.ceil(len(data.train_y) / batch)
    # a model this small trains fastest on one thread
    with torch_threads(1):
        _train_loop(model, data, seed, epochs, progress, batch, steps_per_epoch, tqdm, desc, lr)


def _train_loop(model, data, seed, epochs, progress, batch, steps_per_epoch, tqdm, desc, lr) -> None:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for layer in model.modules():  # re-initialise under the seed
            if hasattr(layer, "reset_parameters"):
                layer.reset_parameters()
        generator = torch.Generator().manual_seed(seed)
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        model.train()
        bar = tqdm(total=epochs * steps_per_epoch, desc=desc, disable=not progress,
                   leave=False)
        done = 0
        for _ in range(epochs):
            order = torch.randperm(len(data.train_y), generator=generator)
            for i in range(0, len(order), batch):
                idx = order[i:i + batch]
                loss = nn.functional.cross_entropy(model(data.train_x[idx]), data.train_y[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                bar.update(1)
                bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)
                done += 1
                buildprogress.step(done, epochs * steps_per_epoch, desc)  # for a process waiting for it
        bar.close()
    model.eval()
