"""Every lecture notebook in a real browser: JupyterLab serves a copy, headless Chromium runs all cells,
and each widget panel is used once the way a student would use it.

For each ``notebooks/NN_*.ipynb`` (found at collection time, so new notebooks are covered as they land):

* every cell runs without an error output and every widget renders (no "Error displaying widget");
* the notebook shows at least one panel (``.xk-panel``);
* for each panel, one control is changed by hand (a slider's readout is typed into, a dropdown entry is
  picked, a toggle button or checkbox is clicked) and the panel's image or HTML in the DOM must change,
  with no ``.xk-error`` shown;
* a screenshot of the whole notebook is saved to ``artifacts/screenshots/NN_name.png`` and one per
  panel to ``artifacts/screenshots/NN_name/``.

Run:  .venv/bin/python -m pytest tests/browser -m browser -q
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .conftest import ROOT
from .lab_driver import open_notebook, panels_in_page, poke_panel, run_all, screenshot_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.notebook, pytest.mark.prepared]

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_in_browser(path: Path, page, lab_server, screenshot_dir):
    name = lab_server.add(path)
    open_notebook(page, lab_server, name)
    report = run_all(page, timeout=600)
    print(f"{path.stem}: ran {report.executed} of {report.code_cells} code cells in the browser in "
          f"{report.seconds:.1f} s")
    assert report.errors == [], f"{path.name}: cells failed in the browser: {report.errors}"
    assert report.broken_widgets == 0, f"{path.name}: {report.broken_widgets} widget(s) failed to render"
    assert report.executed == report.code_cells, (
        f"{path.name}: only {report.executed} of {report.code_cells} code cells ran")

    panels = panels_in_page(page)
    n = panels.count()
    assert n >= 1, f"{path.name} shows no xaikit panel (.xk-panel)"

    shots = screenshot_dir / path.stem
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    problems = []
    for i in range(n):
        panel = panels.nth(i)
        poke = poke_panel(page, panel)
        print(f"{path.stem} panel {i} {poke.kind}: {poke.control}: {poke.action} -> "
              f"changed={poke.changed} error={poke.error!r} ({poke.seconds:.1f} s)")
        if poke.error:
            problems.append(f"panel {i} ({poke.kind}) shows an error after {poke.action} on "
                            f"{poke.control!r}: {poke.error}")
        elif not poke.changed:
            problems.append(f"panel {i} ({poke.kind}): output did not change after {poke.action} on "
                            f"{poke.control!r}")
        panel.screenshot(path=str(shots / f"panel-{i:02d}-{poke.kind}.png"))
    screenshot_notebook(page, screenshot_dir / f"{path.stem}.png")
    assert page.console_errors == [], f"{path.name}: JavaScript errors: {page.console_errors[:3]}"
    assert problems == [], f"{path.name}:\n" + "\n".join(problems)
