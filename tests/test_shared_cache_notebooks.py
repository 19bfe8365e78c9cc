"""Every lecture notebook, in student mode, as a course's JupyterHub runs it: the prepared cache is the shared one
(``XAIKIT_SHARED_CACHE``, a hard-linked copy of this machine's prepared cache) and the personal one
(``XAIKIT_CACHE``) starts empty. No model is trained into the personal cache and nothing under the shared one
changes (every path, size and modification time compared)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from xaikit import _config
from xaikit.course import notebooks as _nbtools

from .test_shared_cache import snapshot

NOTEBOOKS = sorted(_nbtools.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


@pytest.fixture(scope="module")
def prepared_copy(tmp_path_factory):
    """This machine's prepared cache, hard-linked (no data copied) into a folder of the test's own, so that
    other processes writing into the real cache meanwhile do not show up as changes."""
    from xaikit.models import sentiment, vitworld

    monkey = pytest.MonkeyPatch()
    monkey.delenv("XAIKIT_SHARED_CACHE", raising=False)
    try:
        source = _config.cache_dir(create=False)
        if not (sentiment.is_built() and vitworld.is_built("main")):
            pytest.skip("needs the embedded models: run `python -m xaikit prepare` first")
    finally:
        monkey.undo()
    shared = tmp_path_factory.mktemp("srv") / "xaikit"
    shutil.copytree(source, shared, copy_function=os.link,
                    ignore=shutil.ignore_patterns(".*", "lecture-scale", "activations"))
    return shared


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.prepared
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_from_a_read_only_shared_cache(path: Path, prepared_copy: Path, tmp_path: Path, monkeypatch):
    personal = tmp_path / "home-cache"
    monkeypatch.setenv("XAIKIT_SHARED_CACHE", str(prepared_copy))
    monkeypatch.setenv("XAIKIT_CACHE", str(personal))
    monkeypatch.delenv("XAIKIT_FAST", raising=False)  # student mode; the kernel inherits this environment
    monkeypatch.delenv("XAIKIT_SEED", raising=False)
    before = snapshot(prepared_copy)
    nb, _seconds = _nbtools.execute(path, timeout=900)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, f"{path.name} against a shared cache produced errors: {errors[:1]}"
    texts = ["".join(o.get("text", "")) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    damaged = [t for t in texts if "shared cache" in t]
    assert not damaged, f"{path.name}: {damaged[:1]}"
    fallback = [t for t in texts if "is not prepared" in t or "training it now" in t]
    assert not fallback, f"{path.name} did not find the shared cache's models: {fallback[:1]}"
    trained = sorted(p.relative_to(personal).as_posix() for p in personal.rglob("*")
                     if p.name == "model.safetensors" or p.suffix == ".safetensors") if personal.exists() else []
    assert not trained, f"{path.name} trained models into the personal cache although the shared one holds them: {trained}"
    assert snapshot(prepared_copy) == before, f"{path.name} changed the shared cache"
