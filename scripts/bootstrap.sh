#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment in .venv with the pinned dependencies.
#
# Idempotent: a stamp records the hash of requirements.lock and pyproject.toml, so a second run with
# nothing changed returns in well under a second. Torch is installed first, pinned, so that nothing
# later can pull a multi-gigabyte CUDA build in as a dependency.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
STAMP="$VENV/.xaikit-stamp"
TORCH_PIN="torch==2.13.0"

pick_python() {
  if [ -n "${PYTHON:-}" ]; then echo "$PYTHON"; return; fi
  for candidate in python3.11 python3 python; do
    if command -v "$candidate" >/dev/null 2>&1; then echo "$candidate"; return; fi
  done
  echo "bootstrap: no python3 found; install Python 3.11 (or use environment.yml with conda)" >&2
  exit 1
}

want="$(cat "$ROOT/requirements.lock" "$ROOT/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  echo "bootstrap: reusing $VENV"
  exit 0
fi

PY="$(pick_python)"
"$PY" - <<'PYCHECK'
import sys
if sys.version_info < (3, 10):
    sys.exit(f"bootstrap: xaikit needs Python >= 3.10, this is {sys.version.split()[0]}")
PYCHECK

echo "bootstrap: creating $VENV with $("$PY" --version)"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
"${PIP[@]}" install --quiet "$TORCH_PIN"
"${PIP[@]}" install --quiet -r "$ROOT/requirements.lock"
"${PIP[@]}" install --quiet --no-deps --no-build-isolation -e "$ROOT"
echo "$want" > "$STAMP"
echo "bootstrap: ready ($("$VENV/bin/python" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'))"
