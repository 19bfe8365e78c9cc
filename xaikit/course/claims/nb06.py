"""Notebook 06 (lab: is attention explanation?): its claims about numbers.

Identities: LRP's conservation, the last layer's [CLS] row shuffle being the whole layer's, the head that raw
attention and rollout never read. Everything else is measured on the fine-tuned sentiment MiniLM, so it is
empirical, with the bound the notebook asserts (a majority, zero, chance, the papers' statements, a random
order or a pretrained encoder as the control), measured by ``benchmarks/claims_matrix.py`` over training seeds
0-4 and AVX2 kernels and never loosened to the builds seen. What changes with the training seed is shown, and
its ``why`` (printed beside the value) says why in plain words.
"""

from xaikit.course.claims import Claim

_SEEDS = "it changes with the training seed"
_WP = ("Wiegreffe & Pinter's diagnostic: the notebook's bound (on every diagnostic seed by 0.01, on average by "
       "0.025; the smallest gains over 10 diagnostic seeds of one sentiment model were 0.023-0.030)")
_WP_SHOWN = ("Wiegreffe & Pinter's diagnostic, the model's attention against {against}: the gain depends on the "
             "training run, not only on the diagnostic's seeds: for some models it is negative")
_DATA_RAND = ("the shuffled-label model and its control (the same 2,000 texts with their real labels), on 6 "
              "held-out sentences: printed beside the methods whose change is asserted")
_DATA_RAND_METHODS = (("Grad-SAM", "gradsam"), ("Raw attention", "attention"), ("Rollout", "rollout"),
                      ("Gradient-weighted attention", "grad-attention"), ("Chefer LRP", "chefer"))
_WP_PAPER = "Wiegreffe & Pinter 2019, Table 3: their LSTMs' own attention guided the diagnostic best"

CLAIMS = [
    # -- 1. more views of the same sentence --
    Claim("06.1-ig-complete", "IG with 64 right-Riemann steps is complete within 5% on all five sentences "
          "(largest relative gap).", "empirical", upper=0.05, strict=True, lecture="5%",
          why="the IG paper's tolerance; measured < 5% on the seven builds of the claims matrix, worst 0.031 (16 steps gave 11% on seed 1)"),
    Claim("06.1-rollout-cls-keeps-most", "Rollout keeps most of [CLS]'s flow on [CLS] itself (smallest share "
          "over the five sentences).", "empirical", lower=0.5, strict=True,
          why="'most': more than half; the residual identity carries each position forward"),
    Claim("06.1-gradsam-nearer-attention-than-ig", "Does Grad-SAM rank words more as raw attention does than as "
          "IG does? (difference of the mean Spearman correlations)", "shown",
          why="a mean over five sentences only, so one sentence's ranks can move it; it changes with the "
              "training seed"),
    Claim("06.1-lrp-conserved", "Chefer et al.'s LRP conserves the relevance block by block (largest relative "
          "change of the total).", "identity", upper=1e-9, strict=True,
          why="the z+ rule, the rescaled splits and the pass-through rules keep the total by construction; "
              "computed in float64"),
    Claim("06.1-lrp-cls-keeps-most", "How much of the LRP total still sits on [CLS]'s position at block 0's "
          "input? (smallest share over the five sentences)", "shown",
          why="it changes with the training seed: for some models the relevance of one sentence reaches block "
              "0's input mostly away from [CLS]"),
    # -- 2. erasure and deletion --
    Claim("06.2-erase-top-beats-random", "Erasing the top-attended word moves the output more than erasing a "
          "random word in most sentences (share of sentences; a coin flip would give half).", "empirical",
          lower=0.5, strict=True,
          why="the control: the random word, erased in the same sentence; if the top-attended word mattered no more "
              "than a random one, each sentence would be a coin flip, 0.5; measured 0.70-1.00 (14 of 20 sentences "
              "at the lowest, which a coin flip reaches with probability 0.06)",
          lecture="Serrano & Smith 2019: the top-attended item matters more than a random one"),
    Claim("06.2-erasure-rarely-flips", "Erasing either the top-attended or a random word rarely flips the "
          "decision (% of sentences flipped by neither).", "empirical", lower=80,
          why="the notebook's bound for 'rarely'",
          lecture="Serrano & Smith 2019: erasing the top-attended item rarely flips the decision"),
    Claim("06.2-erasure-sets-flip-few", "Erasing word after word in one layer flips few sentences by any ranking "
          "(largest % flipped).", "empirical", upper=35, why="the notebook's bound for 'few'"),
    Claim("06.2-empty-text-p-positive", "Where deletion ends: which class does the model give the empty text "
          "[CLS] [SEP]? (P(positive))", "shown",
          why="printed so that the per-class flips can be read: every sentence of the other class flips by the end "
              "of every order, random included, so those flips say nothing about the orders"),
    Claim("06.2-deletion-flips-empty-class", "How many sentences of the empty text's own class, the ones it does not "
          "flip by construction, does deletion flip? (mean % over the rankings)", "shown",
          why="a share of about 10 sentences of one class; it separates the orders only with the random "
              "control beside it"),
    Claim("06.2-deletion-budget-over-random", "With at most half the words deleted, do the gradient, gradient x "
          "attention, SHAP and IG orders flip more sentences than a random order? (their mean % minus "
          "random's)", "shown",
          why="against the control, a random order of the same words deleted the same way (Hooker et al. 2019); "
              "the margin changes with the training seed and is 0 for one of them"),
    Claim("06.2-ig-order-vs-64-steps", "Does the lab's few-step IG order the words as IG with 64 steps does, on the "
          "sentences with the largest completeness gaps? (smallest Kendall tau-b)", "shown",
          why="2-3 sentences of this model only: it shows how much the gap can reorder the words here"),
    Claim("06.2-deletion-gradient-beats-random", "By deletion, does the attention gradient's order flip sooner "
          "than a random order? (difference of the fractions deleted)", "shown",
          why="it changes with the training seed: for some models the gradient's order needed more deletions "
              "than a random one"),
    Claim("06.2-deletion-attention-needs-more", "Do orders read from attention need more deletions than those "
          "from gradients or the input? (difference of the group means)", "shown",
          why="group means: attention, Grad-SAM vs gradient, gradient x attention, SHAP, IG; positive for every "
              "training seed tried, but not always by the margin of 0.05 that 'more' would need"),
    # -- 3. shuffling the attention, and rank agreement --
    Claim("06.3-shuffle-last-layer-barely-moves", "Shuffling the last layer's attention barely moves the output "
          "(median TVD).", "empirical", upper=0.05, strict=True, why="the notebook's bound for 'barely'",
          lecture="Jain & Wallace 2019: permuting attention often leaves the output unchanged"),
    Claim("06.3-shuffle-earlier-layer-moves-more", "Some earlier layer's shuffle moves the output more than the "
          "last layer's (ratio last / largest earlier).", "empirical", upper=1.0, strict=True,
          why="the text's 'more than the last layer's'. A factor of four (bound 0.25) does not hold on every build: "
              "the CUDA build (fast mode) gives 0.26, the CPU builds in student mode at most 0.13. The factor is "
              "printed. "
              "Confounded as a statement about depth: in the last layer only the [CLS] row reaches the "
              "classifier, in earlier ones every shuffled row does; 06.3-shuffle-cls-row-earlier-moves-less is "
              "the like-with-like control"),
    Claim("06.3-shuffle-cls-row-last-is-all-rows", "In the last layer, shuffling the [CLS] row alone is the same "
          "experiment as shuffling every row (largest |TVD difference| over the sentences).", "identity",
          upper=1e-6,
          why="the same shuffles are drawn (one generator, same seed) and only the last layer's [CLS] output "
              "reaches the classifier, so the logits are the same up to float32 blocking"),
    Claim("06.3-shuffle-cls-row-earlier-moves-less", "Shuffling the [CLS] query row alone, does an earlier "
          "layer's move the output less than the last layer's? (ratio largest earlier / last)", "shown",
          why="the like-with-like control for 06.3-shuffle-earlier-layer-moves-more, the same row at every depth; "
              "above 1 for some training seeds and below it for others"),
    Claim("06.3-shuffle-cls-row-share-of-factor", "Shuffling the [CLS] row alone leaves a small share of the "
          "all-rows factor between the largest earlier layer and the last (cls-row factor / all-rows factor).",
          "empirical", upper=0.5, strict=True,
          why="a half: most of the earlier layers' effect comes from the other rows. It holds where "
              "06.3-shuffle-cls-row-earlier-moves-less flips with the training seed; computed from the same runs' "
              "medians (the product of the two logged ratios), measured on all seven builds"),
    Claim("06.3-tau-medians-positive", "Attention, gradient and LOO agree: every pair's median Kendall tau-b is "
          "positive (smallest median).", "empirical", lower=0.1, strict=True,
          why="the notebook's bound, above 0 (no agreement)",
          lecture="Jain & Wallace 2019: weak to moderate correlation, mean tau often well below 0.5"),
    Claim("06.3-tau-medians-weak", "...but weakly (largest median tau-b).", "empirical", upper=0.45, strict=True,
          why="the notebook's bound, below 0.5 as in Jain & Wallace",
          lecture="Jain & Wallace 2019: mean tau often well below 0.5"),
    Claim("06.3-tau-gradient-vs-attention-on-loo", "Does the gradient agree with LOO more than "
          "attention does? (median tau gradient-LOO minus attention-LOO)", "shown",
          why="the three medians lie too close together to assert an order"),
    # -- 4. Wiegreffe & Pinter's diagnostic --
    Claim("06.4-wp-attention-over-uniform-min", "Pooled with the model's attention, does the diagnostic beat "
          "uniform weights on every diagnostic seed? (smallest gain)", "shown",
          why=_WP_SHOWN.format(against="uniform weights"),
          lecture=_WP_PAPER),
    Claim("06.4-wp-attention-over-uniform-mean", "...and on average? (mean gain over the diagnostic seeds)",
          "shown",
          why=_WP_SHOWN.format(against="uniform weights"),
          lecture=_WP_PAPER),
    Claim("06.4-wp-attention-over-learned-min", "Does the model's attention beat weights the diagnostic learns "
          "itself on every diagnostic seed? (smallest gain)", "shown",
          why=_WP_SHOWN.format(against="learned weights"),
          lecture=_WP_PAPER),
    Claim("06.4-wp-attention-over-learned-mean", "...and on average? (mean gain)", "shown",
          why=_WP_SHOWN.format(against="learned weights"),
          lecture=_WP_PAPER),
    Claim("06.4-wp-uniform-over-pretrained-min", "The control, the encoder's attention before fine-tuning, does "
          "worse than uniform weights on every diagnostic seed (smallest gain).", "empirical", lower=0.01,
          strict=True, why=_WP + "; the pretrained attention never saw the task"),
    Claim("06.4-wp-uniform-over-pretrained-mean", "...and on average by a margin (mean gain of uniform over "
          "pretrained attention).", "empirical", lower=0.025, strict=True,
          why=_WP + "; the pretrained attention never saw the task"),
    Claim("06.4-wp-context-still-matters", "The diagnostic stays well below the transformer itself (transformer's "
          "accuracy minus the best seed's).", "empirical", lower=0.03, strict=True,
          why="the notebook's margin for 'well below'"),
    Claim("06.4-wp-learned-vs-uniform", "Do learned weights do better than uniform ones? (mean accuracy "
          "difference)", "shown", why="within about two points either way: its sign flips between runs"),
    # -- 5. sanity checks: randomise the model (Adebayo et al. 2018) --
    Claim("06.5-sanity-head-leaves-attention", "Re-drawing the head alone leaves raw attention's and rollout's "
          "rankings unchanged (the smaller of their two mean Spearman similarities).", "identity",
          lower=1 - 1e-6, why="neither reads the head: the same attention weights give the same scores, up to "
                              "float32 rounding"),
    Claim("06.5-sanity-rollout-survives", "With the top 3 of 6 blocks re-drawn rollout keeps most of its "
          "ranking (mean Spearman).", "empirical", lower=0.7,
          why="seeds 0-4 (6 held-out sentences): 0.85-0.89; the AVX2 builds of seeds 0 and 1: 0.86, 0.88; the "
              "bound leaves a margin of 0.14"),
    Claim("06.5-sanity-rollout-over-gradsam", "...far more than Grad-SAM does (rollout's similarity minus "
          "Grad-SAM's, top 3 blocks re-drawn).", "empirical", lower=0.3,
          why="seeds 0-4: 0.44-0.64; the AVX2 builds of seeds 0 and 1: 0.54, 0.47; the bound leaves a margin of 0.14"),
    Claim("06.5-sanity-gradients-forget", "With every block re-drawn, how much of their ranking do the gradient-based "
          "views keep? (the largest mean Spearman of Grad-SAM, gradient-weighted attention, Chefer LRP)",
          "shown", why="low for every training seed tried, but too close to 0.3 for one of them to assert "
                       "'little'"),
    Claim("06.5-sanity-gradsam-head", "Grad-SAM's ranking with the head re-drawn (mean Spearman).", "shown",
          why="the rectified gradient is multiplied by the last block's attention, which the head does not "
              "change, so the ranking follows the attention"),
    # -- 5. sanity checks: the data randomisation test (Adebayo et al. 2018, section 4) --
    Claim("06.5-data-rand-fits", "The model fine-tuned on shuffled labels (the recipe's 391 steps over 2,000 "
          "training texts) fits its shuffled training labels (training accuracy against them).", "empirical",
          lower=0.9, lecture="Adebayo et al. 2018 train on random labels until the network fits its training set",
          why="the bound is what 'fits' means here, well above what one answer for all gives; seeds 0-4 and the AVX2 "
              "builds of seeds 0 and 1: 0.956-0.971 (one answer for all would fit about 0.55)"),
    Claim("06.5-data-rand-accuracy", "What the shuffled-label model learned does not carry to new sentences: "
          "its held-out accuracy is near chance.", "empirical", upper=0.6,
          lecture="Adebayo et al. 2018: at chance on the test set once the random labels are fit",
          why="near chance: the larger class is 0.507 of the held-out sentences; 7 builds 0.48-0.53, while the "
              "real-label models reached 0.85-0.87 and the control (the same 2,000 texts, real labels) 0.83"),
    *[Claim(f"06.5-data-rand-{cid}", f"{method}'s ranking on the trained and the shuffled-label model (mean "
            "Spearman).", "shown", why=_DATA_RAND) for method, cid in _DATA_RAND_METHODS if cid != "rollout"],
    Claim("06.5-data-rand-rollout", "Rollout still ranks the tokens on the shuffled-label model largely as on the "
          "trained model (mean Spearman).", "empirical", lower=0.5,
          why="the notebook's bound for 'largely as on the trained model'; 7 builds: 0.69-0.83, the highest of the five "
              "methods on every build (the others 0.13-0.45)"),
    *[Claim(f"06.5-data-rand-labels-{cid}", f"What the labels alone change in {method}'s ranking: its similarity "
            "to the trained model's on the control (same texts, real labels) minus on the shuffled-label model.",
            "empirical", lower=0.2,
            why="a method that passes the data randomisation test: the labels change its ranking by a fifth at "
                "least (7 builds: Grad-SAM 0.42-0.66, gradient-weighted attention 0.56-0.70, Chefer LRP "
                "0.49-0.67)") for method, cid in _DATA_RAND_METHODS if cid in ("gradsam", "grad-attention", "chefer")],
    *[Claim(f"06.5-data-rand-labels-{cid}", f"What the labels alone change in {method}'s ranking: its similarity "
            "to the trained model's on the control (same texts, real labels) minus on the shuffled-label model.",
            "shown", why=_DATA_RAND + note) for method, cid, note in (
        ("Raw attention", "attention", ""),
        ("Rollout", "rollout", "; the smallest of the five methods for every training seed tried, so rollout "
                               "'gains least from the real labels'"))],
    # -- 6. comprehensiveness and sufficiency --
    Claim("06.6-not-beating-random", "How many (ranking, measure) pairs do no better than a random "
          "order?", "shown",
          why=_SEEDS + ": for some models an order did no better than random"),
    Claim("06.6-gradient-orders-over-random-comp", "The orders that score sensitivity (gradient, gradient x "
          "attention, SHAP, IG) are more comprehensive than a random order (their mean minus random's).", "empirical", lower=0.0, strict=True,
          why="zero, against the control, a random order of the same words; the group's mean, as in section 2 "
              "(the part of 'random is the worst' that is not seed-fragile)"),
    Claim("06.6-gradient-orders-over-random-suff", "The orders that score sensitivity (gradient, gradient x "
          "attention, SHAP, IG) are more sufficient than a random order (random's minus their mean).", "empirical", lower=0.0, strict=True,
          why="zero, against the control, a random order of the same words; the group's mean, as in section 2"),
    Claim("06.6-attention-orders-less-comprehensive", "Deleting the top words of attention and Grad-SAM removes "
          "less than those of gradient, gradient x attention, SHAP, IG (difference of group means; the groups "
          "fixed by what each order scores, section 2).", "empirical", lower=0.0,
          strict=True,
          why="zero; group means, as in section 2: best-of-one-group against worst-of-the-other is a near tie on "
              "seed 1 (Grad-SAM 0.134 vs gradient 0.132)"),
    Claim("06.6-lrp-tau-grad-weighted", "Chefer et al.'s relevance orders the words nearly as gradient-weighted "
          "attention does (median tau-b).", "empirical", lower=0.7, strict=True, why="the notebook's bound"),
    Claim("06.6-lrp-tau-grad-weighted-over-loo", "...far more than as leave-one-out does (difference of the "
          "median taus).", "empirical", lower=0.3, strict=True, why="the notebook's margin for 'far more'"),
    Claim("06.6-lrp-tau-loo-weak", "With leave-one-out Chefer et al.'s relevance agrees only weakly (median "
          "tau-b).", "empirical", upper=0.5, strict=True, why="the notebook's bound, as in Jain & Wallace's "
          "reading"),
    Claim("06.6-lrp-more-comprehensive", "Chefer LRP is more comprehensive than raw attention and Grad-SAM "
          "(minus the better of the two).", "empirical", lower=0.05, strict=True,
          why="the notebook's margin; the attention-based orders it is read from are the comparison"),
    Claim("06.6-lrp-more-sufficient", "...and is it more sufficient? (the better sufficiency of attention and "
          "Grad-SAM minus Chefer LRP's)", "shown",
          why="the margin nearly vanishes for some training seeds, where Chefer LRP was hardly more sufficient "
              "than the attention orders"),
]
