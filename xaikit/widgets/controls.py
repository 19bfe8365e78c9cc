"""The controls of the lecture widgets: sliders, dropdowns, toggles, text boxes and checkboxes built with one
style, and the checks that :meth:`xaikit.widgets.base.Panel.set` applies before it changes any control (a value
not among a dropdown's choices, text for a number: an error naming the control; a number outside a slider's
range: clamped, with a note saying so).

Expensive sliders are built with ``continuous_update=False`` (:func:`slider`), so dragging does not queue up
work. The panel that wires the controls to a figure is :class:`xaikit.widgets.base.Panel`.
"""

from __future__ import annotations

import math
import numbers

import ipywidgets as widgets

from xaikit._validate import bool_flags

__all__ = ["checkbox", "dropdown", "int_slider", "log_slider", "slider", "text_box", "toggle"]

_STYLE = {"description_width": "initial"}


@bool_flags
def slider(description: str, value: float, min: float, max: float, step: float, continuous: bool = False,
           readout_format: str = ".3g", name: str | None = None, **kwargs) -> widgets.FloatSlider:
    """A float slider; ``continuous=False`` (the default) updates on release, for expensive panels.

    ``value`` must be a number (a TypeError naming ``name``, by default the description, otherwise); one
    outside ``[min, max]`` is clamped with a note. The same holds for :func:`log_slider` and :func:`int_slider`.
    """
    value = _check_number(name or description, value)
    value, note = _clamped(description, value, min, max)
    return _noted(widgets.FloatSlider(value=value, min=min, max=max, step=step, description=description,
                                      continuous_update=continuous, readout_format=readout_format, style=_STYLE,
                                      layout=widgets.Layout(width="320px"), **kwargs), note)


@bool_flags
def log_slider(description: str, value: float, min_exp: float, max_exp: float, step: float = 0.05,
               continuous: bool = False, name: str | None = None, **kwargs) -> widgets.FloatLogSlider:
    """A slider over ``10**min_exp .. 10**max_exp`` (temperatures, betas, sigmas)."""
    value = _check_number(name or description, value)
    value, note = _clamped(description, value, 10.0 ** min_exp, 10.0 ** max_exp)
    return _noted(widgets.FloatLogSlider(value=value, base=10, min=min_exp, max=max_exp, step=step,
                                         description=description, continuous_update=continuous, style=_STYLE,
                                         layout=widgets.Layout(width="320px"), **kwargs), note)


@bool_flags
def int_slider(description: str, value: int, min: int, max: int, step: int = 1, continuous: bool = False,
               name: str | None = None, **kwargs) -> widgets.IntSlider:
    value = _check_number(name or description, value, integer=True)
    value, note = _clamped(description, value, min, max)
    return _noted(widgets.IntSlider(value=value, min=min, max=max, step=step, description=description,
                                    continuous_update=continuous, style=_STYLE,
                                    layout=widgets.Layout(width="320px"), **kwargs), note)


def _check_number(name: str, value, integer: bool = False):
    """``value`` if it is a finite number (an int for an int slider), else an error naming the control."""
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"{name} must be {'an int' if integer else 'a number'}, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    return value


def _clamped(name: str, value, lo, hi):
    """``value`` moved into ``[lo, hi]``, and a note saying so (or None); other types pass unchanged."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        return value, None
    if lo <= value <= hi:
        return value, None
    bound, side = (lo, "below its minimum") if value < lo else (hi, "above its maximum")
    return bound, f"{name}: {value:g} is {side} {bound:g}, so it was set to {bound:g}"


def _noted(control: widgets.Widget, note: str | None) -> widgets.Widget:
    """Attach a constructor's clamping note; the panel shows it after its first update."""
    control._xk_note = note
    return control


def _choice(description: str, options: list, value):
    """``value``, or the first option when it is None; a value that is not an option is a ValueError naming
    the control (ipywidgets would raise a TraitError that names nothing)."""
    values = [o[1] if isinstance(o, tuple) else o for o in options]
    if not values:
        raise ValueError(f"{description} has no options to choose from; give the panel at least one")
    return values[0] if value is None else _check_option(description, values, value)


def dropdown(description: str, options, value=None, name: str | None = None, **kwargs) -> widgets.Dropdown:
    """A dropdown; ``name`` is the panel's parameter that sets it, named in the error for a value not among
    the options when the label differs (``part=`` sets the "mask" dropdown)."""
    options = list(options)
    value = _choice(name or description, options, value)
    return widgets.Dropdown(options=options, value=value, description=description, style=_STYLE, **kwargs)


def toggle(description: str, options, value=None, **kwargs) -> widgets.ToggleButtons:
    options = list(options)
    value = _choice(description, options, value)
    return widgets.ToggleButtons(options=options, value=value, description=description, style=_STYLE, **kwargs)


def text_box(description: str, value: str = "", placeholder: str = "", **kwargs) -> widgets.Text:
    """A text field that submits on Enter or blur, not on every key stroke."""
    return widgets.Text(value=value, placeholder=placeholder, description=description, continuous_update=False,
                        style=_STYLE, layout=widgets.Layout(width="480px"), **kwargs)


@bool_flags
def checkbox(description: str, value: bool = False, **kwargs) -> widgets.Checkbox:
    return widgets.Checkbox(value=value, description=description, indent=False, **kwargs)


def _same(value, choice) -> bool:
    """``value == choice`` as a plain bool, with True/False never standing in for 1/0."""
    try:
        return isinstance(value, bool) == isinstance(choice, bool) and bool(value == choice)
    except (TypeError, ValueError):  # e.g. an array compared with a number
        return False


def _check_option(name: str, choices: list, value, consequence: str = ""):
    """``value`` if it is one of a dropdown's or toggle's ``choices``, else a ValueError naming the control."""
    if any(_same(value, c) for c in choices):
        return value
    import difflib

    by_text = {str(c): c for c in choices}
    close = [by_text[c] for c in difflib.get_close_matches(str(value), list(by_text), n=1)]
    # '2' for the int 2: name the types, or the suggestion would read like the value refused
    typed = bool(close) and type(close[0]) is not type(value)
    also = (f" Did you mean {close[0]!r} ({type(close[0]).__name__})?" if typed else f" Did you mean {close[0]!r}?") \
        if close else ""
    got = f"{value!r} ({type(value).__name__})" if typed else repr(value)
    raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {got}{consequence}.{also}")


_RANGES = (widgets.FloatSlider, widgets.FloatLogSlider, widgets.IntSlider, widgets.BoundedFloatText,
           widgets.BoundedIntText)


def _is_choice(control: widgets.Widget) -> bool:
    """A dropdown, toggle or multiple selection: set before the sliders, which it may re-tune."""
    return isinstance(control, (widgets.widget_selection._Selection, widgets.widget_selection._MultipleSelection))


def _is_range(control: widgets.Widget) -> bool:
    return isinstance(control, _RANGES)


def _bounds(control: widgets.Widget) -> tuple:
    """A slider's ``(min, max)`` in the values it takes (a log slider's exponents undone)."""
    if isinstance(control, widgets.FloatLogSlider):
        return control.base ** control.min, control.base ** control.max
    return control.min, control.max


def _check_names(name: str, choices: list, value):
    """``value`` as a tuple if every element is one of a multiple selection's ``choices``, else an error naming
    the control, its choices and the elements it does not know."""
    listed = ", ".join(map(repr, choices))
    if isinstance(value, str):
        import difflib

        close = [value] if value in choices else difflib.get_close_matches(value, [str(c) for c in choices], n=1)
        also = f" Did you mean ({close[0]!r},)?" if close else ""
        raise ValueError(f"{name} must be a tuple of names among {listed}, not one str: got {value!r}, so nothing "
                         f"was changed.{also}")
    try:
        value = tuple(value)
    except TypeError:
        raise TypeError(f"{name} must be a tuple of names among {listed}, got {type(value).__name__} {value!r}, so "
                        "nothing was changed") from None
    unknown = [v for v in value if not any(_same(v, c) for c in choices)]
    if unknown:
        raise ValueError(f"{name} must be names among {listed}; got {value!r}, and {', '.join(map(repr, unknown))} "
                         f"{'is' if len(unknown) == 1 else 'are'} not one of them, so nothing was changed")
    return value


def _check_value(name: str, control: widgets.Widget, value):
    """The value to apply for ``panel.set(name=value)``, or a ValueError/TypeError naming the control: a choice
    must be one of the options (each element of a multiple selection too), a slider takes a finite number
    (clamped into its range when it is applied, with a note), a checkbox a bool, a text box a str."""
    from traitlets import TraitError

    if isinstance(control, widgets.widget_selection._Selection):
        return _check_option(name, list(control._options_values), value, ", so nothing was changed")
    if isinstance(control, widgets.widget_selection._MultipleSelection):
        return _check_names(name, list(control._options_values), value)
    if _is_range(control):
        integer = isinstance(control, (widgets.IntSlider, widgets.BoundedIntText))
        try:
            return _check_number(name, value, integer)
        except (TypeError, ValueError) as err:
            raise type(err)(f"{err}, so nothing was changed") from None
    try:
        type(control).value.validate(control, value)
    except TraitError as err:
        raise TypeError(f"{name} cannot take {value!r} ({type(value).__name__}): {err}; nothing was changed") from err
    return value
