"""Notebook 03 (self-attention from scratch): its claims about numbers.

Most of this notebook is construction, so most claims are identities with float32 tolerances: attention by hand
equal to torch's fused kernels and to the model's own attentions and hidden states, rows of a softmax summing
to 1, the sinusoidal table's shift matrix and offset-only similarity, permutation equivariance. Computations on
the lecture's fixed worked example (no seed enters) and on seeded random draws are identities too, as in
notebooks 01 and 02: no trained model is involved, so each gives the same value on every build up to rounding,
and its bound is the notebook's margin around that value. The empirical claims are those on the embedded
sentiment MiniLM (sections 7-9), the only ones that can move with the training seed. Tolerances are relative
to the largest value where a float32 result reaches about 8 (sections 2, 5, 7-9): comparing two summation
orders in float32 can differ by a few rounding steps on another CPU. "Most heads" (section 7) means a
majority. The count of heads that weigh "cat" among the top three of "it" is printed, not asserted, beside
matched control tokens and a sentence in which "it" is the milk; over eight random draws of the additive
scorer the notebook asserts what holds for all of them: once tanh saturates, the weights stop depending on
the query.
"""

from xaikit.course.claims import Claim

_F32 = "float32 rounding only"
_SOFTMAX = "each row is a softmax over the keys, so it sums to 1 up to float32 rounding"
_FIXED = ("the lecture's fixed worked example, no seed enters: the same value on every build up to rounding; the "
          "notebook's bound")
_DRAW = "a seeded random draw (torch.Generator), the same on every build up to rounding; the notebook's bound"
_MODEL = "measured on the embedded sentiment MiniLM, so it can move with the training seed"

CLAIMS = [
    # -- 1. tokens, embeddings and positions --
    Claim("03.1-nearby-more-similar", "Nearby positions are more similar: cos-sim of position 20 with 21 > 25 > 40 "
          "(the smaller of the two gaps).", "identity", lower=0.0, strict=True,
          why="PE(p).PE(q) = sum_i cos((p - q) w_i) with |PE(p)| fixed: a fixed function of the offset that "
              "falls over offsets 1, 5, 20 for d = 128; the gaps are far above rounding"),
    Claim("03.1-offset-only", "The similarity of two positions depends only on their offset (|sim[5, 9] - "
          "sim[30, 34]|).", "identity", upper=1e-5,
          why="PE(p).PE(q) = sum_i cos((p - q) w_i), a function of p - q alone; float32 tables"),
    Claim("03.1-one-matrix-shifts", "One matrix M_k moves every position k steps on: max |M_k PE[p] - PE[p+k]|.",
          "identity", upper=1e-5,
          why="the angle-sum identities make M_k a block rotation by k w_i; the float32 table's rounding only"),
    Claim("03.1-k-back-highest", "Used as a query-key map, M_k makes each position score the position k back "
          "highest (smallest lead over the next key).", "identity", lower=0.0, strict=True,
          why="score[p, q] = PE[p].PE[q + k] and every |PE| is the same, so by Cauchy-Schwarz q = p - k is the "
              "unique maximum; its lead (over 1) is far above rounding"),
    # -- 2. scaled dot-product attention, additive attention --
    Claim("03.2-equals-torch-sdpa", "Attention written out gives the same numbers as torch's fused "
          "scaled_dot_product_attention (max difference relative to the largest output).", "identity",
          upper=1e-5, why="the same formula; the fused kernel sums in its own order: " + _F32),
    Claim("03.2-rows-sum-to-one", "Every row of A is a probability distribution over the inputs (max |row sum "
          "- 1|).", "identity", upper=1e-5, why=_SOFTMAX),
    Claim("03.2-blind-keys-uniform", "With U_a = 0 every key looks alike and every additive weight is 1/3 (max "
          "|w - 1/3|).", "identity", upper=1e-5,
          why="the three scores of a row are the same number, so the softmax is uniform; its division need not "
              "round to the nearest float (MKL on AVX-512 gives 0.33333331), so never compared bitwise"),
    Claim("03.2-additive-floor", "Additive weights never drop below the floor e^(-2||v_a||_1)/T_k, for keys x 1, "
          "10 and 1000 (smallest weight / floor).", "identity", lower=1.0,
          why="tanh bounds every score by ||v_a||_1, so a weight is at least e^(-||v_a||_1) / (T_k e^(||v_a||_1))"),
    Claim("03.2-dot-saturates", "Keys x 10: the dot product saturates, one key takes the row of inputs 2 and 3 "
          "(smallest top weight).", "identity", lower=0.99, strict=True,
          why=_FIXED + " for 'one key takes (almost) all'"),
    Claim("03.2-dot-no-gradient", "Keys x 10: the saturated softmax passes almost no gradient (largest Jacobian "
          "norm, inputs 2 and 3).", "identity", upper=1e-3, strict=True, why=_FIXED),
    Claim("03.2-tanh-units-flat", "Keys x 10: most tanh units of the additive scorer are already flat (median "
          "slope tanh').", "identity", upper=0.05, strict=True,
          why=_DRAW + " (W_a, U_a, v_a from generator seed 0)"),
    Claim("03.2-unsaturated-uses-query", "Keys x 1: the query changes the additive weights in each of eight "
          "random draws (smallest over the draws of A's largest column range).",
          "identity", lower=0.01, strict=True,
          why="seeded random draws (torch.Generator seeds 0-7), the same on every build up to rounding; the "
              "control of 03.2-saturated-ignores-query; 0.01 is far from float32 rounding"),
    Claim("03.2-saturated-ignores-query", "Keys x 1000: every tanh unit is flat and the weights stop "
          "depending on the query (largest over the draws of A's largest column range).",
          "identity", upper=1e-6, strict=True,
          why="seeded random draws (seeds 0-7): tanh(W_a q + 1000 U_a k) rounds to sign(U_a k) in float32 for "
              "every unit, whatever q; what remains is float32 rounding of the softmax"),
    Claim("03.2-additive-spread-x10", "Keys x 10: do the additive weights come out nearly uniform on every "
          "draw? (range over eight draws of max weight - min weight)", "shown",
          why="seed 0's weights are nearly uniform (spread 0.02) but seeds 1-7 give 0.00-0.96: uniformity is an "
              "accident of the draw, so only the loss of the query is asserted"),
    # -- 2b. Luong's dot and general scores, Bahdanau's additive, cross-attention --
    Claim("03.2b-dot-by-hand", "Luong's dot score on the worked example's inputs equals the dot products "
          "computed by explicit loops (max difference).", "identity", upper=1e-6,
          why="sums of products of small integers: exact in float32 in any order"),
    Claim("03.2b-general-identity-is-dot", "The general score with W = I is the dot score (max difference).",
          "identity", upper=1e-6, why="x W k^T with W = I is x k^T; products with 0 and 1 are exact"),
    Claim("03.2b-general-is-q-dot-k", "The general score on the inputs with W = W_Q W_K^T is Q K^T (max "
          "difference relative to the largest score).", "identity", upper=1e-5,
          why="(x W_Q)(x W_K)^T = x (W_Q W_K^T) x^T, associativity; " + _F32),
    Claim("03.2b-additive-by-loop", "The additive scores equal v_a . tanh(q_i W_a + k_j U_a) computed pair by "
          "pair (max difference relative to the largest score).", "identity", upper=1e-5,
          why="the same formula, batched or one pair at a time: " + _F32),
    Claim("03.2b-cross-rows-sum-to-one", "Every row of the cross-attention weights sums to 1 (max |row sum - "
          "1|).", "identity", upper=1e-5, why=_SOFTMAX),
    Claim("03.2b-cross-equals-torch-sdpa", "Cross-attention written out gives the same output as torch's "
          "scaled_dot_product_attention on the same Q, K, V (max difference relative to the largest output).",
          "identity", upper=1e-5, why="the same formula with scale 1/sqrt(d_k); the fused kernel sums in its "
          "own order: " + _F32),
    # -- 3. why divide by sqrt(d_k) --
    Claim("03.3-variance-grows-like-dk", "var(q.k) grows like d_k and var(q.k / sqrt(d_k)) stays near 1 (largest "
          "|var / d_k - 1| over d_k = 1..256).", "identity", upper=0.2, strict=True,
          why=_DRAW + "; the sampling error of a variance over 5000-20000 samples is about 0.02-0.04",
          lecture="Vaswani et al. 2017, footnote 4: q.k has mean 0 and variance d_k"),
    Claim("03.3-cold-no-gradient", "At temperature 0.1 the worked example's softmax is saturated: no gradient "
          "(largest Jacobian norm, inputs 2 and 3).", "identity", upper=1e-6, strict=True, why=_FIXED),
    Claim("03.3-tie-keeps-ln2", "Input 1's scores tie (2, 4, 4), so its entropy stays at ln 2 at temperature 0.1 "
          "(|entropy - ln 2|).", "identity", upper=1e-4, strict=True,
          why="the two tied keys share the weight, the third gets e^(-20) of it: entropy ln 2 up to ~1e-8"),
    Claim("03.3-unscaled-entropy-collapses", "Unscaled, at d_k = 1024 the softmax saturates: mean row entropy "
          "against the scaled one's (ratio).", "identity", upper=0.2, strict=True,
          why=_DRAW + "; the scaled softmax is the control"),
    Claim("03.3-unscaled-gradient-vanishes", "Unscaled, at d_k = 1024 the softmax's gradient vanishes: mean "
          "Jacobian norm against the scaled one's (ratio).", "identity", upper=0.2, strict=True,
          why=_DRAW + "; the scaled softmax is the control"),
    Claim("03.3-scaled-entropy-stable", "Scaled by 1/sqrt(d_k), the row entropy is stable for every d_k = 1..1024 "
          "(max - min of the mean entropy).", "identity", upper=0.3, strict=True, why=_DRAW),
    Claim("03.3-one-key-takes-all", "Unscaled, d_k = 1024: one key takes almost all of a query's weight (largest "
          "weight).", "identity", lower=0.9, strict=True, why=_DRAW),
    # -- 5. multi-head attention --
    Claim("03.5-equals-torch-mha", "Our multi-head attention gives the same output and per-head weights as "
          "torch.nn.MultiheadAttention (larger relative difference).", "identity", upper=1e-5,
          why="the same weights and the same formula, summed in another order: " + _F32),
    # -- 6. permutation equivariance --
    Claim("03.6-permutation-equivariant", "Without positions, shuffling the input rows shuffles the output rows "
          "the same way: max |f(PX) - P f(X)|.", "identity", upper=1e-5,
          why="every step is row-wise or a softmax-weighted sum over all rows, so a permutation commutes with "
              "it: " + _F32),
    Claim("03.6-positions-break-it", "With positional encodings added, the shuffled output differs: max |f(PX + "
          "PE) - P f(X + PE)|.", "identity", lower=1e-2, strict=True,
          why=_DRAW + "; the control is the equivariant gap above, ~1e-7, so 1e-2 is far from rounding"),
    # -- 7. from scratch to a real model --
    Claim("03.7-layer0-recomputed", "Layer 0 recomputed from the model's own weights matches its attentions (max "
          "difference, weights in [0, 1]).", "identity", upper=1e-5,
          why="the model's own projections and softmax, written out: " + _F32),
    Claim("03.7-it-looks-at-cls", "Most heads put the largest weight of 'it' on [CLS] (share of all layers x "
          "heads).", "empirical", lower=0.5, strict=True,
          why=_MODEL + "; 'most': a majority of the heads; a head "
                       "choosing uniformly would pick [CLS] 1 time in 11"),
    Claim("03.7-it-looks-back-or-ahead", "Some heads put the largest weight of 'it' on the previous token "
          "'because', some on 'hungry' (the smaller count).", "empirical", lower=1,
          why=_MODEL + "; 'some': at least one head each, the notebook's bound"),
    Claim("03.7-cat-in-top-three", "In how many heads is 'cat' among the three keys 'it' weighs most, against "
          "the chance any key has? (share of heads)", "shown",
          why="18 of 72 heads on the seed-0 build (15-18 over the 7 builds), where the top-3 slots [CLS] leaves "
              "give each other key about 15-16 and 'because' gets 21-27: no evidence of coreference; the notebook "
              "prints every key's count beside it"),
    Claim("03.7-cat-below-because-hungry", "'it' gives 'cat' less weight on average over all heads than it gives "
          "'because' and 'hungry' (mean weight on 'cat' / the smaller of the two).", "empirical", upper=1.0,
          strict=True,
          why=_MODEL + "; bound 1 is the sentence ('less'); the other keys of the sentence are the control"),
    Claim("03.7-cat-over-milk-when-it-is-milk", "In '...because it was sour', where 'it' is the milk, does 'it' "
          "still weigh 'cat' more than 'milk'? (ratio of mean weights over all heads)", "shown",
          why=_MODEL + ": 1.05-1.19 over the 7 builds, above 1 on each but too close to 1 on seed 3 to assert; "
                       "with 'hungry' (it = the cat) the ratio is 1.20-1.43, so the weight follows the referent "
                       "only a little"),
    # -- 8. a transformer block --
    Claim("03.8-layer0-by-hand", "Layer 0 written out (attention, W_O, residual, LayerNorm, FFN) matches "
          "the model's hidden state (max difference / largest entry).", "identity", upper=1e-5,
          why="the block's own weights and operations, written out: " + _F32 + " (about 1e-7 on an AVX-512 "
              "CPU and on an H100)"),
    Claim("03.8-own-input-closest", "After the block every token's output is closest (cosine) to its own input "
          "(smallest lead over the next input).", "empirical", lower=0.0, strict=True,
          why=_MODEL + "; the residual stream keeps each token's vector as one term of the sum; the other "
                       "tokens' inputs are the control"),
    Claim("03.8-own-input-cosine", "...and still points mostly the same way: attention added context to it "
          "(smallest cosine of an output with its own input).", "empirical", lower=0.5, strict=True,
          why=_MODEL + "; the notebook's bound ('mostly the same way')"),
    # -- 9. weights vs what is moved --
    Claim("03.9-moved-is-attention-output", "What the heads move, sum_h sum_j alpha f(x_j), plus b_O is layer 0's "
          "attention output (max difference / largest entry).", "identity", upper=1e-5,
          why="Kobayashi et al. 2020's rewriting of the same linear maps: " + _F32),
    Claim("03.9-heavy-heads-move-less", "Heads with > 30% of their weight on [CLS]/[SEP] move much less from them "
          "than they weigh (worst sentence: norm share / weight share).", "empirical", upper=0.75, strict=True,
          why=_MODEL + "; the notebook's bound; the control is 1, what equal |f(x)| for every token would give",
          lecture="Kobayashi et al. 2020, sections 4-5: much weight on [CLS]/[SEP], little norm moved from them"),
    Claim("03.9-special-f-shorter", "[CLS]/[SEP] have shorter transformed vectors f(x) than the other tokens "
          "(worst sentence: ratio of the mean norms).", "empirical", upper=0.8, strict=True,
          why=_MODEL + "; the notebook's bound; the control is 1, no difference between the token kinds",
          lecture="Kobayashi et al. 2020: ||f(x)|| of [CLS], [SEP] and punctuation is small"),
]
