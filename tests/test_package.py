"""Package basics: cheap lazy import, seeds, fast mode, device, cache directory."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import numpy as np
import pytest

import xaikit


def _run(code: str, **env) -> str:
    full_env = {**os.environ, **env}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_import_is_lazy_and_fast():
    code = ("import sys, time; t = time.perf_counter(); import xaikit; dt = time.perf_counter() - t; "
            "print(dt, *[m for m in ('torch', 'transformers', 'shap', 'captum', 'matplotlib') if m in sys.modules])")
    seconds, *heavy = _run(code).split()
    assert heavy == [], f"import xaikit imported {heavy}"
    assert float(seconds) < 1.0, f"import xaikit took {float(seconds):.2f} s"


def test_lazy_names_resolve():
    code = ("import sys, xaikit; f = xaikit.gradient; assert 'torch' in sys.modules; "
            "assert xaikit.tensor.gradients.smoothgrad is xaikit.smoothgrad; print(f.__module__)")
    assert _run(code) == "xaikit.tensor.gradients"
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        xaikit.nonsense  # noqa: B018


def test_set_seed_reproduces_random_numpy_and_torch():
    import torch

    def draw():
        return random.random(), float(np.random.rand()), float(torch.rand(1))  # noqa: NPY002 - set_seed seeds the legacy global

    assert xaikit.set_seed(123) == 123
    first = draw()
    xaikit.set_seed(123)
    assert draw() == first
    xaikit.set_seed(124)
    assert draw() != first
    for bad in (-1, 1.5, "1", True):
        with pytest.raises(ValueError, match="seed must be a non-negative int"):
            xaikit.set_seed(bad)


def test_fast_mode_switch(monkeypatch):
    for value, expected in (("1", True), ("true", True), ("yes", True), ("0", False), ("", False)):
        monkeypatch.setenv("XAIKIT_FAST", value)
        assert xaikit.fast_mode() is expected
        assert xaikit.pick(50, 5) == (5 if expected else 50)
    monkeypatch.delenv("XAIKIT_FAST")
    assert xaikit.fast_mode() is False
    assert _run("import xaikit; print(xaikit.fast_mode())", XAIKIT_FAST="1") == "True"


def test_device(monkeypatch):
    import torch

    monkeypatch.delenv("XAIKIT_DEVICE", raising=False)
    assert isinstance(xaikit.device(), torch.device)
    assert xaikit.device("cpu") == torch.device("cpu")
    monkeypatch.setenv("XAIKIT_DEVICE", "cpu")
    assert xaikit.device() == torch.device("cpu")
    if not torch.cuda.is_available():
        monkeypatch.delenv("XAIKIT_DEVICE")
        assert xaikit.device().type in {"cpu", "mps"}


def test_cache_dir_env(tmp_path, monkeypatch):
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path / "c"))
    assert xaikit.cache_dir() == tmp_path / "c" and (tmp_path / "c").is_dir()


def test_every_export_survives_importing_every_submodule():
    """No export shares a submodule's name, so importing a submodule never shadows an export
    (``xaikit.gradsam`` used to turn from the function into the module after ``import xaikit.views``)."""
    code = """
import importlib, inspect, pkgutil, types
import xaikit
for info in pkgutil.walk_packages(xaikit.__path__, 'xaikit.'):
    importlib.import_module(info.name)
bad = []
for pkg in (xaikit, xaikit.models, xaikit.widgets):
    table = getattr(pkg, '_EXPORTS', None) or getattr(pkg, '_PANELS')
    for name, where in table.items():
        value = getattr(pkg, name)
        home = importlib.import_module(f'{pkg.__name__}.{where}')
        if isinstance(value, types.ModuleType) or value is not getattr(home, name) or not callable(value):
            bad.append(f'{pkg.__name__}.{name} -> {value!r}')
        elif inspect.isfunction(value) and value.__module__ != home.__name__ and not hasattr(value, '__wrapped__'):
            bad.append(f'{pkg.__name__}.{name} is defined in {value.__module__}, listed under {home.__name__}')
for name in ('cache_dir', 'device', 'fast_mode', 'pick', 'set_seed'):
    if not callable(getattr(xaikit, name)):
        bad.append(name)
print(bad)
"""
    assert _run(code) == "[]"


def test_an_export_named_like_a_submodule_is_refused():
    from xaikit._lazy import attach

    with pytest.raises(ImportError, match="share a submodule's name"):
        attach("xaikit", {"gradsam": "gradsam"})


def test_set_seed_too_large_is_named():
    import xaikit

    with pytest.raises(ValueError, match=r"seed must be an int between 0 and 2\*\*63 - 1, got 2\*\*70"):
        xaikit.set_seed(2 ** 70)


def test_set_seed_names_a_str():
    with pytest.raises(ValueError, match=r"seed must be a non-negative int, got str '1'; write it as a number, "
                                         r"set_seed\(1\)"):
        xaikit.set_seed("1")


def test_embedding_integrated_gradients_is_a_top_level_name():
    from xaikit.text.text_ig import embedding_integrated_gradients

    assert xaikit.embedding_integrated_gradients is embedding_integrated_gradients
