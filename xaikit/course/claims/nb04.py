"""Notebook 04 (Grad-SAM versus SHAP on BERT sentiment): its claims about numbers.

Identities: softmax rows summing to 1, Grad-SAM equal to its triple loop, SHAP's additivity and bookkeeping,
padding that attention masks out, the last layer's Grad-SAM mass on [CLS] alone. Everything else is measured on
the fine-tuned sentiment MiniLM, so it is empirical (bounds from a majority, zero or chance, never loosened to
the builds seen) or shown where it changes with the training seed. The lab's claims (more views, "is attention
explanation?", sanity checks, faithfulness) are notebook 06's, in ``nb06.py``.
"""

from xaikit.course.claims import Claim

_SOFTMAX = "each attention row is a softmax over the keys (padding masked to exactly 0), so it sums to 1 up to " \
           "float32 rounding"
_SEEDS = "flips with the training seed"

CLAIMS = [
    # -- 1. the model and its attention --
    Claim("04.1-attention-rows-sum-to-one", "Each real query's row of layer 0's attention sums to 1 (largest "
          "|row sum - 1|).", "identity", upper=1e-5, why=_SOFTMAX),
    Claim("04.1-lecture-labels", "Does the embedded model give the lecture's five sentences the lecture's "
          "labels? (how many of 5 agree)", "shown", lecture="the lecture's model: 1, 0, 0, 1, 0",
          why=_SEEDS + ": the near tie 'I cannot wait for next time' is positive on seeds 0 and 1 and negative on "
              "seeds 2, 3 and 4; the four clear sentences keep the lecture's labels on every build "
              "(02.8-lecture-labels)"),
    Claim("04.1-cannot-wait-p-positive", "How sure is the model that 'I cannot wait for next time' is positive? "
          "(P(positive))", "shown",
          why=_SEEDS + " (positive on seeds 0 and 1, negative on seeds 2, 3 and 4) and with the CPU kernels that "
              "trained the model"),
    Claim("04.1-cannot-leans-negative", "Training sentences with 'cannot' are more often negative than the "
          "training sentences overall (difference of the negative shares).", "empirical", lower=0.0, strict=True,
          why="zero: 'leans negative' means a larger negative share than the whole training text's (its control); "
              "a count over the fixed training text, the same for every build"),
    # -- 2. the attention explorer --
    Claim("04.2-explorer-rows-sum-to-one", "Every row of the explorer's head-mean attention is a distribution "
          "over the keys (largest |row sum - 1|).", "identity", upper=1e-5,
          why=_SOFTMAX + "; a mean of such rows sums to 1 too"),
    # -- 3. Grad-SAM --
    Claim("04.3-gradsam-equals-loop", "xaikit's vectorised Grad-SAM equals the plain triple loop (largest "
          "difference relative to the largest score).", "identity", upper=1e-5,
          why="the same sum over layers, heads and each row, in another order: float32 rounding only"),
    Claim("04.3-cls-tops-rows", "[CLS] is Grad-SAM's top token (the row it pays) in more of the five sentences "
          "than a token drawn at random would be (count of 5).", "empirical", lower=2,
          why="the control: a token drawn at random from a sentence of n tokens ([CLS] and [SEP] included) is [CLS] "
              "with probability 1/n, 0.79 of the five sentences on average (printed beside the count); the bound is "
              "that plus one sentence, rounded up to a count (a random token reaches 2 of 5 with probability 0.18, "
              "3 with 0.03); measured 3-4 of 5",
          lecture="[CLS] first in each of the lecture's three Grad-SAM rankings"),
    Claim("04.3-cls-never-tops-columns", "[CLS] never tops the column sums, the attention a token receives "
          "(count of 5).", "empirical", upper=0,
          why="the notebook's 'never': the control for 04.3-cls-tops-rows, the same product summed the other way"),
    # -- 4. SHAP --
    Claim("04.4-padding-speedup", "How much faster is padding to the longest input than padding to 512 "
          "tokens? (ratio of the times)", "shown", why="timing on a shared CPU varies"),
    Claim("04.4-padding-same-values", "Padding to the longest input gives the same SHAP values as padding to 512 "
          "(largest difference).", "identity", upper=1e-5,
          why="padding is masked out of attention (weight exactly 0), so only the float32 kernels' blocking "
              "differs"),
    Claim("04.4-shap-additivity", "SHAP's additivity: base value + sum of the SHAP values = f(x) (largest "
          "error over the five sentences).", "identity", upper=1e-4,
          why="efficiency of the Partition explainer: its values telescope from f(masked) to f(x), float32 "
              "logits of size ~1"),
    Claim("04.4-shap-top-word-pulls-down", "The largest |SHAP| of 'hates', 'boring', 'cannot', 'confused' is "
          "that word, pulling the positive logit down, in more of the four sentences than random scores would give "
          "(count of 4).", "empirical", lower=2,
          why="the control: random scores put the largest |score| on the word with probability 1/n (n tokens, [CLS] "
              "and [SEP] included) and give it the negative sign half the time, 0.31 of the four sentences on average "
              "(printed beside the count); the bound is that plus one sentence, rounded up to a count (random scores "
              "reach 2 of 4 with probability 0.03); measured 3-4 of 4",
          lecture="the lecture's BERT-base: 'cannot' +1.07, 'wait' +1.28 towards positive"),
    Claim("04.4-credit-split-adds-up", "Each SHAP value is the token's own effect plus its shares of the groups' "
          "left-overs (largest |own + shares - value|).", "identity", upper=1e-9,
          why="credit_split reads SHAP's own bookkeeping (hierarchical_values, clustering) back; float64 sums"),
    Claim("04.4-special-own-effect-zero", "[CLS] and [SEP] have no effect of their own: the masker never hides "
          "them (largest |own effect|).", "identity", upper=1e-4,
          why="the text masker keeps the special tokens in every variant, so hiding them changes no input; what "
              "is left is float32 noise of logits up to ~3 evaluated in batches of other padding (2.4e-6 "
              "seen), the tolerance of the additivity check"),
    Claim("04.4-special-zero-averaged", "With fixed_context=None [CLS] and [SEP] get 0 (largest |value|).",
          "identity", upper=1e-4,
          why="both contexts are averaged at every split, nothing is left on the groups to hand down, and the "
              "special tokens have no effect of their own"),
    Claim("04.4-special-far-from-zero", "With the lecture's fixed_context=1 [CLS]/[SEP] values are far from zero "
          "(largest |value|).", "empirical", lower=0.1, strict=True,
          why="the notebook's bound; the control is fixed_context=None, where they are 0 (04.4-special-zero-averaged)"),
    Claim("04.4-special-under-half-top-word", "...yet under half of the sentence's largest word value (largest "
          "ratio over the five sentences).", "empirical", upper=0.5, strict=True,
          why="the notebook's bound: never the top token, with room to spare"),
    # -- 4b. LIME --
    Claim("04.4b-lime-linear-exact", "On a function linear in the presence vector, LIME's surrogate fitted to all "
          "2^d samples without a penalty returns its coefficients (largest difference).", "identity", upper=1e-6,
          why="weighted least squares on every presence vector: the linear function is in the model class and "
              "the samples determine it, so the fit is exact whatever the (positive) kernel weights; float64"),
    Claim("04.4b-lime-ridge-same", "xaikit's closed-form LIME fit equals scikit-learn's Ridge (what the lime "
          "package fits) on the same samples, outputs and kernel weights (largest difference of the words' "
          "coefficients relative to the largest).", "identity", upper=1e-6,
          why="the same weighted ridge problem with an unpenalised intercept, solved twice in float64"),
    Claim("04.4b-shap-same-every-run", "SHAP's Partition explainer run twice on the review sentence at LIME's "
          "budget gives the same values (largest difference).", "identity", upper=1e-6,
          why="with a given masker SHAP evaluates the same masked texts in the same batches: nothing is random"),
    Claim("04.4b-lime-same-seed-same-scores", "LIME with the same seed gives the same scores (largest "
          "difference, on the review sentence).", "identity", upper=1e-6,
          why="the seed fixes the samples (NumPy's RandomState), and the same samples go through the model in "
              "the same batches"),
    Claim("04.4b-shapley-kernel-is-shapley", "The LIME regression with the Shapley kernel on all 2^4 samples "
          "gives the Shapley values of a toy function with an interaction (largest difference).", "identity",
          upper=1e-5, why="Lundberg & Lee 2017, Theorem 2 (Kernel SHAP); the two pinned samples weigh 1e8 "
                          "instead of infinity, which leaves an error of order 1e-8"),
    # -- 4c. homework 1: the attention and its gradient captured by the student --
    Claim("04.4c-own-capture-equals-gradsam", "The student's capture of A and dS/dA, reduced by the student's "
          "Grad-SAM, gives xaikit's Grad-SAM scores (largest difference relative to the largest score).",
          "identity", upper=1e-5,
          why="the same forward and backward pass and the same sum (a wrong answer falls back to the reference): "
              "float32 rounding only"),
    # -- 5. Grad-SAM against SHAP --
    Claim("04.5-shap-cls-never-first", "SHAP never puts [CLS] first (share of the five sentences, each "
          "explaining its predicted class).", "empirical", upper=0.0,
          why="the notebook's 'never'; section 4 explains why: [CLS] gets only shares of interactions"),
    Claim("04.5-last-layer-cls-share-one", "In the last layer all of the Grad-SAM mass is on the [CLS] row "
          "(|share - 1|).", "identity", upper=1e-6,
          why="the classifier reads only the last layer's [CLS] output, so the gradient of every other query "
              "row of that layer is exactly 0"),
]
