"""The Panel base every lecture widget stands on: set/result, CSS classes, errors shown in the panel."""

from __future__ import annotations

import pytest

from xaikit.widgets import base
from xaikit.widgets.base import Panel


class Doubler(Panel):
    """compute: 2 * value, failing for negative values; draw: a line whose height is the result."""

    title = "a <test> panel"

    def __init__(self):
        self.draws = 0
        super().__init__({"value": base.slider("value", 1.0, -5.0, 5.0, 0.5),
                          "count": base.int_slider("count", 3, 1, 10),
                          "mode": base.toggle("mode", ["a", "b"]),
                          "scale": base.log_slider("scale", 1.0, -1, 1),
                          "label": base.text_box("label", "hi"),
                          "pick": base.dropdown("pick", [("one", 1), ("two", 2)]),
                          "flag": base.checkbox("flag")})

    def compute(self, value, count, mode, scale, label, pick, flag):
        if value < 0:
            raise ValueError(f"value must be >= 0, got {value}")
        return 2 * value * count

    def draw(self, fig, result):
        self.draws += 1
        ax = fig.subplots()
        ax.plot([0, 1], [result, result])
        ax.set_ylim(0, 100)
        return f"<p>result {result}</p>"


def test_initial_update_result_figure_and_html():
    p = Doubler()
    assert p.result == 6.0 and p.error is None and p.n_updates == 1  # exact here: 2 * value * count of small integers
    assert p.image.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert p.html.value == "<p>result 6.0</p>"
    assert set(p.timings) == {"compute", "draw", "total"} and p.timings["total"] >= p.timings["compute"]


def test_set_changes_several_controls_with_one_update():
    p = Doubler()
    before = p.image.value
    assert p.set(value=2.0, count=5) == 20.0
    assert p.n_updates == 2 and p.draws == 2
    assert p.values["value"] == 2.0 and p.values["count"] == 5
    assert p.image.value != before
    assert p.figure.axes[0].lines[0].get_ydata()[0] == 20.0


def test_changing_a_control_directly_recomputes():
    p = Doubler()
    p.controls["count"].value = 4
    assert p.result == 8.0 and p.n_updates == 2


def test_unknown_control_is_named():
    with pytest.raises(ValueError, match="no control 'steps'.*'value'"):
        Doubler().set(steps=3)


def test_css_classes_on_controls_and_panel():
    p = Doubler()
    for name, control in p.controls.items():
        assert f"xk-{name}" in control._dom_classes
    assert {"xk-panel", "xk-doubler"} <= set(p.widget._dom_classes)
    assert "xk-figure" in p.image._dom_classes and "xk-status" in p.status._dom_classes
    assert "xk-html" in p.html._dom_classes


def test_title_is_escaped():
    p = Doubler()
    assert "&lt;test&gt;" in p.widget.children[0].value


def test_exception_in_compute_is_shown_and_the_panel_keeps_working():
    p = Doubler()
    good_image = p.image.value
    assert p.set(value=-1.0) == 6.0  # set() returns the last good result
    assert isinstance(p.error, ValueError)
    assert "xk-error" in p.status.value and "ValueError" in p.status.value and "value must be &gt;= 0" in p.status.value
    assert "xk-has-error" in p.widget._dom_classes
    assert "Traceback" in p.error_traceback
    assert p.result == 6.0 and p.image.value == good_image  # the last good result stays
    assert p.set(value=3.0) == 18.0
    assert p.error is None and p.status.value == "" and "xk-has-error" not in p.widget._dom_classes


def test_exception_in_draw_is_shown_too():
    class Broken(Doubler):
        def draw(self, fig, result):
            if result > 10:
                raise RuntimeError("cannot draw that")
            return super().draw(fig, result)

    p = Broken()
    p.set(value=5.0)
    assert isinstance(p.error, RuntimeError) and "cannot draw that" in p.status.value
    assert p.set(value=1.0) == 6.0 and p.error is None


def test_expensive_controls_update_on_release():
    p = Doubler()
    for name in ("value", "count", "scale", "label"):
        assert p.controls[name].continuous_update is False, name
    assert base.slider("s", 1, 0, 2, 0.1, continuous=True).continuous_update is True


def test_display_carries_the_live_widget_and_a_picture_of_the_figure_as_it_is_now():
    import base64

    p = Doubler()
    bundle, meta = p._repr_mimebundle_()
    assert meta == {base.PANEL_METADATA: "Doubler"}
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == p.widget.model_id
    assert base64.b64decode(bundle["image/png"]) == p.image.value  # what the panel shows now
    p.set(value=3.0)
    assert base64.b64decode(p._repr_mimebundle_()[0]["image/png"]) == p.image.value != base64.b64decode(
        bundle["image/png"])


def test_a_panel_without_figure_carries_its_html():
    class Words(Doubler):
        has_figure = False

        def draw(self, fig, result):
            return f"<p>just {result}</p>"

    bundle, _ = Words()._repr_mimebundle_()
    assert "image/png" not in bundle and "<p>just 6.0</p>" in bundle["text/html"] and "<img" not in bundle["text/html"]


def test_the_still_picture_keeps_the_html_area_and_the_error_line():
    p = Doubler()
    p.set(value=-1.0)  # compute raises: the panel shows the error and keeps the last good figure
    bundle, _ = p._repr_mimebundle_()
    page = bundle["text/html"]
    assert "value must be &gt;= 0" in page or "value must be >= 0" in page
    assert page.index("value must be") < page.index("<img") < page.index("<p>result 6.0</p>")


class Level(Panel):
    """The one fast-redraw hook: ``draw`` builds a line and lists it in ``animated``; ``update_artists`` moves
    it (blitted onto the kept background); a new ``width`` is a new layout (``layout_key``)."""

    figsize = (3.0, 2.0)
    layout = None

    def __init__(self, value: float = 1.0, width: int = 1):
        self.draws = self.updates = 0
        self.fail = False
        super().__init__({"value": base.slider("value", value, 0.0, 5.0, 0.5),
                          "width": base.int_slider("width", width, 1, 3)})

    def compute(self, value, width):
        return value, width

    def draw(self, fig, result):
        self.draws += 1
        ax = fig.subplots()
        ax.set(xlim=(0, result[1]), ylim=(0, 5))
        (self.line,) = ax.plot([0, result[1]], [0, 0], lw=3)
        self.animated = [self.line]
        return self.update_artists(fig, result)

    def update_artists(self, fig, result):
        if self.fail:
            raise RuntimeError("boom")
        self.updates += 1
        self.line.set_ydata([result[0], result[0]])
        return f"<p>{result[0]}</p>"

    def layout_key(self, result):
        return result[1]


def test_update_artists_blits_like_a_full_redraw_and_recovers_from_an_error():
    p = Level()
    assert (p.draws, p.updates) == (1, 1)
    p.set(value=3.0)
    assert (p.draws, p.updates) == (1, 2)  # the hook alone: no new axes
    assert p.image.value == Level(value=3.0).image.value  # the same pixels as a fresh full draw
    assert p.html.value == "<p>3.0</p>"
    p.set(width=2)
    assert p.draws == 2  # a new layout key: full redraw
    p.fail = True
    p.set(value=4.0)
    assert isinstance(p.error, RuntimeError)  # shown in the panel ...
    p.fail = False
    p.set(value=2.0)
    assert p.error is None and p.draws == 3  # ... and the next change builds the figure again
    assert p.image.value == Level(value=2.0, width=2).image.value


def test_render_png_is_rgb_for_an_opaque_figure():
    import io

    from PIL import Image

    p = Level()
    assert Image.open(io.BytesIO(p.image.value)).mode == "RGB"
    p.figure.patch.set_alpha(0.0)
    assert Image.open(io.BytesIO(base.render_png(p.figure))).mode == "RGBA"


def test_a_still_picture_says_what_it_shows_and_a_page_has_the_notebooks_title():
    """The HTML export's pictures carry alt text naming the panel and its status line (not "panel figure"),
    and the page is titled by the notebook's first heading (nbconvert's default title is "Notebook")."""
    import nbformat

    from xaikit.course.notebooks import page_title
    from xaikit.widgets.base import still_html

    page = still_html("AAAA", "<b>layer 2</b>, head 0: rows sum to 1", name="AttentionExplorer")
    assert 'alt="figure of the AttentionExplorer: layer 2 , head 0: rows sum to 1"' in page
    assert 'alt="figure of the panel"' in still_html("AAAA")
    # the status is HTML: its visible text goes into the attribute, escaped again
    assert 'alt="figure of the panel: a &quot;quoted&quot; &lt;word&gt;"' in still_html("AAAA", "a &quot;quoted&quot; &lt;word&gt;")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"),
                                         nbformat.v4.new_markdown_cell("intro\n# 02 — *Integrated* Gradients\n")])
    assert page_title(nb) == "02 — Integrated Gradients"
    assert page_title(nbformat.v4.new_notebook()) == "xaikit notebook"


def test_choice_of_ints_given_a_str_names_the_types():
    from xaikit._validate import check_choice
    from xaikit.widgets.attention import HeadsPanel

    panel = HeadsPanel()
    panel.set(n_heads="2")  # the error is shown in the panel
    assert isinstance(panel.error, ValueError)
    assert "got '2' (str), so nothing was changed. Did you mean 2 (int)?" in str(panel.error)
    with pytest.raises(ValueError, match=r"got '4' \(str\)\. Did you mean 4 \(int\)\?"):
        check_choice("4", "n_heads", (1, 2, 4, 8))
    with pytest.raises(ValueError, match=r"got 'smothgrad'\. Did you mean 'smoothgrad'\?"):
        check_choice("smothgrad", "kind", ("smoothgrad", "vargrad"))
