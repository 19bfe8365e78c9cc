"""Plotting conventions: symmetric diverging range for signed values, fixed 0-1 range for weights, escaped HTML."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from xaikit import plotting


def _ax():
    return Figure().subplots()


def test_signed_values_get_a_symmetric_range_on_the_diverging_map():
    ax = _ax()
    im = plotting.show_signed(ax, np.array([[0.5, -2.0], [1.0, 0.0]]))
    assert im.get_clim() == (-2.0, 2.0)  # exact: the largest |value|, copied
    assert im.get_cmap().name == "RdBu_r"
    im = plotting.show_signed(_ax(), torch.tensor([[3.0, 1.0]]))  # tensors too; positive only still symmetric
    assert im.get_clim() == (-3.0, 3.0)
    im = plotting.show_signed(_ax(), np.zeros((2, 2)), colorbar=False)  # all zero: a tiny, still symmetric range
    lo, hi = im.get_clim()
    assert lo == -hi and hi > 0


def test_symmetric_limit_ignores_nan():
    assert plotting.symmetric_limit([1.0, np.nan, -4.0]) == 4.0


def test_weights_use_a_fixed_0_1_range():
    im = plotting.show_weights(_ax(), np.array([[0.1, 0.2]]))
    assert im.get_clim() == (0.0, 1.0) and im.get_cmap().name == "viridis"


def test_signed_bars_colour_by_sign():
    bars = plotting.signed_bars(_ax(), ["a", "b"], [1.0, -1.0])
    pos, neg = (b.get_facecolor() for b in bars)
    assert pos[0] > pos[2] and neg[2] > neg[0]  # red-ish positive, blue-ish negative


def test_token_heatmap_escapes_text_and_title():
    html = plotting.token_heatmap_html(["<b>", "a&b", "ok"], [1.0, -0.5, 0.0], title="<script>")
    assert "<script>" not in html and ">a&b<" not in html
    assert "&lt;b&gt;" in html and "a&amp;b" in html and "&lt;script&gt;" in html
    assert html.count('class="xk-token"') == 3


def test_token_heatmap_checks_lengths():
    with pytest.raises(ValueError, match="same length"):
        plotting.token_heatmap_html(["a", "b"], [1.0])


def test_okabe_ito_palette_has_eight_distinct_colours():
    assert len(plotting.OKABE_ITO) == 8 and len(set(plotting.OKABE_ITO)) == 8


def test_rank_null_marks_each_concept_among_the_random_concepts():
    from xaikit.concepts.significance import ConceptSignificance, SignificanceResult

    rnd = np.array([0.4, 0.5, 0.6])
    null = np.tile(np.linspace(0.2, 0.8, 9)[:, None], (1, 3))  # (K=9, R=3)

    def concept(name, mean, sig):
        return ConceptSignificance(name, np.full(3, mean), np.full(3, mean), np.ones(3), rnd, 0.0, 0.1, 0.2, sig,
                                   "rank", null.mean(1))

    res = SignificanceResult({"striped": concept("striped", 0.95, True), "dotted": concept("dotted", 0.3, False)},
                             "zebra", 2, "flatten", "logistic", "random", 3, 0.05, rnd, "rank", null)
    ax = _ax()
    plotting.rank_null(ax, res, title="main")
    lines = ax.get_lines()  # the random CAVs' mean, then one line per concept
    assert [ln.get_xdata()[0] for ln in lines] == pytest.approx([0.5, 0.95, 0.3])
    assert lines[1].get_linestyle() == "-" and lines[2].get_linestyle() == ":"
    assert sum(p.get_height() for p in ax.patches) == 9  # every random concept in the histogram (exact: counts)
    res.null_scores = None
    with pytest.raises(ValueError, match='test="rank"'):
        plotting.rank_null(_ax(), res)
