"""The drawing of the generated image world (:mod:`xaikit.models.imageworld`, notebook 05): colours,
the six textures TCAV's concepts are made of (Kim et al. 2018, with Describable-Textures-like crops,
Cimpoi et al. 2014), backgrounds, the objects' silhouettes and the pixel noise.

Every function draws from the ``numpy.random.Generator`` it is given, in a fixed order, so the same
generator state gives byte-identical pixels. Images here are float ``(H, W, 3)`` in [0, 1] until
:func:`_finished` rounds them to uint8; masks are ``(H, W)``.
"""

from __future__ import annotations

import functools

import numpy as np

from xaikit._validate import check_choice

__all__ = ["SIZE", "TEXTURES", "DOT_RADIUS", "DOT_SPACING", "texture"]

SIZE = 64
TEXTURES = ("striped", "dotted", "bubbly", "zigzag", "checkered", "plain")
#: dot radius as a fraction of the dot spacing: dots cover about 15% of a surface
#: (see :mod:`xaikit.models.imageworld`)
DOT_RADIUS = (0.17, 0.26)
#: dot spacing in pixels: twice the stripe period, so that a dot pattern is not a stripe pattern's twin
DOT_SPACING = (12.0, 17.0)

_YY, _XX = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)
# one row and one column of them: a squared distance to a point as (x - px)^2 (1, W) + (y - py)^2 (H, 1),
# broadcast, is the same sum of the same two squares as over the full grids, with two W- and H-long
# subtractions and squarings instead of two H x W ones (per point)
_X1, _Y1 = _XX[:1], _YY[:, :1]


# -- colours and textures ---------------------------------------------------------------------------
def _hsv(h: float, s: float, v: float) -> np.ndarray:
    i = int(h * 6) % 6
    f = h * 6 - int(h * 6)
    p, q, t = v * (1 - s), v * (1 - f * s), v * (1 - (1 - f) * s)
    return np.array([(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)][i], dtype=np.float32)


def _colour_pair(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A dark pattern colour and a light ground colour of random hues: texture contrast without a
    class-specific colour."""
    dark = _hsv(rng.random(), rng.uniform(0, 0.7), rng.uniform(0.0, 0.22))
    light = _hsv(rng.random(), rng.uniform(0, 0.5), rng.uniform(0.75, 1.0))
    return dark, light


def _rotated(rng: np.random.Generator, angle: float | None = None):
    a = rng.uniform(0, np.pi) if angle is None else angle
    u = _XX * np.cos(a) + _YY * np.sin(a)   # (H, W) along the pattern
    v = -_XX * np.sin(a) + _YY * np.cos(a)  # (H, W) across it
    return u + rng.uniform(0, 50), v + rng.uniform(0, 50)


def _pattern(kind: str, rng: np.random.Generator, angle: float | None = None) -> np.ndarray:
    """A (H, W) mask in {0, 1}: 1 where the texture's foreground colour goes."""
    if kind == "plain":
        return np.zeros((SIZE, SIZE), np.float32)
    if kind == "striped":
        u, v = _rotated(rng, angle)
        period = rng.uniform(5.5, 9.0)
        wave = rng.uniform(0, 1.5) * np.sin(v / rng.uniform(6, 14))  # gently wavy, like a zebra's
        return (((u + wave) / period) % 1.0 < 0.5).astype(np.float32)
    if kind == "zigzag":
        u, v = _rotated(rng, angle)
        period, amp, wl = rng.uniform(6, 9), rng.uniform(2.5, 4.5), rng.uniform(6, 10)
        tri = np.abs((v / wl) % 1.0 - 0.5) * 2 * amp  # triangle wave across the stripes
        return (((u + tri) / period) % 1.0 < 0.5).astype(np.float32)
    if kind == "checkered":
        u, v = _rotated(rng, angle)
        p = rng.uniform(5, 8)
        return ((np.floor(u / p) + np.floor(v / p)) % 2).astype(np.float32)
    if kind == "dotted":
        spacing = rng.uniform(*DOT_SPACING)
        radius = rng.uniform(DOT_RADIUS[0], DOT_RADIUS[1]) * spacing
        u, v = _rotated(rng, angle)
        cu, cv = np.floor(u / spacing), np.floor(v / spacing)
        # jitter each cell's centre a little, seeded per cell index
        jit = np.sin(cu * 12.9898 + cv * 78.233) * 0.25 * spacing
        du = u - (cu + 0.5) * spacing - jit
        dv = v - (cv + 0.5) * spacing + jit
        return (du * du + dv * dv <= radius * radius).astype(np.float32)
    if kind == "bubbly":
        n = rng.integers(28, 40)
        cx, cy = rng.uniform(-4, SIZE + 4, (3, n, 1, 1))[:2]
        r = rng.uniform(3.0, 7.0, (n, 1, 1))
        return _rings(cx, cy, r, 1.4)  # rings, overlapping like foam
    raise ValueError(f"unknown texture {kind!r}; use one of {TEXTURES}")


_RING_REACH = 10  # pixels either side of a ring's centre that _rings computes: beyond radius + width (8.4)


def _rings(cx: np.ndarray, cy: np.ndarray, r: np.ndarray, width: float) -> np.ndarray:
    """(H, W) float32 mask, 1 where some ring ``|dist((x, y), (cx_i, cy_i)) - r_i| < width`` passes
    (``cx``, ``cy``, ``r`` ``(n, 1, 1)``, radii up to ``_RING_REACH - width - 1``). Each ring is computed in
    a window of +-``_RING_REACH`` pixels around its centre only, with the same arithmetic per pixel as over
    the whole frame (the squared distance as (x - cx)^2 + (y - cy)^2 in float64), so the mask is the
    same, bit for bit, at a tenth of the work."""
    if float(np.max(r)) + width + 1 > _RING_REACH:
        raise ValueError(f"ring radius {float(np.max(r)):.1f} + width {width} does not fit the window")
    offsets = np.arange(-_RING_REACH, _RING_REACH + 1)  # (w,)
    xs = np.floor(cx).astype(int) + offsets  # (n, 1, w) pixel columns around each centre
    ys = np.floor(cy).astype(int).reshape(-1, 1, 1) + offsets.reshape(1, -1, 1)  # (n, w, 1)
    d = np.sqrt((xs.astype(np.float32) - cx) ** 2 + (ys.astype(np.float32) - cy) ** 2)  # (n, w, w)
    ring = (np.abs(d - r) < width) & (xs >= 0) & (xs < SIZE) & (ys >= 0) & (ys < SIZE)
    n, y, x = np.nonzero(ring)
    mask = np.zeros((SIZE, SIZE), np.float32)
    mask[ys[n, y, 0], xs[n, 0, x]] = 1.0
    return mask


def texture(kind: str, rng: np.random.Generator, angle: float | None = None) -> np.ndarray:
    """A full (H, W, 3) float image in [0, 1] of one texture with a random colour pair."""
    check_choice(kind, "kind", TEXTURES)
    dark, light = _colour_pair(rng)
    if kind == "plain":
        base = _hsv(rng.random(), rng.uniform(0, 0.8), rng.uniform(0.15, 0.95))
        shade = 1.0 + 0.08 * (_YY / SIZE - 0.5)[..., None]
        return np.clip(base * shade, 0, 1)
    m = _pattern(kind, rng, angle)[..., None]  # (H, W, 1)
    return m * dark + (1 - m) * light


def _background(rng: np.random.Generator) -> np.ndarray:
    """A smooth random scene: two-colour vertical gradient plus low-frequency blotches."""
    top = _hsv(rng.random(), rng.uniform(0, 0.6), rng.uniform(0.35, 0.9))
    bottom = _hsv(rng.random(), rng.uniform(0, 0.6), rng.uniform(0.25, 0.8))
    t = (_YY / (SIZE - 1))[..., None]
    img = (1 - t) * top + t * bottom
    coarse = 0.05 * rng.standard_normal((5, 5, 3), dtype=np.float32)
    img = img + _bilinear(coarse)  # soft blotches
    return np.clip(img, 0, 1)


def _bilinear(grid: np.ndarray) -> np.ndarray:
    """Upsample a (g, g, 3) grid to (SIZE, SIZE, 3) by bilinear interpolation (two small matmuls)."""
    m = _interp_matrix(grid.shape[0])  # (SIZE, g)
    rows = np.tensordot(m, grid, axes=(1, 0))  # (SIZE, g, 3)
    return np.tensordot(rows, m, axes=(1, 1)).transpose(0, 2, 1)  # (SIZE, SIZE, 3)


@functools.lru_cache(maxsize=4)
def _interp_matrix(g: int) -> np.ndarray:
    """(SIZE, g) weights of linear interpolation from g knots to SIZE pixels."""
    pos = np.arange(SIZE, dtype=np.float32) * (g - 1) / (SIZE - 1)
    i = np.minimum(pos.astype(int), g - 2)
    w = pos - i
    m = np.zeros((SIZE, g), np.float32)
    m[np.arange(SIZE), i] = 1 - w
    m[np.arange(SIZE), i + 1] = w
    return m


# -- shapes ---------------------------------------------------------------------------------------------
def _ellipse(cx, cy, rx, ry, angle=0.0):
    c, s = np.cos(angle), np.sin(angle)
    dx, dy = _XX - cx, _YY - cy
    u, v = dx * c + dy * s, -dx * s + dy * c
    return (u / rx) ** 2 + (v / ry) ** 2 <= 1.0


def _segment(x0, y0, x1, y1, width):
    px, py = _XX - x0, _YY - y0
    dx, dy = x1 - x0, y1 - y0
    t = np.clip((px * dx + py * dy) / max(dx * dx + dy * dy, 1e-6), 0, 1)
    return (px - t * dx) ** 2 + (py - t * dy) ** 2 <= (width / 2) ** 2


def _shape(kind: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two (H, W) boolean masks: the textured part and the plain dark part (hooves, faces, poles)."""
    s = rng.uniform(1.05, 1.25)
    f = 1.0 if rng.random() < 0.5 else -1.0  # facing right or left
    cx, cy = rng.uniform(28, 36), rng.uniform(27, 33)
    none = np.zeros((SIZE, SIZE), bool)
    if kind in ("quadruped", "quadruped-dark"):
        body = _ellipse(cx, cy, 13 * s, 6.5 * s)
        legs = none.copy()
        for dx in (-9, -5, 5, 9):
            splay = rng.uniform(-1.5, 1.5)
            legs |= _segment(cx + f * dx * s, cy + 3 * s, cx + f * (dx + splay) * s, cy + 16 * s, 3.2 * s)
        neck = _segment(cx + f * 10 * s, cy - 2 * s, cx + f * 15 * s, cy - 11 * s, 5.5 * s)
        head = _ellipse(cx + f * 18 * s, cy - 11 * s, 5.5 * s, 3.0 * s, f * 0.5)
        tail = _segment(cx - f * 12.5 * s, cy - 2 * s, cx - f * 16 * s, cy + 7 * s, 1.8 * s)
        if kind == "quadruped-dark":  # the control world's zebra: dark legs and head, like its cat
            return (body | neck) & ~(legs | head), legs | head | tail
        return body | legs | neck | head, tail
    if kind == "cat":
        body = _ellipse(cx, cy + 2 * s, 14 * s, 5 * s)
        legs = none.copy()
        for dx in (-10, -6, 6, 10):
            legs |= _segment(cx + f * dx * s, cy + 4 * s, cx + f * dx * s, cy + 12 * s, 3.0 * s)
        head = _ellipse(cx + f * 16 * s, cy - 2 * s, 4.5 * s, 4.0 * s)
        tail = _segment(cx - f * 13 * s, cy, cx - f * 20 * s, cy - 9 * s, 2.2 * s)
        # dark legs and head: a part-shape cue (not a texture) that tells the control world's "leopard"
        # from its textured-legged "zebra" quadruped
        return (body | tail) & ~(legs | head), legs | head
    if kind == "sheep":
        wool = none.copy()
        for _ in range(7):
            wool |= _ellipse(cx + rng.uniform(-9, 9) * s, cy + rng.uniform(-5, 3) * s, 8.0 * s, 8.0 * s)
        face = _ellipse(cx + f * 17 * s, cy - 4 * s, 4.5 * s, 3.2 * s)
        legs = none.copy()
        for dx in (-7, -3, 3, 7):
            legs |= _segment(cx + f * dx * s, cy + 7 * s, cx + f * dx * s, cy + 17 * s, 2.2 * s)
        return wool & ~face, face | legs
    if kind == "flag":
        px = cx - f * 14 * s
        pole = _segment(px, cy - 20 * s, px, cy + 24 * s, 2.4)
        x0, x1 = sorted((px + f * 1.2, px + f * 28 * s))
        cloth = (_XX >= x0) & (_XX <= x1) & (_YY >= cy - 20 * s) & (_YY <= cy - 20 * s + 19 * s)
        cloth &= ~pole
        return cloth, pole
    raise ValueError(f"unknown shape {kind!r}")


def _finish(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return _finished(img, rng.standard_normal(img.shape, dtype=np.float32))


def _finished(img: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """Add the pixel noise (standard normal, at 0.02) and round to uint8."""
    return (np.clip(img + 0.02 * noise, 0, 1) * 255 + 0.5).astype(np.uint8)
