"""The lecture's static diagrams (:mod:`xaikit.diagrams`): each is a Figure that draws, leaves no pyplot figure
open, keeps its texts inside the picture and apart from each other, and shows the numbers the methods
compute (the worked example against the scratch implementation and NumPy, Grad-SAM's bars against
``gradsam_scores`` on the drawn maps, the CAV against ``train_cav`` on the drawn points)."""

from __future__ import annotations

import subprocess
import sys

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.text import Text

from xaikit import diagrams

NAMES = ["attention_steps", "gradsam_flow", "vit_patches", "transformer_block", "cav_diagram"]


def _texts(fig) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def _by_gid(fig) -> dict[str, Text]:
    return {t.get_gid(): t for t in _texts(fig) if t.get_gid()}


def _axes(fig, gid: str):
    found = [ax for ax in fig.axes if ax.get_gid() == gid]
    assert len(found) == 1, f"no single axes with gid {gid!r}"
    return found[0]


def _image(fig, gid: str) -> np.ndarray:
    images = [a for a in _axes(fig, gid).get_children() if isinstance(a, AxesImage)]
    return np.asarray(images[0].get_array(), dtype=float)


@pytest.fixture(scope="module")
def figures():
    import matplotlib.pyplot as plt

    open_before = plt.get_fignums()
    built = {name: getattr(diagrams, name)() for name in NAMES}
    assert plt.get_fignums() == open_before, "a diagram left a pyplot figure open"
    return built


@pytest.mark.parametrize("name", NAMES)
def test_each_diagram_is_a_figure_jupyter_shows_as_png(figures, name):
    fig = figures[name]
    assert isinstance(fig, Figure)
    png = fig._repr_png_()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = fig.get_size_inches()
    assert 10 <= width <= 13.5 and 5 <= height <= 8, "sized for notebook width and a 16:9 slide"
    assert min(t.get_fontsize() for t in _texts(fig)) >= 7.5, "every text legible when the figure is shrunk"


@pytest.mark.parametrize("name", NAMES)
def test_texts_stay_inside_the_picture_and_do_not_overlap(figures, name):
    fig = figures[name]
    renderer = fig.canvas.get_renderer() if hasattr(fig.canvas, "get_renderer") else None
    if renderer is None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    page = fig.bbox
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in _texts(fig)]
    outside = [s for s, b in boxes if b.x0 < page.x0 - 1 or b.x1 > page.x1 + 1 or b.y0 < page.y0 - 1
               or b.y1 > page.y1 + 1]
    assert not outside, f"texts cut off at the edge: {outside}"
    clashes = [(s, r) for k, (s, a) in enumerate(boxes) for r, b in boxes[k + 1:]
               if a.shrunk(0.9, 0.8).overlaps(b.shrunk(0.9, 0.8))]
    assert not clashes, f"texts on top of each other: {clashes}"


def test_importing_the_module_loads_no_torch_and_only_the_attention_diagram_needs_it():
    code = ("import sys, xaikit; assert 'matplotlib' not in sys.modules; import xaikit.diagrams as d; "
            "assert 'torch' not in sys.modules, 'import'; "
            "[f() for f in (d.gradsam_flow, d.vit_patches, d.transformer_block, d.cav_diagram)]; "
            "assert 'torch' not in sys.modules, 'drawing'; print(type(xaikit.diagrams.attention_steps()).__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "MPLBACKEND": "Agg"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Diagram"


# -- 1. attention step by step ------------------------------------------------------------------------------
def test_attention_numbers_are_the_scratch_implementations_and_numpys(figures):
    from xaikit.attention import scratch

    ex = scratch.worked_example()
    steps = scratch.self_attention(ex["x"], ex["w_q"], ex["w_k"], ex["w_v"])
    shown = _by_gid(figures["attention_steps"])
    expected = {"X": steps.x, "W_Q": ex["w_q"], "W_K": ex["w_k"], "W_V": ex["w_v"], "Q": steps.q, "K": steps.k,
                "V": steps.v, "S": steps.scores, "A": steps.weights, "out": steps.out}
    for name, tensor in expected.items():
        for (i, j), value in np.ndenumerate(tensor.double().numpy()):
            assert float(shown[f"{name}[{i},{j}]"].get_text()) == pytest.approx(value, abs=0.006), (name, i, j)
    # the same numbers from the lecture's inputs by NumPy, without the scratch module
    x = np.array([[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]], dtype=float)
    q, k, v = (x @ ex[w].double().numpy() for w in ("w_q", "w_k", "w_v"))
    s = q @ k.T / np.sqrt(3)
    a = np.exp(s - s.max(1, keepdims=True))
    a /= a.sum(1, keepdims=True)
    for name, matrix in {"S": s, "A": a, "out": a @ v}.items():
        for (i, j), value in np.ndenumerate(matrix):
            assert float(shown[f"{name}[{i},{j}]"].get_text()) == pytest.approx(value, abs=0.006)
    assert all(shown[f"rowsum[{i}]"].get_text() == "1.00" for i in range(3))
    assert f"{a[0, 1]:.2f} v2" in shown["out1-sum"].get_text()


def test_attention_weights_are_coloured_on_the_fixed_sequential_scale(figures):
    from matplotlib.patches import Rectangle

    fig = figures["attention_steps"]
    canvas = fig.axes[0]
    cells = [p for p in canvas.patches if isinstance(p, Rectangle) and p.get_fill()]
    viridis = matplotlib.colormaps["viridis"]
    for gid, text in _by_gid(fig).items():
        if not gid.startswith("A["):
            continue
        x, y = text.get_position()
        (cell,) = [c for c in cells if c.get_x() < x < c.get_x() + c.get_width()
                   and c.get_y() < y < c.get_y() + c.get_height()]
        np.testing.assert_allclose(cell.get_facecolor(), viridis(float(text.get_text())), atol=0.02)


# -- 2. Grad-SAM ----------------------------------------------------------------------------------------------
def test_gradsam_bars_are_gradsam_of_the_drawn_maps(figures):
    import torch

    from xaikit.text.gradsam import gradsam_scores

    fig = figures["gradsam_flow"]
    gid = lambda kind: np.array([[_image(fig, f"{kind} {l} {m}") for m in range(2)] for l in range(2)])  # noqa: E731
    a, g, relu, h = gid("A"), gid("G"), gid("ReLU"), gid("H")
    np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-12)  # attention rows are distributions
    assert (g < 0).any() and (g > 0).any()
    np.testing.assert_array_equal(relu, np.maximum(g, 0))
    np.testing.assert_allclose(h, a * relu)
    bars = [p.get_width() for p in _axes(fig, "scores").patches]
    expected = gradsam_scores(torch.from_numpy(a), torch.from_numpy(g)).numpy()
    np.testing.assert_allclose(bars, expected, rtol=1e-12)
    labels = [t.get_text() for t in _axes(fig, "scores").get_yticklabels()]
    assert labels == list(diagrams.GRADSAM_TOKENS)


# -- 3. ViT patches -------------------------------------------------------------------------------------------
def test_vit_patches_default_is_the_image_world_as_65_tokens(figures):
    fig = figures["vit_patches"]
    assert _by_gid(fig)["n_tokens"].get_text() == "1 + 64 = 65 tokens"
    from xaikit.models import imageworld

    image = imageworld.render("zebra", rng=3) / 255.0
    np.testing.assert_allclose(_image(fig, "patch 1"), image[:8, :8])
    np.testing.assert_allclose(_image(fig, "patch 64"), image[56:, 56:])


def test_vit_patches_of_any_image_and_patch_size():
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, size=(32, 48, 3), dtype=np.uint8)
    fig = diagrams.vit_patches(image, patch_size=16)
    assert _by_gid(fig)["n_tokens"].get_text() == "1 + 6 = 7 tokens"
    np.testing.assert_allclose(_image(fig, "patch 6"), image[16:, 32:] / 255.0)
    assert not any(ax.get_gid() == "patch 7" for ax in fig.axes)


@pytest.mark.parametrize(("image", "patch_size", "error", "match"), [
    (np.zeros((30, 32, 3)), 8, ValueError, "patch_size"),
    (np.zeros((2, 32, 32, 3)), 8, ValueError, "images\\[0\\]"),
    (np.full((32, 32, 3), 2.0), 8, ValueError, "0, 1"),
    ("zebra.png", 8, TypeError, "image must be"),
    (np.zeros((32, 32, 3)), 0, ValueError, "patch_size"),
])
def test_vit_patches_refuses_bad_input_by_name(image, patch_size, error, match):
    with pytest.raises(error, match=match):
        diagrams.vit_patches(image, patch_size=patch_size)


# -- 4. the transformer block ---------------------------------------------------------------------------------
def test_transformer_block_is_post_layernorm(figures):
    shown = _by_gid(figures["transformer_block"])
    order = ["embed", "attention", "add-norm-1", "ffn", "add-norm-2"]  # bottom to top
    heights = [shown[g].get_position()[1] for g in order]
    assert heights == sorted(heights), "each sublayer is followed by its add & LayerNorm"
    assert "attention" in shown["attention"].get_text() and "4d" in shown["ffn"].get_text()
    assert all("LayerNorm" in shown[g].get_text() for g in ("add-norm-1", "add-norm-2"))
    assert "position" in shown["embed"].get_text()


# -- 5. CAV ---------------------------------------------------------------------------------------------------
def test_cav_is_the_unit_normal_of_the_drawn_boundary_towards_the_concept(figures):
    from xaikit.concepts.cav import train_cav

    fig = figures["cav_diagram"]
    space = fig.axes[0]
    (boundary,) = [line for line in space.lines if line.get_gid() == "boundary"]
    p0, p1 = boundary.get_xydata()
    (arrow,) = [a for a in space.texts if a.get_gid() == "cav"]
    cav = np.subtract(arrow.xy, arrow.xyann)
    cav /= np.linalg.norm(cav)
    along = (p1 - p0) / np.linalg.norm(p1 - p0)
    assert abs(cav @ along) < 1e-9  # normal to the boundary
    points = {c.get_label(): c.get_offsets().data for c in space.collections}
    concept, random = points['concept "striped"'], points["random examples"]
    assert ((concept - p0) @ cav > 0).all() and ((random - p0) @ cav < 0).all()  # the concept's side
    reference = train_cav(concept, random, test_fraction=0.0).vector  # the lecture's CAV on the same points
    assert float(reference @ cav) > 0.99


def test_directional_derivatives_and_tcav_score(figures):
    fig = figures["cav_diagram"]
    space = fig.axes[0]
    (arrow,) = [a for a in space.texts if a.get_gid() == "cav"]
    cav = np.subtract(arrow.xy, arrow.xyann)
    cav /= np.linalg.norm(cav)
    grads = [np.subtract(a.xy, a.xyann) for a in sorted((a for a in space.texts
                                                        if (a.get_gid() or "").startswith("grad ")),
                                                       key=lambda a: int(a.get_gid().split()[1]))]
    s = np.array(grads) @ cav / 0.55  # the arrows are drawn at 0.55 of the gradient
    bars = np.array([p.get_height() for p in _axes(fig, "S").patches])
    np.testing.assert_allclose(bars, s, rtol=1e-9)
    assert (s > 0).any() and (s < 0).any(), "the sketch shows both signs"
    title = _axes(fig, "S").get_title()
    assert f"= {int((s > 0).sum())}/{len(s)} = {np.mean(s > 0):.2f}" in title
