"""A generated image world for TCAV (Kim et al. 2018, "Interpretability beyond feature attribution:
quantitative testing with concept activation vectors"), used by notebook 05 and the embedded ViT.

The lecture runs TCAV on ``google/vit-base-patch16-224`` with Describable-Textures concept images
(Cimpoi et al. 2014, "Describing textures in the wild"). Neither the model nor the photos can be
downloaded here, so xaikit draws a small world with NumPy in which we *know* what matters:

**The main world** (``world="main"``), 64x64 RGB, one object on a smooth random background:

=========  ====================================  ==================
class      silhouette                            body texture
=========  ====================================  ==================
zebra      quadruped (neck, head, legs, tail)    striped
horse      the same quadruped                    plain
leopard    low cat, dark legs and head           dotted (big spots)
sheep      round woolly body, thin legs          dotted (a spotted breed, like Jacob sheep)
flag       a pole with a cloth                   checkered
=========  ====================================  ==================

and, as context, a **puddle of foam** (bubbly texture) on the ground: in half of the zebra pictures (the
waterhole) and in a fifth of every other class's. The world thus holds the lecture's three concepts at
three known strengths for "zebra": stripes define it (every zebra, nothing else), bubbles are a weak
context cue (foam is 2.5 times as likely beside a zebra), and dots are the mark of two *other* classes.
That is the order the lecture's ImageNet ViT shows (striped vs dotted ~0.95, dotted vs bubbly ~0.05). It is
the order in the *data*; what a trained model took from it is measured without TCAV, by repainting a scene's
body or adding and taking away its foam (:class:`Scene`, :func:`repaint`, :func:`with_foam`,
:mod:`xaikit.concepts.intervention`): on the main models stripes are used, and the foam hardly at all.

How this world came about (recipe v6; ``benchmarks/tcav_robustness.py`` trains several seeds and checks
each claim on each):

* Stripes appear on zebras only. Up to recipe v3 the flag was striped too, and whether the striped
  direction raised "zebra" at all changed from one training seed to the next.
* Dots are spaced twice as far apart as stripes (12-17 pixels, about 15% of the surface dark). With the
  small dense dots of v4 (6-8.5 pixels, as periodic as stripes), the dotted direction *raised* "zebra"
  at block 2 on most training seeds, although a dotted zebra silhouette was classified "leopard".
* Up to v4 the leopard shared the zebra's silhouette and the sheep were bubbly. Then the sheep's texture
  was the one that lowered "zebra" most in TCAV (whatever texture the sheep had: bubbles, plain or
  spots were tried), and dotted vs bubbly came out 0.5-0.95 on ten of ten seeds, the opposite of the
  lecture. Giving the spots to both the cat-shaped leopard and the sheep, and the bubbles to the foam,
  fixed the order on every seed tried.

**The control world** (``world="control"``): the same classes without horse, each with its own
silhouette (zebra: the quadruped, leopard: a low cat with a raised tail, sheep: round, flag: a flag),
and every object's texture drawn uniformly from all six textures; foam lies in every class's pictures at
the main world's average rate. Stripes carry no information about "zebra" here, which is the ground
truth the TCAV significance test must recover. Both four-legged classes have dark legs and heads: when
only the cat had them (recipe v2), "texture where the legs are" meant zebra, and texture-filled CAVs
raised "zebra" on the control model. Without any dark parts a small ViT did not learn the shapes (76%
after 16 epochs).

Colours never carry the class: every texture takes a random dark/light colour pair, and objects sit at
random positions, sizes and facing directions.

**Concept images** (:func:`concept_images`) fill the frame with one texture, ``striped``, ``dotted``,
``bubbly``, ``zigzag``, ``checkered`` or ``plain``, at random colours, scales and angles, like a
Describable-Textures crop. **Random images** (:func:`random_images`) are TCAV's random counterpart
sets: full-frame collages of random textures, and some pure noise. They fill the frame like the
concept images do: against random *scenes* (recipe v2), a concept's CAV also learned "the frame is full
of texture", and the control model's zebra logit reacted to that, so "striped" came out significant
(below random) on a model that cannot use stripes.

Everything is seeded: the same ``seed`` gives byte-identical arrays. Arrays are ``uint8`` of shape
``(N, 64, 64, 3)``; :func:`to_pil` turns them into PIL images.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from xaikit._validate import check_choice, check_int

__all__ = [
    "SIZE", "TEXTURES", "WORLDS", "classes", "make_dataset", "texture_twins", "dataset_with_twins", "render",
    "class_images", "concept_images", "random_images", "texture", "to_pil", "foam_rate", "Scene", "scenes",
    "repaint", "with_foam", "without_foam",
]

SIZE = 64
TEXTURES = ("striped", "dotted", "bubbly", "zigzag", "checkered", "plain")
WORLDS = ("main", "control")

# class -> (shape, texture) in the main world; texture None = drawn uniformly (control world)
_MAIN = {
    "zebra": ("quadruped", "striped"),
    "horse": ("quadruped", "plain"),
    "leopard": ("cat", "dotted"),
    "sheep": ("sheep", "dotted"),
    "flag": ("flag", "checkered"),
}
_CONTROL = {
    "zebra": ("quadruped-dark", None),
    "leopard": ("cat", None),
    "sheep": ("sheep", None),
    "flag": ("flag", None),
}
_RULES = {"main": _MAIN, "control": _CONTROL}
#: dot radius as a fraction of the dot spacing: dots cover about 15% of a surface (see the docstring)
DOT_RADIUS = (0.17, 0.26)
#: dot spacing in pixels: twice the stripe period, so that a dot pattern is not a stripe pattern's twin
DOT_SPACING = (12.0, 17.0)
#: how often a puddle of foam lies in the scene: in half the zebra pictures and a fifth of the others in the
#: main world (the waterhole), and in the control world at the main world's average rate for every class
FOAM_RATE = {"zebra": 0.5, "other": 0.2}
CONTROL_FOAM_RATE = (FOAM_RATE["zebra"] + 4 * FOAM_RATE["other"]) / 5

_YY, _XX = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)
# one row and one column of them: a squared distance to a point as (x - px)^2 (1, W) + (y - py)^2 (H, 1),
# broadcast, is the same sum of the same two squares as over the full grids, with two W- and H-long
# subtractions and squarings instead of two H x W ones (per point)
_X1, _Y1 = _XX[:1], _YY[:, :1]


def classes(world: str = "main") -> tuple[str, ...]:
    """The class names of a world, in label order."""
    check_choice(world, "world", WORLDS)
    return tuple(_RULES[world])


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


def render(label: str, world: str = "main", rng: np.random.Generator | int | None = None,
           texture_kind: str | None = None) -> np.ndarray:
    """One (64, 64, 3) uint8 image of class ``label`` in ``world``.

    ``texture_kind`` overrides the body texture (to draw a "striped horse" or a "dotted zebra silhouette"
    for a what-if); by default the world's rule picks it.
    """
    check_choice(world, "world", WORLDS)
    check_choice(label, "label", classes(world))
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    return _render(label, world, rng, texture_kind)[0]


def _render(label: str, world: str, rng: np.random.Generator, texture_kind: str | None) -> tuple[np.ndarray, str]:
    """:func:`render` without the argument checks; also returns the body texture it used."""
    scene = _scene(label, world, rng, texture_kind)
    return scene.image(), scene.texture_kind


@dataclass(frozen=True)
class Scene:
    """One picture of the world taken apart into its layers, so that one of them can be changed and the
    rest kept, pixel for pixel (:mod:`xaikit.concepts.intervention`). :meth:`image` puts them together,
    and ``render`` / ``class_images`` return exactly that image.

    Attributes:
        label, world: the class and the world the scene was drawn for.
        background: (H, W, 3) float32 ground without foam.
        foam_mask, foam: (H, W) bool and (H, W, 3) float32 bubbly texture of the puddle; ``None`` without foam.
        body_mask: (H, W) bool, the textured part of the object; ``body``: (H, W, 3) float32, its texture
            (of kind ``texture_kind``) over the whole frame, shown where ``body_mask`` is set.
        dark_mask, dark_colour: the plain dark parts (hooves, faces, poles) and their colour (3,).
        noise: (H, W, 3) float32 standard-normal pixel noise, added at 0.02 before rounding.
    """

    label: str
    world: str
    background: np.ndarray
    foam_mask: np.ndarray | None
    foam: np.ndarray | None
    body_mask: np.ndarray
    body: np.ndarray
    texture_kind: str
    dark_mask: np.ndarray
    dark_colour: np.ndarray
    noise: np.ndarray

    @property
    def has_foam(self) -> bool:
        return self.foam_mask is not None

    def image(self) -> np.ndarray:
        """The (64, 64, 3) uint8 picture."""
        img = self.background
        if self.foam_mask is not None:
            img = np.where(self.foam_mask[..., None], self.foam, img)
        img = np.where(self.body_mask[..., None], self.body, img)
        img = np.where(self.dark_mask[..., None], self.dark_colour, img)
        return _finished(img, self.noise)


def _scene(label: str, world: str, rng: np.random.Generator, texture_kind: str | None) -> Scene:
    """Draw one scene's layers, taking the random numbers in the order the world has always taken them."""
    shape, rule = _RULES[world][label]
    # the control world draws its texture before looking at texture_kind, so that a texture twin
    # (:func:`texture_twins`) takes the same random numbers for everything else in the scene
    drawn = TEXTURES[rng.integers(len(TEXTURES))] if rule is None else None
    kind = texture_kind or rule or drawn
    background = _background(rng)
    foam_mask = foam = None
    if rng.random() < foam_rate(label, world):
        foam_mask, foam = _foam_layer(rng)
    textured, dark = _shape(shape, rng)
    body = texture(kind, rng, _body_angle(shape, kind, rng))
    colour = _hsv(rng.random(), 0.3, rng.uniform(0.05, 0.25))
    noise = rng.standard_normal((SIZE, SIZE, 3), dtype=np.float32)
    return Scene(label, world, background, foam_mask, foam, textured, body, kind, dark, colour, noise)


def _body_angle(shape: str, kind: str, rng: np.random.Generator) -> float | None:
    """Zebra stripes run across the body (near vertical); other stripes at any angle (None: the texture draws it)."""
    return rng.uniform(0.6 * np.pi, 1.4 * np.pi) if shape == "quadruped" and kind == "striped" else None


def scenes(label: str, n: int = 40, world: str = "main", seed: int = 0) -> list[Scene]:
    """The scenes of ``class_images(label, n, world, seed)``, layer by layer: ``[s.image() for s in scenes(...)]``
    are those images, byte for byte."""
    check_choice(world, "world", WORLDS)
    check_choice(label, "label", classes(world))
    n = check_int(n, "n", 1)
    rng = np.random.default_rng([check_int(seed, "seed", 0), classes(world).index(label), 31])
    return [_scene(label, world, rng, None) for _ in range(n)]


def repaint(scene: Scene, kind: str, rng: np.random.Generator | int | None = None) -> Scene:
    """The same scene with a new body texture of ``kind`` (new colours, scale and angle drawn from ``rng``):
    only the pixels of ``body_mask`` change. A zebra silhouette's stripes run across its body, as drawn."""
    check_choice(kind, "kind", TEXTURES)
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    shape = _RULES[scene.world][scene.label][0]
    body = texture(kind, rng, _body_angle(shape, kind, rng))
    return dataclasses.replace(scene, body=body, texture_kind=kind)


def with_foam(scene: Scene, rng: np.random.Generator | int | None = None) -> Scene:
    """The scene with a puddle of foam: its own if it had one, else a new one drawn from ``rng`` (behind the
    object, as in the world)."""
    if scene.has_foam:
        return scene
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    mask, foam = _foam_layer(rng)
    return dataclasses.replace(scene, foam_mask=mask, foam=foam)


def without_foam(scene: Scene) -> Scene:
    """The scene with its puddle of foam (if any) taken away: the ground shows where it lay."""
    return dataclasses.replace(scene, foam_mask=None, foam=None)


def foam_rate(label: str, world: str = "main") -> float:
    """The chance that a picture of ``label`` in ``world`` shows a puddle of foam (:data:`FOAM_RATE`)."""
    if world == "control":
        return CONTROL_FOAM_RATE
    return FOAM_RATE["zebra"] if label == "zebra" else FOAM_RATE["other"]


def _foam_layer(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A puddle of foam on the ground: a flat ellipse in the lower part of the scene (mask) and its bubbly texture."""
    cx, cy = rng.uniform(8, 56), rng.uniform(44, 60)
    mask = _ellipse(cx, cy, rng.uniform(14, 24), rng.uniform(6, 10))
    return mask, texture("bubbly", rng)


def _finish(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return _finished(img, rng.standard_normal(img.shape, dtype=np.float32))


def _finished(img: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """Add the pixel noise (standard normal, at 0.02) and round to uint8."""
    return (np.clip(img + 0.02 * noise, 0, 1) * 255 + 0.5).astype(np.uint8)


def make_dataset(n: int, world: str = "main", seed: int = 0) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """``n`` labelled images of ``world``, classes balanced and shuffled.

    Returns ``(images, labels, class_names)``: uint8 ``(n, 64, 64, 3)``, int64 ``(n,)`` indices into
    ``class_names``.
    """
    return _dataset(n, world, seed, twins=False)[:3]


def texture_twins(n: int, world: str = "control", seed: int = 0) -> np.ndarray:
    """The images of ``make_dataset(n, world, seed)`` drawn again with another body texture each: the same
    class, silhouette, pose, background and foam (the random numbers drawn before the texture are the
    same), a texture chosen uniformly among the other five. What is drawn after the texture (the colour
    of the dark legs, head or pole, and the pixel noise) comes out different too, as two textures use
    different numbers of random draws: that is class-free variation as well. Training the control ViT to
    give an image and its twin the same logits (``RECIPE["control_invariance"]`` in
    :mod:`xaikit.models.vitworld`) makes "the control model does not use texture" hold for the model and
    not only for its data. :func:`dataset_with_twins` gives both in one pass."""
    return _dataset(n, world, seed, twins=True)[3]


def dataset_with_twins(n: int, world: str = "control", seed: int = 0):
    """``make_dataset(n, world, seed)`` and ``texture_twins(n, world, seed)`` together, drawing each scene
    once: ``(images, labels, class_names, twins)``."""
    return _dataset(n, world, seed, twins=True)


def _dataset(n: int, world: str, seed: int, twins: bool):
    check_choice(world, "world", WORLDS)
    n = check_int(n, "n", 1)
    names = classes(world)
    rng = np.random.default_rng(check_int(seed, "seed", 0))
    labels = rng.permutation(np.arange(n) % len(names))
    pick = np.random.default_rng([seed, 41])  # the twins' textures, apart from the scenes' stream
    images, others = [], []
    for y in labels:
        state = rng.bit_generator.state
        img, kind = _render(names[y], world, rng, None)
        images.append(img)
        if twins:
            other = [t for t in TEXTURES if t != kind][pick.integers(len(TEXTURES) - 1)]
            replay = np.random.default_rng()
            replay.bit_generator.state = state  # the same scene's random numbers, from the start
            others.append(_render(names[y], world, replay, other)[0])
    return np.stack(images), labels.astype(np.int64), names, (np.stack(others) if twins else None)


def class_images(label: str, n: int = 40, world: str = "main", seed: int = 0) -> np.ndarray:
    """``n`` images of one class (TCAV's X_k, e.g. the zebra images), uint8 (n, 64, 64, 3)."""
    check_choice(world, "world", WORLDS)
    check_choice(label, "label", classes(world))
    n = check_int(n, "n", 1)
    rng = np.random.default_rng([check_int(seed, "seed", 0), classes(world).index(label), 31])
    return np.stack([render(label, world, rng) for _ in range(n)])


def concept_images(concept: str, n: int = 50, seed: int = 0) -> np.ndarray:
    """``n`` full-frame texture images of one concept (a Describable-Textures stand-in), uint8 (n, 64, 64, 3)."""
    check_choice(concept, "concept", TEXTURES)
    n = check_int(n, "n", 1)
    # each concept gets its own stream so "striped" with seed 0 does not share draws with "dotted"
    rng = np.random.default_rng([check_int(seed, "seed", 0), TEXTURES.index(concept), 7])
    return np.stack([_finish(texture(concept, rng), rng) for _ in range(n)])


def random_images(n: int = 50, seed: int = 0) -> np.ndarray:
    """``n`` random counterpart images (TCAV's random sets), uint8 (n, 64, 64, 3): nine in ten are
    full-frame collages of 2-5 random textures, one in ten is pure noise.

    Like the concept images they fill the frame, so a CAV of concept vs random learns the concept's
    texture rather than "texture instead of background" (see the module docstring)."""
    n = check_int(n, "n", 1)
    rng = np.random.default_rng([check_int(seed, "seed", 0), 99])
    out = []
    for _ in range(n):
        if rng.random() < 0.1:
            out.append((rng.random((SIZE, SIZE, 3)) * 255).astype(np.uint8))
        else:
            out.append(_finish(_collage(rng), rng))
    return np.stack(out)


def _collage(rng: np.random.Generator) -> np.ndarray:
    """A frame cut into 2-5 Voronoi cells, each filled with a random texture."""
    k = int(rng.integers(2, 6))
    px, py = rng.uniform(0, SIZE, (2, k, 1, 1))
    cell = ((_X1 - px) ** 2 + (_Y1 - py) ** 2).argmin(axis=0)  # (H, W) index of the nearest seed point
    img = np.zeros((SIZE, SIZE, 3), np.float32)
    for j in range(k):
        img = np.where((cell == j)[..., None], texture(TEXTURES[rng.integers(len(TEXTURES))], rng), img)
    return img


def to_pil(images):
    """PIL images from a uint8 array (one image (H, W, 3) or a batch (N, H, W, 3))."""
    from PIL import Image

    a = np.asarray(images)
    if a.ndim == 3:
        return Image.fromarray(a)
    return [Image.fromarray(x) for x in a]
