"""``python -m xaikit prepare``: build and cache the embedded default models, once.

* the sentiment model (MiniLM fine-tuned on movie reviews, :mod:`xaikit.models.sentiment`), used by
  notebooks 02-04;
* the two Vision Transformers of notebook 05 (:mod:`xaikit.models.vitworld`): the main image world,
  where "zebra" is a striped animal, and the control world, where stripes do not predict "zebra".

Everything goes to :func:`xaikit.cache_dir` (``$XAIKIT_CACHE`` overrides it), into folders named by
recipe version, so a second run finds them and returns in seconds, and a changed recipe is rebuilt.
Target: the whole build under 6 minutes on 2 CPU cores; loading from the cache under 5 s.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

__all__ = ["prepare"]

_FAMILIES = ("sentiment", "vit")


def prepare(force: bool = False, only: str | None = None, progress: bool = True) -> dict[str, Path]:
    """Build whatever embedded model is missing (everything with ``force=True``) and return the folders.

    ``only``: ``"sentiment"`` or ``"vit"`` to build one family. Prints what it builds, the time each step
    took and where it went. Returns ``{"sentiment": folder, "vit-main": folder, "vit-control": folder}``
    (the ViT entries are absent if the image-world module is missing from this install).
    """
    from xaikit._config import cache_dir
    from xaikit._validate import check_choice

    if not isinstance(force, bool):
        raise TypeError(f"force must be True or False, got {type(force).__name__} {force!r}")
    if only is not None:
        check_choice(only, "only", _FAMILIES)
    say = print if progress else (lambda *a, **k: None)
    say(f"xaikit prepare: cache folder {cache_dir()}", flush=True)
    folders: dict[str, Path] = {}
    t_all = time.perf_counter()
    if only in (None, "sentiment"):
        from xaikit.models.sentiment import ensure_embedded_sentiment

        folders["sentiment"] = _timed(say, "sentiment model", lambda: ensure_embedded_sentiment(force, progress))
    if only in (None, "vit"):
        if importlib.util.find_spec("xaikit.models.vitworld") is None:
            say("xaikit prepare: skipping the embedded ViTs: xaikit.models.vitworld is not in this install",
                flush=True)
        else:
            from xaikit.models.vitworld import ensure_embedded_vit

            for world in ("main", "control"):
                folders[f"vit-{world}"] = _timed(
                    say, f"ViT ({world} world)",
                    lambda world=world: ensure_embedded_vit(world, force=force, progress=progress))
    say(f"xaikit prepare: done in {time.perf_counter() - t_all:.1f} s", flush=True)
    return folders


def _timed(say, what: str, build) -> Path:
    t0 = time.perf_counter()
    folder = Path(build())
    say(f"xaikit prepare: {what:<22} {time.perf_counter() - t0:7.1f} s  {folder}", flush=True)
    return folder
