"""Presenter mode: one call to get a notebook ready for a projector, and one to switch it all back.

``xaikit.course.presenter.on()`` (or ``with xaikit.course.presenter.presenting(): ...``), run in the first cell of any
lecture notebook, before the panels are created:

* **larger text and figures**: Matplotlib font sizes are multiplied by ``font_scale`` and the default
  figure size by ``figure_scale``; every xaikit panel created afterwards draws its figure
  ``figure_scale`` times larger (:attr:`xaikit.widgets.base.Panel.scale`), so its text grows by
  ``font_scale * figure_scale`` in pixels and stays readable from the back row;
* **fixed seeds**: :func:`xaikit.set_seed` (Python, NumPy, torch), so the live run shows the numbers in
  the lecture notes;
* **fast defaults**: ``XAIKIT_FAST=1``, the sample counts CI uses (:func:`xaikit._config.pick`), so no
  cell keeps the room waiting.

``off()`` restores exactly what was there before ``on()``: every Matplotlib setting it touched, the panel
scale, the ``XAIKIT_FAST`` variable (set, unset or its old value) and the random number generators'
states. The browser's own zoom (Ctrl + / Ctrl -) and JupyterLab's View > Presentation Mode enlarge the
code and the controls; this module takes care of what they cannot, the pixels inside the figures.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from xaikit._config import FAST_ENV, set_seed
from xaikit._validate import bool_flags, check_float, check_int

__all__ = ["on", "off", "is_on", "presenting", "FONT_KEYS"]

#: the Matplotlib settings scaled by ``font_scale`` (numbers only; named sizes like "large" are relative
#: to ``font.size`` and follow it).
FONT_KEYS = ("font.size", "axes.titlesize", "axes.labelsize", "xtick.labelsize", "ytick.labelsize",
             "legend.fontsize", "legend.title_fontsize", "figure.titlesize")
LINE_KEYS = ("lines.linewidth", "lines.markersize", "axes.linewidth")


@dataclass
class _Saved:
    rc: dict
    panel_scale: float
    fast_env: str | None
    rng: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)


_saved: _Saved | None = None


def is_on() -> bool:
    """True between :func:`on` and :func:`off`."""
    return _saved is not None


def settings() -> dict:
    """The settings of the running presentation (empty when presenter mode is off)."""
    return dict(_saved.settings) if _saved else {}


def _rng_state() -> dict:
    import numpy as np

    state = {"random": random.getstate(), "numpy": np.random.get_state()}  # noqa: NPY002 - set_seed seeds it
    with contextlib.suppress(ImportError):
        import torch

        state["torch"] = torch.get_rng_state()
    return state


def _restore_rng(state: dict) -> None:
    import numpy as np

    random.setstate(state["random"])
    np.random.set_state(state["numpy"])  # noqa: NPY002 - the global state set_seed seeds
    if "torch" in state:
        import torch

        torch.set_rng_state(state["torch"])


@bool_flags
def on(font_scale: float = 1.4, figure_scale: float = 1.25, seed: int = 0, fast: bool = True) -> dict:
    """Switch presenter mode on: larger fonts and figures, fixed seeds, fast defaults.

    Parameters
    ----------
    font_scale:
        Multiplies Matplotlib's font sizes (and line widths a little, by its square root); 1.0-3.0.
    figure_scale:
        Multiplies Matplotlib's default figure size and the pixel size of xaikit panels created from now
        on; 0.5-3.0.
    seed:
        Passed to :func:`xaikit.set_seed`.
    fast:
        Set ``XAIKIT_FAST=1`` (the small sample counts CI uses). ``False`` leaves the variable alone.

    Calling ``on()`` again while it is on first restores the original state, then applies the new
    settings, so :func:`off` always goes back to what was there before the first ``on()``.
    Returns the settings in force.
    """
    global _saved
    font_scale = check_float(font_scale, "font_scale", minimum=1.0, maximum=3.0)
    figure_scale = check_float(figure_scale, "figure_scale", minimum=0.5, maximum=3.0)
    seed = check_int(seed, "seed", minimum=0)
    if not isinstance(fast, bool):
        raise TypeError(f"fast must be True or False, got {fast!r}")
    if _saved is not None:
        off()

    import matplotlib as mpl

    from xaikit.widgets.base import Panel

    keys = (*FONT_KEYS, *LINE_KEYS, "figure.figsize")
    saved = _Saved(rc={k: mpl.rcParams[k] for k in keys}, panel_scale=Panel.scale,
                   fast_env=os.environ.get(FAST_ENV), rng=_rng_state())
    try:
        for key in FONT_KEYS:
            value = mpl.rcParams[key]
            # named sizes ("large") scale with font.size already; numbers are scaled here
            mpl.rcParams[key] = value * font_scale if isinstance(value, int | float) else value
        for key in LINE_KEYS:
            mpl.rcParams[key] = mpl.rcParams[key] * font_scale**0.5
        width, height = mpl.rcParams["figure.figsize"]
        mpl.rcParams["figure.figsize"] = [width * figure_scale, height * figure_scale]
        Panel.scale = figure_scale
        if fast:
            os.environ[FAST_ENV] = "1"
        set_seed(seed)
    except BaseException:
        _restore(saved)
        raise
    saved.settings = {"font_scale": font_scale, "figure_scale": figure_scale, "seed": seed, "fast": fast}
    _saved = saved
    return dict(saved.settings)


def _restore(saved: _Saved) -> None:
    import matplotlib as mpl

    from xaikit.widgets.base import Panel

    mpl.rcParams.update(saved.rc)
    Panel.scale = saved.panel_scale
    if saved.fast_env is None:
        os.environ.pop(FAST_ENV, None)
    else:
        os.environ[FAST_ENV] = saved.fast_env
    _restore_rng(saved.rng)


def off() -> bool:
    """Switch presenter mode off and restore everything :func:`on` changed. Returns whether it was on."""
    global _saved
    if _saved is None:
        return False
    saved, _saved = _saved, None
    _restore(saved)
    return True


@contextlib.contextmanager
def presenting(**kwargs: Any) -> Iterator[dict]:
    """``with xaikit.course.presenter.presenting(font_scale=1.6): ...`` switches presenter mode on for the block
    and off afterwards, even if the block raises."""
    settings_now = on(**kwargs)
    try:
        yield settings_now
    finally:
        off()
