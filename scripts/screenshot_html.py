"""Open each exported notebook page in headless Chromium with the network cut off, check that its
figures and formulas are there, and save one full-page screenshot per notebook.

    .venv/bin/python scripts/screenshot_html.py [folder]   # default: artifacts/html (what the test run
                                                          # writes); notebooks/html after start.sh --headless

Every request that is not a local file is aborted. A page passes when every <img> has loaded (its
naturalWidth is above 0), MathJax typeset at least one formula with no "[Math Processing Error]", and no
`$$` is left in the text. Screenshots go to artifacts/html-screenshots/<notebook>.png. Not part of the test
command (the notebooks take minutes to run); tests/test_notebooks.py writes the pages it checks to
artifacts/html/.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts._browser import CHROMIUM, launch_chromium, offline  # noqa: E402

WAIT_FOR_MATH = ("() => window.MathJax && MathJax.Hub && MathJax.Hub.queue && MathJax.Hub.queue.pending === 0 "
                 "&& !document.querySelector('.MathJax_Processing')")


def check_page(context, page_path: Path, out: Path) -> dict:
    page = context.new_page()
    remote = offline(page)
    try:
        page.goto(page_path.as_uri())
        page.wait_for_function(WAIT_FOR_MATH, timeout=120_000)
        state = page.evaluate("""() => ({
            images: document.images.length,
            broken: Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).length,
            math: document.querySelectorAll('span.MathJax, div.MathJax_Display').length,
            errors: document.querySelectorAll('.MathJax_Error').length,
        })""")
        state["raw_dollars"] = page.inner_text("body").count("$$")
        page.screenshot(path=str(out), full_page=True)
    finally:
        page.close()
    state["remote_requests"] = len(remote)
    state["ok"] = (state["images"] > 0 and state["broken"] == 0 and state["math"] > 0
                   and state["errors"] == 0 and state["raw_dollars"] == 0)
    return state


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else ROOT / "artifacts" / "html"
    pages = sorted(folder.glob("[0-9][0-9]_*.html"))
    if not pages:
        print(f"no notebook pages in {folder}: run the tests or `bash scripts/start.sh --headless` first")
        return 2
    out = ROOT / "artifacts" / "html-screenshots"
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    failed = 0
    with tempfile.TemporaryDirectory(prefix="xk-chromium-") as profile, sync_playwright() as p:
        context = launch_chromium(p, Path(profile))
        for path in pages:
            state = check_page(context, path, out / f"{path.stem}.png")
            failed += not state["ok"]
            print(f"{path.stem}: {'ok' if state['ok'] else 'FAILED'}  images {state['images']} "
                  f"(broken {state['broken']}), formulas {state['math']} (errors {state['errors']}), "
                  f"raw $$ {state['raw_dollars']}, remote requests blocked {state['remote_requests']}")
        context.close()
    print(f"screenshots in {out} (Chromium {CHROMIUM})")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
