#!/usr/bin/env bash
# Integration check (slow, not part of the test command): does xaikit work for someone who does NOT use
# this repository's lock file? It builds a throwaway virtual environment that already holds some torch,
# then `pip install ".[notebooks]"` lets pip choose every other dependency from pyproject.toml's ranges,
# which gives the newest shap, transformers and ipywidgets that PyPI has today. In that environment it
#   1. prints the versions pip chose (so a shap or transformers release that breaks us shows up by name),
#   2. runs `python -m xaikit prepare` from outside the checkout (the installed package, not the source),
#   3. executes notebook 01 with the installed package and JupyterLab's kernel,
#   4. runs the text-method tests, whose oracles include SHAP's additivity and a direct shap.Explainer
#      call, against that shap: `shaptext` switches SHAP's numba helpers (shap 0.45-0.51) to plain Python
#      and leaves compiled ones (0.52+) alone, and this is where a release that changed them would fail.
#
#   bash scripts/check_plain_install.sh                 # torch 2.13.0 first (the CPU wheel these machines carry)
#   PYTHON=python3.12 bash scripts/check_plain_install.sh   # the newest shap: 0.52+ needs Python 3.12 (pip
#                                                       # then fetches PyPI's CUDA torch 2.13.0, ~5 GB; it runs on the CPU)
#   TORCH_SPEC="torch==2.12.*" bash scripts/check_plain_install.sh
#   KEEP=1 bash scripts/check_plain_install.sh          # keep the environment to look around in
#
# XAIKIT_CACHE is passed through (default: the user's cache, so an already prepared machine skips training).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
WORK="$(mktemp -d -t xaikit-plain-XXXXXX)"
cleanup() { if [ -z "${KEEP:-}" ]; then rm -rf "$WORK"; else echo "kept: $WORK"; fi; }
trap cleanup EXIT
PY="${PYTHON:-python3}"
t0=$(date +%s)

echo "== a fresh environment with $TORCH_SPEC already in it"
"$PY" -m venv "$WORK/venv"
V="$WORK/venv/bin/python"
"$V" -m pip install --quiet --disable-pip-version-check "$TORCH_SPEC"

echo "== pip install \".[notebooks]\" (pip picks every other version)"
"$V" -m pip install --quiet --disable-pip-version-check "$ROOT[notebooks]" pytest
"$V" - <<'PY'
from importlib.metadata import version
for name in ("torch", "transformers", "shap", "ipywidgets", "jupyterlab", "numpy", "matplotlib", "xaikit"):
    print(f"   {name:<13} {version(name)}")
PY
torch_after="$("$V" -c 'import torch; print(torch.__version__)')"
case "$TORCH_SPEC" in
  torch==*) [ "${torch_after%%+*}" = "${TORCH_SPEC#torch==}" ] || {
              echo "FAIL: installing xaikit replaced $TORCH_SPEC with torch $torch_after" >&2; exit 1; } ;;
esac

cd "$WORK"  # away from the checkout: `import xaikit` must find the installed copy
"$V" -c 'import sys, xaikit; assert "site-packages" in xaikit.__file__, xaikit.__file__; print("   xaikit from", xaikit.__file__)'

echo "== python -m xaikit prepare"
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$V" -m xaikit prepare

echo "== notebook 01, executed with the installed package"
cp "$ROOT/notebooks/01_gradients.ipynb" "$WORK/01.ipynb"
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg XAIKIT_FAST=1 \
  "$V" -m jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=600 \
  --output "$WORK/01-run.ipynb" "$WORK/01.ipynb" >/dev/null
echo "   ran: $WORK/01-run.ipynb"

echo "== text-method tests against this shap (source tree tests, this environment's packages)"
cd "$ROOT"
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg XAIKIT_FAST=1 \
  "$V" -m pytest -q -p no:cacheprovider tests/test_text_methods.py

echo "plain install: OK in $(( $(date +%s) - t0 )) s"
