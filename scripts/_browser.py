"""Headless Chromium cut off the network, shared by ``scripts/screenshot_html.py`` and the browser tests
(``tests/browser/lab_driver.py``): Debian's ``/usr/bin/chromium`` through Playwright (Playwright's own
browser download is not used), with no background networking and a fresh profile.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "launch_chromium", "offline"]

CHROMIUM = os.environ.get("XAIKIT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-extensions",
    "--disable-dev-shm-usage", "--metrics-recording-only", "--password-store=basic",
]


def launch_chromium(playwright, user_data_dir: Path):
    """A headless persistent Chromium context on a fresh profile (Debian's build, not Playwright's)."""
    if not Path(CHROMIUM).exists():
        raise FileNotFoundError(f"{CHROMIUM} is missing: run `bash scripts/system_deps.sh` (apt-get install "
                                "chromium) or point XAIKIT_CHROMIUM at a Chromium executable")
    return playwright.chromium.launch_persistent_context(
        str(user_data_dir), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
        viewport={"width": 1280, "height": 900}, service_workers="block")


def offline(page) -> list[str]:
    """Cut ``page`` off the network: every request that is not for a local file is aborted. Returns the list
    the aborted URLs are appended to, for a check that nothing was fetched from outside."""
    remote: list[str] = []

    def only_local(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            remote.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    return remote
