#!/usr/bin/env bash
# The set-up command: bootstrap the environment, prepare the embedded models, build the notebooks, copy
# them into your own folder and open JupyterLab there.
#
#   bash scripts/start.sh                 # open JupyterLab on my-notebooks/ (your copies; git-ignored)
#   bash scripts/start.sh --dir ~/xai     # ... on your copies in ~/xai instead
#   bash scripts/start.sh --headless      # no screen: run every notebook once and write from that run the
#                                         # instructors' pages (notebooks/html/), the students' pages without
#                                         # solutions, hidden tests or answers (notebooks/html-student/) and
#                                         # reveal.js slides (notebooks/slides/), all working offline
#   bash scripts/start.sh --no-browser --port 8899   # other arguments go to `jupyter lab`
#
# The lecture notebooks in notebooks/ are the course's files and are never opened for editing: a run, an
# autosave or your own edits go into your copy (`xaikit notebooks copy`, which never overwrites a copy you
# changed; a new lecture version is written beside it as NN_name-new.ipynb). The kernel is the project's
# Python and JupyterLab asks nothing about news: see jupyter/README.md.
#
# XAIKIT_PYTHON=/path/to/python uses that interpreter (with xaikit[notebooks] importable) instead of
# bootstrapping .venv, as in scripts/test.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CALLER="$PWD"

HEADLESS=0
DIR="$ROOT/my-notebooks"
LAB_ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --headless) HEADLESS=1 ;;
    --dir) [ $# -ge 2 ] || { echo "start.sh: --dir needs a folder, e.g. --dir ~/xai" >&2; exit 2; }
           DIR="$2"; shift ;;
    --dir=*) DIR="${1#--dir=}" ;;
    *) LAB_ARGS+=("$1") ;;
  esac
  shift
done
case "$DIR" in /*) ;; *) DIR="$CALLER/$DIR" ;; esac
cd "$ROOT"

if [ -n "${XAIKIT_PYTHON:-}" ]; then
  PY="$XAIKIT_PYTHON"
else
  bash scripts/bootstrap.sh
  PY="$ROOT/.venv/bin/python"
fi
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"

"$PY" -m xaikit prepare
# Never overwrites cells edited in an .ipynb; if a notebook and its .py were both edited, it keeps both,
# says what to do, and JupyterLab opens anyway.
"$PY" -m xaikit notebooks build || echo "start.sh: some notebooks were left as they are (see above)" >&2

if [ "$HEADLESS" = 1 ]; then
  "$PY" -m xaikit notebooks run --html notebooks/html --student-html notebooks/html-student --slides notebooks/slides
  echo "start.sh: HTML written to $ROOT/notebooks/html/ (instructors: solutions and answers shown),"
  echo "          $ROOT/notebooks/html-student/ (students: no solutions, hidden tests or answers)"
  echo "          and slides to $ROOT/notebooks/slides/ (arrow keys; s for speaker notes)"
  exit 0
fi

"$PY" -m xaikit notebooks copy "$DIR"
# the project's kernelspec and JupyterLab defaults (jupyter/README.md) come first; nothing in $HOME is written
export JUPYTER_PATH="$ROOT/jupyter/data${JUPYTER_PATH:+:$JUPYTER_PATH}"
export JUPYTER_CONFIG_PATH="$ROOT/jupyter/config${JUPYTER_CONFIG_PATH:+:$JUPYTER_CONFIG_PATH}"
exec "$PY" -m jupyterlab --notebook-dir="$DIR" ${LAB_ARGS[@]+"${LAB_ARGS[@]}"}
