#!/usr/bin/env bash
# The test command: bootstrap the environment, prepare the embedded models, then ruff and pytest
# (unit tests plus every notebook executed headless). `.ci/run` calls this and nothing else.
#
#   bash scripts/test.sh              # everything, fast mode (what CI runs)
#   bash scripts/test.sh -k gradients # extra arguments go to pytest
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/bootstrap.sh
PY="$ROOT/.venv/bin/python"

export XAIKIT_FAST="${XAIKIT_FAST:-1}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
export MPLBACKEND=Agg PYTHONHASHSEED=0
# progress bars in a log file (CI) redraw every 30 s instead of many times a second
if [ ! -t 2 ]; then export TQDM_MININTERVAL="${TQDM_MININTERVAL:-30}"; fi

if [ -f scripts/system_deps.sh ]; then bash scripts/system_deps.sh; fi

"$PY" -m xaikit prepare
"$PY" -m ruff check .
"$PY" -m xaikit notebooks check

set +e
"$PY" -m pytest -n "${XAIKIT_TEST_WORKERS:-2}" --durations=15 "$@"
status=$?
set -e
# pytest exits 5 when no test was collected: that is a failure of the suite, not a pass.
if [ "$status" -eq 5 ]; then echo "test.sh: pytest collected no tests" >&2; exit 1; fi
exit "$status"
