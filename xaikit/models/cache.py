"""The model cache's safety net, shared by every embedded model: checksums, a build lock, atomic builds.

* **Checksums.** A build records the size and SHA-256 of every file it wrote in ``xaikit-manifest.json``,
  the last file written. :func:`problems` compares the folder with it: a truncated ``model.safetensors``
  (which would fail to load with "incomplete metadata") or one flipped byte (which would load and give NaN
  logits) makes the folder "not built", so ``python -m xaikit prepare`` and the loaders rebuild it.
  Hashing is done once per process per folder, and again whenever a file's size, inode or modification
  time changes.
* **Lock.** :func:`build_lock` (:mod:`xaikit.models.lock`) takes an exclusive lock on a hidden
  ``.<folder>.lock`` file beside the folder, so two ``prepare`` runs on one cache do not both train: the
  second waits, then finds the first one's model and uses it.
* **Atomic builds.** :func:`building` hands the builder a fresh temporary sibling folder, writes the
  manifest into it and renames it into place at the end. An exception or Ctrl-C removes it; a build
  killed outright leaves a ``.building-<pid>-...`` folder that the next build (holding the lock) removes.
  Either way no half-written model is ever found under the real name.

:func:`ensure` puts the three together: ``ensure(folder, build)`` returns ``folder``, running
``build(tmp)`` first when the folder is missing, incomplete or corrupt (or with ``force=True``).

* **A shared cache.** With ``$XAIKIT_SHARED_CACHE`` (a course's prepared cache, mounted read-only,
  :func:`xaikit.shared_cache_dir`), :func:`ensure` looks in the personal cache first, then in the shared one
  (:func:`shared_copy`), and builds in the personal one only when neither holds the folder intact. Nothing is
  ever written into the shared cache: a damaged folder there is reported, once per process, with what differs
  and that the instructor should rebuild it, and the build goes to the personal cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from xaikit._validate import bool_flags
from xaikit.models.lock import _pid_alive, build_lock

if TYPE_CHECKING:
    import torch

__all__ = ["MANIFEST", "CacheCorruptError", "sha256_file", "write_manifest", "problems", "is_built", "verify",
           "weights_problem", "build_lock", "building", "ensure", "identity_problem", "shared_copy"]

MANIFEST = "xaikit-manifest.json"
#: what every embedded model folder must hold besides the manifest
WEIGHTS_AND_METRICS = ("model.safetensors", "metrics.json")
_BUILDING = ".building-"
_OLD = ".old-"
_FIX = "python -m xaikit prepare --force"

_verified: dict[str, tuple] = {}  # resolved folder -> the stamp of its files when they last matched
_verified_lock = threading.Lock()
_reported: set[str] = set()  # damaged shared folders already reported in this process


class CacheCorruptError(RuntimeError):
    """A model folder's files no longer match the checksums recorded when it was built."""


def sha256_file(path: str | os.PathLike) -> str:
    """The SHA-256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _files(folder: Path) -> list[str]:
    """Every regular file under ``folder`` except the manifest, as sorted POSIX-style relative names."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and p.name != MANIFEST and not p.name.endswith(".part"))


def write_manifest(folder: str | os.PathLike, note: str | None = None) -> dict:
    """Record the size and SHA-256 of every file in ``folder`` in its manifest (written atomically, last)."""
    folder = Path(folder)
    files = {}
    for name in _files(folder):
        path = folder / name
        files[name] = {"size": path.stat().st_size, "sha256": sha256_file(path)}
    manifest = {"format": 1, "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "files": files}
    if note:
        manifest["note"] = note
    part = folder / f"{MANIFEST}.{os.getpid()}.part"
    with open(part, "w") as fh:
        fh.write(json.dumps(manifest, indent=2) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(part, folder / MANIFEST)
    return manifest


def _stamp(folder: Path, names) -> tuple:
    """What changes when any of the files is rewritten, truncated or replaced (without reading them)."""
    out = []
    for name in (MANIFEST, *names):
        try:
            st = (folder / name).stat()
        except OSError:
            return ()
        out.append((name, st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


def _read_manifest(folder: Path) -> dict:
    data = json.loads((folder / MANIFEST).read_text())
    files = data["files"]
    if not isinstance(files, dict) or not all(
            isinstance(e, dict) and isinstance(e.get("size"), int) and isinstance(e.get("sha256"), str)
            for e in files.values()):
        raise ValueError("its 'files' entry is not {name: {size, sha256}}")
    return files


def problems(folder: str | os.PathLike, required: tuple[str, ...] = ()) -> list[str]:
    """What is wrong with a built folder: missing files, no manifest, sizes or SHA-256 that differ from
    the ones recorded at build time. An empty list means the folder is complete and intact.

    The hashes are checked once per process per folder, and again when a file's stat changes.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return [f"{folder} does not exist"]
    missing = [name for name in required if not (folder / name).is_file()]
    if missing:
        return [f"{name} is missing" for name in missing]
    if not (folder / MANIFEST).is_file():
        return [f"{MANIFEST} is missing, so nothing says what the files should hold"]
    try:
        files = _read_manifest(folder)
    except (OSError, ValueError, KeyError, TypeError) as err:
        return [f"{MANIFEST} cannot be read ({err})"]
    unlisted = [name for name in required if name not in files]
    if unlisted:
        return [f"{name} is not in {MANIFEST}" for name in unlisted]
    key = str(folder.resolve())
    stamp = _stamp(folder, sorted(files))
    with _verified_lock:
        if stamp and _verified.get(key) == stamp:
            return []
    found = []
    for name, entry in sorted(files.items()):
        path = folder / name
        if not path.is_file():
            found.append(f"{name} is missing")
            continue
        size = path.stat().st_size
        if size != entry["size"]:
            why = "truncated?" if size < entry["size"] else "edited or replaced since"
            found.append(f"{name} has {size:,} bytes but had {entry['size']:,} when it was built ({why})")
        elif sha256_file(path) != entry["sha256"]:
            found.append(f"{name} does not have the SHA-256 recorded when it was built (changed or corrupt)")
    with _verified_lock:
        if found:
            _verified.pop(key, None)
        elif stamp:
            _verified[key] = stamp
    return found


def is_built(folder: str | os.PathLike, required: tuple[str, ...] = WEIGHTS_AND_METRICS,
             probe: Callable[[Path], str | None] | None = None,
             identity: Callable[[dict], str | None] | None = None) -> bool:
    """True when ``folder`` holds the ``required`` files and every file matches its recorded checksum, and,
    with ``identity``, the model is the one its name stands for (:func:`identity_problem`).

    A folder built before xaikit kept checksums (all ``required`` files, no manifest) is checked once:
    every safetensors file must be complete and hold finite numbers, every JSON file must parse, and
    ``probe(folder)``, when given, must find the model working (see :func:`_adopt`); then its checksums are
    recorded. A folder that fails is not built.
    """
    folder = Path(folder)
    if (folder.is_dir() and not (folder / MANIFEST).exists()
            and all((folder / name).is_file() for name in required)):
        _adopt(folder, probe)
    return not problems(folder, required) and identity_problem(folder, identity) is None


def shared_copy(folder: str | os.PathLike, required: tuple[str, ...] = WEIGHTS_AND_METRICS,
                identity: Callable[[dict], str | None] | None = None,
                what: str = "model") -> Path | None:
    """The shared cache's copy of ``folder`` (a folder of the personal cache, :func:`xaikit.shared_cache_dir`)
    when it is intact: its ``required`` files, every file matching the manifest's checksums and, with
    ``identity``, the model its name stands for. ``None`` when there is no shared cache or it lacks the folder.

    It only reads: a folder there without a manifest is not adopted (that would write one), and a damaged one
    is not mended. Such a folder is reported once per process, naming it, what differs and that the instructor
    should rebuild it, and ``None`` is returned so that the caller builds in the personal cache.
    """
    from xaikit._config import SHARED_CACHE_ENV, shared_cache_dir, shared_twin

    twin = shared_twin(folder)
    if twin is None or not twin.exists():
        return None
    found = problems(twin, required)
    if not found:
        wrong = identity_problem(twin, identity)
        found = [wrong] if wrong else []
    if not found:
        return twin
    key = str(twin)
    if key not in _reported:
        _reported.add(key)
        print(f"xaikit: the {what} in the shared cache ({SHARED_CACHE_ENV}) at {twin} is damaged: {'; '.join(found)}. "
              f"xaikit leaves it as it is (the shared cache is read-only): ask the instructor to rebuild it where the volume is "
              f"writable (`XAIKIT_CACHE={shared_cache_dir()} python -m xaikit prepare --force` for the models, "
              "attention and random sets; for TCAV activations, delete the folder and run `python -m xaikit warm` "
              "again). "
              f"Until then this kernel builds its own copy in your personal cache, {folder}", file=sys.stderr,
              flush=True)
    return None


def identity_problem(folder: str | os.PathLike,
                     identity: Callable[[dict], str | None] | None = None) -> str | None:
    """Whether the model in ``folder`` is the one its folder name stands for: ``identity`` maps the folder's
    ``metrics.json`` (a dict) to ``None``, or to a sentence naming what differs (another label mode, recipe,
    world or seed). The checksums only say the files are those written by some build; a folder copied, manifest
    and all, under another model's name passes them, so the recorded recipe is compared too."""
    if identity is None:
        return None
    try:
        metrics = json.loads((Path(folder) / "metrics.json").read_text())
    except (OSError, ValueError) as err:
        return f"its metrics.json cannot be read ({err})"
    if not isinstance(metrics, dict):
        return "its metrics.json holds no record of the build"
    problem = identity(metrics)
    return f"it holds another model: {problem}" if problem else None


def verify(folder: str | os.PathLike, required: tuple[str, ...] = WEIGHTS_AND_METRICS, what: str = "model",
           fix: str | None = None) -> Path:
    """Return ``folder`` if it is intact, else raise :class:`CacheCorruptError` saying what differs and
    how to mend it: ``fix``, or by default that ``python -m xaikit prepare --force`` rebuilds it (true of a
    folder in xaikit's cache, not of a copy elsewhere)."""
    found = problems(folder, required)
    if found:
        fix = fix or f"Rebuild it with `{_FIX}` (or delete the folder and run `python -m xaikit prepare`)"
        raise CacheCorruptError(f"the {what} in {folder} is damaged: {'; '.join(found)}. {fix}")
    return Path(folder)


def _adopt(folder: Path, probe=None) -> bool:
    """Record checksums for a folder built before manifests existed, if its files pass a structural check
    and, with ``probe``, the model computes what it should.

    ``probe(folder)`` returns ``None`` when the model works, or a sentence saying what is wrong; raising
    counts as wrong. Without it a folder whose manifest was deleted would be adopted on its
    files parsing alone, and one flipped byte can make the [CLS] embedding 9.6e37 (finite): every sentence
    gives NaN logits, the manifest records the damage and ``prepare`` says "done". The embedded models'
    probes (:func:`xaikit.models.sentiment.probe`, :func:`xaikit.models.vitworld.probe`) load the model, check
    its weights' size (:func:`weights_problem`) and run it on a few inputs.
    """
    for path in sorted(folder.iterdir()):
        try:
            if path.suffix == ".safetensors":
                _check_safetensors(path)
            elif path.suffix == ".json":
                json.loads(path.read_text())
        except Exception:  # noqa: BLE001 - any failure means "not built": the caller rebuilds
            return False
    if probe is not None:
        import torch

        try:
            with torch.random.fork_rng(devices=[]):  # loading a model may draw initial weights: leave the RNG
                problem = probe(folder)
        except Exception as err:  # noqa: BLE001 - a model that cannot even run is not adopted
            problem = f"it could not be run ({type(err).__name__}: {err})"
        if problem:
            print(f"xaikit: {folder.name} has no {MANIFEST} (built before xaikit kept checksums, or the manifest "
                  f"was deleted), and its model is not usable: {problem}. It will be rebuilt", flush=True)
            return False
    write_manifest(folder, note="recorded after the build (folder built before xaikit kept checksums)")
    checked = "complete and finite, and the model runs" if probe is not None else "complete and finite"
    print(f"xaikit: {folder.name} was built before xaikit kept checksums; its weights are {checked}, so their "
          f"SHA-256 are now recorded in {MANIFEST}", flush=True)
    return True


#: no weight of a course model comes near this (the largest: 7.9 in the sentiment model, 1.2 in the ViTs); a
#: flipped exponent bit gives values such as 9.6e37, which are finite but turn every logit into NaN
MAX_WEIGHT = 1e4


def weights_problem(state_dict: Mapping[str, torch.Tensor]) -> str | None:
    """``None`` when every floating-point tensor of ``state_dict`` is finite and below :data:`MAX_WEIGHT` in
    size, else a sentence naming the first tensor that is not."""
    import torch

    for name, tensor in state_dict.items():
        if not (isinstance(tensor, torch.Tensor) and tensor.is_floating_point() and tensor.numel()):
            continue
        if not bool(torch.isfinite(tensor).all()):
            return f"{name} holds NaN or inf"
        largest = float(tensor.abs().max())
        if largest > MAX_WEIGHT:
            return f"{name} holds {largest:.3g}, far beyond any trained weight (a flipped byte?)"
    return None


#: how far a model's logits on its probe inputs may move from those its build recorded (float32 on a CPU both
#: times, so only the thread count's rounding, about 1e-6, differs). Doubling or halving 4,096 weights of one
#: query matrix of the embedded sentiment model moves them by 0.008 to 0.028, and leaves its held-out accuracy
#: where it was (0.86), so the accuracy could not tell
PROBE_TOLERANCE = 2e-3


def logits_problem(recorded: list | None, logits: torch.Tensor) -> str | None:
    """``None`` when ``logits`` (a tensor) are within :data:`PROBE_TOLERANCE` of the ``recorded`` ones (nested
    lists, from ``metrics.json``; ``None`` when the build recorded none), else a sentence saying how far."""
    import torch

    if recorded is None:
        return None
    want = torch.as_tensor(recorded, dtype=torch.float32)
    if want.shape != logits.shape:
        return f"its probe logits have shape {tuple(logits.shape)}, metrics.json recorded {tuple(want.shape)}"
    moved = float((logits.float().cpu() - want).abs().max())
    if moved > PROBE_TOLERANCE:
        return (f"its logits on the probe inputs differ by {moved:.3g} from those recorded when it was built (more "
                f"than {PROBE_TOLERANCE}): its weights have changed")
    return None


def check_safetensors_size(path: str | os.PathLike) -> None:
    """Raise ValueError unless ``path`` is as long as its safetensors header says (a cheap test for a file cut
    short by a copy or a download; it reads the header only)."""
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as fh:
        n = int.from_bytes(fh.read(8), "little")
        if n <= 0 or 8 + n > size:
            raise ValueError(f"{path.name}: header length {n} does not fit in {size} bytes")
        try:
            header = json.loads(fh.read(n))
        except ValueError as err:
            raise ValueError(f"{path.name}: its header is not JSON ({err})") from None
    end = max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
    if 8 + n + end != size:
        raise ValueError(f"{path.name}: {size:,} bytes, the header describes {8 + n + end:,}")


def _check_safetensors(path: Path) -> None:
    """Raise unless ``path`` is a complete safetensors file whose floating-point tensors are all finite."""
    import torch
    from safetensors.torch import load_file

    check_safetensors_size(path)
    size = path.stat().st_size
    with open(path, "rb") as fh:
        n = int.from_bytes(fh.read(8), "little")
        if n <= 0 or 8 + n > size:
            raise ValueError(f"{path.name}: header length {n} does not fit in {size} bytes")
        header = json.loads(fh.read(n))
    end = max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
    if 8 + n + end != size:
        raise ValueError(f"{path.name}: {size} bytes, the header describes {8 + n + end}")
    for name, tensor in load_file(path).items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ValueError(f"{path.name}: {name} holds NaN or inf")


# ------------------------------------------------------------------------------------- atomic builds

def _leftovers(folder: Path) -> list[Path]:
    """Temporary siblings of ``folder`` left by builds that were killed outright (their process is gone)."""
    out = []
    for path in folder.parent.glob(f"{folder.name}.*"):
        rest = path.name[len(folder.name):]
        if not path.is_dir() or not rest.startswith((_BUILDING, _OLD)):
            continue
        pid = rest.split("-")[1] if rest.count("-") >= 1 else ""
        if not (pid.isdigit() and _pid_alive(int(pid))):
            out.append(path)
    return out


@contextmanager
def building(folder: str | os.PathLike) -> Iterator[Path]:
    """Yield a new, empty temporary folder beside ``folder`` to build into. When the block ends normally,
    the manifest is written into it and it replaces ``folder`` by renaming; when it raises (or is
    interrupted) it is removed. Call it while holding :func:`build_lock`."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    for stale in _leftovers(folder):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = folder.with_name(f"{folder.name}{_BUILDING}{os.getpid()}-{secrets.token_hex(3)}")
    old = folder.with_name(f"{folder.name}{_OLD}{os.getpid()}-{secrets.token_hex(3)}")
    tmp.mkdir()
    try:
        yield tmp
        write_manifest(tmp)
        files = sorted(_read_manifest(tmp))
        if folder.exists():
            os.replace(folder, old)
        os.replace(tmp, folder)
        shutil.rmtree(old, ignore_errors=True)
        with _verified_lock:  # just hashed: the files were renamed, not rewritten
            _verified[str(folder.resolve())] = _stamp(folder, files)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not folder.exists():  # interrupted between the two renames: put it back
            os.replace(old, folder)


@bool_flags
def ensure(folder: str | os.PathLike, build: Callable[[Path], object], *,
           required: tuple[str, ...] = WEIGHTS_AND_METRICS, force: bool = False, what: str = "model",
           progress: bool = True, probe: Callable[[Path], str | None] | None = None,
           identity: Callable[[dict], str | None] | None = None) -> Path:
    """``folder``, after running ``build(tmp_folder)`` if it is not built (missing, incomplete or failing
    its checksums, or holding another model than its name says, see :func:`identity_problem`) or ``force``
    is set. ``probe``: how a folder without a manifest proves that its model works before it is adopted
    (:func:`is_built`).

    The build runs under :func:`build_lock` into a temporary folder (see :func:`building`). A process that
    had to wait for the lock uses the model the other process just built, even with ``force``.

    With a shared cache (``$XAIKIT_SHARED_CACHE``) and no intact ``folder`` in the personal cache, its intact
    twin there is returned instead (:func:`shared_copy`): the caller reads from the folder returned, never
    from ``folder`` itself.
    """
    from xaikit._validate import check_bool

    force = check_bool(force, "force")  # "False" is a str, and a str is true: it had rebuilt the model
    folder = Path(folder)
    if not force and is_built(folder, required, probe, identity):
        return folder
    if not force:
        shared = shared_copy(folder, required, identity, what)
        if shared is not None:
            return shared
    with build_lock(folder, what, progress) as waited:
        if (waited or not force) and is_built(folder, required, probe, identity):
            return folder
        if not force and folder.exists() and progress:
            found = problems(folder, required) or [identity_problem(folder, identity)]
            print(f"xaikit: the cached {what} in {folder} is not usable "
                  f"({'; '.join(p for p in found if p)}); rebuilding it", flush=True)
        with building(folder) as tmp:
            build(tmp)
    return folder
