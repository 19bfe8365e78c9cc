#!/usr/bin/env bash
# The set-up command: bootstrap the environment, prepare the embedded models, build the notebooks and
# open JupyterLab on notebooks/.
#
#   bash scripts/start.sh             # open JupyterLab
#   bash scripts/start.sh --headless  # no screen: run every notebook and write HTML to notebooks/html/
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/bootstrap.sh
PY="$ROOT/.venv/bin/python"
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"

"$PY" -m xaikit prepare
# Never overwrites cells edited in an .ipynb; if a notebook and its .py were both edited, it keeps both,
# says what to do, and JupyterLab opens anyway.
"$PY" -m xaikit notebooks build || echo "start.sh: some notebooks were left as they are (see above)" >&2

if [ "${1:-}" = "--headless" ]; then
  "$PY" -m xaikit notebooks run --html notebooks/html
  echo "start.sh: HTML written to $ROOT/notebooks/html/"
else
  exec "$ROOT/.venv/bin/jupyter" lab --notebook-dir="$ROOT/notebooks" "${@}"
fi
