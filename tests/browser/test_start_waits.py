"""A student opens notebook 02 while ``start.sh``'s background build still trains the sentiment model.

``scripts/start.sh`` opens JupyterLab first and builds the embedded models behind it. Here its background
builder is a fake one (``XAIKIT_PYTHON`` is a wrapper that runs it for ``prepare --background``): it takes
the sentiment model's build lock in an empty temporary cache, reports slow progress steps
(:mod:`xaikit.models.buildprogress`), and when the test says so, finishes by copying the prepared model of
the real cache into its temporary folder (the cache's own atomic rename puts it in place). The test checks
that, in headless Chromium:

* notebook 02, Run All, reaches section 8 and waits: a progress bar naming the builder's process appears
  in the notebook and moves;
* once the build ends the notebook loads the model and runs to the end without an error;
* ``git status --porcelain`` of the repository stays empty, and the build's log is in the ignored
  ``artifacts/``.

Run:  .venv/bin/python -m pytest tests/browser/test_start_waits.py -m browser -q
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap

import pytest

from tests.worktree import copy_worktree, git

from .lab_driver import free_port, open_notebook, run_all, running_start_sh, start_run_all, start_sh_home
from .test_start_lab import SERVER_CONFIG, USER_SETTINGS

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.notebook, pytest.mark.prepared]

NOTEBOOK = "02_integrated_gradients.ipynb"

FAKE_BUILDER = textwrap.dedent("""
    import os, shutil, sys, time
    from pathlib import Path
    from xaikit.models import buildprogress, cache, sentiment

    source, release, steps = Path(os.environ["FAKE_SOURCE"]), Path(os.environ["FAKE_RELEASE"]), 2400
    sys.stdout = open(sys.argv[sys.argv.index("--log") + 1], "a", buffering=1)  # as prepare --background --log

    def build(tmp):
        for i in range(steps):
            buildprogress.step(i + 1, steps, "training the embedded sentiment model")
            if release.exists():
                break
            time.sleep(0.25)
        for path in source.iterdir():
            if path.is_file() and path.name != cache.MANIFEST:
                shutil.copy2(path, tmp / path.name)

    with buildprogress.announce_background():
        cache.ensure(sentiment.sentiment_folder(), build, what="embedded sentiment model", progress=False)
    print("fake builder: done", flush=True)
""")

WRAPPER = """#!/usr/bin/env bash
case "$*" in *"prepare --background"*) exec "{python}" "{builder}" "$@" ;; esac
exec "{python}" "$@"
"""

#: the output showing the tqdm bar of a process waiting for the build: its text (label and "n/total" counter)
#: and its bar's width (percent), or null while there is none
_BAR_JS = """() => { for (const out of document.querySelectorAll('.jp-OutputArea-output')) {
    const text = (out.innerText || '').replace(/\\s+/g, ' ');  // tqdm writes U+2007 for its spaces
    if (!text.includes('waiting for process')) continue;
    const bar = out.querySelector('.progress-bar, .widget-progress [style*="width"]');
    const counts = [...text.matchAll(/(\\d+)\\/(\\d+)/g)].map(m => [Number(m[1]), Number(m[2])]);
    return {text: text, width: bar ? parseFloat(bar.style.width || 'NaN') : null,
            n: counts.length ? counts[counts.length - 1][0] : null}; }
  return null; }"""

#: what the outputs of the cells show around "waiting", for a failure message
_WAITING_JS = """() => [...document.querySelectorAll('.jp-OutputArea-output')]
    .filter(o => /waiting|building/.test((o.innerText || '').replace(/\\s+/g, ' ')))
    .map(o => o.innerText.slice(0, 300) + ' || ' + o.innerHTML.slice(0, 1200))"""


@pytest.fixture
def lab_with_a_build_running(tmp_path):
    from xaikit.models.sentiment import sentiment_folder

    source = sentiment_folder()  # the prepared model of the real cache, read only
    if not (source / "model.safetensors").is_file():
        pytest.skip("the embedded sentiment model is not prepared (python -m xaikit prepare)")
    repo = copy_worktree(tmp_path / "repo", commit=True)
    jupyter_home = start_sh_home(tmp_path, SERVER_CONFIG, USER_SETTINGS)
    cache_root = tmp_path / "cache"  # the digits CNNs and the data the notebook reads, not the sentiment model
    cache_root.mkdir()
    for entry in source.parent.iterdir():
        if entry.is_dir() and "sentiment" not in entry.name and entry.name != "imageworld":
            shutil.copytree(entry, cache_root / entry.name)
    builder = tmp_path / "fake_builder.py"
    builder.write_text(FAKE_BUILDER)
    wrapper = tmp_path / "python"
    wrapper.write_text(WRAPPER.format(python=sys.executable, builder=builder))
    wrapper.chmod(0o755)
    release = tmp_path / "release"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "XAIKIT_PYTHON"))}
    env.update(XAIKIT_PYTHON=str(wrapper), XAIKIT_CACHE=str(cache_root), FAKE_SOURCE=str(source),
               FAKE_RELEASE=str(release), PYTHONPATH=str(repo), XAIKIT_FAST="1", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1", **jupyter_home)
    env.pop("MPLBACKEND", None)
    with running_start_sh(repo, env, tmp_path, port, on_stop=release.touch) as (url, log_path):
        yield type("Started", (), {"url": url, "repo": repo, "log": log_path, "release": release,
                                   "folder": cache_root / source.name})()


def test_notebook_02_waits_for_the_background_build_with_a_moving_bar_then_runs(lab_with_a_build_running,
                                                                                 bare_page):
    lab, page = lab_with_a_build_running, bare_page  # conftest's page would start a LabServer of its own
    assert not lab.folder.exists(), "the sentiment model was there before the build"
    open_notebook(page, lab, NOTEBOOK)
    started = start_run_all(page)
    try:
        page.wait_for_function(f"() => ({_BAR_JS})() !== null", timeout=900_000, polling=500)
    except Exception as err:
        raise AssertionError(f"no waiting bar: {page.evaluate(_WAITING_JS)}") from err
    first = page.evaluate(_BAR_JS)
    page.wait_for_timeout(4000)
    second = page.evaluate(_BAR_JS)
    assert second["n"] is not None and first["n"] is not None and second["n"] > first["n"], (first, second)
    assert second["width"] is not None and second["width"] > first["width"], (first, second)  # the bar moves
    assert "training the embedded sentiment model" in second["text"], second
    assert not lab.folder.exists(), "the model appeared while its build still ran"

    lab.release.touch()  # the build ends: the notebook loads the model and goes on
    report = run_all(page, timeout=900, started=started)
    assert report.errors == [] and report.executed == report.code_cells, report
    assert page.evaluate(_BAR_JS) is None, "the waiting bar stayed after the wait"
    assert (lab.folder / "model.safetensors").is_file()
    assert page.console_errors == [], page.console_errors[:3]

    log = (lab.repo / "artifacts" / "prepare-background.log").read_text()
    assert "fake builder: done" in log, log
    status = git(lab.repo, "status", "--porcelain")
    assert status == "", f"running a notebook changed the checkout:\n{status}"
