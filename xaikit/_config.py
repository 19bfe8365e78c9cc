"""Seeds, device choice, fast mode and the cache directory: the few global settings of xaikit.

Nothing here imports torch at module level, so ``import xaikit`` stays cheap.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import torch

_T = TypeVar("_T")

FAST_ENV = "XAIKIT_FAST"
CACHE_ENV = "XAIKIT_CACHE"
SHARED_CACHE_ENV = "XAIKIT_SHARED_CACHE"
DEVICE_ENV = "XAIKIT_DEVICE"
MODEL_DTYPE_ENV = "XAIKIT_MODEL_DTYPE"  # read by xaikit.models.loaders
SEED_ENV = "XAIKIT_SEED"
SEED_FILE = "training-seed.json"


def set_seed(seed: int = 0) -> int:
    """Seed Python's ``random``, NumPy and torch (CPU and every GPU) with one integer.

    Returns the seed so a notebook can print what it used. Torch is seeded only if it is importable,
    which it always is in a full install.
    """
    import numbers

    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        seed = int(seed)  # NumPy's ints too (np.int64(3)), as target= and the other seeds take them
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        shown = f"{type(seed).__name__} {seed!r}" if not isinstance(seed, int) or isinstance(seed, bool) else repr(seed)
        hint = f"; write it as a number, set_seed({seed.strip()})" if isinstance(seed, str) and seed.strip().isdigit() else ""
        raise ValueError(f"seed must be a non-negative int, got {shown}{hint}")
    from xaikit._validate import check_seed

    seed = check_seed(seed)  # at most 2**63 - 1: torch overflows above it
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


#: the device types xaikit runs models on (``meta`` holds shapes only; others lack the ops the methods use)
COMPUTE_DEVICES = ("cpu", "cuda", "mps", "xpu")


def device(prefer: str | None = None) -> torch.device:
    """The torch device xaikit puts models on: CUDA if present, else the CPU.

    Apple's MPS only when asked for, with ``prefer="mps"`` or ``XAIKIT_DEVICE=mps``: MPS holds no float64,
    which Chefer LRP, IG's float64 checks and the faithfulness lab use, and lacks several ops, while the
    embedded models are small enough for a laptop's CPU, which also gives the lecture's numbers (the
    reasons in full: :mod:`xaikit.policies`). Asked for anyway, float64 work goes to the CPU
    (:func:`xaikit.policies.float64_device`).

    ``prefer`` (or the ``XAIKIT_DEVICE`` environment variable) forces a choice, e.g. ``"cpu"`` on a GPU
    machine to reproduce the lecture's CPU numbers. A name torch does not know, or a device this machine
    does not have (``cuda`` without an NVIDIA GPU, ``mps`` off Apple silicon), is a ValueError that names
    the setting and the fix.
    """
    import torch

    where = f"prefer={prefer!r}" if prefer else f"{DEVICE_ENV}={os.environ.get(DEVICE_ENV, '')!r}"
    choice = prefer or os.environ.get(DEVICE_ENV, "").strip()
    if not choice:
        return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    fix = ("pass prefer='cpu' or leave prefer out" if prefer else
           f"set {DEVICE_ENV}=cpu, or unset it to use CUDA if present, else the CPU")
    try:
        chosen = torch.device(choice)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"{where} is not a torch device (e.g. 'cpu', 'cuda', 'cuda:1' or 'mps'); {fix}") from None
    if chosen.type not in COMPUTE_DEVICES:  # meta holds no numbers; hpu, vulkan, ... run none of xaikit's methods
        raise ValueError(f"{where} asks for {chosen.type}, where xaikit cannot run its models: it computes on "
                         f"{', '.join(COMPUTE_DEVICES)}; {fix}")
    mps = getattr(torch.backends, "mps", None)
    have = ["cpu"] + (["cuda"] if torch.cuda.is_available() else []) + (["mps"] if mps and mps.is_available() else [])
    if chosen.type == "cuda":
        ok = torch.cuda.is_available() and (chosen.index is None or chosen.index < torch.cuda.device_count())
    elif chosen.type == "mps":
        ok = mps is not None and mps.is_available()
    else:
        backend = getattr(torch, chosen.type, None)
        ok = not callable(getattr(backend, "is_available", None)) or bool(backend.is_available())
    if not ok:
        count = f", {torch.cuda.device_count()} CUDA device(s)" if "cuda" in have else ""
        raise ValueError(f"{where} asks for {chosen}, which this machine does not have (torch sees: "
                         f"{', '.join(have)}{count}); {fix}")
    return chosen


def fast_mode() -> bool:
    """True when ``XAIKIT_FAST`` is set to 1/true/yes/on (any case): CI's switch that shrinks sample counts.

    0/false/no/off and an empty or unset variable mean off; any other value (``maybe``, ``2``) is a
    ``ValueError`` naming the variable, rather than read silently as off."""
    value = os.environ.get(FAST_ENV, "").strip().lower()
    if value in _FAST_ON:
        return True
    if value in _FAST_OFF:
        return False
    raise ValueError(f"{FAST_ENV} must be one of 1, true, yes, on (fast: small sample counts) or 0, false, no, "
                     f"off (the full counts), or unset; got {os.environ.get(FAST_ENV)!r}. e.g. {FAST_ENV}=1")


_FAST_ON = frozenset({"1", "true", "yes", "on"})
_FAST_OFF = frozenset({"", "0", "false", "no", "off"})


def pick(normal: _T, fast: _T) -> _T:
    """``fast`` in fast mode, ``normal`` otherwise: ``n = pick(50, 10)``."""
    return fast if fast_mode() else normal


def cache_dir(create: bool = True) -> Path:
    """Where prepared models and data live, and where xaikit writes: ``$XAIKIT_CACHE`` or the user's cache
    directory. On a course's JupyterHub this is the student's personal cache, layered over the instructor's
    read-only one (:func:`shared_cache_dir`): lookups try this folder first, then the shared one, and every
    write goes here (:func:`shared_twin`).

    ``$XAIKIT_CACHE`` is stripped of surrounding spaces, ``~`` expanded and a relative path made absolute
    against the current folder.

    A path that is a file, or a folder that cannot be made (under a file, no permission) or written, is a
    ValueError naming ``XAIKIT_CACHE`` and the fix (for a read-only prepared cache: name it in
    ``XAIKIT_SHARED_CACHE`` instead).
    """
    if isinstance(create, str):  # "no" would be truthy
        raise TypeError(f"create must be True or False, got str {create!r}; e.g. cache_dir(create=False)")
    from platformdirs import user_cache_dir

    default = Path(user_cache_dir("xaikit", appauthor=False))
    env = os.environ.get(CACHE_ENV, "").strip()  # stray spaces, e.g. from a .env file, are not a folder name
    if env:
        # absolute, so the CLI at the repository root and a kernel in notebooks/ share one cache
        fix = f"set {CACHE_ENV} to a folder you can write, or unset it to use {default}"
        try:
            path = Path(env).expanduser().resolve()
        except RuntimeError:  # "~someone/..." for a user this system does not know
            raise ValueError(f"{CACHE_ENV}={env!r} starts with {env.split('/')[0]!r}, the home folder of a user this "
                             f"system does not know; {fix} (e.g. {CACHE_ENV}=~/xaikit-cache)") from None
        where = f"{CACHE_ENV}={path}"
    else:
        path = default
        where = f"the cache folder {path}"
        fix = f"set {CACHE_ENV} to a folder you can write"
    if path.exists() and not path.is_dir():
        raise ValueError(f"{where} is a file, not a folder; {fix}")
    if create:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ValueError(f"{where} cannot be created ({err.strerror or err}); {fix}") from None
        if not _writable(path):
            if os.environ.get(SHARED_CACHE_ENV, "").strip():
                hint = (f"; the read-only prepared cache belongs in {SHARED_CACHE_ENV} "
                        f"(now {os.environ[SHARED_CACHE_ENV].strip()!r}), and {CACHE_ENV} names your own")
            else:
                hint = (f". If it is a course's prepared, read-only cache, set {SHARED_CACHE_ENV}={path} and "
                        f"{CACHE_ENV} to a folder of your own (or unset {CACHE_ENV} to use {default})")
            raise ValueError(f"{where} is not writable; {fix}{hint}")
    return path


def _writable(path: Path) -> bool:
    """Whether this process may write into the folder ``path`` (the one probe :func:`cache_dir` asks; the
    tests, which run as root, replace it to stand for a read-only volume)."""
    return os.access(path, os.W_OK)


def shared_cache_dir() -> Path | None:
    """The course's read-only prepared cache, ``$XAIKIT_SHARED_CACHE``, or ``None`` when it is unset (or names
    the personal cache itself).

    An instructor fills it once (``XAIKIT_CACHE=/srv/xaikit python -m xaikit prepare``) and every student's
    server mounts it read-only; a model it holds is loaded from there, and whatever a kernel computes later
    goes to the personal cache (:func:`cache_dir`). xaikit never writes into it, not even to mend a damaged
    folder: it says so and builds its own copy in the personal cache (:func:`xaikit.models.cache.ensure`).

    A path that does not exist or is a file is a ValueError naming ``XAIKIT_SHARED_CACHE`` and the fix.
    """
    env = os.environ.get(SHARED_CACHE_ENV, "").strip()
    if not env:
        return None
    fix = (f"mount the prepared cache there, or set {SHARED_CACHE_ENV} to the folder it is mounted at, or unset "
           f"{SHARED_CACHE_ENV} to build every model in your own cache")
    try:
        path = Path(env).expanduser().resolve()
    except RuntimeError:
        raise ValueError(f"{SHARED_CACHE_ENV}={env!r} starts with the home folder of a user this system does not "
                         f"know; {fix}") from None
    if not path.exists():
        raise ValueError(f"{SHARED_CACHE_ENV}={path} does not exist; {fix}")
    if not path.is_dir():
        raise ValueError(f"{SHARED_CACHE_ENV}={path} is a file, not a folder; {fix}")
    if path == cache_dir(create=False):
        return None  # one cache, not two layers
    return path


def shared_twin(path: str | os.PathLike) -> Path | None:
    """Where the shared cache (:func:`shared_cache_dir`) would hold ``path``, a file or folder under the
    personal cache (:func:`cache_dir`); ``None`` without a shared cache or for a path outside the personal
    one."""
    shared = shared_cache_dir()
    if shared is None:
        return None
    try:
        relative = Path(path).relative_to(cache_dir(create=False))
    except ValueError:
        return None
    return shared / relative


def located(path: str | os.PathLike) -> Path:
    """``path`` (under the personal cache) if it exists, else its shared twin (:func:`shared_twin`) if that
    exists, else ``path``: where a prepared file or folder is read from."""
    path = Path(path)
    twin = shared_twin(path)
    return twin if not path.exists() and twin is not None and twin.exists() else path


def in_caches(path: str | os.PathLike) -> str | None:
    """``"personal"`` or ``"shared"`` when ``path`` lies in the personal or the shared cache, else ``None``."""
    try:
        resolved = Path(path).resolve()
    except OSError:
        return None
    for kind, root in (("personal", lambda: cache_dir(create=False)), ("shared", shared_cache_dir)):
        try:
            folder = root()
        except ValueError:
            continue
        if folder is not None and resolved.is_relative_to(folder.resolve()):
            return kind
    return None


def training_seed() -> int:
    """The training seed of the embedded models this cache serves (0 unless chosen otherwise).

    ``python -m xaikit prepare --seed N`` trains every embedded model (the sentiment model, the digits CNNs,
    both ViTs) with seed N and records N in ``cache_dir()/training-seed.json``, so that every later load from
    that cache, in any kernel, serves those models; a personal cache without that file over a shared one
    (:func:`shared_cache_dir`) serves the shared cache's seed. ``$XAIKIT_SEED`` overrides the file for one process (the
    claims matrix and the tests use it). An instructor can thus hand each student group its own seed; the
    notebooks' asserted claims hold on every seed (``scripts/claims_matrix.py``).
    """
    import json

    raw = os.environ.get(SEED_ENV, "").strip()
    where = f"${SEED_ENV}"
    if not raw:
        path = cache_dir(create=False) / SEED_FILE
        shared = shared_twin(path)
        if not path.is_file() and shared is not None and shared.is_file():
            path = shared  # a student's cache over the course's: the seed the instructor prepared
        if not path.is_file():
            return 0
        where = str(path)
        try:
            raw = str(json.loads(path.read_text())["seed"])
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{path} is not a training-seed record ({err}); delete it, or run "
                             "`python -m xaikit prepare --seed N` to write it again") from err
    from xaikit._validate import SEED_MAX

    if not raw.isdigit() or int(raw) > SEED_MAX:
        raise ValueError(f"the training seed in {where} must be a non-negative integer up to 2**63 - 1, got {raw!r}; e.g. "
                         f"{SEED_ENV}=0, or `python -m xaikit prepare --seed 0`")
    return int(raw)


def record_training_seed(seed: int) -> None:
    """Write ``seed`` as this cache's training seed (atomically: a temporary file renamed into place)."""
    import json

    path = cache_dir() / SEED_FILE
    tmp = path.with_name(f".{SEED_FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"seed": int(seed)}) + "\n")
    os.replace(tmp, path)


def cpu_busy() -> bool:
    """Used only by the sentiment model's build recipe (its thread count is part of the recorded recipe);
    every method takes its thread count from :mod:`xaikit.policies` instead.

    True when other processes already keep the cores busy (1-minute load average near the core count).

    On such a machine torch's OpenMP threads wait for each other, and one thread is several times faster
    than two (``benchmarks/threads_by_size.py`` measures it).
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
