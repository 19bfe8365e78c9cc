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
# # 03 — Self-attention from scratch
#
# We write attention once by hand, see why each piece is there, and then find exactly the same numbers
# inside a real BERT-family model.
#
# **Learning objectives.** After this lecture you can
#
# * compute scaled dot-product attention by hand, and say why the scores are divided by $\sqrt{d_k}$;
# * compare the dot, general and additive scores, and tell self-attention from cross-attention;
# * apply bidirectional, causal and padding masks, and split attention into heads;
# * recompute a real model's attention weights and one transformer block from the model's own weights;
# * say why an attention weight alone shows neither what a head moves nor why the model predicts what it does.
#
# **Outline** (75 minutes):
#
# 1. Tokens, embeddings and positions
# 2. Scaled dot-product attention, written out (and additive attention beside it)
#    2b. Other scores: Luong's dot and general, Bahdanau's additive; cross-attention
# 3. Why divide by $\sqrt{d_k}$
# 4. Masks: bidirectional, causal, padding
# 5. Multi-head attention
# 6. Permutation equivariance
# 7. From scratch to a real model
# 8. A transformer block, once: residual stream, LayerNorm, feed-forward network
# 9. Attention is not the whole story: weights vs what is moved
# 10. Summary
#
# Every number the text states is printed by the code that computes it, and every claim about one is
# checked when its cell runs; numbers that depend on how a model happened to train are printed as this
# model's.
#
# References: Vaswani et al. (2017), *Attention Is All You Need*; Bahdanau et al. (2015), *Neural machine
# translation by jointly learning to align and translate*, Luong et al. (2015), *Effective approaches to
# attention-based neural machine translation*, and Britz et al. (2017), *Massive exploration of neural
# machine translation architectures*, for additive attention. The code lives in `xaikit.attention.scratch` (the maths), `xaikit.attention.capture` (hooks into
# a real model), `xaikit.attention.norms` (section 9) and `xaikit.widgets` (the panels).

# %%
# Instructors, before a lecture: uncomment the two lines below for presenter mode (bigger fonts and
# figures, fixed seeds, fast mode); xaikit.course.presenter.off() switches it back (README: "Presenter mode").
# import xaikit.course.presenter
# xaikit.course.presenter.on()

# %%
import math
from collections import Counter

import torch
import torch.nn.functional as F

import xaikit
from xaikit import pick
from xaikit.attention import positions as PE
from xaikit.attention import saturation as SAT
from xaikit.attention import scores as SC
from xaikit.attention import scratch as A
from xaikit.attention.capture import capture_attention, qkv_projections, recompute_attention
from xaikit.attention.norms import attention_norms
from xaikit.course.claims import claim
from xaikit.models import arch
from xaikit.widgets import (
    AttentionExplorer,
    AttentionNormsPanel,
    HeadsPanel,
    MaskPanel,
    PositionalEncodingPanel,
    SaturationPanel,
    WorkedExamplePanel,
)

xaikit.set_seed(0)
torch.set_printoptions(precision=3, sci_mode=False)

# %% [markdown]
# **Choose the model.** `"embedded"` is xaikit's offline sentiment model (MiniLM fine-tuned on movie
# reviews, built by `python -m xaikit prepare`). Any BERT-family classifier works: change the string to a
# hub id such as `"textattack/bert-base-uncased-SST-2"` (the lecture's model; needs a network).

# %%
from xaikit.models import load_sentiment

MODEL = "embedded"
# what the lecture's model size costs: random-weight models of its shape, timed by benchmarks/lecture_scale.py
print(xaikit.models.lecture_costs("rollout"))
model, tokenizer = load_sentiment(MODEL)
print(type(model).__name__, "|", arch.n_layers(model), "layers,", arch.n_heads(model), "heads,",
      model.config.hidden_size, "features | on", model.device, "in", model.dtype)

# %% [markdown]
# ## 1. Tokens, embeddings and positions
# *Lecture: XAI for transformers, slides "Tokens and embedding", "Fixed positional encoding".*
#
# The tokenizer cuts a sentence into tokens and maps each to a row index of the embedding matrix $E$.
# "Looking up" a token is multiplying its one-hot vector by $E$. BERT's tokenizer also adds two special
# tokens: `[CLS]` ("classification") in front, whose final vector the classifier reads, and `[SEP]`
# ("separator") at the end.
#
# *Device habit.* The model may live on a GPU (`model.device`), while every tensor we build, the
# tokenizer's output included, starts on the CPU. Move what you build to the model's device before it
# meets the model's weights (`tokenizer(...).to(model.device)`), and give floating-point tensors the
# weights' dtype too; on a laptop this changes nothing, on a GPU forgetting it raises "Expected all
# tensors to be on the same device". xaikit's functions do it for you and return their results on the CPU.

# %%
SENTENCE = "The cat drank the milk because it was hungry"
enc = tokenizer(SENTENCE, return_tensors="pt").to(model.device)  # ids on the model's device
ids = enc["input_ids"][0]  # (T,)
tokens = tokenizer.convert_ids_to_tokens(ids.tolist())
E = arch.embeddings_module(model).word_embeddings.weight.detach()  # (vocab, d_model), on model.device
print(list(zip(tokens, ids.tolist(), strict=True)))
print("embedding matrix:", tuple(E.shape))

one_hot = F.one_hot(ids, E.shape[0]).to(E.dtype)  # (T, vocab), on E's device and in its dtype
rows = one_hot @ E  # (T, d_model)
# each entry of one_hot @ E is 1 * E[id, j] plus zeros, in any order and precision: exact by construction
assert torch.equal(rows, E[ids]), "a lookup is a one-hot times the embedding matrix"  # exact, see above
assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"

# %% [markdown]
# An embedding says *what* a token is, not *where* it is. The fixed positional encoding of Vaswani et al.
# adds a position-dependent pattern:
# $PE(pos, 2i) = \sin(pos / 10000^{2i/d})$, $PE(pos, 2i+1) = \cos(pos / 10000^{2i/d})$.
# (BERT, and the embedded MiniLM, learn a table of absolute positions instead: the next cell checks it.
# The properties below belong to the sinusoidal table only.)

# %%
pe = PE.sinusoidal_positional_encoding(50, 64)  # (positions, d_model)
assert abs(pe[7, 10].item() - math.sin(7 / 10000 ** (10 / 64))) < 1e-6
assert abs(pe[7, 11].item() - math.cos(7 / 10000 ** (10 / 64))) < 1e-6
if MODEL == "embedded":  # our MiniLM, like BERT, adds a learned table of absolute positions
    assert model.config.position_embedding_type == "absolute"
    table = arch.embeddings_module(model).position_embeddings  # one learned row per position
    assert isinstance(table, torch.nn.Embedding) and table.num_embeddings == model.config.max_position_embeddings

pe_panel = PositionalEncodingPanel(d_model=64, positions=50)
pe_panel

# %% [markdown]
# Left: each row is one position; low features oscillate fast, high ones slowly. Right: the cosine
# similarity of positions is highest near the diagonal (nearby positions are alike) and depends only on
# the offset between two positions.

# %%
pe_panel.set(d_model=128, positions=60)
sim = pe_panel.result.similarity
assert pe_panel.result.pe.shape == (60, 128)
claim("03.1-nearby-more-similar", min(sim[20, 21] - sim[20, 25], sim[20, 25] - sim[20, 40]))  # offsets 1, 5, 20
_ = claim("03.1-offset-only", abs(sim[5, 9] - sim[30, 34]))  # the same offset 4 at positions 5 and 30

# %% [markdown]
# Why does the similarity depend only on the offset? Directly: with $\omega_i = 10000^{-2i/d}$, the dot
# product is $PE(p) \cdot PE(q) = \sum_i \cos((p-q)\omega_i)$, a function of $p - q$ alone. Vaswani et al.
# (section 3.5) chose sines and cosines because "for any fixed offset $k$, $PE_{pos+k}$ can be represented
# as a linear function of $PE_{pos}$". That map is a rotation: each (sin, cos) pair turns by the angle
# $k\omega_i$, by the angle-sum identities
# $\sin((p+k)\omega) = \sin(p\omega)\cos(k\omega) + \cos(p\omega)\sin(k\omega)$ and
# $\cos((p+k)\omega) = \cos(p\omega)\cos(k\omega) - \sin(p\omega)\sin(k\omega)$.
# (Our features are stored as (sin, cos), so each 2x2 block reads $[[\cos, \sin], [-\sin, \cos]]$, the
# transpose of the textbook rotation matrix.) One matrix $M_k$ moves *every* position $k$ steps on. Used
# as a query-key map, it makes each position score the position $k$ back highest: one fixed matrix could
# express "look 3 back" everywhere, which Vaswani et al. *hypothesised* would make relative attention easy
# to learn (they found learned positions about as good, their Table 3, row E). This holds for the bare
# sinusoidal vectors: once a token embedding is added, or with a learned table like our MiniLM's, nothing
# makes one position's vector a rotation of another's.

# %%
d_pe, k = 64, 3
pe = PE.sinusoidal_positional_encoding(60, d_pe).double()  # (positions, d)
M = PE.position_shift(k, d_pe).double()  # (d, d), built from k alone, never from a position
moved = pe[:-k] @ M.T  # row p is M @ PE[p]
shift_error = (moved - pe[k:]).abs().max().item()
print(f"max |M_{k} PE[p] - PE[p+{k}]| over all {len(moved)} positions: {shift_error:.1e}")
claim("03.1-one-matrix-shifts", shift_error)  # one matrix moves every position k steps on (float32 tables)
assert torch.allclose(M @ M.T, torch.eye(d_pe, dtype=M.dtype), atol=1e-6), "M_k is a rotation (orthogonal)"
assert torch.allclose(PE.position_shift(2, d_pe).double() @ PE.position_shift(5, d_pe).double(),
                      PE.position_shift(7, d_pe).double(), atol=1e-6), "shifting by 2 then 5 is shifting by 7"
# the angle each feature pair turns by: fast pairs (left) turn far, slow pairs hardly at all
angles = torch.atan2(M[0::2, 1::2].diagonal(), M[0::2, 0::2].diagonal())  # (d/2,) = k * w_i, wrapped
want = k / 10000 ** (torch.arange(0, d_pe, 2, dtype=torch.float64) / d_pe)  # (d/2,) k * w_i
assert torch.allclose(torch.cos(angles), torch.cos(want), atol=1e-6)
assert torch.allclose(torch.sin(angles), torch.sin(want), atol=1e-6)  # the sign of the turn too
# M_k as a query-key map: score[p, q] = PE[p] . M_k PE[q] = PE[p] . PE[q + k], highest at q = p - k
score = pe @ M @ pe.T  # (positions, positions)
peak = score[k:].diagonal()  # (positions - k,): score[p, p - k]
rivals = score[k:].clone()
rivals[:, :-k].fill_diagonal_(float("-inf"))  # every key but p - k
claim("03.1-k-back-highest", (peak - rivals.amax(dim=1)).min())  # smallest lead of p - k over the next key
print(f"score of position 30 on 27 (3 back): {score[30, 27]:.1f}, on 26 and 28: {score[30, 26]:.1f}, "
      f"{score[30, 28]:.1f} (a shallow peak: d/2 = {d_pe // 2} at best)")

import matplotlib.pyplot as plt

from xaikit.plotting import OKABE_ITO, show_signed

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.4), gridspec_kw={"width_ratios": [1, 1.6]})
show_signed(ax0, M[:16, :16].numpy(), title=f"$M_{k}$, first 8 feature pairs: 2x2 rotations")
p0 = 20
ax1.plot(pe[p0 + k, :24].numpy(), "o", color=OKABE_ITO[0], label=f"PE[{p0 + k}]")
ax1.plot((M @ pe[p0])[:24].numpy(), "x", color=OKABE_ITO[5], markersize=9, label=f"$M_{k}$ PE[{p0}]")
ax1.plot(pe[p0, :24].numpy(), ":", color="0.55", label=f"PE[{p0}]")
ax1.set_xlabel("feature")
ax1.set_title(f"$M_{k}$ PE[{p0}] lands on PE[{p0 + k}] (checked above for every position)")
ax1.legend(loc="lower right", fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown] nbgrader={"grade": false, "grade_id": "my_attention-task", "locked": true, "schema_version": 3, "solution": false}
# ## 2. Scaled dot-product attention, written out
# *Lecture: Attention-based explainability, slides "How do you compute the attention?", "Attention Workflow".*
#
# $Q = XW_Q,\ K = XW_K,\ V = XW_V,\quad A = \mathrm{softmax}(QK^\top/\sqrt{d_k}),\quad \text{out} = AV.$
#
# The lecture's worked example has three inputs `[1,0,1,0]`, `[0,2,0,2]`, `[1,1,1,1]` and 4x3 weights.
# **Exercise 2.1 (15 min, ★★☆).** Write the function yourself first:

# %%
from xaikit.course.checks import check_attention, exercise

ex = A.worked_example()
X, W_Q, W_K, W_V = ex["x"], ex["w_q"], ex["w_k"], ex["w_v"]  # (3, 4), (4, 3) x 3
assert X.tolist() == [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]  # the lecture's three inputs (constants)


# %% nbgrader={"grade": false, "grade_id": "my_attention", "locked": false, "schema_version": 3, "solution": true}
@exercise(check_attention)  # while the body is a stub, later cells use xaikit's reference and say so
def my_attention(x, w_q, w_k, w_v):
    ### BEGIN SOLUTION
    q = x @ w_q  # (T, d_k)
    k = x @ w_k  # (T, d_k)
    v = x @ w_v  # (T, d_v)
    d_k = q.shape[-1]
    weights = torch.softmax(q @ k.T / math.sqrt(d_k), dim=-1)  # (T, T)
    return weights @ v, weights  # (T, d_v), (T, T)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "my_attention-check", "locked": true, "points": 1, "schema_version": 3, "solution": false}
assert check_attention(my_attention), "see the report above: which input, which mistake"
### BEGIN HIDDEN TESTS
assert check_attention(my_attention, verbose=False).passed, "graded: my_attention must be written and pass every case"
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "my_attention-use", "locked": true, "schema_version": 3, "solution": false}
out, weights = my_attention(X, W_Q, W_K, W_V)
steps = A.self_attention(X, W_Q, W_K, W_V)
print("Q =\n", steps.q, "\nK =\n", steps.k, "\nV =\n", steps.v)
print("A =\n", steps.weights, "\nout =\n", steps.out)
torch.testing.assert_close(out, steps.out)
torch.testing.assert_close(weights, steps.weights)

# %% slideshow={"slide_type": "subslide"}
xaikit.diagrams.attention_steps()  # the numbers above, step by step

# %% [markdown]
# The same numbers as PyTorch's fused `scaled_dot_product_attention`, and every row of $A$ is a
# probability distribution over the inputs:

# %%
torch_out = F.scaled_dot_product_attention(steps.q, steps.k, steps.v)
claim("03.2-equals-torch-sdpa", (torch_out - steps.out).abs().max() / steps.out.abs().max())  # relative
_ = claim("03.2-rows-sum-to-one", (steps.weights.sum(dim=-1) - 1).abs().max())

# %% [markdown]
# > **Pause here.** The lecture asks: "Why do we call them “attention weights”?"
# > (XAI for transformers, slide "Together, Q and K yield the attention weights")

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-1", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Question 2.2 (5 min, ★☆☆).** Answer the lecture's question above.
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Because they are the weights of a weighted average: each row of $A$ is non-negative and sums to 1 (the
# softmax, checked just above), and the output of input $i$ is $\sum_j A_{ij} v_j$, the values mixed in
# those proportions. $A_{ij}$ says how much of its output input $i$ takes from input $j$, that is, how much
# $i$ "attends to" $j$ ("who attends to whom", in the lecture's words). They are computed from the input by
# $Q$ and $K$, so unlike a layer's parameters they change with every sentence.
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# ### Additive (Bahdanau) attention, beside the dot product
#
# The first attention models scored a (query, key) pair with a small network, not a dot product: Bahdanau,
# Cho & Bengio (2015), *Neural Machine Translation by Jointly Learning to Align and Translate* (ICLR), use
# $e_{ij} = v_a^\top \tanh(W_a q_i + U_a k_j)$, then the same softmax over $j$ and weighted sum of values
# (Luong et al. 2015 call it "concat"; our code multiplies from the right, `q @ W_a`). In their translation
# model the query is the decoder's previous state $s_{i-1}$ and the keys and values are both the encoder's
# annotations $h_j$; here they are the worked example's $q$, $k$ and $v$. The network runs once
# per pair, $T_q T_k$ evaluations of a $d_a$-wide tanh layer, where the dot product gets every score from one
# matrix product $QK^\top$: similar in theoretical complexity, but the dot product is faster and leaner in
# practice, so the transformer uses it (Vaswani et al. 2017, section 3.2.1). The tanh bounds
# $|e_{ij}| \le \|v_a\|_1$, while dot products grow with $d_k$: without the $1/\sqrt{d_k}$, additive attention
# did better for large $d_k$ (Britz et al. 2017, *Massive exploration of neural machine translation
# architectures*, the study Vaswani et al. cite there).
#
# Below, the worked example's queries and keys with random (untrained) $W_a, U_a, v_a$; the bottom row of the
# figure makes every key 10 times longer, and a table repeats the measurements for eight random draws. One
# measurement is the size (norm) of the softmax's **Jacobian**, the matrix of its partial derivatives $\partial w_{ij} / \partial e_{ik}$:
# how much each weight moves when a score moves. Where it is near 0, the softmax passes back almost no
# gradient (section 3 writes it out).

# %%
from xaikit.plotting import show_weights

gen = torch.Generator().manual_seed(0)
d_a = 4  # hidden units of the scoring network
W_a = torch.randn(3, d_a, generator=gen) / math.sqrt(3)  # (d_k, d_a): projects a query
U_a = torch.randn(3, d_a, generator=gen) / math.sqrt(3)  # (d_k, d_a): projects a key
v_a = torch.randn(d_a, generator=gen)  # (d_a,): d_a hidden units -> one score

add_out, add_weights = SC.additive_attention(steps.q, steps.k, steps.v, W_a, U_a, v_a)  # (3, 3), (3, 3)
by_hand = torch.stack([v_a @ torch.tanh(steps.q[0] @ W_a + key @ U_a) for key in steps.k])  # query 1's scores
assert torch.allclose(add_weights[0], torch.softmax(by_hand, -1)), "one row by hand: e_1j, then a softmax"
assert torch.allclose(add_weights.sum(-1), torch.ones(3), atol=1e-6), "rows sum to 1, as for the dot product"
assert torch.allclose(add_out, add_weights @ steps.v), "the output is the same weighted sum of the values"
_, blind = SC.additive_attention(steps.q, steps.k, steps.v, W_a, torch.zeros(3, d_a), v_a)
claim("03.2-blind-keys-uniform", (blind - 1 / 3).abs().max())  # U_a = 0: every key looks alike, weights 1/3

floor = math.exp(-2 * v_a.abs().sum().item()) / 3  # |e_ij| <= ||v_a||_1 gives w_ij >= e^(-2||v_a||_1) / T_k
weights_at = {}  # key scale c -> (dot-product weights, additive weights), each (T_q, T_k)
for c in (1, 10, 1000):
    weights_at[c] = (A.scaled_dot_product_attention(steps.q, c * steps.k, steps.v)[1],
                     SC.additive_attention(steps.q, c * steps.k, steps.v, W_a, U_a, v_a)[1])
# the smallest additive weight over keys x 1, 10 and 1000, in units of the floor: never below it
claim("03.2-additive-floor", min(add_w.min().item() for _, add_w in weights_at.values()) / floor)
dot_10 = weights_at[10][0]
claim("03.2-dot-saturates", dot_10[1:].amax(-1).min())  # keys x 10: one key takes the rows of inputs 2, 3
assert dot_10.min() < floor, "keys x 10: the dot product's smallest weight drops below the additive floor"
claim("03.2-dot-no-gradient", SAT.softmax_jacobian_norm(dot_10[1:]).max())  # ...its softmax passes ~no gradient
assert torch.allclose(dot_10[0, 1:], torch.full((2,), 0.5), atol=1e-4)  # input 1's tie (section 3) stays
def tanh_slopes(c):  # tanh'(W_a q_i + U_a c k_j) for every pair and hidden unit, (T_q, T_k, d_a)
    return 1 - torch.tanh((steps.q @ W_a).unsqueeze(1) + (c * steps.k @ U_a).unsqueeze(0)) ** 2


claim("03.2-tanh-units-flat", tanh_slopes(10).median())  # keys x 10: most tanh units are already flat
assert (tanh_slopes(1000).max() < 1e-6), "keys x 1000: every tanh is flat, its derivative ~ 0"
add_10 = weights_at[10][1]
add_1000 = weights_at[1000][1]
assert torch.allclose(add_1000, add_1000[0].expand(3, -1)), "keys x 1000: the query no longer matters"
print(f"smallest weight with keys x 10: dot product {dot_10.min():.1e}, additive {add_10.min():.2f} "
      f"(floor {floor:.1e}); additive weights {add_10.min():.2f}-{add_10.max():.2f}; median tanh slope "
      f"{tanh_slopes(10).median():.2g}, largest {tanh_slopes(10).max():.2f}")


def query_dependence(w):  # (T_q, T_k) -> how much the query changes a key's weight: the largest column range
    return (w.amax(0) - w.amin(0)).max().item()


# one draw of W_a, U_a, v_a is an anecdote: the same measurements for eight seeds of the random scorer
print("seed | keys x 1: query dependence | keys x 10: spread of weights | keys x 1000: query dependence, "
      "largest tanh slope")
per_seed = []
for draw in range(8):
    g = torch.Generator().manual_seed(draw)
    W_s, U_s = (torch.randn(3, d_a, generator=g) / math.sqrt(3) for _ in range(2))  # drawn in this order
    v_s = torch.randn(d_a, generator=g)
    w_at = {c: SC.additive_attention(steps.q, c * steps.k, steps.v, W_s, U_s, v_s)[1] for c in (1, 10, 1000)}
    slope_1000 = (1 - torch.tanh((steps.q @ W_s).unsqueeze(1) + (1000 * steps.k @ U_s).unsqueeze(0)) ** 2).max()
    per_seed.append((query_dependence(w_at[1]), (w_at[10].max() - w_at[10].min()).item(),
                     query_dependence(w_at[1000]), slope_1000.item()))
    print(f"{draw:4d} | {per_seed[-1][0]:26.3f} | {per_seed[-1][1]:29.2f} | {per_seed[-1][2]:27.1e}, "
          f"{per_seed[-1][3]:.1e}")
claim("03.2-unsaturated-uses-query", min(r[0] for r in per_seed))  # keys x 1: the query matters, every seed
claim("03.2-saturated-ignores-query", max(r[2] for r in per_seed))  # keys x 1000: it does not, every seed
claim("03.2-additive-spread-x10", max(r[1] for r in per_seed) - min(r[1] for r in per_seed))  # shown: varies

fig, axes = plt.subplots(2, 2, figsize=(8, 6.4))
for row, c in enumerate((1, 10)):
    for col, (name, w) in enumerate(zip(("dot product (scaled)", "additive"), weights_at[c], strict=True)):
        ax = axes[row, col]
        show_weights(ax, w, title=f"{name}, keys x {c}")
        ax.set_xticks(range(3), ["key 1", "key 2", "key 3"])
        ax.set_yticks(range(3), ["query 1", "query 2", "query 3"])
fig.tight_layout()
plt.show()

# %% [markdown]
# Ten times longer keys make the dot-product rows collapse onto one key (input 1 keeps its tie), and the
# softmax's Jacobian goes to 0, as in section 3. The additive weights fail another way. Most tanh units are
# pushed to $\pm 1$, where $\tanh(W_a q_i + U_a k_j) \approx \mathrm{sign}(U_a k_j)$ whatever the query: every
# query then gets the *same* row of weights, set by the keys alone, so attention stops asking what the query
# is looking for. With this draw (seed 0) that row also happens to be nearly uniform (bottom right), but the
# table shows that is an accident of the draw: the spread of the weights at $\times 10$ ranges widely over
# seeds. What holds for every seed is the loss of the query: at $\times 1$ the query changes the weights, at
# $\times 1000$, where every unit is flat, it changes them by nothing (both checked over the eight draws).
# Staying above the floor is not the same as staying useful or trainable: those flat units pass almost no
# gradient. Both kinds want inputs of moderate size; for the dot product, dividing by $\sqrt{d_k}$ is the
# cheap way to get it.

# %% [markdown]
# ## 2b. Other scores: Luong's dot and general, Bahdanau's additive
# *Lecture: Attention is not not explanation, slide "Types of attention".*
#
# The softmax and the
# weighted sum stay; only the score of a (query, key) pair changes. Luong, Pham & Manning (2015, section 3.1)
# list three: *dot* $q_i^\top k_j$, *general* $q_i^\top W k_j$ with a learned matrix $W$, and *concat*,
# Bahdanau's additive score above. General with $W = I$ is dot, and the transformer's score is a general score
# on the inputs: $q_i \cdot k_j = x_i^\top W_Q W_K^\top x_j$, a $W$ factored through $d_k$ dimensions. Each
# function returns the score matrix and its softmax. In the translation models the queries come from one
# sequence (the decoder) and the keys and values from another (the source): cross-attention, last below.

# %%
dot_s, dot_w = SC.dot_scores(X, X)  # (3, 3) each: x_i . x_j on the raw inputs, and its softmax
dot_loop = torch.tensor([[sum(float(X[i, d]) * float(X[j, d]) for d in range(4)) for j in range(3)]
                        for i in range(3)])  # the same dot products by explicit loops
claim("03.2b-dot-by-hand", (dot_s - dot_loop).abs().max())
claim("03.2b-general-identity-is-dot", (SC.general_scores(X, X, torch.eye(4))[0] - dot_s).abs().max())
W_QK = W_Q @ W_K.T  # (4, 4): the transformer's W, of rank at most d_k = 3
gen_s, gen_w = SC.general_scores(X, X, W_QK)  # x_i W_Q W_K^T x_j, (3, 3) each
QK = steps.q @ steps.k.T  # (3, 3)
claim("03.2b-general-is-q-dot-k", (gen_s - QK).abs().max() / QK.abs().max())
add_s, add_w = SC.additive_scores(steps.q, steps.k, W_a, U_a, v_a)  # (3, 3) each, W_a, U_a, v_a of section 2
pairs = torch.tensor([[float(v_a @ torch.tanh(qi @ W_a + kj @ U_a)) for kj in steps.k] for qi in steps.q])
claim("03.2b-additive-by-loop", (add_s - pairs).abs().max() / pairs.abs().max())
print("dot scores on the inputs:\n", dot_s, f"\ngeneral, W = W_Q W_K^T (rank {int(torch.linalg.matrix_rank(W_QK))}):\n",
      gen_s, "\nadditive:\n", add_s)
assert dot_s[0, 2] == dot_s[0, 0] and dot_s[2, 1] == dot_s[2, 2]  # exact: sums of small integers

Y = torch.tensor([[1.0, 0, 0, 1], [0, 1, 1, 0]])  # (2, 4): a second, shorter sequence that asks
cross = SC.cross_attention(Y, X, W_Q, W_K, W_V)  # queries from Y, keys and values from X
print("cross-attention weights (2 queries x 3 keys):\n", cross.weights)
claim("03.2b-cross-rows-sum-to-one", (cross.weights.sum(-1) - 1).abs().max())
torch_cross = F.scaled_dot_product_attention(Y @ W_Q, X @ W_K, X @ W_V)  # scale 1/sqrt(d_k) by default
claim("03.2b-cross-equals-torch-sdpa", (torch_cross - cross.out).abs().max() / cross.out.abs().max())

fig, axes = plt.subplots(1, 4, figsize=(13, 3.4), gridspec_kw={"width_ratios": [1, 1, 1, 1]})
panels = [("dot on the inputs", dot_w), ("general, $W = W_Q W_K^\\top$", gen_w), ("additive", add_w),
          ("cross: Y asks, X answers", cross.weights)]
for ax, (name, w) in zip(axes, panels, strict=True):
    show_weights(ax, w, title=name, colorbar=ax is axes[-1])
    ax.set_xticks(range(3), ["x 1", "x 2", "x 3"])
    ax.set_yticks(range(len(w)), [f"{'y' if len(w) == 2 else 'x'} {i + 1}" for i in range(len(w))])
fig.tight_layout()
plt.show()

# %% [markdown]
# The general score with $W = W_Q W_K^\top$ gives $QK^\top$ (the unscaled scores of section 2). The dot
# score on the raw inputs is not a similarity of directions: input 1 scores input 3 as high as itself, and
# input 3 scores input 2 as high as itself (checked). Cross-attention is the same computation with a
# $(T_q, T_k)$ map: two rows, one per query of $Y$, each a distribution over the three inputs of $X$.

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-2b", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Exercise (10 min, ★★☆).** When does the dot score make a query score itself highest? Use
# Cauchy-Schwarz, $x_i \cdot x_j \le \|x_i\|\,\|x_j\|$, to explain the two ties above, then say what a
# learned $W$ in the general score changes.
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Against itself a query scores $\|x_i\|^2$; against key $j$ at most $\|x_i\|\,\|x_j\|$. If every key had the
# query's length, no other key could beat it (a tie needs the same direction). Keys of different lengths
# break this: a longer key pointing partly the query's way can tie or win. Input 3 is longer than input 1
# and covers its two features; input 2 is longer than input 3 and covers half of it, twice as strongly: both
# ties come from length, not from similarity. The general score $x_i^\top W x_j$ need not be symmetric or
# positive definite, so $i \to j$ and $j \to i$ can differ and a token may score another above itself: $W$
# learns which features of a query should look for which features of a key. The transformer learns it as
# $W_Q W_K^\top$, whose rank is at most $d_k$ (printed above), with $2 d\, d_k$ parameters instead of $d^2$.
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# ## 3. Why divide by $\sqrt{d_k}$
# *Lecture: XAI for transformers, slide "The scaled dot-product attention is computed as".*
#
# For random $q, k$ with unit-variance entries, $q\cdot k$ is a sum of $d_k$ products, so its variance
# grows like $d_k$. Measured:

# %%
var = SAT.qk_variance((1, 4, 16, 64, 256), n_samples=pick(20000, 5000))
worst = 0.0  # the largest relative miss: |var(q.k) / d_k - 1| and |var(q.k / sqrt(d_k)) - 1| over every d_k
for d, raw, scaled in zip(var["d_k"], var["raw"], var["scaled"], strict=True):
    print(f"d_k = {d:4d}: var(q.k) = {raw:7.1f}   var(q.k / sqrt(d_k)) = {scaled:.2f}")
    worst = max(worst, abs(raw / d - 1), abs(scaled - 1))
_ = claim("03.3-variance-grows-like-dk", worst)  # grows like d_k; dividing by sqrt(d_k) brings it back to ~1

# %% [markdown]
# Large scores saturate the softmax: one weight goes to 1, the entropy of the row goes to 0, and the
# softmax's Jacobian $\mathrm{diag}(p) - pp^\top$ goes to 0, so no gradient flows back to $W_Q, W_K$.
# Slide the temperature on the worked example ($\sqrt{d_k} = \sqrt 3$ is the standard):

# %%
worked = WorkedExamplePanel()
worked

# %%
standard = worked.set(temperature=math.sqrt(3))  # the standard scale, whatever the slider shows now
cold = worked.set(temperature=0.1)
assert torch.all(cold.entropy < standard.entropy) and torch.all(cold.max_weight > standard.max_weight)
assert cold.max_weight[1:].min() > 0.99, "saturated: inputs 2 and 3 give one key (almost) all the weight"
claim("03.3-cold-no-gradient", cold.grad_norm[1:].max())  # saturated: no gradient
print("entropy at sqrt(d_k):", standard.entropy, "\nentropy at 0.1:     ", cold.entropy)
# exact: integer inputs and weights, so every product and sum is a small integer, exact in float32
assert (steps.q[0] @ steps.k.T).tolist() == [2.0, 4.0, 4.0]  # input 1's scores: a tie for the maximum ...
_ = claim("03.3-tie-keeps-ln2", abs(cold.entropy[0].item() - math.log(2)))  # ... so its entropy stays at ln 2

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-2", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Question (5 min, ★☆☆): why does input 1 keep an entropy of ln 2 even when the temperature is tiny?**
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Its scores against the three keys are 2, 4 and 4: two keys tie for the maximum, so the sharpened
# softmax splits the weight 0.5 / 0.5 between them instead of picking one.
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# With random queries and keys the same happens as $d_k$ grows, unless we divide by $\sqrt{d_k}$:

# %%
dk_panel = SaturationPanel(d_k=256, scaled=False)
dk_panel

# %%
raw_curve, scaled_curve = dk_panel.curves["raw"], dk_panel.curves["scaled"]
# at d_k = 1024, unscaled against scaled: the softmax saturates ... and its gradient vanishes
claim("03.3-unscaled-entropy-collapses", raw_curve["entropy"][-1] / scaled_curve["entropy"][-1])
claim("03.3-unscaled-gradient-vanishes", raw_curve["grad_norm"][-1] / scaled_curve["grad_norm"][-1])
claim("03.3-scaled-entropy-stable", max(scaled_curve["entropy"]) - min(scaled_curve["entropy"]))  # every d_k
one_query = dk_panel.set(d_k=1024)
_ = claim("03.3-one-key-takes-all", one_query.weights.max())  # unscaled, d_k = 1024

# %% [markdown]
# ## 4. Masks: bidirectional, causal, padding
# *Lecture: XAI for transformers, slides "GPT - Transformers for text generation", "BERT - Transformers for text understanding".*
#
# BERT lets every token see every other token. GPT's *causal* mask hides later tokens. A *padding* mask
# hides the `[PAD]` tokens that make a batch rectangular. Masked scores become $-\infty$, so their
# weights are exactly 0.

# %%
mask_panel = MaskPanel(mask="causal")
mask_panel

# %%
causal = mask_panel.set(mask="causal")  # set here, whatever the toggle shows now
# exact zeros by definition: a masked score is -inf and exp(-inf) = 0
assert torch.all(causal.weights.triu(1) == 0), "causal: no token looks ahead"
padded = mask_panel.set(mask="padding")
pad_columns = [i for i, t in enumerate(padded.tokens) if t == "[PAD]"]
assert torch.all(padded.weights[:, pad_columns] == 0), "padding: nobody looks at [PAD]"  # exact, as above
assert torch.allclose(padded.weights.sum(-1), torch.ones(len(padded.tokens)))

q, k, v = torch.randn(3, 6, 8).unbind(0)  # three (T, d) tensors
ours, _ = A.scaled_dot_product_attention(q, k, v, mask=A.causal_mask(6))
torch.testing.assert_close(ours, F.scaled_dot_product_attention(q, k, v, is_causal=True))

# %% [markdown]
# ## 5. Multi-head attention
# *Lecture: XAI for transformers, slides "Multi-head attention", "Code implementation of multi-head self-attention".*
#
# Split $Q, K, V$ into $h$ slices of $d_{model}/h$ features, attend in each, concatenate, project with
# $W_O$. Our 20-line version gives the same output and per-head weights as `torch.nn.MultiheadAttention`
# loaded with the same matrices (it stores $W^\top$, hence the transposes):

# %%
d_model, n_heads = 16, 4
mha = torch.nn.MultiheadAttention(d_model, n_heads, batch_first=True).eval()
with torch.no_grad():
    mha.in_proj_bias.normal_()
w_q, w_k, w_v = (w.T for w in mha.in_proj_weight.detach().chunk(3))
b_q, b_k, b_v = mha.in_proj_bias.detach().chunk(3)
x = torch.randn(2, 7, d_model)  # (B, T, d_model)

ours, our_weights = A.multi_head_attention(x, w_q, w_k, w_v, mha.out_proj.weight.detach().T, n_heads,
                                           b_q=b_q, b_k=b_k, b_v=b_v, b_o=mha.out_proj.bias.detach())
with torch.no_grad():
    theirs, their_weights = mha(x, x, x, average_attn_weights=False)
print("output", tuple(ours.shape), "| per-head weights", tuple(our_weights.shape))
# the larger of the outputs' difference (relative to their size) and the weights' difference
_ = claim("03.5-equals-torch-mha", max(((ours - theirs).abs().max() / theirs.abs().max()).item(),
                                       (our_weights - their_weights).abs().max().item()))

# %%
heads_panel = HeadsPanel(n_heads=2)
heads_panel

# %%
r = heads_panel.set(n_heads=4)
assert r.weights.shape == (4, 5, 5) and r.max_diff_vs_torch < 1e-5
for h in (1, 2, 8):  # compute() is the panel's pure function: the numbers without a redraw
    assert heads_panel.compute(n_heads=h).max_diff_vs_torch < 1e-5

# %% [markdown]
# ## 6. Permutation equivariance
# *Lecture: Attention-based explainability, slide "Attention is permutation equivariant".*
#
# Attention has no idea of order: shuffle the input rows and the output rows are shuffled the same way,
# $f(PX) = P f(X)$. Positional encodings break this symmetry, which is why transformers add them.

# %%
x = torch.randn(7, d_model)  # (T, d_model)
perm = torch.randperm(7)
W = dict(w_q=w_q, w_k=w_k, w_v=w_v, w_o=mha.out_proj.weight.detach().T, n_heads=n_heads)

out, _ = A.multi_head_attention(x, **W)
out_shuffled, _ = A.multi_head_attention(x[perm], **W)
claim("03.6-permutation-equivariant", (out_shuffled - out[perm]).abs().max())  # without positions

pe7 = PE.sinusoidal_positional_encoding(7, d_model)
out_pe, _ = A.multi_head_attention(x + pe7, **W)
out_pe_shuffled, _ = A.multi_head_attention(x[perm] + pe7, **W)
gap = (out_pe_shuffled - out_pe[perm]).abs().max().item()
print(f"with positional encoding the shuffled output differs by up to {gap:.3f}")
_ = claim("03.6-positions-break-it", gap)  # with positions: no longer equivariant

# %% [markdown]
# ## 7. From scratch to a real model
# *Lecture: XAI for transformers, slide "Attention mechanism".*
#
# Now the same maths inside the model chosen at the top. `capture_attention` runs it once with forward
# hooks and returns the tokens, the attention weights of every layer and head, and one layer's Q, K, V.

# %%
cap = capture_attention(model, tokenizer, SENTENCE, layer=0)
print(cap.tokens)
print("attentions", tuple(cap.attentions.shape), "= (layers, heads, queries, keys); q of layer 0",
      tuple(cap.q.shape))

# %% [markdown]
# Recompute layer 0 by hand from the model's own weights: take the embeddings after the embedding layer's
# LayerNorm (each token's vector rescaled to mean 0 and variance 1, then a learned gain and bias; section 8), project with
# $W_Q$ and $W_K$, split into heads, and apply softmax$(QK^\top/\sqrt{d_{head}})$. `capture_attention`
# returns CPU tensors, so the embeddings go back to the model's device to meet its weights, and the
# result comes to the CPU to be compared.

# %%
h = cap.embeddings.to(model.device, model.dtype)  # (T, d_model): the embeddings' output, LayerNorm included
q_lin, k_lin, v_lin = qkv_projections(arch.attention_modules(model)[0])
n_heads_model = arch.n_heads(model)
T, C = h.shape
with torch.no_grad():
    Q = (h @ q_lin.weight.T + q_lin.bias).view(T, n_heads_model, -1).transpose(0, 1)  # (nh, T, d_head)
    K = (h @ k_lin.weight.T + k_lin.bias).view(T, n_heads_model, -1).transpose(0, 1)  # (nh, T, d_head)
    by_hand = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1).cpu()  # (nh, T, T)

diff = (by_hand - cap.attentions[0]).abs().max().item()
print(f"max |by hand - model| over {n_heads_model} heads: {diff:.1e}")
claim("03.7-layer0-recomputed", diff)  # layer 0 recomputed from the model's weights matches its attentions
assert (recompute_attention(model, cap.embeddings, cap.attention_mask) - cap.attentions[0]).abs().max() < 1e-5

# %% [markdown]
# **Explorer.** Pick a layer and a head (or their mean); the row of the chosen query token says where it
# looks. The model runs once per sentence: switching layer, head or query redraws from a cache.
# Where does "it" look?

# %%
explorer = AttentionExplorer(model, tokenizer, text=SENTENCE, layer=0, head=0, query="it")
explorer

# %%
last = arch.n_layers(model) - 1
explorer.set(text=SENTENCE, query=tokens.index("it"))  # this sentence and query, whatever was picked since
passes = explorer.n_forward
for layer in range(last + 1):
    view = explorer.set(layer=layer, head="mean")
    top = sorted(range(len(view.tokens)), key=lambda j: -view.row[j].item())[:3]
    print(f"layer {layer}: 'it' looks most at", [(view.tokens[j], round(view.row[j].item(), 2)) for j in top])
assert explorer.n_forward == passes, "switching layers and heads ran no new forward pass"
assert torch.allclose(view.weights, cap.attentions[last].mean(0))
assert abs(view.row.sum().item() - 1.0) < 1e-5
_ = explorer.set(layer=last, head=0)

# every head of every layer, one by one: where does "it" put its largest weight?
it_rows = cap.attentions[:, :, tokens.index("it"), :]  # (layers, heads, keys)
favourite = Counter(tokens[j] for j in it_rows.argmax(dim=-1).flatten().tolist())
n_views = it_rows.shape[0] * it_rows.shape[1]  # layers x heads
print(f"over {n_views} heads, 'it' puts its largest weight on:", dict(favourite.most_common()))
if MODEL == "embedded":  # checked: these hold for every training seed
    claim("03.7-it-looks-at-cls", favourite["[CLS]"] / n_views)  # most heads: [CLS]
    claim("03.7-it-looks-back-or-ahead", min(favourite["because"], favourite["hungry"]))  # some: "because", "hungry"

# %% [markdown]
# **Does "it" find "cat"?** A count for "cat" alone means nothing without the same count for the other
# keys, so we count every key: in how many heads it is among the three keys "it" weighs most, and the
# weight "it" gives it on average over all heads. Chance is what the top-3 slots left over after `[CLS]`
# would give each of the other keys if they were spread evenly.

# %%
top3_of_it = it_rows.topk(3, dim=-1).indices  # (layers, heads, 3): the three keys 'it' weighs most
in_top3 = [int((top3_of_it == j).any(dim=-1).sum()) for j in range(len(tokens))]  # heads, per key
mean_weight = it_rows.mean(dim=(0, 1))  # (keys,): the weight 'it' gives each key, mean over every head
chance = (3 * n_views - in_top3[0]) / (len(tokens) - 1)  # the slots [CLS] (key 0) leaves, spread evenly
print(f"{'key':10s} heads with it in the top 3 (of {n_views})   mean weight from 'it'")
for j, t in enumerate(tokens):
    print(f"{t:10s} {in_top3[j]:12d} {mean_weight[j].item():28.3f}")
print(f"chance for a key other than [CLS]: about {chance:.0f} heads")
cat, milk = tokens.index("cat"), tokens.index("milk")

# the matched control: the same sentence, but now "it" can only be the milk
OTHER = "The cat drank the milk because it was sour"
cap_other = capture_attention(model, tokenizer, OTHER, layer=0)
rows_other = cap_other.attentions[:, :, cap_other.tokens.index("it"), :]  # (layers, heads, keys)
ratio_hungry = (mean_weight[cat] / mean_weight[milk]).item()
ratio_sour = (rows_other[..., cat].mean() / rows_other[..., milk].mean()).item()
print(f"mean weight of 'it' on 'cat' / on 'milk': '...it was hungry' (it = the cat) {ratio_hungry:.2f}, "
      f"'...it was sour' (it = the milk) {ratio_sour:.2f}")
if MODEL == "embedded":
    assert cap_other.tokens[cat] == "cat" and cap_other.tokens[milk] == "milk"  # the same positions
    claim("03.7-cat-in-top-three", in_top3[cat] / n_views)  # printed only: compare with chance and the table
    # 'cat' gets less weight from 'it' than 'because' and 'hungry' do (ratio to the smaller of the two)
    claim("03.7-cat-below-because-hungry",
          mean_weight[cat].item() / min(mean_weight[tokens.index(w)].item() for w in ("because", "hungry")))
    claim("03.7-cat-over-milk-when-it-is-milk", ratio_sour)  # printed only: the referent swap

# %% [markdown]
# > **Pause here.** The lecture asks: "Do you think there is any local or global information for interpretation or explanation here?"
# > (XAI for transformers, slide "Interpreting attention")

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-3", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Question 7.1 (5 min, ★★☆).** Answer the lecture's question above.
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Both, as the lecture answers on the same slide. *Local*: the weights of one sentence say, token by
# token, how much each position draws on each other one for this input: the table above. *Global*: they are
# computed by $W_Q$ and $W_K$ (and the embeddings), which were learned from the whole training set, so
# patterns that recur across sentences, such as the many heads that park "it"'s weight on `[CLS]`, tell us
# about the model rather than the sentence. Neither makes the weights an explanation of the prediction:
# the question below, notebook 04 and lab 06 test that.
# </details>
# <!-- END SOLUTION -->

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-4", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Question (5 min, ★★☆): does "it" attend to "cat"? Does that explain the model's sentiment prediction?**
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Look at several layers and heads; the count under the explorer does it for all of them. Most heads put
# the largest weight of "it" on `[CLS]`; some on the previous token "because" or on "hungry"; and the mean
# of heads mixes all of these patterns. "cat" is among the three keys "it" weighs most in about as many
# heads as chance gives any key, fewer than "because" or "hungry", and "it" gives it less weight on average
# than those two (checked on every training seed). The matched control says the rest: in "...because it
# was sour", where "it" is the milk, "it" weighs "cat" about as much as "milk" or more (the ratio printed
# above for your model; above 1 on every training seed measured, but too close to 1 on one to check it); it drops
# only somewhat from the "hungry" sentence. The weight on "cat" barely follows the referent, so these
# weights are no evidence of coreference. Even a head that did link "it" to "cat"
# would show what the model *relates*, not what its prediction *depends on*: attention
# weights are one factor of the computation (the values and every later layer matter too), which is why
# notebook 04 turns to gradients (Grad-SAM) and SHAP. See Jain & Wallace (2019) and Wiegreffe & Pinter
# (2019).
# </details>
# <!-- END SOLUTION -->

# %% [markdown]
# **Try it:** type your own sentence into the explorer; the first view of a new sentence costs one
# forward pass, every switch after that is free.

# %% [markdown]
# ## 8. A transformer block, once
# *Lecture: Attention-based explainability, slide "The Transformer Model".*
#
# Attention is one of the two sublayers of an encoder block. For the token vectors $H$ ($T \times d$) that
# enter it, BERT's block (Devlin et al. 2019, the "post-LayerNorm" block of Vaswani et al.) computes
#
# $$U = \mathrm{LayerNorm}\big(H + \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\, W_O + b_O\big), \qquad
# H' = \mathrm{LayerNorm}\big(U + \mathrm{GELU}(U W_1 + b_1)\, W_2 + b_2\big).$$
#
# * **The residual stream.** Each sublayer *adds* its result to its input, and in this post-LayerNorm
#   block the sum is then normalised. A token's own vector is carried through the block as one term of
#   that sum; attention adds context to it rather than replacing it. This is the identity that attention
#   rollout (the product of the layers' attention maps, tracing what reaches the top) adds to every layer
#   in lab notebook 06, and why a position keeps much of "itself" (measured at
#   the end of this section).
# * **LayerNorm** (Ba et al. 2016) rescales each token's vector to mean 0 and variance 1 over its $d$
#   features, then applies a learned gain and bias: one token at a time, never across tokens.
# * **The feed-forward network** (FFN) also acts on each token on its own: $d \to 4d \to d$ with a GELU,
#   $\mathrm{GELU}(z) = z\,\Phi(z)$. Only attention moves information between tokens.
#
# Below, layer 0 of the model written out with its own weights (BERT's module names; other families
# name them differently), continuing from the attention weights `by_hand` of section 7. It runs on the
# model's device and comes back to the CPU to be compared with the hidden state the model returns.

# %% slideshow={"slide_type": "subslide"}
xaikit.diagrams.transformer_block()

# %%
block = arch.encoder_layers(model)[0]  # layer 0: attention.self, attention.output, intermediate, output
att_out, ffn_up, ffn_down = block.attention.output, block.intermediate, block.output


def layer_norm(x, norm):  # (T, d) -> (T, d): each token over its own features
    mean = x.mean(dim=-1, keepdim=True)  # (T, 1)
    var = x.var(dim=-1, keepdim=True, correction=0)  # (T, 1)
    return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


def gelu(z):  # the exact GELU, z * Phi(z)
    return 0.5 * z * (1 + torch.erf(z / math.sqrt(2)))


act = gelu if model.config.hidden_act == "gelu" else ffn_up.intermediate_act_fn  # the model's own otherwise
if MODEL == "embedded":
    assert model.config.hidden_act == "gelu"  # our MiniLM uses the exact GELU, like BERT
with torch.no_grad():
    V = (h @ v_lin.weight.T + v_lin.bias).view(T, n_heads_model, -1).transpose(0, 1)  # (nh, T, d_head)
    heads = by_hand.to(model.device, model.dtype) @ V  # (nh, T, d_head): A V in every head
    concat = heads.transpose(0, 1).reshape(T, C)  # (T, d_model): the heads side by side
    attended = concat @ att_out.dense.weight.T + att_out.dense.bias  # (T, d_model): W_O, b_O
    u = layer_norm(h + attended, att_out.LayerNorm)  # residual, then LayerNorm
    inner = act(u @ ffn_up.dense.weight.T + ffn_up.dense.bias)  # (T, 4 d_model)
    ffn = inner @ ffn_down.dense.weight.T + ffn_down.dense.bias  # (T, d_model)
    layer0 = layer_norm(u + ffn, ffn_down.LayerNorm)  # residual, then LayerNorm: (T, d_model)
    torch.testing.assert_close(layer_norm(u + ffn, ffn_down.LayerNorm), ffn_down.LayerNorm(u + ffn))
    states = model(**enc, output_hidden_states=True).hidden_states  # the embeddings, then one per block
print("shapes: attended", tuple(attended.shape), "| FFN inside", tuple(inner.shape), "| out", tuple(layer0.shape))
assert inner.shape == (T, 4 * C), "the FFN widens d to 4d and back"

layer0, model_layer0 = layer0.cpu(), states[1][0].cpu()  # both (T, d_model), on the CPU
diff = (layer0 - model_layer0).abs().max().item()
print(f"max |by hand - model's layer-0 output| = {diff:.1e} over {layer0.numel()} numbers")
# layer 0 written out matches the model number for number (the difference relative to the largest entry)
claim("03.8-layer0-by-hand", diff / model_layer0.abs().max())
assert torch.allclose(states[0][0].cpu(), cap.embeddings.to(states[0].dtype), atol=1e-5), "the block's input is h"

# %% [markdown]
# What the residual stream does, measured: after the whole block, is each token's vector still its own?
# The cosine similarity of every output vector with every input vector:

# %%
before = cap.embeddings.to(layer0.dtype)  # (T, d_model): what entered the block
cosine = F.cosine_similarity(layer0[:, None, :], before[None, :, :], dim=-1)  # (T out, T in)
print("each token's cosine with its own input:", [f"{t} {c:.2f}" for t, c in zip(tokens, cosine.diag(), strict=True)])
own = cosine.diag()  # (T,): each output against its own input
others = cosine.masked_fill(torch.eye(T, dtype=torch.bool), float("-inf")).amax(dim=1)  # (T,): the best other
claim("03.8-own-input-closest", (own - others).min())  # every output is closest to its own input
_ = claim("03.8-own-input-cosine", own.min())  # and still points mostly the same way: attention added context to it

# %% [markdown]
# ## 9. Attention is not the whole story: weights vs what is moved
# *Beyond the lectures: Kobayashi et al., Attention is not only a weight, 2020.*
#
# A heatmap of $\alpha$ shows how much each query *weighs* each key. It does not show what the head
# *moves*. Written per head (Kobayashi et al. 2020, "Attention is Not Only a Weight: Analyzing Transformers
# with Vector Norms", EMNLP, section 3), the attention sublayer's output for token $i$ before dropout,
# residual and LayerNorm is
#
# $$y_i = \sum_{h} \sum_j \alpha^h_{ij}\, f^h(x_j) + b_O, \qquad f^h(x) = (x W_V^h + b_V^h)\, W_O^h,$$
#
# where $W_V^h, b_V^h$ are head $h$'s slice of the value projection (its bias included) and $W_O^h$ is the
# block of rows of the output matrix $W_O$ that head $h$'s $d_{head}$ features meet. The output bias
# $b_O$ belongs to no head and no token, so it stays apart. Token $j$ reaches token $i$ as the vector
# $\alpha_{ij} f(x_j)$, and its size is $\|\alpha_{ij} f(x_j)\| = \alpha_{ij}\|f(x_j)\|$
# ($\alpha \ge 0$): a large weight on a token whose $f(x_j)$ is short moves little. First the identity,
# on layer 0 and by hand, against `attended` of section 8 (which matched the model number for number):

# %%
norms = attention_norms(model, tokenizer, SENTENCE)  # every layer and head, on the CPU
dense = att_out.dense  # W_O and b_O of layer 0, on the model's device
with torch.no_grad():
    d_head = C // n_heads_model
    f_by_hand = torch.stack([  # (nh, T, d_model): f^h(x_j) for every head h and token j
        V[hd] @ dense.weight[:, hd * d_head:(hd + 1) * d_head].T for hd in range(n_heads_model)])
    moved = torch.einsum("hij,hjd->id", by_hand.to(V.device, V.dtype), f_by_hand) + dense.bias  # (T, d_model)
moved, f_by_hand = moved.cpu(), f_by_hand.cpu()
norm_error = (moved - attended.cpu()).abs().max().item()
print(f"max |sum_h sum_j alpha f(x_j) + b_O - attention output of layer 0| = {norm_error:.1e}")
# what the heads move, plus b_O, is the attention output (the difference relative to its largest entry)
claim("03.9-moved-is-attention-output", norm_error / attended.abs().max())
assert (f_by_hand - norms.transformed[0].to(f_by_hand.dtype)).abs().max() < 1e-5, "xaikit's f(x) is ours"
assert torch.allclose(norms.weights[0], cap.attentions[0].to(norms.weights.dtype)), "and alpha is the model's"

# %% [markdown]
# **Panel.** Left the weights $\alpha$, right the norms $\|\alpha_{ij} f(x_j)\|$ divided by their row sum,
# so both are on the same 0-1 scale and each row says where the moved vector of query $i$ comes from.
# Under the figure: $\|f(x_j)\|$ per token. It opens on the head that gives `[CLS]`/`[SEP]` the most
# weight in this sentence; compare the `[CLS]` column on the left and on the right.

# %%
weight_share, norm_share = norms.shares()  # (layers, heads): share of weight / of norm on [CLS] and [SEP]
top = int(weight_share.argmax())
top_layer, top_head = divmod(top, norms.n_heads)
norms_panel = AttentionNormsPanel(model, tokenizer, text=SENTENCE, layer=top_layer, head=top_head)
norms_panel

# %%
shown = norms_panel.set(text=SENTENCE, layer=top_layer, head=top_head)  # whatever was picked since
print(f"layer {top_layer}, head {top_head}: [CLS]/[SEP] get {shown.special_weight:.0%} of the weight, "
      f"{shown.special_norm:.0%} of the norm")
assert abs(shown.special_weight - weight_share[top_layer, top_head].item()) < 1e-5  # the panel's numbers

# %% [markdown]
# Kobayashi et al. found that BERT puts much weight on `[CLS]`, `[SEP]` and punctuation but that these
# tokens' $\|f(x)\|$ is small, so little is moved from them: a head with nothing useful to fetch parks its
# weight there. Measured over several sentences and, to be robust, in aggregate: over the heads that put
# more than 30% of their weight on `[CLS]`/`[SEP]`, the mean share of weight against the mean share of norm.

# %%
SENTENCES = [SENTENCE, "I like the movie", "The film was a total waste of time.",
             "A moving, beautifully acted story.", "The plot was dull, but the actors were great!",
             "I would not watch it again."][:pick(6, 3)]
print(f"{'sentence':46s} heads  weight share  norm share   ||f|| [CLS]/[SEP] vs other tokens")
measured = []
for text in SENTENCES:
    r = attention_norms(model, tokenizer, text)
    w_share, n_share = r.shares()  # (layers, heads) each
    heavy = w_share > 0.3  # the [CLS]/[SEP]-heavy heads
    f_special, f_other = r.f_norms[..., r.special].mean().item(), r.f_norms[..., ~r.special].mean().item()
    measured.append((w_share[heavy].mean().item(), n_share[heavy].mean().item(), f_special / f_other))
    print(f"{text[:46]:46s} {int(heavy.sum()):2d}/{heavy.numel()}      {measured[-1][0]:.2f}        "
          f"{measured[-1][1]:.2f}        {f_special:.2f} vs {f_other:.2f}")
if MODEL == "embedded":  # the worst sentence is checked (the table prints each); the pretrained MiniLM before
    # fine-tuning was measured to show the same pattern: it comes with the pretrained weights
    # [CLS]/[SEP]-heavy heads move much less from them than they weigh (norm share / weight share) ...
    claim("03.9-heavy-heads-move-less", max(n_mean / w_mean for w_mean, n_mean, _ in measured))
    # ... and [CLS]/[SEP] have shorter transformed vectors f(x) than the other tokens (ratio of mean norms)
    claim("03.9-special-f-shorter", max(f_ratio for _, _, f_ratio in measured))
else:
    print("another model: compare the columns yourself (the checks above are for the embedded model)")

# %% [markdown] nbgrader={"grade": true, "grade_id": "answer-5", "locked": false, "points": 0, "schema_version": 3, "solution": true}
# **Question (5 min, ★★☆): a head gives [CLS] 90% of its weight. What does it do to the sentence's representation?**
#
# <!-- BEGIN SOLUTION -->
# <details class="xk-answer"><summary>Answer</summary>
#
# Less than the weight suggests: $\|f(x_{[CLS]})\|$ is small, so the 90% moves a short vector, and the
# other tokens' longer vectors can dominate what the head adds even with 10% of the weight between them.
# Weight is one factor; the vector it multiplies is the other. Norms are still not an explanation of the
# prediction (the residual stream, LayerNorm, the FFN and later layers follow); notebook 04 turns to
# gradients. Kobayashi et al. (2020), sections 4-5.
# </details>
# <!-- END SOLUTION -->


# %% [markdown]
# ## 10. Summary: what each piece is, what it answers, where it stops
# *Lecture: Attention-based explainability, slide "Self-Attention Explanations".*
#
# | piece | what it is | what it answers | its failure or limit | where |
# | --- | --- | --- | --- | --- |
# | **embeddings and positions** | a learned vector per token plus a vector per position | what a token is, and where | a learned position table lacks the sinusoids' offset structure | §1 |
# | **scaled dot-product attention** | $\mathrm{softmax}(QK^\top/\sqrt{d_k})\,V$ | how much each token takes from each other token | the weights say who is weighed, not what is moved | §2 |
# | **dot, general, additive scores; cross-attention** | other ways to score a query against a key; queries from another sequence | which keys fit which queries | dot scores favour long keys; tanh units saturate and forget the query | §2b |
# | **dividing by $\sqrt{d_k}$** | keeps the scores' variance near 1 | why the softmax does not saturate as $d_k$ grows | large scores still give one-hot rows and vanishing gradients | §3 |
# | **masks** | $-\infty$ on the scores a token may not see | bidirectional, causal or padded reading | a masked weight is exactly 0, so it explains nothing | §4 |
# | **multi-head attention** | $h$ attentions on slices of the features, concatenated | several relations at once | which head or mean of heads to read is a choice | §5 |
# | **permutation equivariance** | $f(PX) = P f(X)$ | why positions must be added | attention alone cannot see order | §6 |
# | **the transformer block** | residual stream, LayerNorm, feed-forward network | what else changes a token's vector | attention is one step of many | §7, §8 |
# | **weight versus norm** | $\alpha_{ij}\,\lVert f(x_j) \rVert$ | how much a head moves from each token | still not an explanation of the prediction (notebook 04, lab 06) | §9 |
