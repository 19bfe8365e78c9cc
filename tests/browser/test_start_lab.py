"""JupyterLab as ``bash scripts/start.sh`` opens it, in headless Chromium.

A student runs ``start.sh``, opens a lecture notebook, runs it, and leaves it open past an autosave. Without
the project's kernelspec and settings the notebook would open to a "Select Kernel" dialog (jupytext serves the
paired ``.py``, whose header has no kernelspec), the tab would be marked unsaved at once, JupyterLab would
ask "Would you like to get notified about official Jupyter news?", and the autosave would write outputs into
the committed ``.ipynb`` and a kernelspec into the ``.py``, so ``git status`` would show two changed lecture
files.

Here, in a throwaway git repository holding the checkout's working tree (tracked and untracked files, as
they are now), ``scripts/start.sh`` itself starts JupyterLab (``XAIKIT_PYTHON`` = this Python, as
``test.sh`` allows; Jupyter's home folders are temporary ones, holding only a token-less server, cells kept
in the DOM and a 5 s autosave, so the news setting can only come from the project's own settings), and:

* the notebook opens on the project's kernelspec (``jupyter/data/kernels/python3``) with no dialog, and its
  tab is not marked unsaved;
* no news prompt appears, and the notification setting's default reads ``fetchNews: "false"``;
* Run All runs every cell of notebook 01 (fast mode) without an error;
* after an autosave the student's copy ``my-notebooks/01_gradients.ipynb`` holds the outputs, and
  ``git status --porcelain`` of the repository is empty: no tracked file changed, and the copy is ignored.

Run:  .venv/bin/python -m pytest tests/browser/test_start_lab.py -m browser -q
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request

import pytest

from tests.worktree import copy_worktree, git

from .lab_driver import free_port, open_notebook, run_all, running_start_sh, start_sh_home

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.notebook, pytest.mark.prepared]

NOTEBOOK = "01_gradients.ipynb"
AUTOSAVE_S = 5
NEWS = "official Jupyter news"

# what a person's own Jupyter home would hold here: a token-less local server, and (user settings) cells
# kept in the DOM and a short autosave. Nothing about news or updates: that must come from the project.
SERVER_CONFIG = """\
c = get_config()  # noqa
c.IdentityProvider.token = ""
c.PasswordIdentityProvider.hashed_password = ""
c.ServerApp.allow_root = True
c.ServerApp.disable_check_xsrf = True
c.ServerApp.open_browser = False
c.ServerApp.ip = "127.0.0.1"
c.LabApp.expose_app_in_browser = True
"""
USER_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": True,
                                                                     "autosaveInterval": AUTOSAVE_S},
}


@pytest.fixture
def started_lab(tmp_path):
    repo = copy_worktree(tmp_path / "repo", commit=True)
    jupyter_home = start_sh_home(tmp_path, SERVER_CONFIG, USER_SETTINGS)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "XAIKIT_PYTHON"))}
    env.update(XAIKIT_PYTHON=sys.executable, PYTHONPATH=str(repo), XAIKIT_FAST="1", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1", **jupyter_home)
    env.pop("MPLBACKEND", None)  # the kernel draws inline, as for a student
    with running_start_sh(repo, env, tmp_path, port) as (url, log_path):
        server = type("Started", (), {"url": url, "repo": repo, "log": log_path})()
        yield server


def _get(url: str):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


_MODEL_JS = """() => { const p = window.jupyterapp.shell.currentWidget;
    const k = p.sessionContext.session.kernel;
    return {dirty: p.context.model.dirty, kernel: k ? k.name : null, path: p.context.path,
            dialogs: document.querySelectorAll('.jp-Dialog').length}; }"""


@pytest.fixture
def page(bare_page):
    """conftest's ``bare_page`` (not its ``page``, which starts a LabServer of its own): start.sh serves here."""
    return bare_page


def test_start_sh_opens_a_copy_on_the_project_kernel_and_leaves_git_clean(started_lab, page):
    repo = started_lab.repo
    copy = repo / "my-notebooks" / NOTEBOOK
    assert copy.is_file(), f"start.sh did not copy the lecture notebooks: {started_lab.log.read_text()[-2000:]}"
    specs = _get(f"{started_lab.url}/api/kernelspecs")
    python3 = specs["kernelspecs"]["python3"]["spec"]
    assert python3["metadata"].get("xaikit") == "jupyter/data/kernels/python3", (
        f"the python3 kernel is not the project's kernelspec: {python3}")
    settings = _get(f"{started_lab.url}/lab/api/settings/@jupyterlab/apputils-extension:notification")
    # the project's default (the schema's default, as overridden), not a setting of the user's
    assert settings["schema"]["properties"]["fetchNews"]["default"] == "false", settings["schema"]["properties"]
    assert "fetchNews" not in settings.get("settings", {}), settings.get("settings")

    as_copied = copy.read_bytes()
    open_notebook(page, started_lab, NOTEBOOK)
    page.wait_for_timeout(3000)  # the news toast and a late kernel dialog come within a second or two
    state = page.evaluate(_MODEL_JS)
    assert state["dialogs"] == 0, f"a dialog is open: {page.locator('.jp-Dialog').inner_text()}"
    assert state["kernel"] == "python3" and state["path"] == NOTEBOOK, state
    # not marked unsaved, and not saved either (a 5 s autosave would hide a change made on opening)
    assert state["dirty"] is False, "the notebook is marked unsaved right after opening"
    assert copy.read_bytes() == as_copied, "opening the notebook changed it (JupyterLab saved a change)"
    assert page.get_by_text(NEWS).count() == 0, "JupyterLab asked about Jupyter news"

    report = run_all(page, timeout=600)
    assert report.errors == [] and report.executed == report.code_cells, report
    page.wait_for_timeout((AUTOSAVE_S + 1) * 1000)
    page.wait_for_function(f"() => !({_MODEL_JS})().dirty", timeout=(4 * AUTOSAVE_S + 30) * 1000, polling=500)
    saved = json.loads(copy.read_text())
    outputs = sum(len(c.get("outputs", [])) for c in saved["cells"] if c["cell_type"] == "code")
    assert outputs > 0, "the autosave did not write the run into the student's copy"
    assert page.get_by_text(NEWS).count() == 0, "JupyterLab asked about Jupyter news"
    assert page.console_errors == [], page.console_errors[:3]

    status = git(repo, "status", "--porcelain")
    assert status == "", f"running a notebook changed the checkout:\n{status}"
    assert "my-notebooks/" in git(repo, "status", "--porcelain", "--ignored")
