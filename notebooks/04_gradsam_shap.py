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
# 6. more views: raw attention, attention rollout, gradient-weighted attention, Integrated Gradients;
# 7. the debate as experiments: Serrano & Smith's erasure and Jain & Wallace's permutation;
# 8. faithfulness of every method: comprehensiveness and sufficiency.
#
# Every claim below is an executed `assert`.

# %%
import numpy as np
import shap
import torch
from matplotlib.figure import Figure

import xaikit
from xaikit import checks, widgets
from xaikit._config import pick
from xaikit.faithfulness import run_lab
from xaikit.gradsam import attention_and_gradients, gradsam, gradsam_loop, gradsam_scores
from xaikit.shaptext import prediction_function, shap_text, to_token_scores
from xaikit.tokens import rank_correlation
from xaikit.views import all_views
from xaikit.widgets.attention import draw_attention

xaikit.set_seed(0)

# The model: "embedded" is xaikit's offline MiniLM fine-tuned on movie reviews (build it once with
# `python -m xaikit prepare`). With a network, put the lecture's "textattack/bert-base-uncased-SST-2"
# here and run the notebook again: nothing else changes.
MODEL = "embedded"

# %%
from xaikit.models.sentiment import LECTURE_SENTENCES, load_movie_reviews, sentiment_folder  # noqa: E402

if MODEL == "embedded" and not sentiment_folder().exists():
    print("The embedded model is not prepared (run `python -m xaikit prepare`); using a tiny random BERT.")
    MODEL = "tiny"
if MODEL == "tiny":
    from xaikit.models import tiny_bert, tiny_tokenizer

    model, tokenizer = tiny_bert(), tiny_tokenizer()
else:
    model, tokenizer = xaikit.models.load_sentiment(MODEL)
print(type(model).__name__, "| attention:", model.config._attn_implementation,
      "| layers:", xaikit.models.n_layers(model), "| heads:", xaikit.models.n_heads(model),
      "| on", model.device, "in", model.dtype)

# %% [markdown]
# ## 1. The model and its attention
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
for s, p in zip(sentences, predicted, strict=False):
    print(f"{p}  {s}")
assert model.config._attn_implementation == "eager"
assert len(out.attentions) == xaikit.models.n_layers(model)       # one attention tensor per layer ...
assert out.attentions[0].shape[1] == xaikit.models.n_heads(model)  # ... with every head
row_sums = out.attentions[0].sum(-1).cpu()                          # (B, M, N): one sum per query row
real = enc["attention_mask"].bool().cpu()[:, None, :].expand_as(row_sums)
assert ((row_sums[real] - 1).abs() < 1e-5).all()                    # each real query's row sums to 1
agree = [p == e for p, e in zip(predicted, expected, strict=True)]
print(f"agrees with the lecture's model on {sum(agree)} of 5")
if MODEL != "tiny":
    assert sum(agree) >= 4, predicted                               # (nearly) the lecture's labels

# %% [markdown]
# **Exercise.** A small model may get *"I cannot wait for next time"* wrong. Why is it the hardest of the
# five?
#
# <details class="xk-answer"><summary>Answer</summary>
#
# It is the only one whose sentiment is not carried by one word: *cannot* is a negation and *wait* is
# neutral; only the idiom as a whole is positive. A model fine-tuned for one epoch on a few thousand
# review snippets has seen "cannot" mostly in negative reviews, so word-level evidence points the wrong
# way. Explanations in sections 3-6 show which tokens drove the decision either way.
# </details>

# %% [markdown]
# ## 2. The attention explorer
#
# Layer and head pickers, a heatmap with the tokens as labels (rows are queries, columns keys), and the
# row of one query token shaded under it. Try the lecture's *"The cat drank the milk because it was
# hungry"* and follow the query `it`.

# %%
explorer = widgets.AttentionExplorer(model, tokenizer, text="I cannot wait for next time", layer=0, head=0)
view = explorer.set(layer=xaikit.models.n_layers(model) - 1, head="mean")
assert explorer.error is None and view.weights.shape == (len(view.tokens), len(view.tokens))
assert ((view.weights.sum(-1) - 1).abs() < 1e-5).all()  # every row a distribution over the keys
explorer

# %% [markdown]
# **Homework 3.** Choose two layers and plot the attention of one head in each. Here: head 0 of the
# first layer and of the last layer on one sentence.

# %%
def plot_heads(attentions, tokens, picks):
    """One heatmap per (layer, head) in picks, queries as rows, token labels, fixed 0-1 colours."""
    ### BEGIN SOLUTION
    fig = Figure(figsize=(5 * len(picks), 4.4), layout="constrained")
    for ax, (layer, head) in zip(fig.subplots(1, len(picks), squeeze=False)[0], picks, strict=True):
        draw_attention(ax, attentions[layer, head], tokens, title=f"layer {layer}, head {head}")
    return fig
    ### END SOLUTION


assert checks.check_head_plots(plot_heads)
text = "I cannot wait for next time"
tokens = tokenizer.convert_ids_to_tokens(tokenizer(text)["input_ids"])
with torch.no_grad():
    att = model(**tokenizer(text, return_tensors="pt").to(model.device), output_attentions=True).attentions
att = torch.stack([a[0] for a in att]).cpu()  # (L, M, N, N), back on the CPU for plotting
plot_heads(att, tokens, [(0, 0), (att.shape[0] - 1, 0)])

# %% [markdown]
# **Exercise.** Suggest an interpretation of each heatmap. What do heads in early layers often do, and
# what changes in the last layer?
#
# <details class="xk-answer"><summary>Answer</summary>
#
# Early-layer heads often implement simple, position-based patterns: attend to the previous or next token,
# to the token itself, or broadly to everything; these are the same for every sentence. Heads in later
# layers are more content-dependent, and many put most of their weight on `[SEP]` or `[CLS]`, a "no-op"
# pattern (Clark et al. 2019, *What does BERT look at?*): when a head has nothing useful to add, attending
# to a token whose value vector is small changes little. Which pattern you see depends on the head, which
# is exactly why a single head is a weak explanation of the prediction.
# </details>

# %% [markdown]
# ## 3. Grad-SAM
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
# **Homework 1.** Implement Grad-SAM from the attention and gradient tensors `(L, M, N, N)`.

# %%
def my_gradsam(attentions, gradients):
    """Grad-SAM scores (N,) from attention and dS/dA, both (L, M, N, N)."""
    ### BEGIN SOLUTION
    L, M, N, _ = attentions.shape
    h = attentions * torch.relu(gradients)  # H^{lm} = A^{lm} o ReLU(G^{lm})
    return h.sum(dim=(0, 1, 3)) / (L * M * N)  # sum over layers, heads and along each row
    ### END SOLUTION


assert checks.check_gradsam(my_gradsam)

# %% [markdown]
# Now on the model: one forward pass keeps the attention of every layer, one backward pass from the
# predicted logit gives $\partial S/\partial A$. Your function, xaikit's vectorised one and the plain
# triple loop must agree.

# %%
text = "You look extremely confused"
e1 = xaikit._textio.encode_one(model, tokenizer, text)
A, G, logits = attention_and_gradients(model, e1.inputs, e1.target)
print("attention and gradients:", tuple(A.shape))
assert all(G[layer].abs().max() > 0 for layer in range(A.shape[0]))  # gradients reach every layer
torch.testing.assert_close(my_gradsam(A, G), gradsam_loop(A, G), atol=1e-6, rtol=0)
torch.testing.assert_close(gradsam_scores(A, G), gradsam_loop(A, G), atol=1e-6, rtol=0)

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
# **Exercise.** Where does Grad-SAM sit in the taxonomy: post-hoc or intrinsic, model-agnostic or
# model-specific, local or global?
#
# <details class="xk-answer"><summary>Answer</summary>
#
# Post-hoc (it explains a trained model), model-specific (it needs the attention weights and their
# gradients, so only attention models qualify), and local (one score per token of one input). A token's
# score is high when its row of attention, weighted by how much the prediction would rise if that attention
# rose, is large: it *receives attention-weighted sensitivity*, which is not the same as "this word caused
# the prediction".
# </details>

# %% [markdown]
# ## 4. SHAP with the tokenizer as masker
#
# SHAP's Partition explainer hides groups of tokens (replacing them by `[MASK]`) and asks the model about
# each masked variant; the prediction function returns the **positive-class logit**. The lecture's function
# pads every variant to `max_length` (512 for BERT): hundreds of 512-token forward passes for a
# five-token sentence. Padding to the longest string of each call gives the same numbers, since padding is
# masked out of attention. First the measurement, on one sentence:

# %%
import time  # noqa: E402

one, evals = [sentences[2]], pick(500, 40)
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
assert diff < 1e-5
assert t_slow > t_fast

# %% [markdown]
# Now all five sentences. `shap_text` returns SHAP's own `Explanation`, so SHAP's plots work, and it has
# already checked **additivity**: base value + sum of the SHAP values = the model's output.

# %%
explanation = shap_text(model, tokenizer, sentences, target=1)
f = prediction_function(model, tokenizer, target=1)
fx = f(sentences)
for i, s in enumerate(sentences):
    total = explanation.base_values[i] + explanation.values[i].sum()
    print(f"{s!r:32} base {explanation.base_values[i]:+.3f} + sum(phi) {explanation.values[i].sum():+.3f} "
          f"= {total:+.4f}; f(x) = {fx[i]:+.4f}")
    assert abs(total - fx[i]) < 1e-4
shap.plots.text(explanation[0])

# %%
shap.plots.bar(explanation.abs.sum(0), show=False)

# %% [markdown]
# **Exercise.** Which words get the largest |SHAP| values over the five sentences? Does that make sense?
#
# <details class="xk-answer"><summary>Answer</summary>
#
# The sentiment words: *boring*, *hates*, *confused* (negative) and *like*, *wait* (positive). SHAP
# measures how much each token moves the positive logit away from its value on the fully masked input,
# so function words that carry no sentiment end up near zero. Note the special tokens `[CLS]`/`[SEP]`
# (shown as empty strings) get values close to zero: the masker never removes them from the input, so
# they only take part through the grouping.
# </details>

# %% [markdown]
# ## 5. Grad-SAM against SHAP
#
# Side by side on the same tokens, with the rank correlation of |score| (Spearman and Kendall). The
# panel below does it for any sentence and any two methods.

# %%
shap_scores = {}
for i, s in enumerate(sentences):
    toks = grad_sam[s].tokens
    shap_scores[s] = to_token_scores(explanation, i, toks, target=1)
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
assert all(r[2] != "[CLS]" for r in rows)  # SHAP never puts [CLS] first

# %%
compare = widgets.MethodComparisonPanel(model, tokenizer, text=sentences[3], a="Grad-SAM", b="SHAP")
res = compare.set(b="attention")
assert compare.error is None and res.b.method.startswith("attention")
assert -1.0 <= res.correlation["spearman"] <= 1.0
compare

# %% [markdown]
# **Exercise (homework 2).** Why is `[CLS]` so often on top for Grad-SAM and never for SHAP?
#
# <details class="xk-answer"><summary>Answer</summary>
#
# Grad-SAM scores token $i$ by its *query row*: how much token $i$ attends, weighted by the positive
# gradient. The classifier reads only the final `[CLS]` vector, so the prediction is most sensitive to the
# attention of the `[CLS]` row (above all in the last layer, where no other row matters at all): its
# gradient is large, and every row of attention sums to 1, so `[CLS]` collects most of the score by
# construction. SHAP instead asks what happens to the output when a token is *hidden from the input*;
# the text masker never hides `[CLS]` (it is part of every masked variant), so there is nothing for SHAP
# to attribute to it. The two methods answer different questions: "where does the computation route its
# attention-sensitivity?" versus "which input words move the output?".
# </details>

# %% [markdown]
# **Homework 2, in numbers.** For each layer, what share of that layer's Grad-SAM mass
# $\sum_m\sum_j [A^{lm}\circ\mathrm{ReLU}(G^{lm})]_{ij}$ (summed over all tokens $i$) falls on the `[CLS]`
# row $i = 0$? Write `cls_share(attentions, gradients) -> (L,)`.

# %%
def cls_share(attentions, gradients):
    """Per layer, the fraction of the Grad-SAM mass on the [CLS] row (query 0)."""
    ### BEGIN SOLUTION
    h = (attentions * torch.relu(gradients)).sum(dim=(1, 3))  # (L, N): per layer, per query row
    return h[:, 0] / h.sum(dim=1)
    ### END SOLUTION


assert checks.check_cls_share(cls_share)
share = cls_share(A, G)
print("share of each layer's Grad-SAM mass on [CLS]:", [f"{float(v):.2f}" for v in share])
assert abs(float(share[-1]) - 1.0) < 1e-6  # last layer: only [CLS]'s output reaches the classifier

# %% [markdown]
# ## 6. More views of the same sentence
#
# * **raw attention**: the last layer's `[CLS]` row, mean of the heads;
# * **attention rollout** (Abnar & Zuidema 2020): each layer's head-mean plus the identity for the
#   residual connection, rows renormalised, multiplied through the layers;
# * **gradient-weighted attention** (Chefer et al. 2021): $\bar A = \mathrm{mean}_h\,\mathrm{ReLU}(\nabla A\circ A)$,
#   accumulated as $R \leftarrow R + \bar A R$;
# * **Integrated Gradients** from notebook 02, in the embedding space with a `[PAD]` baseline.

# %%
methods = ("Grad-SAM", "SHAP", "IG", "attention", "rollout", "grad-weighted attention")
text = sentences[3]
views = all_views(model, tokenizer, text, methods=methods, ig_steps=pick(64, 32))
fig = Figure(figsize=(13, 5.0), layout="constrained")
for ax, (name, s) in zip(fig.subplots(2, 3).ravel(), views.items(), strict=False):
    s.bar(ax, title=name)
    ax.tick_params(axis="x", rotation=45)
fig

# %%
names = list(views)
rho = np.array([[rank_correlation(views[a].without(), views[b].without())["spearman"] for b in names]
                for a in names])
print("Spearman rank correlation of |score| (word tokens only):")
print(" " * 24 + "".join(f"{n[:10]:>11}" for n in names))
for n, row in zip(names, rho, strict=False):
    print(f"{n:24}" + "".join(f"{v:11.2f}" for v in row))
assert np.allclose(np.diag(rho), 1.0)
assert abs(views["rollout"].scores.sum() - 1.0) < 1e-5          # rollout's rows stay distributions
print("IG completeness gap:", f"{views['IG'].extras['relative_gap']:.3f}")

# %% [markdown]
# ## 7. Is attention explanation? A small lab
#
# Held-out movie sentences the model never saw. **Removing** a word means zeroing its attention weight in
# every row, layer and head and renormalising the rows (the text stays as it is), as in Serrano & Smith
# (2019), using `xaikit.editing`:
#
# * remove the most-attended word versus a random other word: the Jensen-Shannon divergence of the
#   outputs and the 2x2 table of decision flips;
# * remove words from the top of a ranking down until the decision flips: what fraction had to go?
#   Rankings by attention, gradient, gradient x attention, Grad-SAM, SHAP, IG and a random order;
# * Jain & Wallace (2019): shuffle the last layer's attention weights and see how much the output moves.

# %%
n_lab = pick(120, 50)
test_pairs = load_movie_reviews("test", progress=False)
lab_sentences = [s for s, _ in test_pairs if 4 <= len(s.split()) <= pick(16, 8)][:n_lab]
lab = run_lab(model, tokenizer, lab_sentences, n_permutations=pick(32, 8), shap_evals=pick(300, 48),
              ig_steps=pick(32, 8))
print(f"{len(lab.sentences)} sentences in {lab.seconds:.1f} s")
print("decision flips (% of sentences): rows = removing the top-attended word flips / does not;")
print("columns = removing a random word flips / does not")
print(np.round(lab.flip_table, 1))
for name, s in lab.summary().items():
    print(f"{name:22} median fraction removed {s['median fraction removed']:.2f}  flipped {s['flipped (%)']:5.1f}%")
assert len(lab.sentences) >= 50
assert abs(lab.flip_table.sum() - 100.0) < 1e-6
assert (lab.js_top >= 0).all() and (lab.js_random >= 0).all()

# %%
panel = widgets.LabPanel(lab=lab)
panel.set(view="decision-flip table")
assert panel.error is None and panel.result.view == "decision-flip table"
panel

# %% [markdown]
# **Exercise.** Jain & Wallace found that shuffling attention often leaves the output unchanged, and
# concluded that attention is not explanation. Wiegreffe & Pinter objected. What is their objection?
#
# <details class="xk-answer"><summary>Answer</summary>
#
# An attention distribution that is *possible* is not one the model would *produce*: the weights were
# trained together with everything else, so swapping in a shuffled or adversarial distribution tests a
# different model, not the explanation of this one. Wiegreffe & Pinter also point out that attention may be
# *an* explanation without being *the* explanation, and that whether it counts depends on the definition
# of explanation (faithfulness, plausibility) one wants. The lab's permutation numbers tell you how
# much the last layer's attention matters *to this model*; in a deep transformer the other layers can
# often compensate.
# </details>

# %% [markdown]
# ## 8. Faithfulness of each method: comprehensiveness and sufficiency
#
# DeYoung et al. (2020): remove the top k% of the words (comprehensiveness: how much does the predicted
# class's probability drop? higher is better) or keep only them (sufficiency: how much does it drop?
# lower is better), averaged over k = 10, 20, 30, 40, 50% (the area over the perturbation curve).

# %%
summary = lab.summary()
print(f"{'ranking':22} {'comprehensiveness':>18} {'sufficiency':>12}")
for name, s in summary.items():
    print(f"{name:22} {s['comprehensiveness']:18.3f} {s['sufficiency']:12.3f}")
panel.set(view="AOPC")
assert panel.error is None
best = max(summary, key=lambda m: summary[m]["comprehensiveness"])
print("most comprehensive ranking:", best)
assert best != "random"

# %% [markdown]
# **Exercise.** The lecture concludes: whether attention is explanation depends on the definition of
# explanation. Which definition does each experiment of sections 7-8 test?
#
# <details class="xk-answer"><summary>Answer</summary>
#
# Erasure, flip fractions and AOPC test **faithfulness as importance ranking**: do the top-ranked tokens
# carry the decision? Permutation tests **uniqueness/counterfactual sensitivity**: would other weights
# give another output? None of them tests **plausibility** (does the explanation make sense to a human?)
# nor whether attention encodes useful information (Wiegreffe & Pinter's diagnostic models).
# </details>

# %% [markdown]
# ### The lecture's model
#
# With a network, set `MODEL = "textattack/bert-base-uncased-SST-2"` in the first code cell and run
# everything again: the same code explains BERT-base (12 layers, 12 heads); the lecture's Grad-SAM puts
# `[CLS]` first in all five sentences.
