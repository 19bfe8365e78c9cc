"""The drawing parts of the lecture diagrams (:mod:`xaikit.diagrams`): :class:`Diagram`, a figure Jupyter shows
as a PNG without pyplot, a canvas measured in inches, boxes, arrows, labelled matrices, and the colours of
:mod:`xaikit.plotting` (categories in the Okabe-Ito palette)."""

from __future__ import annotations

import io

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch, Rectangle

from xaikit.plotting import OKABE_ITO

__all__ = ["Diagram"]

BLUE, ORANGE, GREEN, PINK, SKY, VERMILION = OKABE_ITO[:6]
GREY = "0.35"
FONT = 11  # legible at notebook width and on a slide


class Diagram(Figure):
    """A matplotlib ``Figure`` that Jupyter displays as a PNG without pyplot (``_repr_png_``); a Figure made
    without pyplot would otherwise print as ``<Figure size ...>`` until pyplot has drawn one."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=100, facecolor="white")
        return buffer.getvalue()


# -- shared drawing helpers ---------------------------------------------------------------------------------
def _canvas(width: float, height: float) -> tuple[Diagram, object]:
    """A figure of ``width`` x ``height`` inches with one invisible axes whose data units are inches."""
    fig = Diagram(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    return fig, ax


def _inset(fig: Figure, x: float, y: float, w: float, h: float):
    """An axes at ``(x, y)`` with size ``(w, h)``, all in inches from the lower left corner."""
    width, height = fig.get_size_inches()
    return fig.add_axes((x / width, y / height, w / width, h / height))


def _box(ax, x, y, w, h, text="", color=BLUE, fill=0.16, size=FONT, weight="normal", gid=None, **text_kw):
    """A rounded box with its lower left corner at ``(x, y)``, tinted with ``color``, ``text`` centred."""
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0,rounding_size=0.08", linewidth=1.4,
                                edgecolor=color, facecolor=_tint(color, fill)))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, weight=weight, gid=gid,
                **text_kw)


def _arrow(ax, start, end, text="", color=GREY, side="above", size=FONT - 1, style="-|>", lw=1.5, rad=0.0,
           gid=None, **text_kw):
    """An arrow from ``start`` to ``end`` (inches), with ``text`` beside its middle."""
    arrow = ax.annotate("", xy=end, xytext=start, gid=gid,
                        arrowprops=dict(arrowstyle=style, color=color, lw=lw, shrinkA=0, shrinkB=0,
                                        mutation_scale=14, connectionstyle=f"arc3,rad={rad}"))
    if text:
        mx, my = (start[0] + end[0]) / 2, (start[1] + end[1]) / 2
        offset = {"above": (0, 0.12, "center", "bottom"), "below": (0, -0.12, "center", "top"),
                  "left": (-0.12, 0, "right", "center"), "right": (0.12, 0, "left", "center")}[side]
        ax.text(mx + offset[0], my + offset[1], text, ha=offset[2], va=offset[3], fontsize=size, color="0.15",
                **text_kw)
    return arrow


def _tint(color, amount: float):
    """``color`` mixed with white: ``amount`` 1 is the colour itself, 0 is white."""
    from matplotlib.colors import to_rgb

    rgb = np.asarray(to_rgb(color))
    return tuple(1 - amount * (1 - rgb))


def _ink(rgba) -> str:
    """Black or white text, whichever reads on the background ``rgba``."""
    r, g, b = rgba[:3]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "white"


def _number(value: float) -> str:
    """A matrix entry: whole numbers without decimals, the rest with two."""
    value = float(value)
    return f"{value:.0f}" if abs(value - round(value)) < 5e-7 else f"{value:.2f}"


def _matrix(ax, values, x, y, cell, name, color=GREY, cmap=None, norm=None, title=None, size=FONT - 1,
            row_labels=None, col_labels=None):
    """Draw a matrix of numbers with its top left corner at ``(x, y)``, one ``cell`` (inches) per entry.

    Cells are tinted with ``color``, or coloured by ``cmap`` and ``norm`` (the numbers then in black or white,
    whichever reads). Each number's text carries the gid ``"{name}[i,j]"``. Returns the matrix's bounding box
    ``(x0, y0, x1, y1)``."""
    values = np.asarray(values, dtype=float)
    rows, cols = values.shape
    for i in range(rows):
        for j in range(cols):
            x0, y0 = x + j * cell, y - (i + 1) * cell
            face = cmap(norm(values[i, j])) if cmap is not None else _tint(color, 0.12)
            ax.add_patch(Rectangle((x0, y0), cell, cell, facecolor=face, edgecolor="white" if cmap else color,
                                   linewidth=1.0))
            ax.text(x0 + cell / 2, y0 + cell / 2, _number(values[i, j]), ha="center", va="center", fontsize=size,
                    color=_ink(face) if cmap is not None else "black", gid=f"{name}[{i},{j}]")
    ax.add_patch(Rectangle((x, y - rows * cell), cols * cell, rows * cell, fill=False, edgecolor=color, lw=1.6))
    if title:
        ax.text(x + cols * cell / 2, y + 0.1, title, ha="center", va="bottom", fontsize=FONT, color="black")
    for i, label in enumerate(row_labels or []):
        ax.text(x - 0.07, y - (i + 0.5) * cell, label, ha="right", va="center", fontsize=size - 1, color="0.3")
    for j, label in enumerate(col_labels or []):
        ax.text(x + (j + 0.5) * cell, y - rows * cell - 0.06, label, ha="center", va="top", fontsize=size - 1,
                color="0.3")
    return x, y - rows * cell, x + cols * cell, y


def _mappable(cmap, norm):
    from matplotlib.cm import ScalarMappable

    return ScalarMappable(norm=norm, cmap=cmap)
