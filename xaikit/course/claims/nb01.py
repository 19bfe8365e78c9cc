"""Notebook 01 (gradients as explanations, and how they fail): its claims ledger.

Sections 1-3 work on fixed toy functions, so their claims are identities (analytic facts of the formula, up to
float rounding); sections 4-5 measure the digits CNN, whose training seed is the cache's
(``python -m xaikit prepare --seed N``), so their claims are empirical. Bounds come from the lecture or a
control, never from the values the builds gave; the sanity-check bounds of section 5 come from
``benchmarks/sanity_checks.py``
(training seeds 0-2, randomisation seeds 0-2, two CPU kernel sets).
"""

from xaikit.course.claims import Claim

_SANITY = ("the notebook's bound, measured by benchmarks/sanity_checks.py (training seeds 0-2, randomisation "
           "seeds 0-2, 8 or 12 digits, two CPU kernel sets)")

CLAIMS = [
    # -- 1. gradient and gradient x input ------------------------------------------------------------------
    Claim("01.1-gradient-is-slope",
          "The gradient is the slope: a step h along x_i changes f by about h * g_i (central differences).",
          "identity", upper=1e-3,
          why="the gradient is the derivative: a central difference with h = 1e-3 differs from it by O(h^2) "
              "(~1e-7 here) plus float32 rounding of f divided by h (~3e-5)"),
    Claim("01.1-gxi-misses-change",
          "Gradient x input is only a first-order estimate: on this curved f it misses much of f(x) - f(0).",
          "identity", lower=0.1, strict=True,
          why="a fixed formula: at x = (1, -0.5), f(x) - f(0) = sigmoid(1.7) - sigmoid(0.2) = 0.308 while "
              "gradient x input adds up to 0.146; the gap 0.162 belongs to the formula, not to a build"),
    Claim("01.1-plateau-attributions-small",
          "Where f is flat (f near 1 at (2.5, 2.5), near 0 at (-2.5, 2.5)) both attributions shrink.",
          "identity", upper=0.05, strict=True,
          why="a fixed formula: sigmoid'(z) at z = 6.45 and z = -11.05 is below 2e-3, so gradient and "
              "gradient x input stay below 0.014 there"),
    # -- 2. saturation ---------------------------------------------------------------------------------------
    Claim("01.2-saturated-gradient-zero",
          "At x1 = x2 = 1 the output has saturated: both partial derivatives (and gradient x input) are 0.",
          "identity", upper=1e-6,
          why="exactly 0: min(1, x1 + x2) takes the constant branch of torch.where, whose backward passes 0 "
              "(no arithmetic involved); the tolerance is only the ledger's convention"),
    Claim("01.2-occlusion-misses-both",
          "Occlusion does not rescue us: with either input removed, the other still reaches 1 (both get 0).",
          "identity", upper=1e-6,
          why="min(1, 1 + 0) = min(1, 1 + 1) = 1: removing one input changes nothing, exactly"),
    Claim("01.2-ig-splits-equally",
          "Integrated Gradients splits the change of 1 equally: 0.5 to each input.",
          "identity", upper=1e-6,
          why="64 midpoint steps: the path x1 + x2 = 2 alpha crosses the kink at alpha = 1/2, so exactly 32 "
              "midpoints see the gradient (1, 1), each adding 1/64 per input; symmetry of the path"),
    Claim("01.2-ig-completeness",
          "IG adds up to f(x) - f(x') (completeness).",
          "identity", upper=1e-6,
          why="completeness of IG, exact here because the midpoint sum of a piecewise-constant gradient whose "
              "kink falls between midpoints is the integral; float32 rounding only"),
    Claim("01.2-below-kink-agree",
          "Below the kink (x = (0.3, 0.4)) gradient x input, occlusion and IG agree: each input gets x_i.",
          "identity", upper=1e-6,
          why="f = x1 + x2 is linear there, and each method gives x_i to a linear f; float32 rounding only"),
    Claim("01.2-attributions-at-0.8",
          "At x = (0.8, 0.8): gradient and gradient x input 0, occlusion 0.2 each (sum 0.4, not 1), IG 0.5 each.",
          "identity", upper=1e-6,
          why="the largest deviation from those values: x1 + x2 = 1.6 is past the kink (gradient exactly 0); "
              "f(0, 0.8) = 0.8; the path crosses the kink at alpha = 0.625 = 40/64 midpoints, 0.8 * 40/64 = 0.5"),
    # -- 3. thresholding ----------------------------------------------------------------------------------------
    Claim("01.3-gradient-jumps",
          "The gradient of max(0, x - 10) is 0 just below 10 (at 9.99) and 1 just above (at 10.01).",
          "identity", upper=1e-6,
          why="the ReLU's derivative is the 0/1 step: its backward multiplies by a mask, exactly"),
    Claim("01.3-outputs-barely-differ",
          "Inputs 9.99 and 10.01 get completely different explanations although the outputs barely differ.",
          "identity", upper=0.011, strict=True,
          why="max(0, 10.01 - 10) - max(0, 9.99 - 10) = 0.01, up to float32 rounding of 10.01 (~2e-7)"),
    Claim("01.3-gxi-is-ten-plus-eps",
          "At x = 10 + eps, gradient x input gives the input 10 + eps although the output is only eps "
          "(|gradient x input - (10 + eps)|, eps = 0.01).",
          "identity", upper=1e-5,
          why="the gradient is exactly 1 past the kink, so gradient x input is x itself; float32 rounding of "
              "10.01 (~1e-6)", lecture="Shrikumar et al. 2017, section 2.2, figure 2: 10 + eps against eps"),
    Claim("01.3-deeplift-is-output",
          "DeepLIFT against the reference x' = 0 gives the input f(x) - f(x') = eps, the change of the output.",
          "identity", upper=1e-5,
          why="one ReLU: DeepLIFT's multiplier is (f(x) - f(x')) / (x - x'), times x - x' (summation-to-delta); "
              "float32 rounding only"),
    Claim("01.3-softplus-gap-log2-over-beta",
          "As beta grows softplus tends to the ReLU: the largest gap is log 2 / beta, at x = 10 (beta 1-1000).",
          "identity", upper=1e-6,
          why="softplus_beta(z) - max(0, z) is largest at z = 0, where it is log(2) / beta; the float64 grid "
              "contains x = 10"),
    Claim("01.3-softplus-gradient-half",
          "Whatever beta is, the softplus gradient at x = 10 is 0.5 (beta 1, 10, 100, 1000).",
          "identity", upper=1e-6,
          why="the gradient is sigmoid(beta (x - 10)), and sigmoid(0) = 1/2 for every beta"),
    Claim("01.3-softplus-ramp",
          "For every beta the gradient climbs from under 0.02 to over 0.98 between 10 - 4/beta and 10 + 4/beta.",
          "identity", upper=0.02, strict=True,
          why="the largest of gradient(10 - 4/beta) and 1 - gradient(10 + 4/beta) over beta = 1, 10, 100: the "
              "gradient is sigmoid(beta (x - 10)), so both are sigmoid(-4) = 0.018 for every beta"),
    # -- 4. noisy gradients and SmoothGrad ---------------------------------------------------------------------
    Claim("01.4-digits-accuracy",
          "The classifier: a small CNN trained in seconds on scikit-learn's 8x8 digits (test accuracy).",
          "empirical", lower=0.9, strict=True,
          why="the notebook's bound: a classifier worth explaining (chance is 0.1)"),
    Claim("01.4-smoothgrad-sigma0-is-gradient",
          "With sigma = 0 every copy is x itself, so SmoothGrad equals the raw gradient.",
          "identity", upper=1e-5,
          why="largest difference relative to the gradient's largest |value|: x + 0 * noise is x, so SmoothGrad "
              "averages n copies of the same gradient; a batch of n may round differently (float32)"),
    Claim("01.4-squared-is-var-plus-mean2",
          "The three variants summarise the same n gradients: mean(g^2) = var(g) + mean(g)^2, pixel by pixel.",
          "identity", upper=1e-4,
          why="largest difference relative to mean(g^2) pixel by pixel (the notebook's rtol): an algebraic "
              "identity of the population variance, up to float32 rounding"),
    Claim("01.4-raw-gradient-change",
          "How far does the raw gradient move under an invisible nudge (2% noise)? (the median printed above)",
          "shown",
          why="its size depends on the trained CNN (training seed, CPU kernels); the claims below compare it "
              "with SmoothGrad's change and with SmoothGrad's own sampling noise"),
    Claim("01.4-smoothgrad-moves-less",
          "SmoothGrad's map, drawn afresh, moves less than the raw gradient under the nudge (ratio of medians).",
          "empirical", upper=1.0, strict=True,
          why="bound 1: 'less' (the size of the ratio depends on the trained CNN); "
              "control for SmoothGrad's own sampling noise: 01.4-resampling-noise, two draws on the same image"),
    Claim("01.4-smoothgrad-less-on-most",
          "SmoothGrad moves less than the raw gradient on most images (share of the test digits).",
          "empirical", lower=0.5, strict=True,
          why="'most': more than half of the images, the notebook's bound"),
    Claim("01.4-resampling-noise",
          "Much of what SmoothGrad moves is its own sampling noise: two draws on the same image differ by "
          "well over half as much (ratio of medians).",
          "empirical", lower=0.6, strict=True,
          why="the notebook's bound for 'well over half'; the control of 01.4-smoothgrad-moves-less"),
    Claim("01.4-smoothgrad-same-draw",
          "With the same noise draw on both images, SmoothGrad changes less than half as much as the raw "
          "gradient under the nudge (ratio of medians).",
          "empirical", upper=0.5, strict=True,
          why="the notebook's bound for 'less than half'; the same seed removes the sampling noise of "
              "01.4-resampling-noise, so this is the nudge's own effect on the smoothed map"),
    Claim("01.4-occlusion-is-the-loop", "xaikit's occlusion equals the mean drop of the logit over the 2x2 patches "
          "covering each pixel, computed by a plain loop (largest difference relative to the largest value).",
          "identity", upper=1e-5,
          why="the same forward passes, batched against one at a time: float32 rounding of the CNN only"),
    # -- 5. sanity checks ---------------------------------------------------------------------------------------
    Claim("01.5-cascade-gradient-changes",
          "Gradient and SmoothGrad pass: once top layers are re-drawn their |maps| are almost uncorrelated "
          "with the trained model's (largest mean Spearman).",
          "empirical", upper=0.4, strict=True, why=_SANITY),
    Claim("01.5-cascade-gradient-all-layers",
          "With every layer randomised, gradient and SmoothGrad |maps| keep little of the trained model's "
          "ranking (largest mean Spearman).",
          "empirical", upper=0.3, strict=True, why=_SANITY),
    Claim("01.5-cascade-gxi-ig-keep-input",
          "Gradient x input and IG keep a high rank correlation whatever is randomised (smallest mean "
          "Spearman |map|).",
          "empirical", lower=0.8, strict=True, why=_SANITY),
    Claim("01.5-cascade-ssim-gradient",
          "Gradient's and SmoothGrad's maps lose their structure once layers are re-drawn (largest mean SSIM).",
          "empirical", upper=0.3, strict=True, why=_SANITY),
    Claim("01.5-cascade-ssim-gxi-ig",
          "Gradient x input's and IG's maps keep part of their structure whatever is randomised (smallest "
          "mean SSIM).",
          "empirical", lower=0.25, strict=True, why=_SANITY),
    Claim("01.5-cascade-ssim-gxi-over-gradient",
          "Gradient x input's and IG's maps keep an SSIM well above the gradient's and SmoothGrad's "
          "(smallest difference).", "empirical", lower=0.1, strict=True,
          why=_SANITY + "; the comparison itself, which the two absolute bounds (0.25, 0.3) do not imply. Its worst "
              "is bounded by the two claims' worsts over the seven builds (0.401 - 0.184)"),
    Claim("01.5-cascade-signed-changes",
          "Without absolute values all four correlations drop near 0: the signs follow the model (largest "
          "|mean Spearman|).",
          "empirical", upper=0.3, strict=True, why=_SANITY),
    Claim("01.5-gxi-ig-digit-pixels",
          "On the digit's own pixels (x > 0), with every layer randomised, how well do gradient x input's and IG's "
          "maps still rank the pixels as the trained map does? (mean Spearman |map|)",
          "shown",
          why="its size depends on the trained CNN and the randomisation seed: 0.27-0.48 per method and seed, "
              "0.32-0.38 as the notebook averages them, over the 7 builds (12 digits), where the all-pixel "
              "value is 0.89-0.92; the point is the drop, "
              "made by the tied zero background, which the table prints beside it"),
    Claim("01.5-digit-left-above-gradient",
          "On the digit's pixels, what is left of their correlation stays above the gradient's (the smaller "
          "of the two minus the gradient's).",
          "empirical", lower=0.0, strict=True,
          why="zero, against the control: the gradient's map, which has no input factor"),
    Claim("01.5-trained-gxi-follows-input",
          "Over all 64 pixels, does the trained model's |gradient x input| rank the pixels much as the input "
          "itself does? (mean Spearman with x)",
          "shown",
          why="a bound > 0.8 would mislead: about half the pixels are 0 in both the input and the map, and the tie "
              "inflates the all-pixel correlation; the asserted form is 01.5-trained-gxi-follows-input-digit"),
    Claim("01.5-trained-gxi-follows-input-digit",
          "On the digit's pixels, |gradient x input| follows the input more than |gradient| does "
          "(difference of the mean Spearman correlations with x).",
          "empirical", lower=0.0, strict=True,
          why="zero, against the control: the gradient's map, which needs no input factor (Adebayo et al. 2018 "
              "discuss the input dominating gradient x input)"),
    Claim("01.5-shuffled-cannot-tell-digits",
          "The CNN trained on shuffled labels cannot tell digits apart (test accuracy on the true labels).",
          "empirical", upper=0.2, strict=True,
          why="chance is 0.1; the notebook's bound leaves room for a few lucky test digits"),
    Claim("01.5-shuffled-fits-labels",
          "It fits part of its random labels (training accuracy on the shuffled labels).",
          "empirical", lower=0.2, strict=True,
          why="chance is 0.1: above 0.2 the network has memorised some of its random labels; the notebook's bound"),
    Claim("01.5-data-gradient-changes",
          "Shuffled labels vs trained: gradient and SmoothGrad |maps| are almost uncorrelated (larger mean Spearman).",
          "empirical", upper=0.35, strict=True, why=_SANITY),
    Claim("01.5-data-gxi-ig-keep-input",
          "Over all 64 pixels, zero background included, gradient x input and IG maps of the shuffled-label "
          "model correlate with the trained model's (smaller mean Spearman |map|).",
          "empirical", lower=0.8, strict=True, why=_SANITY),
    Claim("01.5-panel-unrandomised-similarity-one",
          "The panel with no layer randomised: each map's similarity to the trained model's map is 1.",
          "identity", upper=1e-6,
          why="largest |similarity - 1| over methods and measures: a copy of the trained model gives the same "
              "maps, and a map's Spearman correlation and SSIM with itself are 1 (float64 rounding)"),
    Claim("01.5-panel-gxi-above-gradient",
          "In the panel (test digit #0, every layer randomised) gradient x input keeps a Spearman |map| well "
          "above the gradient's (difference).",
          "empirical", lower=0.4, strict=True,
          why="the notebook's bound on one digit; the means over digits are 01.5-cascade-gxi-ig-keep-input and "
              "01.5-cascade-gradient-all-layers"),
]
