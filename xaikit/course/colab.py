"""Running the lecture notebooks on Google Colab: the setup lines at the top of every notebook.

Colab starts each runtime bare: xaikit is not installed and its models are not built. The second code
cell of every lecture notebook, right after the instructors' presenter switch, is therefore :data:`CELL`,
shown by Colab as a collapsed form titled "Colab setup". On Colab, which it recognises by the
``google.colab`` module that only a Colab kernel has loaded, it

1. installs xaikit with pip, unless it is importable already (the second notebook of a session; a folder
   ``/content/xaikit`` left by ``git clone``, which Colab's working directory ``/content`` makes importable as
   an empty namespace package, does not count), from the
   first source it finds, in this order: the ``XAIKIT_SOURCE`` environment variable (any pip requirement:
   ``git+https://...``, a path, a wheel's URL), the newest ``xaikit-*.whl`` uploaded to ``/content``, or a
   clone of the repository in ``/content/<folder>/`` (a ``pyproject.toml`` that names xaikit). Colab's own
   torch (a CUDA build) satisfies xaikit's ``torch>=2.2``, so nothing large is downloaded;
2. builds the embedded models with ``python -m xaikit prepare`` (a no-op once they are cached);
3. stops with a message to restart the session when the install upgraded an ipywidgets that the session had
   imported already (Colab ships 7.x; xaikit needs 8), since the old one stays loaded until a restart;
4. turns on Colab's widget manager for ipywidgets 8 (``google.colab.output.enable_custom_widget_manager``),
   which the panels need there.

Anywhere else the lines do nothing. When no source is found they raise an error that says the three
ways to give one. The cell cannot import xaikit before it is installed, so its code goes into each built
notebook as text: the notebook sources ``notebooks/NN_name.py`` do not carry it, and the build
(:mod:`xaikit.course.notebooks`) inserts :data:`CELL` after the presenter switch (:func:`insert_cell`) and
takes it out again when it writes a notebook's cells back into its source (:func:`remove_cell`).
``tests/test_colab.py`` runs it against a stand-in ``google.colab``.

README: "Running on Colab".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nbformat import NotebookNode

__all__ = ["CELL", "MARK", "badges", "colab_url", "insert_cell", "remove_cell"]

import copy
import re

#: the "Open in Colab" button picture Colab itself serves
BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
_REPO = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}")

#: the first line of the setup block, by which the notebook tools find it
MARK = "#@title Colab setup: on Google Colab this installs xaikit and builds its models; elsewhere it does nothing"

CELL = MARK + '''
import sys

if "google.colab" in sys.modules:
    import glob
    import importlib.util
    import os
    import subprocess

    found = importlib.util.find_spec("xaikit")
    if found is None or found.origin in (None, "namespace"):  # a clone named xaikit in /content is no install
        clones = [os.path.dirname(p) for p in sorted(glob.glob("/content/*/pyproject.toml"))
                  if 'name = "xaikit"' in open(p).read()]
        wheels = sorted(glob.glob("/content/xaikit-*.whl"))
        source = (os.environ.get("XAIKIT_SOURCE") or (wheels[-1] if wheels else None)
                  or (clones[0] if clones else None))
        if source is None:
            raise RuntimeError(
                "xaikit is not installed on this Colab runtime and no copy of it was found. Either upload "
                "its wheel (`pip wheel --no-deps .` in the repository) to /content, or clone the repository "
                "into /content, or set os.environ['XAIKIT_SOURCE'] to a pip requirement (e.g. "
                "'git+https://<host>/<owner>/xaikit.git'); then run this cell again.")
        loaded = sys.modules.get("ipywidgets")  # Colab ships ipywidgets 7; xaikit needs 8
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", source])
        importlib.invalidate_caches()
        from importlib.metadata import version

        if loaded is not None and getattr(loaded, "__version__", None) != version("ipywidgets"):
            raise RuntimeError(
                "xaikit is installed, and it upgraded ipywidgets, which this session had loaded already: restart "
                "the session (Runtime > Restart session), then run the notebook again from the top; this cell "
                "will then only build the models.")
    subprocess.check_call([sys.executable, "-m", "xaikit", "prepare"])
    from google.colab import output

    output.enable_custom_widget_manager()
'''
#: the cell's metadata: Colab shows it as a collapsed form titled by :data:`MARK`, Jupyter hides its code
CELL_METADATA = {"cellView": "form", "jupyter": {"source_hidden": True}}
#: the instructors' presenter switch, the code cell that :data:`CELL` follows
PRESENTER_LINE = "# import xaikit.course.presenter"


def _is_cell(cell) -> bool:
    return cell.cell_type == "code" and cell.source.startswith(MARK)


def insert_cell(nb: NotebookNode) -> None:
    """Insert :data:`CELL` into the notebook ``nb`` (in place) right after its presenter switch, the first
    code cell holding :data:`PRESENTER_LINE`. A notebook with no presenter switch (not a lecture notebook),
    or that carries the cell already, is left as it is."""
    import nbformat

    if any(_is_cell(c) for c in nb.cells):
        return
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and PRESENTER_LINE in cell.source:
            new = nbformat.v4.new_code_cell(CELL.rstrip("\n"), metadata=copy.deepcopy(CELL_METADATA))
            nb.cells.insert(i + 1, new)
            return


def remove_cell(nb: NotebookNode) -> None:
    """Take :data:`CELL` out of the notebook ``nb`` (in place): what a notebook's source holds."""
    nb.cells = [c for c in nb.cells if not _is_cell(c)]


def colab_url(repo: str, notebook: str, branch: str = "main") -> str:
    """The address at which Colab opens ``notebooks/<notebook>`` (e.g. ``"02_integrated_gradients.ipynb"``)
    of the GitHub repository ``repo`` (``"owner/name"``) on ``branch``: Colab reads it from GitHub, so the
    repository must be public there. xaikit has no address of its own (a course hosts it where it likes, see
    the README's "Running on Colab"), so the caller names it."""
    if not isinstance(repo, str) or not _REPO.fullmatch(repo):
        raise ValueError(f"repo must be a GitHub repository as 'owner/name' (e.g. 'my-course/xaikit'), got {repo!r}")
    if not isinstance(branch, str) or not branch or any(c in branch for c in " ?#\\"):
        raise ValueError(f"branch must be a branch or tag name such as 'main', got {branch!r}")
    if not re.fullmatch(r"[0-9][0-9]_[A-Za-z0-9_]+\.ipynb", str(notebook)):
        raise ValueError(f"notebook must be a lecture notebook's file name such as '01_gradients.ipynb', got {notebook!r}")
    return f"https://colab.research.google.com/github/{repo}/blob/{branch}/notebooks/{notebook}"


def badges(repo: str, notebooks: list[str], branch: str = "main") -> str:
    """A Markdown table with one "Open in Colab" badge per lecture notebook (``notebooks``: file names such as
    ``"01_gradients.ipynb"``), for a README of the repository ``repo`` on GitHub (:func:`colab_url`).
    ``xaikit notebooks badges owner/name`` prints it for every lecture notebook."""
    rows = ["| notebook | open it on Colab |", "| --- | --- |"]
    for name in notebooks:
        rows.append(f"| `{name}` | [![Open In Colab]({BADGE_IMAGE})]({colab_url(repo, name, branch)}) |")
    return "\n".join(rows) + "\n"
