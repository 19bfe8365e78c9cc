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
# that held for every training run of the embedded model is an executed `assert`; the lecture's results
# that did not hold are printed beside its numbers and discussed.
#
# 1. ViT recap: an image as a sequence of patches
# 2. Concepts: example images
# 3. Activations and CAVs
# 4. Directional derivatives and the TCAV score
# 5. Significance against random concepts
# 6. A ground-truth control
# 7. TCAV by layer
#
# References: Kim et al. (2018), *Interpretability beyond feature attribution: quantitative testing with
# concept activation vectors (TCAV)*; Dosovitskiy et al. (2021), *An image is worth 16x16 words*; Cimpoi et
# al. (2014), *Describing textures in the wild*. The code lives in `xaikit.concepts.tcav`, `xaikit.concepts.imageworld` and
# `xaikit.widgets`.

# %%
import numpy as np

import xaikit
from xaikit import pick
from xaikit.concepts import imageworld as iw
from xaikit.concepts import tcav
from xaikit.models import arch, load_vit, vitworld
from xaikit.widgets import ConceptGalleryPanel, LayerSweepPanel, PatchGridPanel, TCAVPanel

xaikit.set_seed(0)

# %% [markdown]
# **Choose the model.** `"embedded"` is xaikit's offline ViT, trained on a generated image world whose
# classes include "zebra" (built by `python -m xaikit prepare`). Change the string to
# `"google/vit-base-patch16-224"` (the lecture's model, class "zebra"; needs a network) and everything
# below runs on it; the lecture looks at its layer 10.

# %%
MODEL = "embedded"
model, processor = load_vit(MODEL)
# embedded: block 2 of 0-3, the lecture's depth (section 7 says how it was chosen); the lecture's ViT: block 10
LAYER = vitworld.TCAV_LAYER if MODEL.startswith("embedded") else 10
POOLING = "flatten"  # all tokens, as in the lecture's code
print(type(model).__name__, "|", arch.n_layers(model), "blocks |", len(model.config.id2label), "classes |",
      "on", model.device)

# %% [markdown]
# ## 1. ViT recap: an image as a sequence of patches
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
assert grid.result["n_tokens"] == side * side + 1
emb = arch.embeddings_module(model)
n_patches = (model.config.image_size // model.config.patch_size) ** 2  # at the model's own input size
assert tuple(emb.position_embeddings.shape) == (1, n_patches + 1, model.config.hidden_size)  # [CLS] + patches
grid

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
    assert sum(p == t for p, t in zip(predicted, truth, strict=True)) >= 3

# %% [markdown]
# The image world (documented in `xaikit.concepts.imageworld`): zebras are striped quadrupeds and horses
# plain ones, with the same silhouette; leopards (a low cat) and sheep are spotted; flags are checkered.
# Half of the zebra pictures show a puddle of foam, as at a waterhole, against a fifth of every other
# class's. So the three concepts of the lecture have known strengths for "zebra": **stripes** define it,
# **bubbles** are a weak context cue, and **dots** are the mark of two other classes. TCAV should find
# striped > bubbly > dotted, the order the lecture's ImageNet ViT shows.

# %%
x_test, y_test, _ = iw.make_dataset(pick(200, 100), "main", seed=123)
if MODEL.startswith("embedded"):
    from xaikit.models.vitworld import accuracy

    acc = accuracy(model, x_test, y_test)
    print(f"held-out accuracy: {acc:.3f}")
    assert acc >= 0.9  # training seeds 0-4 of the recipe: 0.95-0.99 on 600 held-out images

# %% [markdown]
# ## 2. Concepts: example images
#
# A concept is a set of example images. The lecture takes texture photos from the Describable Textures
# Dataset; xaikit draws textures of the same kinds, at random colours, scales and angles, so that colour
# says nothing. TCAV also needs *random* sets: images with no particular concept. Ours are collages of
# random textures that fill the frame as the concept images do (section 6 says why that matters).

# %%
N = 50
concepts = {c: iw.concept_images(c, N, seed=0) for c in ("striped", "dotted", "bubbly", "zigzag", "checkered")}
zebras = iw.class_images("zebra", vitworld.N_CLASS_IMAGES, "main", seed=0)  # 100
gallery = ConceptGalleryPanel(concepts)
gallery.set(concept="striped")
assert gallery.result["images"].shape[0] == 8
gallery

# %% [markdown]
# ## 3. Activations and CAVs
#
# At layer $l$ the activations $a_l(x)$ of the concept images and of counterpart images are separated by
# a linear classifier. The **CAV** $v_C$ is the unit normal of its decision boundary, pointing towards the
# concept. First check that the classifier separates the sets on held-out images: a CAV with chance
# accuracy means nothing.

# %%
a_striped = tcav.activations(model, concepts["striped"], LAYER, POOLING, processor)
a_dotted = tcav.activations(model, concepts["dotted"], LAYER, POOLING, processor)
print("activations:", a_striped.shape)
cav = tcav.train_cav(a_striped, a_dotted, "logistic", concept="striped", negative="dotted", layer=LAYER,
                     pooling=POOLING)
print(f"CAV striped vs dotted: held-out accuracy {cav.accuracy:.2f}")
assert cav.accuracy >= 0.9

# %% [markdown]
# **Exercise.** Write a CAV yourself: fit a linear classifier that tells the concept activations (label 1)
# from the counterpart activations (label 0), and return the unit normal of its boundary, pointing towards
# the concept.

# %%
def my_cav(concept_acts, negative_acts):
    ### BEGIN SOLUTION
    from sklearn.linear_model import LogisticRegression

    X = np.concatenate([concept_acts, negative_acts])
    y = np.r_[np.ones(len(concept_acts)), np.zeros(len(negative_acts))]
    w = LogisticRegression(max_iter=1000).fit(X, y).coef_[0]
    return w / np.linalg.norm(w)
    ### END SOLUTION


assert xaikit.check_cav(my_cav).passed

# %% [markdown]
# **Exercise.** Write the TCAV score yourself: given the gradients `grads` (N, D) of the class logit at
# the layer and a CAV (D,), return the fraction of images whose directional derivative is positive.

# %%
def my_tcav_score(grads, cav):
    ### BEGIN SOLUTION
    return float(np.mean(grads @ cav > 0))
    ### END SOLUTION


assert xaikit.check_tcav_score(my_tcav_score).passed

# %% [markdown]
# ## 4. Directional derivatives and the TCAV score
#
# For an image $x$ of class $k$, the directional derivative
# $S_{C,k,l}(x) = \nabla h_{l,k}(a_l(x)) \cdot v_C$ says whether nudging the activations towards the
# concept raises the class logit. The TCAV score is the fraction of class images with $S > 0$. The
# lecture's four pairs for zebra: striped vs dotted ~0.95, bubbly vs striped ~0.1, dotted vs bubbly
# ~0.05, striped vs bubbly ~0.95.

# %%
pairs = tcav.pair_scores(model, concepts, zebras, "zebra", LAYER, pooling=POOLING, processor=processor)
for (a, b), score in pairs.items():
    print(f"TCAV({a} vs {b}, zebra) = {score:.2f}   (lecture ~{tcav.LECTURE_PAIRS[(a, b)]})")
if MODEL.startswith("embedded"):
    # assert only the claims that held for every training seed (the table below); print the others
    for name, holds in vitworld.pair_checks(pairs).items():
        asserted = name in vitworld.ASSERTED_CLAIMS
        if asserted:
            assert holds, (name, pairs)
        print(f"{name:<26} {'holds' if holds else 'does NOT hold'} for this model"
              + ("" if asserted else "   (not asserted: it depends on the training run)"))

# %% [markdown]
# **What holds for every training run, and what does not.** A result that one training run gives and the
# next does not is not a result. `benchmarks/tcav_robustness.py` trains this recipe with training seeds
# 0-9 (same data recipe, new initialisation and batch order) and scores each pair of models with image
# sets drawn fresh for that seed. At block 2 with all tokens flattened, over the ten seeds:
#
# | claim (zebra) | lecture | ten seeds | asserted here |
# | --- | --- | --- | --- |
# | striped vs bubbly | ~0.95 | 0.88-1.00 | yes (>= 0.8) |
# | bubbly vs striped | ~0.1 | 0.00-0.12 | yes (<= 0.25) |
# | striped vs dotted | ~0.95 | 0.40-0.85 | no: >= 0.8 for only 5 of 10 seeds |
# | dotted vs bubbly | ~0.05 | 0.50-0.95 | no: the *opposite* of the lecture, on all 10 seeds |
#
# (One image draw per seed; the draw in this notebook is another one, so its numbers above can fall
# outside these ranges.) So stripes against bubbles is a stable finding. Stripes against dots is not:
# the score ranged from 0.40 to 0.85 with the training run. And between dots and bubbles, these models
# side with the dots (0.50 or more on every seed), where the lecture's ImageNet ViT sides with the
# bubbles. A relative CAV only says how *this* model's zebra logit treats the difference between two
# concept sets; a different model, trained on different images, can order two textures differently. Why
# ours prefers dots we have not pinned down.
#
# Swapping the two sets flips the CAV, so the score becomes one minus itself (up to images with
# $S = 0$ exactly):

# %%
one = tcav.tcav(model, concepts["striped"], concepts["dotted"], zebras, "zebra", LAYER, POOLING, processor=processor)
other = tcav.tcav(model, concepts["dotted"], concepts["striped"], zebras, "zebra", LAYER, POOLING,
                  processor=processor)
assert abs(one.score + other.score - 1) < 0.05
print(f"{one.score:.2f} + {other.score:.2f} = {one.score + other.score:.2f}")

# %% [markdown]
# **Counting signs, or weighing them.** The score above counts the class images whose logit rises along
# the CAV, however little. Kim et al. (2018, section 3.3) also define a *magnitude* variant,
# $\mathrm{TCAV}^{mag} = \sum_{x: S(x) > 0} S(x) \,/\, \sum_x |S(x)|$, which weighs each image by how
# strongly it is pushed. It lies in [0, 1] too, and swapping the two sets turns it into one minus itself
# *exactly*, since every $S$ changes sign. Where the two differ, a few images are pushed the other way
# but only weakly (magnitude beyond the count), or strongly (magnitude short of it).

# %%
for a, b in vitworld.CLAIM_BOUNDS:
    r = tcav.tcav(model, concepts[a], concepts[b], zebras, "zebra", LAYER, POOLING, processor=processor)
    derivs = r.derivatives  # (class images,) S(x)
    by_hand = derivs[derivs > 0].sum() / np.abs(derivs).sum()  # the paper's formula
    assert abs(r.magnitude - by_hand) < 1e-9
    print(f"TCAV({a} vs {b}, zebra): count {r.score:.2f}, magnitude {r.magnitude:.2f}")
assert abs(one.magnitude + other.magnitude - 1) < 1e-6  # swapped sets: exactly one minus the other
if MODEL.startswith("embedded"):
    # held for training seeds 0-9 (benchmarks/tcav_robustness.py's models, its image draws): 0.96-1.00,
    # while the count was 0.88-1.00: the zebras that stripes push down, they push down only weakly
    striped_bubbly = tcav.tcav(model, concepts["striped"], concepts["bubbly"], zebras, "zebra", LAYER, POOLING,
                               processor=processor)
    assert striped_bubbly.magnitude >= 0.9, striped_bubbly.magnitude

# %% [markdown]
# ## 5. Significance against random concepts
#
# A single score can be luck: a CAV trained on two sets of *random* images also gets some score. TCAV
# repeats the experiment with R random counterpart sets, compares the concept's R scores with R scores
# of random-vs-random CAVs by a two-sided t-test, and corrects the p-values for the number of concepts
# tested (Bonferroni). Grey hatched bars are not significant.
#
# This is the test of the original TCAV code, not quite the paper's wording: Kim et al. (2018, section
# 3.5) test against the null hypothesis "score = 0.5" over about 500 runs; the reference code (and xaikit)
# compares with the scores of random-vs-random CAVs instead, because random directions themselves rarely
# score 0.5 (the answer box below). R = 10 keeps the notebook quick, and it shows: over ten training
# seeds "striped" was significant for nine; on seed 8 its mean score was 0.88 against 0.60 for random
# CAVs, yet p = 0.12. So the cell asserts the score and prints the verdict. The summary also prints each
# CAV's held-out accuracy against random sets: far below section 3's striped-vs-dotted 0.9+, because the random
# collages contain stripes, dots and bubbles in some of their cells.

# %%
R = 10
randoms = [iw.random_images(N, seed=i) for i in range(2 * R + 1)]  # enough for the panel's R slider up to 20
tested = {c: concepts[c] for c in vitworld.CLAIM_CONCEPTS}  # striped, dotted, bubbly
sig = tcav.tcav_significance(model, tested, zebras, "zebra", LAYER, random_sets=randoms[:R + 1], R=R,
                             pooling=POOLING, processor=processor)
print(sig.summary())
if MODEL.startswith("embedded"):
    # held for all ten training seeds: stripes raise "zebra" for most zebra images, far above random CAVs
    assert sig["striped"].mean >= 0.8 and sig["striped"].mean > sig.random_scores.mean()
    # printed, not asserted: significant for nine of ten training seeds (seed 8: p = 0.12 at R = 10)
    print("striped significant for zebra:", sig["striped"].significant)

# %%
panel = TCAVPanel(model, processor, concept_sets=concepts, class_images={"zebra": zebras}, layer=LAYER,
                  pooling=POOLING, R=R, random_sets=randoms)
panel.set(R=R)
assert panel.error is None and panel.result["striped"].p_corrected == sig["striped"].p_corrected
panel

# %% [markdown]
# Move the **R** slider (it offers as many runs as there are random sets, 20 here): with R = 2 the t-test
# has two scores a side to go on, so one odd random set can swing the p-value; more runs narrow the
# spread of both samples.

# %% [markdown]
# ## 6. A ground-truth control
#
# Does a significant TCAV score really mean the model uses the concept? xaikit trained a second ViT,
# same architecture, on a **control world** with four classes, each with its own silhouette: zebra (the
# quadruped, dark legs and head), leopard (a low cat with a raised tail, dark legs and head), sheep and
# flag. Every class, zebra included, takes its texture uniformly at random from all six, so zebras are told
# apart by shape alone. Stripes cannot help that model. If TCAV measured
# *use*, TCAV("striped", zebra) would lose its significance there.

# %%
# the control exists for the embedded world only (with the lecture's ViT this section is skipped)
CONTROL_LAYER = vitworld.TCAV_LAYER
control, control_processor = load_vit("embedded-control")
# the control model must have learned its world, or the check means nothing
xc_test, yc_test, _ = iw.make_dataset(pick(200, 100), "control", seed=123)
control_acc = accuracy(control, xc_test, yc_test)
print(f"control model held-out accuracy: {control_acc:.3f}")
assert control_acc >= 0.85  # seeds 0-4 of the recipe: 0.97-0.98
control_zebras = iw.class_images("zebra", vitworld.N_CLASS_IMAGES, "control", seed=0)
# the same test as on the main model: the same three concepts, random sets and Bonferroni correction
sig_control = tcav.tcav_significance(control, tested, control_zebras, "zebra", CONTROL_LAYER,
                                     random_sets=randoms[:R + 1], R=R, pooling=POOLING, processor=control_processor)
print(sig_control.summary())
striped_c = sig_control["striped"]
print(f"striped for zebra on the control: mean {striped_c.mean:.2f} vs random CAVs "
      f"{sig_control.random_scores.mean():.2f}, p = {striped_c.p_corrected:.2g} "
      f"({'not ' if not striped_c.significant else ''}significant)")
# no assert on the control's p-value: over training runs and image draws it was not stable (see below)

# %% [markdown]
# Two design choices made the control cleaner than it first was, and both were found by getting it wrong:
#
# * **Random images must fill the frame like concept images do.** With random *scenes* as counterparts
#   (an object on a smooth background), the CAV of "striped vs random" also learns "the frame is full of
#   texture", and the control model's zebra logit reacted to that. Our random images are collages of
#   random textures (stripes among them, in some cells), so that difference is gone; what is left is
#   "all stripes" against "a mix".
# * **Both four-legged control classes have dark legs and heads.** When only the cat had them, "texture
#   where the legs are" told a zebra from a cat, and every texture-filled CAV raised "zebra" on the
#   control model.
#
# In short: TCAV tests a *direction* in activation space against random directions. Whatever else
# separates the concept set from the random sets is part of that direction.
#
# **The control is not clean, and that is the lesson.** Look at the control's mean score for "striped":
# its zebra logit also rises along the striped CAV for most zebra images, although stripes never
# predicted "zebra" in its training data. Over two control models and four image draws each, the mean
# ranged 0.49-0.95 against 0.40-0.60 for random CAVs (the draw in this notebook is one more, printed
# above), and whether it reached significance depended on the draw: corrected p from 0.0014 to 1. Over training seeds 0-4, one control model of five was significant
# on its first draw (p = 0.012). Even "the main model gets the smaller p-value" failed once: on a pair
# trained on a GPU, one draw gave the control 0.0023 and the main model 0.0033. So this notebook asserts
# nothing about the control's p-value; it prints it.
#
# We also tried closing the last leak we could see. The shipped control zebra has the main world's long
# dark legs and a thin dark tail, and long thin dark bars are what a stripe is. So we tried a control world
# in which the zebra has the cat's short dark legs and a textured tail (three training seeds; not shipped,
# and its recipe is not in the repository, because it did not help):
#
# * seed 0: the striped score stayed near random (mean 0.39-0.63 over four image draws, p = 0.99-1);
# * seed 1: it fell far *below* random on every draw (mean 0.02-0.08, corrected p from 5e-5 to 0.04). The
#   test is two-sided, so the summary calls that significant too: here the striped direction *lowers* the
#   zebra logit. Read the mean, not only the verdict;
# * seed 2: one draw of three rose to 0.94 (p = 0.04), the other two did not (0.58 and 0.33, p = 1 and
#   0.78).
#
# Whether a control model's logit moves with a concept it never needed, and in which direction, depends
# on the training run, and on one seed on the image draw as well.
#
# A directional derivative measures *sensitivity*: how the logit would move if the activations moved
# towards the concept, and a model can be sensitive to a direction it never needed. A significant TCAV
# score says "this direction moves the class logit", not "the model was trained to use this concept".
# A ground-truth control, checked over several training runs and image draws, is how to tell the two
# apart, and here it tells us that one significance test at R = 10 cannot.

# %% [markdown]
# <details class="xk-answer"><summary>Answer: why can a score differ from 0.5 and still be not significant?</summary>
# Random CAVs also produce scores far from 0.5 at a given layer (their directions are not uniform in the
# activation space). What matters is whether the concept's scores differ from the random CAVs' scores
# more than the run-to-run spread explains.
# </details>

# %% [markdown]
# ## 7. TCAV by layer
#
# Concepts are not equally visible at every depth. The sweep runs the significance test at each block;
# hollow markers are not significant.
#
# **How block 2 was chosen.** The principle: take the lecture's depth. Its layer 10 of ViT-base's 0-11 is
# the second-to-last block, the deepest whose patch tokens still reach the classifier through one more
# attention step (after the last block only [CLS] is read, which is why mean pooling scores exactly 0 at
# block 3). Here that is block 2 of 0-3. In honesty, we wrote that principle down *after* seeing every
# block's numbers over training seeds 0-4, so seeds 5-9, trained after the choice, are the check that it
# was not fitted to those five: there, block 2 kept both pair claims on all five (striped vs bubbly
# 0.88-1.00, bubbly vs striped 0.00-0.12) and "striped" was significant on four (seed 8: p = 0.12). Over
# seeds 0-4, flatten pooling, how many of five seeds kept each claim:
#
# | block | striped vs bubbly >= 0.8 | bubbly vs striped <= 0.25 | striped significant (main) | not significant (control) | striped vs dotted | dotted vs bubbly |
# | --- | --- | --- | --- | --- | --- | --- |
# | 0 | 2 | 3 | 3 | 4 | 0.15-0.80 | 0.70-0.85 |
# | 1 | 5 | 5 | 5 | 4 | 0.60-0.93 | 0.57-0.88 |
# | **2** | **5** | **5** | **5** | **4** | 0.62-0.85 | 0.53-0.88 |
# | 3 | 5 | 5 | 5 | 4 | 0.70-0.85 | 0.68-0.90 |
#
# Blocks 1-3 tie on these counts, so the data alone would not have picked block 2; the lecture's depth
# did. Mean pooling kept "striped vs bubbly >= 0.8" on at most one seed at any block (at block 3 it scores
# exactly 0: after the last block no patch token reaches the logit). The sweep below is *this*
# model only.

# %%
sweep = LayerSweepPanel(model, processor, concept_sets=concepts, class_images={"zebra": zebras}, pooling=POOLING,
                        R=pick(5, 3), random_sets=randoms)
sweep.set(R=pick(5, 3))
# the claim in the text: after the last block only [CLS] reaches the logit, so a CAV added to every patch
# token (mean pooling) moves nothing, and every directional derivative is exactly 0
last = tcav.tcav(model, concepts["striped"], concepts["dotted"], zebras, "zebra", arch.n_layers(model) - 1, "mean",
                 processor=processor)
assert np.all(last.derivatives == 0)
assert sweep.error is None
assert sweep.result.mean.shape == (3, arch.n_layers(model))
print(np.round(sweep.result.mean, 2))
sweep
