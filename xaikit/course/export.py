"""Exporting a notebook as a page: HTML with formulas typeset offline (a local MathJax 2 copied next to the
page), still pictures in place of widgets, no Colab setup cell, and the notebook's first heading as the title.
The students' pages and the slide shows (:mod:`xaikit.course.pages`) are written through it.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from xaikit._files import write_export
from xaikit._validate import bool_flags

if TYPE_CHECKING:
    from nbformat import NotebookNode

__all__ = ["MATHJAX_CONFIG", "WIDGET_STATE", "WIDGET_VIEW", "ensure_folder", "execute", "export_html", "offline_folder",
           "offline_mathjax", "page_title", "repair_numpy_css", "static_pictures"]


@bool_flags
def ensure_folder(path: Path, what: str, make: bool = True) -> Path:
    """``path`` as a folder to write into, made if missing (with its parents) when ``make``. Raises
    NotADirectoryError naming ``what`` (the option or parameter that gave it) when ``path`` or one of its
    parents is a file."""
    path = Path(path).expanduser()
    for part in (path, *path.parents):
        if part.exists() and not part.is_dir():
            which = "that" if part == path else str(part)
            raise NotADirectoryError(f"{what} {path}: {which} is a file, not a folder; name a folder to write "
                                     "into (it is made if missing)")
    if make:
        path.mkdir(parents=True, exist_ok=True)
    return path



#: MathJax 2's combined configuration that the ``jupyter-server-mathjax`` package ships (TeX and MathML
#: input, HTML-CSS output), the ``Safe`` extension nbconvert also asks for, and ours (below)
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe,local/xaikit"
#: the package ships the STIX web fonts only; left to its defaults, HTML-CSS output asks for the TeX
#: fonts, finds no file and prints "[Math Processing Error]" for every formula
_MATHJAX_LOCAL_CONFIG = """MathJax.Hub.Config({"HTML-CSS": {availableFonts: [], preferredFont: null, webFont: "STIX-Web",
                                imageFont: null}});
MathJax.Ajax.loadComplete("[MathJax]/config/local/xaikit.js");
"""


def export_html(nb: NotebookNode, path: Path) -> Path:
    """Write ``nb`` as HTML to ``path`` with formulas typeset offline (the students' page:
    :func:`xaikit.course.pages.export_page`).

    nbconvert's default page loads MathJax from a CDN, so without a network every ``$...$`` stays raw
    text. Here the page loads a local MathJax 2 copied next to it (``<folder>/mathjax/``, or
    ``<folder>/xaikit-mathjax/`` where a ``mathjax/`` folder there is not xaikit's: :func:`offline_folder`) from
    the ``jupyter-server-mathjax`` package on PyPI, which is what Jupyter Server itself serves it from.
    """
    from nbconvert import HTMLExporter

    path = Path(path)
    ensure_folder(path.parent, "the pages' folder")
    url = offline_mathjax(path.parent)
    page = _page(nb)
    import jinja2

    # the page's title: the notebook's own first heading (nbconvert's default is the word "Notebook")
    exporter = HTMLExporter(mathjax_url=url, template_file="xaikit_page.html.j2",
                            extra_loaders=[jinja2.DictLoader({"xaikit_page.html.j2": _PAGE_TEMPLATE})])
    body, _ = exporter.from_notebook_node(page, resources={"metadata": {"name": page_title(nb)}})
    return write_export(path, body, "page")


#: nbconvert's lab page without require.js, which it loads from a CDN for a widget manager that a page of
#: still pictures (:func:`static_pictures`) does not have: the page asks no server for anything
_PAGE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
"""


def _page(nb):
    """``nb`` as a page or slide show shows it: still pictures for widgets (:func:`static_pictures`), no
    Colab setup cell."""
    page = static_pictures(nb)
    from xaikit.course.colab import MARK

    # the Colab setup cell is collapsed in Colab and Jupyter; a page cannot collapse it, and it does nothing there
    page.cells = [c for c in page.cells if not (c.cell_type == "code" and c.source.startswith(MARK))]
    return page


def page_title(nb: NotebookNode) -> str:
    """The text of the notebook's first Markdown heading (``# 02 · Integrated Gradients`` gives
    "02 · Integrated Gradients"), or "xaikit notebook" when it has none."""
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for line in cell.source.splitlines():
            found = re.match(r"\s*#{1,6}\s+(.+?)\s*#*\s*$", line)
            if found:
                return re.sub(r"[*_`]", "", found.group(1)).strip()
    return "xaikit notebook"


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def static_pictures(nb: NotebookNode) -> NotebookNode:
    """A copy of ``nb`` without live widget views, for a page that has no kernel and no widget manager
    (nbconvert would load one from a CDN; a widget view there is empty space). Each panel output keeps
    its still picture (``widgets.base.Panel._repr_mimebundle_``), redrawn from the notebook's saved widget
    state when it has one: the figure, status line and HTML area as the panel showed them *last* (a later
    cell's ``set()`` included), which is what the live widget shows after a run. A progress bar (tqdm.auto's
    widget) shows how it ended (:func:`_progress_state`), not the "0%" of its text; a widget closed or hidden
    by the end of the run (a finished bar with ``leave=False``) is left out, as Jupyter shows it. HTML outputs
    get valid colours (:func:`repair_numpy_css`). The widget state goes too, so the page loads no widget
    manager."""
    from xaikit.widgets.base import PANEL_METADATA, still_html

    nb = copy.deepcopy(nb)
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for cell in nb.cells:
        kept = []
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if isinstance(data.get("text/html"), str) and "np." in data["text/html"]:
                data["text/html"] = repair_numpy_css(data["text/html"])
            view = data.pop(WIDGET_VIEW, None)
            kept.append(out)
            if view and not ({"image/png", "text/html"} & set(data)):
                model_id = view.get("model_id", "")
                if state and (model_id not in state or _hidden(state, model_id)):
                    kept.pop()  # closed or hidden by the end of the run (a tqdm bar with leave=False): gone in Jupyter too
                    continue
                bar = _progress_state(state, model_id)
                if bar is not None:  # a tqdm bar as it ended, not the "0%" its text had when displayed
                    data["text/plain"], data["text/html"] = bar
                continue
            if not view:
                continue
            last = _panel_state(state, view.get("model_id", ""))
            if last is None:
                continue  # no saved state: the picture taken at display time stays
            png, status, extra = last
            if png:
                data["image/png"] = png
            data["text/html"] = still_html(png, status, extra, name=out.get("metadata", {}).get(PANEL_METADATA, ""))
        if "outputs" in cell:
            cell.outputs = kept
    nb.metadata.pop("widgets", None)
    return nb


_NUMPY_SCALAR = re.compile(r"\bnp\.(?:float|int|uint)(?:16|32|64|128)?\((-?[0-9.]+(?:[eE][-+]?[0-9]+)?)\)")


def repair_numpy_css(html_text: str) -> str:
    """``html_text`` with NumPy 2 scalar reprs such as ``np.float64(255.0)`` replaced by the number.

    SHAP 0.51's ``shap.plots.text`` writes its colours as ``rgb(np.float64(255.0), ...)`` under NumPy 2
    (shap/shap#4146, fixed upstream after 0.51): invalid CSS, so every bar of its force plot is drawn
    black and no token gets its colour. With the numbers written plainly the red and blue come back."""
    return _NUMPY_SCALAR.sub(r"\1", html_text)


def _hidden(state: dict, model_id: str) -> bool:
    """Whether widget ``model_id`` was hidden by its layout when the state was saved (tqdm hides a finished
    bar with ``leave=False`` that way under ipywidgets 8, as well as closing it)."""
    layout = str(state.get(model_id, {}).get("state", {}).get("layout", "")).removeprefix("IPY_MODEL_")
    fields = state.get(layout, {}).get("state", {})
    return fields.get("visibility") == "hidden" or fields.get("display") == "none"


def _progress_state(state: dict, model_id: str) -> tuple[str, str] | None:
    """``(text, HTML)`` of the progress bar whose box is widget ``model_id`` in a notebook's saved widget
    state, as it ended: tqdm.auto's bar in a kernel is a box of an HTML label, a progress bar and an HTML
    label, and its ``text/plain`` was written when it was displayed (at 0%). None when it is no such box."""
    import html

    model = state.get(model_id, {})
    children = [state.get(str(c).removeprefix("IPY_MODEL_"), {}) for c in model.get("state", {}).get("children", [])]
    names = [c.get("model_name", "") for c in children]
    bars = [i for i, name in enumerate(names) if name in ("FloatProgressModel", "IntProgressModel")]
    if not bars:
        return None
    fields = children[bars[0]].get("state", {})
    value, top = float(fields.get("value") or 0), float(fields.get("max") or 0)

    def label(child):
        return html.unescape(str(child.get("state", {}).get("value", ""))) if child.get("model_name") == "HTMLModel" else ""

    left = " ".join(label(c) for c in children[:bars[0]]).replace("\u2007", " ").strip()
    right = " ".join(label(c) for c in children[bars[0] + 1:]).replace("\u2007", " ").strip()
    filled = round(10 * value / top) if top > 0 else 0
    text = f"{left}|{'#' * filled}{' ' * (10 - filled)}| {right}".strip()
    page = (f'<div class="xk-progress"><span>{html.escape(left)}</span> <progress value="{value:g}" '
            f'max="{top:g}"></progress> <span>{html.escape(right)}</span></div>')
    return text, page


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _panel_state(state: dict, model_id: str) -> tuple[str | None, str, str] | None:
    """``(figure PNG as base64 or None, status HTML, HTML area)`` of the panel whose outer box is widget
    ``model_id`` in a notebook's saved widget state (its children with CSS classes ``xk-figure``,
    ``xk-status`` and ``xk-html``), or None when the state does not hold that panel."""
    found: dict[str, object] = {}

    def walk(mid: str, depth: int) -> None:
        model = state.get(mid)
        if model is None or depth > 5:
            return
        fields = model.get("state", {})
        classes = fields.get("_dom_classes", [])
        if "xk-figure" in classes:
            found["png"] = next((b["data"] for b in model.get("buffers", []) if b.get("path") == ["value"]
                                 and b.get("encoding", "base64") == "base64"), None)
        for name in ("xk-status", "xk-html"):
            if name in classes:
                found[name] = fields.get("value", "")
        for child in fields.get("children", []):
            walk(str(child).removeprefix("IPY_MODEL_"), depth + 1)

    walk(model_id, 0)
    if not found:
        return None
    return found.get("png"), str(found.get("xk-status", "")), str(found.get("xk-html", ""))


def offline_mathjax(folder: Path) -> str:
    """Copy MathJax into ``folder/mathjax`` (once per package version, through :func:`offline_folder`, which
    never deletes a ``mathjax/`` folder xaikit did not write: it then uses ``folder/xaikit-mathjax``) and return
    the page-relative URL that loads it."""
    import shutil
    from importlib.metadata import version

    try:
        import jupyter_server_mathjax
    except ImportError:
        raise ImportError("exporting HTML with formulas needs MathJax: pip install jupyter-server-mathjax "
                          "(it is in xaikit's notebooks extra and requirements.lock)") from None
    source = Path(jupyter_server_mathjax.__file__).parent / "static"
    want = f"{version('jupyter-server-mathjax')} {hashlib.sha256(_MATHJAX_LOCAL_CONFIG.encode()).hexdigest()[:12]}"

    def fill(tmp: Path) -> None:
        shutil.copytree(source, tmp, dirs_exist_ok=True)
        (tmp / "config" / "local").mkdir(parents=True, exist_ok=True)
        (tmp / "config" / "local" / "xaikit.js").write_text(_MATHJAX_LOCAL_CONFIG, encoding="utf-8")

    name = offline_folder(folder, "mathjax", ".xaikit-mathjax-version", want, fill, "MathJax")
    return f"{name}/MathJax.js?config={MATHJAX_CONFIG}"


#: the folders :func:`offline_folder` already said it wrote beside (said once per process)
_SAID_BESIDE: set[Path] = set()


def offline_folder(folder: Path, name: str, stamp_name: str, want: str, fill: Callable[[Path], object],
                   what: str) -> str:
    """Make ``folder/name`` hold a copy of ``what`` (MathJax, reveal.js) that ``fill(tmp)`` writes into an empty
    temporary folder, and return the page-relative name of the folder that holds it.

    A folder xaikit wrote carries the file ``stamp_name`` (its text ``want`` names the version copied): one of
    this version is used as it is, one of another version is replaced (through a temporary folder renamed
    into place, so an interrupted copy is never used). **A folder xaikit did not write** (no stamp; an
    instructor's own reveal.js with its theme) **is never touched**: the copy goes beside it into
    ``folder/xaikit-<name>``, with a note saying so; if that too is someone else's, FileExistsError names both."""
    import shutil
    import tempfile

    folder = Path(folder)
    for candidate in (name, f"xaikit-{name}"):
        target = folder / candidate
        stamp = target / stamp_name
        if not os.path.lexists(target):
            break
        if target.is_dir() and not target.is_symlink() and stamp.is_file():
            if stamp.read_text(encoding="utf-8", errors="replace") == want:
                return candidate
            break  # xaikit's copy of another version: replaced below
    else:
        raise FileExistsError(
            f"{folder / name} and {folder / f'xaikit-{name}'} are not xaikit's copies of {what} (neither holds "
            f"{stamp_name}), so neither is replaced: write the pages into another folder, or move one of them away")
    if candidate != name and (folder / name) not in _SAID_BESIDE:
        _SAID_BESIDE.add(folder / name)
        print(f"note: {folder / name} is not xaikit's copy of {what} (it has no {stamp_name}), so it is left as it "
              f"is; the pages here use xaikit's copy in {target}", file=sys.stderr, flush=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{candidate}-", suffix=".tmp", dir=folder))
    try:
        fill(tmp)
        (tmp / stamp_name).write_text(want, encoding="utf-8")
        if target.is_dir() and not target.is_symlink() and (target / stamp_name).is_file():
            old = Path(tempfile.mkdtemp(prefix=f".{candidate}-old-", suffix=".tmp", dir=folder))
            try:  # xaikit's copy of another version: moved out of the way, then deleted
                os.replace(target, old / candidate)
            except OSError:
                pass  # another process moved it first
            shutil.rmtree(old, ignore_errors=True)
        try:
            tmp.rename(target)
        except OSError:  # another process (a second test worker) put its copy there first
            stamp = target / stamp_name
            if not (stamp.is_file() and stamp.read_text(encoding="utf-8", errors="replace") == want):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return candidate


def execute(path: Path, timeout: int = 600, cwd: Path | None = None) -> tuple[NotebookNode, float]:
    """Run one notebook top to bottom in a fresh kernel; returns ``(notebook, seconds)``."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(cwd or path.parent)}})
    # the kernel draws figures as Jupyter does (the inline backend, so a Figure left at the end of a cell is a
    # picture): an MPLBACKEND of this process (the tests set Agg) would make it text, "<Figure size ...>"
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    t0 = time.perf_counter()
    client.execute(env=env)
    return nb, time.perf_counter() - t0
