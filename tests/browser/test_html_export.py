"""The headless HTML export typesets formulas with no network (issue 16, item 2).

nbconvert's page loads MathJax from a CDN by default; ``course.notebooks.export_html`` points it at a
local copy. The page is opened from disk in Chromium with every request that is not a local file
aborted, and the formulas must come out typeset: MathJax's own elements present, no ``$`` left in the
text.
"""

from __future__ import annotations

import nbformat
import pytest

from scripts._browser import offline
from xaikit.course.notebooks import export_html

pytestmark = pytest.mark.browser

MARKDOWN = r"""# Completeness

Integrated Gradients sums to the change of the output, $\sum_i \mathrm{IG}_i(x) = F(x) - F(x')$, with

$$\mathrm{IG}_i(x) = (x_i - x'_i) \int_0^1 \frac{\partial F(x' + \alpha (x - x'))}{\partial x_i}\, d\alpha .$$
"""


def test_exported_formulas_render_offline(browser_context, tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(MARKDOWN)]
    html = export_html(nb, tmp_path / "html" / "toy.html")
    assert (tmp_path / "html" / "mathjax" / "MathJax.js").is_file()
    text = html.read_text()
    assert "libs/mathjax" not in text and '<script src="mathjax/MathJax.js?config=' in text

    page = browser_context.new_page()
    remote = offline(page)
    try:
        page.goto(html.as_uri())
        page.wait_for_function(
            "() => window.MathJax && MathJax.Hub && MathJax.Hub.queue && MathJax.Hub.queue.pending === 0 "
            "&& document.querySelectorAll('script[type^=\"math/tex\"]').length > 0 "
            "&& !document.querySelector('.MathJax_Processing')", timeout=60_000)
        state = page.evaluate("""() => ({
            sources: document.querySelectorAll('script[type^="math/tex"]').length,
            inline: document.querySelectorAll('span.MathJax').length,
            display: document.querySelectorAll('div.MathJax_Display').length,
            errors: Array.from(document.querySelectorAll('.MathJax_Error')).map(e => e.textContent),
        })""")
        body = page.inner_text("body")
    finally:
        page.close()
    # the inline and the display formula, each read into MathJax and drawn, none as "[Math Processing Error]"
    assert state["errors"] == [], state
    assert state["sources"] == 2 and state["inline"] == 2 and state["display"] == 1, state
    assert "$" not in body, body[:300]
    assert not [u for u in remote if "mathjax" in u.lower()], remote
