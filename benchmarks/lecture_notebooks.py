"""Notebooks 02-07 run top to bottom in student mode on the lecture's model sizes.

The random-weight bert-base and vit-base-patch16-224 of ``scripts/lecture_scale.py`` (saved with
``save_pretrained``, loaded through xaikit's folder route) replace ``MODEL = "embedded"`` in each notebook's
model cell: bert-base for 02, 03, 04 and 06, vit-base for 05 and 07. The cells guarded by ``if MODEL == "embedded"``
(the asserts that hold only for the embedded models' training) are skipped by the notebooks themselves.
Each notebook runs in a fresh kernel with fast mode off; the script prints its time, the first error if one
was raised, and its slowest cells.

    HF_HUB_OFFLINE=1 python benchmarks/lecture_notebooks.py [02 03 04 05 06 07]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from claims_matrix import _cell_seconds

LINE = 'MODEL = "embedded"'
#: asserts that hold for a trained model (the embedded one or the lecture's hub model) but not for random
#: weights; the script replaces each with ``pass`` and says so (a line no longer found stops the run)
TRAINED_ONLY = {"04": ["assert sum(agree) >= 4, predicted"]}


def with_model(path: Path, folder: Path):
    """The notebook at ``path`` with its model cell pointed at ``folder``."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    hits = [c for c in nb.cells if c.cell_type == "code" and LINE in c.source]
    if len(hits) != 1:
        raise SystemExit(f"{path.name}: expected one model cell holding {LINE!r}, found {len(hits)}")
    hits[0].source = hits[0].source.replace(LINE, f"MODEL = {str(folder)!r}")
    for line in TRAINED_ONLY.get(path.name[:2], []):
        cells = [c for c in nb.cells if c.cell_type == "code" and line in c.source]
        if len(cells) != 1:
            raise SystemExit(f"{path.name}: the trained-model assert {line!r} is not in one cell; update TRAINED_ONLY")
        cells[0].source = cells[0].source.replace(line, "pass  # a trained model's assert, skipped on random weights")
        print(f"{path.name}: skipped (random weights) {line!r}")
    return nb


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", default=["02", "03", "04", "05", "06", "07"])
    args = parser.parse_args()
    import lecture_scale
    import nbformat

    from xaikit.course import notebooks as nbtools

    vit_dir, bert_dir = lecture_scale.build_models(lecture_scale.models_folder())
    os.environ.pop("XAIKIT_FAST", None)  # student mode
    os.environ.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TQDM_MININTERVAL": "30"})
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; fast mode off; models in "
          f"{vit_dir.parent}")
    failed = 0
    for nn in args.notebooks:
        path = next(nbtools.NOTEBOOKS.glob(f"{nn}_*.ipynb"))
        nb = with_model(path, vit_dir if nn in ("05", "07") else bert_dir)
        with tempfile.NamedTemporaryFile("w", suffix=".ipynb", dir=path.parent, delete=False) as f:
            nbformat.write(nb, f)
        t0 = time.perf_counter()
        try:
            ran, seconds = nbtools.execute(Path(f.name), timeout=3600, cwd=path.parent)  # 07's rank test: ~26 min
            error = None
        except Exception as err:  # noqa: BLE001 - nbclient's CellExecutionError and others, reported
            ran, seconds, error = None, time.perf_counter() - t0, f"{type(err).__name__}: {str(err)[-1500:]}"
        finally:
            os.unlink(f.name)
        slowest = []
        if ran is not None:
            slowest = sorted(((_cell_seconds(c), i) for i, c in enumerate(ran.cells) if c.cell_type == "code"),
                             reverse=True)[:4]
        failed += error is not None
        print(f"{path.name}: {seconds:.1f} s, {'ok' if error is None else 'ERROR'}; slowest cells "
              + ", ".join(f"#{i} {t:.1f} s" for t, i in slowest), flush=True)
        if error:
            print("   " + error.replace("\n", "\n   "))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
