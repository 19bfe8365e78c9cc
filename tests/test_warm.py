"""``xaikit warm``: a notebook runs once to fill the caches its live path reads, then again in a fresh kernel,
and each cell's time in that second run is what class will see. Shown here on a small notebook whose one slow
cell keeps its result through the model cache (as TCAV's activations and the attention diagnostics do)."""

from __future__ import annotations

import nbformat
import pytest

from xaikit.course import warm

SLOW = """
import time
from xaikit import cache_dir
from xaikit.models import cache

def build(tmp):
    time.sleep(3)  # what a forward pass over every image would cost
    (tmp / "acts.npy").write_text(MODEL)

folder = cache.ensure(cache_dir() / "activations" / f"warm-test-{MODEL}", build, required=("acts.npy",))
print((folder / "acts.npy").read_text())
"""


def _notebook():
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# a lecture"),
                nbformat.v4.new_code_cell('MODEL = "embedded"  # or a hub id'),
                nbformat.v4.new_code_cell(SLOW)]
    return nb


@pytest.mark.notebook
def test_warm_fills_the_cache_and_times_each_cell_from_it(tmp_path, monkeypatch):
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("XAIKIT_SHARED_CACHE", raising=False)
    nb = warm.with_model(_notebook(), "my-vit-base")
    assert "MODEL = 'my-vit-base'" in nb.cells[1].source
    cells = warm.warm_notebook(nb, "99_test", tmp_path, timeout=120)
    assert [c.index for c in cells] == [1, 2]
    slow = cells[1]
    assert slow.first_run_s >= 3.0  # computed in the warming run
    assert slow.from_cache_s < 2.0  # read back in the fresh kernel
    assert (tmp_path / "cache" / "activations" / "warm-test-my-vit-base" / "acts.npy").read_text() == "my-vit-base"
    text = warm.table(cells)
    assert "99_test" in text and "cell   2" in text


def test_model_needs_a_model_line_and_names_the_option():
    nb = _notebook()
    nb.cells[1].source = "x = 1"
    with pytest.raises(ValueError, match=r"--model: 99_test has no `MODEL = \.\.\.` line.*NN=ID"):
        warm.with_model(nb, "org/vit", "99_test")
    with pytest.raises(ValueError, match="--model must name a model"):
        warm.with_model(_notebook(), "  ")


def test_model_for_one_notebook_must_be_one_being_warmed():
    assert warm._models_by_notebook(["05=org/vit"], ["04", "05"]) == {"05": "org/vit"}
    assert warm._models_by_notebook(["org/vit"], ["04", "05"]) == {"04": "org/vit", "05": "org/vit"}
    with pytest.raises(ValueError, match=r"--model 07=org/vit: notebook 07 is not among those to warm"):
        warm._models_by_notebook(["07=org/vit"], ["04", "05"])
