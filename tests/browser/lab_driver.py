"""Drive xaikit notebooks in a real browser: a throwaway JupyterLab server plus headless Chromium.

Used by ``tests/browser/`` (pytest marker ``browser``). What it does, the way a student would:

1. :class:`LabServer` serves a *copy* of the notebooks from a temporary folder with a temporary,
   token-less configuration (autosave off, no news, no update check, no extension manager), so nothing in
   the working tree is ever written and no user setting leaks in.
2. ``scripts/_browser.py`` (shared with ``scripts/screenshot_html.py``) starts Debian's
   ``/usr/bin/chromium`` through Playwright with no background networking and a fresh profile.
3. :func:`run_all` opens a notebook, runs every cell from the Run menu's command and waits for the
   kernel; :func:`panels_in_page` finds each ``.xk-panel``; :func:`poke_panel` changes one of its
   controls as a person would (types a new value into a slider's readout and presses Enter, picks another
   entry of a dropdown, clicks another toggle button or the checkbox) and waits until the panel's image
   or HTML in the DOM changed, or an ``.xk-error`` appeared.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

# JupyterLab user settings for the test server: cells stay in the DOM (no windowing), nothing is saved,
# nothing is fetched from the network.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/extensionmanager-extension/plugin.jupyterlab-settings": {"enabled": False},
}

SERVER_CONFIG = """\
c = get_config()  # noqa
c.IdentityProvider.token = ""
c.PasswordIdentityProvider.hashed_password = ""
c.ServerApp.allow_root = True
c.ServerApp.jpserver_extensions = {"jupyter_lsp": False, "jupyter_server_terminals": False}
c.ServerApp.disable_check_xsrf = True
c.ServerApp.open_browser = False
c.ServerApp.ip = "127.0.0.1"
c.LabApp.expose_app_in_browser = True
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = "jupyterlab.handlers.announcements.NeverCheckForUpdate"
c.LabApp.extension_manager = "readonly"
c.LanguageServerManager.autodetect = False
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_sh_home(tmp_path: Path, server_config: str, user_settings: dict) -> dict[str, str]:
    """A temporary Jupyter home under ``tmp_path/home`` for ``scripts/start.sh``: ``server_config`` as the
    server's configuration and ``user_settings`` (file name -> values) as JupyterLab's user settings. Returns
    the environment variables that point Jupyter, IPython and JupyterLab at it."""
    home = tmp_path / "home"
    for sub in ("config", "data", "runtime", "ipython", "workspaces"):
        (home / sub).mkdir(parents=True)
    (home / "config" / "jupyter_server_config.py").write_text(server_config)
    settings = home / "user-settings"
    for rel, values in user_settings.items():
        (settings / rel).parent.mkdir(parents=True, exist_ok=True)
        (settings / rel).write_text(json.dumps(values))
    return dict(JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
                JUPYTER_RUNTIME_DIR=str(home / "runtime"), IPYTHONDIR=str(home / "ipython"),
                JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"))


@contextlib.contextmanager
def running_start_sh(repo: Path, env: dict[str, str], cwd: Path, port: int, timeout: float = 300,
                     on_stop=None):
    """Run ``bash scripts/start.sh`` of ``repo`` on ``port`` (its output in ``cwd/start.log``) and wait until
    JupyterLab answers ``/api/status``; yields ``(url, log_path)``. On leaving, ``on_stop()`` (if given) runs,
    then start.sh's process group is stopped. start.sh runs prepare and the notebook build before
    JupyterLab, hence the long ``timeout``; it raises if start.sh exits or JupyterLab does not answer."""
    log_path = cwd / "start.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(["bash", str(repo / "scripts" / "start.sh"), f"--port={port}", "--port-retries=0"],
                                cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"start.sh exited with {proc.returncode}:\n{log_path.read_text()[-4000:]}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{url}/api/status", timeout=2) as r:
                    if r.status == 200:
                        break
            if time.monotonic() > deadline:
                raise RuntimeError(f"JupyterLab did not answer:\n{log_path.read_text()[-4000:]}")
            time.sleep(0.5)
        yield url, log_path
    finally:
        if on_stop is not None:
            on_stop()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # start.sh execs JupyterLab, which leads its own group
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)


class LabServer:
    """A JupyterLab server on a free localhost port, serving a temporary folder."""

    def __init__(self, root: Path | None = None, python: str = sys.executable, startup_timeout: float = 90):
        self.tmp = Path(tempfile.mkdtemp(prefix="xk-lab-"))
        self.root = Path(root) if root else self.tmp / "notebooks"
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.python = python
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen | None = None
        self.log_path = self.tmp / "server.log"

    def add(self, notebook: Path) -> str:
        """Copy a notebook into the served folder; returns its name there."""
        shutil.copy(notebook, self.root / notebook.name)
        return notebook.name

    def start(self) -> LabServer:
        config = self.tmp / "config"
        config.mkdir()
        (config / "jupyter_server_config.py").write_text(SERVER_CONFIG)
        settings = self.tmp / "settings"
        for rel, values in LAB_SETTINGS.items():
            path = settings / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        for sub in ("runtime", "data", "workspaces", "ipython"):
            (self.tmp / sub).mkdir()
        env = dict(os.environ)
        env.update(JUPYTER_CONFIG_DIR=str(config), JUPYTER_RUNTIME_DIR=str(self.tmp / "runtime"),
                   JUPYTER_DATA_DIR=str(self.tmp / "data"), IPYTHONDIR=str(self.tmp / "ipython"),
                   JUPYTERLAB_SETTINGS_DIR=str(settings),
                   JUPYTERLAB_WORKSPACES_DIR=str(self.tmp / "workspaces"),
                   PATH=f"{Path(self.python).parent}{os.pathsep}{env.get('PATH', '')}",
                   MPLBACKEND="Agg", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
        cmd = [self.python, "-m", "jupyterlab", f"--port={self.port}", "--port-retries=0",
               f"--ServerApp.root_dir={self.root}", f"--LabApp.user_settings_dir={settings}",
               f"--LabApp.workspaces_dir={self.tmp / 'workspaces'}"]
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, env=env, cwd=self.root, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                log = self.log()
                self.stop()
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode}:\n{log}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{self.url}/api/status", timeout=2) as r:
                    if r.status == 200:
                        return self
            time.sleep(0.3)
        log = self.log()
        self.stop()
        raise RuntimeError(f"JupyterLab did not answer within {self.startup_timeout:.0f} s:\n{log}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path.exists() else ""

    def api(self, method: str, path: str):
        req = urllib.request.Request(f"{self.url}{path}", method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """Stop every running kernel (between notebooks, to free memory and CPU)."""
        for session in self.api("GET", "/api/sessions") or []:
            with contextlib.suppress(OSError):
                self.api("DELETE", f"/api/sessions/{session['id']}")
        for kernel in self.api("GET", "/api/kernels") or []:
            with contextlib.suppress(OSError):
                self.api("DELETE", f"/api/kernels/{kernel['id']}")

    def stop(self) -> None:
        """Stop the kernels and the server, and delete the temporary folder."""
        if self.proc and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.shutdown_kernels()
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        shutil.rmtree(self.tmp, ignore_errors=True)


# --- notebook level -------------------------------------------------------------------------------------

_STATE_JS = """() => {
  const app = window.jupyterapp;
  const panel = app && app.shell.currentWidget;
  if (!panel || !panel.content || !panel.content.widgets) return null;
  const out = {code: 0, executed: 0, errors: [], status: null};
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  out.status = kernel ? kernel.status : null;
  panel.content.widgets.forEach((cell, index) => {
    if (cell.model.type !== 'code') return;
    out.code += 1;
    if (cell.model.executionCount) out.executed += 1;
    for (const o of cell.model.outputs.toJSON()) {
      if (o.output_type === 'error') out.errors.push(`cell ${index}: ${o.ename}: ${o.evalue}`);
    }
  });
  return out;
}"""


@dataclass
class RunReport:
    seconds: float
    code_cells: int
    executed: int
    errors: list[str] = field(default_factory=list)
    broken_widgets: int = 0


def open_notebook(page, server: LabServer, name: str, timeout: float = 120) -> None:
    """Open ``name`` in JupyterLab and wait until its kernel is idle."""
    # ?reset: start from an empty workspace, so tabs of earlier notebooks are not reopened (with kernels)
    page.goto(f"{server.url}/lab/tree/{name}?reset", wait_until="domcontentloaded", timeout=timeout * 1000)
    page.wait_for_function(
        """() => { const a = window.jupyterapp; const p = a && a.shell.currentWidget;
                   const k = p && p.sessionContext && p.sessionContext.session
                             && p.sessionContext.session.kernel;
                   return !!(p && p.content && p.content.widgets && k && k.status === 'idle'); }""",
        timeout=timeout * 1000, polling=250)


def start_run_all(page) -> float:
    """Start Run > Run All Cells without waiting; :func:`run_all` with ``started=`` the returned time waits."""
    t0 = time.perf_counter()
    page.evaluate("""() => { window.__xkDone = null;
        window.jupyterapp.commands.execute('notebook:run-all-cells').then(
            ok => { window.__xkDone = {ok: ok}; }, err => { window.__xkDone = {error: String(err)}; }); }""")
    return t0


def run_all(page, timeout: float = 400, started: float | None = None) -> RunReport:
    """Run every cell (Run > Run All Cells) and wait for the last one; report errors. ``started``: the run
    was started by :func:`start_run_all` at that time; only wait for it."""
    t0 = start_run_all(page) if started is None else started
    try:
        page.wait_for_function("() => window.__xkDone !== null", timeout=timeout * 1000, polling=500)
    except Exception as err:
        state = page.evaluate(_STATE_JS) or {}
        busy = page.evaluate("""() => { const p = window.jupyterapp.shell.currentWidget;
            const i = p.content.widgets.findIndex(c => c.model.type === 'code'
                && (c.node.querySelector('.jp-InputPrompt') || {}).textContent === '[*]:');
            return i < 0 ? null : {index: i, source: p.content.widgets[i].model.sharedModel.getSource()
                                                       .slice(0, 300)}; }""")
        raise TimeoutError(f"run-all did not finish within {timeout:.0f} s: {state.get('executed')} of "
                           f"{state.get('code')} code cells ran; still running: {busy}") from err
    done = page.evaluate("() => window.__xkDone")
    # outputs (widgets) arrive right after the last reply; wait for the kernel to settle.
    page.wait_for_function(f"() => {{ const s = ({_STATE_JS})(); return s && s.status === 'idle'; }}",
                           timeout=60_000, polling=250)
    state = page.evaluate(_STATE_JS)
    errors = list(state["errors"])
    if "error" in done:
        errors.append(f"run-all failed: {done['error']}")
    broken = page.locator(".jp-OutputArea-output:has-text('Error displaying widget')").count()
    return RunReport(time.perf_counter() - t0, state["code"], state["executed"], errors, broken)


# --- panel level ----------------------------------------------------------------------------------------

_SNAPSHOT_JS = """(panel) => {
  const img = panel.querySelector('.xk-figure img, img.xk-figure');
  const html = panel.querySelector('.xk-html');
  const err = panel.querySelector('.xk-error');
  return {src: img ? img.getAttribute('src') : null, html: html ? html.innerHTML : null,
          error: err ? err.innerText : null};
}"""

_KIND_JS = """(panel) => { for (const c of panel.classList) {
  if (c.startsWith('xk-') && c !== 'xk-panel' && c !== 'xk-has-error') return c.slice(3); } return '?'; }"""


@dataclass
class Poke:
    """What :func:`poke_panel` did to one panel and what it saw."""

    kind: str
    control: str
    action: str
    changed: bool
    error: str | None
    seconds: float


def panels_in_page(page):
    return page.locator(".xk-panel")


def _control_name(handle) -> str:
    classes = handle.get_attribute("class") or ""
    names = [c[3:] for c in classes.split() if c.startswith("xk-")]
    return names[0] if names else "?"


def _slider_kind(readout: str, now: float) -> str | None:
    """"linear" if the readout shows the handle's position, "log" if it shows ``10**position``, else None
    (a selection slider, whose readout is the label of option number ``position``)."""
    try:
        shown = float(readout)
    except ValueError:
        return None
    if abs(shown - now) <= 0.06 + 0.01 * abs(shown):
        return "linear"
    if shown > 0 and abs(math.log10(shown) - now) <= 0.06:
        return "log"
    return None


def _slider_target(readout: str, low: float, high: float, now: float, is_int: bool) -> tuple[float, bool]:
    """A value a quarter of the range away from the current one (toward the far end), in slider space,
    and whether the slider is logarithmic (its readout shows ``10**position``).

    ``low``/``high`` come from the handle's ARIA attributes, which noUiSlider rounds to one decimal; a
    value typed outside the true range is clamped by ipywidgets, so the rounding does no harm. A linear
    slider's readout equals its position (up to the readout's rounding); a log slider's readout is
    ``10**position``, which is never within 0.5 of the position itself.
    """
    is_log = _slider_kind(readout, now) == "log"
    span = high - low
    target = now + span / 4 if (high - now) >= (now - low) else now - span / 4
    if is_int and not is_log:
        target = round(target)
        if target == round(now):
            target = round(now) + (1 if high - now >= 1 else -1)
    return target, is_log


def _format(value: float, is_int: bool) -> str:
    return str(int(round(value))) if is_int else f"{value:.4g}"


def _change_control(page, control) -> tuple[str, str] | None:
    """Change one control as a person would. Returns (name, what was done), or None if not changeable."""
    classes = control.get_attribute("class") or ""
    name = _control_name(control)
    if "widget-slider" in classes or "widget-hslider" in classes:
        readout = control.locator(".widget-readout")
        handle = control.locator(".noUi-handle").first
        if readout.count() == 0 or handle.count() == 0:
            return None
        low = float(handle.get_attribute("aria-valuemin"))
        high = float(handle.get_attribute("aria-valuemax"))
        now = float(handle.get_attribute("aria-valuenow"))
        with contextlib.suppress(TypeError, ValueError):  # the unrounded position, when it parses
            now = float(handle.get_attribute("aria-valuetext"))
        text = readout.inner_text().strip()
        if readout.get_attribute("contenteditable") != "true" or _slider_kind(text, now) is None:
            # a selection slider: its readout is a label, not the position; a person uses the arrow keys
            key = "ArrowRight" if float(handle.get_attribute("aria-valuenow")) < high else "ArrowLeft"
            handle.focus()
            page.keyboard.press(key)
            return name, f"pressed {key} on the slider (was {text!r}, now {readout.inner_text().strip()!r})"
        is_int = "widget-int" in classes or "IntSlider" in classes or (
            text.lstrip("-").isdigit() and float(low).is_integer() and float(high).is_integer()
            and float(now).is_integer())
        target, is_log = _slider_target(text, low, high, now, is_int)
        value = 10.0**target if is_log else target
        typed = _format(value, is_int and not is_log)
        readout.click()
        page.keyboard.press("Control+A")
        page.keyboard.type(typed)
        page.keyboard.press("Enter")
        return name, f"typed {typed!r} into the readout (was {text!r})"
    if "widget-dropdown" in classes:
        select = control.locator("select")
        options = [o.replace("\xa0", " ") for o in select.locator("option").all_inner_texts()]
        current = select.evaluate("s => s.selectedIndex")
        if len(options) < 2:
            return None
        choice = (current + 1) % len(options)
        select.select_option(index=choice)
        return name, f"picked {options[choice]!r} (was {options[current]!r})"
    if "widget-toggle-buttons" in classes:
        buttons = control.locator("button")
        for i in range(buttons.count()):
            b = buttons.nth(i)
            if "mod-active" not in (b.get_attribute("class") or ""):
                label = b.inner_text().strip()
                b.click()
                return name, f"clicked {label!r}"
        return None
    if "widget-checkbox" in classes:
        control.locator("input[type=checkbox]").click()
        return name, "clicked the checkbox"
    return None


_CONTROL_SELECTOR = (".widget-slider, .widget-dropdown, .widget-toggle-buttons, "
                     ".widget-checkbox")


def poke_panel(page, panel, timeout: float = 120) -> Poke:
    """Change the first changeable control of ``panel`` and wait for the panel's output to change."""
    panel.scroll_into_view_if_needed()
    kind = panel.evaluate(_KIND_JS)
    before = panel.evaluate(_SNAPSHOT_JS)
    controls = [c for c in panel.locator(_CONTROL_SELECTOR).all()
                if any(cls.startswith("xk-") for cls in (c.get_attribute("class") or "").split())]
    # sliders and dropdowns first: they are what the issue asks to exercise
    controls.sort(key=lambda c: 0 if any(k in (c.get_attribute("class") or "")
                                         for k in ("widget-slider", "widget-dropdown")) else 1)
    t0 = time.perf_counter()
    for control in controls:
        done = _change_control(page, control)
        if done is None:
            continue
        name, action = done
        handle = panel.element_handle()
        try:
            page.wait_for_function(
                f"""([panel, before]) => {{ const now = ({_SNAPSHOT_JS})(panel);
                    return now.error !== null || now.src !== before.src || now.html !== before.html; }}""",
                arg=[handle, before], timeout=timeout * 1000, polling=200)
        except Exception:  # noqa: BLE001, S110 - a timeout means the panel did not change, which `changed` reports
            pass
        after = panel.evaluate(_SNAPSHOT_JS)
        changed = after["src"] != before["src"] or after["html"] != before["html"]
        return Poke(kind, name, action, changed, after["error"], time.perf_counter() - t0)
    return Poke(kind, "-", "no changeable control (slider, dropdown, toggle buttons, checkbox)", False,
                before["error"], 0.0)


_SCROLLER_JS = """() => { const p = window.jupyterapp.shell.currentWidget;
    if (!p || !p.content) return null;
    return p.content.node.querySelector('.jp-WindowedPanel-outer') || p.content.node; }"""


def screenshot_notebook(page, path: Path, max_height: int = 16000) -> None:
    """Save the whole notebook as one PNG: the side bar is collapsed and the viewport is stretched to the
    notebook's height, so every cell and panel is in the picture."""
    page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
    height = page.evaluate(f"() => {{ const n = ({_SCROLLER_JS})(); return n ? n.scrollHeight : 900; }}")
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": int(min(max(height + 200, 900), max_height))})
    try:
        page.evaluate(f"() => {{ const n = ({_SCROLLER_JS})(); if (n) n.scrollTop = 0; }}")
        page.wait_for_timeout(500)
        page.screenshot(path=str(path))
    finally:
        page.set_viewport_size(size)
