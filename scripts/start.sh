#!/usr/bin/env bash
# The set-up command: bootstrap the environment, build the notebooks, copy them into your own folder and
# open JupyterLab there, while the embedded models build behind it.
#
#   bash scripts/start.sh                 # open JupyterLab on my-notebooks/ (your copies; git-ignored)
#   bash scripts/start.sh --dir ~/xai     # ... on your copies in ~/xai instead
#   bash scripts/start.sh --headless      # no screen: run every notebook once and write from that run the
#                                         # instructors' pages (notebooks/html/), the students' pages without
#                                         # solutions, hidden tests or answers (notebooks/html-student/) and
#                                         # reveal.js slides (notebooks/slides/), all working offline
#   bash scripts/start.sh --models-first  # build every embedded model first, then open JupyterLab
#   bash scripts/start.sh --no-browser --port 8899   # other arguments go to `jupyter lab`
#
# The models build in one background process (`python -m xaikit prepare --background`, niced, its log in
# artifacts/prepare-background.log) in the order the notebooks need them: the digits CNNs, the sentiment
# model, the ViTs, and last what only the labs read. A notebook that needs a model still building waits for
# it and shows the build's progress in its own bar. Closing JupyterLab stops the build; the next start picks
# up where it stopped (a model half built is dropped and built again, never loaded). --headless and
# --models-first build every model before anything else, as `python -m xaikit prepare` does.
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
MODELS_FIRST=0
DIR="$ROOT/my-notebooks"
LAB_ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --headless) HEADLESS=1 ;;
    --models-first) MODELS_FIRST=1 ;;
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

if [ "$HEADLESS" = 1 ] || [ "$MODELS_FIRST" = 1 ]; then
  "$PY" -m xaikit prepare
fi
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

BUILDER=""
if [ "$MODELS_FIRST" = 0 ]; then
  LOG="$ROOT/artifacts/prepare-background.log"
  mkdir -p "$ROOT/artifacts"
  NICE=(); command -v nice >/dev/null 2>&1 && NICE=(nice -n 10)
  # its parent is this shell: it stops when this shell ends, even when this shell is killed outright
  ${NICE[@]+"${NICE[@]}"} "$PY" -m xaikit prepare --background --log "$LOG" </dev/null &
  BUILDER=$!
  echo "start.sh: the embedded models build in the background (process $BUILDER, log $LOG);"
  echo "          a notebook that needs one still building waits for it and shows its progress"
fi
stop_builder() {
  if [ -n "$BUILDER" ] && kill -0 "$BUILDER" 2>/dev/null; then
    echo "start.sh: stopping the background model build (the next start resumes it)" >&2
    kill -TERM "$BUILDER" 2>/dev/null || true
    wait "$BUILDER" 2>/dev/null || true
  fi
}
trap stop_builder EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
"$PY" -m jupyterlab --notebook-dir="$DIR" ${LAB_ARGS[@]+"${LAB_ARGS[@]}"}
