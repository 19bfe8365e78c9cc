# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # 04 — Grad-SAM versus SHAP on BERT sentiment, and "is attention explanation?"
#
# A transformer's attention weights say how much each token looks at every other token. Are they an
# explanation of the prediction? This notebook does the lecture's homework on a BERT-family sentiment
# classifier:
#
# 1. the model and its attention (eager attention: SDPA returns none);
# 2. the attention explorer: pick two layers, plot one head of each, interpret;
# 3. **Grad-SAM** (Barkan et al. 2021): attention times the ReLU of its gradient, implemented by you;
# 4. **SHAP** with the tokenizer as masker, padded to the longest input rather than to 512 tokens;
# 5. Grad-SAM against SHAP, token by token, with rank correlations;
# 6. more views: raw attention, attention rollout, gradient-weighted attention, Integrated Gradients, and
#    Chefer et al.'s relevance propagation;
# 7. the debate as experiments: Serrano & Smith's erasure, Jain & Wallace's permutation and rank agreement;
# 8. faithfulness of every method: comprehensiveness and sufficiency.
#
# Every claim below is executed: `claim(id, value)` (from `xaikit.claims`) prints the value with its
# bound and fails the cell if the bound does not hold; numbers that vary from one training run to the next
# are printed, not asserted, and say why. Cells that take more than a few seconds say so first. The
# numbers in the text are those of the embedded model; with another model the same cells print its own.

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
# a Figure left at the end of a cell is drawn as a picture (Jupyter turns this on only when pyplot makes a
# figure; until then it prints "<Figure size ...>")
# %matplotlib inline
import numpy as np
import shap
import torch
from matplotlib.figure import Figure

import xaikit
from xaikit import pick, widgets
from xaikit.claims import claim
from xaikit.course import checks
from xaikit.course.checks import exercise
from xaikit.models.arch import attn_implementation
from xaikit.text.gradsam import attention_and_gradients, gradsam, gradsam_loop, gradsam_scores
from xaikit.text.lab.faithfulness import run_lab
from xaikit.text.shaptext import credit_split, prediction_function, shap_text, to_token_scores
from xaikit.text.tokens import rank_correlation
from xaikit.text.views import all_views
from xaikit.widgets.attention import draw_attention

xaikit.set_seed(0)

# The model: "embedded" is xaikit's offline MiniLM fine-tuned on movie reviews (build it once with
# `python -m xaikit prepare`). With a network, put the lecture's "textattack/bert-base-uncased-SST-2"
# here and run the notebook again: nothing else changes.
MODEL = "embedded"
# what the lecture's model size costs: random-weight models of its shape, timed by benchmarks/lecture_scale.py
print(xaikit.models.lecture_costs("gradsam", "shap", "lrp", "lab"))

# %%
from xaikit.models.sentiment import LECTURE_SENTENCES, load_movie_reviews, sentiment_folder

if MODEL == "embedded" and not sentiment_folder().exists():
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

# %% [markdown]
# ## 1. The model and its attention
# *Lecture: XAI for transformers (seeds/002), lines 363-400.*
#
# The lecture's five sentences and the labels the lecture's model gave them (1 = positive). The model
# must run with **eager** attention: transformers' default SDPA kernel never forms the attention matrix,
# so `output_attentions=True` would return nothing to explain.
#
# The tokenizer returns its tensors on the CPU and the model may sit on a GPU: move the encoding to the
# model's device before calling it, `enc = tokenizer(...).to(model.device)`, and bring what you keep
# back with `.cpu()`. (xaikit's own functions do both for you.)

# %%
sentences = [s for s, _ in LECTURE_SENTENCES]
expected = [label for _, label in LECTURE_SENTENCES]
assert expected == [1, 0, 0, 1, 0]
enc = tokenizer(sentences, return_tensors="pt", padding=True).to(model.device)
with torch.no_grad():
    out = model(**enc, output_attentions=True)
predicted = out.logits.argmax(-1).tolist()
probs = torch.softmax(out.logits.double(), dim=-1).cpu()  # (5, classes), back on the CPU
for s, p, pr in zip(sentences, predicted, probs, strict=True):
    print(f"{p}  P = {pr[p]:.2f}  {s}")
assert attn_implementation(model) == "eager"
assert len(out.attentions) == xaikit.models.n_layers(model)       # one attention tensor per layer ...
assert out.attentions[0].shape[1] == xaikit.models.n_heads(model)  # ... with every head
row_sums = out.attentions[0].sum(-1).cpu()                          # (B, M, N): one sum per query row
real = enc["attention_mask"].bool().cpu()[:, None, :].expand_as(row_sums)
claim("04.1-attention-rows-sum-to-one", (row_sums[real] - 1).abs().max())  # each real query's row sums to 1
agree = [p == e for p, e in zip(predicted, expected, strict=True)]
# printed, not asserted, for the embedded model: "I cannot wait" (index 3) is a near tie that flips with the
# training seed (its line prints the range over the claims matrix's builds); the four clear sentences keep
# the lecture's labels on every build (notebook 02 asserts it)
claim("04.1-lecture-labels", sum(agree), note="of 5 agree with the lecture's model")
if MODEL == "embedded":
    # printed, not asserted: how sure the model is depends on the training seed and on the CPU that trained it
    claim("04.1-cannot-wait-p-positive", probs[3, 1], note="P(positive | 'I cannot wait for next time')")
elif MODEL != "tiny":
    assert sum(agree) >= 4, predicted                               # (nearly) the lecture's labels

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-1", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise.** The embedded model gives the four clear sentences the lecture's labels on every build, but
# *"I cannot wait for next time"* is a near tie: the `04.1-cannot-wait-p-positive` line above prints its
# P(positive) on your build and the range over the builds of the claims matrix, which straddles 0.5 (some
# training seeds call it positive, others negative), which is why the labels are printed, not asserted.
# Why is it the hardest of the five?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# It is the only one whose sentiment is not carried by one word: *cannot* is a negation and *wait* is
# neutral; only the idiom as a whole is eager. What the training text can and cannot tell us is counted in
# the next cell. It can show that "cannot" is rare there (a couple of dozen sentences of thousands) and that
# slightly more of those sentences are negative than of the whole text; with so few, that lean is within
# about one standard error of the overall share (printed), so it is weak evidence, not a reason. It also
# shows that the idiom itself is there, mostly spelled "can't wait" or "cant wait", and mostly in positive
# sentences (counted). What it cannot show is what the model learned from either: a count of the training
# text says what the model saw, not how it combines "cannot" with "wait". Notebook 02's IG (asserted there)
# puts its largest attribution on "cannot", against the positive class, on every build; the SHAP values
# below do so on some builds only (printed). A per-token attribution says which token the output is most sensitive to, and cannot
# tell whether the model reads the idiom as a whole (the interaction is spread over the tokens; notebook
# 02's last exercise measures it by swapping the words). The
# lecture's BERT-base reads it the other way: its SHAP values give *cannot* +1.07 and *wait* +1.28 towards
# positive. (Trained without the tweets, an earlier recipe of this model called the sentence negative: see
# `xaikit.models.sentiment`.)
# </details>
# <!-- END SOLUTION -->

# %%
import re

from xaikit.models.sentiment import training_pairs

if MODEL == "embedded":  # the embedded model's training text, counted
    pairs = training_pairs(progress=False)
    with_cannot = [label for text, label in pairs if "cannot" in re.findall(r"[a-z']+", text.lower())]
    share_all = 1 - np.mean([label for _, label in pairs])
    share_cannot = 1 - np.mean(with_cannot)
    print(f"{len(with_cannot)} training sentences contain 'cannot', {share_cannot:.0%} of them negative "
          f"(of all {len(pairs)} training sentences {share_all:.0%} are negative)")
    # how far a share of that many sentences strays by chance: one standard error of a binomial share
    print(f"one standard error of a share of {len(with_cannot)} sentences: "
          f"{np.sqrt(share_all * (1 - share_all) / len(with_cannot)):.0%}")
    idiom = [label for text, label in pairs  # "cannot / can't / cant ... wait" within one sentence
             if re.search(r"\b(cannot|can't|cant|can not)\b[^.!?]*\bwait\b", text.lower())]
    print(f"{len(idiom)} training sentences have the idiom (cannot / can't / cant ... wait), "
          f"{sum(idiom)} of them positive")
    claim("04.1-cannot-leans-negative", share_cannot - share_all)  # "cannot" leans negative in the training text

# %% [markdown]
# ## 2. The attention explorer
# *Lecture: XAI for transformers (seeds/002), line 646.*
#
# Layer and head pickers, a heatmap with the tokens as labels (rows are queries, columns keys), and the
# row of one query token shaded under it. Try the lecture's *"The cat drank the milk because it was
# hungry"* and follow the query `it`.

# %%
explorer = widgets.AttentionExplorer(model, tokenizer, text="I cannot wait for next time", layer=0, head=0)
view = explorer.set(layer=xaikit.models.n_layers(model) - 1, head="mean")
assert explorer.error is None and view.weights.shape == (len(view.tokens), len(view.tokens))
claim("04.2-explorer-rows-sum-to-one", (view.weights.sum(-1) - 1).abs().max())  # every row a distribution
explorer

# %% [markdown] nbgrader={"grade": false, "grade_id": "plot_heads-task", "locked": true, "schema_version": 3, "solution": false}
# **Homework 3.** Choose two layers and plot the attention of one head in each. Here: head 0 of the
# first layer and of the last layer on one sentence.

# %% nbgrader={"grade": false, "grade_id": "plot_heads", "locked": false, "schema_version": 3, "solution": true}
@exercise(checks.check_head_plots)  # while the body is a stub, later calls use xaikit's reference and say so
def plot_heads(attentions, tokens, picks):
    """One heatmap per (layer, head) in picks, queries as rows, token labels, fixed 0-1 colours."""
    ### BEGIN SOLUTION
    fig = Figure(figsize=(5 * len(picks), 4.4), layout="constrained")
    for ax, (layer, head) in zip(fig.subplots(1, len(picks), squeeze=False)[0], picks, strict=True):
        draw_attention(ax, attentions[layer, head], tokens, title=f"layer {layer}, head {head}")
    return fig
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "plot_heads-check", "locked": true, "points": 1, "schema_version": 3, "solution": false}
assert checks.check_head_plots(plot_heads)
### BEGIN HIDDEN TESTS
assert checks.check_head_plots(plot_heads, verbose=False).passed, "graded: plot_heads must be written and pass every case"
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "plot_heads-use", "locked": true, "schema_version": 3, "solution": false}
text = "I cannot wait for next time"
tokens = tokenizer.convert_ids_to_tokens(tokenizer(text)["input_ids"])
with torch.no_grad():
    att = model(**tokenizer(text, return_tensors="pt").to(model.device), output_attentions=True).attentions
att = torch.stack([a[0] for a in att]).cpu()  # (L, M, N, N), back on the CPU for plotting
plot_heads(att, tokens, [(0, 0), (att.shape[0] - 1, 0)])

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-2", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise.** Suggest an interpretation of each heatmap. What do heads in early layers often do, and
# what changes in the last layer?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Early-layer heads often implement simple, position-based patterns: attend to the previous or next token,
# to the token itself, or broadly to everything; these are the same for every sentence. Heads in later
# layers are more content-dependent, and many put most of their weight on `[SEP]` or `[CLS]`, a "no-op"
# pattern (Clark et al. 2019, *What does BERT look at?*): when a head has nothing useful to add, attending
# to a token whose value vector is small changes little. Which pattern you see depends on the head, which
# is exactly why a single head is a weak explanation of the prediction.
# </details>
# <!-- END SOLUTION -->

# %% [markdown] nbgrader={"grade": false, "grade_id": "my_gradsam-task", "locked": true, "schema_version": 3, "solution": false}
# ## 3. Grad-SAM
# *Lecture: XAI for transformers (seeds/002), lines 254-362, 403-448, 647-656.*
#
# For a text with $N$ tokens and a model with $L$ layers of $M$ heads, with $S$ the logit of the
# predicted class and $A^{lm}$ the $N\times N$ attention of head $m$ in layer $l$:
#
# $$r_i = \frac{1}{LMN} \sum_{l=1}^{L}\sum_{m=1}^{M}\sum_{j=1}^{N} \big[A^{lm} \circ \mathrm{ReLU}(\partial S / \partial A^{lm})\big]_{ij}$$
#
# The gradient tells how sensitive the prediction is to each attention value; the ReLU keeps only the
# attention that pushes the prediction up.
#
# *Convention.* Barkan et al. write $A = \mathrm{softmax}((W_q U)^\top W_k U / \sqrt{d})$, that is
# $Q^\top K$ with tokens as the columns of $U$; Vaswani et al. and BERT write $\mathrm{softmax}(QK^\top/\sqrt{d_k})$
# with tokens as rows. Both give the same $N\times N$ matrix whose row $i$ holds query token $i$'s weights
# over the keys, and transformers returns it as `(batch, head, query, key)`. The inner sum over $j$ runs
# **along row $i$** (the last axis).
#
# **Homework 1, first half.** Implement Grad-SAM from the attention and gradient tensors `(L, M, N, N)`;
# section 4c has you capture them yourself.

# %% slideshow={"slide_type": "subslide"}
xaikit.diagrams.gradsam_flow()  # the formula's data flow, on a small random example

# %% nbgrader={"grade": false, "grade_id": "my_gradsam", "locked": false, "schema_version": 3, "solution": true}
@exercise(checks.check_gradsam)
def my_gradsam(attentions, gradients):
    """Grad-SAM scores (N,) from attention and dS/dA, both (L, M, N, N)."""
    ### BEGIN SOLUTION
    L, M, N, _ = attentions.shape
    h = attentions * torch.relu(gradients)  # H^{lm} = A^{lm} o ReLU(G^{lm})
    return h.sum(dim=(0, 1, 3)) / (L * M * N)  # sum over layers, heads and along each row
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "my_gradsam-check", "locked": true, "points": 1, "schema_version": 3, "solution": false}
assert checks.check_gradsam(my_gradsam)
### BEGIN HIDDEN TESTS
assert checks.check_gradsam(my_gradsam, verbose=False).passed, "graded: my_gradsam must be written and pass every case"
### END HIDDEN TESTS

# %% [markdown]
# Now on the model: one forward pass keeps the attention of every layer, one backward pass from the
# predicted logit gives $\partial S/\partial A$. Your function, xaikit's vectorised one and the plain
# triple loop must agree.

# %%
text = "You look extremely confused"
e1 = xaikit.text.encoding.encode_one(model, tokenizer, text)
A, G, logits = attention_and_gradients(model, e1.inputs, target=e1.target)
print("attention and gradients:", tuple(A.shape))
assert all(G[layer].abs().max() > 0 for layer in range(A.shape[0]))  # gradients reach every layer
torch.testing.assert_close(my_gradsam(A, G), gradsam_loop(A, G), atol=1e-6, rtol=0)
reference = gradsam_loop(A, G)
claim("04.3-gradsam-equals-loop", (gradsam_scores(A, G) - reference).abs().max() / reference.abs().max())

grad_sam = {s: gradsam(model, tokenizer, s) for s in sentences}
for s, r in grad_sam.items():
    ranked = ", ".join(f"{t} {v:.2e}" for t, v in r.top(3))
    print(f"{s!r:32} -> class {r.target}: {ranked}")
assert all(r.target == p for r, p in zip(grad_sam.values(), predicted, strict=False))

fig = Figure(figsize=(12, 3.0), layout="constrained")
for ax, (s, r) in zip(fig.subplots(1, 5), grad_sam.items(), strict=False):
    r.bar(ax, title=s)
    ax.tick_params(axis="x", rotation=60)
fig

# %% [markdown]
# > **Pause here.** The lecture asks: "What do we see? Which token is always important? What does “token importance” mean here?"
# > (XAI for transformers, seeds/002, lines 431-433)

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-3", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# In the bar charts `[CLS]` is on top in most of the five sentences (counted in the next cell's printout),
# whatever the sentence says; the lecture's BERT-base put it first in all three rankings it prints.
# "Always" is too strong for this model: the count is printed, not asserted, because it moves with the
# training seed (ledger claim 04.3-cls-tops-rows). "Importance" here is not "this word changed the
# prediction": a Grad-SAM score sums the token's own **query row**, the attention the token pays, where
# raising it would raise the explained logit. `[CLS]` wins because the classifier reads only its final
# vector, so its row is where the gradient is largest (section 5 measures the share per layer). Whether
# deleting a word changes the decision is another question, asked in section 7.
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# **What a Grad-SAM score counts.** Token $i$'s score sums **row $i$** of $A^{lm} \circ \mathrm{ReLU}(G^{lm})$:
# the attention that token $i$ *pays*, as the query, to every key $j$, where the prediction would rise if
# that weight rose. It is not the attention token $i$ *receives* from the other tokens (column $i$). The
# lecture words the score as attention a token receives; the formula (Barkan et al.'s and the lecture's
# code, which sums over the columns $j$ of each row) says it is the token's own query row. The two are
# different numbers, here side by side:

# %%
received = {}
for s, r in grad_sam.items():
    a, g = torch.from_numpy(r.detail.attentions), torch.from_numpy(r.detail.gradients)  # (L, M, N, N)
    L, M, N, _ = a.shape
    received[s] = (a * torch.relu(g)).sum(dim=(0, 1, 2)) / (L * M * N)  # column sums: attention received
    print(f"{s!r:32} Grad-SAM (row it pays) top {r.tokens[int(np.argmax(r.scores))]!r:10} "
          f"column (attention it receives) top {r.tokens[int(received[s].argmax())]!r}")
cls_pays = sum(int(np.argmax(r.scores)) == 0 for r in grad_sam.values())
cls_receives = sum(int(received[s].argmax()) == 0 for s in grad_sam)
print(f"[CLS] tops the rows in {cls_pays} of 5 sentences, the columns in {cls_receives}")
if MODEL == "embedded":  # [CLS] is on top for what it pays (printed: 3-4 of 5 over seeds 0-4), never for what it gets
    claim("04.3-cls-tops-rows", cls_pays, note="of 5 sentences")
    claim("04.3-cls-never-tops-columns", cls_receives, note="of 5 sentences")

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-4", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise.** Where does Grad-SAM sit in the taxonomy: post-hoc or intrinsic, model-agnostic or
# model-specific, local or global? And what does a high score say about a token?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Post-hoc (it explains a trained model), model-specific (it needs the attention weights and their
# gradients, so only attention models qualify), and local (one score per token of one input). A token
# scores high when, as a query, it spreads its attention where the prediction is sensitive to it: what it
# *attends to*, weighted by the positive gradient, not how much attention it *receives*. That is not the
# same as "this word caused the prediction": `[CLS]` tops the scores because the classifier reads its row.
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# ## 4. SHAP with the tokenizer as masker
# *Lecture: XAI for transformers (seeds/002), lines 449-513, 657-675.*
#
# SHAP's Partition explainer hides groups of tokens (replacing them by `[MASK]`) and asks the model about
# each masked variant; the prediction function returns the **positive-class logit**. The lecture's function
# pads every variant to `max_length` (512 for BERT), so each variant SHAP asks about (about a dozen for a
# four-word sentence, hundreds for a long review) costs a full 512-token forward pass. Padding to the
# longest string of each call gives the same numbers, since padding is masked out of attention. First the measurement, on one sentence (this cell takes about 10 s, nearly all
# of it in the lecture's recipe; the speed-up is printed, not asserted, since a shared CPU's timings vary):

# %%
import time

one, evals = [sentences[2]], pick(500, 40)  # about 10 s: the lecture's 512-token padding is the slow part
shap_text(model, tokenizer, one, target=1, max_evals=10)  # warm-up: SHAP's first call in a process
t0 = time.perf_counter()
fast = shap_text(model, tokenizer, one, target=1, max_evals=evals)
t_fast = time.perf_counter() - t0
t0 = time.perf_counter()
slow = shap_text(model, tokenizer, one, target=1, max_evals=evals, padding="max_length")
t_slow = time.perf_counter() - t0
diff = np.abs(fast.values[0] - slow.values[0]).max()
print(f"pad to longest {t_fast:.2f} s, pad to max_length {t_slow:.2f} s: {t_slow / t_fast:.1f}x; "
      f"largest difference {diff:.1e}")
claim("04.4-padding-speedup", t_slow / t_fast)  # printed, not asserted: a shared CPU's timings vary
claim("04.4-padding-same-values", diff)  # the same values, whatever the padding

# %% [markdown]
# Now all five sentences. `shap_text` returns SHAP's own `Explanation`, so SHAP's plots work, and it has
# already checked **additivity**: base value + sum of the SHAP values = the model's output.

# %%
explanation = shap_text(model, tokenizer, sentences, target=1)
f = prediction_function(model, tokenizer, target=1)
fx = f(sentences)
additivity = 0.0  # the largest |base + sum(phi) - f(x)| over the five sentences
for i, s in enumerate(sentences):
    total = explanation.base_values[i] + explanation.values[i].sum()
    print(f"{s!r:32} base {explanation.base_values[i]:+.3f} + sum(phi) {explanation.values[i].sum():+.3f} "
          f"= {total:+.4f}; f(x) = {fx[i]:+.4f}")
    additivity = max(additivity, abs(total - fx[i]))
claim("04.4-shap-additivity", additivity)
shap.plots.text(explanation[0])

# %%
totals = explanation.abs.sum(0)  # |SHAP| summed over the five sentences, token by token
# SHAP's text masker names the special tokens [CLS] and [SEP] "" (their bar would have no label): check
# that only the first and last token of each sentence are nameless, then name them
assert all(row.data[0] == row.data[-1] == "" and "" not in list(row.data[1:-1]) for row in explanation)
totals.feature_names = np.array([name or "[CLS] + [SEP]" for name in totals.feature_names], dtype=object)
shap.plots.bar(totals)  # shows the figure and returns nothing (show=False returns its Axes, printed)

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-5", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise.** Which words get the largest |SHAP| values over the five sentences? Does that make sense?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# In the three negative sentences their sentiment word, *hates*, *boring*, *confused*, by far, and *cannot*
# in "I cannot wait for next time"; on the embedded seed-0 model all four pull the positive logit down
# (counted below). That is printed, not asserted: over training seeds 0-4 it held for 3 or 4 of the four
# (3 on seed 1). SHAP measures how much
# each token moves the positive logit away from its value on the fully masked input. Not every large value
# is a sentiment word: in "I like the movie" this small model leans on *I* more than on *like*, and SHAP
# reports what the model does. The special tokens `[CLS]`/`[SEP]` (the bar labelled "[CLS] + [SEP]") are the next
# question.
# </details>
# <!-- END SOLUTION -->

# %%
pulls_down = 0  # sentences whose largest |SHAP| is the expected word, pulling the positive logit down
for i, expected_word in ((1, "hates"), (2, "boring"), (3, "cannot"), (4, "confused")):
    words = [str(t).strip().lower() for t in explanation.data[i]]
    k = int(np.argmax(np.abs(explanation.values[i])))
    print(f"{sentences[i]!r:32} largest |SHAP|: {words[k]!r} ({explanation.values[i][k]:+.2f})")
    pulls_down += words[k] == expected_word and explanation.values[i][k] < 0
if MODEL == "embedded":
    claim("04.4-shap-top-word-pulls-down", pulls_down, note="of 4 sentences")  # printed: 3-4 over seeds 0-4

# %% [markdown]
# **What SHAP gives `[CLS]` and `[SEP]`.** The text masker keeps them in every masked variant, so hiding
# them changes nothing: their own effect is zero. Their values above are not zero, though. With the
# lecture's `fixed_context=1`, SHAP's Partition explainer splits each group of tokens into two halves and
# measures each half only against the otherwise full text, that is with the other half shown. Each half's
# value then includes what the two halves do *together*, the interaction
# $I = f_{11} - f_{10} - f_{01} + f_{00}$, so the two values count $I$ twice. To keep the sum right, SHAP
# leaves $-I$ on the group and at the end hands it down to all the group's tokens in equal shares, `[CLS]`
# and `[SEP]` included. `credit_split` reads SHAP's own bookkeeping back: each value is the token's own
# effect plus those shares. With `fixed_context=None` both contexts are averaged at every split, nothing
# is left on the groups, and the special tokens get 0.

# %%
special, split_gap, own_special = [], 0.0, 0.0
for i in range(len(sentences)):
    own, shares = credit_split(explanation, i)
    split_gap = max(split_gap, float(np.abs(own + shares - explanation.values[i]).max()))
    for j in (0, len(own) - 1):  # [CLS] and [SEP]
        own_special = max(own_special, abs(float(own[j])))
        special.append(float(explanation.values[i][j]))
claim("04.4-credit-split-adds-up", split_gap)  # own + shares: that is all a SHAP value holds
claim("04.4-special-own-effect-zero", own_special)  # never hidden, so no effect of their own
print("[CLS]/[SEP] values with fixed_context=1:", np.round(special, 3))
averaged = shap_text(model, tokenizer, sentences, target=1, fixed_context=None)
special_averaged = [float(averaged.values[i][j]) for i in range(len(sentences)) for j in (0, -1)]
print("[CLS]/[SEP] values with fixed_context=None:", np.round(special_averaged, 6))
claim("04.4-special-zero-averaged", max(abs(v) for v in special_averaged))  # nothing left over to hand down
if MODEL == "embedded":
    claim("04.4-special-far-from-zero", max(abs(v) for v in special))  # the lecture's setting: far from zero ...
    # ... yet under half of the largest word value of the same sentence: the largest ratio over the sentences
    special_ratio = max(max(v[0], v[-1]) / v[1:-1].max() for v in (np.abs(x) for x in explanation.values))
    claim("04.4-special-under-half-top-word", special_ratio)

# %% [markdown]
# ## 4b. LIME: a local linear surrogate
# *Lecture: Gradient/attention-based explanations (seeds/000), pp. 2-3.*
#
# (The blog post on attention heatmaps, LIME and input gradients walks through the same method.)
#
# SHAP hides groups of tokens and shares out the change by Shapley's rule. **LIME** (Ribeiro, Singh &
# Guestrin 2016) perturbs the input too, but asks another question: *which linear model of "this word is
# there or not" imitates the classifier best near this sentence?* Write a perturbed copy of a sentence with
# $d$ words as its presence vector $z \in \{0, 1\}^d$ ($z_j = 0$: word $j$ removed; `[CLS]` and `[SEP]`
# always stay). LIME, as its `LimeTextExplainer` does it:
#
# 1. draws samples: how many words to remove, uniformly from $1..d$, then which, at random;
# 2. asks the model $f(z)$ about each (the words deleted, the rest closing up);
# 3. weighs each sample by its closeness to the sentence: $D(z) = 100\,(1 - \cos(z, \mathbf{1}))$ and
#    $\pi(z) = \sqrt{\exp(-D(z)^2 / \sigma^2)}$ with the **kernel width** $\sigma$ (25 by default);
# 4. fits the weighted ridge regression $g(z) = b + w \cdot z$,
#    $\min_{b, w} \sum_z \pi(z)\,(f(z) - g(z))^2 + \alpha \lVert w \rVert^2$, and reports $w_j$ as word $j$'s score.
#
# "Local" means the surrogate holds near this one sentence; the weighted $R^2$ of $g$ on the samples says
# how well it does. First two checks of the fit: on a function that *is* linear in $z$, with every one of
# the $2^d$ samples and no penalty, LIME must return its coefficients; on the model, the closed form must
# agree with scikit-learn's `Ridge`, which is what the `lime` package fits (the tests hold xaikit to the
# package itself). LIME explains the probability by default; here it explains the positive logit, the number
# SHAP explained in section 4, so the two can stand side by side.

# %%
from sklearn.linear_model import Ridge

from xaikit.text.lime import all_presence, fit_surrogate, lime, lime_presence, seed_spread, shapley_kernel

w_toy = np.array([0.8, -1.2, 0.3, 2.0])  # f(z) = 0.5 + w . z, linear in the presence vector
toy_fit, _, _ = lime_presence(lambda z: 0.5 + z @ w_toy, 4, samples=all_presence(4), alpha=0.0)
print("a linear f's coefficients:", w_toy, "-> LIME's surrogate:", np.round(toy_fit.coef, 6))
claim("04.4b-lime-linear-exact", np.abs(toy_fit.coef - w_toy).max())  # weighted least squares on all 2^d samples

LIME_SAMPLES = pick(500, 200)  # the package's default is 5000; a short sentence has few distinct samples
one_lime = lime(model, tokenizer, sentences[0], target=1, output="logit", n_samples=LIME_SAMPLES, seed=0)
lime_detail = one_lime.detail
ridge = Ridge(alpha=1.0).fit(lime_detail.samples, lime_detail.outputs, sample_weight=lime_detail.weights)
ridge_gap = np.abs(ridge.coef_ - one_lime.scores[lime_detail.features]).max() / np.abs(ridge.coef_).max()
claim("04.4b-lime-ridge-same", ridge_gap)  # the same weighted ridge problem, two solvers
print(f"{sentences[0]!r}: {len(lime_detail.samples)} samples, {lime_detail.n_evaluated} distinct, weighted R^2 = "
      f"{lime_detail.r2:.2f}; g(sentence) = {lime_detail.prediction:+.3f}, f(sentence) = {lime_detail.fx:+.3f}")
one_lime

# %% [markdown]
# The panel runs LIME on any sentence, on the probability as the `lime` package does. The model runs once per
# sentence, number of samples and seed; moving the kernel width only fits the surrogate again on the same
# samples. On the right, each sample's surrogate value $g(z)$ against the model's $f(z)$, shaded by its
# weight $\pi(z)$: the heavier points are the ones the line is made to fit.

# %%
lime_panel = widgets.LimePanel(model, tokenizer, text=sentences[1], n_samples=pick(300, 100))
moved = lime_panel.set(kernel_width=10.0)
assert lime_panel.error is None and not moved.computed  # a new width: the same samples fitted again
lime_panel

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-4b-lime", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise (10 min, ★★☆).** In the panel, set the kernel width to its smallest value, 1, then to 100. What
# happens to the scores, and why? Which width answers "what does each word do *near* this sentence"?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Removing one of $d$ words already moves a sample $D = 100\,(1 - \sqrt{(d-1)/d})$ away, 13.4 for four
# words. With $\sigma = 1$ its weight is $\sqrt{\exp(-13.4^2)} \approx e^{-90}$: every perturbed sample
# weighs nothing, the fit sees the sentence alone, and the ridge penalty pulls every coefficient to
# (almost) zero. The explanation is empty, however well $g$ "fits". With $\sigma = 100$ all samples weigh
# nearly alike, also those with most words gone, so the line averages the model's behaviour over heavily
# mutilated sentences: less local. Neither extreme answers the local question, and nothing in LIME picks
# $\sigma$ for you: the width is a choice that changes the answer. SHAP's weighting below is not a choice.
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# **LIME beside SHAP and Grad-SAM.** The positive logit of each lecture sentence, explained by the three
# methods (Grad-SAM here for the positive class too), with the rank correlation of |score| over the words.

# %%
lime_of = {s: lime(model, tokenizer, s, target=1, output="logit", n_samples=LIME_SAMPLES, seed=0) for s in sentences}
shap_pos = {s: to_token_scores(explanation, i, lime_of[s].tokens, target=1) for i, s in enumerate(sentences)}
gradsam_pos = {s: gradsam(model, tokenizer, s, target=1) for s in sentences}
for s in sentences:
    with_shap = rank_correlation(lime_of[s].without(), shap_pos[s].without())["spearman"]
    with_gs = rank_correlation(lime_of[s].without(), gradsam_pos[s].without())["spearman"]
    top = lime_of[s].without().top(1)[0]
    print(f"{s!r:32} LIME's top word {top[0]!r:10} ({top[1]:+.2f}); Spearman with SHAP {with_shap:+.2f}, "
          f"with Grad-SAM {with_gs:+.2f}; R^2 {lime_of[s].detail.r2:.2f}")

from IPython.display import HTML

HTML("".join(f"<p><b>{s}</b></p>" + lime_of[s].html() + shap_pos[s].html() + gradsam_pos[s].html()
             for s in sentences))

# %% [markdown]
# **Another seed, another explanation.** LIME's samples are random, so its scores are too. The cell runs
# LIME with several seeds on each sentence and measures how much the scores move: the mean Spearman
# correlation of |score| between two seeds (1 = the same ranking) and the spread, the mean standard
# deviation of a word's score over the seeds relative to the mean |score|. SHAP's Partition explainer,
# given its masker, evaluates the same masked texts every time: it is run again on the five sentences
# to compare. (This cell takes about 10 s.)

# %%
lime_seeds = list(range(pick(8, 4)))
again = shap_text(model, tokenizer, sentences, target=1)
shap_rerun = max(float(np.abs(again.values[i] - explanation.values[i]).max()) for i in range(len(sentences)))
claim("04.4b-shap-same-every-run", shap_rerun)  # deterministic: the same masked texts, the same values
same_seed = 0.0
print(f"over {len(lime_seeds)} seeds, {LIME_SAMPLES} samples each:")
for i, s in enumerate(sentences):
    runs = [lime_of[s]] + [lime(model, tokenizer, s, target=1, output="logit", n_samples=LIME_SAMPLES, seed=k)
                           for k in lime_seeds[1:]]
    same_seed = max(same_seed, float(np.abs(lime(model, tokenizer, s, target=1, output="logit",
                                                 n_samples=LIME_SAMPLES, seed=0).scores - runs[0].scores).max()))
    lime_spread = seed_spread(runs)
    shap_spread = seed_spread([shap_pos[s], to_token_scores(again, i, lime_of[s].tokens, target=1)])
    print(f"  {s!r:32} LIME: Spearman {lime_spread.mean_spearman:+.2f}, spread {lime_spread.relative_spread:.2f}"
          f" | SHAP: Spearman {shap_spread.mean_spearman:+.2f}, spread {shap_spread.relative_spread:.2f}")
claim("04.4b-lime-same-seed-same-scores", same_seed)  # the seed fixes the samples, and so the scores

# %% [markdown]
# **Why SHAP weighs the samples as it does.** LIME and Kernel SHAP (Lundberg & Lee 2017) fit the *same*
# weighted linear regression on presence vectors; they differ in the weighting. LIME's kernel is a choice
# (a distance, a width, a penalty), and each choice gives other scores, as the panel showed. Lundberg & Lee
# proved that one weighting, the **Shapley kernel**
# $\pi(z) = \frac{d-1}{\binom{d}{|z|}\,|z|\,(d-|z|)}$ (with the full and the empty input pinned), and no
# penalty make the coefficients the Shapley values: the only attribution that adds up to $f(x) - f(\emptyset)$
# (local accuracy), gives 0 to a word that changes nothing, and never lowers a word's credit when the model
# comes to depend on it more. LIME's $g(\mathbf{1})$ need not equal $f(x)$, and its scores need not add up to
# anything. The cell fits both weightings to all $2^4$ samples of a small function with an interaction and
# compares them with its Shapley values computed from their definition. SHAP's Partition explainer of
# section 4 is a fast relative of Kernel SHAP that follows the same rule over a tree of token groups.

# %%
from itertools import combinations
from math import factorial


def f_toy(z):  # four "words"; words 0 and 2 only count together
    z = np.atleast_2d(z)
    return 0.5 * z[:, 0] - z[:, 1] + 2.0 * z[:, 0] * z[:, 2] + 0.3 * z[:, 3]


def shapley_values(f, d):  # the definition: a weighted average of f(S + i) - f(S) over the subsets S
    value = lambda subset: f(np.isin(np.arange(d), subset).astype(float))[0]  # noqa: E731
    phi = np.zeros(d)
    for i in range(d):
        others = [j for j in range(d) if j != i]
        for k in range(d):
            for s in combinations(others, k):
                phi[i] += factorial(k) * factorial(d - k - 1) / factorial(d) * (value([*s, i]) - value(list(s)))
    return phi


z4 = all_presence(4)
phi = shapley_values(f_toy, 4)
kernel_shap = fit_surrogate(z4, f_toy(z4), shapley_kernel(z4, endpoint_weight=1e8), alpha=0.0)
lime_fit, _, _ = lime_presence(f_toy, 4, samples=z4, alpha=0.0)
print("Shapley values (definition):   ", np.round(phi, 4), " sum", round(phi.sum(), 4))
print("regression, Shapley kernel:    ", np.round(kernel_shap.coef, 4), " sum", round(kernel_shap.coef.sum(), 4))
print("regression, LIME's kernel:     ", np.round(lime_fit.coef, 4), " sum", round(lime_fit.coef.sum(), 4))
print("f(all) - f(none):", f_toy(np.ones(4))[0] - f_toy(np.zeros(4))[0])
claim("04.4b-shapley-kernel-is-shapley", np.abs(kernel_shap.coef - phi).max())  # Lundberg & Lee's theorem

# %% [markdown] nbgrader={"grade": false, "grade_id": "capture_attention_grads-task", "locked": true, "schema_version": 3, "solution": false}
# ## 4c. Homework 1: capture the attention gradients yourself
# *Lecture: XAI for transformers, slide "Get the gradients for Grad-SAM".*
#
# Section 3 handed you $A$ and $\partial S/\partial A$; the lecture's homework asks for all of Grad-SAM, so
# now capture them yourself. **(25 min, ★★☆)**
#
# Write `capture_attention_grads(model, inputs, target)` returning `(attentions, gradients)`, both
# `(L, M, N, N)` (layer, head, query, key) for the one sentence in `inputs`, with $S$ = `logits[0, target]`.
# Two ways work: ask the model for its attention (`output_attentions=True`) and call `.retain_grad()` on each
# returned tensor before `S.backward()`, as the lecture's code does; or register a forward hook on each
# layer's attention module that keeps its weights (and remove the hooks afterwards). Either way, keep the
# tensor the model computes with, and detach only after the backward pass. The check compares yours with
# xaikit's capture and names the usual mistakes: the gradient of another output (the other class, the
# probability, the loss), an attention detached too early, a transposed matrix.

# %% nbgrader={"grade": false, "grade_id": "capture_attention_grads", "locked": false, "schema_version": 3, "solution": true}
@exercise(checks.check_attention_grads)
def capture_attention_grads(model, inputs, target):
    """Attention A and dS/dA, both (L, M, N, N), with S the logit of class `target`."""
    ### BEGIN SOLUTION
    out = model(**inputs, output_attentions=True)  # L tensors (1, M, N, N), part of the graph
    for a in out.attentions:
        a.retain_grad()  # a non-leaf tensor keeps its .grad only when asked
    out.logits[0, target].backward()  # S: the target's logit, before any softmax
    attentions = torch.stack([a[0] for a in out.attentions]).detach()  # (L, M, N, N)
    gradients = torch.stack([a.grad[0] for a in out.attentions])  # (L, M, N, N)
    model.zero_grad(set_to_none=True)  # the backward pass also left gradients on the weights
    return attentions, gradients
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "capture_attention_grads-check", "locked": true, "points": 1, "schema_version": 3, "solution": false}
assert checks.check_attention_grads(capture_attention_grads)
### BEGIN HIDDEN TESTS
assert checks.check_attention_grads(capture_attention_grads, verbose=False).passed, "graded: capture_attention_grads must be written and pass every case"
### END HIDDEN TESTS

# %% [markdown]
# Your capture, reduced by your Grad-SAM of section 3, on the embedded model: it must give xaikit's scores.

# %% nbgrader={"grade": false, "grade_id": "capture_attention_grads-use", "locked": true, "schema_version": 3, "solution": false}
homework_text = "You look extremely confused"
e4 = xaikit.text.encoding.encode_one(model, tokenizer, homework_text)
A_own, G_own = capture_attention_grads(model, e4.inputs, e4.target)  # (L, M, N, N) each
own_scores = torch.as_tensor(my_gradsam(A_own.cpu(), G_own.cpu()))  # (N,)
xaikit_scores = torch.as_tensor(gradsam(model, tokenizer, homework_text).scores)  # (N,)
print("yours:", ", ".join(f"{t} {float(v):.2e}" for t, v in zip(e4.tokens, own_scores, strict=True)))
claim("04.4c-own-capture-equals-gradsam",
      (own_scores - xaikit_scores).abs().max() / xaikit_scores.abs().max())  # relative to the largest score

# %% [markdown]
# ## 5. Grad-SAM against SHAP
# *Lecture: XAI for transformers (seeds/002), lines 514-521.*
#
# Side by side on the same tokens, with the rank correlation of |score| (Spearman and Kendall). Both must
# explain the **same number**: Grad-SAM explains the logit of the predicted class, so SHAP does too here
# (section 4 explained the positive logit of every sentence, the lecture's choice; for the three negative
# sentences that is another output). The panel below does it for any sentence and any two methods, and
# says under the bars what each explanation of the sentence cost: its forward and backward passes, counted
# by hooks on the encoder blocks (`xaikit.models.count_passes`, section 6 explains them), and its wall time.
# SHAP's price is otherwise invisible: up to `max_evals` model evaluations (500 by default), far fewer on a
# short sentence, whose partition tree runs out first (the cell prints the count). A method the panel took from
# its cache shows what computing it cost, marked "cached"; the cell prints both methods' costs.

# %%
negatives = [s for s in sentences if grad_sam[s].target == 0]
explanation_neg = shap_text(model, tokenizer, negatives, target=0) if negatives else None
shap_scores = {}
for i, s in enumerate(sentences):
    target = grad_sam[s].target
    e, row = (explanation, i) if target == 1 else (explanation_neg, negatives.index(s))
    shap_scores[s] = to_token_scores(e, row, grad_sam[s].tokens, target=target)
assert all(shap_scores[s].target == grad_sam[s].target for s in sentences)  # one output for both methods
rows = []
for s in sentences:
    a, b = grad_sam[s], shap_scores[s]
    c = rank_correlation(a.without(), b.without())
    top_gs, top_shap = a.top(1)[0][0], b.top(1)[0][0]
    rows.append((s, top_gs, top_shap, c["spearman"]))
    print(f"{s!r:32} top Grad-SAM {top_gs!r:10} top |SHAP| {top_shap!r:10} Spearman {c['spearman']:+.2f}")
cls_top = np.mean([r[1] == "[CLS]" for r in rows])
print(f"[CLS] is Grad-SAM's top token in {cls_top:.0%} of the sentences, SHAP's in "
      f"{np.mean([r[2] == '[CLS]' for r in rows]):.0%}")
claim("04.5-shap-cls-never-first", np.mean([r[2] == "[CLS]" for r in rows]))  # share of the sentences
# Grad-SAM does in most sentences: the same count as section 3's (claim 04.3-cls-tops-rows)

# %%
compare = widgets.MethodComparisonPanel(model, tokenizer, text=sentences[3], a="Grad-SAM", b="SHAP")
shap_cost = compare.result.cost_b  # SHAP at its default evaluations, counted when the panel was built
res = compare.set(b="attention")
assert compare.error is None and res.b.method.startswith("attention")
assert np.allclose(res.a.scores, grad_sam[sentences[3]].without().scores)  # the panel's Grad-SAM is the table's
assert res.cached_a and not res.cached_b  # Grad-SAM came from the cache, with what computing it cost
print(f"Grad-SAM: {res.cost_a} | SHAP: {shap_cost} | attention: {res.cost_b}")
compare

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-6", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise (homework 2).** Why is `[CLS]` so often on top for Grad-SAM and never for SHAP?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Grad-SAM scores token $i$ by its *query row*: how much token $i$ attends, weighted by the positive
# gradient. The classifier reads only the final `[CLS]` vector, so the prediction is most sensitive to the
# attention of the `[CLS]` row: in the last layer no other row matters at all (its share of that layer's
# Grad-SAM mass is exactly 1, asserted below), and in the layers below it the printout shows how much of
# each layer's mass falls on `[CLS]`. SHAP instead asks what happens to the output when a token is *hidden from the input*;
# the text masker never hides `[CLS]` (it is part of every masked variant), so `[CLS]` has no effect of
# its own. All it gets is its share of the interactions of the groups it sits in (section 4): zero with
# `fixed_context=None`, and with the lecture's `fixed_context=1` less than half of the sentence's largest
# word value (asserted there), never the top. The two methods answer
# different questions: "where does the computation route its attention-sensitivity?" versus "which input
# words move the output?".
# </details>
# <!-- END SOLUTION -->

# %% [markdown] nbgrader={"grade": false, "grade_id": "cls_share-task", "locked": true, "schema_version": 3, "solution": false}
# **Homework 2, in numbers.** For each layer, what share of that layer's Grad-SAM mass
# $\sum_m\sum_j [A^{lm}\circ\mathrm{ReLU}(G^{lm})]_{ij}$ (summed over all tokens $i$) falls on the `[CLS]`
# row $i = 0$? Write `cls_share(attentions, gradients) -> (L,)`.

# %% nbgrader={"grade": false, "grade_id": "cls_share", "locked": false, "schema_version": 3, "solution": true}
@exercise(checks.check_cls_share)
def cls_share(attentions, gradients):
    """Per layer, the fraction of the Grad-SAM mass on the [CLS] row (query 0)."""
    ### BEGIN SOLUTION
    h = (attentions * torch.relu(gradients)).sum(dim=(1, 3))  # (L, N): per layer, per query row
    return h[:, 0] / h.sum(dim=1)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "cls_share-check", "locked": true, "points": 1, "schema_version": 3, "solution": false}
assert checks.check_cls_share(cls_share)
### BEGIN HIDDEN TESTS
assert checks.check_cls_share(cls_share, verbose=False).passed, "graded: cls_share must be written and pass every case"
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "cls_share-use", "locked": true, "schema_version": 3, "solution": false}
share = cls_share(A, G)
print("share of each layer's Grad-SAM mass on [CLS]:", [f"{float(v):.2f}" for v in share])
claim("04.5-last-layer-cls-share-one", abs(float(share[-1]) - 1.0))  # only [CLS]'s output reaches the classifier

# %% [markdown]
# ## 6. More views of the same sentence
# *Lecture: Attention-based explainability (seeds/003), lines 165-186.*
#
# * **raw attention**: the last layer's `[CLS]` row, mean of the heads;
# * **attention rollout** (Abnar & Zuidema 2020): each layer's head-mean plus the identity for the
#   residual connection, rows renormalised, multiplied through the layers;
# * **gradient-weighted attention** (Chefer, Gur & Wolf 2021, ICCV, "Generic Attention-model Explainability";
#   not their CVPR paper below): $\bar A = \mathrm{mean}_h\,\mathrm{ReLU}(\nabla A\circ A)$,
#   accumulated as $R \leftarrow R + \bar A R$;
# * **Integrated Gradients** from notebook 02, in the embedding space with a `[PAD]` baseline.

# %%
methods = ("Grad-SAM", "SHAP", "IG", "attention", "rollout", "grad-weighted attention")
views_of = {s: all_views(model, tokenizer, s, methods=methods, ig_steps=64) for s in sentences}  # 64 right-Riemann steps: gap < 5% on every build of the claims matrix (16 gave 11% on seed 1)
text = sentences[3]
views = views_of[text]
fig = Figure(figsize=(13, 5.0), layout="constrained")
for ax, (name, s) in zip(fig.subplots(2, 3).ravel(), views.items(), strict=False):
    s.bar(ax, title=name)
    ax.tick_params(axis="x", rotation=45)
fig

# %% [markdown]
# The rank correlations, averaged over the five sentences, and two things they show. Rollout keeps most
# of `[CLS]`'s flow on `[CLS]` itself: the residual identity (notebook 03, section 8) carries each position
# forward in every layer. And on the embedded seed-0 model Grad-SAM, built from attention, ranks the words
# much as raw attention does, and less as IG does, which moves the input itself (the difference of the two
# correlations, printed, was 0.42). Over training seeds 0-4 that difference ranged from 0.04 to 0.48, so it
# is printed, not asserted: a mean over five sentences can move with one retraining.

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
claim("04.6-ig-complete", max(v["IG"].detail.relative_gap for v in views_of.values()))  # on all five
if MODEL == "embedded":
    claim("04.6-rollout-cls-keeps-most", min(cls_self))  # [CLS] keeps most of its rollout
    gs = names.index("Grad-SAM")
    # printed, not asserted: 0.04-0.48 over training seeds 0-4
    claim("04.6-gradsam-nearer-attention-than-ig", rho[gs, names.index("attention")] - rho[gs, names.index("IG")])

# %% [markdown]
# ### One more view: relevance propagated through the blocks (Chefer, Gur & Wolf 2021)
#
# From the lecture on attention-based explainability (seeds/003, lines 176-186, "Transformer Attention") and
# Chefer, Gur & Wolf 2021, "Transformer Interpretability Beyond Attention Visualization", CVPR.
#
# Gradient-weighted attention above weighs each head's attention by its gradient. Chefer et al. weigh the
# gradient by the attention's **relevance** $R^{A_b}$ instead: layer-wise relevance propagation (LRP) hands
# the explained logit a relevance of 1 and passes it back through the classifier, the pooler and every block
# down to the input, and $R^{A_b}$ is the share that lands on block $b$'s attention probabilities. Then, per
# block, $\bar A_b = I + \mathrm{mean}_h(\nabla A_b \circ R^{A_b})^+$, and the view is the `[CLS]` row of
# $\bar A_L \cdots \bar A_1$ (its `[CLS]` entry, mostly the identity's, set to the row's minimum as in the
# paper's code). `xaikit.text.lrp.chefer_lrp` runs the model once more from its own weights, in float64, to
# keep what LRP needs, and applies the paper's rules: linear layers by the z+ rule (biases take nothing),
# the residual adds and both attention products split between their two operands and rescaled to keep the
# total, LayerNorm, GELU and softmax passed straight through. So the relevance that enters a block leaves it
# (asserted: the totals at every block boundary agree to 1e-9). That holds by construction (the rescaling
# and the pass-through rules force it), so it checks the bookkeeping, not the explanation; and what is
# conserved is the total of 1, not how it is spread: on the embedded seed-0 model, at block 0's input most
# of it (the cell below prints each sentence's share) still sits on `[CLS]`'s own position, carried down the
# residual stream. That is printed, not asserted: over training seeds 0-4 the smallest share moved a lot
# (the ledger's range for claim 04.6-lrp-cls-keeps-most is printed with it). The view reads $R^{A_b}$, not that
# input relevance. Below, the view next to Grad-SAM and SHAP for the five sentences (about a second).

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
claim("04.6-lrp-conserved", worst)  # conservation, block by block
if MODEL == "embedded":
    claim("04.6-lrp-cls-keeps-most", min(on_cls))  # printed, not asserted: it varies with the training seed
assert all(r.tokens == views_of[s]["SHAP"].tokens for s, r in lrp_of.items())
HTML("".join(f"<p><b>{s}</b></p>" + views_of[s]["Grad-SAM"].html() + views_of[s]["SHAP"].html()
             + lrp_of[s].html() for s in sentences))

# %% [markdown]
# ### And AttnLRP (Achtibat et al. 2024): relevance of the tokens themselves, in one backward pass
#
# Achtibat et al., "AttnLRP: Attention-Aware Layer-Wise Relevance Propagation for Transformers", ICML 2024.
# `xaikit.text.attnlrp.attnlrp` starts from the logit's value and propagates it to the input embeddings,
# with the rules of that paper. Two differ from Chefer et al.'s above:
#
# * **softmax**: Chefer passes relevance straight through; AttnLRP uses a first-order expansion of the
#   softmax at its input $x$, $R^{in}_j = x_j\,(R^{out}_j - s_j \sum_k R^{out}_k)$, so a score that moved the
#   attention takes relevance, and what the expansion does not explain is absorbed, like a bias;
# * **the attention products** $QK^\top$ and $AV$: instead of rescaling the two operands' shares to keep the
#   total, each operand gets exactly half (the *uniform* rule), which conserves without rescaling.
#
# Linear layers take the epsilon rule (biases keep their share), LayerNorm's division by the standard deviation
# and GELU pass relevance unchanged. Each operation's backward function carries relevance, so one backward
# pass gives every token's signed relevance. The cell keeps the books at every block boundary: relevance
# entering a block = relevance leaving it + what its biases, softmax and epsilon absorbed. That balance holds by
# construction (each rule books what it does not pass on), so it is bookkeeping, not a test of the rules; the
# test is `tests/test_attnlrp.py`'s separately written gradient x input. What the books show is how much of
# the logit never reaches a token: the cell prints the tokens' share of the logit per sentence. It then counts what each
# method costs, with hooks on the encoder blocks (`xaikit.models.count_passes`), on one sentence. The two LRP
# methods re-run the model from its own float64 weights with plain tensor operations, which the block hooks do
# not see; they report those passes themselves (`xaikit.models.passes.record_passes`): AttnLRP one forward and
# one backward pass, Chefer one forward and two backward sweeps (the gradient and the relevance pass), on top
# of the forward pass that resolves the target. The last row is section 6's `all_views` for the four
# views read from attention: they share one forward/backward pass, counted once (its `spent=` argument
# reports that pass and the text's preparation apart; splitting the pass between the four would invent numbers).

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
# ## 7. Is attention explanation? A small lab
# *Lecture: Attention is not not explanation (seeds/001), lines 127-253.*
#
# Held-out movie sentences the model never saw. A word can be removed in two ways, and they are different
# experiments (`xaikit.text.lab`: `faithfulness`, `removal`, `editing`):
#
# * **Erasure** (Serrano & Smith 2019): set the word's attention weight to zero in the one attention layer
#   whose weights gave the ranking, in every head, and renormalise the rows; every other layer runs as it
#   is. The attention rankings here read the last layer's `[CLS]` row, so the erasure acts on the last
#   layer, where the classifier reads only the `[CLS]` position: it removes exactly the weights that were
#   ranked. The word itself stays in the input, and the five layers below have already mixed it into every
#   position, `[CLS]` included.
# * **Deletion**: the word is deleted from the input ids (the rest move up), so no layer ever sees it.
#
# The experiments:
#
# * Serrano & Smith's single-item test: erase the most-attended word versus a random other word; the
#   Jensen-Shannon divergence of the outputs and the 2x2 table of decision flips;
# * Serrano & Smith's sets: remove words from the top of a ranking down until the decision flips; what
#   fraction had to go (1 when it never flips)? Rankings by attention, its gradient, gradient x attention,
#   Grad-SAM, SHAP, IG, Chefer et al.'s relevance (section 6) and a random order; by erasure and, as a
#   second experiment, by deletion;
# * Jain & Wallace (2019): shuffle one layer's attention weights and measure how much the output moves,
#   for the last layer and for each layer in turn (every query row, and as a control the `[CLS]` row
#   alone); and do attention, gradients and leave-one-out rank the words alike?
#
# **What it costs.** The lab's first table also says what producing each ranking cost over all the
# sentences: forward and backward passes, counted by hooks on the encoder blocks (`xaikit.models.count_passes`),
# and seconds (`lab.costs`). Raw attention, its gradient, gradient x attention and Grad-SAM read one shared
# forward/backward pass per sentence; the table says "shared" for them and prints that pass once, under the
# table, rather than inventing a split. The experiments' own forward passes (erasure, deletion, AOPC, the
# shuffles, the rank agreement; `lab.evaluation_costs`) are the cost of the *evaluation*, not of the
# explanations, and are printed apart.
#
# **How long it takes.** Every method runs on every sentence. The default lab takes 20 short held-out
# sentences (at most 12 words; their lengths in tokens are printed): about 20-25 s on two idle cores (the edited-input batches use both), up to twice that when they are busy; the progress bar counts the
# sentences. The full lab, 120 sentences of up to 16 words with more IG steps and shuffles, takes several
# minutes (about 6 of one core's time on the machine that tests xaikit): set `FULL_LAB = True` and run the
# cell again; the progress bar shows the time left. The asserted claims below hold for both.

# %% [markdown]
# > **Pause here.** The lecture asks: "The highest attention weight indicates the most important feature?"
# > (Gradient/attention-based explanations, seeds/000, p. 74)

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-7", "locked": false, "points": 0, "schema_version": 3, "solution": true}
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
    claim("04.7-erase-top-beats-random", np.mean(lab.js_top > lab.js_random))  # the top word matters more ...
    claim("04.7-erasure-rarely-flips", lab.flip_table[1, 1])  # ... yet erasing either one rarely flips it
    claim("04.7-erasure-sets-flip-few", max(m["flipped by erasure (%)"] for m in summary.values()))  # in one layer
    # printed, not asserted (they vary with the training seed): sooner than random? later than the others?
    claim("04.7-deletion-gradient-beats-random", deleted["random"] - deleted["gradient"])
    claim("04.7-deletion-attention-needs-more", from_attention - from_gradients)

# %% [markdown]
# **Where deletion ends.** Deleting every word leaves `[CLS] [SEP]`, the empty text, and the model gives it
# a class too. If that class is positive, every sentence predicted negative flips by the end of *any*
# order, a random one included: "deletion flips most sentences" would then hold by construction and say
# nothing about the orders. So the flips are counted per predicted class, and the orders are also compared
# at a fixed budget: which share of the sentences flips with at most half of its words deleted
# (`lab.flipped_within`), against the random order as the control.

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
    claim("04.7-empty-text-p-positive", lab.empty_probs[1])  # printed: which class the end of deletion has
    # printed, not asserted: the flips of the sentences that deletion does not flip by construction
    claim("04.7-deletion-flips-empty-class", np.mean([100 * np.mean(lab.flipped_deleted[m][classes[empty_class]])
                                                     for m in lab.rankings]) if classes[empty_class].any() else 0.0)
    claim("04.7-deletion-budget-over-random", budget_gain)  # gradient-based orders against the random control

# %% [markdown]
# **IG's order and its completeness gap.** The lab's IG runs with few Gauss-Legendre steps (the printout
# above says how many), so its attributions do not sum exactly to the change of the output: the median
# relative gap is printed below. A gap is an error in the sum, and notebook 02 showed that the error of
# single attributions can be several times the gap of their sum, so a gap can reorder words. Measured here
# rather than assumed: on the sentences with the largest gaps, the lab's IG order against IG with 64 steps.

# %%
from xaikit.text.lab.agreement import word_tau
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
claim("04.7-ig-order-vs-64-steps", min(ig_taus))  # printed, not asserted: measured on this build only

# %% [markdown]
# **What the lab finds** (the claims above). Erasing the most-attended word moves the output more than
# erasing a random word, but in one layer it almost never flips the decision, and erasing word after word
# flips few sentences at all: the last layer's `[CLS]` row is one route among many, since the earlier
# layers have already written the words into `[CLS]`'s residual stream. Serrano & Smith also found, for
# their single attention layer, that erasing the top-attended item rarely flips the decision. Their second
# finding, that gradient-based rankings reach a flip with fewer removals than attention, one-layer
# erasure here can hardly test, since it flips so few sentences by any ranking; deletion can, with care.
#
# *Deletion, read with its control.* Deleting words from the input flips many more sentences, but look at
# the table by class: the empty text has a class of its own (printed), and every sentence of the other
# class flips by the end of every order, the random one included. Those flips are a property of where
# deletion ends, not of the orders. The sentences of the empty text's own class are the ones that say
# something, and there, and at a budget of half the words, the random order is the bar to clear. On the
# embedded models the orders read from gradients or from the input (gradient, gradient x attention, SHAP,
# IG) flip more sentences than it at that budget on most training seeds, but on one or two seeds hardly
# more or no more at all (printed, not asserted; the ledger's values per build are printed with it). With a random
# order as the control, deletion does not separate the methods reliably on this model and this many
# sentences. A deleted input is also a text the model was never trained on: short,
# ungrammatical, drifting towards the empty text's class. Hooker et al. (2019, "A Benchmark for
# Interpretability Methods in Deep Neural Networks", NeurIPS, section 3) point out that a drop of the
# output after removal may come from that shift of distribution rather than from the information removed,
# and retrain the model on the degraded inputs instead (ROAR, RemOve And Retrain). We do not retrain; the
# random order, degraded the same way, is our control for the shift, and what is beyond it is what the
# order adds.
#
# *Which orders need more deletions, and why.* On the embedded seed-0 model the attention gradient's
# order needs fewer deletions than a random one, and raw attention and Grad-SAM need more than the
# gradient, gradient x attention, SHAP and IG; both are printed, not asserted (the builds' ranges are
# printed below from the ledger: on some training seeds the gradient's order did worse than random). The
# split into these two groups was drawn after the first numbers were seen, so it needs a reason that does
# not come from them. Look at what each order scores. The gradient and gradient x attention score word
# $j$ by the last layer's `[CLS]` row at **key** $j$ *weighted by how sensitive the output is to that
# weight*; SHAP and IG score it by what removing or scaling the word does to the output. All four measure
# the output's sensitivity to the word. Raw attention scores the same `[CLS]` entry without any
# sensitivity: how much is read, not what reading it does. Grad-SAM (section 3) scores word $i$ by its
# **own query row**, the attention the word pays to the others, summed over all layers: a statement about
# where the word looks, not about what deleting the word does to `[CLS]`. Neither of the two asks the
# question deletion asks, so needing more deletions is what one would expect of them; it is not that
# "attention" as such fails. A method's verdict in a faithfulness test can still flip with the training
# seed; this is why we measure over builds.
#
# Jain & Wallace's permutation, printed and asserted below: shuffling the last layer's attention barely
# moves the output. No later layer exists to compensate for it. What the shuffle changes is one term of a
# sum: the block adds attention's output to `[CLS]`'s own vector (the residual stream, notebook 03) and the
# feed-forward network works on that sum; the lab measures the output, not which term kept it steady.
# Shuffling an *earlier* layer's attention, every row of it, moves the output more: the largest of the
# earlier layers' changes is larger than the last layer's (asserted, the factor printed). **But that
# comparison is not like with like.** In the last layer only the `[CLS]` row reaches the classifier (section
# 5: its share of that layer's Grad-SAM mass is exactly 1), so shuffling "the last layer" shuffles one row
# that matters; shuffling an earlier layer shuffles all $N$ rows, and every one of them feeds the layers
# above. The control: the same shuffles applied to the `[CLS]` query row alone, at every depth
# (`lab.permutation_by_layer_cls`). In the last layer it is the same experiment (asserted: the same
# numbers); below it, it asks whether `[CLS]`'s own attention matters more early than late.

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
claim("04.7-shuffle-cls-row-last-is-all-rows",  # in the last layer only the [CLS] row reaches the classifier
      np.abs(lab.permutation_by_layer_cls[:, -1] - lab.permutation_by_layer[:, -1]).max())
if MODEL == "embedded":
    claim("04.7-shuffle-last-layer-barely-moves", np.median(lab.permutation_tvd))  # Jain & Wallace
    claim("04.7-shuffle-earlier-layer-moves-more", by_layer[-1] / by_layer[:-1].max())  # last / largest earlier
    # the control: the [CLS] row alone at every depth; largest earlier / last (printed, with the builds' range)
    factor_cls = by_layer_cls[:-1].max() / max(by_layer_cls[-1], 1e-12)
    claim("04.7-shuffle-cls-row-earlier-moves-less", factor_cls)
    # what is left of the all-rows factor when only the [CLS] row is shuffled
    claim("04.7-shuffle-cls-row-share-of-factor", factor_cls * by_layer[-1] / by_layer[:-1].max())

# %% [markdown]
# **What the control shows** (printed above). Shuffled alone, the `[CLS]` row of an earlier layer moves the
# output far less than the whole layer does: the factor between the largest earlier layer and the last
# shrinks many times over from the all-rows comparison to the like-with-like one (the share of
# the factor that is left is asserted below one half). Whether the largest earlier `[CLS]` row moves the
# output more or less than the last layer's depends on the training run: less on the embedded seed-0 model,
# more on others (printed, not asserted; the ledger's range is printed with it). So most of the earlier
# layers' large effect comes from shuffling the other rows, whose mixtures every later layer reads, not from
# `[CLS]`'s own attention being more important early on. Jain & Wallace's single attention layer had no
# such distinction to make; in a transformer "shuffle the attention" has to say which rows, and which layer,
# before its result can be compared.

# %%
panel = widgets.LabPanel(lab=lab)
panel.set(view="permutation by layer")
assert panel.error is None and panel.result.view == "permutation by layer"
panel

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-8", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise.** Jain & Wallace found that shuffling attention often leaves the output unchanged, and
# concluded that attention is not explanation. Wiegreffe & Pinter objected. What is their objection?
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
# layer alone, changes it far less than shuffling every row of that layer (asserted), and more or less than
# the last layer's shuffle depending on the build (printed).
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# ### Jain & Wallace: do attention and gradients rank words alike?
#
# Jain & Wallace (2019, "Attention is not Explanation", NAACL, section 4.1) asked whether attention orders
# the words as other importance measures do. Per sentence, they took Kendall's tau between the attention
# weights and (a) the gradient of the output with respect to each input word, (b) leave-one-out (LOO): how
# much the output changes when that word is left out. The lab above also measured these
# (`lab.agreement`, `xaikit.text.lab.agreement.rank_agreement`): attention is the lab's ranking, the last
# layer's `[CLS]` row, mean of the heads; the gradient is of the predicted class's probability with respect
# to the word's one-hot input (the word embedding times its gradient), not the attention gradient of the
# table above; LOO deletes one word token from the input ids. **One difference from Jain & Wallace's
# gradient:** they disconnected the computation graph at the attention module, so that no gradient flowed
# through the attention weights (section 4.1): their gradient says how the prediction changes with the
# input while the attention distribution is held fixed.
# xaikit keeps every path. Their BiLSTM had one attention layer to cut; a transformer has attention in every
# layer, and cutting all of it would leave a gradient of a different network. So our gradient includes
# whatever the attention weights themselves contribute, and can agree with attention for that reason alone,
# which theirs could not. Each is ranked by
# magnitude over the word tokens only (`[CLS]` and `[SEP]` are never deleted), and tau is tau-b, which
# counts ties fairly. The histogram shows one tau per sentence for each pair.

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
    claim("04.7-tau-medians-positive", min(medians.values()))
    claim("04.7-tau-medians-weak", max(medians.values()))
# printed, not asserted: does the gradient agree with LOO more than attention does? (Jain & Wallace: yes)
claim("04.7-tau-gradient-vs-attention-on-loo", medians["gradient-LOO"] - medians["attention-LOO"])
fig

# %% [markdown]
# **What it shows.** Jain & Wallace found attention only weakly to moderately correlated with gradients
# and with leave-one-out in their BiLSTM models (mean tau often well below 0.5), while gradients and
# leave-one-out agreed with each other more. The first finding holds here: every median tau is positive but
# small (printed above; asserted between 0.1 and 0.45), and some sentences have a negative tau. The second
# is not seen here: on the embedded seed-0 model the gradient agrees with LOO no more than attention does
# (the difference of the two medians is printed; over the claims matrix's builds its sign changed, positive
# on seeds 1 and 3), and the three medians lie close together, too close to assert an order. Read the numbers with care. These sentences
# are short (their lengths are printed above), and a short sentence gives few pairs to order: five words
# give only ten. The printout says how far a single sentence's tau strays when the two orders have nothing
# to do with each other: that spread is as wide as the medians themselves, which is why the histogram,
# the quartiles and the asserted bounds are about the median over all the lab's sentences, never about one
# sentence, and why the asserted bounds are loose ones (above 0.1, below 0.45). And a gradient sees only
# small changes.

# %% [markdown]
# > **Pause here.** The lecture asks: "Do you see any weaknesses in demanding property 1, or in the analysis?"
# > (XAI for transformers, seeds/002, line 595)

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-9", "locked": false, "points": 0, "schema_version": 3, "solution": true}
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
# ### Wiegreffe & Pinter: does the attention guide a model that sees no context?
# The lecture presents this diagnostic in XAI for transformers (seeds/002), lines 614-639.
#
# Wiegreffe & Pinter (2019, "Attention is not not Explanation", EMNLP, section 4 and Table 3) argue that a
# shuffled or adversarial distribution tests another model, not this one's explanation. They ask something
# else: do the trained model's attention weights carry information about the task, independent of the rest
# of the model? Their **diagnostic model** sees each token alone, with no access to its neighbours, and
# pools the tokens with weights imposed from outside (`xaikit.text.lab.diagnostics`):
#
# $$h_t = \tanh(W e_t + b), \qquad c = \sum_t \alpha_t h_t \Big/ \sum_t \alpha_t, \qquad \text{logits} = U c + u,$$
#
# with $e_t$ the classifier's own word embeddings (frozen; no position, no context) and $\alpha$ one of
#
# * **uniform**: the plain mean of the word tokens, Wiegreffe & Pinter's baseline;
# * **learned**: $\alpha = \mathrm{softmax}_t(v \cdot h_t)$, trained by the diagnostic itself (their
#   "trained MLP");
# * **model attention**: the fine-tuned transformer's own weights, fixed. Which ones, chosen before any
#   number was seen: the last layer's `[CLS]` row, mean of the heads, the one distribution over the tokens
#   that forms what the classification head reads (the transformer's counterpart of the single attention
#   layer of their LSTMs, and the lab's attention ranking above), renormalised over the word tokens;
# * **pretrained attention**, a control: the same row of the encoder *before* fine-tuning (same tokenizer,
#   same frozen embeddings), attention that never saw the task.
#
# Their fourth guide, the weights of their adversarially trained model ("Adversary" in their Table 3), is
# left out: xaikit trains no adversary. The pretrained control is not a substitute for it: it asks
# whether the gain comes from fine-tuning, not whether other weights that give the same predictions
# would guide as well.
#
# Only $\alpha$ differs: the same training sentences, the same held-out movie sentences, the same training
# seeds. If the model's attention beats uniform weights, it holds task information that a model without
# context can use. Their uniform baseline *inside* the model (retraining it with attention frozen to
# uniform) would mean fine-tuning the transformer again per seed, beyond a lecture's minutes on a CPU.
#
# **How long it takes.** `python -m xaikit prepare` has read the attention of both encoders for every
# sentence and kept it on disk (`xaikit.cache_dir()`); with another model the first run reads it (under a
# minute, with progress bars) and keeps it. After that the cell trains four small diagnostics per seed
# (3 seeds in fast mode, 5 otherwise) in about 4 s on two idle cores, 10 s when they are busy (fast mode: 1,000 training
# sentences, 6 epochs, 3 seeds; otherwise 2,000 sentences, 8 epochs and 5 seeds, about three times as long).

# %%
from xaikit.models.sentiment import pretrained_encoder
from xaikit.text.lab.diagnostics import notebook_sentences, run_diagnostic

# 2,000 training sentences drawn once with random.Random(0), the same for every seed, and the first 500
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
    # printed, not asserted: the model's attention beat uniform and learned weights on the seed-0 build, not
    # on every training seed (below uniform weights on seed 3)
    claim("04.7-wp-attention-over-uniform-min", gain.min())  # on every diagnostic seed?
    claim("04.7-wp-attention-over-uniform-mean", gain.mean())  # on average?
    g = diag.gain("model attention", "learned")
    claim("04.7-wp-attention-over-learned-min", g.min())
    claim("04.7-wp-attention-over-learned-mean", g.mean())
    g = diag.gain("uniform", "pretrained attention")  # the control (asserted): never trained on the task
    claim("04.7-wp-uniform-over-pretrained-min", g.min())
    claim("04.7-wp-uniform-over-pretrained-mean", g.mean())
    claim("04.7-wp-context-still-matters", diag.model_accuracy - diag.column("model attention").max())
    finetuned_over_pretrained = diag.gain("model attention", "pretrained attention")  # what fine-tuning did
    print("model attention - pretrained attention, per seed:", np.round(finetuned_over_pretrained, 3))
claim("04.7-wp-learned-vs-uniform", diag.gain("learned", "uniform").mean())  # printed, not asserted

# %%
fig = Figure(figsize=(8, 3.6), layout="constrained")
diag.plot(fig.subplots())
fig

# %% [markdown]
# **What it shows** (printed above, not asserted). On the embedded seed-0 model, pooled with the fine-tuned
# model's attention, a model that sees each word alone classifies the held-out sentences better than with
# uniform weights or with weights it learns itself: the table prints the accuracies and the line below it
# the gain on each diagnostic seed. Their LSTMs gave the same order, the model's attention first. **But
# that verdict depends on the training run.** Over training seeds 0-4 of the same recipe the mean gain of
# the model's attention over uniform and over learned weights changed sign (the claims matrix's ranges,
# from the ledger, are printed below the plot): on one seed it barely beat uniform weights, on another it
# did worse than both. So with this diagnostic, "attention carries task information" is a finding about
# one trained model, not about the architecture or the recipe; to say more we would have to measure over
# builds, as here. Learned weights do little better than uniform ones (their difference is printed; its
# sign changes between runs), so that comparison is printed, not asserted. The control, asserted, is the
# same encoder's attention before fine-tuning: it does *worse* than uniform weights (the table's pretrained
# row, on every diagnostic seed and on average). Neither side of that comparison depends on the training
# seed (the recipe freezes the word embeddings the diagnostic reads, and the pretrained encoder is the same
# for every build), so it holds with the same value on every build: it says the untrained attention is no
# guide, not what fine-tuning did. What fine-tuning did is the fine-tuned attention against the pretrained
# one, printed above per diagnostic seed and not asserted; whether it moved the `[CLS]` attention towards
# the words that carry the sentiment is not measured here. Where it beats uniform weights it does so even
# though shuffling it barely moves this model's output (Jain & Wallace above): the output need not depend
# on an attention distribution for it to encode which words matter.
# The diagnostic stays well below the transformer itself: context (negation, "cannot wait") still counts.
# Two limits, true of Wiegreffe & Pinter's design as well: the model's attention was computed with the whole
# sentence in view (the test sentences' too), so the "no context" diagnostic receives some context
# second-hand, through the weights; and beating uniform weights shows that the weights carry information
# about the task, not that the transformer's prediction relies on them.
# Wiegreffe & Pinter's conclusion fits, with a caveat these builds add: attention can be *an* explanation in
# this sense without being *the* explanation; which it is depends on the definition of explanation one
# wants and, with this diagnostic, on the training run as well.

# %% [markdown]
# ### Sanity checks: does the explanation depend on what the model learned? (Adebayo et al. 2018)
#
# These checks go beyond the lectures (Adebayo et al. 2018, "Sanity Checks for Saliency Maps", NeurIPS).
# Notebook 01 randomised the digits CNN's layers from the top and watched its saliency maps. Here the same
# test runs on the transformer: re-draw the top $k$ encoder blocks (block $L-1$, then $L-2$ as well, ...), each
# module by its own `reset_parameters`, on a copy of the model, or re-draw the classification head alone. For
# each method, the similarity of the token ranking on the trained and the randomised model is Spearman's rank
# correlation per held-out sentence, averaged (magnitudes for the signed methods, which rank by $|score|$).
# Both models explain the class the trained model predicts. A ranking that survives the loss of the learned
# weights shows the input and the architecture more than what the model learned.
#
# This run uses the four methods that share one forward/backward pass, plus Chefer LRP. IG and SHAP cost a
# path of passes or up to hundreds of evaluations per sentence and per randomised model, so they are off here (set
# `SANITY_ALL = True` to add them); fast mode also uses fewer sentences and randomises the head, the top block
# and all blocks only.

# %%
from xaikit.text import sanity as text_sanity

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
    claim("04.7-sanity-head-leaves-attention", min(head["attention"], head["rollout"]))
    claim("04.7-sanity-gradsam-head", head["Grad-SAM"])
    if 3 in sim:  # measured with the whole cascade over 6 sentences; fast mode skips both
        claim("04.7-sanity-gradients-forget", max(sim[n_blocks][m] for m in gradient_views))
        claim("04.7-sanity-rollout-survives", sim[3]["rollout"])
        claim("04.7-sanity-rollout-over-gradsam", sim[3]["rollout"] - sim[3]["Grad-SAM"])
        print(f"top 3 blocks re-drawn: rollout {sim[3]['rollout']:+.2f}, Grad-SAM {sim[3]['Grad-SAM']:+.2f}")
# what the table cost: every model (trained, each randomised copy) and sentence, counted by hooks on the blocks;
# the four cheap views read one shared forward/backward pass, counted once
cascade_cost = cascade["costs"]
print(f"\nthe cascade's cost over {1 + len(sanity_steps)} models x {len(sanity_texts)} sentences: "
      + "; ".join(f"{part}: {cost}" for part, cost in cascade_cost.items()))

# %% [markdown]
# **What it shows** (the table and lines above; the claims checked over training seeds 0-4). Re-drawing the
# head, the only part that knows which class is which, leaves raw attention and rollout exactly where they were
# (similarity 1): they never read the head, so they cannot show which words made the model choose "positive".
# Grad-SAM hardly moves either (printed; 0.8-0.9 over seeds 0-4): its rectified gradient is multiplied by the
# last block's attention, and the ranking follows the attention. Gradient-weighted attention and Chefer LRP move
# more. Raw attention of the last block changes as soon as that block is re-drawn, since it is read from that
# block alone. Rollout, the product over all blocks with the residual stream added, keeps most of its ranking
# with the top 3 blocks random (asserted above 0.7, printed): the trained lower blocks still shape it, and the
# top blocks, which the head reads, hardly matter to it. With every block re-drawn its ranking is gone too, and
# the last row, two random models compared, says how much of a ranking the input and the architecture alone
# would give: little for rollout here (printed). So rollout reads what the lower blocks learned, not the
# architecture; what it does not read is the part of the model that decides. The gradient-based views keep
# little once every block is random (printed; 0.08-0.27 over seeds 0-4). The lecture's suspects fail Adebayo's
# test: raw attention and rollout the head check, and rollout barely notices the top half of the model.

# %% [markdown]
# ### The data randomisation test: the same training on shuffled labels (Adebayo et al. 2018, section 4)
#
# The cascade replaces learned weights with random ones. Adebayo et al.'s second test keeps the architecture
# and the training and takes away what the labels teach: a model is trained on labels permuted across the texts
# (each class keeps its count; no text keeps a reason for its label), and the explanations of the trained model
# are compared with its. Adebayo et al. train until the network fits its random labels. Here the same pretrained
# encoder is fine-tuned with the same recipe, training seed, learning rate and number of steps as the trained
# model; one pass over all the training texts (an earlier version of this model, recorded in
# `xaikit.models.sentiment`) learned no more than answering one class for all of them, so the shuffled model's
# steps go over 2,000 of the texts, about six times each,
# enough to memorise their labels (the first line below shows how much). Whatever it learns cannot carry over to
# new sentences, so its held-out accuracy is near chance. Two things differ from the paper's image networks: the
# model starts from a pretrained encoder that never saw a sentiment label, so what every fine-tuned copy shares
# with it stays (the pretrained row below shows how much), and it sees fewer texts more often than the trained
# model. For the second, a **control**: the same 2,000 texts
# and steps with their *real* labels ("same texts" below). The control and the shuffled model differ in the
# labels alone; what the control changes against the trained model is the smaller data. A method whose ranking depends on what the model learned
# from the labels must rank the tokens differently on it; a ranking that stays shows what the two models share:
# the input, the architecture and the pretrained encoder they both start from. As a further reference the
# table repeats two rows of the cascade (every block re-drawn, and two random models) and adds the pretrained
# encoder before any fine-tuning (its random head does not matter to the methods that never read the head).
# Same methods, sentences, similarity and target class (the trained model's prediction) as the cascade. The
# shuffled-label model and its control are built once by `python -m xaikit prepare` (a few minutes each) and
# loaded from the cache here; notebook 01 runs the same test on the digits CNN.

# %%
import json

from xaikit.models.sentiment import LABELS, ensure_subset_sentiment, n_batches

if MODEL == "embedded":
    if not all(sentiment_folder(labels=labels).exists() for labels in LABELS):  # a cache from before this test
        print("the shuffled-label model or its control is not in the cache yet: training it now (minutes each, "
              "with a progress bar); `python -m xaikit prepare` builds them ahead of time")
    shuffled_model, _ = xaikit.models.load_sentiment("embedded-shuffled")  # from the cache (prepare built it)
    same_texts_model, _ = xaikit.models.load_sentiment(ensure_subset_sentiment())  # the control
    built = {labels: json.loads((sentiment_folder(labels=labels) / "metrics.json").read_text())
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
    claim("04.7-data-rand-fits", fit["train_accuracy"])  # it fit its shuffled training labels ...
    claim("04.7-data-rand-accuracy", fit["test_accuracy"])  # ... and nothing carried to new sentences
    claim("04.7-data-rand-gradsam", shuffled_sim["Grad-SAM"])
    claim("04.7-data-rand-attention", shuffled_sim["attention"])
    claim("04.7-data-rand-rollout", shuffled_sim["rollout"])
    claim("04.7-data-rand-grad-attention", shuffled_sim["grad-weighted attention"])
    claim("04.7-data-rand-chefer", shuffled_sim["Chefer LRP"])
    claim("04.7-data-rand-labels-gradsam", label_effect["Grad-SAM"])  # the control: what the labels alone do
    claim("04.7-data-rand-labels-attention", label_effect["attention"])
    claim("04.7-data-rand-labels-rollout", label_effect["rollout"])
    claim("04.7-data-rand-labels-grad-attention", label_effect["grad-weighted attention"])
    claim("04.7-data-rand-labels-chefer", label_effect["Chefer LRP"])
else:
    print(f"Skipped for MODEL = {MODEL!r}: the test needs a second model trained like this one on shuffled "
          "labels. For the embedded model `python -m xaikit prepare` builds it "
          "(xaikit.models.load_sentiment('embedded-shuffled')) and its control; for another model, fine-tune a "
          "copy with its own recipe on xaikit.models.sentiment.shuffle_labels(pairs, seed) and compare the two with "
          "text_sanity.model_similarities(model, other, tokenizer, sanity_texts, sanity_methods).")

# %% [markdown]
# **What it shows, and what it does not** (the lines and the table above; each claim prints its worst value or
# its range over the builds of the claims matrix). Read the models first. The shuffled-label model fits nearly all
# of its shuffled training labels, well above answering one class for all, so it learned something, just nothing
# true: on held-out sentences its accuracy is that of one answer for all, though it gives both answers. The
# control fits its real labels and generalises (a little below the trained model, from a sixth of the texts).
# Then the rankings. On the control, every method ranks the tokens much as on the trained model (the "same
# texts" row): the smaller data changes little. On the shuffled-label model the rankings of Grad-SAM,
# gradient-weighted attention and Chefer LRP move far from the trained model's, and the "labels alone" line says
# how much of that the labels account for, the data, steps and start being the same: these methods depend on
# what the labels taught, as a test like Adebayo et al.'s asks. Raw attention of the last block changes with the
# labels almost as much as those three (over the builds its labels-alone change overlaps theirs; on one build it
# is larger than Grad-SAM's). Rollout still ranks the tokens largely as on the trained model and gains least from
# the real labels, on every build: its ranking comes mostly from the pretrained encoder's weights, not from the
# input and the architecture alone (two random models agree little on rollout, the rand/rand row), so the
# lecture's suspect fails here as in the cascade. Cautions: the rand/rand row is not a pure floor, since the two
# random models keep the trained word embeddings and head (Grad-SAM, which reads the head, agrees well there,
# and its shuffled-model similarity can sit below that row, though above the trained-vs-random row "all 6");
# the shuffled and pretrained rows are about equally far from the trained model on this build (the last line),
# which says both lack what the real labels taught, not that the two rank alike; and six sentences are few
# (`SANITY_ALL = True` adds IG and SHAP).

# %%
sanity_panel = widgets.TextSanityPanel(model, tokenizer, sanity_texts,
                                       methods=pick(["Grad-SAM", "attention", "rollout", "Chefer LRP"],
                                                    ["Grad-SAM", "rollout"]))
sanity_panel.widget

# %% [markdown]
# ## 8. Faithfulness of each method: comprehensiveness and sufficiency
# *Beyond the lectures: DeYoung et al., ERASER: a benchmark to evaluate rationalized NLP models, 2020.*
#
# DeYoung et al. (2020), ERASER: delete the top k% of the words from the input (comprehensiveness: how much
# does the predicted class's probability drop? higher is better) or keep only them (sufficiency: how much
# does it drop? lower is better), averaged over ERASER's bins k = 1, 5, 10, 20 and 50% (the area over the
# perturbation curve, AOPC). A bin removes at least one word, `ceil(k * words)` as in ERASER's scorer, so
# on the default lab's short sentences (5-17 words) the 1% and 5% bins remove the top word alone and the
# 10% bin one or two words (over 20 words, in the full lab, the 5% bin removes two). Both measures delete words, so
# section 7's caveat holds here too: the degraded inputs are out of the training distribution (Hooker et
# al. 2019), and the random order, degraded the same way, is the control. The grouping of section 7 is
# fixed by what each order scores, before these numbers: the output's sensitivity to the word (gradient,
# gradient x attention, SHAP, IG) or not (raw attention, Grad-SAM). It shows here as well: deleting the
# top words of the second group removes less of the decision (comprehensiveness) than deleting those of
# the first (asserted for the means of the two groups: with training seed 1 Grad-SAM alone came out just
# above the gradient); on sufficiency IG need not beat them (printed, not asserted). A random order, the
# control, does worse than the first group on both measures (asserted, again for their mean). On the embedded
# seed-0 model it is the worst of all on both, but not on every training seed: how many orders do no
# better than it is printed, not asserted.

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
# section 7's two groups, by what an order scores: the output's sensitivity to the word, or not
by_gradients, by_attention = by_gradients_lab, ("attention", "Grad-SAM")
# printed, not asserted: how many (ranking, measure) pairs do no better than the random order
claim("04.8-not-beating-random", sum(comp[m] <= comp["random"] for m in comp if m != "random")
      + sum(suff[m] >= suff["random"] for m in suff if m != "random"))
if MODEL == "embedded":  # as in section 7, the groups are compared by the means of their orders
    from_gradients_comp, from_attention_comp = (np.mean([comp[m] for m in g]) for g in (by_gradients, by_attention))
    claim("04.8-gradient-orders-over-random-comp", from_gradients_comp - comp["random"])  # the control
    claim("04.8-gradient-orders-over-random-suff", suff["random"] - np.mean([suff[m] for m in by_gradients]))
    claim("04.8-attention-orders-less-comprehensive", from_gradients_comp - from_attention_comp)

# %% [markdown]
# **Chefer et al.'s relevance in the lab** (the row "Chefer LRP" of the tables above). It is read from
# attention, like Grad-SAM, but weighed by gradients and by relevance; whose order of the words does it
# share? Per held-out sentence, Kendall's tau-b over the word tokens, as in Jain & Wallace's comparison: with
# gradient-weighted attention (section 6, the same product with A in place of $R^A$), with raw attention
# (the lab's ranking) and with leave-one-out.

# %%
from xaikit.text.lab.agreement import word_tau

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
    claim("04.8-lrp-tau-grad-weighted", lrp_median["grad-weighted attention"])  # nearly that order ...
    claim("04.8-lrp-tau-grad-weighted-over-loo", lrp_median["grad-weighted attention"] - lrp_median["LOO"])
    claim("04.8-lrp-tau-loo-weak", lrp_median["LOO"])  # ... with leave-one-out it agrees only weakly
    claim("04.8-lrp-more-comprehensive", comp["Chefer LRP"] - max(comp[m] for m in by_attention))  # than both
    claim("04.8-lrp-more-sufficient", min(suff[m] for m in by_attention) - suff["Chefer LRP"])  # printed only

# %% [markdown]
# **What it shows** (the claims above). Chefer et al.'s relevance orders the words almost as
# gradient-weighted attention does (median tau above 0.7, asserted; printed above): the two share the product
# over the blocks and differ only in what the gradient is multiplied by, $R^{A}$ or $A$. With leave-one-out
# it agrees only weakly (median tau below 0.5, asserted; printed above, much as raw attention does). Yet when the top words are deleted it behaves like the
# gradient-based orders, not like the attention-based ones it is read from: its top words carry more of the
# decision than those of raw attention or Grad-SAM (higher comprehensiveness by more than 0.05, asserted;
# lower sufficiency, printed, not asserted: over training seeds 0-4 that margin nearly vanished on one
# seed, as the ledger's range printed above says). Its order, like Grad-SAM's, is read from attention, but
# weighted by the output's sensitivity, the property section 7 found to separate the orders. The medians
# over short sentences hide a wide spread per sentence (the quartiles are printed; section 7 prints what
# two unrelated orders of that length give). Agreeing with one measure of importance (leave-one-out,
# one word at a time) and doing well on another (deleting the top k% at once) are different things.

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-10", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise.** The lecture concludes: whether attention is explanation depends on the definition of
# explanation. Which definition does each experiment of sections 7-8 test?
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Erasure, flip fractions and AOPC test **faithfulness as importance ranking**: do the top-ranked tokens
# carry the decision? Permutation tests **uniqueness/counterfactual sensitivity**: would other weights
# give another output? Wiegreffe & Pinter's diagnostic tests whether attention **encodes task
# information** a model without context can use. None of them tests **plausibility** (does the explanation
# make sense to a human?).
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# ### The lecture's model
#
# With a network, set `MODEL = "textattack/bert-base-uncased-SST-2"` in the first code cell and run
# everything again: the same code explains BERT-base (12 layers, 12 heads). In the three Grad-SAM rankings
# the lecture prints for it, `[CLS]` comes first every time.
