"""Shared test settings: offline, headless, fast mode, and a summary of how long each notebook ran."""

from __future__ import annotations

import os

os.environ.setdefault("XAIKIT_FAST", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import pytest  # noqa: E402

NOTEBOOK_TIMES: dict[str, float] = {}


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same seeds, so a failure reproduces."""
    import xaikit

    xaikit.set_seed(0)
    yield


def pytest_terminal_summary(terminalreporter):
    if NOTEBOOK_TIMES:
        terminalreporter.section("notebook run times (headless, fast mode)")
        for name, seconds in sorted(NOTEBOOK_TIMES.items()):
            terminalreporter.write_line(f"{name:40s} {seconds:6.1f} s")
