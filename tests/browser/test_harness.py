"""The browser harness itself, on a throwaway notebook: it must see a panel's output change when a person
changes a control, and it must see an error that a panel shows (so the notebook tests can fail)."""

from __future__ import annotations

import nbformat
import pytest

from .lab_driver import open_notebook, panels_in_page, poke_panel, run_all, screenshot_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TOY = '''
import numpy as np
from xaikit.widgets.base import Panel, dropdown, log_slider, slider


class WavePanel(Panel):
    title = "toy wave"

    def __init__(self):
        super().__init__({"freq": slider("frequency", 1.0, 0.5, 5.0, 0.1),
                          "shape": dropdown("shape", ["sin", "cos"])})

    def compute(self, freq, shape):
        t = np.linspace(0, 1, 200)
        return t, getattr(np, shape)(2 * np.pi * freq * t)

    def draw(self, fig, result):
        ax = fig.subplots()
        ax.plot(*result)
        return f"<b>max {result[1].max():.3f}</b>"


class FragilePanel(Panel):
    """Fails for sigma above 0.1: the harness must report the error it shows."""
    figsize = (3, 2)

    def __init__(self):
        super().__init__({"sigma": log_slider("sigma", 10**-1.5, -2, 1)})

    def compute(self, sigma):
        if sigma > 0.1:
            raise ValueError(f"sigma must be at most 0.1, got {sigma}")
        return sigma

    def draw(self, fig, result):
        fig.subplots().bar([0], [result])


class HeadsLikePanel(Panel):
    """A selection slider (options 1, 2, 4, 8): its readout is a label, so the harness uses the arrow keys."""
    figsize = (3, 2)

    def __init__(self):
        import ipywidgets as W

        super().__init__({"n": W.SelectionSlider(options=[1, 2, 4, 8], value=4, description="n",
                                                 continuous_update=False)})

    def compute(self, n):
        return n

    def draw(self, fig, result):
        fig.subplots().bar(range(result), range(result))


wave = WavePanel()
assert wave.result is not None
wave
'''


def _toy_notebook(path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# toy"), nbformat.v4.new_code_cell(TOY),
                nbformat.v4.new_code_cell("fragile = FragilePanel()\nfragile"),
                nbformat.v4.new_code_cell("heads = HeadsLikePanel()\nheads")]
    nbformat.write(nb, path)
    return path


def test_harness_sees_changes_and_errors(page, lab_server, tmp_path, screenshot_dir):
    name = lab_server.add(_toy_notebook(tmp_path / "toy_harness.ipynb"))
    open_notebook(page, lab_server, name)
    report = run_all(page)
    assert report.errors == [] and report.broken_widgets == 0
    assert report.executed == report.code_cells == 3
    panels = panels_in_page(page)
    assert panels.count() == 3

    wave = poke_panel(page, panels.nth(0))
    assert wave.kind == "wavepanel" and wave.control == "freq", wave
    assert wave.changed and wave.error is None, wave

    # the log slider goes from 10**-1.5 a quarter of its range (in exponent space) up, to 10**-0.75 > 0.1:
    # the panel shows its error and the harness must see it
    fragile = poke_panel(page, panels.nth(1))
    assert fragile.kind == "fragilepanel" and fragile.control == "sigma", fragile
    assert "0.1778" in fragile.action, fragile
    assert fragile.error is not None and "sigma must be at most 0.1" in fragile.error, fragile
    heads = poke_panel(page, panels.nth(2))
    assert heads.changed and heads.error is None and "pressed ArrowRight" in heads.action, heads
    assert "now '8'" in heads.action, heads

    shot = screenshot_dir / "toy_harness.png"
    screenshot_notebook(page, shot)
    assert shot.stat().st_size > 10_000
