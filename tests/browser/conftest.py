"""Fixtures for the browser tests: one JupyterLab server and one headless Chromium per session."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from scripts._browser import CHROMIUM, launch_chromium

from .lab_driver import LabServer

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(os.environ.get("XAIKIT_SCREENSHOTS", ROOT / "artifacts" / "screenshots"))


@pytest.fixture(scope="session")
def lab_server():
    server = LabServer(python=sys.executable).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def browser_context():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run `bash scripts/system_deps.sh` first")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="xk-chromium-") as profile, sync_playwright() as p:
        context = launch_chromium(p, Path(profile))
        context.set_default_timeout(60_000)
        yield context
        context.close()


@pytest.fixture
def bare_page(browser_context):
    """A page of the session's Chromium with no LabServer behind it, for the tests that start JupyterLab
    their own way (through ``scripts/start.sh``); it collects the page's errors like ``page``."""
    page = browser_context.new_page()
    page.console_errors = []
    page.on("pageerror", lambda exc: page.console_errors.append(str(exc)))
    yield page
    page.close()


@pytest.fixture
def page(browser_context, lab_server):
    page = browser_context.new_page()
    console_errors: list[str] = []
    page.on("pageerror", lambda exc: console_errors.append(str(exc)))
    page.console_errors = console_errors
    yield page
    page.close()
    lab_server.shutdown_kernels()


@pytest.fixture(scope="session")
def screenshot_dir() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
