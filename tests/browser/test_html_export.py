"""The headless HTML export typesets formulas with no network.

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
    assert remote == []  # nothing at all from outside: MathJax is local, and no require.js from a CDN


def test_shap_text_plot_keeps_its_colours(browser_context, tmp_path):
    """SHAP 0.51's text plot writes ``rgb(np.float64(255.0), ...)`` under NumPy 2: every bar black, no token
    coloured. The exported page repairs the numbers; Chromium must then draw red and blue."""
    import numpy as np
    import shap

    e = shap.Explanation(values=np.array([0.8, -0.5, 0.1]), base_values=0.2, data=np.array(["good ", "bad ", "film"]))
    cell = nbformat.v4.new_code_cell("shap.plots.text(e)")
    cell.outputs = [nbformat.v4.new_output("display_data", {"text/html": shap.plots.text(e, display=False),
                                                           "text/plain": "<IPython.core.display.HTML object>"})]
    nb = nbformat.v4.new_notebook()
    nb.cells = [cell]
    html = export_html(nb, tmp_path / "shap.html")
    page = browser_context.new_page()
    remote = offline(page)
    try:
        page.goto(html.as_uri())
        state = page.evaluate("""() => ({
            bars: Array.from(document.querySelectorAll('svg rect')).map(r => getComputedStyle(r).fill),
            tokens: Array.from(document.querySelectorAll('[id^="_tp_"]')).map(t => getComputedStyle(t).backgroundColor),
        })""")
    finally:
        page.close()
    assert remote == []
    assert state["bars"] and "rgb(0, 0, 0)" not in state["bars"], state  # no black bar
    assert any(c.startswith("rgb(255, 0,") for c in state["bars"]) and any(c.startswith("rgb(0, 138,") or
                                                                              c.startswith("rgb(0, 139,") for c in state["bars"]), state
    coloured = [c for c in state["tokens"] if c not in ("rgba(0, 0, 0, 0)", "transparent")]
    assert len(coloured) == 3, state  # each of the three tokens has its colour


def test_slides_offline_one_per_section(browser_context, tmp_path):
    """`xaikit notebooks slides`: reveal.js and MathJax from files beside the page, one horizontal slide per
    section of the notebook (its title and each ## heading), formulas typeset, nothing asked of a server."""
    import re

    from xaikit.course import notebooks as nbtools
    from xaikit.course import pages

    try:
        pages.reveal_source()
    except ModuleNotFoundError as err:
        pytest.fail(str(err))
    source = sorted(nbtools.NOTEBOOKS.glob("02_*.ipynb"))[0]
    nb = nbformat.read(source, as_version=4)
    sections = sum(1 for c in nb.cells if c.cell_type == "markdown" and re.search(r"^#{1,2}\s", c.source, re.M))
    html = pages.export_slides(nb, tmp_path / "slides" / "02.slides.html")
    page = browser_context.new_page()
    remote = offline(page)
    try:
        page.goto(html.as_uri())
        page.wait_for_function("() => window.Reveal && Reveal.isReady && Reveal.isReady() && window.MathJax "
                               "&& MathJax.Hub && MathJax.Hub.queue.pending === 0", timeout=60_000)
        page.evaluate("() => Reveal.slide(3, 0)")
        state = page.evaluate("""() => ({
            slides: Reveal.getHorizontalSlides().length,
            at: Reveal.getIndices().h,
            height: document.querySelector('.reveal .slides').getBoundingClientRect().height,
            math: document.querySelectorAll('span.MathJax, div.MathJax_Display').length,
            errors: document.querySelectorAll('.MathJax_Error').length,
            shown: Reveal.getCurrentSlide().innerText.trim().length,
        })""")
    finally:
        page.close()
    assert remote == [], remote
    assert state["slides"] == sections >= 5 and state["at"] == 3, state
    assert state["height"] > 300 and state["shown"] > 20, state  # a readable slide, not one squeezed to a line
    assert state["math"] > 0 and state["errors"] == 0, state
