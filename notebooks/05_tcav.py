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
# (TCAV; Kim et al. 2018) answers with a number, and a significance test tells us whether to believe it. We
# work in a generated image world where we know what each model uses, so every TCAV answer can be held
# against the truth.
# Every number the text states is printed by the code that computes it, and every claim about one is
# checked when its cell runs; numbers that depend on how a model happened to train are printed as this
# model's.
#
# **Learning objectives.** After this lecture you can
#
# - describe how a Vision Transformer (ViT) turns an image into a sequence of patch tokens;
# - build a concept activation vector (CAV) from two image sets, and check its held-out accuracy first;
# - compute directional derivatives and the TCAV score, and read a relative score "A vs B" correctly;
# - find out what a model uses by intervention (repainting the input), and hold TCAV against it;
# - test a TCAV score against random concepts, say what the t-test's p-value does and does not tell you,
#   and write the rank test's p-value yourself.
#
# **Outline** (75 minutes)
#
# 1. ViT recap: an image as a sequence of patches
# 2. Concepts: example images
# 3. Activations and CAVs
# 4. Directional derivatives and the TCAV score
#    - first, the ground truth: what does each model use?
# 5. Significance against random concepts
#    - a sharper question: would a random image set do as well?
#    - what a ground-truth control shows
# 6. Summary
#
# In class: the reading and the exercises marked with a time alone. The exercise marked "homework"
# (writing a CAV yourself) is done after class; nothing later in the lecture needs it.
#
# Lab 07 (`07_tcav_lab.ipynb`) goes further: the ground-truth control in full, random image sets as the
# yardstick, TCAV by layer, sorting images by a CAV, relative CAVs, and where the ViT looks in the picture.
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

# %%
import numpy as np

import xaikit
from xaikit import pick
from xaikit.concepts import tcav
from xaikit.course.claims import claim
from xaikit.course.claims import tcav as tcav_claims
from xaikit.lab import intervention
from xaikit.models import arch, load_vit
from xaikit.models import imageworld as iw
from xaikit.widgets import ConceptGalleryPanel, PatchGridPanel, TCAVPanel

SEED = xaikit.set_seed(0)  # Python's random, NumPy and torch

# %% [markdown]
# **Choose the model.** `"embedded"` is xaikit's offline ViT, trained on a generated image world whose
# classes include "zebra" (built by `python -m xaikit prepare`). Change the string to
# `"google/vit-base-patch16-224"` (the lecture's model, class "zebra"; needs a network) and everything
# below runs on it; the lecture looks at its layer 10.

# %%
MODEL = "embedded"
# what the lecture's model size costs: random-weight models of its shape, timed by benchmarks/lecture_scale.py
print(xaikit.models.lecture_costs("tcav_activations", "tcav_significance", "tcav_significance_next_kernel"))
model, processor = load_vit(MODEL)
# the block TCAV reads is chosen in section 3 by a rule fixed before any TCAV score (the lecture's ViT: block 10)
POOLING = "flatten"  # all tokens, as in the lecture's code
print(type(model).__name__, "|", arch.n_layers(model), "blocks |", len(model.config.id2label), "classes |",
      "on", model.device)

# %% [markdown]
# ## 1. ViT recap: an image as a sequence of patches
# *Lecture: XAI for transformers, slide "ViT - Transformers for image classification".*
#
# A ViT cuts the image into $P \times P$ patches, embeds each patch linearly, prepends a learned [CLS]
# token, adds position embeddings and runs a transformer encoder. The classifier reads the [CLS] token of
# the last block. The cell below prints how our embedded model cuts its images: the image size, the grid of
# patches, the patch size, and the number of tokens.

# %%
world_images, world_labels, world_names = iw.make_dataset(10, "main", seed=5)
grid = PatchGridPanel(world_images, patch_size=model.config.patch_size,
                      labels=[world_names[y] for y in world_labels])
grid.set(index=0)
side = world_images.shape[1] // model.config.patch_size  # patches per side of these images
assert grid.result.n_tokens == side * side + 1
print(f"{world_images.shape[1]}x{world_images.shape[2]} images as a {side}x{side} grid of "
      f"{model.config.patch_size}x{model.config.patch_size} patches: {grid.result.n_tokens} tokens with [CLS]")
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
    # a property of this training run: a TCAV number means little for a model that has not learned its world
    claim("05.1-held-out-accuracy", acc)

# %% [markdown]
# ## 2. Concepts: example images
# *Lecture: XAI for transformers, slide "TCAV for explaining ViT - in short".*
#
# A concept is a set of example images. The lecture takes texture photos from the Describable Textures
# Dataset; xaikit draws textures of the same kinds, at random colours, scales and angles, so that colour
# says nothing. TCAV also needs *random* sets: images with no particular concept. Ours are collages of
# random textures that fill the frame as the concept images do (a random set that differed from the
# concept sets in some trivial way, such as more empty background, would let a CAV separate them by that
# alone).

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
# *Lecture: XAI for transformers, slides "TCAV for explaining ViT", "TCAV for explaining ViT - in short".*
#
# At layer $l$ the activations $a_l(x)$ of the concept images and of counterpart images are separated by
# a linear classifier. The **concept activation vector (CAV)** $v_C$ is the unit normal of its decision
# boundary, pointing towards the concept. First check that the classifier separates the sets on held-out
# images (images it was not trained on): a CAV with chance accuracy means nothing.
#
# **Which block?** A rule fixed before any TCAV score is computed: the deepest block whose every token
# still reaches the classifier (so not the last block, after which only [CLS] is read; the lecture's layer
# 10 of ViT-base's blocks 0-11 is such a block) at which the striped-vs-dotted CAV reaches a held-out
# accuracy of 0.9. That bar is for choosing the block, with two concept sets that should be easy to tell
# apart. Section 5 trains CAVs against random collages, which hold stripes and bubbles too, so its CAVs
# score lower, and it asks less: a CAV near chance is marked there (its score means nothing), and one
# barely above the random CAVs' accuracy printed beside it is weak, its p no finding on its own. The cell
# applies the rule to whatever model is loaded and prints every block's CAV accuracies beside its choice.
# Where every candidate block reaches 0.9, the accuracy clause does not bind and the rule comes down to the
# lecture's depth. Lab 07 shows TCAV at every block.

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
cos_lh = claim("05.3-cav-cosine-logistic-hinge", cos_lh)

# %% slideshow={"slide_type": "subslide"}
xaikit.diagrams.cav_diagram()  # a CAV and the directional derivative, sketched in two dimensions

# %% [markdown]
# **A CAV is one of many separating directions.** Each image is a point in as many dimensions as printed
# above (every token's numbers, flattened), and there are far fewer training images than dimensions. In so
# many dimensions a great many hyperplanes separate the training images; the classifier's regulariser picks
# one (ours: L2-regularised logistic regression, whose optimum lies in the span of the training images; the
# hinge loss by SGD picks another). The cosine above says how far apart two reasonable choices land, and a
# TCAV score is a property of the CAV, so of the regulariser too: one more reason to repeat the experiment
# and test it (section 5), and not to read a single CAV's direction as *the* concept.

# %% [markdown] nbgrader={"grade": false, "grade_id": "my_cav-task", "locked": true, "schema_version": 3, "solution": false}
# **Exercise (homework, 15 min, ★★☆).** Write a CAV yourself: fit a linear classifier that tells the concept
# activations (label 1) from the counterpart activations (label 0), and return the unit normal of its
# boundary, pointing towards the concept.

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

# %% [markdown]
# ## 4. Directional derivatives and the TCAV score
# *Lecture: XAI for transformers, slides "TCAV for explaining ViT", "TCAV for explaining ViT - in short".*
#
# For an image $x$ of class $k$, the **directional derivative**
# $S_{C,k,l}(x) = \nabla h_{l,k}(a_l(x)) \cdot v_C$ says whether nudging the activations towards the
# concept raises the class logit ($h_{l,k}$ maps the layer-$l$ activations to the logit of class $k$). The
# **TCAV score** is the fraction of class images with $S > 0$. The lecture's four pairs for zebra: striped
# vs dotted ~0.95, bubbly vs striped ~0.1, dotted vs bubbly ~0.05, striped vs bubbly ~0.95. Those are the
# lecture's numbers for an ImageNet ViT-base and texture photos; ours are a small ViT in a generated world,
# printed beside them, not expected to match.

# %% [markdown] nbgrader={"grade": false, "grade_id": "my_tcav_score-task", "locked": true, "schema_version": 3, "solution": false}
# **Exercise (5 min, ★☆☆).** Write the TCAV score yourself: given the gradients `grads` (N, D) of the class
# logit at the layer and a CAV (D,), return the fraction of images whose directional derivative is positive.

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
# ### First, the ground truth: what does each model use?
#
# Before any TCAV score, ask the models directly. `iw.scenes` gives the 100 zebras TCAV will score (the
# same pictures as `zebras`) taken apart into layers: ground, foam, body texture, dark parts, pixel noise.
# `intervention.intervene` repaints each zebra's body with a new texture of each kind (new colours, scale
# and angle; "striped" means other stripes), and shows each scene with and without a puddle of foam
# (its own, or a new one where it had none), every other pixel kept. It measures the zebra logit and
# probability on the main model and, on the control world's zebras, on a **control model**: a second ViT
# of the same architecture, trained on a world where every class takes its body texture at random, so that
# texture cannot tell its classes apart (lab 07 describes it). This follows Kim et al. (2018, section 4.3),
# who checked TCAV on images whose label they controlled (a caption printed on the image that named the
# right class more or less often) and so knew what the model had to be using.

# %%
control, control_processor = load_vit("embedded-control")  # the control model (lab 07)
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
# This table is what each model uses; TCAV is held against it below and in section 5. The `claim` lines
# check what holds for any training run of this recipe: on the main model a striped body raises the zebra
# logit clearly against the average of the six textures, a dotted body lowers it clearly, and the foam
# moves it little, although half the zebras stood beside a puddle in training; on the control no body
# texture moves it much. The bubbly body on the main model and the foam on the control are printed as this
# model's: their size changes from one training run to the next.

# %% [markdown]
# **Question (10 min, ★★☆).** Read the intervention table. (a) Which body textures does the main model use
# for "zebra", and in which direction? (b) Why might a model hardly use the foam, which stood beside half
# of its training zebras? (c) If TCAV measured what a model *uses*, what should TCAV(striped vs dotted,
# zebra) be on the main model, and on the control?

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-intervention", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# (a) Read the signed effects against the average texture: stripes raise the zebra logit and a plain or
# dotted body lowers it (the zigzag and checkered rows show whether stripe-like textures count too): the
# stripes are *used*, and spots work *against* "zebra" (they are the mark of the leopard and the sheep). (b) The stripes already tell a zebra
# from a horse, whose silhouette is the same, on every picture; a cue that stands beside only half the
# zebras and beside other classes too adds little once the body is seen, so training has little reason to
# rely on it. (c) On the main model high: replacing dots by stripes raises the logit for almost every zebra.
# On the control about what random directions give, since no texture moves its logit; section 5 and lab 07
# test whether TCAV says so.
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# Now TCAV. Each of the lecture's pairs is a **relative** score: the CAV of concept A is trained against
# concept B, not against random images, so a high "A vs B" can come from A raising the class or from B
# lowering it (lab 07 separates the two).

# %%
pairs = tcav.pair_scores(model, concepts, zebras, target="zebra", layer=LAYER, pooling=POOLING,
                         processor=processor)
for (a, b), score in pairs.items():
    print(f"TCAV({a} vs {b}, zebra) = {score:.2f}   (lecture ~{tcav.LECTURE_PAIRS[(a, b)]})")
if MODEL.startswith("embedded"):
    # the lecture's numbers come from an ImageNet ViT-base; ours move with the training run and the images drawn
    claim("05.4-striped-vs-dotted", pairs[("striped", "dotted")])
    claim("05.4-bubbly-vs-striped", pairs[("bubbly", "striped")])
    claim("05.4-dotted-vs-bubbly", pairs[("dotted", "bubbly")])
    claim("05.4-striped-vs-bubbly", pairs[("striped", "bubbly")])


# %% [markdown]
# > **Pause here.** The lecture asks: "Do these make sense for zebra classification?"
# > (XAI for transformers, slide "TCAV for explaining ViT - in short")

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-1", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Question (5 min, ★☆☆).** Hold each of the four pairs against the intervention table: which does the
# table explain, and which would it not lead you to expect?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# On the lecture's ImageNet model they look sensible: stripes push "zebra" up against both other
# textures, and the pairs without stripes score low. But "makes sense" is judged against what one
# expects, and here we can do better: the intervention table says what this model uses. Stripes against
# dots should score high (stripes raise, dots lower the logit). Pairs with "bubbly" are harder, and the
# table's two printouts answer differently: against the picture as drawn (the first table's logit column),
# a bubbly body lowers the main model's zebra logit a lot, since it replaces the body the zebra was drawn
# with; against the average of the six textures (the second printout) it moves it less than stripes or dots
# do. So a pair's score with "bubbly" says mostly how the *other*
# concept acts. A TCAV score also depends on the training run and on the images drawn, so one model's
# numbers agreeing with the lecture's would prove little on their own.
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# Swapping the two sets flips the CAV, so the score becomes one minus itself (up to images with
# $S = 0$ exactly):

# %%
one = tcav.tcav(model, concepts["striped"], concepts["dotted"], zebras, target="zebra", layer=LAYER,
                pooling=POOLING, processor=processor)
other = tcav.tcav(model, concepts["dotted"], concepts["striped"], zebras, target="zebra", layer=LAYER,
                  pooling=POOLING, processor=processor)
print(f"{one.score:.2f} + {other.score:.2f} = {one.score + other.score:.2f}")
swap_gap = claim("05.4-swap-count", abs(one.score + other.score - 1))

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
    # weighed by magnitude: are the zebras that stripes push down pushed down only weakly?
    striped_bubbly = tcav.tcav(model, concepts["striped"], concepts["bubbly"], zebras, target="zebra",
                               layer=LAYER, pooling=POOLING, processor=processor)
    claim("05.4-striped-bubbly-magnitude", striped_bubbly.magnitude)


# %% [markdown]
# ## 5. Significance against random concepts
# *Beyond the lectures: Kim et al., Interpretability beyond feature attribution (TCAV), 2018; Davison & Hinkley, Bootstrap methods and their application, 1997.*
#
# A single score can be luck: a CAV trained on two sets of *random* images also gets some score. TCAV
# repeats the experiment with R random counterpart sets, compares the concept's R scores with R scores
# of random-vs-random CAVs by a two-sided t-test, and corrects the p-values for the number of concepts
# tested (Bonferroni: multiply each p by that number). Grey hatched bars are not significant.
#
# This follows the original TCAV code more than the paper's wording: Kim et al. (2018, section 3.5) test
# against the null hypothesis "score = 0.5" over about 500 runs; the reference code compares with the
# scores of random-vs-random CAVs instead: their mean sits near 0.5, but a single random CAV's score
# can land far from it (the cell below the panel prints their spread). xaikit differs from that code in
# one more way: the reference code pits one fixed random set against the others, xaikit draws a new pair
# of random sets for every baseline run (see `xaikit.concepts.significance`). R = 10 keeps the notebook
# quick.
#
# The cell checks what holds for any training run of this recipe: stripes raise "zebra" for more than half
# of the zebras, "striped" lies above the random CAVs on average, and "dotted" lies clearly below them, as the mark of two other classes should (the test is
# two-sided, so a concept far *below* the random CAVs counts as significant too). Do not read "bubbly" as
# the foam: the intervention said the main model hardly uses the foam, and the bubbly CAV is trained on
# bubble textures, not on puddles beside an animal. Read the CAV accuracies in the summary too: the random
# collages contain stripes and bubbles in some of their cells (and one image in ten is pure noise), so a
# CAV of stripes or bubbles against them has less to go on than one of the sparse spots.
#
# Below the summary, each score is held against the intervention. A score on the other side of the random
# CAVs from the intervention means the CAV found a direction that moves the zebra logit, but not the way
# painting the texture does: a weak CAV, or a direction that is not the texture as the model uses it. Its "significant" says nothing about use, and the t-test can say it too
# easily (lab 07 counts how often it calls random image sets significant); the calibrated test below decides.

# %%
R = 10
randoms = [iw.random_images(N, seed=i) for i in range(2 * R + 1)]  # enough for the panel's R slider up to 20
tested = {c: concepts[c] for c in tcav_claims.CLAIM_CONCEPTS}  # striped, dotted, bubbly
sig = tcav.tcav_significance(model, tested, zebras, target="zebra", layer=LAYER, random_sets=randoms[:R + 1],
                             R=R, pooling=POOLING, processor=processor)
print(sig.summary())
for c in tested:
    s = sig[c]
    side = "raises" if s.mean > sig.random_scores.mean() else "lowers"
    line = f"{c:>8}: TCAV {s.mean:.2f} vs random CAVs {sig.random_scores.mean():.2f}, {side} zebra"
    if MODEL.startswith("embedded"):
        effect = truth["main"].texture_effect(c)  # section 4: painted on the zebras, against the average texture
        agree = "agrees" if (effect > 0) == (side == "raises") else "disagrees"
        line += f"; painted on the zebras {effect:+.2f}: {agree}"
    line += f"; CAV acc {s.cav_accuracy:.2f} (random CAVs {sig.random_cav_accuracies.mean():.2f})"
    print(line + (": near chance, the score means nothing" if s.near_chance else ""))
if MODEL.startswith("embedded"):
    # the random-vs-random CAVs are the yardstick: striped's mean above theirs is checked
    claim("05.5-striped-vs-random", sig["striped"].mean)
    claim("05.5-striped-above-random-cavs", sig["striped"].mean - sig.random_scores.mean())
    claim("05.5-striped-significant", sig["striped"].p_corrected)
    # spots lower "zebra": dotted vs random lies clearly below the random CAVs (checked)
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
# A tiny p from many runs says the offset is not run-to-run noise, not that the concept matters.

# %%
sd = sig["striped"].std
print(f"striped, R = {R}: spread of the scores (standard deviation) {sd:.3f}, standard error of their mean "
      f"{sd / np.sqrt(R):.3f}")
print(f"random CAVs: mean {sig.random_scores.mean():.2f}, single ones from {sig.random_scores.min():.2f} "
      f"to {sig.random_scores.max():.2f}")

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-2", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Question (5 min, ★☆☆).** Why can a score differ from 0.5 and still be not significant?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
# Single random CAVs also produce scores far from 0.5 at a given layer (the spread printed above), although
# their mean sits near it. What matters is whether the concept's scores differ from the random CAVs' scores
# more than the run-to-run spread explains.
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# ### A sharper question: would a random image set do as well?
#
# R cannot answer whether another image set, chosen at random, would be offset as much as "striped". So
# ask it directly: draw K random image sets of 50, run each through exactly the same R runs *as if it were
# a concept*, and rank the concept's mean score among their K means. This is a **Monte Carlo test**
# (Davison & Hinkley 1997, section 4.2): with $c$ the median of all K + 1 means,
#
# $$p = \frac{1 + \#\{k : |m_k - c| \ge |m_C - c|\}}{K + 1},$$
#
# two-sided, where $m_C$ is the concept's mean and $m_k$ the k-th random set's. If the concept set were one
# more random set, all K + 1 ranks would be equally likely, so $p \le \alpha$ would happen with probability
# at most $\alpha$, on any model: the test's false-alarm rate is known by construction. A concept is
# significant when its Bonferroni-corrected p is strictly below 0.05 ($p < 0.05$). The price
# is power: the smallest p is $1/(K+1)$, so with three concepts a concept needs at least 60 random sets
# before it can be significant at all (the cell after the exercise prints the verdict for each K). The
# last cell of this section runs it, one-sided, with K = 200 on both models.

# %% [markdown] nbgrader={"grade": false, "grade_id": "my_rank_p-task", "locked": true, "schema_version": 3, "solution": false}
# **Exercise (10 min, ★★☆).** Write the rank test's p-value: given the concept's mean score `value` and the
# K random sets' mean scores `null` (a 1-D array), return $p$ as defined above. Count a random set exactly
# as far from the centre as the concept (a tie) as "at least as far".

# %% nbgrader={"grade": false, "grade_id": "my_rank_p", "locked": false, "schema_version": 3, "solution": true}
@xaikit.exercise(xaikit.check_rank_p)  # a stub or a failed check: later calls use xaikit's reference
def my_rank_p(value, null):
    ### BEGIN SOLUTION
    null = np.asarray(null, dtype=float)
    centre = np.median(np.append(null, value))  # the median of all K + 1 means
    far = np.abs(null - centre) >= abs(value - centre)  # (K,) random sets at least as far out
    return (1 + far.sum()) / (len(null) + 1)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "my_rank_p-check", "locked": true, "points": 1, "schema_version": 3, "solution": false}
assert xaikit.check_rank_p(my_rank_p), "see the report above: which case, which mistake"
### BEGIN HIDDEN TESTS
assert xaikit.check_rank_p(my_rank_p, verbose=False).passed, "graded: my_rank_p must be written and pass every case"
### END HIDDEN TESTS

# %% [markdown]
# Your function on the smallest possible cases: a concept beyond every one of K random sets gets the
# smallest p the test can give, and Bonferroni multiplies it by the three concepts tested.

# %%
for K in (19, 59, 60, 100):
    p_min = my_rank_p(1.0, np.linspace(0.3, 0.7, K))  # beyond every random set
    p_corrected = min(1.0, 3 * p_min)
    verdict = "can be significant" if p_corrected < 0.05 else "can never be significant"  # p < 0.05
    print(f"K = {K:3d}: smallest p {p_min:.4f}, times 3 concepts {p_corrected:.4f}: a concept {verdict}")
assert np.isclose(my_rank_p(1.0, np.linspace(0.3, 0.7, 100)), 1 / 101)  # closed form: 1/(K+1)

# %% [markdown]
# ### What a ground-truth control shows
#
# The same test on the control model, which the intervention table found blind to texture, is the check
# that tells *sensitivity* from *use*. The cell runs it with the same concepts and random sets and prints,
# for this model, where "striped" lies against the random CAVs and the t-test's verdict. A directional
# derivative measures how the logit *would* move if the activations moved towards the concept, and a model
# can be sensitive to a direction it never needed: on the control the zebra logit can still rise along a
# striped CAV for many zebras, and the t-test, which takes the shift that the shared concept images give
# every run for a signal, can call that significant on some training runs. So a significant TCAV score says
# "this direction moves the class logit more than random directions do", not "the model was trained to use
# this concept"; a ground-truth control, checked against random image sets posing as concepts, is how to
# tell the two apart.
#
# Then the rank test among K = 200 random sets, on both models. Kim et al. test two-sided, since a concept
# may raise a class or lower it. Here the direction is known before any score: section 4 painted
# stripes, dots and bubbles onto the zebras and measured the logit before any TCAV score was computed, so
# each concept's direction is fixed in advance, and the cell takes it from that table (it prints each
# direction) and passes it to the test. The question becomes "does the concept's
# mean score lie beyond every random set's *on the side the intervention predicts*?", with
# $p = (1 + \#\{k : m_k \ge m_C\}) / (K + 1)$ for "raises" (and $\le$ for "lowers"). Its false-alarm
# rate is still at most alpha by construction, but a random set that lands far out on the *other* side no
# longer takes the verdict away, which is why on some training runs the one-sided test finds stripes where
# the two-sided one does not (lab 07 prints both on this build). The direction must come
# from outside the scores; choosing it after seeing them would double the false-alarm rate. The cell prints
# the p-value of "striped" on each model: a test that finds stripes on the model that uses them and not on
# the control is a test that can tell use from sensitivity. With K = 200 the smallest corrected p is
# 3/201, so stripes stay significant even if two random sets score above them. It also prints each
# concept's verdict on the main model. The cell takes a few minutes on a laptop CPU and shows a progress bar.

# %%
if MODEL.startswith("embedded"):  # the control lives in the embedded world, read at the main model's block
    control_zebras = iw.class_images("zebra", tcav_claims.N_CLASS_IMAGES, "control", seed=0)
    sig_control = tcav.tcav_significance(control, tested, control_zebras, target="zebra", layer=LAYER,
                                         random_sets=randoms[:R + 1], R=R, pooling=POOLING,
                                         processor=control_processor)
    for name, r in (("main", sig), ("control", sig_control)):
        s = r["striped"]
        print(f"{name:>7} model: striped for zebra, mean {s.mean:.2f} vs random CAVs "
              f"{r.random_scores.mean():.2f}, t-test p = {s.p_corrected:.2g} "
              f"({'significant' if s.significant else 'not significant'})")
    print(f"the intervention on the control: a striped body moves its zebra logit by "
          f"{truth['control'].texture_effect('striped'):+.2f} against the average texture")
    # each concept's direction, fixed by section 4's intervention on the main model before any TCAV score
    direction = {c: "greater" if truth["main"].texture_effect(c) > 0 else "less" for c in tested}
    print("the intervention's directions:", ", ".join(
        f"{c} {'raises' if a == 'greater' else 'lowers'} zebra" for c, a in direction.items()))
    K = 200  # random image sets posing as concepts: the smallest p is 1/(K+1), times 3 concepts
    rank = {name: tcav.tcav_significance(m, tested, imgs, target="zebra", layer=LAYER, random_sets=randoms[:R + 1],
                                         R=R, pooling=POOLING, processor=proc, test="rank", n_null=K,
                                         alternative=direction, progress=True)
            for name, m, proc, imgs in (("main", model, processor, zebras),
                                        ("control", control, control_processor, control_zebras))}
    for name, r in rank.items():
        s = r["striped"]
        print(f"{name:>7} model: striped raises zebra? one-sided rank test among {K} random sets, "
              f"p = {s.p_corrected:.3f} ({'significant' if s.significant else 'not significant'})")
    print("   main model, each concept in the intervention's direction:", ", ".join(
        f"{c} p = {s.p_corrected:.3f} ({'significant' if s.significant else 'not significant'})"
        for c, s in rank["main"].concepts.items()))
    claim("05.5-rank-main-striped", rank["main"]["striped"].p_corrected)
    claim("05.5-rank-control-striped", rank["control"]["striped"].p_corrected)
else:
    print("the control model lives in the embedded image world: set MODEL = 'embedded' to run this cell")

# %% [markdown]
# ## 6. Summary
# *Beyond the lectures: Kim et al., Interpretability beyond feature attribution (TCAV), 2018.*
#
# | step | what it computes | what it tells you | what it does not | where |
# | --- | --- | --- | --- | --- |
# | **CAV** | the unit normal of a linear boundary between concept and counterpart activations at one block | a direction in which the concept's images differ from the others | *the* concept: another regulariser gives another direction; chance held-out accuracy means no direction at all | §3 |
# | **directional derivative** $S(x)$ | the class logit's gradient at the block, dotted with the CAV | whether moving the activations towards the concept would raise the logit for this image | whether the model *uses* the concept (sensitivity is not use) | §4 |
# | **TCAV score** | the fraction of class images with $S > 0$ (or the magnitude variant) | how often the concept direction pushes the class up | for a relative CAV "A vs B", whether A raises or B lowers the class | §4 |
# | **intervention** | the logit after repainting the input, everything else kept | what the model uses, measured without TCAV | why (which internal features carry it) | §4 |
# | **t-test against random CAVs** | R runs of the concept against R runs of random CAVs | that the offset is not run-to-run noise | that another random image set would not be offset as much; p shrinks with R for any fixed offset | §5 |
# | **rank test among random concepts** | the concept's rank among K random sets posing as concepts, one-sided when the intervention fixed the direction first | how unusual the concept is among sets that certainly carry none, with a known false-alarm rate | a p below $1/(K+1)$: a verdict needs many random sets | §5, lab 07 |
# | **ground-truth control** | the same test on a model that cannot use the concept | whether the test tells use from sensitivity | anything about the main model on its own | §5, lab 07 |
