"""Presenter mode: larger fonts and figures, fixed seeds, fast defaults, and everything back after off()."""

from __future__ import annotations

import os
import random

import matplotlib as mpl
import numpy as np
import pytest
import torch

from xaikit.course import presenter
from xaikit.widgets.base import Panel, slider


class _Dot(Panel):
    figsize = (4.0, 2.0)
    dpi = 80

    def __init__(self):
        super().__init__({"x": slider("x", 0.5, 0.0, 1.0, 0.1)})

    def compute(self, x):
        return x

    def draw(self, fig, result):
        fig.subplots().plot([0, 1], [0, result])


@pytest.fixture(autouse=True)
def _always_off():
    yield
    presenter.off()


def _png_size(png: bytes) -> tuple[int, int]:
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def test_on_scales_fonts_figures_and_panels(monkeypatch):
    monkeypatch.delenv("XAIKIT_FAST", raising=False)
    before = {k: mpl.rcParams[k] for k in (*presenter.FONT_KEYS, "figure.figsize", "lines.linewidth")}
    normal = _Dot()
    assert _png_size(normal.image.value) == (320, 160)

    settings = presenter.on(font_scale=1.5, figure_scale=2.0, seed=7)
    assert settings == {"font_scale": 1.5, "figure_scale": 2.0, "seed": 7, "fast": True}
    assert presenter.is_on()
    assert mpl.rcParams["font.size"] == pytest.approx(before["font.size"] * 1.5)
    for key in presenter.FONT_KEYS:  # numeric sizes scaled, named sizes ("large") follow font.size
        if isinstance(before[key], int | float):
            assert mpl.rcParams[key] == pytest.approx(before[key] * 1.5), key
    assert list(mpl.rcParams["figure.figsize"]) == pytest.approx([2 * v for v in before["figure.figsize"]])
    assert mpl.rcParams["lines.linewidth"] > before["lines.linewidth"]
    assert os.environ["XAIKIT_FAST"] == "1"

    big = _Dot()
    assert _png_size(big.image.value) == (640, 320)  # twice the pixels, same layout
    assert big.image.layout.width == "640px" and normal.image.layout.width == "320px"
    tick = big.figure.axes[0].xaxis.get_ticklabels()[0].get_fontsize()
    assert tick == pytest.approx(1.5 * normal.figure.axes[0].xaxis.get_ticklabels()[0].get_fontsize())

    assert presenter.off() is True
    assert not presenter.is_on()
    after = {k: mpl.rcParams[k] for k in before}
    assert after == before  # exact: off() puts the saved values back
    assert Panel.scale == 1.0 and "XAIKIT_FAST" not in os.environ
    assert _png_size(_Dot().image.value) == (320, 160)
    assert presenter.off() is False  # a second off() is harmless


def test_seeds_are_fixed_and_rng_state_restored():
    random.seed(123)
    np.random.seed(123)  # noqa: NPY002 - the global state is what set_seed and presenter manage
    torch.manual_seed(123)
    expected_after = (random.random(), np.random.rand(), torch.rand(1).item())  # noqa: NPY002
    random.seed(123)
    np.random.seed(123)  # noqa: NPY002
    torch.manual_seed(123)

    presenter.on(seed=5)
    first = (random.random(), np.random.rand(), torch.rand(1).item())  # noqa: NPY002
    presenter.on(seed=5)  # on() again: same seed, same numbers (exact: the same generators' draws)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == first  # noqa: NPY002
    presenter.off()
    # the generators continue exactly where they were before on()
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected_after  # noqa: NPY002


def test_fast_env_restored_to_its_old_value(monkeypatch):
    monkeypatch.setenv("XAIKIT_FAST", "0")
    from xaikit._config import fast_mode

    with presenter.presenting(fast=True) as settings:
        assert settings["fast"] and fast_mode()
    assert os.environ["XAIKIT_FAST"] == "0" and not fast_mode()
    with presenter.presenting(fast=False):
        assert os.environ["XAIKIT_FAST"] == "0"


def test_context_manager_restores_on_error():
    before = mpl.rcParams["font.size"]
    with pytest.raises(RuntimeError, match="boom"), presenter.presenting(font_scale=2.0):
        assert mpl.rcParams["font.size"] == pytest.approx(2 * before)
        raise RuntimeError("boom")
    assert mpl.rcParams["font.size"] == before and not presenter.is_on()  # exact: the saved value put back


def test_on_twice_then_off_goes_back_to_the_start():
    before = mpl.rcParams["font.size"]
    presenter.on(font_scale=1.5)
    presenter.on(font_scale=2.0)  # not compounded: 2x the original, not 3x
    assert mpl.rcParams["font.size"] == pytest.approx(2 * before)
    presenter.off()
    assert mpl.rcParams["font.size"] == before  # exact: the saved value put back


@pytest.mark.parametrize("kwargs, error, words", [
    ({"font_scale": 0.5}, ValueError, "font_scale must be >= 1.0"),
    ({"figure_scale": "big"}, TypeError, "figure_scale must be a number"),
    ({"seed": -1}, ValueError, "seed"),
    ({"fast": "yes"}, TypeError, "fast must be True or False"),
])
def test_bad_settings_are_named(kwargs, error, words):
    before = dict(mpl.rcParams)
    with pytest.raises(error, match=words):
        presenter.on(**kwargs)
    assert not presenter.is_on() and dict(mpl.rcParams) == before
