# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 05 — TCAV on a Vision Transformer
#
# Does the idea "striped" make a Vision Transformer say "zebra"? Testing with Concept Activation Vectors
# (TCAV) answers with a number, and a significance test tells us whether to believe it. Every claim below
# that held for every training run of the embedded model is checked by `claim(...)` against the claims
# ledger (`xaikit/claims/nb05.py`: its bound and where the bound comes from); the lecture's results that
# did not hold are printed beside its numbers and discussed.
#
# 1. ViT recap: an image as a sequence of patches
# 2. Concepts: example images
# 3. Activations and CAVs
# 4. The ground truth by intervention; directional derivatives and the TCAV score
# 5. Significance against random concepts
# 6. A ground-truth control, random image sets as the yardstick, and TCAV held against the ground truth
# 7. TCAV by layer
# 8. Which images does a CAV point at? Sorting by a CAV, and relative CAVs
#
# References: Kim et al. (2018), *Interpretability beyond feature attribution: quantitative testing with
# concept activation vectors (TCAV)*; Dosovitskiy et al. (2021), *An image is worth 16x16 words*; Cimpoi et
# al. (2014), *Describing textures in the wild*; Davison & Hinkley (1997), *Bootstrap methods and their
# application* (Monte Carlo tests). The code lives in `xaikit.concepts.tcav`, `xaikit.models.imageworld` and
# `xaikit.widgets`.

# %%
# Instructors, before a lecture: uncomment the two lines below for presenter mode (bigger fonts and
# figures, fixed seeds, fast mode); xaikit.course.presenter.off() switches it back (README: "Presenter mode").
# import xaikit.course.presenter
# xaikit.course.presenter.on()

# %% cellView="form" jupyter={"source_hidden": true}
#@title Colab setup: on Google Colab this installs xaikit and builds its models; elsewhere it does nothing
import sys

if "google.colab" in sys.modules:
    import glob
    import importlib.util
    import os
    import subprocess

    found = importlib.util.find_spec("xaikit")
    if found is None or found.origin in (None, "namespace"):  # a clone named xaikit in /content is no install
        clones = [os.path.dirname(p) for p in sorted(glob.glob("/content/*/pyproject.toml"))
                  if 'name = "xaikit"' in open(p).read()]
        wheels = sorted(glob.glob("/content/xaikit-*.whl"))
        source = (os.environ.get("XAIKIT_SOURCE") or (wheels[-1] if wheels else None)
                  or (clones[0] if clones else None))
        if source is None:
            raise RuntimeError(
                "xaikit is not installed on this Colab runtime and no copy of it was found. Either upload "
                "its wheel (`pip wheel --no-deps .` in the repository) to /content, or clone the repository "
                "into /content, or set os.environ['XAIKIT_SOURCE'] to a pip requirement (e.g. "
                "'git+https://<host>/<owner>/xaikit.git'); then run this cell again.")
        loaded = sys.modules.get("ipywidgets")  # Colab ships ipywidgets 7; xaikit needs 8
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", source])
        importlib.invalidate_caches()
        from importlib.metadata import version

        if loaded is not None and getattr(loaded, "__version__", None) != version("ipywidgets"):
            raise RuntimeError(
                "xaikit is installed, and it upgraded ipywidgets, which this session had loaded already: restart "
                "the session (Runtime > Restart session), then run the notebook again from the top; this cell "
                "will then only build the models.")
    subprocess.check_call([sys.executable, "-m", "xaikit", "prepare"])
    from google.colab import output

    output.enable_custom_widget_manager()

# %%
import matplotlib.pyplot as plt
import numpy as np

import xaikit
from xaikit import pick, plotting
from xaikit.claims import claim
from xaikit.concepts import claims as tcav_claims
from xaikit.concepts import intervention, tcav
from xaikit.concepts import vit_relevance as vr
from xaikit.models import arch, load_vit, vitworld
from xaikit.models import imageworld as iw
from xaikit.widgets import (
    CAVSortPanel,
    ConceptGalleryPanel,
    LayerSweepPanel,
    PatchGridPanel,
    RelevancePanel,
    TCAVPanel,
)

xaikit.set_seed(0)

# %% [markdown]
# **Choose the model.** `"embedded"` is xaikit's offline ViT, trained on a generated image world whose
# classes include "zebra" (built by `python -m xaikit prepare`). Change the string to
# `"google/vit-base-patch16-224"` (the lecture's model, class "zebra"; needs a network) and everything
# below runs on it; the lecture looks at its layer 10.

# %%
MODEL = "embedded"
# what the lecture's model size costs: random-weight models of its shape, timed by benchmarks/lecture_scale.py
print(xaikit.models.lecture_costs("tcav_activations", "tcav_significance",
                                  "tcav_significance_next_kernel", "tcav_rank"))
model, processor = load_vit(MODEL)
# the block TCAV reads is chosen in section 3 by a rule fixed before any TCAV score (the lecture's ViT: block 10)
POOLING = "flatten"  # all tokens, as in the lecture's code
print(type(model).__name__, "|", arch.n_layers(model), "blocks |", len(model.config.id2label), "classes |",
      "on", model.device)

# %% [markdown]
# ## 1. ViT recap: an image as a sequence of patches
# *Lecture: XAI for transformers (seeds/002), lines 242-248.*
#
# A ViT cuts the image into $P \times P$ patches, embeds each patch linearly, prepends a learned [CLS]
# token, adds position embeddings and runs a transformer encoder. The classifier reads the [CLS] token of
# the last block. Our embedded model sees 64x64 images as an 8x8 grid of 8x8 patches: 65 tokens.

# %%
world_images, world_labels, world_names = iw.make_dataset(10, "main", seed=5)
grid = PatchGridPanel(world_images, patch_size=model.config.patch_size,
                      labels=[world_names[y] for y in world_labels])
grid.set(index=0)
side = world_images.shape[1] // model.config.patch_size  # patches per side of these 64x64 images
assert grid.result.n_tokens == side * side + 1
emb = arch.embeddings_module(model)
n_patches = (model.config.image_size // model.config.patch_size) ** 2  # at the model's own input size
assert tuple(emb.position_embeddings.shape) == (1, n_patches + 1, model.config.hidden_size)  # [CLS] + patches
grid

# %% slideshow={"slide_type": "subslide"}
xaikit.diagrams.vit_patches(world_images[0], patch_size=model.config.patch_size)

# %% [markdown]
# **Where tensors live.** The model sits on `xaikit.device()`: a GPU when there is one. Whatever you build
# for it (here the processor's pixel batch) goes to `model.device` first, and what you want to plot or
# turn into NumPy comes back with `.cpu()`. `xaikit.concepts.tcav` does both for you and returns NumPy arrays.

# %%
import torch

batch = processor(images=list(world_images[:4]), return_tensors="pt").to(model.device)
with torch.no_grad():
    probs = model(**batch).logits.softmax(-1).cpu()  # (4, classes), back on the CPU
predicted = [model.config.id2label[int(i)] for i in probs.argmax(-1)]
truth = [world_names[y] for y in world_labels[:4]]
print("predicted:", predicted, "| true:", truth)
if MODEL.startswith("embedded"):
    claim("05.1-first-four-correct", sum(p == t for p, t in zip(predicted, truth, strict=True)))

# %% [markdown]
# The image world (documented in `xaikit.models.imageworld`): zebras are striped quadrupeds and horses
# plain ones, with the same silhouette; leopards (a low cat) and sheep are spotted; flags are checkered.
# Half of the zebra pictures show a puddle of foam, as at a waterhole, against a fifth of every other
# class's. So in the *data* the three concepts of the lecture have known strengths for "zebra": **stripes**
# define it, **bubbles** are a weak context cue, and **dots** are the mark of two other classes. What a
# trained *model* took from the data is another question: section 4 answers it by intervention (repaint
# the zebras, add or take away the foam, measure the logit) before any TCAV score is computed.

# %%
x_test, y_test, _ = iw.make_dataset(pick(200, 100), "main", seed=123)
if MODEL.startswith("embedded"):
    from xaikit.models.vitworld import accuracy

    acc = accuracy(model, x_test, y_test)
    print(f"held-out accuracy: {acc:.3f}")
    # printed, not asserted: 0.995 on the seed-0 build, 0.84-0.995 over training seeds 0-4 (`prepare --seed N`):
    # seed 4's main ViT reached only 0.84, and its TCAV pairs missed the lecture's verdict too (section 4)
    claim("05.1-held-out-accuracy", acc)

# %% [markdown]
# ## 2. Concepts: example images
# *Lecture: XAI for transformers (seeds/002), lines 538-541, 555-559.*
#
# A concept is a set of example images. The lecture takes texture photos from the Describable Textures
# Dataset; xaikit draws textures of the same kinds, at random colours, scales and angles, so that colour
# says nothing. TCAV also needs *random* sets: images with no particular concept. Ours are collages of
# random textures that fill the frame as the concept images do (section 6 says why that matters).

# %%
N = 50
concepts = {c: iw.concept_images(c, N, seed=0) for c in ("striped", "dotted", "bubbly", "zigzag", "checkered")}
zebras = iw.class_images("zebra", tcav_claims.N_CLASS_IMAGES, "main", seed=0)  # 100
gallery = ConceptGalleryPanel(concepts)
gallery.set(concept="striped")
assert gallery.result.images.shape[0] == 8
gallery

# %% [markdown]
# ## 3. Activations and CAVs
# *Lecture: XAI for transformers (seeds/002), lines 524-527, 542-548.*
#
# At layer $l$ the activations $a_l(x)$ of the concept images and of counterpart images are separated by
# a linear classifier. The **CAV** $v_C$ is the unit normal of its decision boundary, pointing towards the
# concept. First check that the classifier separates the sets on held-out images: a CAV with chance
# accuracy means nothing.
#
# **Which block?** The rule, fixed before any TCAV score is computed: the deepest block whose every token
# still reaches the classifier (not the last: after it only [CLS] is read, the lecture's layer 10 of
# ViT-base's 0-11 is such a block too) at which the striped-vs-dotted CAV reaches a held-out accuracy of
# 0.9 (the bound this section asserts for a CAV to mean something). The cell applies it to whatever model
# is loaded, so each training seed gets its own answer, and prints every block's CAV accuracies beside it.
# Read those accuracies: where every block reaches 0.9, the accuracy clause does not bind and the rule
# comes down to its first clause, the lecture's depth, which the architecture fixes. That is not a check
# of TCAV's outcome, but it is not independent of this notebook's history either (section 7 says why).
# Section 7 shows TCAV at every block.

# %%
n_blocks = arch.n_layers(model)
a_by_block = {c: [tcav.activations(model, concepts[c], b, POOLING, processor) for b in range(n_blocks)]
              for c in ("striped", "dotted", "bubbly")}  # one forward pass per set gives every block
block_acc = {(p, q): [tcav.train_cav(a_by_block[p][b], a_by_block[q][b]).accuracy for b in range(n_blocks)]
             for p, q in (("striped", "dotted"), ("striped", "bubbly"), ("dotted", "bubbly"))}
LAYER = tcav.choose_layer(block_acc[("striped", "dotted")], threshold=0.9)
if LAYER is None:  # no candidate block separates stripes from dots: fall back on the lecture's depth
    LAYER = n_blocks - 2
for (p, q), acc in block_acc.items():
    print(f"CAV {p} vs {q}, held-out accuracy by block:", "  ".join(f"{b}: {a:.2f}" for b, a in enumerate(acc)))
print(f"chosen block: {LAYER} of 0-{n_blocks - 1}")
if MODEL.startswith("embedded"):
    claim("05.3-chosen-block", LAYER)

# %%
a_striped = tcav.activations(model, concepts["striped"], LAYER, POOLING, processor)
a_dotted = tcav.activations(model, concepts["dotted"], LAYER, POOLING, processor)
print("activations:", a_striped.shape)
cav = tcav.train_cav(a_striped, a_dotted, "logistic", concept="striped", negative="dotted", layer=LAYER,
                     pooling=POOLING)
print(f"CAV striped vs dotted: held-out accuracy {cav.accuracy:.2f}")
claim("05.3-cav-accuracy", cav.accuracy)
# the same two sets, another linear classifier (hinge loss by SGD, the original TCAV code's): another direction
cav_hinge = tcav.train_cav(a_striped, a_dotted, "hinge", concept="striped", negative="dotted", layer=LAYER,
                           pooling=POOLING)
cos_lh = float(cav.vector @ cav_hinge.vector)  # both unit vectors
print(f"{a_striped.shape[1]} dimensions, {len(a_striped)} + {len(a_dotted)} images: logistic and hinge CAVs have "
      f"cosine {cos_lh:.2f} (held-out accuracy {cav.accuracy:.2f} and {cav_hinge.accuracy:.2f})")
claim("05.3-cav-cosine-logistic-hinge", cos_lh)

# %% slideshow={"slide_type": "subslide"}
xaikit.diagrams.cav_diagram()  # a CAV and the directional derivative, sketched in two dimensions

# %% [markdown]
# **A CAV is one of many separating directions.** Each image here is a point in the dimensions printed above
# (65 tokens x 96 numbers), and the classifier trains on 75 of the 100 images. In so many dimensions a
# great many hyperplanes separate 75 points; the classifier's regulariser picks one (ours: L2-regularised
# logistic regression, whose optimum lies in the span of the training images; the hinge loss by SGD picks
# another). The cosine above says how far apart two reasonable choices land, and a TCAV score is a
# property of the CAV, so of the regulariser too. One more reason to repeat the experiment and test it
# (section 5), and not to read a single CAV's direction as *the* concept.

# %% [markdown] nbgrader={"grade": false, "grade_id": "my_cav-task", "locked": true, "schema_version": 3, "solution": false}
# **Exercise.** Write a CAV yourself: fit a linear classifier that tells the concept activations (label 1)
# from the counterpart activations (label 0), and return the unit normal of its boundary, pointing towards
# the concept.

# %% nbgrader={"grade": false, "grade_id": "my_cav", "locked": false, "schema_version": 3, "solution": true}
@xaikit.exercise(xaikit.check_cav)  # a stub or a failed check: later calls use xaikit's reference
def my_cav(concept_acts, negative_acts):
    ### BEGIN SOLUTION
    from sklearn.linear_model import LogisticRegression

    X = np.concatenate([concept_acts, negative_acts])
    y = np.r_[np.ones(len(concept_acts)), np.zeros(len(negative_acts))]
    w = LogisticRegression(max_iter=1000).fit(X, y).coef_[0]
    return w / np.linalg.norm(w)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "my_cav-check", "locked": true, "points": 1, "schema_version": 3, "solution": false}
assert xaikit.check_cav(my_cav), "see the report above: which image, which mistake"
### BEGIN HIDDEN TESTS
assert xaikit.check_cav(my_cav, verbose=False).passed, "graded: my_cav must be written and pass every case"
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade": false, "grade_id": "my_tcav_score-task", "locked": true, "schema_version": 3, "solution": false}
# **Exercise.** Write the TCAV score yourself: given the gradients `grads` (N, D) of the class logit at
# the layer and a CAV (D,), return the fraction of images whose directional derivative is positive.

# %% nbgrader={"grade": false, "grade_id": "my_tcav_score", "locked": false, "schema_version": 3, "solution": true}
@xaikit.exercise(xaikit.check_tcav_score)  # a stub or a failed check: later calls use xaikit's reference
def my_tcav_score(grads, cav):
    ### BEGIN SOLUTION
    return float(np.mean(grads @ cav > 0))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "my_tcav_score-check", "locked": true, "points": 1, "schema_version": 3, "solution": false}
assert xaikit.check_tcav_score(my_tcav_score), "see the report above: which image, which mistake"
### BEGIN HIDDEN TESTS
assert xaikit.check_tcav_score(my_tcav_score, verbose=False).passed, "graded: my_tcav_score must be written and pass every case"
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Directional derivatives and the TCAV score
# *Lecture: XAI for transformers (seeds/002), lines 528-529, 549-560.*
#
# For an image $x$ of class $k$, the directional derivative
# $S_{C,k,l}(x) = \nabla h_{l,k}(a_l(x)) \cdot v_C$ says whether nudging the activations towards the
# concept raises the class logit. The TCAV score is the fraction of class images with $S > 0$. The
# lecture's four pairs for zebra: striped vs dotted ~0.95, bubbly vs striped ~0.1, dotted vs bubbly
# ~0.05, striped vs bubbly ~0.95. Those are the lecture's numbers for an ImageNet ViT-base and texture
# photos; ours are a small ViT in a generated world, printed beside them, not expected to match.
#
# ### First, the ground truth: what does each model use?
#
# Before any TCAV score, ask the models directly. `iw.scenes` gives the 100 zebras TCAV will score (the
# same pictures as `zebras`) taken apart into layers: ground, foam, body texture, dark parts, pixel noise.
# `intervention.intervene` repaints each zebra's body with a new texture of each kind (new colours, scale
# and angle; "striped" means other stripes), and shows each scene with and without a puddle of foam
# (its own, or a new one where it had none), every other pixel kept. It measures the zebra logit and
# probability on the main model and, on the control world's zebras, on the control model of section 6
# (trained so that texture cannot tell its classes apart). This follows Kim et al. (2018, section 4.3),
# who checked TCAV on images whose label they controlled (a caption printed on the image that named the
# right class more or less often) and so knew what the model had to be using.

# %%
control, control_processor = load_vit("embedded-control")  # section 6's control model
if MODEL.startswith("embedded"):
    scenes = iw.scenes("zebra", tcav_claims.N_CLASS_IMAGES, "main", seed=0)
    assert np.array_equal(np.stack([sc.image() for sc in scenes]), zebras)  # exact: the same uint8 pictures
    control_scenes = iw.scenes("zebra", tcav_claims.N_CLASS_IMAGES, "control", seed=0)
    truth = {"main": intervention.intervene(model, scenes, target="zebra", processor=processor),
             "control": intervention.intervene(control, control_scenes, target="zebra",
                                               processor=control_processor)}
    print("zebra probability (mean over 100 zebras) and the zebra logit's change from the picture as drawn")
    print(f"{'variant':>12} | {'main p':>7} {'logit':>6} | {'control p':>9} {'logit':>6}")
    for v in truth["main"].logits:
        m, c = truth["main"], truth["control"]
        print(f"{v:>12} | {m.probs[v].mean():7.3f} {m.effect(v, 'original'):+6.2f} | "
              f"{c.probs[v].mean():9.3f} {c.effect(v, 'original'):+6.2f}")
    print("\neffect on the zebra logit of each body texture against the average of the six, and of the foam:")
    for name, t in truth.items():
        print(f"  {name:>7}: " + "  ".join(f"{k} {t.texture_effect(k):+.2f}" for k in iw.TEXTURES)
              + f"  | foam {t.foam_effect():+.2f}")
    claim("05.4-iv-striped-main", truth["main"].texture_effect("striped"))
    claim("05.4-iv-dotted-main", -truth["main"].texture_effect("dotted"))
    claim("05.4-iv-bubbly-main", truth["main"].texture_effect("bubbly"))
    claim("05.4-iv-foam-main", abs(truth["main"].foam_effect()))
    claim("05.4-iv-texture-control", max(abs(truth["control"].texture_effect(k)) for k in iw.TEXTURES))
    claim("05.4-iv-foam-control", truth["control"].foam_effect())

# %% [markdown]
# This table is what each model uses; TCAV will be checked against it (end of section 6). On the main
# model, stripes (and the stripe-like zigzag) keep a zebra a zebra and a plain or dotted body loses it: the
# stripes are *used*, and a dotted body lowers the zebra logit most. The foam is hardly used:
# half the zebras stood beside a puddle in training, yet adding or removing it moves the zebra logit by
# a small fraction of what the texture does. The control model's logit moves by a few hundredths whatever
# texture the zebra wears; foam moves it a little more (foam lies beside every control class equally
# often, so it cannot help to tell them apart).
#
# Over the seven builds of the claims matrix (training seeds 0-4, and seeds 0-1 with AVX2 kernels), stripes
# raised the main model's zebra logit by 1.8-3.4 over the average texture, dots lowered it by 2.0-4.2, a
# bubbly body lowered it by 0.15-0.95, and foam moved it by at most 0.16; on the control no texture moved
# it by more than 0.06, and foam lowered it by 0.04-0.19. Asserted: stripes >= +1 and dots <= -1 against
# the average texture, |foam| <= 0.5 on the main model, and every texture within 0.5 on the control.

# %%
pairs = tcav.pair_scores(model, concepts, zebras, target="zebra", layer=LAYER, pooling=POOLING,
                         processor=processor)
for (a, b), score in pairs.items():
    print(f"TCAV({a} vs {b}, zebra) = {score:.2f}   (lecture ~{tcav.LECTURE_PAIRS[(a, b)]})")
if MODEL.startswith("embedded"):
    # all four are printed, not asserted: on training seeds 3 and 4 they missed the lecture's verdict (below)
    claim("05.4-striped-vs-dotted", pairs[("striped", "dotted")])
    claim("05.4-bubbly-vs-striped", pairs[("bubbly", "striped")])
    claim("05.4-dotted-vs-bubbly", pairs[("dotted", "bubbly")])
    claim("05.4-striped-vs-bubbly", pairs[("striped", "bubbly")])

# %% [markdown]
# > **Pause here.** The lecture asks: "Do these make sense for zebra classification?"
# > (XAI for transformers, seeds/002, line 560)

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-1", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# On the lecture's ImageNet model they look sensible: stripes push "zebra" up against both other
# textures, and the pairs without stripes score low. But "makes sense" is judged against what one
# expects, and here we can do better: section 4's intervention table says what this model uses. Compare
# each pair with it, not with the lecture's numbers. A high relative score "A vs B" can come from A
# raising the class or from B lowering it (section 8 separates the two), and the four pairs printed above
# move with the training seed (the ledger's range is printed with each), so a single build's numbers
# agreeing with the lecture would prove little on their own.
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# **What holds for every training run.** A result that one training run gives and the next does not is
# not a result. `benchmarks/tcav_robustness.py` trains this recipe with training seeds 0-4 (same data
# recipe, new initialisation and batch order) and scores each pair of models with image sets drawn fresh
# for that seed. At block 2 with all tokens flattened, 100 zebras per score. Seeds 0-4 were trained while
# the world was being designed; seeds 5-9 only after it was fixed, as a check:
#
# | claim (zebra) | lecture | seeds 0-4 | seeds 5-9 | another machine | asserted here |
# | --- | --- | --- | --- | --- | --- |
# | striped vs dotted | ~0.95 | 0.92-1.00 | 0.95-0.99 | 0.87-1.00 | no: shown (was >= 0.8) |
# | bubbly vs striped | ~0.1 | 0.00-0.17 | 0.00-0.15 | 0.01-0.17 | no: shown (was <= 0.25) |
# | dotted vs bubbly | ~0.05 | 0.06-0.25 | 0.02-0.19 | 0.00-0.31 | no: shown (was <= 0.25) |
# | striped vs bubbly | ~0.95 | 0.83-1.00 | 0.85-1.00 | 0.83-0.99 | no: shown (was >= 0.8) |
#
# (One image draw per seed in the first two columns; the draw in this notebook is another one. "Another
# machine": seeds 1-4 trained there with its default CPU kernels and seeds 0-2 with the AVX2 ones, three
# draws each. The same seed trained with other kernels is another model: seed 2 gave dotted vs bubbly
# 0.30 and 0.31 on two draws with the default kernels and at most 0.09 with AVX2. Our bound for "low" was
# 0.25, as for bubbly vs striped; seed 2 broke it, and a bound raised to fit the builds seen says nothing,
# so that pair is printed beside the lecture's ~0.05, not asserted: it stayed below 0.5, zebra siding with
# bubbly, on every build we measured, but not always "low". The margins are thin in places: on one extra
# draw seed 3's striped vs bubbly was 0.79.)
#
# The claims matrix (`benchmarks/claims_matrix.py`, the models as `python -m xaikit prepare --seed N` builds
# them) then broke the other three. Over training seeds 0-4: striped vs dotted 0.56-0.96, bubbly vs striped
# 0.04-0.35, dotted vs bubbly 0.04-0.48, striped vs bubbly 0.65-0.96. Seeds 0-2 agreed with the lecture
# (seed 0: 0.96, 0.04, 0.04, 0.96); seeds 3 and 4 missed all three old bounds (seed 3: striped vs dotted
# 0.56, bubbly vs striped 0.35, striped vs bubbly 0.65).
# Seed 4's main ViT had reached only 0.84 held-out accuracy, but seed 3's reached 0.97. So all four pairs
# are printed beside the lecture's numbers, not asserted: an explanation's verdict can flip with the training
# seed, which is why we measure over builds.
#
# It took a world built for it. In
# the previous recipe the leopard shared the zebra's silhouette with small, dense spots, and the sheep
# were bubbly: there "dotted vs bubbly" came out 0.50-0.95 on ten of ten seeds, the *opposite* of the
# lecture, although a spotted zebra silhouette was classified "leopard". Two things mattered. Spots as
# dense as stripes looked like stripes to the zebra direction at block 2. And whichever texture the sheep
# wore, the sheep's texture was the one that lowered "zebra" most. A relative CAV says how *this* model's
# zebra logit treats the difference between two concept sets, and another model, trained on other
# images, can order two textures the other way. That history is a warning as well: this world was
# redesigned, and its control recipe too, after TCAV had given answers we did not expect, so agreement
# between TCAV and the world's design is partly built in. The check that does not depend on TCAV is the
# intervention table above; section 6 ends by holding TCAV's verdicts against it.
#
# Swapping the two sets flips the CAV, so the score becomes one minus itself (up to images with
# $S = 0$ exactly):

# %%
one = tcav.tcav(model, concepts["striped"], concepts["dotted"], zebras, target="zebra", layer=LAYER,
                pooling=POOLING, processor=processor)
other = tcav.tcav(model, concepts["dotted"], concepts["striped"], zebras, target="zebra", layer=LAYER,
                  pooling=POOLING, processor=processor)
print(f"{one.score:.2f} + {other.score:.2f} = {one.score + other.score:.2f}")
claim("05.4-swap-count", abs(one.score + other.score - 1))

# %% [markdown]
# **Counting signs, or weighing them.** The score above counts the class images whose logit rises along
# the CAV, however little. Kim et al. (2018, section 3.4) only remark that a metric using the *magnitude* of
# the derivatives could be used as well (they do not compare the two); Captum's TCAV implements one,
# $\mathrm{TCAV}^{mag} = \sum_{x: S(x) > 0} S(x) \,/\, \sum_x |S(x)|$, which weighs each image by how
# strongly it is pushed. It lies in [0, 1] too, and swapping the two sets turns it into one minus itself
# *exactly*, since every $S$ changes sign. Where the two differ, a few images are pushed the other way
# but only weakly (magnitude beyond the count), or strongly (magnitude short of it).

# %%
gap = 0.0  # the largest difference between the magnitude score and Captum's formula by hand
for a, b in tcav_claims.CLAIM_PAIRS:
    r = tcav.tcav(model, concepts[a], concepts[b], zebras, target="zebra", layer=LAYER, pooling=POOLING,
                  processor=processor)
    derivs = r.derivatives  # (class images,) S(x)
    by_hand = derivs[derivs > 0].sum() / np.abs(derivs).sum()  # Captum's magnitude score
    gap = max(gap, abs(r.magnitude - by_hand))
    print(f"TCAV({a} vs {b}, zebra): count {r.score:.2f}, magnitude {r.magnitude:.2f}")
claim("05.4-magnitude-by-hand", gap)
claim("05.4-swap-magnitude", abs(one.magnitude + other.magnitude - 1))  # swapped sets: one minus the other
if MODEL.startswith("embedded"):
    # printed, not asserted (was >= 0.9): 1.00 on the seed-0 build, 0.815-0.997 over training seeds 0-4 (seed 3:
    # 0.815). It stayed above the count on every build: the zebras that stripes push down, they push down weakly
    striped_bubbly = tcav.tcav(model, concepts["striped"], concepts["bubbly"], zebras, target="zebra",
                               layer=LAYER, pooling=POOLING, processor=processor)
    claim("05.4-striped-bubbly-magnitude", striped_bubbly.magnitude)

# %% [markdown]
# ## 5. Significance against random concepts
# *Beyond the lectures: Kim et al., Interpretability beyond feature attribution (TCAV), 2018.*
#
# A single score can be luck: a CAV trained on two sets of *random* images also gets some score. TCAV
# repeats the experiment with R random counterpart sets, compares the concept's R scores with R scores
# of random-vs-random CAVs by a two-sided t-test, and corrects the p-values for the number of concepts
# tested (Bonferroni). Grey hatched bars are not significant.
#
# This follows the original TCAV code more than the paper's wording: Kim et al. (2018, section 3.5) test
# against the null hypothesis "score = 0.5" over about 500 runs; the reference code compares with the
# scores of random-vs-random CAVs instead, because random directions themselves rarely score 0.5 (the
# answer box below). xaikit differs from that code in one more way: the reference code pits one fixed
# random set against the others, xaikit draws a new pair of random sets for every baseline run (see
# `xaikit.concepts.significance`), and it corrects by the number of concepts tested. R = 10 keeps the notebook quick; over training seeds 0-9,
# "striped" was significant on every main model (corrected p from 1e-8 to 0.0022, mean score 0.84-0.99
# against 0.36-0.55 for random CAVs, with the CAV seeds of this cell; section 6's table, which draws
# other CAV seeds per training seed, has 0.82-1.00). The claims matrix's builds gave less: a mean of 0.98
# on seed 0 but 0.69-0.98 over training seeds 0-4 (seed 3: 0.69, seed 4: 0.75), so the mean is printed, not
# asserted; that it lies above the random CAVs held on every build, and is asserted. Its significance by
# this t-test is printed, not asserted: section 6 shows the t-test calling random concepts significant far
# more often than its nominal rate, so a "significant" from it is weak evidence.
# "dotted" scored *below* random on every main model (mean 0.03-0.28; significant on nine of ten), as the mark of two other classes should; the
# test is two-sided, so that counts as significant too, and the cell asserts the direction. Do not read
# "bubbly" as the foam, though: section 4's intervention says the main model hardly uses the foam, and the
# end of section 6 holds this score against that; its CAV also barely separates bubbles from random
# collages. The summary prints each CAV's held-out accuracy against random sets:
# low for striped and bubbly, because the random collages contain stripes and bubbles in some of their
# cells (and one image in ten is pure noise), higher for the sparse spots.

# %%
R = 10
randoms = [iw.random_images(N, seed=i) for i in range(2 * R + 1)]  # enough for the panel's R slider up to 20
tested = {c: concepts[c] for c in tcav_claims.CLAIM_CONCEPTS}  # striped, dotted, bubbly
sig = tcav.tcav_significance(model, tested, zebras, target="zebra", layer=LAYER, random_sets=randoms[:R + 1],
                             R=R, pooling=POOLING, processor=processor)
print(sig.summary())
if MODEL.startswith("embedded"):
    # the mean and the t-test's p are printed; the mean above the random CAVs (the control): asserted
    claim("05.5-striped-vs-random", sig["striped"].mean)
    claim("05.5-striped-above-random-cavs", sig["striped"].mean - sig.random_scores.mean())
    claim("05.5-striped-significant", sig["striped"].p_corrected)
    # spots lower "zebra": dotted vs random lies below the random CAVs by at least 0.1
    claim("05.5-dotted-below-random-cavs", sig.random_scores.mean() - sig["dotted"].mean)
    print("striped significant for zebra:", sig["striped"].significant)

# %%
panel = TCAVPanel(model, processor, concept_sets=concepts, class_images={"zebra": zebras}, layer=LAYER,
                  pooling=POOLING, R=R, random_sets=randoms)
panel.set(R=R)
assert panel.error is None
assert np.isclose(panel.result["striped"].p_corrected, sig["striped"].p_corrected, rtol=1e-6, atol=0)
panel

# %% [markdown]
# Move the **R** slider (it offers as many runs as there are random sets, 20 here): with R = 2 the t-test
# has two scores a side to go on, so one odd random set can swing the p-value. More runs do *not* narrow
# the spread of the scores: their standard deviation estimates how much a score varies from one random
# counterpart set to the next, which does not depend on R. What shrinks is the *standard error* of the
# mean, the spread over $\sqrt{R}$, and the t-test divides by it. Since every run shares the same 50
# concept images, whatever those images carry (the concept, or anything else they happen to share) shifts
# all R scores alike; for any fixed offset from the random CAVs, however small, p goes to 0 as R grows.
# A tiny p from many runs says the offset is not run-to-run noise, not that the concept matters. Section
# 6 asks the question that R cannot answer: would another image set, chosen at random, be offset as much?

# %%
sd = sig["striped"].std
print(f"striped, R = {R}: spread of the scores (standard deviation) {sd:.3f}, standard error of their mean "
      f"{sd / np.sqrt(R):.3f}")

# %% [markdown]
# ## 6. A ground-truth control, and random image sets as the yardstick
# *Beyond the lectures: Kim et al., TCAV, 2018; Davison & Hinkley, Bootstrap methods and their application, 1997.*
#
# Does a significant TCAV score really mean the model uses the concept? xaikit trained a second ViT,
# same architecture, on a **control world** with four classes, each with its own silhouette: zebra (the
# quadruped, dark legs and head), leopard (a low cat with a raised tail, dark legs and head), sheep and
# flag. Every class, zebra included, takes its texture uniformly at random from all six, so zebras are told
# apart by shape alone, and foam lies beside every class equally often. Stripes cannot help that model.
# To make that hold for the model and not only for its data, it was also trained on a **texture twin** of
# every picture (the same scene with another body texture, `iw.texture_twins`) and paid for any
# difference between the two logit vectors, and between the two [CLS] tokens after every block. The cell
# checks the result on pictures it never saw (section 4's intervention table did the same by repainting
# zebras). Such a control is Kim et al.'s own check (2018, section 4.3): they trained models on images
# with a caption whose agreement with the label they set, so that they knew whether a model read the
# caption or the object, and asked whether TCAV said the same. If TCAV measured *use*, TCAV("striped", zebra) would lose
# its significance there.

# %%
# the control is the embedded world's (loaded in section 4), read at the main model's block; with another
# main model (the lecture's ViT, deeper than the control) the section 3 rule picks the control's own block
if MODEL.startswith("embedded"):
    CONTROL_LAYER = LAYER
else:
    control_acc_by_block = [
        tcav.train_cav(*(tcav.activations(control, concepts[c], b, POOLING, control_processor)
                         for c in ("striped", "dotted"))).accuracy for b in range(arch.n_layers(control))]
    CONTROL_LAYER = tcav.choose_layer(control_acc_by_block, threshold=0.9)
    if CONTROL_LAYER is None:
        CONTROL_LAYER = arch.n_layers(control) - 2
    print(f"control's block by the section 3 rule: {CONTROL_LAYER}")
# the control model must have learned its world, or the check means nothing
# held-out pictures and their texture twins (the same scenes with another body texture), drawn in one pass
xc_test, yc_test, _, twins = iw.dataset_with_twins(pick(200, 100), "control", seed=123)
control_acc = vitworld.accuracy(control, xc_test, yc_test)
print(f"control model held-out accuracy: {control_acc:.3f}")
claim("05.6-control-accuracy", control_acc)  # seeds 0-4 of the recipe: 0.94-0.96
# the ground truth, checked without TCAV: give every held-out picture another body texture
with torch.no_grad():
    z_pic = control(**control_processor(images=list(xc_test), return_tensors="pt").to(control.device)).logits.cpu()
    z_twin = control(**control_processor(images=list(twins), return_tensors="pt").to(control.device)).logits.cpu()
same = (z_pic.argmax(-1) == z_twin.argmax(-1)).float().mean().item()
change = (z_pic[:, 0] - z_twin[:, 0]).abs().mean().item()
print(f"another texture keeps the control's answer for {same:.0%} of pictures; the zebra logit moves by "
      f"{change:.2f} on average (its spread over pictures: {z_pic[:, 0].std().item():.2f})")
claim("05.6-twin-same-answer", same)  # seeds 0-4: 0.95-0.98 of 200 pictures
control_zebras = iw.class_images("zebra", tcav_claims.N_CLASS_IMAGES, "control", seed=0)
# the same test as on the main model: the same three concepts, random sets and Bonferroni correction
sig_control = tcav.tcav_significance(control, tested, control_zebras, target="zebra", layer=CONTROL_LAYER,
                                     random_sets=randoms[:R + 1], R=R, pooling=POOLING, processor=control_processor)
print(sig_control.summary())
striped_c = sig_control["striped"]
print(f"striped for zebra on the control: mean {striped_c.mean:.2f} vs random CAVs "
      f"{sig_control.random_scores.mean():.2f}, p = {striped_c.p_corrected:.2g} "
      f"({'not ' if not striped_c.significant else ''}significant)")
# no assert on the t-test's verdict here: over training seeds it was not stable (see below); stripes were more
# significant on the main model than here on every build of the claims matrix, but by as little as 0.007 in p
# (seed 2), so that difference is printed too
claim("05.6-ttest-control-striped", striped_c.p_corrected)
claim("05.6-striped-p-main-below-control", sig["striped"].p_value - striped_c.p_value)

# %% [markdown]
# ### Is the t-test fair? Random image sets posing as concepts
#
# The t-test treats the concept's R scores as R independent draws. They are not: every run trains on
# the *same* 50 striped images, and only the random counterpart changes. Whatever those 50 images share
# besides stripes (their colours, contrast, the stripe widths we happened to draw) moves all R scores
# the same way, and the t-test, which sees only how much they vary from run to run, takes that shared
# shift for a signal. So ask a sharper question: **would a random image set, posing as a concept and put
# through exactly the same R runs, land as far from the random CAVs as "striped" does?**
#
# The cell draws K = 100 random sets of 50 images (as many as each concept set), runs each as if it were
# a concept, and ranks every concept among them: $p = (1 + \#\{\text{random concepts at least as far from
# the centre}\}) / (K + 1)$, two-sided about the median of all K + 1 mean scores, then Bonferroni as before.
# The null hypothesis is "this concept's mean score is no more extreme than a random image set's would
# be". This is a Monte Carlo test (Davison & Hinkley 1997, *Bootstrap methods and their application*,
# section 4.2): if the concept set really were one more random set, all K + 1 ranks would be equally
# likely, so $p \le \alpha$ would happen with probability at most $\alpha$, on any model. A real concept
# set is never one more random set, so for "striped" the test is a yardstick, not a proof: it says how
# unusual the score is among sets that certainly carry no concept.
#
# The price is power. The smallest p is 1/(K+1), so with three concepts under Bonferroni a concept is
# significant only if it lies further out than *every one* of the 100 random concepts (K = 60 would just
# allow that; 100 leaves a margin). A concept that moves the logit a little less than the most extreme
# random set is called not significant, however real its effect: on the main models "dotted", which
# lowers "zebra" by construction, passes this test on some training seeds only.
#
# The same cell counts how many of the random concepts the t-test, Bonferroni-corrected like the
# concepts, would call significant; a calibrated test would flag 5% / 3 = 1.7%. The two models' runs take
# 20-40 s on two cores (1000 small CAVs each).

# %%
K = 100  # random concepts: the smallest p is 1/(K+1), and 3 concepts x Bonferroni need 3/(K+1) < 0.05
rank = {name: tcav.tcav_significance(m, tested, imgs, target="zebra", layer=at, random_sets=randoms[:R + 1],
                                     R=R, pooling=POOLING, processor=proc, test="rank", n_null=K,
                                     n_random=N, progress=True)
        for name, m, proc, imgs, at in (("main", model, processor, zebras, LAYER),
                                        ("control", control, control_processor, control_zebras, CONTROL_LAYER))}
for name, r in rank.items():
    print(f"{name}: the t-test would call {r.null_false_alarms():.0%} of the {K} random concepts significant "
          f"(calibrated: {r.nominal_false_alarms():.1%})")
    print(r.summary())
fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True, layout="constrained")
for ax, (name, r) in zip(axes, rank.items(), strict=True):
    plotting.rank_null(ax, r, title=f"{name} model: zebra, block {r.layer}")
plt.show()
# main: printed, not asserted (0.03 on the seed-0 build, 0.09-0.27 on seeds 1-4); control: asserted (held on
# every build)
claim("05.6-rank-main-striped", rank["main"]["striped"].p_corrected)
claim("05.6-rank-control-striped", rank["control"]["striped"].p_corrected)

# %% [markdown]
# **What the two tests said over training runs.** `benchmarks/tcav_robustness.py` trained the main and
# control ViTs with training seeds 0-7 and drew fresh concept, zebra and random images for each (mean
# score of "striped" for zebra / Bonferroni-corrected p by the rank test / by the t-test):
#
# | training seed | main | control |
# | --- | --- | --- |
# | 0 | 0.92 / 0.03 / 1e-7 | 0.61 / 1 / 1 |
# | 1 | 0.95 / 0.03 / 2e-5 | 0.81 / 0.53 / **0.022** |
# | 2 | 0.99 / 0.03 / 2e-8 | 0.78 / 0.27 / 0.42 |
# | 3 | 0.82 / 0.03 / 4e-7 | 0.30 / 1 / 0.11 |
# | 4 | 0.97 / 0.03 / 2e-5 | 0.68 / 1 / 0.44 |
# | 5 | 0.98 / 0.03 / 7e-4 | 0.71 / 1 / **0.038** |
# | 6 | 0.88 / 0.03 / 1e-3 | 0.71 / 1 / 0.78 |
# | 7 | 1.00 / 0.03 / 3e-3 | 0.40 / 1 / 1 |
#
# On every main model "striped" lay beyond all 100 random concepts (p = 3/101, the smallest the test can
# give); on every control it sat among them. The t-test agreed on the main models but called the controls
# of seeds 1 and 5 significant. On seeds 5-7 it also called 10%, 50% and 2% of the random concepts
# significant on the main models and 12%, 2% and 12% on the controls, where a calibrated test would call
# 1.7%: its yardstick, R = 10 random-vs-random scores, is itself one noisy draw (on seed 6's main model
# their mean was 0.67 while the random concepts' median was 0.43), and the concept's R runs all share one
# image set. The rank test centres on the median of all K + 1 means, which one concept cannot drag far.
#
# The claims matrix's seven builds (`prepare --seed 0..4` with this CPU's kernels, seeds 0 and 1 again with
# the AVX2 ones; one image draw each, this notebook's) did not repeat the main column: p = 0.03 on two of
# them (seed 0 with this CPU's kernels, seed 1 with AVX2), 0.09-0.27 on the other five, some random concept
# lying as far out as "striped" (the t-test of section 5 still called it significant on all of them). The
# same seed gave 0.03 with one set of kernels and 0.12 with the other. So "striped is significant on the
# main model" is printed, not asserted. "Not significant on the control" held on every build and stays
# asserted. But without significance on the main model for most builds, the contrast "significant on main,
# not on the control" is shown only for the builds where the main model passed it, not established for the
# recipe: the rank test's price in power shows up as a verdict that
# flips with the training seed.
#
# "Not significant" on the control does not mean "insensitive". On the controls of seeds 1, 2, 5 and 6
# "striped" still scored 0.71-0.81: the zebra logit rises along the striped CAV for three zebras in
# four. Random image sets posing as concepts score just as far out there, so stripes do not stand out;
# on the main models they do. The control's own answer is what ignores texture (checked above, on
# pictures and their twins); its activations are as sensitive to a texture direction as to any other.
#
# How the control got here. The first controls paid only for a twin's different logits; with the
# t-test, "striped" came out significant on three of ten training seeds (2, 4 and 5). The present
# control (recipe v7) also pays for any difference between a picture's and its twin's [CLS] token after
# every block. That term changed less than we hoped: the [CLS] distance between a picture and its twin,
# relative to the distance between two different pictures, was 0.09-0.24 at every block for both recipes
# (seeds 0-7). Yet on the same image draws the rank test still found "striped" significant on two of
# the eight v6 controls (seeds 2 and 4, beyond all 100 random concepts; the t-test flagged seeds 2, 4 and
# 5) and on none of the v7 controls. Both changes were needed for these eight seeds; which property of the
# [CLS] term did it we cannot say: each v7 control is, after all, also just another training run.
#
# The same goes for "bubbly" and "dotted" on the control: foam and spots mean nothing there, yet their
# rows can come out significant by either test (on one seed "dotted" sat below every random concept).
# Read the mean and the figure, not only the verdict. And look at where the gradient sits: the cell below
# prints, at the chosen block, the share of the zebra logit's squared gradient that falls on the [CLS]
# token (median over the 100 zebras) and for how many zebras the [CLS] part of $S$ alone has the sign of
# the whole $S$. Where [CLS] takes most of it, one token's direction decides the score, although the CAV
# was fitted on all 65. (Scoring with [CLS] alone, section 7's table, kept the claims on fewer training
# seeds than all tokens did: the CAV fitted on [CLS] alone is another direction.)
#
# A directional derivative measures *sensitivity*: how the logit would move if the activations moved
# towards the concept, and a model can be sensitive to a direction it never needed. A significant TCAV
# score says "this direction moves the class logit more than a random set's would", not "the model was
# trained to use this concept". A ground-truth control, checked over several training runs against random
# image sets posing as concepts, is how to tell the two apart.

# %%
D = model.config.hidden_size  # the [CLS] token's numbers come first in a flattened row
cls_share, same_sign = {}, {}
# the control shares the main model's shape only in the embedded world (section 3's CAV lives in that shape)
models_here = [("main", model, processor, zebras)]
if MODEL.startswith("embedded"):
    models_here.append(("control", control, control_processor, control_zebras))
for name, m, proc, imgs in models_here:
    g = tcav.gradients(m, imgs, LAYER, target="zebra", pooling=POOLING, processor=proc)  # (100, 65 * D)
    cls_share[name] = np.median((g[:, :D] ** 2).sum(1) / (g ** 2).sum(1))
    # the striped-vs-dotted CAV of section 3 (fitted on the main model: on the control, a direction like any other)
    same_sign[name] = np.mean(np.sign(g[:, :D] @ cav.vector[:D]) == np.sign(g @ cav.vector))
    print(f"{name}: [CLS] holds a median {cls_share[name]:.0%} of the squared gradient at block {LAYER}; its part "
          f"of S (striped vs dotted) has the sign of S for {same_sign[name]:.0%} of the zebras")
if MODEL.startswith("embedded"):
    claim("05.6-cls-share-main", cls_share["main"])
    claim("05.6-cls-share-control", cls_share["control"])
    claim("05.6-cls-sign-main", same_sign["main"])
    claim("05.6-cls-sign-control", same_sign["control"])

# %% [markdown]
# ### Does TCAV agree with the ground truth?
#
# Section 4 measured what each model uses by repainting its zebras. Now hold TCAV's answers against that
# table, concept by concept: the intervention says "raises" or "lowers" zebra where the effect on the
# logit is at least 0.5 (the bound section 4 asserts on), and "neither" below that; TCAV says "raises"
# or "lowers" where a test finds the concept significant (the sign of its offset from the random CAVs), and
# "neither" where it does not. For "bubbly" there are two interventions: a bubbly body, and the foam.

# %%
if MODEL.startswith("embedded"):
    def verdict(effect):
        return "raises" if effect >= 0.5 else "lowers" if effect <= -0.5 else "neither"

    def tcav_verdict(r, c):
        if not r[c].significant:
            return "neither"
        return "raises" if r[c].mean > r.random_scores.mean() else "lowers"

    agree = {}
    print(f"{'model':>8} {'concept':>14} | {'intervention':>20} | {'TCAV offset':>11} {'t-test':>11} {'rank test':>11}")
    for name, t_sig, r_sig in (("main", sig, rank["main"]), ("control", sig_control, rank["control"])):
        t = truth[name]
        for c, effect in (("striped", t.texture_effect("striped")), ("dotted", t.texture_effect("dotted")),
                          ("bubbly", t.texture_effect("bubbly")), ("bubbly (foam)", t.foam_effect())):
            k = c.split()[0]
            offset = t_sig[k].mean - t_sig.random_scores.mean()
            v_t, v_r = tcav_verdict(t_sig, k), tcav_verdict(r_sig, k)
            agree[(name, c)] = (verdict(effect) == v_t, verdict(effect) == v_r)
            print(f"{name:>8} {c:>14} | {verdict(effect):>9} ({effect:+.2f}) | {offset:+11.2f} {v_t:>11} {v_r:>11}")
    print(f"t-test agrees with the intervention on {sum(a for a, _ in agree.values())} of {len(agree)} rows, "
          f"the rank test on {sum(b for _, b in agree.values())}")
    claim("05.6-agree-ttest", sum(a for a, _ in agree.values()))
    claim("05.6-agree-rank", sum(b for _, b in agree.values()))

# %% [markdown]
# Where they part, the table says why. **Foam:** the main model hardly uses it, and the control model's
# logit moves by less than the bound, yet "bubbly" can come out significant (either way) on some builds:
# a direction the logit is *sensitive* to, not one the model *uses*. Nothing in TCAV tells the two apart;
# the intervention does. **Dots:** both agree that dots lower "zebra". Dots are the mark of the two spotted
# classes, so "dots lower zebra" may well be evidence for another class rather than a property of a zebra
# detector (the intervention measures the zebra logit only, so this is a reading, not a measurement); a
# relative score such as "bubbly vs dotted" (section 8) is high in part for that reason. **Stripes on the
# control:** not used, and the rank test finds no evidence; the t-test can still call them significant on
# some builds (above). **Stripes on the main model:** used; the t-test calls them significant on the builds
# measured, but the t-test also calls about one random concept in ten significant (the false-alarm rates
# printed above), so that verdict is weak evidence, and the rank test, calibrated at the price of power,
# does not find them significant on most builds. The rows "bubbly" and "bubbly (foam)" share one TCAV
# verdict (one CAV, two interventions), so the counts weigh that verdict twice.

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-2", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Why can a score differ from 0.5 and still be not significant?**
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
# Random CAVs also produce scores far from 0.5 at a given layer (their directions are not uniform in the
# activation space). What matters is whether the concept's scores differ from the random CAVs' scores
# more than the run-to-run spread explains.
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# ## 7. TCAV by layer
# *Lecture: XAI for transformers (seeds/002), lines 542-543.*
#
# Concepts are not equally visible at every depth. The sweep runs the significance test at each block;
# hollow markers are not significant.
#
# **How the block was chosen.** Section 3's rule: the deepest block whose every token reaches the
# classifier, at which the striped-vs-dotted CAV reaches held-out accuracy 0.9; it looks at CAV accuracies
# only, never at a TCAV score, and gave block 2 on every build of the claims matrix. The rule came late:
# block 2 had been in use before it, and the table below (how many training seeds kept the claims of
# the time at each block) is the record of that earlier choice, shown beside the rule's, not a reason for
# it. Block 2 was the only setting that kept every claim then, which is the kind of choice the rule
# replaces. The earlier principle: take the lecture's depth. Its layer 10 of ViT-base's 0-11 is
# the second-to-last block, the deepest whose patch tokens still reach the classifier through one more
# attention step (after the last block only [CLS] is read, which is why mean pooling scores exactly 0 at
# block 3). Here that is block 2 of 0-3. We wrote that principle down for the previous image world, after
# seeing its numbers; the present world (recipe v6) was built afterwards, with the layer fixed, so its
# table below is the check (and at block 2, held-out seeds 5-9 kept every asserted claim too). Over
# training seeds 0-4, how many of five seeds kept each claim (measured with recipe v6's control and
# the t-test, before section 6's rank test and [CLS]-invariant control existed; the main model is the
# same in v7, so every column but "not significant (control)" still stands, and that column, asserted
# now, is what section 6's table measures at block 2):
#
# | block, pooling | striped vs dotted | bubbly vs striped | dotted vs bubbly | striped vs bubbly | striped significant (main) | not significant (control) | every asserted claim |
# | --- | --- | --- | --- | --- | --- | --- | --- |
# | 0, flatten | 3 | 4 | 4 | 3 | 4 | 5 | 2 |
# | 1, flatten | 5 | 5 | 5 | 4 | 5 | 4 | 4 |
# | **2, flatten** | **5** | **5** | **5** | **5** | **5** | **3** | **5** |
# | 3, flatten | 5 | 3 | 3 | 3 | 3 | 3 | 2 |
# | 0-3, [CLS] only | 3-5 | 2-5 | 2-4 | 1-5 | 1-3 | 3-5 | 1-2 |
# | 0-3, mean of patches | 0 | 0-5 | 0-5 | 0 | 0-2 | 3-5 | 0 |
#
# Block 2 with all tokens is the only setting that kept every claim asserted then on all five seeds;
# block 1 came close. (The claims matrix's builds of seeds 3 and 4 missed the pairs' old bounds even at
# block 2; section 4.) Mean pooling never did (at block 3 it scores exactly 0: after the last block no patch token
# reaches the logit). The sweep below is *this* model only.

# %%
sweep = LayerSweepPanel(model, processor, concept_sets=concepts, class_images={"zebra": zebras}, pooling=POOLING,
                        R=pick(5, 3), random_sets=randoms)
sweep.set(R=pick(5, 3))
# the claim in the text: after the last block only [CLS] reaches the logit, so a CAV added to every patch
# token (mean pooling) moves nothing, and every directional derivative is exactly 0
last = tcav.tcav(model, concepts["striped"], concepts["dotted"], zebras, target="zebra",
                 layer=arch.n_layers(model) - 1, pooling="mean",
                 processor=processor)
assert np.all(last.derivatives == 0)  # exact: no path from a patch token to the logit, so autograd gives zeros
assert sweep.error is None
assert sweep.result.mean.shape == (3, arch.n_layers(model))
print(np.round(sweep.result.mean, 2))
sweep

# %% [markdown]
# ## 8. Which images does a CAV point at? Sorting by a CAV, and relative CAVs
#
# *Beyond the lectures: Kim et al., 2018.*
#
# Fig. 2 of the TCAV paper sorts images by a CAV; the lecture's concept pairs are relative CAVs.
#
# A TCAV score is one number about a direction. Kim et al. also look at what the direction points at: they
# sort a set of pictures (a class's, or a concept's) by the **cosine similarity** between each picture's activation at the CAV's layer
# and the CAV, $\cos(a_l(x), v_C) = a_l(x) \cdot v_C \,/\, (\lVert a_l(x) \rVert \lVert v_C \rVert)$, and show
# both ends (their Fig. 2: pictures of neckties sorted by a "model women" CAV, pictures of stripes by a
# "CEO" CAV). The activation is pooled as the CAV's training activations were (here all tokens of block
# 2), so the two live in one space. The cosine takes no gradient and no class logit: it asks what the
# CAV *encodes*, where TCAV asks what moving along it *does* to the class.
#
# Our test: 20 zebras and 20 horses, the same silhouette with and without stripes, sorted by the ten
# striped-vs-random CAVs of section 5 (striped against random set $i+1$). If a CAV picked out stripes, and
# not something else its 50 striped pictures happen to share, the zebras come first.

# %%
horses = iw.class_images("horse", 20, "main", seed=0)
herd = np.concatenate([zebras[:20], horses])  # (40, 64, 64, 3): 20 zebras, then 20 horses
is_zebra = np.arange(len(herd)) < 20
striped_cavs = [tcav.train_cav(a_striped, tcav.activations(model, r, LAYER, POOLING, processor), seed=i,
                               concept="striped", negative="random", layer=LAYER, pooling=POOLING)
                for i, r in enumerate(randoms[1:R + 1])]  # section 5's ten CAVs: striped vs random set i+1
rankings = [tcav.sort_by_cav(model, herd, c, processor=processor) for c in striped_cavs]
# the cosine by hand for the first CAV: the pictures' pooled activations against the CAV
a_herd = tcav.activations(model, herd, LAYER, POOLING, processor)  # (40, D)
v = striped_cavs[0].vector  # (D,)
by_hand = a_herd @ v / (np.linalg.norm(a_herd, axis=1) * np.linalg.norm(v))  # (40,)
claim("05.8-cosine-by-hand", np.abs(rankings[0].similarity - by_hand).max())
# most similar first, judged by the cosines computed by hand (a tolerance: two near-equal cosines may swap)
assert np.all(np.diff(by_hand[rankings[0].order]) <= 1e-5)


def zebra_first(ranking):
    """Share of (zebra, horse) pairs in which the zebra is more similar to the CAV (1: every zebra first)."""
    sim = ranking.similarity  # (40,) cosine of each picture with the CAV
    return float((sim[is_zebra][:, None] > sim[~is_zebra][None, :]).mean())


shares = [zebra_first(r) for r in rankings]
print("zebras among the 10 most striped-like: ", [int(is_zebra[r.top(10)].sum()) for r in rankings])
print("zebras among the 10 least striped-like:", [int(is_zebra[r.bottom(10)].sum()) for r in rankings])
print("share of (zebra, horse) pairs with the zebra first:", np.round(shares, 2))
if MODEL.startswith("embedded"):
    claim("05.8-zebra-first-share", np.median(shares), note="median of the ten CAVs")

# %% [markdown]
# The panel shows both ends of the sorted pictures, with each one's cosine, and below them a strip of all
# 40 in sorted order, coloured by class. Pick another concept, pit it against another concept instead of
# random images (**vs**), show the zebras alone, or move to another block. Where does the dotted CAV put
# the zebras? And a CAV of stripes against dots (a relative CAV, below)?

# %%
sorter = CAVSortPanel(model, processor, concept_sets=concepts, class_images={"zebra": zebras[:20], "horse": horses},
                      layer=LAYER, pooling=POOLING, k=6, random_set=randoms[1])
# the panel's CAV is the first of the ten above (striped vs random set 1, CAV seed 0): the same six pictures
assert sorter.error is None, sorter.error
shown_top = sorter.result.images[sorter.result.top]  # (6, 64, 64, 3) uint8
if MODEL == "embedded":
    assert np.array_equal(shown_top, herd[rankings[0].top(6)])  # exact: uint8 pictures picked by index from the herd
else:  # another model's cosines can tie within float rounding (a random-weight ViT's do), and ties may swap
    # exact: uint8 pictures compared, which picture is which, not computed floats
    same = sum(any(np.array_equal(img, herd[i]) for i in rankings[0].top(6)) for img in shown_top)
    print(f"the panel's top 6 and the first ranking's top 6 share {same} pictures")
sorter

# %% [markdown]
# **A check that does not always pass.** `benchmarks/cav_sort_robustness.py` repeats this cell with
# training seeds 0-4 of the main model (trained on this machine's CPU) and three image draws each (draw 0
# is this notebook's), ten striped-vs-random CAVs per draw, 30 per seed:
#
# | training seed | zebra-first share of pairs | zebras in the top 10 | zebras in the bottom 10 | striped vs random (TCAV, mean of 10) |
# | --- | --- | --- | --- | --- |
# | 0 | 0.91-1.00 (median 0.99) | 9-10 | 0 | 0.97-0.99 |
# | 1 | 0.70-1.00 (median 0.96) | 7-10 | 0-2 | 0.92-0.97 |
# | 2 | 0.08-0.97 (median 0.49) | 0-10 | 0-9 | 0.68-0.82 |
# | 3 | 0.06-1.00 (median 0.69) | 0-10 | 0-10 | 0.85-0.91 |
# | 4 | 0.49-1.00 (median 0.95) | 5-10 | 0-5 | 0.98 |
#
# On seeds 0 and 1 every striped CAV ranked the zebra above the horse in at least 70% of the pairs, as Kim
# et al.'s Fig. 2 would lead us to expect. On seeds 2 and 3 many CAVs sorted zebras and horses no better
# than a coin, and some put the horses first, *while the TCAV score of the same CAVs said that stripes
# raise "zebra"* (0.68-0.91). Nothing about the order is asserted, then: it did not hold for every
# training run. The two ask different questions. TCAV takes the gradient of the zebra logit, so it looks
# only at the directions the logit reads. The cosine takes the whole activation (here 65 tokens x 96
# numbers), most of which describes what zebras and horses share: silhouette, pose, background, foam. And
# a CAV trained against random collages may carry whatever else tells its 50 striped pictures from those
# collages (the held-out accuracy of these CAVs was only 0.50-0.92; section 5 says why). The dot product
# instead of the cosine, or the cosine after subtracting the random images' mean activation, did not rescue
# seed 2 (the benchmark prints both). A sorted gallery is a qualitative look, worth taking: a CAV whose
# gallery looks wrong is worth questioning. A gallery that looks right proves no more than that.
# (Three more main models, seeds 0-2 trained with the AVX2 kernels `ATEN_CPU_CAPABILITY=avx2`, gave shares
# of 0.41-1.00: the same picture. Sorting with AVX2 kernels did not change a number above.)
#
# ### Relative CAVs: a concept against a concept
#
# Section 5 trained each CAV against **random** images: "striped vs random" points from pictures of
# anything towards stripes, and its score asks *does this concept, compared with nothing in particular,
# push the class up?* The lecture's pairs (section 4) are **relative CAVs** (Kim et al.'s relative TCAV): a
# CAV of concept A against concept B points from B towards A, and its score asks *does trading B for A
# push the class up?* That is a comparison, and a comparison comes out high for either of two reasons:
# A raises the logit, or B lowers it. The relative score alone cannot tell which; the two scores against
# random images can. Side by side for zebra:

# %%
vs_random = {c: sig[c].mean for c in tested}  # section 5: each concept against R random sets
relative = {(a, b): tcav.tcav(model, concepts[a], concepts[b], zebras, target="zebra", layer=LAYER,
                              pooling=POOLING, processor=processor, concept=a, negative=b).score
            for a, b in (("striped", "dotted"), ("bubbly", "dotted"), ("striped", "bubbly"))}
random_cavs = sig.random_scores.mean()
print(f"random CAVs (random vs random): {random_cavs:.2f}")
for c, score in vs_random.items():
    print(f"  {c:>8} vs random: {score:.2f}  ({'significant' if sig[c].significant else 'not significant'})")
for (a, b), score in relative.items():
    print(f"  {a:>8} vs {b}: {score:.2f}  (relative CAV)")
# where the relative score of bubbly vs dotted comes from: dots below the random CAVs, bubbles off them
dots_part, bubbles_part = random_cavs - vs_random["dotted"], vs_random["bubbly"] - random_cavs
print(f"dotted lies {dots_part:+.2f} below the random CAVs (section 5), bubbly "
      f"{bubbles_part:+.2f} above them")
if MODEL.startswith("embedded"):
    # printed, not asserted (was >= 0.55): bubbly vs dotted. Striped vs dotted is section 4's pair, the same
    # CAV and zebras (05.4-striped-vs-dotted)
    claim("05.8-bubbly-vs-dotted", relative[("bubbly", "dotted")])
    claim("05.8-bubbly-minus-dotted-vs-random", vs_random["bubbly"] - vs_random["dotted"])
    # > 0: the dots' distance below the random CAVs is the larger part of the relative score's lean
    claim("05.8-dots-larger-part", dots_part - abs(bubbles_part))

# %% [markdown]
# Over training seeds 0-4 and three image draws each (`benchmarks/cav_sort_robustness.py`; mean scores over
# R = 10 runs against random sets, as in section 5; "bubbly significant" by section 5's t-test):
#
# | training seed | striped vs random | bubbly vs random | dotted vs random | random CAVs | striped vs dotted | bubbly vs dotted | bubbly significant |
# | --- | --- | --- | --- | --- | --- | --- | --- |
# | 0 | 0.97-0.99 | 0.35-0.61 | 0.10-0.15 | 0.40-0.53 | 0.93-0.98 | 0.91-0.95 | 0 of 3 |
# | 1 | 0.92-0.97 | 0.39-0.78 | 0.14-0.24 | 0.49-0.53 | 0.92-0.98 | 0.90-0.96 | 1 of 3 |
# | 2 | 0.68-0.82 | 0.33-0.45 | 0.28-0.30 | 0.47-0.55 | 0.90-0.91 | 0.65-0.67 | 0 of 3 |
# | 3 | 0.85-0.91 | 0.47-0.63 | 0.11-0.20 | 0.44-0.52 | 0.84-0.90 | 0.92-0.94 | 0 of 3 |
# | 4 | 0.98 | 0.61-0.91 | 0.02-0.23 | 0.47-0.53 | 0.99-1.00 | 0.99-1.00 | 2 of 3 |
#
# Read as relative scores, "bubbly vs dotted" (0.65-1.00) and "striped vs dotted" (0.84-1.00) are both
# high: by the lecture's pairs alone, bubbles would seem to make a zebra much as stripes do. (Not on every
# build: on the claims matrix's seed 4 they were 0.52 and 0.74.)
# Against random images the two come apart: stripes lie far above the random CAVs on every run, bubbles
# lie above them on some runs and below on others (significant in 3 of 15), and dots lie below them on
# every run (by 0.19-0.50; asserted in section 5 with the bound 0.1). So the relative score of bubbly vs
# dotted is high in good part because spots, the mark of leopards and sheep, push "zebra" *down*: which
# part is larger on your build, the dots' distance below the random CAVs or the bubbles' distance from
# them, the `05.8-dots-larger-part` line prints (positive: the dots'), with its range over the claims
# matrix; it is not asserted, because on a build whose bubbly CAV lands far above the random ones (seed 4
# in the table) the bubbles' part can be as large. That dots lower "zebra" is not only TCAV's reading: the
# intervention table of section 4 paints dots on the zebras and measures the logit fall (asserted there).
#
# Which to ask:
#
# - **concept vs random** answers *does this concept, on its own, move the class?* It is the paper's main
#   test, the one section 5's significance test and section 6's control are built on.
# - **concept vs concept** answers *between these two, which moves the class more?* Ask it when the choice
#   is between two named alternatives (stripes or spots on this animal?), and read it beside both concepts'
#   scores against random images: a high relative score can come entirely from the concept it is compared
#   with.
#
# (The bubbly-minus-dotted gap against random images was positive on all 15 runs, but only 0.05 on one,
# too thin to assert. The three AVX2-trained models, three draws each: dotted 0.24-0.50 below the random
# CAVs, bubbly vs dotted 0.81-1.00, striped vs dotted 0.94-0.99, bubbly above the random CAVs on eight of
# nine runs and significant on four.)

# %% [markdown]
# ## 9. Where the ViT looks, against the pixels we drew
# *Beyond the lectures: Chefer, Gur & Wolf, Transformer interpretability beyond attention visualization (CVPR), 2021; Chefer, Gur & Wolf, Generic attention-model explainability (ICCV), 2021; Abnar & Zuidema, Quantifying attention flow, 2020.*
#
# TCAV asked whether a *concept* moves the class. Relevance maps ask *where in this picture* the evidence
# lies, and here we can check them against the truth: the image world knows every pixel's role, from the
# layers it drew (`Scene.masks()`: body, legs and head, foam, background), and section 4's intervention
# told us the main model uses the body's stripes and the control model does not. Seven maps over the 8x8
# patch grid (`xaikit.concepts.vit_relevance`): raw attention ([CLS] row of the last block, head mean),
# attention rollout (Abnar & Zuidema 2020), Chefer et al.'s gradient-weighted propagation ("chefer": the rule
# of their ICCV 2021 paper, gradient times attention), their CVPR 2021 method ("chefer_lrp": gradient times
# the LRP relevance of the attention, computed by `xaikit.concepts.vit_lrp` on a float64 re-run of the ViT,
# the same rules as notebook 04's Chefer LRP for BERT), gradient-weighted attention of the last block, and
# gradient x input and integrated gradients on the pixels (summed over each patch). Scores: the **localisation** is the share of positive relevance on the body
# (masks pooled to patches: a patch counts by the fraction of its pixels on the body; a map spread evenly
# scores the body's share of the frame), the **pointing game** asks whether the top patch lies at least half
# on the body. Chefer et al.'s **perturbation test** greys out patches (0 after normalising) in order of
# relevance, 0-90% in steps of 10%, and measures the probability of the predicted class: the area under
# that curve should be low when the most relevant patches go first (positive) and high when the least
# relevant go first (negative); a random order is the yardstick. Passes are counted on the model's blocks
# (`count_passes`), seconds are per image on this machine.

# %%
if MODEL.startswith("embedded"):
    rel_scenes = iw.scenes("zebra", pick(12, 4), "main", seed=5)
    rel_control_scenes = iw.scenes("zebra", pick(12, 4), "control", seed=5)
    rows, random_auc = vr.compare_methods(model, rel_scenes)
    control_rows, _ = vr.compare_methods(control, rel_control_scenes, perturb=False)
    print(f"{len(rel_scenes)} zebras; the body covers {rows[0].body_area:.2f} of the frame (control world: "
          f"{control_rows[0].body_area:.2f}); random-order positive AUC {random_auc:.3f}")
    # "lift": the share on the body over the body's share of the frame (1 = spread evenly); the two worlds'
    # bodies differ in size, so the lift, not the share, compares the main model with the control
    print(f"{'method':>15} | {'on body':>7} {'lift':>5} {'control':>7} {'lift':>5} | {'pointing':>8} | "
          f"{'pos AUC':>7} {'neg AUC':>7} | {'fwd':>4} {'bwd':>4} {'ms':>6}")
    for r, c in zip(rows, control_rows, strict=True):
        print(f"{r.method:>15} | {r.localisation:7.2f} {r.localisation / r.body_area:5.1f} {c.localisation:7.2f} "
              f"{c.localisation / c.body_area:5.1f} | {r.pointing:8.2f} | {r.pos_auc:7.3f} {r.neg_auc:7.3f} | "
              f"{r.forward:4.0f} {r.backward:4.0f} {1000 * r.seconds:6.1f}")
    lifts = {r.method: r.localisation / r.body_area for r in rows}
    control_lifts = {c.method: c.localisation / c.body_area for c in control_rows}
    print(f"lift on the main model {min(lifts.values()):.1f}-{max(lifts.values()):.1f} (lowest: "
          f"{min(lifts, key=lifts.get)}); on the control {min(control_lifts.values()):.1f}-"
          f"{max(control_lifts.values()):.1f} (lowest: {min(control_lifts, key=control_lifts.get)}, highest: "
          f"{max(control_lifts, key=control_lifts.get)})")
    first_pixels = vitworld.to_pixels(rel_scenes[0].image()[None])
    first_map, first_class = vr.relevance(model, first_pixels, "chefer")
    first = vr.perturbation_curve(model, first_pixels, np.argsort(-first_map.ravel(), kind="stable"), first_class)
    print(f"first zebra, Chefer order: probability {first.probs[0]:.2f} with nothing removed, "
          f"{first.probs[1]:.2f} after the top 10% of patches")
    by = {r.method: r for r in rows}
    by_control = {c.method: c for c in control_rows}
    print(f"\nthe intervention (section 4): striped body {truth['main'].texture_effect('striped'):+.2f} logit on "
          f"the main model, largest texture effect on the control {max(abs(truth['control'].texture_effect(k)) for k in iw.TEXTURES):.2f}")
    claim("05.9-chefer-body-drop", by["chefer"].localisation - by_control["chefer"].localisation)
    claim("05.9-attention-minus-rollout-pos-auc", by["attention"].pos_auc - by["rollout"].pos_auc)
    claim("05.9-rollout-minus-chefer-pos-auc", by["rollout"].pos_auc - by["chefer"].pos_auc)
    claim("05.9-rollout-minus-chefer-lrp-pos-auc", by["rollout"].pos_auc - by["chefer_lrp"].pos_auc)
    lrp_auc, rollout_auc, attention_auc = (by[m].pos_auc for m in ("chefer_lrp", "rollout", "attention"))
    print(f"Chefer et al.'s Table 1 ordering in positive AUC, LRP method < rollout < raw attention: "
          f"{lrp_auc:.3f} {'<' if lrp_auc < rollout_auc else '>='} {rollout_auc:.3f} "
          f"{'<' if rollout_auc < attention_auc else '>='} {attention_auc:.3f} "
          f"({'reproduced' if lrp_auc < rollout_auc < attention_auc else 'not reproduced'} on this build; "
          f"their ICCV rule: {by['chefer'].pos_auc:.3f})")
    from xaikit.concepts import vit_lrp

    lrp_first = vit_lrp.chefer_lrp(model, first_pixels)
    print(f"chefer_lrp, first zebra: the total relevance is the same at every block boundary to "
          f"{lrp_first.conservation_error:.0e} (largest relative change; the LRP rules conserve it)")

# %% [markdown]
# Read the table with section 4 beside it. On the main model every method puts more than the body's share of
# the frame on the body (lift above 1; the lowest printed), where the intervention says the evidence is; on
# the control model, which the intervention found blind to texture, the lift falls for most methods to about 1
# (the share itself falls too, asserted for the Chefer column, `05.9-chefer-body-drop`; the control world's
# bodies are smaller, so the lift is the fair comparison, and the highest control lift is printed: the pixel
# methods keep more; the lowest is printed too). Chefer et al. (CVPR 2021, Table 1, ViT-B on ImageNet) report
# their LRP-based method below rollout below raw attention in positive-perturbation AUC. The "chefer_lrp"
# column is that method (relevance conserved at every block boundary, printed above), so the comparison is
# now made with the method of that table; "chefer" is their later ICCV rule. Over training seeds 0-4 and the
# matrix's two AVX2 builds (`benchmarks/vit_relevance.py`, 12 zebras; the ranges the two claims print) rollout
# came out below raw attention on every seed (though not on one more build of seed 0), but neither of
# Chefer's methods came out clearly below rollout: the LRP method never, the ICCV rule on one seed of five.
# This small world does not reproduce that part of their ordering, with their own method either, and the
# curves lie near their floor: greying the top tenth of the patches already takes the zebra probability near
# zero (the first zebra's line above), so the positive test has little room to separate methods here. Where
# the LRP method stood out is the control model: on this build's lines above it has the lowest control lift of
# the seven methods (printed), below 1, i.e. it puts less than an even share of its relevance on the body of a
# model that does not use the body's texture (`benchmarks/vit_relevance.py` found it lowest on each of the
# seven builds; not asserted here). Integrated gradients pays one forward and one backward pass per step
# of its path (the fwd and bwd columns); the others one of each at most, except the LRP method's second
# backward sweep, the relevance propagation itself, on its float64 re-run.

# %%
if MODEL.startswith("embedded"):
    fig, axes = plt.subplots(1, len(vr.METHODS) + 2, figsize=(2.0 * (len(vr.METHODS) + 2), 2.3))
    scene = rel_scenes[0]
    axes[0].imshow(scene.image())
    axes[0].set_title("picture", fontsize=9)
    axes[1].imshow(scene.masks()["body"], cmap=plotting.SEQUENTIAL)
    axes[1].set_title("body (drawn)", fontsize=9)
    pixels0 = vitworld.to_pixels(scene.image()[None])
    for ax, method in zip(axes[2:], vr.METHODS, strict=True):
        rmap, _ = vr.relevance(model, pixels0, method)
        ax.imshow(rmap, cmap=plotting.DIVERGING, vmin=-np.abs(rmap).max(), vmax=np.abs(rmap).max())
        ax.set_title(f"{method}\non body {vr.localisation(rmap, scene.masks()['body']):.2f}", fontsize=9)
    for ax in axes:
        ax.axis("off")
    plt.tight_layout()
    plt.show()

# %% [markdown]
# The panel: pick a zebra, a method and a block (the block the attention methods read, or the last one
# rollout and Chefer's two methods propagate through; the pixel methods have none) and the part of the picture to
# score against. Try the legs and head, or the foam, as the mask: how much relevance lands where the
# model has, by the intervention, no reason to look? Under the map's title, and under the figure, the panel
# says what that map cost: the forward and backward passes counted by hooks on the ViT's blocks while the
# method ran (`xaikit.models.count_passes`, as in the table above) and the milliseconds on this machine.
# Switch to `ig` and back to see the price of its path (the cell prints both).

# %%
looks = RelevancePanel(model, rel_scenes, method="chefer") if MODEL.startswith("embedded") else None
assert looks is None or looks.error is None, looks.error
if looks is not None:
    ig_cost = looks.set(method="ig").cost
    chefer_cost = looks.set(method="chefer").cost
    assert looks.error is None, looks.error
    print(f"one map of this zebra: chefer {chefer_cost}; ig {ig_cost} (passes counted by hooks)")
looks
