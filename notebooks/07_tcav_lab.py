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
# # 07 — TCAV lab: a ground-truth control, layers, sorting by a CAV, and where a ViT looks
#
# Lecture 05 built TCAV on a Vision Transformer (ViT): concept activation vectors (CAVs), directional
# derivatives, the TCAV score, the ground truth by intervention and a t-test against random CAVs. This lab
# asks whether TCAV's verdicts can be trusted, on a model we know does *not* use stripes, and looks at
# the same models from three more sides.
# Every number the text states is printed by the code that computes it, and every claim about one is
# checked when its cell runs; numbers that depend on how a model happened to train are printed as this
# model's.
#
# **Learning objectives.** After this lab you can
#
# - use a ground-truth control model to tell a concept a model is *sensitive* to from one it *uses*;
# - run the rank test among random image sets posing as concepts, and measure the t-test's false alarms;
# - read TCAV scores by layer without choosing the layer by its result;
# - sort images by their cosine with a CAV, and read a relative CAV "A vs B" beside both concepts' scores
#   against random images;
# - score relevance maps of a ViT against the pixels the image world drew, and by perturbation.
#
# **Outline** (about two hours), after a set-up cell that rebuilds lecture 05's ingredients:
#
# 1. A ground-truth control, and random image sets as the yardstick
#    - is the t-test fair? Random image sets posing as concepts
#    - does TCAV agree with the ground truth?
# 2. TCAV by layer
# 3. Which images does a CAV point at? Sorting by a CAV, and relative CAVs
#    - relative CAVs: a concept against a concept
# 4. Where the ViT looks, against the pixels we drew
# 5. Summary
#
# References: Kim et al. (2018), *Interpretability beyond feature attribution: quantitative testing with
# concept activation vectors (TCAV)*; Davison & Hinkley (1997), *Bootstrap methods and their application*;
# Abnar & Zuidema (2020), *Quantifying attention flow in transformers*; Chefer, Gur & Wolf (2021),
# *Transformer interpretability beyond attention visualization* (CVPR) and *Generic attention-model
# explainability* (ICCV). The code lives in `xaikit.concepts`, `xaikit.models.imageworld` and `xaikit.widgets`.

# %%
# Instructors, before a lecture: uncomment the two lines below for presenter mode (bigger fonts and
# figures, fixed seeds, fast mode); xaikit.course.presenter.off() switches it back (README: "Presenter mode").
# import xaikit.course.presenter
# xaikit.course.presenter.on()

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch

import xaikit
from xaikit import pick, plotting
from xaikit.concepts import tcav
from xaikit.course.claims import claim
from xaikit.course.claims import tcav as tcav_claims
from xaikit.image import registry as vr
from xaikit.lab import intervention, pixel_scores
from xaikit.models import arch, load_vit, vitworld
from xaikit.models import imageworld as iw
from xaikit.widgets import CAVSortPanel, LayerSweepPanel, RelevancePanel

SEED = xaikit.set_seed(0)  # Python's random, NumPy and torch

# %% [markdown]
# **Choose the model.** `"embedded"` is xaikit's offline ViT, trained on a generated image world whose
# classes include "zebra" (built by `python -m xaikit prepare`), and its control model. Change the string
# to `"google/vit-base-patch16-224"` (the lecture's model, class "zebra"; needs a network) and the cells
# that do not need the embedded world run on it.

# %%
MODEL = "embedded"
# what the lecture's model size costs: random-weight models of its shape, timed by benchmarks/lecture_scale.py
print(xaikit.models.lecture_costs("tcav_activations", "tcav_significance", "tcav_rank"))
model, processor = load_vit(MODEL)
control, control_processor = load_vit("embedded-control")  # section 1's control model
POOLING = "flatten"  # all tokens, as in the lecture's code
print(type(model).__name__, "|", arch.n_layers(model), "blocks |", len(model.config.id2label), "classes |",
      "on", model.device)

# %% [markdown]
# ## Set-up: lecture 05's ingredients
#
# The cell rebuilds what lecture 05 computed, with the same seeds: the concept sets, the 100 zebras, the
# random sets, the block chosen by lecture 05's rule (the deepest block whose every token still reaches
# the classifier at which the striped-vs-dotted CAV reaches a held-out accuracy of 0.9; it never looks at a
# TCAV score), the striped-vs-dotted CAV, the t-test of "striped", "dotted" and "bubbly" against random
# CAVs, and the ground truth by intervention: each zebra repainted with every body texture, and shown with
# and without a puddle of foam, on the main and the control model.

# %%
N, R = 50, 10
concepts = {c: iw.concept_images(c, N, seed=0) for c in ("striped", "dotted", "bubbly", "zigzag", "checkered")}
zebras = iw.class_images("zebra", tcav_claims.N_CLASS_IMAGES, "main", seed=0)  # (100, 64, 64, 3)
tested = {c: concepts[c] for c in tcav_claims.CLAIM_CONCEPTS}  # striped, dotted, bubbly
randoms = [iw.random_images(N, seed=i) for i in range(2 * R + 1)]  # lecture 05's random sets
n_blocks = arch.n_layers(model)
a_by_block = {c: [tcav.activations(model, concepts[c], b, POOLING, processor) for b in range(n_blocks)]
              for c in ("striped", "dotted")}  # one forward pass per set gives every block
acc_by_block = [tcav.train_cav(a_by_block["striped"][b], a_by_block["dotted"][b]).accuracy for b in range(n_blocks)]
LAYER = tcav.choose_layer(acc_by_block, threshold=0.9)
if LAYER is None:  # no candidate block separates stripes from dots: fall back on the lecture's depth
    LAYER = n_blocks - 2
a_striped = a_by_block["striped"][LAYER]  # (50, tokens * hidden size)
cav = tcav.train_cav(a_striped, a_by_block["dotted"][LAYER], concept="striped", negative="dotted", layer=LAYER,
                     pooling=POOLING)
sig = tcav.tcav_significance(model, tested, zebras, target="zebra", layer=LAYER, random_sets=randoms[:R + 1],
                             R=R, pooling=POOLING, processor=processor)
print(f"block {LAYER} of 0-{n_blocks - 1}; CAV striped vs dotted: held-out accuracy {cav.accuracy:.2f}")
print(sig.summary())
if MODEL.startswith("embedded"):
    scenes = iw.scenes("zebra", tcav_claims.N_CLASS_IMAGES, "main", seed=0)
    assert np.array_equal(np.stack([sc.image() for sc in scenes]), zebras)  # exact: the same uint8 pictures
    control_scenes = iw.scenes("zebra", tcav_claims.N_CLASS_IMAGES, "control", seed=0)
    truth = {"main": intervention.intervene(model, scenes, target="zebra", processor=processor),
             "control": intervention.intervene(control, control_scenes, target="zebra",
                                               processor=control_processor)}
    print("effect on the zebra logit of each body texture against the average of the six, and of the foam:")
    for name, t in truth.items():
        print(f"  {name:>7}: " + "  ".join(f"{k} {t.texture_effect(k):+.2f}" for k in iw.TEXTURES)
              + f"  | foam {t.foam_effect():+.2f}")

# %% [markdown]
# ## 1. A ground-truth control, and random image sets as the yardstick
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
# checks the result on pictures it never saw (the intervention in the set-up did the same by repainting
# zebras). Such a control is Kim et al.'s own check (2018, section 4.3): they trained models on images
# with a caption whose agreement with the label they set, so that they knew whether a model read the
# caption or the object, and asked whether TCAV said the same. If TCAV measured *use*, TCAV("striped",
# zebra) would lose its significance there.

# %%
# the control is the embedded world's, read at the main model's block; with another main model (the
# lecture's ViT, deeper than the control) lecture 05's rule picks the control's own block
if MODEL.startswith("embedded"):
    CONTROL_LAYER = LAYER
else:
    control_acc_by_block = [
        tcav.train_cav(*(tcav.activations(control, concepts[c], b, POOLING, control_processor)
                         for c in ("striped", "dotted"))).accuracy for b in range(arch.n_layers(control))]
    CONTROL_LAYER = tcav.choose_layer(control_acc_by_block, threshold=0.9)
    if CONTROL_LAYER is None:
        CONTROL_LAYER = arch.n_layers(control) - 2
    print(f"control's block by lecture 05's rule: {CONTROL_LAYER}")
# the control model must have learned its world, or the check means nothing
# held-out pictures and their texture twins (the same scenes with another body texture), drawn in one pass
xc_test, yc_test, _, twins = iw.dataset_with_twins(pick(200, 100), "control", seed=123)
control_acc = vitworld.accuracy(control, xc_test, yc_test)
print(f"control model held-out accuracy: {control_acc:.3f}")
claim("07.1-control-accuracy", control_acc)
# the ground truth, checked without TCAV: give every held-out picture another body texture
with torch.no_grad():
    z_pic = control(**control_processor(images=list(xc_test), return_tensors="pt").to(control.device)).logits.cpu()
    z_twin = control(**control_processor(images=list(twins), return_tensors="pt").to(control.device)).logits.cpu()
same = (z_pic.argmax(-1) == z_twin.argmax(-1)).float().mean().item()
change = (z_pic[:, 0] - z_twin[:, 0]).abs().mean().item()
print(f"another texture keeps the control's answer for {same:.0%} of pictures; the zebra logit moves by "
      f"{change:.2f} on average (its spread over pictures: {z_pic[:, 0].std().item():.2f})")
claim("07.1-twin-same-answer", same)
control_zebras = iw.class_images("zebra", tcav_claims.N_CLASS_IMAGES, "control", seed=0)
# the same test as on the main model: the same three concepts, random sets and Bonferroni correction
sig_control = tcav.tcav_significance(control, tested, control_zebras, target="zebra", layer=CONTROL_LAYER,
                                     random_sets=randoms[:R + 1], R=R, pooling=POOLING, processor=control_processor)
print(sig_control.summary())
striped_c = sig_control["striped"]
print(f"striped for zebra on the control: mean {striped_c.mean:.2f} vs random CAVs "
      f"{sig_control.random_scores.mean():.2f}, p = {striped_c.p_corrected:.2g} "
      f"({'not ' if not striped_c.significant else ''}significant)")
# the t-test's verdict on the control, and how much smaller p is on the main model, vary between training runs
claim("07.1-ttest-control-striped", striped_c.p_corrected)
p_gap = claim("07.1-striped-p-main-below-control", sig["striped"].p_value - striped_c.p_value)

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
# significant (corrected $p < 0.05$) only if it lies further out than *every one* of the 100 random concepts
# (lecture 05 printed the verdict for each K: 60 would just allow that; 100 leaves a margin). A concept that moves the logit a little less than the most extreme
# random set is called not significant, however real its effect: even "dotted", which lowers "zebra" on
# the main model (the intervention says so), can miss this test.
#
# The same cell counts how many of the random concepts the t-test, Bonferroni-corrected like the
# concepts, would call significant; a calibrated test would flag 5% / 3 = 1.7%. The two models' runs are the
# slowest cell of the lab (1000 small CAVs each).

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
# the main model's p is printed (it varies between training runs); on the control, not significant is checked
claim("07.1-rank-main-striped", rank["main"]["striped"].p_corrected)
p_control = claim("07.1-rank-control-striped", rank["control"]["striped"].p_corrected)

# %% [markdown]
# **Reading the two tests.** The cell prints how many of the K random concepts the t-test would call
# significant on each model, beside the 1.7% a calibrated test would call. Its yardstick, R = 10
# random-vs-random scores, is itself one noisy draw, and the concept's R runs all share one image set, so
# it can flag far more random concepts than that. The rank test centres on the median of all K + 1 means,
# which one concept cannot drag far, and its false-alarm rate is at most its level by construction. Its
# price is power: "striped" on the main model must lie beyond every random concept, and a random set that
# happens to land as far out takes the verdict away, so on the main model the rank test's verdict is
# printed as this model's. On the control, "not significant" is what the lab checks.
#
# "Not significant" on the control does not mean "insensitive". On some training runs the control's
# striped mean lies well above 0.5 (this model's is printed above): the zebra logit then rises along the
# striped CAV for most zebras. Random image sets
# posing as concepts score just as far out there, so stripes do not stand out. The control's own answer
# is what ignores texture (checked above, on pictures and their twins); its activations are as sensitive
# to a texture direction as to any other.
#
# The same goes for "bubbly" and "dotted" on the control: foam and spots mean nothing there, yet their
# rows can come out significant by either test. Read the mean and the figure, not only the verdict. And
# look at where the gradient sits: the cell below prints, at the chosen block, the share of the zebra
# logit's squared gradient that falls on the [CLS] token (median over the 100 zebras) and for how many
# zebras the [CLS] part of $S$ alone has the sign of the whole $S$. Where [CLS] takes most of it, one
# token's direction decides the score, although the CAV was fitted on all tokens. (Scoring with [CLS]
# alone is another experiment: the CAV fitted on [CLS] alone is another direction.)
#
# A directional derivative measures *sensitivity*: how the logit would move if the activations moved
# towards the concept, and a model can be sensitive to a direction it never needed. A significant TCAV
# score says "this direction moves the class logit more than a random set's would", not "the model was
# trained to use this concept". A ground-truth control, checked against random image sets posing as
# concepts, is how to tell the two apart.

# %% [markdown]
# ### One side, stated first: p against K
#
# Lecture 05 ran the same rank test one-sided: each concept's direction was taken from the intervention
# (set-up) before any TCAV score was seen, and the question became "does the concept lie beyond every random
# set *on the side the intervention predicts*?". Kim et al. test two-sided because a concept may raise or
# lower a class; when the direction is fixed in advance, a random set far out on the other side no longer
# takes the verdict away. The one-sided p needs no new runs: it ranks the same mean score among the same K
# random concepts, so the cell computes it from the table above for both models. Then, on this build,
# striped's corrected p on the main model against K, the number of random concepts it is ranked among (the
# first K of the 100), both ways, beside the smallest p the test can give, 3/(K+1), and alpha. Where the
# two-sided curve lies above the one-sided one, random concepts on the other side of the median, as far
# from it as stripes, are what held it back; on a build where no random concept lies that far out, the two
# curves coincide (the cell says which). One build's curve is not the test's power, the share of training
# runs on which it finds stripes: that needs many builds.

# %%
if MODEL.startswith("embedded"):
    direction = {c: "greater" if truth["main"].texture_effect(c) > 0 else "less" for c in tested}
    n_tested = len(tested)  # Bonferroni, as in the test
    for name, r in rank.items():
        for c, a in direction.items():
            one_sided = min(1.0, n_tested * tcav.rank_p(r[c].mean, r.null_means, alternative=a))
            print(f"{name:>8} {c:>8} ({'raises' if a == 'greater' else 'lowers'} zebra by the intervention): "
                  f"two-sided p = {r[c].p_corrected:.3f}, one-sided p = {one_sided:.3f}")
    main_rank, ks = rank["main"], np.arange(20, K + 1, 5)
    striped_mean = main_rank["striped"].mean
    curves = {sided: [min(1.0, n_tested * tcav.rank_p(striped_mean, main_rank.null_means[:k], alternative=a))
                      for k in ks] for sided, a in (("two-sided", "two-sided"),
                                                    ("one-sided, direction from the intervention",
                                                     direction["striped"]))}
    assert np.isclose(curves["two-sided"][-1], main_rank["striped"].p_corrected)  # K = 100: the test's own p
    fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
    for (label, ps), colour, style in zip(curves.items(), plotting.OKABE_ITO, ("o-", "s--"), strict=False):
        ax.plot(ks, ps, style, color=colour, ms=7 if style == "o-" else 4, label=label)  # both seen where equal
    ax.plot(ks, np.minimum(1.0, n_tested / (ks + 1)), "k:", label=f"smallest p, {n_tested}/(K+1)")
    ax.axhline(0.05, color="0.5", lw=1, label="alpha = 0.05")
    ax.set_yscale("log")
    ax.set_xlabel("K, random concepts the concept is ranked among")
    ax.set_ylabel("striped's corrected p, main model")
    ax.legend(fontsize="small")
    plt.show()
    same = np.allclose(curves["two-sided"], list(curves.values())[1])
    print("on this build the two curves", "coincide at every K" if same else
          f"differ at {sum(not np.isclose(a, b) for a, b in zip(*curves.values(), strict=True))} of {len(ks)} values of K")

# %%
D = model.config.hidden_size  # the [CLS] token's numbers come first in a flattened row
cls_share, same_sign = {}, {}
# the control shares the main model's shape only in the embedded world (the set-up's CAV lives in that shape)
models_here = [("main", model, processor, zebras)]
if MODEL.startswith("embedded"):
    models_here.append(("control", control, control_processor, control_zebras))
for name, m, proc, imgs in models_here:
    g = tcav.gradients(m, imgs, LAYER, target="zebra", pooling=POOLING, processor=proc)  # (100, 65 * D)
    cls_share[name] = np.median((g[:, :D] ** 2).sum(1) / (g ** 2).sum(1))
    # the set-up's striped-vs-dotted CAV (fitted on the main model: on the control, a direction like any other)
    same_sign[name] = np.mean(np.sign(g[:, :D] @ cav.vector[:D]) == np.sign(g @ cav.vector))
    print(f"{name}: [CLS] holds a median {cls_share[name]:.0%} of the squared gradient at block {LAYER}; its part "
          f"of S (striped vs dotted) has the sign of S for {same_sign[name]:.0%} of the zebras")
if MODEL.startswith("embedded"):
    claim("07.1-cls-share-main", cls_share["main"])
    claim("07.1-cls-share-control", cls_share["control"])
    claim("07.1-cls-sign-main", same_sign["main"])
    claim("07.1-cls-sign-control", same_sign["control"])

# %% [markdown]
# ### Does TCAV agree with the ground truth?
#
# The set-up measured what each model uses by repainting its zebras (lecture 05, section 4). Now hold TCAV's answers against that
# table, concept by concept: the intervention says "raises" or "lowers" zebra where the effect on the
# logit is large enough (the threshold the cell prints), and "neither" below that; TCAV says "raises"
# or "lowers" where a test finds the concept significant (the sign of its offset from the random CAVs), and
# "neither" where it does not. For "bubbly" there are two interventions: a bubbly body, and the foam.

# %%
if MODEL.startswith("embedded"):
    EFFECT = 0.5  # the size of a logit change that counts as "raises" or "lowers"
    print(f"the intervention's verdict: a change of the zebra logit of at least {EFFECT} either way")

    def verdict(effect):
        return "raises" if effect >= EFFECT else "lowers" if effect <= -EFFECT else "neither"

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
    claim("07.1-agree-ttest", sum(a for a, _ in agree.values()))
    claim("07.1-agree-rank", sum(b for _, b in agree.values()))

# %% [markdown]
# Where they part, the table says why. **Foam:** the main model hardly uses it, and the control model's
# logit moves by less than the bound, yet "bubbly" can come out significant (either way) on some training
# runs: a direction the logit is *sensitive* to, not one the model *uses*. Nothing in TCAV tells the two
# apart; the intervention does. **Dots:** both agree that dots lower "zebra". Dots are the mark of the two
# spotted classes, so "dots lower zebra" may well be evidence for another class rather than a property of a
# zebra detector (the intervention measures the zebra logit only, so this is a reading, not a measurement);
# a relative score such as "bubbly vs dotted" (section 3) is high in part for that reason. **Stripes on
# the control:** not used, and the rank test finds no evidence; the t-test can still call them significant.
# **Stripes on the main model:** used; the t-test tends to call them significant, but it also calls more
# random concepts significant than a calibrated test would (the false-alarm rates printed above), so that
# verdict is weak evidence, and the rank test, calibrated at the price of power, may not find them
# significant. The rows "bubbly" and "bubbly (foam)" share one TCAV verdict (one CAV, two interventions),
# so the counts weigh that verdict twice.

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-control", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Question (10 min, ★★☆).** On the control, the zebra logit can rise along the striped CAV for most zebras,
# and yet the rank test calls "striped" not significant. Explain both facts, and say what a control must
# show before its "not significant" means anything.
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# A TCAV score measures sensitivity: the logit's gradient at the block, projected on the CAV. A direction
# picked out by any image set, random sets included, can have a positive projection for most zebras, so a
# score above 0.5 alone says little; the random sets posing as concepts land as far out on the control, so
# "striped" is unremarkable among them. A control's "not significant" means something only if (1) the
# control has learned its world (its held-out accuracy), (2) it does not use the concept, shown without
# TCAV (the twins keep its answer, the intervention moves its logit by little), and (3) the same test has
# power to spare on a model that does use it, since a test that never finds anything also passes the
# control.
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# ## 2. TCAV by layer
# *Lecture: XAI for transformers, slide "TCAV for explaining ViT - in short".*
#
# Concepts are not equally visible at every depth. The sweep runs the significance test at each block;
# hollow markers are not significant. The set-up chose the block by lecture 05's rule, which looks at CAV
# accuracies only, never at a TCAV score. The sweep shows what the other blocks say: a block picked
# *because* its TCAV scores agreed with what one expected would make that agreement worthless as
# evidence. With mean pooling (the mean of the patch tokens) the last block scores exactly 0: after it
# only [CLS] reaches the logit, so a CAV added to every patch token moves nothing, and the cell checks
# that every directional derivative there is 0. The sweep below is *this* model only.

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

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-layer", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Question (5 min, ★☆☆).** Looking at the sweep, which block would make TCAV agree best with the
# intervention table? Why is picking the block that way a bad idea, and what does the set-up's rule do
# instead?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Whichever block puts striped high and dotted low with the tightest spread. Choosing it after seeing the
# scores makes TCAV's agreement with the ground truth a product of the choice: with several blocks and
# poolings to pick from, some setting will agree by chance. The rule fixes the block before any score,
# from the architecture (every token must still reach the classifier) and from the CAV's held-out
# accuracy, which says only whether the concept can be read at that block.
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# ## 3. Which images does a CAV point at? Sorting by a CAV, and relative CAVs
#
# *Beyond the lectures: Kim et al., 2018.*
#
# Fig. 2 of the TCAV paper sorts images by a CAV; the lecture's concept pairs are relative CAVs.
#
# A TCAV score is one number about a direction. Kim et al. also look at what the direction points at: they
# sort a set of pictures (a class's, or a concept's) by the **cosine similarity** between each picture's activation at the CAV's layer
# and the CAV, $\cos(a_l(x), v_C) = a_l(x) \cdot v_C \,/\, (\lVert a_l(x) \rVert \lVert v_C \rVert)$, and show
# both ends (their Fig. 2: pictures of neckties sorted by a "model women" CAV, pictures of stripes by a
# "CEO" CAV). The activation is pooled as the CAV's training activations were (here all tokens of the
# chosen block), so the two live in one space. The cosine takes no gradient and no class logit: it asks what the
# CAV *encodes*, where TCAV asks what moving along it *does* to the class.
#
# Our test: 20 zebras and 20 horses, the same silhouette with and without stripes, sorted by the ten
# striped-vs-random CAVs of lecture 05's section 5 (striped against random set $i+1$). If a CAV picked out stripes, and
# not something else its 50 striped pictures happen to share, the zebras come first.

# %% [markdown] nbgrader={"grade": false, "grade_id": "my_cav_cosines-task", "locked": true, "schema_version": 3, "solution": false}
# **Exercise (10 min, ★☆☆).** Write the cosine similarity of each image's activation with a CAV: given the
# activations `acts` (N, D), one row per image, and a CAV `cav` (D,), return the N cosines
# $a_l(x) \cdot v_C \,/\, (\lVert a_l(x) \rVert \lVert v_C \rVert)$, in the images' order. The cell after the
# check sorts 40 pictures with it and compares with `tcav.sort_by_cav`.

# %% nbgrader={"grade": false, "grade_id": "my_cav_cosines", "locked": false, "schema_version": 3, "solution": true}
@xaikit.exercise(xaikit.check_cav_cosines)  # a stub or a failed check: later calls use xaikit's reference
def my_cav_cosines(acts, cav):
    ### BEGIN SOLUTION
    acts, cav = np.asarray(acts, dtype=np.float64), np.asarray(cav, dtype=np.float64)
    return acts @ cav / (np.linalg.norm(acts, axis=1) * np.linalg.norm(cav))  # (N,)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "my_cav_cosines-check", "locked": true, "points": 1, "schema_version": 3, "solution": false}
assert xaikit.check_cav_cosines(my_cav_cosines), "see the report above: which image, which mistake"
### BEGIN HIDDEN TESTS
assert xaikit.check_cav_cosines(my_cav_cosines, verbose=False).passed, "graded: my_cav_cosines must be written and pass every case"
### END HIDDEN TESTS

# %%
horses = iw.class_images("horse", 20, "main", seed=0)
herd = np.concatenate([zebras[:20], horses])  # (40, 64, 64, 3): 20 zebras, then 20 horses
is_zebra = np.arange(len(herd)) < 20
striped_cavs = [tcav.train_cav(a_striped, tcav.activations(model, r, LAYER, POOLING, processor), seed=i,
                               concept="striped", negative="random", layer=LAYER, pooling=POOLING)
                for i, r in enumerate(randoms[1:R + 1])]  # lecture 05's ten CAVs: striped vs random set i+1
rankings = [tcav.sort_by_cav(model, herd, c, processor=processor) for c in striped_cavs]
# your cosines for the first CAV: the pictures' pooled activations against the CAV
a_herd = tcav.activations(model, herd, LAYER, POOLING, processor)  # (40, D)
v = striped_cavs[0].vector  # (D,)
by_hand = np.asarray(my_cav_cosines(a_herd, v), dtype=np.float64)  # (40,)
claim("07.3-cosine-by-hand", np.abs(rankings[0].similarity - by_hand).max())
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
    claim("07.3-zebra-first-share", np.median(shares), note="median of the ten CAVs")

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
# **A check that does not always pass.** If a striped CAV picked out stripes, the shares printed above
# would lie near 1 for every CAV. On some training runs of this recipe they do, as Kim et al.'s Fig. 2
# would lead us to expect; on others many CAVs sort zebras and horses no better than a coin, and some
# put the horses first, *while the TCAV score of the same CAVs says that stripes raise "zebra"*. So
# the order is only printed; read this model's shares above. The two ask different questions.
# TCAV takes the gradient of the zebra logit, so it looks only at the directions the logit reads. The
# cosine takes the whole activation (every token's numbers), most of which describes what zebras and horses
# share: silhouette, pose, background, foam. And a CAV trained against random collages may carry whatever
# else tells its 50 striped pictures from those collages (the set-up's summary prints these CAVs' held-out
# accuracies). A sorted gallery is a qualitative look, worth taking: a CAV whose gallery looks wrong is
# worth questioning. A gallery that looks right proves no more than that.
#
# ### Relative CAVs: a concept against a concept
#
# Lecture 05's section 5 trained each CAV against **random** images: "striped vs random" points from pictures of
# anything towards stripes, and its score asks *does this concept, compared with nothing in particular,
# push the class up?* The lecture's pairs (lecture 05, section 4) are **relative CAVs** (Kim et al.'s relative TCAV): a
# CAV of concept A against concept B points from B towards A, and its score asks *does trading B for A
# push the class up?* That is a comparison, and a comparison comes out high for either of two reasons:
# A raises the logit, or B lowers it. The relative score alone cannot tell which; the two scores against
# random images can. Side by side for zebra:

# %%
vs_random = {c: sig[c].mean for c in tested}  # the set-up's t-test: each concept against R random sets
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
print(f"dotted lies {dots_part:+.2f} below the random CAVs (lecture 05), bubbly "
      f"{bubbles_part:+.2f} above them")
if MODEL.startswith("embedded"):
    # bubbly vs dotted and the two parts of its lean vary between training runs: printed
    claim("07.3-bubbly-vs-dotted", relative[("bubbly", "dotted")])
    claim("07.3-bubbly-minus-dotted-vs-random", vs_random["bubbly"] - vs_random["dotted"])
    # > 0: the dots' distance below the random CAVs is the larger part of the relative score's lean
    claim("07.3-dots-larger-part", dots_part - abs(bubbles_part))

# %% [markdown]
# Read as relative scores, "bubbly vs dotted" and "striped vs dotted" can both come out high: by the
# lecture's pairs alone, bubbles would seem to make a zebra much as stripes do. Against random images the
# two come apart: stripes lie above the random CAVs, dots lie clearly below them (lecture 05
# checks both), and bubbles lie near them, above on some training runs and below on others. So the
# relative score of bubbly vs dotted is high in good part because spots, the mark of leopards and sheep,
# push "zebra" *down*: which part is larger for this model, the dots' distance below the random CAVs or the
# bubbles' distance from them, the last lines print (positive: the dots'). That dots lower "zebra" is not
# only TCAV's reading: the intervention table paints dots on the zebras and measures the logit fall.
#
# Which to ask:
#
# - **concept vs random** answers *does this concept, on its own, move the class?* It is the paper's main
#   test, the one lecture 05's significance test and section 1's control are built on.
# - **concept vs concept** answers *between these two, which moves the class more?* Ask it when the choice
#   is between two named alternatives (stripes or spots on this animal?), and read it beside both concepts'
#   scores against random images: a high relative score can come entirely from the concept it is compared
#   with.

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-relative", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Question (10 min, ★★☆).** A colleague reports a high TCAV(bubbly vs dotted, zebra) and concludes that
# bubbles make a zebra. Which numbers would you ask for before you believe it, and what do this lab's
# printed lines and the intervention table say?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Both concepts against random images, with their significance: bubbly vs random and dotted vs random,
# each beside the random CAVs' mean. Here dotted lies well below the random CAVs and bubbly near them, so
# the relative score leans on the dots pushing "zebra" down. The intervention agrees: a dotted body lowers
# the zebra logit. A bubbly body lowers it a lot against the picture as drawn (its logit column), since it
# replaces the body the zebra was drawn with, but against the average of the six textures it moves it less
# than stripes or dots do, and the foam hardly moves it. Bubbles do not make a
# zebra; spots make a non-zebra.
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# ## 4. Where the ViT looks, against the pixels we drew
# *Beyond the lectures: Chefer, Gur & Wolf, Transformer interpretability beyond attention visualization (CVPR), 2021; Chefer, Gur & Wolf, Generic attention-model explainability (ICCV), 2021; Abnar & Zuidema, Quantifying attention flow, 2020.*
#
# TCAV asked whether a *concept* moves the class. Relevance maps ask *where in this picture* the evidence
# lies, and here we can check them against the truth: the image world knows every pixel's role, from the
# layers it drew (`Scene.masks()`: body, legs and head, foam, background), and the intervention told
# us the main model uses the body's stripes and the control model does not. Seven maps over the
# patch grid (`xaikit.image.relevance`): raw attention ([CLS] row of the last block, head mean),
# attention rollout (Abnar & Zuidema 2020), Chefer et al.'s gradient-weighted propagation ("chefer": the rule
# of their ICCV 2021 paper, gradient times attention), their CVPR 2021 method ("chefer_lrp": gradient times
# the LRP relevance of the attention, computed by `xaikit.image.lrp` on a float64 re-run of the ViT,
# the same rules as lab 06's Chefer LRP for BERT, section 1), gradient-weighted attention of the last block, and
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
    rows, random_auc = pixel_scores.compare_methods(model, rel_scenes)
    control_rows, _ = pixel_scores.compare_methods(control, rel_control_scenes, perturb=False)
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
    first = pixel_scores.perturbation_curve(model, first_pixels, np.argsort(-first_map.ravel(), kind="stable"), first_class)
    print(f"first zebra, Chefer order: probability {first.probs[0]:.2f} with nothing removed, "
          f"{first.probs[1]:.2f} after the top 10% of patches")
    by = {r.method: r for r in rows}
    by_control = {c.method: c for c in control_rows}
    print(f"\nthe intervention (set-up): striped body {truth['main'].texture_effect('striped'):+.2f} logit on "
          f"the main model, largest texture effect on the control {max(abs(truth['control'].texture_effect(k)) for k in iw.TEXTURES):.2f}")
    claim("07.4-chefer-body-drop", by["chefer"].localisation - by_control["chefer"].localisation)
    claim("07.4-attention-minus-rollout-pos-auc", by["attention"].pos_auc - by["rollout"].pos_auc)
    claim("07.4-rollout-minus-chefer-pos-auc", by["rollout"].pos_auc - by["chefer"].pos_auc)
    claim("07.4-rollout-minus-chefer-lrp-pos-auc", by["rollout"].pos_auc - by["chefer_lrp"].pos_auc)
    lrp_auc, rollout_auc, attention_auc = (by[m].pos_auc for m in ("chefer_lrp", "rollout", "attention"))
    print(f"Chefer et al.'s Table 1 ordering in positive AUC, LRP method < rollout < raw attention: "
          f"{lrp_auc:.3f} {'<' if lrp_auc < rollout_auc else '>='} {rollout_auc:.3f} "
          f"{'<' if rollout_auc < attention_auc else '>='} {attention_auc:.3f} "
          f"({'reproduced' if lrp_auc < rollout_auc < attention_auc else 'not reproduced'} for this model; "
          f"their ICCV rule: {by['chefer'].pos_auc:.3f})")
    from xaikit.image import lrp as vit_lrp

    lrp_first = vit_lrp.chefer_lrp(model, first_pixels)
    print(f"chefer_lrp, first zebra: the total relevance is the same at every block boundary to "
          f"{lrp_first.conservation_error:.0e} (largest relative change; the LRP rules conserve it)")

# %% [markdown]
# Read the table with the intervention beside it. The cell checks one thing for every training run of
# this recipe: Chefer et al.'s relevance ("chefer") puts a larger share on the body on the main model,
# which the intervention found to use the body's texture, than on the control, which it found blind to
# texture (by a clear margin of the positive relevance, checked). The **lift**, the share on the body over the body's
# share of the frame (1: spread evenly), compares the two models fairly, since the control world's bodies are
# smaller: read for this model which methods put more than an even share (lift
# above 1) on the body of each model, and which keep it on the control. Chefer et al. (CVPR 2021, Table
# 1, ViT-B on ImageNet) report their LRP-based method below rollout below raw attention in
# positive-perturbation AUC. The "chefer_lrp" column is that method (relevance conserved at every block
# boundary, printed above), so the comparison is made with the method of that table; "chefer" is their
# later ICCV rule. The cell prints whether this model reproduces that ordering. This small world need not:
# the curves lie near their floor, since greying the most relevant tenth of the patches can already take
# the zebra probability near zero (the first zebra's line prints how far), so the positive test has little
# room to separate methods here. Integrated gradients pays one forward and one backward pass per step of
# its path (the fwd and bwd columns); the others one of each at most, except the LRP method's second
# backward sweep, the relevance propagation itself, on its float64 re-run.

# %%
if MODEL.startswith("embedded"):
    fig, axes = plt.subplots(1, len(vr.method_names()) + 2, figsize=(2.0 * (len(vr.method_names()) + 2), 2.3))
    scene = rel_scenes[0]
    axes[0].imshow(scene.image())
    axes[0].set_title("picture", fontsize=9)
    axes[1].imshow(scene.masks()["body"], cmap=plotting.SEQUENTIAL)
    axes[1].set_title("body (drawn)", fontsize=9)
    pixels0 = vitworld.to_pixels(scene.image()[None])
    for ax, method in zip(axes[2:], vr.method_names(), strict=True):
        rmap, _ = vr.relevance(model, pixels0, method)
        ax.imshow(rmap, cmap=plotting.DIVERGING, vmin=-np.abs(rmap).max(), vmax=np.abs(rmap).max())
        ax.set_title(f"{method}\non body {pixel_scores.localisation(rmap, scene.masks()['body']):.2f}", fontsize=9)
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

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-looks", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Question (10 min, ★★☆).** In the panel, score `chefer` and then `ig` against the foam and against the
# legs and head of a few zebras. How much relevance lands where the main model, by the intervention, has
# no reason to look? What does that tell you about reading a relevance map as "what the model uses"?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Some relevance lands on parts the intervention found unused (the pixel methods in particular spread it
# over edges and high-contrast regions, foam included). A relevance map shows where the output is
# sensitive to the input, or how a propagation rule distributes it; it is not a measurement of use. The
# intervention changes one part of the scene and measures the logit, and that is the test of use; the map
# is a hypothesis to check against it, as TCAV's verdicts were in section 1.
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# ## 5. Summary
# *Beyond the lectures: Kim et al., Interpretability beyond feature attribution (TCAV), 2018.*
#
# | question | tool | what it showed here | caveat | where |
# | --- | --- | --- | --- | --- |
# | does a significant TCAV score mean *use*? | a control model that cannot use the concept, checked without TCAV (twins, intervention) | the logit can be sensitive to a concept direction the model does not use | a control means something only if the test has power on a model that does use the concept | §1 |
# | is the t-test calibrated? | random image sets posing as concepts (K = 100) | the t-test can flag more random concepts than its level allows | one image set shared by all R runs looks like a signal to it | §1 |
# | a test with a known false-alarm rate | the rank test among random concepts (Monte Carlo) | stripes not significant on the control | its smallest p is $1/(K+1)$: little power to spare | §1 |
# | does TCAV agree with the ground truth? | verdicts held against the intervention table | agreement where the concept is used; foam and spots show sensitivity without use, or another class's evidence | a count of agreements weighs shared verdicts twice | §1 |
# | at which block? | a rule fixed before any TCAV score; the sweep beside it | the verdict depends on the block and the pooling | choosing the block by the scores makes agreement worthless | §2 |
# | what does a CAV point at? | images sorted by cosine with the CAV (Kim et al.'s Fig. 2) | a qualitative look that can disagree with the TCAV score | the cosine reads the whole activation, TCAV only what the logit reads | §3 |
# | concept vs concept | relative CAVs beside each concept's score against random images | a high relative score can come from the other concept lowering the class | ask for both scores against random images | §3 |
# | where in the picture? | seven relevance maps scored against the drawn body, and by perturbation | Chefer et al.'s map moves off the body on the control | perturbation curves near their floor cannot rank the methods | §4 |
