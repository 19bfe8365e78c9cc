#!/usr/bin/env bash
# The test command: bootstrap the environment, prepare the embedded models, then ruff and pytest
# (unit tests plus every notebook executed headless). `.ci/run` calls this and nothing else.
#
#   bash scripts/test.sh              # everything, fast mode (what CI runs)
#   bash scripts/test.sh -k gradients # extra arguments go to pytest
#   bash scripts/test.sh --device cuda [pytest args]
#                                     # the same with XAIKIT_DEVICE=cuda: models on the GPU; browser
#                                     # tests are left out (-m "not browser"), GPU machines have no Chromium
#
# XAIKIT_PYTHON=/path/to/python runs with that interpreter instead of bootstrapping .venv (a machine whose
# CUDA torch is installed already and that cannot reach PyPI); ruff is skipped if that Python lacks it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

DEVICE=""
case "${1:-}" in
  --device) [ $# -ge 2 ] || { echo "test.sh: --device needs a value, e.g. --device cuda" >&2; exit 2; }
            DEVICE="$2"; shift 2 ;;
  --device=*) DEVICE="${1#--device=}"; shift ;;
esac

if [ -n "${XAIKIT_PYTHON:-}" ]; then
  PY="$XAIKIT_PYTHON"
else
  bash scripts/bootstrap.sh
  PY="$ROOT/.venv/bin/python"
fi

export XAIKIT_FAST="${XAIKIT_FAST:-1}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
export MPLBACKEND=Agg PYTHONHASHSEED=0
# xaikit.policies.method_threads: one torch thread per method call (two test workers share the cores)
export XAIKIT_THREADS="${XAIKIT_THREADS:-1}"
# progress bars in a log file (CI) redraw every 30 s instead of many times a second
if [ ! -t 2 ]; then export TQDM_MININTERVAL="${TQDM_MININTERVAL:-30}"; fi

MARKS=()
if [ -n "$DEVICE" ]; then
  export XAIKIT_DEVICE="$DEVICE"
  "$PY" - "$DEVICE" <<'PYCHECK'
import sys

import torch

want = torch.device(sys.argv[1])
if want.type == "cuda" and not torch.cuda.is_available():
    sys.exit(f"test.sh: --device {sys.argv[1]} but torch {torch.__version__} sees no CUDA GPU")
print(f"test.sh: models on {want} (torch {torch.__version__})")
PYCHECK
fi
if [ -z "$DEVICE" ] || [ "$DEVICE" = "cpu" ]; then
  if [ -f scripts/system_deps.sh ]; then bash scripts/system_deps.sh; fi
else
  MARKS=(-m "not browser")  # an explicit -m among the pytest arguments comes later and wins
fi

"$PY" -m xaikit prepare
if [ -z "${XAIKIT_PYTHON:-}" ] || "$PY" -m ruff --version >/dev/null 2>&1; then
  "$PY" -m ruff check .
else
  echo "test.sh: $PY has no ruff; lint skipped (it runs with the .venv)" >&2
fi
"$PY" -m xaikit notebooks check

set +e
"$PY" -m pytest -n "${XAIKIT_TEST_WORKERS:-2}" --durations=15 ${MARKS[@]+"${MARKS[@]}"} "$@"
status=$?
set -e
# pytest exits 5 when no test was collected: that is a failure of the suite, not a pass.
if [ "$status" -eq 5 ]; then echo "test.sh: pytest collected no tests" >&2; exit 1; fi
exit "$status"
