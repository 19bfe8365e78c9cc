"""Time ``bash scripts/start.sh`` on a fresh clone with an empty model cache: to JupyterLab serving with
notebook 01 runnable, and to every embedded model ready.

    .venv/bin/python benchmarks/start_time.py                    # native kernels, then the AVX2 variables
    .venv/bin/python benchmarks/start_time.py --only native      # one of the two
    .venv/bin/python benchmarks/start_time.py --python .venv/bin/python   # skip the bootstrap (pip)

Each run clones this checkout's last commit (``git clone``) into a temporary folder and runs its
``scripts/start.sh --no-browser`` with ``XAIKIT_CACHE`` set to a new empty folder (the models train for real:
10-30 minutes per run on two cores) and Jupyter's own folders temporary ones (a token-less local server). By
default start.sh bootstraps the clone's ``.venv`` as a student's first run does (with pip's cache warm that
is mostly pip's own time); ``--python`` uses that interpreter instead (``XAIKIT_PYTHON``), which leaves pip
out. The AVX2 run sets ``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2``, the
kernels of a laptop without AMX or AVX-512.

It prints, from the start of start.sh:

* **lab**: JupyterLab answers ``/api/status``, the student's copy ``my-notebooks/01_gradients.ipynb`` exists
  and the project's kernelspec is served;
* **notebook 01 runnable**: the above, and the digits CNNs notebook 01 loads are in the cache (the first
  models the background build makes; without them notebook 01 would train them itself, in seconds);
* the moment each model of the background build was reported ready, from its log
  (``artifacts/prepare-background.log`` of the clone);
* **every model ready**: the background build printed ``done``.

Goal: the first at most 3 minutes on 2 cores plus what pip itself takes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
SERVER_CONFIG = """\
c = get_config()  # noqa
c.IdentityProvider.token = ""
c.PasswordIdentityProvider.hashed_password = ""
c.ServerApp.allow_root = True
c.ServerApp.open_browser = False
c.ServerApp.ip = "127.0.0.1"
"""
_READY = re.compile(r"^xaikit prepare: (.+?)\s{2,}[\d.]+ s\s")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str):
    with urllib.request.urlopen(url, timeout=2) as r:
        return json.loads(r.read()) if r.status == 200 else None


def time_start(label: str, extra_env: dict[str, str], python: str | None, timeout: float) -> dict:
    """One fresh clone, one empty cache, one start.sh: the seconds to each milestone."""
    with tempfile.TemporaryDirectory(prefix="xk-start-") as tmp:
        tmp = Path(tmp)
        clone = tmp / "clone"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        home = tmp / "home"
        for sub in ("config", "data", "runtime", "ipython", "workspaces", "settings"):
            (home / sub).mkdir(parents=True)
        (home / "config" / "jupyter_server_config.py").write_text(SERVER_CONFIG)
        port = _free_port()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("JUPYTER", "XAIKIT_", "ATEN_", "ONEDNN_", "MKL_ENABLE", "PYTHONPATH"))}
        env.update(XAIKIT_CACHE=str(tmp / "cache"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
                   JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
                   JUPYTER_RUNTIME_DIR=str(home / "runtime"), IPYTHONDIR=str(home / "ipython"),
                   JUPYTERLAB_SETTINGS_DIR=str(home / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
                   **extra_env)
        if python:
            env.update(XAIKIT_PYTHON=python, PYTHONPATH=str(clone))
        log_path = tmp / "start.log"
        build_log = clone / "artifacts" / "prepare-background.log"
        copy = clone / "my-notebooks" / "01_gradients.ipynb"
        url = f"http://127.0.0.1:{port}"
        t0 = time.perf_counter()
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(["bash", str(clone / "scripts" / "start.sh"), "--no-browser", f"--port={port}",
                                     "--port-retries=0"], cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        times: dict[str, float] = {}
        try:
            while "every model ready" not in times:
                now = time.perf_counter() - t0
                if proc.poll() is not None:
                    raise RuntimeError(f"start.sh exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
                if now > timeout:  # what was reached is still printed
                    print(f"  stopped after {timeout:.0f} s, before every model was ready", flush=True)
                    times["(stopped: --timeout)"] = now
                    break
                if "lab" not in times and copy.is_file():
                    with contextlib.suppress(OSError, ValueError):
                        specs = _get(f"{url}/api/kernelspecs")
                        if _get(f"{url}/api/status") is not None and specs and "python3" in specs["kernelspecs"]:
                            times["lab"] = now
                if build_log.is_file():
                    for line in build_log.read_text(errors="replace").splitlines():
                        ready = _READY.match(line)
                        if ready and ready.group(1).strip() not in times:
                            times[ready.group(1).strip()] = now
                        elif line.startswith("xaikit prepare: done"):
                            times["every model ready"] = now
                if "lab" in times and "notebook 01 runnable" not in times and all(
                        what in times for what in ("digits CNN", "digits CNN (shuffled)")):
                    times["notebook 01 runnable"] = max(times["lab"], times["digits CNN (shuffled)"])
                time.sleep(0.5)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
        if build_log.is_file():  # kept for reading: the build's own times of each model
            shutil.copy(build_log, ROOT / "artifacts" / f"start-time-{label}.log")
        return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["native", "avx2"], default=None, help="time one of the two runs")
    parser.add_argument("--python", default=None,
                        help="use this interpreter (XAIKIT_PYTHON) instead of bootstrapping the clone's .venv")
    parser.add_argument("--timeout", type=float, default=3600,
                        help="seconds per run before stopping it (the milestones reached are printed)")
    args = parser.parse_args()
    (ROOT / "artifacts").mkdir(exist_ok=True)
    runs = {"native": {}, "avx2": AVX2}
    results = {}
    for label, extra in runs.items():
        if args.only in (None, label):
            print(f"start.sh, fresh clone, empty cache, {label} kernels ...", flush=True)
            results[label] = time_start(label, extra, args.python, args.timeout)
    milestones = list(dict.fromkeys(m for times in results.values() for m in sorted(times, key=times.get)))
    print(f"\n{'seconds from start':<28}" + "".join(f"{label:>10}" for label in results))
    for what in milestones:
        print(f"{what:<28}" + "".join(f"{times.get(what, float('nan')):>10.0f}" for times in results.values()))
    print(f"\n{os.cpu_count()} CPU cores; " + ("pip not included (--python)" if args.python
                                                 else "including bootstrap.sh (pip)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
