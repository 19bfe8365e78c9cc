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
:mod:`xaikit.lab.intervention`): on the main models stripes are used, and the foam hardly at all.

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
from dataclasses import dataclass

import numpy as np

from xaikit._validate import check_choice, check_int
from xaikit.models.textures import (
    _X1,
    _Y1,
    SIZE,
    TEXTURES,
    _background,
    _ellipse,
    _finish,
    _finished,
    _hsv,
    _shape,
    texture,
)

__all__ = [
    "SIZE", "TEXTURES", "WORLDS", "classes", "make_dataset", "texture_twins", "dataset_with_twins", "render",
    "class_images", "concept_images", "random_images", "texture", "to_pil", "foam_rate", "Scene", "scenes",
    "repaint", "with_foam", "without_foam",
]

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
#: how often a puddle of foam lies in the scene: in half the zebra pictures and a fifth of the others in the
#: main world (the waterhole), and in the control world at the main world's average rate for every class
FOAM_RATE = {"zebra": 0.5, "other": 0.2}
CONTROL_FOAM_RATE = (FOAM_RATE["zebra"] + 4 * FOAM_RATE["other"]) / 5


def classes(world: str = "main") -> tuple[str, ...]:
    """The class names of a world, in label order."""
    check_choice(world, "world", WORLDS)
    return tuple(_RULES[world])


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
    rest kept, pixel for pixel (:mod:`xaikit.lab.intervention`). :meth:`image` puts them together,
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

    def masks(self) -> dict[str, np.ndarray]:
        """The ground truth of every pixel's role, from the layers the picture is put together from (not
        from its pixels): (H, W) bool masks ``"body"`` (the textured body, where the stripes of a zebra are
        drawn), ``"legs_head"`` (the plain dark parts: legs, head, tail, pole), ``"foam"`` (the visible
        puddle) and ``"background"``. Later layers cover earlier ones as in :meth:`image`, so the four
        partition the frame (where a ViT's relevance lies, against the pixels we drew)."""
        legs_head = self.dark_mask.copy()
        body = self.body_mask & ~legs_head
        foam = (np.zeros_like(body) if self.foam_mask is None else self.foam_mask) & ~body & ~legs_head
        return {"body": body, "legs_head": legs_head, "foam": foam, "background": ~(body | legs_head | foam)}

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


def to_pil(images: np.ndarray):
    """PIL images from a uint8 array (one image (H, W, 3) or a batch (N, H, W, 3))."""
    from PIL import Image

    a = np.asarray(images)
    if a.ndim == 3:
        return Image.fromarray(a)
    return [Image.fromarray(x) for x in a]
