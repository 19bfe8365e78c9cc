# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # 06 — Lab: is attention explanation?
#
# Notebook 04 explained the lecture's five sentences with Grad-SAM and SHAP. This lab asks whether such
# explanations, and attention itself, say what the model does. It puts more views of a sentence side by side,
# then turns the "attention is (not) explanation" debate into experiments on held-out movie sentences, checks
# which explanations depend on what the model learned, and measures how faithful each one is. Plan about
# two hours; the cells that run for more than a few seconds say so first.
#
# **Learning objectives.** After this lab you can
#
# * implement attention rollout, and compare it with raw attention, gradient-weighted attention, Integrated
#   Gradients and two relevance propagations (Chefer et al.'s LRP and AttnLRP) on one sentence;
# * run Serrano & Smith's erasure test and a deletion test, and read a deletion result against a random order;
# * run Jain & Wallace's attention shuffle and rank-agreement test, and say what they can and cannot show;
# * run Wiegreffe & Pinter's diagnostic model and say what "attention carries task information" means;
# * apply Adebayo et al.'s model and data randomisation tests to text explanations;
# * measure comprehensiveness and sufficiency (ERASER's AOPC), and say which definition of explanation each
#   experiment tests.
#
# **Outline.**
#
# 1. more views of the same sentence: raw attention, rollout (written by you), gradient-weighted attention,
#    IG, Chefer LRP, AttnLRP, and what each costs;
# 2. erasure and deletion (Serrano & Smith 2019);
# 3. shuffling the attention and rank agreement (Jain & Wallace 2019);
# 4. a diagnostic model that sees no context (Wiegreffe & Pinter 2019);
# 5. sanity checks: randomised weights and shuffled labels (Adebayo et al. 2018);
# 6. faithfulness: comprehensiveness and sufficiency (DeYoung et al. 2020);
# 7. summary.
#
# Every number the text states is printed by the code that computes it, and every claim about one is
# checked when its cell runs; numbers that depend on how a model happened to train are printed as this
# model's.

# %%
# Instructors, before a lecture: uncomment the two lines below for presenter mode (bigger fonts and
# figures, fixed seeds, fast mode); xaikit.course.presenter.off() switches it back (README: "Presenter mode").
# import xaikit.course.presenter
# xaikit.course.presenter.on()

# %%
# a Figure left at the end of a cell is drawn as a picture (Jupyter turns this on only when pyplot makes a
# figure; until then it prints "<Figure size ...>")
# %matplotlib inline
import numpy as np
import torch
from matplotlib.figure import Figure

import xaikit
from xaikit import pick, widgets
from xaikit.course import checks
from xaikit.course.checks import exercise
from xaikit.course.claims import claim
from xaikit.lab.faithfulness import run_lab
from xaikit.models.arch import attn_implementation
from xaikit.text.tokens import rank_correlation
from xaikit.text.views import all_views

xaikit.set_seed(0)

# The model: "embedded" is xaikit's offline MiniLM fine-tuned on movie reviews (build it once with
# `python -m xaikit prepare`). With a network, put the lecture's "textattack/bert-base-uncased-SST-2"
# here and run the notebook again: nothing else changes.
MODEL = "embedded"
# what the lecture's model size costs: random-weight models of its shape, timed by benchmarks/lecture_scale.py
print(xaikit.models.lecture_costs("lrp", "lab"))

# %%
from xaikit.models.buildprogress import background_builder
from xaikit.models.sentiment import LECTURE_SENTENCES, load_movie_reviews, prepared_folder

# a model still building behind JupyterLab (start.sh) is waited for: the load shows the build's progress
if MODEL == "embedded" and not prepared_folder().exists() and background_builder() is None:
    print("The embedded model is not prepared (run `python -m xaikit prepare`); using a tiny random BERT.")
    MODEL = "tiny"
if MODEL == "tiny":
    from xaikit.models import tiny_bert, tiny_tokenizer

    model, tokenizer = tiny_bert(), tiny_tokenizer()
else:
    model, tokenizer = xaikit.models.load_sentiment(MODEL)
print(type(model).__name__, "| attention:", attn_implementation(model),
      "| layers:", xaikit.models.n_layers(model), "| heads:", xaikit.models.n_heads(model),
      "| on", model.device, "in", model.dtype)
assert attn_implementation(model) == "eager"  # the attention views need the attention matrices
sentences = [s for s, _ in LECTURE_SENTENCES]  # the lecture's five sentences, as in notebook 04
print(sentences)

# %% [markdown]
# ## 1. More views of the same sentence
# *Lecture: Attention-based explainability, slide "Self-Attention Explanations".*
#
# * **raw attention**: the last layer's `[CLS]` row, mean of the heads;
# * **attention rollout** (Abnar & Zuidema 2020): each layer's head-mean plus the identity for the
#   residual connection, rows renormalised, multiplied through the layers;
# * **gradient-weighted attention** (Chefer, Gur & Wolf 2021, ICCV, "Generic Attention-model Explainability"):
#   $\bar A = \mathrm{mean}_h\,\mathrm{ReLU}(\nabla A\circ A)$, accumulated as $R \leftarrow R + \bar A R$;
# * **Integrated Gradients** from notebook 02, in the embedding space with a `[PAD]` baseline;
# * Grad-SAM and SHAP from notebook 04.

# %%
methods = ("Grad-SAM", "SHAP", "IG", "attention", "rollout", "grad-weighted attention")
views_of = {s: all_views(model, tokenizer, s, methods=methods, ig_steps=64) for s in sentences}  # 64 right-Riemann steps keep IG's completeness gap under 5%
text = sentences[3]
views = views_of[text]
fig = Figure(figsize=(13, 5.0), layout="constrained")
for ax, (name, s) in zip(fig.subplots(2, 3).ravel(), views.items(), strict=False):
    s.bar(ax, title=name)
    ax.tick_params(axis="x", rotation=45)
fig

# %% [markdown]
# The rank correlations, averaged over the five sentences. Rollout keeps most of `[CLS]`'s flow on `[CLS]`
# itself: the residual identity (notebook 03, section 8) carries each position forward in every layer. Is
# Grad-SAM, built from attention, nearer to raw attention than to IG, which moves the input itself? The
# difference of the two correlations is printed as this model's: on a mean over five sentences it
# changes with the training run.

# %%
names = list(views)
rho = np.mean([[[rank_correlation(v[a].without(), v[b].without())["spearman"] for b in names] for a in names]
               for v in views_of.values()], axis=0)
print("Spearman rank correlation of |score| (word tokens only), mean over the five sentences:")
print(" " * 24 + "".join(f"{n[:10]:>11}" for n in names))
for n, row in zip(names, rho, strict=False):
    print(f"{n:24}" + "".join(f"{v:11.2f}" for v in row))
cls_self = [v["rollout"].scores[0] for v in views_of.values()]
print("rollout of [CLS] onto itself:", np.round(cls_self, 2))
claim("06.1-ig-complete", max(v["IG"].detail.relative_gap for v in views_of.values()))  # on all five
if MODEL == "embedded":
    claim("06.1-rollout-cls-keeps-most", min(cls_self))  # [CLS] keeps most of its rollout
    gs = names.index("Grad-SAM")
    # printed: a mean over five sentences, it changes with the training seed
    claim("06.1-gradsam-nearer-attention-than-ig", rho[gs, names.index("attention")] - rho[gs, names.index("IG")])

# %% [markdown] nbgrader={"grade": false, "grade_id": "my_rollout-task", "locked": true, "schema_version": 3, "solution": false}
# **Exercise (15 min, ★★☆).** Write attention rollout (Abnar & Zuidema 2020) from the attention of every layer
# and head, `(L, M, N, N)`: per layer the mean over the heads $\bar A_l$, the residual connection added as
# $\tfrac12 \bar A_l + \tfrac12 I$ with the rows renormalised, and the product from the first layer to the last,
# $R = \hat A_L \cdots \hat A_2 \hat A_1$. Return $R$, `(N, N)`: row $i$ says how much of each input token flows
# into position $i$ at the top. The view above is row 0, `[CLS]`'s. Mind the order: the lecture writes rollout
# (Attention-based explainability, slide "Aggregating over Layers") as $\bar A^1 \bar A^2 \cdots \bar A^N$, the
# same product read with columns as queries. Our rows are queries ($A_{ij}$: how much token $i$ takes from
# token $j$; each row sums to 1), so the last layer goes on the left, as in Abnar & Zuidema (2020, section 3);
# the lecture's order on these matrices would compose the layers in reverse.

# %% nbgrader={"grade": false, "grade_id": "my_rollout", "locked": false, "schema_version": 3, "solution": true}
@exercise(checks.check_rollout)  # while the body is a stub, later calls use xaikit's reference and say so
def my_rollout(attentions):
    """Attention rollout (N, N) from attention (L, M, N, N)."""
    ### BEGIN SOLUTION
    eye = torch.eye(attentions.shape[-1], dtype=attentions.dtype)
    r = eye.clone()
    for layer in attentions.mean(dim=1):  # (N, N): the head mean of one layer
        step = 0.5 * layer + 0.5 * eye  # the residual connection carries each token forward
        r = (step / step.sum(dim=-1, keepdim=True)) @ r  # rows renormalised; the later layer on the left
    return r
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "my_rollout-check", "locked": true, "points": 1, "schema_version": 3, "solution": false}
assert checks.check_rollout(my_rollout)
### BEGIN HIDDEN TESTS
assert checks.check_rollout(my_rollout, verbose=False).passed, "graded: my_rollout must be written and pass every case"
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "my_rollout-use", "locked": true, "schema_version": 3, "solution": false}
with torch.no_grad():
    out = model(**tokenizer(text, return_tensors="pt").to(model.device), output_attentions=True)
att = torch.stack([a[0] for a in out.attentions]).cpu().double()  # (L, M, N, N), back on the CPU
mine = my_rollout(att)
print(f"your rollout of {text!r}: rows sum to 1 within {float((mine.sum(-1) - 1).abs().max()):.1e}; [CLS] row:",
      np.round(mine[0].numpy(), 2))
# the view above is the [CLS] row of xaikit's rollout, computed from the same attention in float32
torch.testing.assert_close(mine[0], torch.as_tensor(views["rollout"].scores, dtype=torch.float64), atol=1e-5, rtol=1e-4)

# %% [markdown]
# ### Relevance propagated through the blocks (Chefer, Gur & Wolf 2021)
#
# Chefer, Gur & Wolf 2021, "Transformer Interpretability Beyond Attention Visualization", CVPR. Gradient-weighted
# attention weighs each head's attention by its gradient; Chefer et al. weigh the gradient by the attention's
# **relevance** $R^{A_b}$ instead. Layer-wise relevance propagation (LRP) gives the explained logit a relevance
# of 1 and passes it back through the classifier and every block to the input; $R^{A_b}$ is the share that
# lands on block $b$'s attention probabilities. Per block, $\bar A_b = I + \mathrm{mean}_h(\nabla A_b \circ
# R^{A_b})^+$, and the view is the `[CLS]` row of $\bar A_L \cdots \bar A_1$ (its `[CLS]` entry set to the row's
# minimum, as in the paper's code).
#
# `xaikit.text.lrp.chefer_lrp` re-runs the model from its own weights in float64 with the paper's rules: linear
# layers by the z+ rule, the residual adds and both attention products split between their operands and
# rescaled to keep the total, LayerNorm, GELU and softmax passed straight through. So the relevance entering a
# block leaves it (checked). That holds by construction: it checks the bookkeeping, not the
# explanation. What is conserved is the total, not how it is spread: the cell prints how much of it still sits
# on `[CLS]`'s own position at block 0's input, carried down the residual stream (printed as this model's: it
# changes with the training run). Below, the view next to Grad-SAM and SHAP (about a second).

# %%
from IPython.display import HTML

from xaikit.text.lrp import chefer_lrp

lrp_of = {s: chefer_lrp(model, tokenizer, s, target=views_of[s]["Grad-SAM"].target) for s in sentences}
worst = max(r.detail.conservation_error for r in lrp_of.values())
print(f"relevance conserved block by block: largest relative change of the total {worst:.1e}")
on_cls = [float(r.detail.input_relevance[0]) for r in lrp_of.values()]
print("share of the relevance on [CLS] at block 0's input:", np.round(on_cls, 2))
lrp_rho = {m: [rank_correlation(lrp_of[s].without(), views_of[s][m].without())["spearman"] for s in sentences]
           for m in ("Grad-SAM", "SHAP")}
for m, r in lrp_rho.items():
    print(f"Spearman (word tokens) of Chefer LRP with {m:8}:", " ".join(f"{v:+.2f}" for v in r))
claim("06.1-lrp-conserved", worst)  # conservation, block by block
if MODEL == "embedded":
    claim("06.1-lrp-cls-keeps-most", min(on_cls))  # printed
assert all(r.tokens == views_of[s]["SHAP"].tokens for s, r in lrp_of.items())
HTML("".join(f"<p><b>{s}</b></p>" + views_of[s]["Grad-SAM"].html() + views_of[s]["SHAP"].html()
             + lrp_of[s].html() for s in sentences))

# %% [markdown]
# ### AttnLRP (Achtibat et al. 2024): relevance of the tokens themselves, in one backward pass
#
# Achtibat et al., "AttnLRP: Attention-Aware Layer-Wise Relevance Propagation for Transformers", ICML 2024.
# `xaikit.text.attnlrp.attnlrp` propagates the logit's value to the input embeddings. Two rules differ from
# Chefer et al.'s:
#
# * **softmax**: a first-order expansion at its input $x$, $R^{in}_j = x_j\,(R^{out}_j - s_j \sum_k R^{out}_k)$,
#   so a score that moved the attention takes relevance; what the expansion does not explain is absorbed,
#   like a bias;
# * **the attention products** $QK^\top$ and $AV$: each operand gets exactly half (the *uniform* rule), which
#   conserves without rescaling.
#
# Linear layers take the epsilon rule (biases keep their share). Each operation's backward function carries
# relevance, so one backward pass gives every token's signed relevance. The books balance at every block
# boundary: relevance in = relevance out + what biases, softmax and epsilon absorbed (by construction;
# `tests/test_attnlrp.py` checks the rules against a separately written gradient x input). The cell prints
# how much of the logit reaches the tokens.
#
# It then counts what each method costs on one sentence: forward and backward passes, counted by hooks on the
# encoder blocks (`xaikit.models.count_passes`), and seconds. The two LRP methods re-run the model in float64
# outside those hooks and report their passes themselves. The last row, `all_views` for the four views read
# from attention, shares one forward/backward pass between them.

# %%
from xaikit.models import count_passes
from xaikit.text.attnlrp import attnlrp
from xaikit.text.views import explain

alrp_of = {s: attnlrp(model, tokenizer, s, target=views_of[s]["Grad-SAM"].target) for s in sentences}
alrp_err = max(r.detail.conservation_error for r in alrp_of.values())
absorbed = [float(r.detail.absorbed.sum() / r.detail.logit) for r in alrp_of.values()]
reached = [float(r.scores.sum() / r.detail.logit) for r in alrp_of.values()]
print(f"AttnLRP books balance at every block boundary (biases, softmax and epsilon accounted), "
      f"largest relative error {alrp_err:.1e}")
print("share of the logit absorbed on the way (biases, softmax, epsilon), per sentence:", np.round(absorbed, 2))
print("share of the logit that reaches the tokens, per sentence:", np.round(reached, 2))
print(f"  the tokens get at most {max(np.abs(reached)):.0%} of the logit in absolute value: most of it is booked in "
      "the biases; where the logit is small, the share swings far outside [0, 1]")
print("Spearman (word tokens) of AttnLRP with Chefer LRP:",
      " ".join(f"{rank_correlation(alrp_of[s].without(), lrp_of[s].without())['spearman']:+.2f}" for s in sentences))
print(f"\nwhat one explanation of {text!r} costs (hooks on the encoder blocks, the LRP re-runs reported; "
      "wall time of one run after an untimed one, on this machine: the passes are exact, the seconds move with "
      "the machine's load):")
print(f"{'method':12} {'forward':>8} {'backward':>9} {'seconds':>8}")
for m in ("Grad-SAM", "IG", "SHAP", "Chefer LRP", "AttnLRP"):
    explain(model, tokenizer, text, method=m)  # untimed: a method's first call pays its one-off set-up
    with count_passes(model) as cost:
        explain(model, tokenizer, text, method=m)
    print(f"{m:12} {cost.forward:8g} {cost.backward:9g} {cost.seconds:8.2f}")
attention_four = ("Grad-SAM", "attention", "rollout", "grad-weighted attention")
spent = {}
with count_passes(model) as cost:
    all_views(model, tokenizer, text, methods=attention_four, spent=spent)
print(f"{'all four':12} {cost.forward:8g} {cost.backward:9g} {cost.seconds:8.2f}   "
      f"({', '.join(attention_four)}: one shared pass, {spent['shared pass']}, and the preparing forward)")
assert set(spent) == {"prepare", "shared pass"}  # none of the four ran a pass of its own
HTML("".join(f"<p><b>{s}</b></p>" + lrp_of[s].html() + alrp_of[s].html() for s in sentences))

# %% [markdown]
# ## 2. Erasure and deletion (Serrano & Smith 2019)
# *Lecture: Attention is not not explanation, slide "Attention as explanation?".*
#
# Held-out movie sentences the model never saw. A word can be removed in two ways, and they are different
# experiments (`xaikit.lab`):
#
# * **Erasure** (Serrano & Smith 2019): set the word's attention weight to zero in the one attention layer
#   whose weights gave the ranking, in every head, and renormalise the rows. The attention rankings read the
#   last layer's `[CLS]` row, so erasure acts there. The word stays in the input, and the layers below have
#   already mixed it into every position, `[CLS]` included.
# * **Deletion**: the word is deleted from the input ids, so no layer sees it.
#
# The experiments: erase the most-attended word versus a random other word, and compare the outputs by the
# **Jensen-Shannon divergence** (JS, in bits: a symmetric distance between two probability distributions, 0
# when they are equal, at most 1) and by a 2x2 table of decision flips; then remove words from the top of a
# ranking down until the decision flips, and report the fraction that had to go (1 when it never flips).
# Rankings: attention, its gradient, gradient x attention, Grad-SAM, SHAP, IG, Chefer LRP and a random order.
#
# The first table also says what producing each ranking cost over all sentences (`lab.costs`). Raw attention,
# its gradient, gradient x attention and Grad-SAM share one forward/backward pass per sentence, printed once
# as "shared". The experiments' own passes (`lab.evaluation_costs`) are the cost of the evaluation, printed
# apart.
#
# **How long it takes.** The default lab takes 20 short held-out sentences (at most 12 words): about 20-25 s
# on two idle cores, with a progress bar. The full lab, 120 sentences of up to 16 words with more IG steps and
# shuffles, takes several minutes: set `FULL_LAB = True`. The checked claims hold for both.

# %% [markdown]
# > **Pause here.** The lecture asks: "The highest attention weight indicates the most important feature?"
# > (Gradient/attention-based explanations, seeds/000, p. 74)

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-7", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise (5 min, ★☆☆).** Answer the lecture's question before you run the lab, then check your answer
# against its results.
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Not necessarily, and the lab below tests it rather than assuming it. A weight says how much of one
# token's value vector one query mixes in, in one head of one layer. It says nothing about how large that
# value vector is, how much of the word the residual stream already carries past the layer, or what the
# layers above do with the mixture. So the top-attended word can matter little (erasing it rarely flips
# the decision: Serrano & Smith 2019 found this for their single attention layer, and the lab measures it
# here), and other weights could give the same output (Jain & Wallace 2019, the shuffles below).
# "Important" also needs a definition, which is why the lab asks it in several ways (erasure, deletion,
# shuffles, rank agreement): they need not agree.
# </details>
# <!-- END SOLUTION -->

# %%
FULL_LAB = False  # True: the full lab, 120 sentences, several minutes (the progress bar shows the time left)
if FULL_LAB:
    n_lab, max_words, lab_settings = 120, 16, dict(n_permutations=16, shap_evals=300, ig_steps=32)
else:
    n_lab, max_words, lab_settings = 20, 12, dict(n_permutations=4, shap_evals=200, ig_steps=pick(16, 8))
test_pairs = load_movie_reviews("test", progress=False)
lab_sentences = [s for s, _ in test_pairs if 4 <= len(s.split()) <= max_words][:n_lab]
lab = run_lab(model, tokenizer, lab_sentences, **lab_settings)  # progress bar over the sentences
summary = lab.summary()
print(f"{len(lab.sentences)} sentences in {lab.seconds:.1f} s")
print(f"erasing the top-attended word moves the output more than erasing a random one in "
      f"{np.mean(lab.js_top > lab.js_random):.0%} of the sentences (median JS {np.median(lab.js_top):.1e} vs "
      f"{np.median(lab.js_random):.1e} bits)")
print("decision flips (% of sentences): rows = erasing the top-attended word flips / does not;")
print("columns = erasing a random word flips / does not")
print(np.round(lab.flip_table, 1))
print(f"{'ranking':22} {'erased before a flip':>21} {'(flipped)':>9} {'deleted before a flip':>22} {'(flipped)':>9}"
      f" {'forward':>8} {'backward':>8} {'seconds':>7}")
for name, m in summary.items():
    made, shared = lab.cost_of(name)  # what producing this ranking cost, over the sentences
    cost_cols = f" {'shared':>8}" if shared else f" {made.forward:8g} {made.backward:8g} {made.seconds:7.2f}"
    print(f"{name:22} {m['erased before a flip']:21.2f} {m['flipped by erasure (%)']:8.0f}% "
          f"{m['deleted before a flip']:22.2f} {m['flipped by deletion (%)']:8.0f}%" + cost_cols)
print(f"shared: one forward/backward pass per sentence for {', '.join(lab.shared)}: {lab.costs['shared pass']}")
print(f"preparing the sentences (tokens, predicted class): {lab.costs['prepare']}")
print("the evaluation, apart: " + "; ".join(f"{k} {c}" for k, c in lab.evaluation_costs.items()))
assert np.isclose(lab.costs["shared pass"].forward, len(lab.sentences))  # one shared pass per sentence
assert len(lab.sentences) == n_lab
deleted = {name: m["deleted before a flip"] for name, m in summary.items()}
from_attention = np.mean([deleted["attention"], deleted["Grad-SAM"]])
from_gradients = np.mean([deleted[m] for m in ("gradient", "gradient x attention", "SHAP", "IG")])
if MODEL == "embedded":
    claim("06.2-erase-top-beats-random", np.mean(lab.js_top > lab.js_random))  # the top word matters more ...
    claim("06.2-erasure-rarely-flips", lab.flip_table[1, 1])  # ... yet erasing either one rarely flips it
    claim("06.2-erasure-sets-flip-few", max(m["flipped by erasure (%)"] for m in summary.values()))  # in one layer
    # printed (they change with the training seed): sooner than random? later than the others?
    claim("06.2-deletion-gradient-beats-random", deleted["random"] - deleted["gradient"])
    claim("06.2-deletion-attention-needs-more", from_attention - from_gradients)

# %% [markdown]
# **Where deletion ends.** Deleting every word leaves `[CLS] [SEP]`, the empty text, and the model gives it
# a class too. If that class is positive, every sentence predicted negative flips by the end of *any*
# order, a random one included: "deletion flips most sentences" would then hold by construction. So the flips
# are counted per predicted class, and the orders are also compared at a fixed budget: the share of the
# sentences that flips with at most half of its words deleted (`lab.flipped_within`), against the random
# order as the control.

# %%
empty_class = int(np.argmax(lab.empty_probs))
print(f"the empty text [CLS] [SEP]: class {empty_class}, P(positive) {lab.empty_probs[1]:.2f}")
classes = {c: lab.predicted == c for c in (0, 1)}
print(f"predicted negative: {classes[0].sum()} sentences, positive: {classes[1].sum()}")
budget = 0.5
print(f"{'ranking':22} {'flipped: negative':>18} {'positive':>9} {'within half the words':>22}")
within = {m: lab.flipped_within(m, budget) for m in lab.rankings}
for m in lab.rankings:
    per_class = [100 * np.mean(lab.flipped_deleted[m][classes[c]]) if classes[c].any() else np.nan for c in (0, 1)]
    print(f"{m:22} {per_class[0]:17.0f}% {per_class[1]:8.0f}% {100 * within[m].mean():21.0f}%")
the_other = 1 - empty_class  # the class the empty text is not: those sentences all flip, whatever the order
ends_flipped = min(np.mean(lab.flipped_deleted[m][classes[the_other]]) for m in lab.rankings) if classes[
    the_other].any() else np.nan
print(f"sentences of class {the_other} that every order flips by the end: {100 * ends_flipped:.0f}%")
by_gradients_lab = ("gradient", "gradient x attention", "SHAP", "IG")
budget_gain = 100 * (np.mean([within[m].mean() for m in by_gradients_lab]) - within["random"].mean())
if MODEL == "embedded":
    claim("06.2-empty-text-p-positive", lab.empty_probs[1])  # printed: which class the end of deletion has
    # printed: the flips of the sentences that deletion does not flip by construction
    claim("06.2-deletion-flips-empty-class", np.mean([100 * np.mean(lab.flipped_deleted[m][classes[empty_class]])
                                                     for m in lab.rankings]) if classes[empty_class].any() else 0.0)
    claim("06.2-deletion-budget-over-random", budget_gain)  # gradient-based orders against the random control

# %% [markdown]
# **IG's order and its completeness gap.** The lab's IG runs with few Gauss-Legendre steps, so its
# attributions do not sum exactly to the change of the output; notebook 02 showed that the error of single
# attributions can be several times the gap of their sum, so a gap can reorder words. Measured here: on the
# sentences with the largest gaps, the lab's IG order against IG with 64 steps.

# %%
from xaikit.lab.agreement import word_tau
from xaikit.text.views import explain

print(f"IG in the lab: {lab_settings['ig_steps']} Gauss-Legendre steps, relative completeness gap median "
      f"{np.median(lab.ig_relative_gap):.1%}, largest {np.max(lab.ig_relative_gap):.1%}")
ig_taus, ig_same_top = [], []
for i in np.argsort(lab.ig_relative_gap)[::-1][:pick(3, 2)]:  # the largest gaps: the worst case for an order
    ref = explain(model, tokenizer, lab.sentences[i], "IG", target=int(lab.predicted[i]), cost=64, rule="gausslegendre")
    pos = lab.positions[i]
    ig_taus.append(word_tau(lab.scores["IG"][i], ref.scores, pos))
    ig_same_top.append(np.argmax(np.abs(lab.scores["IG"][i][pos])) == np.argmax(np.abs(ref.scores[pos])))
    print(f"gap {lab.ig_relative_gap[i]:.1%} (64 steps: {ref.detail.relative_gap:.1%}): Kendall tau with the "
          f"64-step order {ig_taus[-1]:+.2f}, same top word: {ig_same_top[-1]}  {lab.sentences[i][:50]!r}")
claim("06.2-ig-order-vs-64-steps", min(ig_taus))  # printed: this model's few sentences only

# %% [markdown]
# **What erasure and deletion find** (the claims above). Erasing the most-attended word moves the output more
# than erasing a random word, but in one layer it almost never flips the decision, and erasing word after word
# flips few sentences by any ranking: the last layer's `[CLS]` row is one route among many, since the earlier
# layers have already written the words into `[CLS]`'s residual stream. Serrano & Smith found the same for
# their single attention layer. Their second finding, that gradient-based rankings flip the decision with
# fewer removals than attention, one-layer erasure can hardly test here; deletion can, with care.
#
# *Deletion, read with its control.* Deletion flips many more sentences, but every sentence of the class the
# empty text does not have flips by the end of every order, the random one included: that is where deletion
# ends, not a property of the orders. At a budget of half the words, the random order is the bar to clear. The
# orders read from gradients or from the input (gradient, gradient x attention, SHAP, IG) clear it for this
# model by the margin printed above; with another training seed the margin can shrink to nothing, so it is
# printed as this model's. A deleted input is also a text the model never saw in training: short, ungrammatical,
# drifting towards the empty text's class. Hooker et al. (2019, "A Benchmark for Interpretability Methods in
# Deep Neural Networks", NeurIPS) point out that a drop of the output after removal may come from that shift
# rather than from the information removed, and retrain on the degraded inputs (ROAR). We do not retrain; the
# random order, degraded the same way, is our control for the shift.
#
# *Why some orders need more deletions.* The gradient and gradient x attention score word $j$ by the last
# layer's `[CLS]` row at key $j$ *weighted by how sensitive the output is to that weight*; SHAP and IG score
# it by what removing or scaling the word does to the output. All four measure the output's sensitivity to the
# word. Raw attention scores the same `[CLS]` entry without any sensitivity: how much is read, not what
# reading it does. Grad-SAM scores word $i$ by its **own query row**, where the word looks, not what deleting
# it does to `[CLS]`. Neither asks the question deletion asks, so needing more deletions is what one would
# expect of them (for this model, printed above).

# %% [markdown]
# ## 3. Shuffling the attention, and rank agreement (Jain & Wallace 2019)
# *Lecture: Attention is not not explanation, slide "Attention as explanation?".*
#
# Jain & Wallace (2019, "Attention is not Explanation", NAACL) shuffled a model's attention weights and
# measured how much the output moved. The lab measures the change by the **total variation distance** (TVD)
# between the class probabilities before and after, half the sum of their absolute differences: 0 for the
# same output, 1 for outputs with nothing in common.
#
# Shuffling the last layer's attention barely moves the output (checked). What the shuffle changes is one term
# of a sum: the block adds attention's output to `[CLS]`'s own vector (the residual stream, notebook 03), and
# the lab measures the output, not which term kept it steady. Shuffling an *earlier* layer's attention, every
# row of it, moves the output more (checked, the factor printed). **But that comparison is not like with
# like.** In the last layer only the `[CLS]` row reaches the classifier (notebook 04, section 5: its share of
# that layer's Grad-SAM mass is exactly 1), so shuffling the last layer shuffles one row that matters, while
# shuffling an earlier layer shuffles all $N$ rows, each read by the layers above. The control: the same
# shuffles applied to the `[CLS]` row alone, at every depth (`lab.permutation_by_layer_cls`). In the last
# layer that is the same experiment (checked: the same numbers).

# %%
by_layer = np.median(lab.permutation_by_layer, axis=0)  # (layers,): median over the sentences
print("median output change (TVD) when one layer's attention is shuffled:",
      ", ".join(f"layer {i} {v:.3f}" for i, v in enumerate(by_layer)))
print(f"last layer (Jain & Wallace): median {np.median(lab.permutation_tvd):.3f}, in 90% of the sentences below "
      f"{np.quantile(lab.permutation_tvd, 0.9):.3f}")
print(f"the largest earlier layer's change is {by_layer[:-1].max() / max(by_layer[-1], 1e-12):.1f} times the last "
      f"layer's (layer {int(np.argmax(by_layer[:-1]))})")
by_layer_cls = np.median(lab.permutation_by_layer_cls, axis=0)  # the same shuffles, the [CLS] row alone
print("the [CLS] query row alone shuffled:",
      ", ".join(f"layer {i} {v:.4f}" for i, v in enumerate(by_layer_cls)))
print(f"like with like (the [CLS] row at every depth): the largest earlier layer's change is "
      f"{by_layer_cls[:-1].max() / max(by_layer_cls[-1], 1e-12):.2f} times the last layer's "
      f"(layer {int(np.argmax(by_layer_cls[:-1]))})")
claim("06.3-shuffle-cls-row-last-is-all-rows",  # in the last layer only the [CLS] row reaches the classifier
      np.abs(lab.permutation_by_layer_cls[:, -1] - lab.permutation_by_layer[:, -1]).max())
if MODEL == "embedded":
    claim("06.3-shuffle-last-layer-barely-moves", np.median(lab.permutation_tvd))  # Jain & Wallace
    claim("06.3-shuffle-earlier-layer-moves-more", by_layer[-1] / by_layer[:-1].max())  # last / largest earlier
    # the control: the [CLS] row alone at every depth; largest earlier / last (printed)
    factor_cls = by_layer_cls[:-1].max() / max(by_layer_cls[-1], 1e-12)
    claim("06.3-shuffle-cls-row-earlier-moves-less", factor_cls)
    # what is left of the all-rows factor when only the [CLS] row is shuffled
    claim("06.3-shuffle-cls-row-share-of-factor", factor_cls * by_layer[-1] / by_layer[:-1].max())

# %% [markdown]
# **What the control shows.** Shuffled alone, the `[CLS]` row of an earlier layer moves the output far less
# than the whole layer does: less than half of the all-rows factor is left (checked). Whether it moves the
# output more or less than the last layer's shuffle changes with the training run (printed). So most of the
# earlier layers' large effect comes from the other rows, whose mixtures every later layer reads, not from
# `[CLS]`'s own attention mattering more early on. In a transformer, "shuffle the attention" has to say which
# rows and which layer before its result can be compared.

# %%
panel = widgets.LabPanel(lab=lab)
panel.set(view="permutation by layer")
assert panel.error is None and panel.result.view == "permutation by layer"
panel

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-8", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise (10 min, ★★☆).** Jain & Wallace found that shuffling attention often leaves the output
# unchanged, and concluded that attention is not explanation. Wiegreffe & Pinter objected. What is their
# objection, and what does this transformer add?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# An attention distribution that is *possible* is not one the model would *produce*: the weights were
# trained together with everything else, so swapping in a shuffled or adversarial distribution tests a
# different model, not the explanation of this one. Wiegreffe & Pinter also point out that attention may be
# *an* explanation without being *the* explanation, and that whether it counts depends on the definition
# of explanation (faithfulness, plausibility) one wants. In this transformer the lab adds a caveat of its
# own: the last layer's attention, the one Jain & Wallace's test shuffles here, is a small part of the
# computation (its shuffle barely moves the output), while shuffling every row of some earlier layer
# changes it more (by the factor printed above). The like-with-like control, the `[CLS]` row of an earlier
# layer alone, changes it far less than shuffling every row of that layer (checked), and more or less than
# the last layer's shuffle depending on the training run (printed).
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# ### Do attention and gradients rank words alike?
#
# Jain & Wallace (section 4.1) also asked whether attention orders the words as other importance measures do:
# per sentence, Kendall's tau between the attention weights and (a) the gradient of the output with respect to
# each input word, (b) leave-one-out (LOO), how much the output changes when that word is left out. The lab
# measured these too (`lab.agreement`): attention is the last layer's `[CLS]` row, mean of the heads; the
# gradient is of the predicted class's probability with respect to the word's one-hot input (the word embedding
# times its gradient); LOO deletes one word. **One difference:** Jain & Wallace cut the computation graph at
# their single attention layer, so no gradient flowed through the attention weights. A transformer has
# attention in every layer, and cutting all of it would leave the gradient of another network, so xaikit keeps
# every path: our gradient can agree with attention for that reason alone. Each is ranked by magnitude over the
# word tokens; tau is tau-b, which counts ties fairly. The histogram shows one tau per sentence for each pair.

# %%
from xaikit.plotting import OKABE_ITO

agree = lab.agreement
pairs = {"attention-gradient": "attention vs gradient", "attention-LOO": "attention vs LOO",
         "gradient-LOO": "gradient vs LOO"}
medians = agree.medians()
colors = dict(zip(pairs, OKABE_ITO, strict=False))
print(f"Kendall tau-b over {len(agree.sentences)} sentences (computed in {agree.seconds:.1f} s of the lab's time)")
for key, label in pairs.items():
    t = agree.tau[key]
    q1, q3 = np.nanquantile(t, [0.25, 0.75])
    print(f"{label:22} median {medians[key]:+.2f}   quartiles {q1:+.2f} to {q3:+.2f}   range {np.nanmin(t):+.2f} "
          f"to {np.nanmax(t):+.2f}   negative in {np.mean(t < 0):.0%}")


def tau_null_sd(n):
    """Standard deviation of Kendall's tau between two independent orders of n items (no ties)."""
    return np.sqrt(2 * (2 * n + 5) / (9 * n * (n - 1)))


n_words_lab = np.array([len(p) for p in lab.positions])
print(f"words per sentence: median {np.median(n_words_lab):.0f} (range {n_words_lab.min()} to {n_words_lab.max()}); "
      f"two unrelated orders of that many words give a tau with standard deviation "
      f"{tau_null_sd(np.median(n_words_lab)):.2f} per sentence, {tau_null_sd(np.median(n_words_lab)) / np.sqrt(len(n_words_lab)):.2f} "
      f"for a mean over the {len(n_words_lab)} sentences")
fig = Figure(figsize=(8, 3.4), layout="constrained")
ax = fig.subplots()
bins = np.linspace(-1, 1, 21)  # fixed bins of width 0.1 over tau's whole range
for key, label in pairs.items():
    ax.hist(agree.tau[key], bins=bins, histtype="step", lw=2, color=colors[key],
            label=f"{label} (median {medians[key]:.2f})")
    ax.axvline(medians[key], color=colors[key], ls="--", lw=1.2)
ax.set(xlim=(-1, 1), xlabel="Kendall tau-b per sentence", ylabel="sentences",
       title="Do the rankings agree? (Jain & Wallace 2019, section 4.1)")
ax.legend(fontsize="small", loc="upper left")
assert set(agree.tau) == set(pairs) and agree.sentences == lab.sentences
if MODEL == "embedded":  # every pair agrees, but weakly
    claim("06.3-tau-medians-positive", min(medians.values()))
    claim("06.3-tau-medians-weak", max(medians.values()))
# printed: does the gradient agree with LOO more than attention does? (Jain & Wallace: yes)
claim("06.3-tau-gradient-vs-attention-on-loo", medians["gradient-LOO"] - medians["attention-LOO"])
fig

# %% [markdown]
# **What it shows.** Jain & Wallace found attention only weakly to moderately correlated with gradients and
# with leave-one-out in their BiLSTMs, while gradients and leave-one-out agreed with each other more. The first
# finding holds here: every median tau is positive but small (checked), and some
# sentences have a negative tau. The second is not seen: the gradient agrees with LOO about as much as
# attention does (the difference is printed; its sign changes with the training run). Read the numbers with
# care: short sentences give few pairs to order (five words give ten), and the printout says how far one
# sentence's tau strays when the two orders are unrelated. That spread is as wide as the medians themselves,
# which is why what is checked is the median over all sentences, and loosely.

# %% [markdown]
# > **Pause here.** The lecture asks: "Do you see any weaknesses in demanding property 1, or in the analysis?"
# > (XAI for transformers, slide "Property 1")

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-9", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise (10 min, ★★☆).** Answer the lecture's question with what this section measured.
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Property 1 asks that attention agree with other importance measures (gradients, leave-one-out). Three
# weaknesses show up in this section. The reference measures are not ground truth: they disagree with each
# other about as much as with attention (the three medians above), so "does not agree" does not say which
# one is wrong. Agreement is not faithfulness: two measures can share an order because they share a
# computation (our gradient keeps the paths through attention, Jain & Wallace's cut them), not because
# either tracks what the model uses. And the analysis itself is fragile: a rank correlation over a few
# words has a spread per sentence as large as the effect (printed above), tau treats a swap of two
# unimportant words like a swap at the top, and a gradient is local, so it can miss what a whole-word
# deletion does.
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# ## 4. A diagnostic model that sees no context (Wiegreffe & Pinter 2019)
# *Lecture: XAI for transformers, slide "Attention is not not Explanation".*
#
# Wiegreffe & Pinter (2019, "Attention is not not Explanation", EMNLP, section 4 and Table 3) argue that a
# shuffled or adversarial distribution tests another model, not this one's explanation. They ask something
# else: do the trained model's attention weights carry information about the task? Their **diagnostic model**
# sees each token alone, with no access to its neighbours, and pools the tokens with weights imposed from
# outside (`xaikit.lab.diagnostics`):
#
# $$h_t = \tanh(W e_t + b), \qquad c = \sum_t \alpha_t h_t \Big/ \sum_t \alpha_t, \qquad \text{logits} = U c + u,$$
#
# with $e_t$ the classifier's own word embeddings (frozen; no position, no context) and $\alpha$ one of
#
# * **uniform**: the plain mean of the word tokens, their baseline;
# * **learned**: $\alpha = \mathrm{softmax}_t(v \cdot h_t)$, trained by the diagnostic itself;
# * **model attention**: the fine-tuned transformer's own weights, fixed: the last layer's `[CLS]` row, mean
#   of the heads, the distribution that forms what the classifier reads, renormalised over the word tokens;
# * **pretrained attention**, a control: the same row of the encoder *before* fine-tuning, attention that
#   never saw the task.
#
# Their adversarially trained model is left out: xaikit trains no adversary. Only $\alpha$ differs: the same
# sentences and the same diagnostic seeds. If the model's attention beats uniform weights, it holds task
# information that a model without context can use.
#
# **How long it takes.** `python -m xaikit prepare` has read the attention of both encoders for every sentence
# and kept it on disk; with another model the first run reads it (under a minute). Then the cell trains four
# small diagnostics per seed, about 4-10 s in fast mode (3 seeds, 1,000 sentences, 6 epochs) and about three
# times as long otherwise (5 seeds, 2,000 sentences, 8 epochs).

# %%
from xaikit.lab.diagnostics import notebook_sentences, run_diagnostic
from xaikit.models.sentiment import pretrained_encoder

# 2,000 training sentences drawn once with random.Random(0), the same for every diagnostic seed, and the first 500
# held-out movie sentences (fast mode: 1,000 and 400); `prepare` has read their attention already
diag_train, diag_test = notebook_sentences()
epochs = pick(8, 6)
controls = {"pretrained": pretrained_encoder()} if MODEL == "embedded" else {}
diag = run_diagnostic(model, tokenizer, diag_train, diag_test, seeds=pick((0, 1, 2, 3, 4), (0, 1, 2)),
                      epochs=epochs, controls=controls)
print(f"{diag.n_train} training / {diag.n_test} held-out sentences, {len(diag.seeds)} seeds, {diag.seconds:.1f} s")
print(diag.table())
print(f"the transformer itself on the same held-out sentences: accuracy {diag.model_accuracy:.3f}")
gain = diag.gain("model attention", "uniform")
print("model attention - uniform, per seed:", np.round(gain, 3))
assert diag.accuracy.shape == (len(diag.seeds), len(diag.weightings))
if MODEL == "embedded":
    # printed: whether the model's attention beats uniform and learned weights changes with the
    # training seed of the model
    claim("06.4-wp-attention-over-uniform-min", gain.min())  # on every diagnostic seed?
    claim("06.4-wp-attention-over-uniform-mean", gain.mean())  # on average?
    g = diag.gain("model attention", "learned")
    claim("06.4-wp-attention-over-learned-min", g.min())
    claim("06.4-wp-attention-over-learned-mean", g.mean())
    g = diag.gain("uniform", "pretrained attention")  # the control (checked): never trained on the task
    claim("06.4-wp-uniform-over-pretrained-min", g.min())
    claim("06.4-wp-uniform-over-pretrained-mean", g.mean())
    claim("06.4-wp-context-still-matters", diag.model_accuracy - diag.column("model attention").max())
    finetuned_over_pretrained = diag.gain("model attention", "pretrained attention")  # what fine-tuning did
    print("model attention - pretrained attention, per seed:", np.round(finetuned_over_pretrained, 3))
claim("06.4-wp-learned-vs-uniform", diag.gain("learned", "uniform").mean())  # printed

# %%
fig = Figure(figsize=(8, 3.6), layout="constrained")
diag.plot(fig.subplots())
fig

# %% [markdown]
# **What it shows.** The table prints the diagnostic's held-out accuracy with each weighting, and the line
# below it the gain of the model's attention over uniform weights on each diagnostic seed. Wiegreffe & Pinter's
# LSTMs put the model's attention first. Here that verdict depends on the training run: models trained with
# other seeds of the same recipe gave gains of either sign, so the gains over uniform and over learned weights
# are printed as this model's. With this diagnostic, "attention carries task information" is a finding about
# one trained model, not about the architecture. Whether learned weights do better than uniform ones is printed.
#
# The control is checked: the encoder's attention before fine-tuning does *worse* than uniform weights, on
# every diagnostic seed and on average. It says that untrained attention is no guide, not what fine-tuning
# did; the fine-tuned attention against the pretrained one is printed per diagnostic seed. Where the model's
# attention beats uniform weights, it does so even though shuffling it barely moves the output (section 3):
# the output need not depend on an attention distribution for it to encode which words matter. The diagnostic
# stays well below the transformer itself (checked): context (negation, "cannot wait") still counts.
#
# Two limits, true of their design as well: the model's attention was computed with the whole sentence in
# view, so the "no context" diagnostic receives some context second-hand through the weights; and beating
# uniform weights shows that the weights carry information about the task, not that the prediction relies on
# them. Attention can be *an* explanation in this sense without being *the* explanation.

# %% [markdown]
# ## 5. Sanity checks: randomised weights and shuffled labels (Adebayo et al. 2018)
# *Beyond the lectures: Adebayo et al., Sanity Checks for Saliency Maps, 2018.*
#
# Notebook 01 randomised the digits CNN's layers from the top and watched its saliency maps. Here the same test
# runs on the transformer: re-draw the top $k$ encoder blocks (block $L-1$, then $L-2$ as well, ...) on a copy
# of the model, each module by its own `reset_parameters`, or re-draw the classification head alone. For each
# method, the similarity of the token ranking on the trained and the randomised model is Spearman's rank
# correlation per held-out sentence, averaged (by $|score|$ for the signed methods). Both models explain the
# class the trained model predicts. A ranking that survives the loss of the learned weights shows the input and
# the architecture more than what the model learned.
#
# The run uses the four methods that share one forward/backward pass, plus Chefer LRP. IG and SHAP cost many
# passes per sentence and per randomised model, so they are off (set `SANITY_ALL = True` to add them); fast
# mode also uses fewer sentences and randomises only the head, the top block and all blocks.

# %%
from xaikit.lab import text_sanity

SANITY_ALL = False  # True: add IG (16 steps) and SHAP (200 evaluations); several minutes on a laptop
sanity_methods = ["Grad-SAM", "attention", "rollout", "grad-weighted attention", "Chefer LRP"]
sanity_methods += ["IG", "SHAP"] if SANITY_ALL else []
n_blocks = len(text_sanity.block_names(model))
sanity_steps = [text_sanity.HEAD, *pick(range(1, n_blocks + 1), [1, n_blocks])]
sanity_texts = [t for t, _ in load_movie_reviews("test", progress=False)[:pick(6, 3)]]
cascade = text_sanity.cascade_similarities(model, tokenizer, sanity_texts, sanity_steps, sanity_methods,
                                           progress=True, ig_steps=16, shap_evals=200)
sim = cascade["similarity"]
print(f"mean Spearman over {len(sanity_texts)} held-out sentences, trained vs randomised "
      f"({n_blocks} blocks; 'k' = the top k blocks re-drawn)")
print(f"{'randomised':>10} | " + " | ".join(f"{m[:12]:>12}" for m in sanity_methods))
for step in sanity_steps:
    print(f"{step!s:>10} | " + " | ".join(f"{sim[step][m]:+12.2f}" for m in sanity_methods))
# the control: two models with every block re-drawn (seeds 1 and 0) compared with each other. What two random
# models share is what the input and the architecture alone give a method
random_model = text_sanity.randomise_blocks(model, n_blocks, seed=1)
control_sim = text_sanity.cascade_similarities(random_model, tokenizer, sanity_texts, [n_blocks],
                                               sanity_methods, ig_steps=16, shap_evals=200)["similarity"][n_blocks]
print(f"{'rand/rand':>10} | " + " | ".join(f"{control_sim[m]:+12.2f}" for m in sanity_methods))
head = sim[text_sanity.HEAD]
gradient_views = ["Grad-SAM", "grad-weighted attention", "Chefer LRP"]
print(f"head re-drawn: attention {head['attention']:.3f}, rollout {head['rollout']:.3f}, "
      f"Grad-SAM {head['Grad-SAM']:.2f}, grad-weighted attention {head['grad-weighted attention']:.2f}")
print(f"every block re-drawn: rollout {sim[n_blocks]['rollout']:+.2f}, gradient-based views at most "
      f"{max(sim[n_blocks][m] for m in gradient_views):+.2f}; two random models agree on rollout "
      f"{control_sim['rollout']:+.2f}, on Grad-SAM {control_sim['Grad-SAM']:+.2f}")
if MODEL == "embedded":
    claim("06.5-sanity-head-leaves-attention", min(head["attention"], head["rollout"]))
    claim("06.5-sanity-gradsam-head", head["Grad-SAM"])
    if 3 in sim:  # measured with the whole cascade over 6 sentences; fast mode skips both
        claim("06.5-sanity-gradients-forget", max(sim[n_blocks][m] for m in gradient_views))
        claim("06.5-sanity-rollout-survives", sim[3]["rollout"])
        claim("06.5-sanity-rollout-over-gradsam", sim[3]["rollout"] - sim[3]["Grad-SAM"])
        print(f"top 3 blocks re-drawn: rollout {sim[3]['rollout']:+.2f}, Grad-SAM {sim[3]['Grad-SAM']:+.2f}")
# what the table cost: every model (trained, each randomised copy) and sentence, counted by hooks on the blocks;
# the four cheap views read one shared forward/backward pass, counted once
cascade_cost = cascade["costs"]
print(f"\nthe cascade's cost over {1 + len(sanity_steps)} models x {len(sanity_texts)} sentences: "
      + "; ".join(f"{part}: {cost}" for part, cost in cascade_cost.items()))

# %% [markdown]
# **What it shows.** Re-drawing the head, the only part that knows which class is which, leaves raw attention
# and rollout exactly where they were (similarity 1, checked): they never read the head, so they cannot show
# which words made the model choose "positive". Grad-SAM hardly moves either (printed): its rectified gradient
# is multiplied by the attention, and the ranking follows the attention. Gradient-weighted attention and
# Chefer LRP move more. Raw attention of the last block changes as soon as that block is re-drawn. Rollout, the
# product over all blocks with the residual stream added, keeps most of its ranking with the top 3 blocks
# random (checked): the trained lower blocks still shape it, and the top blocks, which the head
# reads, hardly matter to it. With every block re-drawn its ranking is gone too, and the last row, two random
# models compared, shows that the input and the architecture alone give rollout little. So rollout reads what
# the lower blocks learned, but not the part of the model that decides. The gradient-based views keep little
# once every block is random (printed). The lecture's suspects fail Adebayo's test: raw attention and rollout
# the head check, and rollout barely notices the top half of the model.
#
# ### Shuffled labels: the data randomisation test (Adebayo et al. 2018, section 4)
#
# Adebayo et al.'s second test keeps the architecture and the training and takes away what the labels teach: a
# model is trained on labels permuted across the texts (each class keeps its count), and its explanations are
# compared with the trained model's. Here the same pretrained encoder is fine-tuned with the same recipe and
# number of steps on 2,000 of the training texts with shuffled labels, about six passes over them, enough to
# memorise them (the first line below shows how well). What it learns cannot carry over to new sentences, so
# its held-out accuracy is near chance.
#
# Two things differ from the paper's image networks: every fine-tuned copy starts from a pretrained encoder (the
# "pretrained" row shows what it alone shares with the trained model), and the shuffled model sees fewer texts
# more often. For the second, a **control**: the same 2,000 texts and steps with their *real* labels ("same
# texts"). The control and the shuffled model differ in the labels alone. A method whose ranking depends on
# what the model learned from the labels must rank the tokens differently on the shuffled model. The table
# repeats two rows of the cascade for reference (every block re-drawn, and two random models). Both extra
# models are built by `python -m xaikit prepare` and loaded from the cache; notebook 01 runs the same test on
# the digits CNN.

# %%
import json

from xaikit.models.sentiment import LABELS, ensure_subset_sentiment, n_batches

if MODEL == "embedded":
    if not all(prepared_folder(labels=labels).exists() for labels in LABELS):  # a cache from before this test
        print("the shuffled-label model or its control is not in the cache yet: training it now (minutes each, "
              "with a progress bar); `python -m xaikit prepare` builds them ahead of time")
    shuffled_model, _ = xaikit.models.load_sentiment("embedded-shuffled")  # from the cache (prepare built it)
    same_texts_model, _ = xaikit.models.load_sentiment(ensure_subset_sentiment())  # the control
    built = {labels: json.loads((prepared_folder(labels=labels) / "metrics.json").read_text())
             for labels in LABELS}  # measured when each model was built
    fit, same = built["shuffled"], built["subset"]
    positive_share = np.mean([y for _, y in load_movie_reviews("test", progress=False)])
    # read the models first: did the shuffled one fit its labels (Adebayo et al. train until it does)?
    one_answer = max(same["train_positive_share"], 1 - same["train_positive_share"])  # the same texts' classes
    print(f"shuffled-label model: the real recipe's {fit['n_steps']} steps over {fit['n_train']:,} of the "
          f"{built['real']['n_train']:,} training texts ({fit['n_steps'] / n_batches(fit['n_train']):.1f} epochs of "
          f"them); it fits {fit['train_accuracy']:.1%} of their shuffled labels (one answer for all: {one_answer:.1%})")
    print(f"its control, the same texts and steps with their real labels, fits {same['train_accuracy']:.1%} of them")
    print(f"held-out accuracy: the trained model {built['real']['test_accuracy']:.3f}, the control "
          f"{same['test_accuracy']:.3f}, the shuffled-label model {fit['test_accuracy']:.3f} (the larger class: "
          f"{max(positive_share, 1 - positive_share):.3f})")
    print(f"on the {fit['n_test']:,} held-out sentences the shuffled-label model calls {fit['test_positive_share']:.0%} "
          f"positive, the spread (std) of its logit gap {fit['test_logit_gap_std']:.2f} (the control's "
          f"{same['test_logit_gap_std']:.2f})")
    data_rand = {name: text_sanity.model_similarities(model, other, tokenizer, sanity_texts, sanity_methods,
                                                      original=cascade["scores"][0],  # the trained model's views
                                                      ig_steps=16, shap_evals=200)["similarity"]
                 for name, other in (("shuffled", shuffled_model), ("same texts", same_texts_model),
                                     ("pretrained", pretrained_encoder()))}
    print(f"mean Spearman over {len(sanity_texts)} held-out sentences, trained vs another model")
    print(f"{'other':>10} | " + " | ".join(f"{m[:12]:>12}" for m in sanity_methods))
    for name, row in (*data_rand.items(), (f"all {n_blocks}", sim[n_blocks]), ("rand/rand", control_sim)):
        print(f"{name:>10} | " + " | ".join(f"{row[m]:+12.2f}" for m in sanity_methods))
    shuffled_sim, same_sim = data_rand["shuffled"], data_rand["same texts"]
    label_effect = {m: same_sim[m] - shuffled_sim[m] for m in sanity_methods}
    print("what the labels alone change (same texts minus shuffled, per method; the data, the steps and the "
          "start are the same): " + ", ".join(f"{m} {v:+.2f}" for m, v in label_effect.items()))
    print("shuffled-label model minus the two-random-models floor, per method: "
          + ", ".join(f"{m} {shuffled_sim[m] - control_sim[m]:+.2f}" for m in sanity_methods))
    print("shuffled-label model minus pretrained encoder, per method (both equally far from the trained "
          "model's rankings where this is near 0): "
          + ", ".join(f"{m} {shuffled_sim[m] - data_rand['pretrained'][m]:+.2f}" for m in sanity_methods))
    claim("06.5-data-rand-fits", fit["train_accuracy"])  # it fit its shuffled training labels ...
    claim("06.5-data-rand-accuracy", fit["test_accuracy"])  # ... and nothing carried to new sentences
    claim("06.5-data-rand-gradsam", shuffled_sim["Grad-SAM"])
    claim("06.5-data-rand-attention", shuffled_sim["attention"])
    claim("06.5-data-rand-rollout", shuffled_sim["rollout"])
    claim("06.5-data-rand-grad-attention", shuffled_sim["grad-weighted attention"])
    claim("06.5-data-rand-chefer", shuffled_sim["Chefer LRP"])
    claim("06.5-data-rand-labels-gradsam", label_effect["Grad-SAM"])  # the control: what the labels alone do
    claim("06.5-data-rand-labels-attention", label_effect["attention"])
    claim("06.5-data-rand-labels-rollout", label_effect["rollout"])
    claim("06.5-data-rand-labels-grad-attention", label_effect["grad-weighted attention"])
    claim("06.5-data-rand-labels-chefer", label_effect["Chefer LRP"])
else:
    print(f"Skipped for MODEL = {MODEL!r}: the test needs a second model trained like this one on shuffled "
          "labels. For the embedded model `python -m xaikit prepare` builds it "
          "(xaikit.models.load_sentiment('embedded-shuffled')) and its control; for another model, fine-tune a "
          "copy with its own recipe on xaikit.models.sentiment.shuffle_labels(pairs, seed) and compare the two with "
          "text_sanity.model_similarities(model, other, tokenizer, sanity_texts, sanity_methods).")

# %% [markdown]
# **What it shows, and what it does not.** Read the models first. The shuffled-label model fits nearly all of
# its shuffled training labels, well above answering one class for all, so it learned something, just nothing
# true: on held-out sentences its accuracy is that of one answer for all. The control fits its real labels and
# generalises, a little below the trained model. Then the rankings. On the control every method ranks the
# tokens much as on the trained model: the smaller data changes little. On the shuffled-label model the
# rankings of Grad-SAM, gradient-weighted attention and Chefer LRP move far from the trained model's, and the
# "labels alone" line (checked for these three) says how much of that the labels account for:
# these methods depend on what the labels taught, as Adebayo et al.'s test asks. Raw attention of the last
# block changes with the labels almost as much. Rollout still ranks the tokens largely as on the trained model
# (checked) and gains least from the real labels: its ranking comes mostly from the pretrained
# encoder's weights, not from the input and the architecture alone (two random models agree little on it), so
# the lecture's suspect fails here as in the cascade.
#
# Cautions: the rand/rand row is no pure floor, since the two random models keep the trained word embeddings and
# head (Grad-SAM, which reads the head, agrees well there); the shuffled and pretrained rows can be about equally
# far from the trained model (the last line), which says both lack what the real labels taught, not that they
# rank alike; and six sentences are few (`SANITY_ALL = True` adds IG and SHAP).

# %%
sanity_panel = widgets.TextSanityPanel(model, tokenizer, sanity_texts,
                                       methods=pick(["Grad-SAM", "attention", "rollout", "Chefer LRP"],
                                                    ["Grad-SAM", "rollout"]))
sanity_panel.widget

# %% [markdown]
# ## 6. Faithfulness: comprehensiveness and sufficiency
# *Beyond the lectures: DeYoung et al., ERASER: a benchmark to evaluate rationalized NLP models, 2020.*
#
# DeYoung et al. (2020, ERASER) delete the top k% of the words from the input (**comprehensiveness**: how much
# does the predicted class's probability drop? higher is better) or keep only them (**sufficiency**: how much
# does it drop? lower is better). Each is averaged over ERASER's bins k = 1, 5, 10, 20 and 50%: the **area over
# the perturbation curve** (AOPC), the mean drop of the probability over the bins. A bin removes at least one
# word, `ceil(k * words)` as in ERASER's scorer, so on the lab's short sentences the 1% and 5% bins remove the
# top word alone.
#
# Both measures delete words, so section 2's caution holds: the degraded inputs are out of the training
# distribution, and the random order, degraded the same way, is the control. Section 2's grouping, fixed by
# what each order scores, applies: the output's sensitivity to the word (gradient, gradient x attention, SHAP,
# IG) or not (raw attention, Grad-SAM). Deleting the top words of the second group removes less of the decision
# than deleting those of the first (checked for the means of the two groups). The random order does worse than
# the first group on both measures (checked for their mean); whether it is the worst of all changes with the
# training run (printed).

# %%
print(f"{'ranking':22} {'comprehensiveness':>18} {'sufficiency':>12}")
for name, m in summary.items():
    print(f"{name:22} {m['comprehensiveness']:18.3f} {m['sufficiency']:12.3f}")
assert lab.bins == (0.01, 0.05, 0.1, 0.2, 0.5)  # exact: the lab keeps the same literals (ERASER_BINS)
panel.set(view="AOPC")
assert panel.error is None and panel.result.view == "AOPC"
comp = {name: m["comprehensiveness"] for name, m in summary.items()}
suff = {name: m["sufficiency"] for name, m in summary.items()}
print("most comprehensive ranking:", max(comp, key=comp.get), "| most sufficient:", min(suff, key=suff.get))
# section 2's two groups, by what an order scores: the output's sensitivity to the word, or not
by_gradients, by_attention = by_gradients_lab, ("attention", "Grad-SAM")
# printed: how many (ranking, measure) pairs do no better than the random order
claim("06.6-not-beating-random", sum(comp[m] <= comp["random"] for m in comp if m != "random")
      + sum(suff[m] >= suff["random"] for m in suff if m != "random"))
if MODEL == "embedded":  # as in section 2, the groups are compared by the means of their orders
    from_gradients_comp, from_attention_comp = (np.mean([comp[m] for m in g]) for g in (by_gradients, by_attention))
    claim("06.6-gradient-orders-over-random-comp", from_gradients_comp - comp["random"])  # the control
    claim("06.6-gradient-orders-over-random-suff", suff["random"] - np.mean([suff[m] for m in by_gradients]))
    claim("06.6-attention-orders-less-comprehensive", from_gradients_comp - from_attention_comp)

# %% [markdown]
# **Chefer et al.'s relevance in the lab** (the row "Chefer LRP" of the tables above). It is read from
# attention, like Grad-SAM, but weighed by gradients and relevance: whose order of the words does it share?
# Per held-out sentence, Kendall's tau-b over the word tokens, as in section 3: with gradient-weighted attention
# (the same product with $A$ in place of $R^A$), with raw attention and with leave-one-out.

# %%
from xaikit.lab.agreement import word_tau

# the lab kept every sentence's scores (lab.scores: its rankings, grad-weighted attention, leave-one-out) and
# word positions, so nothing runs again here
lrp_tau = {"grad-weighted attention": [], "attention": [], "LOO": []}
for i in range(len(lab.sentences[:pick(len(lab.sentences), 12)])):  # fast mode: the first 12
    for k, taus in lrp_tau.items():
        taus.append(word_tau(lab.scores["Chefer LRP"][i], lab.scores[k][i], lab.positions[i]))
lrp_median = {k: float(np.nanmedian(t)) for k, t in lrp_tau.items()}
for k, t in lrp_tau.items():
    q1, q3 = np.nanquantile(t, [0.25, 0.75])
    print(f"Chefer LRP vs {k:24} median tau {lrp_median[k]:+.2f}, quartiles {q1:+.2f} to {q3:+.2f}, "
          f"negative in {np.mean(np.array(t) < 0):.0%}")
m = summary["Chefer LRP"]
print(f"Chefer LRP: deleted before a flip {m['deleted before a flip']:.2f}, comprehensiveness "
      f"{m['comprehensiveness']:.3f}, sufficiency {m['sufficiency']:.3f}")
if MODEL == "embedded":
    claim("06.6-lrp-tau-grad-weighted", lrp_median["grad-weighted attention"])  # nearly that order ...
    claim("06.6-lrp-tau-grad-weighted-over-loo", lrp_median["grad-weighted attention"] - lrp_median["LOO"])
    claim("06.6-lrp-tau-loo-weak", lrp_median["LOO"])  # ... with leave-one-out it agrees only weakly
    claim("06.6-lrp-more-comprehensive", comp["Chefer LRP"] - max(comp[m] for m in by_attention))  # than both
    claim("06.6-lrp-more-sufficient", min(suff[m] for m in by_attention) - suff["Chefer LRP"])  # printed only

# %% [markdown]
# **What it shows.** Chefer et al.'s relevance orders the words almost as gradient-weighted attention does
# (median tau checked): the two share the product over the blocks and differ only in what the
# gradient is multiplied by, $R^{A}$ or $A$. With leave-one-out it agrees only weakly (median tau,
# checked). Yet when the top words are deleted it behaves like the gradient-based orders, not like the
# attention-based ones it is read from: its top words carry more of the decision than those of raw attention
# or Grad-SAM (comprehensiveness higher, checked; its sufficiency margin is printed as this model's, since it
# nearly vanishes for some training runs). Its order is read from attention but weighted by
# the output's sensitivity, the property section 2 found to separate the orders. Agreeing with one measure of
# importance (leave-one-out, one word at a time) and doing well on another (deleting the top k% at once) are
# different things.

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-10", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise (10 min, ★★☆).** The lecture concludes: whether attention is explanation depends on the
# definition of explanation. Which definition does each experiment of sections 2-6 test?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Erasure, flip fractions and AOPC test **faithfulness as importance ranking**: do the top-ranked tokens
# carry the decision? Permutation tests **uniqueness/counterfactual sensitivity**: would other weights
# give another output? Wiegreffe & Pinter's diagnostic tests whether attention **encodes task
# information** a model without context can use. The sanity checks test whether an explanation **depends
# on what the model learned** at all. None of them tests **plausibility** (does the explanation make sense
# to a human?).
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# ## 7. Summary: what each experiment says about each view
# *Beyond the lectures: Adebayo et al., Sanity Checks for Saliency Maps, 2018; DeYoung et al., ERASER: a benchmark to evaluate rationalized NLP models, 2020.*
#
# | experiment | question | raw attention / rollout | Grad-SAM | gradient-based orders, SHAP, IG, Chefer LRP | § |
# | --- | --- | --- | --- | --- | --- |
# | **erasure** (Serrano & Smith) | does the top-attended word carry the decision? | moves the output more than a random word, rarely flips it | | | 2 |
# | **deletion**, against a random order | which order flips the decision soonest? | need more deletions | needs more deletions | flip sooner for this model (printed) | 2 |
# | **shuffle** (Jain & Wallace) | would other weights give another output? | last layer: barely; earlier layers: more, mostly through the other rows | | | 3 |
# | **rank agreement** (Jain & Wallace) | do attention, gradient and LOO order words alike? | weakly (median tau small, positive) | | gradient vs LOO: no closer than attention | 3 |
# | **diagnostic** (Wiegreffe & Pinter) | does the attention carry task information? | depends on the training run; untrained attention does worse than uniform | | | 4 |
# | **model randomisation** (Adebayo) | does the view depend on the learned weights? | head: not at all; rollout survives 3 random blocks | head: hardly | move with the weights | 5 |
# | **data randomisation** (Adebayo) | does the view depend on what the labels taught? | rollout: largely not | yes | yes | 5 |
# | **AOPC** (ERASER) | do the top words carry the decision? | less comprehensive | less comprehensive | more comprehensive than random; Chefer LRP beats the attention orders | 6 |
#
# No single experiment settles "is attention explanation?": each tests one definition of explanation, and the
# answer can change with the definition, with the layer and rows one looks at, and for several measurements here
# with the training run.
