"""``python -m xaikit cache list | prune [--dry-run]``: the folders of the model cache, and the removal of those
an older recipe left behind.

A changed recipe gets a new folder name (the recipe version, and for the sentiment models a hash of the
recipe), so the old folder stays in the cache, unused: 88 MB for each old sentiment model. Each entry of the
cache is put in one of four kinds:

* ``current``: a folder a current recipe uses. Each family is asked for its own names: the three sentiment
  models (real, shuffled-label, control; :func:`xaikit.models.sentiment.sentiment_folder`) for the training
  seed the folder records, the ViTs of :data:`xaikit.models.vitworld.RECIPE_VERSION`, the rank test's random
  sets of the current image world (:mod:`xaikit.concepts.nullsets`), the digits CNNs of
  :data:`xaikit.models.digits.FILE_VERSION`, the VADER data and the training-seed record;
* ``computed``: what kernels computed and kept (attention diagnostics, TCAV activations), keyed by the weights
  and inputs they came from. Nothing in their names says whether a model of theirs is still in use, so they are
  kept;
* ``stale``: a folder xaikit built (its ``xaikit-manifest.json`` says so, or a digits CNN's checksum file) of a
  known family whose recipe is not the current one. Only these are removed;
* ``not xaikit's``: anything else, such as a folder a user put there or a family's name without a manifest. It
  is never touched.

Only the personal cache (:func:`xaikit.cache_dir`) is pruned; a shared one (``$XAIKIT_SHARED_CACHE``) is
read-only here, and its instructor prunes it with ``XAIKIT_CACHE`` set to it.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from xaikit._validate import bool_flags

__all__ = ["Entry", "entries", "prune"]

CURRENT, COMPUTED, STALE, FOREIGN = "current", "computed", "stale", "not xaikit's"

_SENTIMENT = re.compile(r"^(sentiment|shuffled-sentiment|subset-sentiment)-(v\d+)-([0-9a-f]{8})$")
_VIT = re.compile(r"^vit-([a-z]+)-(v\d+)(?:-seed(\d+))?$")
_NULL = re.compile(r"^null-sets-(\d+)x(\d+)-seed(\d+)-([0-9a-f]{12})$")
_DIGITS = re.compile(r"^digits_cnn_(?:shuffled_)?seed\d+_epochs\d+_(v\d+)\.safetensors$")


@dataclass(frozen=True)
class Entry:
    """One folder (or file) of the cache: its path, kind (``current``, ``computed``, ``stale`` or
    ``not xaikit's``), family, why it is of that kind, and its size in bytes."""

    path: Path
    kind: str
    family: str
    why: str
    size: int


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _metrics(folder: Path) -> dict:
    try:
        data = json.loads((folder / "metrics.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _built_by_xaikit(folder: Path) -> bool:
    from xaikit.models.cache import MANIFEST

    return folder.is_dir() and (folder / MANIFEST).is_file()


def _sentiment(folder: Path) -> tuple[str, str] | None:
    from xaikit._config import training_seed
    from xaikit.models import sentiment

    match = _SENTIMENT.match(folder.name)
    if not match:
        return None
    labels = {"sentiment": "real", "shuffled-sentiment": "shuffled", "subset-sentiment": "subset"}[match[1]]
    seeds = {training_seed()}
    recorded = _metrics(folder).get("seed")
    if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded >= 0:
        seeds.add(recorded)
    current = {sentiment.sentiment_folder(s, labels).name: s for s in sorted(seeds)}
    if folder.name in current:
        return CURRENT, f"the {labels}-label sentiment model of recipe {sentiment.RECIPE_VERSION}, seed {current[folder.name]}"
    if match[2] != sentiment.RECIPE_VERSION:
        return STALE, f"sentiment recipe {match[2]}; the current one is {sentiment.RECIPE_VERSION}"
    if not isinstance(recorded, int):  # which seed's recipe it is cannot be told: kept
        return CURRENT, f"sentiment recipe {match[2]}, the current one, for a training seed its metrics.json does not record"
    return STALE, (f"recipe hash {match[3]}, which no current sentiment recipe has (for training seed "
                   f"{', '.join(map(str, sorted(seeds)))})")


def _vit(folder: Path) -> tuple[str, str] | None:
    from xaikit.models import vitworld
    from xaikit.models.imageworld import WORLDS

    match = _VIT.match(folder.name)
    if not match or match[1] not in WORLDS:
        return None
    if match[2] == vitworld.RECIPE_VERSION:
        return CURRENT, f"the {match[1]} world's ViT of recipe {match[2]}, seed {match[3] or vitworld.RECIPE['seed']}"
    return STALE, f"ViT recipe {match[2]}; the current one is {vitworld.RECIPE_VERSION}"


def _null_sets(folder: Path) -> tuple[str, str] | None:
    from xaikit.concepts.nullsets import _null_sets_folder

    match = _NULL.match(folder.name)
    if not match:
        return None
    size, n_null, seed = int(match[1]), int(match[2]), int(match[3])
    if _null_sets_folder(size, seed, n_null).name == folder.name:
        return CURRENT, "the rank test's random sets of the current image world"
    return STALE, "random sets drawn by an older image world (its code has changed since)"


def _classify(path: Path, family: str) -> tuple[str, str]:
    """The kind of a folder or file at the top of the cache, or in one of its family folders."""
    from xaikit.models import digits
    from xaikit.models.reviews import _DATA_DIR

    if family == "top":
        if path.name == "training-seed.json":
            return CURRENT, "the cache's training seed"
        if path.name == _DATA_DIR and path.is_dir():
            return CURRENT, "the movie-review data the sentiment recipes read"
        for judge in (_sentiment, _vit):
            found = judge(path) if path.is_dir() else None
            if found is not None:
                if not _built_by_xaikit(path):
                    return FOREIGN, "a model family's name, but no xaikit-manifest.json: not built by xaikit, left alone"
                return found
        return FOREIGN, "not a folder xaikit builds: left alone"
    if family == "imageworld":
        found = _null_sets(path) if path.is_dir() else None
        if found is None:
            return FOREIGN, "not a folder xaikit builds: left alone"
        if not _built_by_xaikit(path):
            return FOREIGN, "no xaikit-manifest.json: not built by xaikit, left alone"
        return found
    if family == "toys":
        match = _DIGITS.match(path.name)
        if match is None or not path.with_name(path.name + ".sha256").is_file():
            return FOREIGN, "not a digits CNN xaikit saved (with its .sha256 beside it): left alone"
        if match[1] == digits.FILE_VERSION:
            return CURRENT, f"a digits CNN of file version {match[1]}"
        return STALE, f"digits CNN file version {match[1]}; the current one is {digits.FILE_VERSION}"
    if family in ("diagnostics", "activations"):
        if not _built_by_xaikit(path):
            return FOREIGN, "no xaikit-manifest.json: not built by xaikit, left alone"
        what = "attention diagnostics" if family == "diagnostics" else "TCAV activations or gradients"
        return COMPUTED, f"{what} a kernel computed, keyed by the model's weights and inputs: kept"
    return FOREIGN, "left alone"


_FAMILY_FOLDERS = ("imageworld", "toys", "diagnostics", "activations")


def entries(root: str | os.PathLike | None = None) -> list[Entry]:
    """Every folder or file of the cache ``root`` (default: the personal cache, :func:`xaikit.cache_dir`), with
    its kind. Hidden names (lock files, a build in progress) are not listed; a digits CNN's ``.sha256`` file
    goes with its CNN."""
    from xaikit._config import cache_dir

    root = Path(root) if root is not None else cache_dir(create=False)
    if not root.is_dir():
        return []
    out = []
    for path in sorted(root.iterdir()):
        if path.name.startswith("."):
            continue
        if path.is_dir() and path.name in _FAMILY_FOLDERS:
            for inner in sorted(path.iterdir()):
                if inner.name.startswith(".") or inner.name.endswith(".sha256"):
                    continue
                kind, why = _classify(inner, path.name)
                size = _size(inner) + (_size(inner.with_name(inner.name + ".sha256"))
                                       if path.name == "toys" and inner.with_name(inner.name + ".sha256").is_file() else 0)
                out.append(Entry(inner, kind, path.name, why, size))
            continue
        kind, why = _classify(path, "top")
        out.append(Entry(path, kind, "top", why, _size(path)))
    return out


def _remove(path: Path) -> None:
    """Remove a stale folder (renamed aside first, so no half-removed folder sits under its name) or a stale
    digits CNN with its checksum file, under the folder's build lock."""
    from xaikit.models.cache import _OLD, build_lock

    with build_lock(path, "stale folder", progress=False):
        if path.is_dir():
            aside = path.with_name(f"{path.name}{_OLD}{os.getpid()}-{secrets.token_hex(3)}")
            os.replace(path, aside)
            shutil.rmtree(aside)
        else:
            path.unlink(missing_ok=True)
            path.with_name(path.name + ".sha256").unlink(missing_ok=True)
    path.with_name(f".{path.name}.lock").unlink(missing_ok=True)


@bool_flags
def prune(dry_run: bool = False, root: str | os.PathLike | None = None) -> list[Entry]:
    """Remove the ``stale`` entries of the cache (see the module's text) and return them; with ``dry_run``
    only return them. Nothing of another kind is touched."""
    from xaikit._validate import check_bool

    dry_run = check_bool(dry_run, "dry_run")
    stale = [e for e in entries(root) if e.kind == STALE]
    if not dry_run:
        for entry in stale:
            _remove(entry.path)
    return stale


def report(found: list[Entry], root: Path) -> str:
    """The table ``cache list`` prints: kind, size, name and why, and the total of each kind."""
    lines = [f"xaikit cache {root}"]
    for e in found:
        lines.append(f"  {e.kind:<13} {e.size / 1e6:9.1f} MB  {e.path.relative_to(root).as_posix()}: {e.why}")
    totals = {}
    for e in found:
        totals[e.kind] = totals.get(e.kind, 0) + e.size
    lines.append("  total: " + (", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in totals.items()) or "empty"))
    if totals.get(STALE):
        lines.append("  `python -m xaikit cache prune` removes the stale ones (`--dry-run` lists them first)")
    return "\n".join(lines)
