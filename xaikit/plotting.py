"""Plotting conventions shared by every notebook.

* Signed attributions use a diverging map centred on zero with a symmetric range (``RdBu_r``: blue
  negative, red positive; readable with red-green colour blindness because it varies in lightness).
* Weights in [0, 1] (attention, probabilities) use a sequential map with a fixed 0-1 range, so two heads
  or two layers can be compared by colour.
* Token heatmaps are HTML with every token escaped, so ``<b>`` in a sentence stays text.
* Categorical series use the Okabe-Ito palette (Okabe & Ito 2008), the usual colour-blind-safe choice.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from xaikit._validate import bool_flags, check_labels

if TYPE_CHECKING:
    import torch
    from matplotlib.axes import Axes
    from matplotlib.container import BarContainer
    from matplotlib.image import AxesImage

    #: numbers to draw: a tensor, an array or a (nested) list
    Values = torch.Tensor | np.ndarray | Sequence

DIVERGING = "RdBu_r"
SEQUENTIAL = "viridis"
#: Okabe-Ito: black-free order for lines and bars.
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]


def symmetric_limit(values: Values, floor: float = 1e-12) -> float:
    """The ``vmax`` of a zero-centred colour range: the largest absolute finite value (at least ``floor``)."""
    a = np.asarray(_to_numpy(values), dtype=float)
    a = a[np.isfinite(a)]
    return float(max(np.abs(a).max() if a.size else 0.0, floor))


@bool_flags
def show_signed(ax: Axes, values: Values, title: str | None = None, colorbar: bool = True,
                **kwargs: Any) -> AxesImage:
    """Draw a 2-D array of signed attributions on the diverging map with range ``[-m, m]``."""
    a = np.asarray(_to_numpy(values), dtype=float)
    if a.ndim != 2:
        raise ValueError(f"show_signed: values must be a 2-D array (rows x columns), got shape {a.shape}; for one "
                         "value per item use signed_bars, or reshape (e.g. values[None, :] for one row)")
    m = kwargs.pop("vmax", None) or symmetric_limit(a)
    im = ax.imshow(a, cmap=DIVERGING, vmin=-m, vmax=m, **kwargs)
    _finish(ax, im, title, colorbar)
    return im


@bool_flags
def show_weights(ax: Axes, values: Values, title: str | None = None, colorbar: bool = True,
                 **kwargs: Any) -> AxesImage:
    """Draw a 2-D array of weights in [0, 1] on the sequential map with the fixed range [0, 1]."""
    a = np.asarray(_to_numpy(values), dtype=float)
    if a.ndim != 2:
        raise ValueError(f"show_weights: values must be a 2-D array (rows x columns), got shape {a.shape}; for one "
                         "value per item use signed_bars, or reshape (e.g. values[None, :] for one row)")
    im = ax.imshow(a, cmap=SEQUENTIAL, vmin=0.0, vmax=1.0, **kwargs)
    _finish(ax, im, title, colorbar)
    return im


@bool_flags
def signed_bars(ax: Axes, labels: Sequence[str], values: Values, title: str | None = None,
                horizontal: bool = False) -> BarContainer:
    """Bars coloured by sign with the diverging map's two ends, with a zero line."""
    import matplotlib as mpl

    v = np.asarray(_to_numpy(values), dtype=float)
    if v.ndim != 1:
        raise ValueError(f"signed_bars: values must be one number per bar (1-D), got shape {v.shape}")
    labels = check_labels(labels, "labels", len(v), "values")  # a mismatch failed inside matplotlib's ticks
    cmap = mpl.colormaps[DIVERGING]
    colors = [cmap(0.85) if x >= 0 else cmap(0.15) for x in v]
    pos = np.arange(len(v))
    if horizontal:
        bars = ax.barh(pos, v, color=colors)
        ax.set_yticks(pos, list(labels))
        ax.axvline(0, color="0.3", lw=0.8)
        ax.invert_yaxis()
    else:
        bars = ax.bar(pos, v, color=colors)
        ax.set_xticks(pos, list(labels))
        ax.axhline(0, color="0.3", lw=0.8)
    if title:
        ax.set_title(title)
    return bars


def rank_null(ax: Axes, result, title: str | None = None) -> None:
    """Where each concept's mean TCAV score falls among random image sets posing as concepts (a
    :func:`xaikit.tcav_significance` result with ``test="rank"``; notebook 07, section 1): a grey histogram
    of the random concepts' means, a dashed line at their median (about where the two-sided test centres),
    and one Okabe-Ito line per concept, solid when significant and dotted when not."""
    if result.null_scores is None:
        raise ValueError("result has no random concepts: call tcav_significance(..., test=\"rank\")")
    means = result.null_means
    ax.hist(means, bins=np.linspace(0, 1, 26), color="#BBBBBB", edgecolor="white",
            label=f"{len(means)} random concepts")
    ax.axvline(float(np.median(means)), color="0.3", ls="--", lw=1, label="their median")
    for i, c in enumerate(result.concepts.values()):
        ax.axvline(c.mean, color=OKABE_ITO[i % len(OKABE_ITO)], lw=2.5, ls="-" if c.significant else ":",
                   label=f"{c.concept}: p={c.p_corrected:.2g}{'' if c.significant else ' (n.s.)'}")
    from matplotlib.ticker import MaxNLocator

    ax.set_xlim(-0.02, 1.02)  # a score of 0 or 1 stays visible
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts of sets
    ax.set_xlabel("mean TCAV score over R runs")
    ax.set_ylabel("random concepts")
    # below the axes: over the bars the legend would hide the very sets it is compared with
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, frameon=False)
    if title:
        ax.set_title(title)


@bool_flags
def token_heatmap_html(tokens: Sequence[str], scores: Values, signed: bool = True, title: str | None = None,
                       vmax: float | None = None) -> str:
    """Tokens as inline HTML spans shaded by score.

    Signed scores use the diverging map with a symmetric range; unsigned ones (``signed=False``) use the
    sequential map on [0, vmax]. Token text and the title are HTML-escaped; each span's ``title`` shows
    the exact value on hover.
    """
    import matplotlib as mpl

    s = np.asarray(_to_numpy(scores), dtype=float)
    if len(tokens) != len(s):
        raise ValueError(f"tokens and scores must have the same length, got {len(tokens)} and {len(s)}")
    if signed:
        m = vmax or symmetric_limit(s)
        norm = mpl.colors.Normalize(-m, m)
        cmap = mpl.colormaps[DIVERGING]
    else:
        m = vmax or max(float(np.nanmax(s)) if s.size else 1.0, 1e-12)
        norm = mpl.colors.Normalize(0.0, m)
        cmap = mpl.colormaps[SEQUENTIAL]
    spans = []
    for tok, val in zip(tokens, s, strict=True):
        rgba = cmap(norm(val))
        r, g, b = (int(255 * c) for c in rgba[:3])
        luminance = 0.299 * r + 0.587 * g + 0.114 * b
        fg = "#000" if luminance > 140 else "#fff"
        spans.append(
            f'<span class="xk-token" title="{val:.4g}" style="background:rgb({r},{g},{b});color:{fg};'
            f'padding:2px 4px;margin:1px;border-radius:3px;display:inline-block;font-family:monospace">'
            f"{html.escape(str(tok))}</span>"
        )
    head = f'<div class="xk-token-title"><b>{html.escape(title)}</b></div>' if title else ""
    return f'<div class="xk-tokens">{head}{"".join(spans)}</div>'


def _finish(ax, im, title, colorbar):
    if title:
        ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)


def _to_numpy(values):
    if hasattr(values, "detach"):  # a tensor, on any device and in any dtype (bfloat16 included)
        from xaikit._fn import to_cpu

        return to_cpu(values).numpy()
    return values
