"""The panel every lecture widget is built on: controls, a figure, an HTML area and an error box.

A panel is a thin view over pure functions (the ``xaikit`` methods). Subclasses implement two methods:

* ``compute(**values)``: the control values in, a result object out (no drawing);
* ``draw(fig, result)``: build the figure for the result into a Matplotlib ``Figure``; may return an HTML
  string for the area under the figure (token heatmaps, tables).

and may implement the one fast-redraw hook, for slider latency:

* ``update_artists(fig, result)``: change the artists that ``draw`` built last time (image data, bar
  heights, titles) to show a new result, and return the HTML as ``draw`` does, or ``NotImplemented`` (the
  default) for a full redraw. The base class calls it only while ``layout_key(result)`` equals the key of
  the last full draw (default: always the same) and the last render succeeded; otherwise it clears the
  figure and calls ``draw``. If ``draw`` lists the artists that change in ``self.animated``, the rest of
  the figure (axes, ticks, contours, colour bars) is drawn once and kept as a pixel background, and an
  update draws only those artists on top of it (Matplotlib blitting); an update that changes the rest
  (new axis limits, a new colour map) calls :meth:`Panel.invalidate`. With ``self.animated`` empty an
  update redraws the whole figure, still without building its axes again.

The base class wires them up:

* Every control gets the stable CSS class ``xk-<name>`` and the panel ``xk-panel`` plus ``xk-<kind>``,
  for browser tests and for styling.
* Changing a control recomputes and redraws once. Expensive sliders are built with
  ``continuous_update=False`` (see :func:`slider`), so dragging does not queue up work.
* An exception raised by ``compute`` or ``draw`` is shown inside the panel, named and explained, instead of
  vanishing into the Jupyter log; the panel keeps working and the next good change clears the error.
  Warnings raised meanwhile (a text cut to the model's length, a completeness gap over 5%) are shown in
  the panel's status line too, and still reach Python's warnings.
* From Python, ``panel.set(name=value, ...)`` changes several controls with one update, ``panel.result``
  is the last result, ``panel.error`` the last exception (or ``None``), and ``panel.figure`` the
  Matplotlib figure, so tests can drive a panel without a browser. ``set`` checks every value before it
  applies any: a value a control cannot take (not among a dropdown's choices, text for a number) changes
  nothing and is shown as an error naming the control; a number outside a slider's range is clamped to
  it, with a note saying so. A constructor value out of a slider's range gets the same note.

The figure is a plain ``matplotlib.figure.Figure`` rendered to PNG into an ``ipywidgets.Image``: it does
not depend on the notebook's Matplotlib backend, it is never displayed twice, and its pixels are state a
headless test (or an HTML export) can see.
"""

from __future__ import annotations

import base64
import html
import io
import time
import traceback
import warnings

import ipywidgets as widgets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from xaikit._validate import bool_flags
from xaikit.widgets.controls import (  # noqa: F401  (the controls, re-exported where the panels import them)
    _bounds,
    _check_value,
    _clamped,
    _is_choice,
    _is_range,
    checkbox,
    dropdown,
    int_slider,
    log_slider,
    slider,
    text_box,
    toggle,
)

__all__ = ["Panel", "render_png", "slider", "int_slider", "dropdown", "text_box", "toggle", "checkbox"]

def lru_get(cache, key, size: int, make) -> tuple[object, bool]:
    """``cache[key]`` from an ``OrderedDict`` kept as a least-recently-used cache of ``size`` entries, made by
    ``make()`` on a miss. Returns ``(value, made)``; panels count their forward passes with ``made``."""
    if key in cache:
        cache.move_to_end(key)
        return cache[key], False
    value = cache[key] = make()
    while len(cache) > size:
        cache.popitem(last=False)
    return value, True


@bool_flags
def render_png(fig: Figure, *, draw: bool = True) -> bytes:
    """The figure's pixels as PNG bytes: the one encoder of every panel.

    ``draw=True`` draws the figure first; ``draw=False`` encodes the Agg buffer as it stands (after a
    blitted update). ``fig.savefig`` would draw the figure a second time; encoding the buffer directly with
    light compression takes a few milliseconds instead, which matters for the ~100 ms slider budget. An
    opaque figure (the usual white one) is encoded as RGB: lossless there, and about 20% faster.
    """
    from matplotlib.colors import to_rgba
    from PIL import Image

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    if draw:
        canvas.draw()
    width, height = canvas.get_width_height()
    image = Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    if fig.patch.get_visible() and to_rgba(fig.patch.get_facecolor())[3] == 1.0:  # exact: alpha as set
        image = image.convert("RGB")  # every pixel is drawn over the opaque background
    buf = io.BytesIO()
    image.save(buf, format="png", compress_level=1)
    return buf.getvalue()


#: the output metadata key that marks a displayed panel (tests count them in executed notebooks)
PANEL_METADATA = "xaikit-panel"


def still_html(png_base64: str | None, status: str = "", extra: str = "", name: str = "") -> str:
    """A panel as one still HTML block: its status line, its figure (a base64 PNG) and its HTML area; ""
    when all three are empty. Used for the picture beside the live widget and by the HTML export. The
    figure's alt text says which panel drew it (``name``, its class) and what its status line says, so a
    screen reader or a page whose picture did not load still tells what the figure shows."""
    import html
    import re

    parts = [status or ""]
    if png_base64:
        said = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", status or "")).split())  # its visible text
        alt = f"figure of the {name or 'panel'}" + (f": {said}" if said else "")
        parts.append(f'<img src="data:image/png;base64,{png_base64}" alt="{html.escape(alt, quote=True)}"/>')
    parts.append(extra or "")
    body = "".join(parts)
    return f'<div class="xk-still">{body}</div>' if body else ""


class Panel:
    """Controls plus a fixed-size figure, an HTML area and an error box. Subclass and implement
    :meth:`compute` and :meth:`draw`; call ``super().__init__(controls)`` at the end of ``__init__``."""

    #: figure size in inches at ``dpi``; the image area keeps this size whatever is drawn.
    figsize: tuple[float, float] = (8.0, 3.6)
    dpi: int = 96
    #: set to False for a panel that only shows HTML.
    has_figure: bool = True
    #: the panel's title, shown above the controls.
    title: str = ""
    #: Matplotlib layout engine; "constrained" avoids clipped labels but costs tens of ms per redraw, so a
    #: panel with a fixed, simple layout may set ``None`` and place its axes itself.
    layout: str | None = "constrained"
    #: zoom of the figure (pixels per inch times this) for panels created from now on; 1.0 normally,
    #: larger in presenter mode (``xaikit.course.presenter.on()`` sets ``Panel.scale``).
    scale: float = 1.0

    @bool_flags
    def __init__(self, controls: dict[str, widgets.Widget], *, update: bool = True):
        self.controls = dict(controls)
        self.result = None
        self.error: BaseException | None = None
        self.error_traceback: str = ""
        self.n_updates = 0
        self.timings: dict[str, float] = {}
        self._suspended = False
        #: the artists :meth:`update_artists` changes, listed by :meth:`draw` to turn on blitting
        self.animated: list = []
        self._background = None  # the pixels of the figure without ``animated``, or None: draw them again
        self._drawn_key = None  # layout_key of the last full draw
        self._drawn = False  # the last render succeeded: the figure shows ``draw``'s layout
        #: what the status line says besides errors: clamped values, warnings from the last update
        self.notes: list[str] = [n for c in self.controls.values() if (n := getattr(c, "_xk_note", None))]
        self._set_notes: list[str] = list(self.notes)

        kind = type(self).__name__.lower()
        for name, control in self.controls.items():
            control.add_class(f"xk-{name}")
            control.observe(self._on_change, names="value")

        dpi = self.dpi * self.scale
        width, height = (int(s * dpi) for s in self.figsize)
        self.figure = Figure(figsize=self.figsize, dpi=dpi, layout=self.layout)
        FigureCanvasAgg(self.figure)
        self.image = widgets.Image(format="png", layout=widgets.Layout(width=f"{width}px", height=f"{height}px"))
        self.image.add_class("xk-figure")
        self.html = widgets.HTML(layout=widgets.Layout(min_height="0px"))
        self.html.add_class("xk-html")
        self.status = widgets.HTML(layout=widgets.Layout(min_height="0px"))
        self.status.add_class("xk-status")

        parts: list[widgets.Widget] = []
        if self.title:
            parts.append(widgets.HTML(f"<b>{html.escape(self.title)}</b>"))
        parts.append(widgets.HBox(list(self.controls.values()),
                                  layout=widgets.Layout(flex_flow="row wrap", align_items="center")))
        parts.append(self.status)
        if self.has_figure:
            parts.append(self.image)
        parts.append(self.html)
        self.widget = widgets.VBox(parts, layout=widgets.Layout(border="1px solid #ddd", padding="6px"))
        self.widget.add_class("xk-panel")
        self.widget.add_class(f"xk-{kind}")
        if update:
            self.update()

    # -- to implement -------------------------------------------------------------------------------
    def compute(self, **values):  # pragma: no cover - abstract
        raise NotImplementedError

    def draw(self, fig: Figure, result) -> str | None:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- state from Python -----------------------------------------------------------------------------
    @property
    def values(self) -> dict:
        """The current control values by name."""
        return {name: control.value for name, control in self.controls.items()}

    def set(self, **values):
        """Set several controls at once, then recompute and redraw once. Returns the new result.

        Every value is checked first: one a control cannot take changes nothing (the error is shown in the
        panel, naming the control and its choices, and ``set`` returns the last good result). Then the choices
        (dropdowns, toggles, multiple selections) are applied before the sliders, since a choice may re-tune a
        slider (``IGBaselinePanel``'s baseline gives the parameter slider its range), so
        ``set(baseline="expected", param=16)`` means k = 16 whatever the baseline was. A number outside its
        slider's range (the range after the choices) is clamped to it, with a note in the status line.
        """
        unknown = sorted(set(values) - set(self.controls))
        if unknown:
            raise ValueError(f"{type(self).__name__} has no control {', '.join(map(repr, unknown))}; "
                             f"its controls are {', '.join(map(repr, self.controls))}")
        checked, notes = {}, []
        try:
            for name, value in values.items():
                checked[name] = _check_value(name, self.controls[name], value)
        except (TypeError, ValueError) as err:
            self._show_error(err, traceback.format_exc())
            return self.result
        choices_first = sorted(checked, key=lambda name: not _is_choice(self.controls[name]))  # a stable sort
        self._suspended = True
        try:
            for name in choices_first:
                control, value = self.controls[name], checked[name]
                if _is_range(control):
                    value, note = _clamped(name, value, *_bounds(control))
                    if note:
                        notes.append(note)
                control.value = value
        finally:
            self._suspended = False
        self._set_notes = notes
        self.update()
        return self.result

    def update(self):
        """Recompute and redraw from the current control values; show any error in the panel."""
        t0 = time.perf_counter()
        caught: list = []
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = self.compute(**self.values)
                t1 = time.perf_counter()
                extra_html = self._render(result)
            _pass_on(caught)  # a warning the filters turn into an error is shown like any other error
        except Exception as err:  # noqa: BLE001 - shown to the user, never swallowed
            self._show_error(err, traceback.format_exc())
            with warnings.catch_warnings():
                warnings.simplefilter("default")  # the error is shown; its warnings must not hide it
                _pass_on(caught)
            return None
        t2 = time.perf_counter()
        self.result = result
        self.error = None
        self.error_traceback = ""
        said = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
        self.notes = list(dict.fromkeys(self._set_notes + said))  # each once, in order
        self.status.value = self._notes_html(self.notes)
        self.widget.remove_class("xk-has-error")
        self.html.value = extra_html or ""
        self.n_updates += 1
        self.timings = {"compute": t1 - t0, "draw": t2 - t1, "total": t2 - t0}
        return result

    def _show_error(self, err: BaseException, tb: str) -> None:
        self.error = err
        self.error_traceback = tb
        self.status.value = self._error_html(err)
        self.widget.add_class("xk-has-error")

    # -- display -----------------------------------------------------------------------------------------
    def _repr_mimebundle_(self, include=None, exclude=None):
        """The live widget, plus a still picture of the panel as it is when displayed, for what cannot run
        a widget: ``image/png`` of the figure, and ``text/html`` with that picture, the status line and the
        HTML area (tables, token heatmaps). Jupyter shows the widget. xaikit's HTML export
        (:func:`xaikit.course.export.export_html`) shows the picture instead, redrawn from the saved
        widget state so that it is the panel's *last* state; a plain ``jupyter nbconvert`` or nbviewer
        prefers the (empty) widget view. The sliders of a picture do nothing."""
        bundle = dict(self.widget._repr_mimebundle_(include=include, exclude=exclude) or {})
        png = base64.b64encode(self.image.value).decode("ascii") if self.has_figure and self.image.value else None
        if png:
            bundle["image/png"] = png
        page = still_html(png, self.status.value, self.html.value, name=type(self).__name__)
        if page:
            bundle["text/html"] = page
        return bundle, {PANEL_METADATA: type(self).__name__}

    def layout_key(self, result):
        """What fixes the figure's layout (a sentence's tokens, a number of heads): a full redraw whenever it
        changes. The default, ``None``, never changes."""
        return None

    def update_artists(self, fig, result):
        """The fast-redraw hook: update the figure that :meth:`draw` built last time in place (new image
        data, bar heights, limits, titles) and return the extra HTML, or ``NotImplemented`` (the default)
        for a full redraw. Building axes and their ticks is most of a redraw's cost, so a panel whose layout
        stays put should implement it; see the module docstring for ``self.animated`` and blitting."""
        return NotImplemented

    def invalidate(self) -> None:
        """Redraw the static background on the next render (an update changed more than ``animated``)."""
        self._background = None

    def _render(self, result) -> str | None:
        if not self.has_figure:
            return self.draw(None, result)
        fig = self.figure
        key = self.layout_key(result)
        extra = NotImplemented
        if self._drawn and key == self._drawn_key:
            self._drawn = False  # an exception below leaves it False: the next update redraws in full
            extra = self.update_artists(fig, result)
        if extra is NotImplemented:
            self._drawn = False
            fig.clear()
            self.animated = []
            self._background = None
            extra = self.draw(fig, result)
            for artist in self.animated:
                artist.set_animated(True)  # left out of canvas.draw(): drawn on top of the background
            self._drawn_key = key
        if self.animated:
            canvas = fig.canvas
            if self._background is None:
                canvas.draw()
                self._background = canvas.copy_from_bbox(fig.bbox)
            else:
                canvas.restore_region(self._background)
            for artist in self.animated:
                fig.draw_artist(artist)
            self.image.value = render_png(fig, draw=False)
        else:
            self.image.value = render_png(fig)
        self._drawn = True
        return extra

    def _on_change(self, change):
        if not self._suspended:
            self._set_notes = []  # a control moved by hand: earlier notes no longer apply
            self.update()

    @staticmethod
    def _notes_html(notes: list[str]) -> str:
        if not notes:
            return ""
        items = "<br>".join(f"&#9432; {html.escape(n)}" for n in notes)
        return ('<div class="xk-note" role="status" style="border-left:6px solid #0072B2;padding:4px 10px;'
                f'margin:4px 0;background:#eef6fb;color:#000;font-family:sans-serif"><small>{items}</small></div>')

    @staticmethod
    def _error_html(err: BaseException) -> str:
        name = html.escape(type(err).__name__)
        message = html.escape(str(err)) or "(no message)"
        return (
            '<div class="xk-error" role="alert" style="border:2px solid #D55E00;border-left-width:8px;'
            'padding:6px 10px;margin:4px 0;background:#fff4ec;color:#000;font-family:sans-serif">'
            f"<b>&#9888; {name}</b>: {message}<br><small>The panel still works: change a control to try "
            "again.</small></div>"
        )


#: which warnings were passed on already (the registry of :func:`warnings.warn_explicit`)
_PASSED_ON: dict = {}


def _pass_on(caught) -> None:
    """Re-issue warnings recorded during an update, so Python's filters and the notebook still see them
    (under the ``"default"`` filter each one once, not again on every slider move)."""
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, registry=_PASSED_ON)


