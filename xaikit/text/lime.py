r"""LIME for text classifiers: a weighted linear surrogate fitted to the model around one sentence (Ribeiro,
Singh & Guestrin 2016, "'Why Should I Trust You?': Explaining the Predictions of Any Classifier", KDD).
Used by notebook 04, section 4b.

**Features are words, as in the ``lime`` package's ``LimeTextExplainer``.** A word is a run of word
characters (the regular expression ``\w+``): what the package's default ``split_expression=r'\W+'`` leaves
between separators, so punctuation and spaces are never features and always stay in the text. Each word is
mapped to the tokenizer's pieces through the fast tokenizer's character offsets ("unwatchable" is
``un ##watch ##able``: one feature; removing it removes the three pieces). With ``bow=True`` (the package's
default) equal words are one feature, in the order of their first appearance: "the film is the best" has 4
features, and removing "the" removes both; ``bow=False`` makes each occurrence a feature (the package then
writes ``UNKWORDZ`` in place of a removed word, xaikit still deletes it). ``[CLS]``/``[SEP]`` and the
punctuation pieces are always kept. A slow tokenizer has no offsets: the pieces are then grouped by
WordPiece's ``##`` continuation mark and the pieces without a word character are the punctuation, with a
warning (the words can then differ from the package's, e.g. at an apostrophe, which WordPiece splits off).

For a text with d words, LIME describes a perturbed copy by its presence vector z in {0, 1}^d (z_j = 1: word
j is kept) and proceeds as ``LimeTextExplainer`` does:

1. **Samples.** Row 0 is the text itself (z = 1). For each other row, draw how many words to remove,
   k ~ Uniform{1, ..., d}, then which k, without replacement (NumPy's ``RandomState(seed)``, in the
   package's order of draws, so a seed gives the package's matrix).
2. **The model on each sample.** The pieces of the removed words are deleted (the rest close up, as words
   removed from a string do) and the model gives f(z): the target class's probability (LIME's choice) or its
   logit. Equal rows are evaluated once; the rest go through the model in padded batches.
3. **Proximity.** D(z) = 100 * (1 - cos(z, 1)), the cosine distance to the text in percent (the package's
   scale), and the kernel pi(z) = sqrt(exp(-D(z)^2 / width^2)) with width 25 by default: the package's text
   kernel. The paper writes exp(-D^2 / sigma^2); the square root makes the package's kernel the paper's with
   sigma = sqrt(2) * width. xaikit follows the package so that its numbers can be checked against it.
4. **Surrogate.** The weighted ridge regression g(z) = b + w . z minimising
   sum_s pi(z_s) (f(z_s) - g(z_s))^2 + alpha ||w||^2 (the intercept is not penalised; the package's Ridge
   has alpha = 1). Word j's score is w_j; every piece of the word shows it, the special tokens and the
   punctuation show 0.

**All words are returned.** The paper's Algorithm 1 keeps K features (K-Lasso) and the package keeps
``num_features=10`` by default; xaikit returns the coefficient of every word, which is the package's result
with ``feature_selection="none"`` (or ``num_features`` = the number of words).

The fit is a closed form (:func:`fit_surrogate`): with the weighted means removed,
(X^T Pi X + alpha I) w = X^T Pi y. With every one of the 2^d presence vectors as samples and alpha = 0 it
returns the coefficients of a model that is linear in z exactly; the tests check that, and check the scores
against ``LimeTextExplainer`` itself on sentences with subwords, punctuation and repeated words.

The explanation depends on the random samples: another seed gives other scores (:func:`seed_spread`
measures how much), where SHAP's Partition explainer with a fixed masker returns the same values each run.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch

from xaikit._text_input import PreparedText, Tokenizer, run_text
from xaikit._types import Target
from xaikit._validate import bool_flags, check_choice, check_float, check_int, check_seed
from xaikit.text.registry import TextMethod, register
from xaikit.text.tokens import TokenScores
from xaikit.text.words import word_groups

__all__ = ["LimeDetail", "Surrogate", "SeedSpread", "lime", "sample_presence", "all_presence", "cosine_distances",
           "kernel", "shapley_kernel", "fit_surrogate", "lime_presence", "refit", "seed_spread", "word_scores",
           "OUTPUTS"]

#: what f(z) is: the target class's probability (LIME's choice) or its logit (SHAP's in notebook 04)
OUTPUTS = ("prob", "logit")
_SEED_MAX = 2 ** 32 - 1  # NumPy's RandomState takes seeds below 2**32


@dataclass
class Surrogate:
    """The weighted linear model g(z) = intercept + coef . z that LIME fits.

    Attributes:
        coef: ``(d,)``, one coefficient per feature.
        intercept: b.
        r2: the weighted R^2 of g on the samples it was fitted to (1 = g matches f there).
        prediction: g at the first sample (the text itself, z = 1).
    """

    coef: np.ndarray
    intercept: float
    r2: float
    prediction: float


@dataclass
class LimeDetail:
    """What :func:`lime` computed besides the scores, as NumPy arrays on the CPU.

    Attributes:
        samples: ``(S, d)`` presence vectors, row 0 the text itself (all ones).
        outputs: ``(S,)`` f(z) of each sample (``output``: probability or logit of the target class).
        distances: ``(S,)`` 100 * cosine distance of each sample to the text.
        weights: ``(S,)`` the kernel pi(z) of each sample.
        words: ``(d,)`` the features, one per word (one per distinct word with ``bow``).
        groups: ``(d, N)`` bool, ``groups[j, i]``: token i is a piece of word j (the special tokens and the
            punctuation belong to no word and are always kept).
        coef: ``(d,)`` the surrogate's coefficient of each word (the scores, per word).
        intercept, r2, prediction: the surrogate's (:class:`Surrogate`); ``fx`` = f of the text itself.
        kernel_width, alpha, seed, output, bow: the settings used.
        grouping: how pieces were grouped into words: ``"offsets"`` (the fast tokenizer's character offsets)
            or ``"wordpiece"`` (the ``##`` marks of a slow tokenizer).
        n_evaluated: distinct samples sent through the model (equal rows are evaluated once).
    """

    samples: np.ndarray
    outputs: np.ndarray
    distances: np.ndarray
    weights: np.ndarray
    words: list[str]
    groups: np.ndarray
    coef: np.ndarray
    intercept: float
    r2: float
    prediction: float
    fx: float
    kernel_width: float
    alpha: float
    seed: int
    output: str
    n_evaluated: int
    bow: bool = True
    grouping: str = "offsets"


# -- the steps, each on plain arrays -------------------------------------------------------------------------
#: the most samples one explanation draws (100 times the package's default): each is one forward pass
MAX_SAMPLES = 500_000


def sample_presence(n_features: int, n_samples: int, seed: int = 0) -> np.ndarray:
    """``(n_samples, n_features)`` presence vectors: row 0 all ones, each other row with k ~ U{1..d} features
    removed, chosen without replacement (the draws of ``LimeTextExplainer`` with ``random_state=seed``)."""
    d = check_int(n_features, "n_features", 1, hint="the number of words that can be removed")
    n = check_int(n_samples, "n_samples", 2, MAX_SAMPLES, hint="LIME needs the text and at least one perturbed "
                  "copy, e.g. 500")
    rng = np.random.RandomState(check_seed(seed, "seed", _SEED_MAX))
    removed = rng.randint(1, d + 1, n - 1)  # (S-1,) how many tokens each sample drops
    z = np.ones((n, d))  # (S, d)
    for i, k in enumerate(removed, start=1):
        z[i, rng.choice(d, k, replace=False)] = 0
    return z


def all_presence(n_features: int) -> np.ndarray:
    """Every presence vector of ``n_features`` features, ``(2^d, d)``, row 0 all ones (for exact checks)."""
    d = check_int(n_features, "n_features", 1, 16, hint="all 2^d vectors are listed, so keep d small")
    return np.array(list(itertools.product((1.0, 0.0), repeat=d)))  # (2^d, d)


def cosine_distances(samples: np.ndarray) -> np.ndarray:
    """100 * (1 - cos(z, 1)) for each row z of ``samples`` ``(S, d)``; an empty row has distance 100."""
    z = np.asarray(samples, dtype=float)
    kept = z.sum(axis=1)  # (S,) |z|^2 = |z|_1 for a 0/1 vector
    norm = np.sqrt(kept) * np.sqrt(z.shape[1])  # (S,) |z| |1|
    cos = np.divide(kept, norm, out=np.zeros_like(kept), where=norm > 0)  # (S,)
    return 100.0 * (1.0 - cos)


def kernel(distances: np.ndarray, kernel_width: float = 25.0) -> np.ndarray:
    """The exponential kernel pi = sqrt(exp(-D^2 / width^2)) of LIME's text explainer."""
    width = _check_width(kernel_width)
    d = np.asarray(distances, dtype=float)
    return np.sqrt(np.exp(-(d ** 2) / width ** 2))


def shapley_kernel(samples: np.ndarray, endpoint_weight: float = 1e6) -> np.ndarray:
    """Lundberg & Lee's Shapley kernel for each row z of ``samples`` ``(S, d)``:
    pi(z) = (d - 1) / (C(d, |z|) |z| (d - |z|)), and ``endpoint_weight`` for the text itself and the empty
    row, whose kernel is infinite (the constraints g(1) = f(1), g(0) = f(0)). With every presence vector as a
    sample and no penalty, the weighted linear fit's coefficients are the Shapley values (Kernel SHAP); LIME's
    kernel is the same regression with another weighting."""
    from math import comb

    z = np.asarray(samples, dtype=float)
    d = z.shape[1]
    k = z.sum(axis=1).round().astype(int)  # (S,) features kept
    w = np.full(len(z), float(endpoint_weight))
    inner = (k > 0) & (k < d)
    w[inner] = [(d - 1) / (comb(d, int(j)) * j * (d - j)) for j in k[inner]]
    return w


def fit_surrogate(samples: np.ndarray, outputs: np.ndarray, weights: np.ndarray, alpha: float = 1.0) -> Surrogate:
    """The weighted ridge fit of ``outputs`` ``(S,)`` on ``samples`` ``(S, d)`` with ``weights`` ``(S,)``.

    Minimises sum_s w_s (y_s - b - x_s . c)^2 + alpha |c|^2 (b not penalised) in closed form: centre x and y
    on their weighted means, solve (X^T W X + alpha I) c = X^T W y, then b = mean(y) - mean(x) . c. With
    ``alpha=0`` it is weighted least squares (the least-norm solution if a feature never changes).
    """
    x = np.asarray(samples, dtype=float)
    y = np.asarray(outputs, dtype=float).reshape(-1)
    w = np.asarray(weights, dtype=float).reshape(-1)
    alpha = check_float(alpha, "alpha", 0.0, hint="the ridge penalty; LIME uses 1.0, 0 is plain least squares")
    if x.ndim != 2 or len(x) != len(y) or len(y) != len(w):
        raise ValueError(f"samples (S, d), outputs (S,) and weights (S,) must agree in S, got {x.shape}, {y.shape}, "
                         f"{w.shape}")
    if (w < 0).any() or w.sum() <= 0:
        raise ValueError("weights must be non-negative with a positive sum (the kernel of each sample)")
    x_mean, y_mean = w @ x / w.sum(), w @ y / w.sum()  # (d,), ()
    xc, yc = x - x_mean, y - y_mean  # (S, d), (S,)
    if alpha > 0:
        coef = np.linalg.solve(xc.T @ (w[:, None] * xc) + alpha * np.eye(x.shape[1]), xc.T @ (w * yc))  # (d,)
    else:
        root = np.sqrt(w)  # (S,)
        coef = np.linalg.lstsq(root[:, None] * xc, root * yc, rcond=None)[0]  # (d,)
    intercept = float(y_mean - x_mean @ coef)
    fitted = intercept + x @ coef  # (S,)
    return Surrogate(coef, intercept, _weighted_r2(y, fitted, w), float(fitted[0]))


def _weighted_r2(y: np.ndarray, fitted: np.ndarray, w: np.ndarray) -> float:
    """1 - sum w (y - g)^2 / sum w (y - mean_w y)^2 (scikit-learn's ``score`` with sample weights)."""
    residual = float(w @ (y - fitted) ** 2)
    total = float(w @ (y - w @ y / w.sum()) ** 2)
    if total <= 1e-300:  # f is constant on the samples: perfect if g is too
        return 1.0 if residual <= 1e-300 else 0.0
    return 1.0 - residual / total


def lime_presence(f, n_features: int, *, n_samples: int = 500, kernel_width: float = 25.0, alpha: float = 1.0,
                  seed: int = 0, samples: np.ndarray | None = None) -> tuple[Surrogate, np.ndarray, np.ndarray]:
    """LIME on any function of the presence vector: ``f`` maps ``(S, d)`` 0/1 rows to ``(S,)`` outputs.

    ``samples``: the presence vectors to use (e.g. :func:`all_presence`), row 0 all ones; ``None`` draws
    :func:`sample_presence`. Returns the surrogate, the samples and their outputs.
    """
    _check_width(kernel_width)
    z = sample_presence(n_features, n_samples, seed) if samples is None else np.asarray(samples, dtype=float)
    y = np.asarray(f(z), dtype=float).reshape(-1)  # (S,)
    return fit_surrogate(z, y, kernel(cosine_distances(z), kernel_width), alpha), z, y


def _check_width(kernel_width) -> float:
    return check_float(kernel_width, "kernel_width", 0.0, strict_min=True,
                       hint="the kernel's width in the distance's units (100 * cosine distance); LIME's default is 25")


# -- the model on the samples ---------------------------------------------------------------------------------
def _evaluate(prepared: PreparedText, groups: np.ndarray, z: np.ndarray, output: str, batch_size: int) -> np.ndarray:
    """f(z) for each distinct row of ``z`` ``(U, d)``: the text with the pieces of the words where z = 0
    deleted, through the model in padded batches; ``(U,)`` float64."""
    inputs, model = prepared.inputs, prepared.model
    always = ~groups.any(axis=0)  # (N,) the special tokens and the punctuation, always kept
    pad_id = getattr(prepared.tokenizer, "pad_token_id", None) or 0
    out = []
    for start in range(0, len(z), batch_size):
        rows = z[start:start + batch_size]  # (B, d)
        keep = always | ((rows > 0).astype(int) @ groups.astype(int) > 0)  # (B, N)
        kept = [torch.as_tensor(np.flatnonzero(k), device=inputs["input_ids"].device) for k in keep]
        longest = max(len(k) for k in kept)
        batch = {}
        for key, t in inputs.items():  # (1, N) each: ids, mask, token types
            filled = torch.full((len(rows), longest), pad_id if key == "input_ids" else 0, dtype=t.dtype,
                                device=t.device)  # (B, T)
            for i, k in enumerate(kept):
                filled[i, :len(k)] = t[0, k]
            batch[key] = filled
        with torch.no_grad():
            logits = model(**batch).logits.detach().cpu().double()  # (B, C)
        chosen = torch.softmax(logits, -1) if output == "prob" else logits
        out.append(chosen[:, prepared.target].numpy())
    return np.concatenate(out)


@bool_flags
def lime(model: torch.nn.Module, tokenizer: Tokenizer, text: str, *, target: Target = None, n_samples: int = 500,
         kernel_width: float = 25.0, alpha: float = 1.0, seed: int = 0, output: str = "prob", bow: bool = True,
         batch_size: int = 64, allow_long: bool = False) -> TokenScores:
    """LIME word scores of one text (Ribeiro et al. 2016; notebook 04 section 4b).

    Args:
        model, tokenizer: a BERT-family sequence classifier and its tokenizer.
        text: one sentence (cut to its first words, with a warning, if longer than the model takes).
        target: the class explained; ``None`` = the predicted class.
        n_samples: perturbed samples, the text itself included (at least 2; the package's default is 5000).
        kernel_width: the kernel's width on 100 * cosine distance (> 0; the package's default 25). Small
            widths fit the surrogate to the samples closest to the text; large ones weigh all alike.
        alpha: the ridge penalty (>= 0; the package's 1.0).
        seed: the seed of the samples (an int in [0, 2**32 - 1]): the same seed, the same samples.
        output: ``"prob"`` (LIME's: the target's probability) or ``"logit"``.
        bow: equal words are one feature (the package's default ``bow=True``); ``False``: each occurrence.
        batch_size: samples per forward pass.
        allow_long: explain a text of more than :data:`LONG_TEXT` tokens (refused by default, as SHAP refuses
            it: each of the ``n_samples`` forward passes runs at that length; 600 tokens took minutes).

    Returns:
        :class:`~xaikit.text.tokens.TokenScores` (signed) over the model's tokens: every piece of a word shows
        the word's surrogate coefficient, [CLS]/[SEP] and punctuation 0; ``detail`` is a :class:`LimeDetail`
        (the words, their coefficients, samples, outputs, weights, intercept, R^2). :func:`word_scores` gives
        the scores per word, as the package lists them.
    """
    _check_options(n_samples, kernel_width, alpha, seed, output, batch_size, bow)
    return run_text(_lime, model, tokenizer, text, target, method="lime", n_samples=n_samples,
                    kernel_width=kernel_width, alpha=alpha, seed=seed, output=output, bow=bow, batch_size=batch_size,
                    allow_long=allow_long)


#: the most tokens LIME explains without ``allow_long=True`` (SHAP's limit,
#: :data:`xaikit.text.shaptext.LONG_TEXT`)
LONG_TEXT = 200


def _refuse_long(name: str, n: int, n_samples: int, allow_long, keyword: str = "n_samples",
                 where: str = "allow_long=True") -> None:
    """A ValueError for a text of ``n`` tokens over :data:`LONG_TEXT` unless ``allow_long``, with the cost."""
    if not isinstance(allow_long, bool):  # bool('False') is True
        raise TypeError(f"allow_long must be True or False, got {type(allow_long).__name__} {allow_long!r}")
    if n > LONG_TEXT and not allow_long:
        raise ValueError(
            f"{name} has {n} tokens; LIME would run {keyword}={n_samples} forward passes of up to {n} tokens "
            f"(a 600-token text took over 6 minutes on 2 CPU cores). Pass {where} to run it anyway, fewer "
            f"{keyword}, or explain a shorter text (at most {LONG_TEXT} tokens run without asking)")


def check_lengths(model, tokenizer, sentences: list[str], cost: int, keyword: str = "n_samples") -> None:
    """Refuse, before any work, a sentence too long for LIME without ``allow_long`` (as cut to the model): the
    faithfulness lab's check over all its sentences (``keyword``: the lab's name of ``n_samples``)."""
    from xaikit._text_input import max_tokens

    limit = max_tokens(model, tokenizer)
    for i, text in enumerate(sentences):
        n = min(len(tokenizer(text, verbose=False)["input_ids"]), limit)
        _refuse_long(f"sentences[{i}]", n, cost, False, keyword, "run_lab(..., allow_long=True)")


def _check_options(n_samples, kernel_width, alpha, seed, output, batch_size, bow=True) -> None:
    check_int(n_samples, "n_samples", 2, MAX_SAMPLES,
              hint="LIME needs the text and at least one perturbed copy; the package's default is 5000, and "
                   f"each sample is one forward pass, so more than {MAX_SAMPLES:,} would run for hours")
    _check_width(kernel_width)
    check_float(alpha, "alpha", 0.0, hint="the ridge penalty; LIME uses 1.0, 0 is plain least squares")
    check_seed(seed, "seed", _SEED_MAX)
    check_choice(output, "output", OUTPUTS)
    check_int(batch_size, "batch_size", 1, hint="samples per forward pass, e.g. 64")
    if not isinstance(bow, bool):
        raise TypeError(f"bow must be True (equal words are one feature, the lime package's default) or False, "
                        f"got {type(bow).__name__} {bow!r}")


def _lime(prepared: PreparedText, *, n_samples: int = 500, kernel_width: float = 25.0, alpha: float = 1.0,
          seed: int = 0, output: str = "prob", bow: bool = True, batch_size: int = 64,
          allow_long: bool = False) -> TokenScores:
    """:func:`lime` of a prepared text (its target resolved)."""
    _check_options(n_samples, kernel_width, alpha, seed, output, batch_size, bow)
    _refuse_long("text", prepared.n_tokens, n_samples, allow_long)
    special = prepared.special.numpy() if prepared.special is not None else np.zeros(prepared.n_tokens, dtype=bool)
    words, groups, grouping = word_groups(prepared.tokenizer, prepared.text, prepared.inputs["input_ids"][0].tolist(),
                                          special, bow)
    if len(words) == 0:
        raise ValueError("the text has no words (runs of letters or digits), so LIME has nothing to remove; "
                         "pass a text with at least one word")
    z = sample_presence(len(words), n_samples, seed)  # (S, d)
    unique, inverse = np.unique(z, axis=0, return_inverse=True)  # (U, d), (S,)
    y = _evaluate(prepared, groups, unique, output, batch_size)[inverse.reshape(-1)]  # (S,)
    return _fit(prepared.tokens, prepared.target, words, groups, z, y, kernel_width, alpha, seed, output, len(unique),
                bow, grouping)


def _fit(tokens, target, words, groups, z, y, kernel_width, alpha, seed, output, n_evaluated, bow,
         grouping) -> TokenScores:
    """Steps 3 and 4 on the samples ``z`` ``(S, d)`` and their outputs ``y`` ``(S,)``: the scores."""
    distances = cosine_distances(z)  # (S,)
    weights = kernel(distances, kernel_width)  # (S,)
    fit = fit_surrogate(z, y, weights, alpha)
    scores = fit.coef @ groups.astype(float)  # (N,) each piece its word's coefficient, the rest 0
    detail = LimeDetail(z, y, distances, weights, list(words), groups, fit.coef, fit.intercept, fit.r2,
                        fit.prediction, float(y[0]), float(kernel_width), float(alpha), int(seed), output,
                        int(n_evaluated), bool(bow), grouping)
    return TokenScores(list(tokens), scores, "LIME", target, signed=True, detail=detail)


def word_scores(scores: TokenScores) -> TokenScores:
    """A LIME result per word: one entry per feature (word), its coefficient, as the package lists them."""
    d = _detail(scores)
    return TokenScores(list(d.words), d.coef.copy(), "LIME", scores.target, signed=True, detail=d)


def _detail(scores) -> LimeDetail:
    d = getattr(scores, "detail", None)
    if not isinstance(d, LimeDetail):
        raise TypeError(f"scores must be a LIME result (xaikit.text.lime.lime), got {type(scores).__name__} "
                        f"with detail {type(d).__name__}")
    return d


def refit(scores: TokenScores, *, kernel_width: float | None = None, alpha: float | None = None) -> TokenScores:
    """The same LIME samples and model outputs, fitted again with another kernel width or ridge penalty
    (``None``: as before); no forward pass. The LIME panel of notebook 04 refits on every move of its
    kernel-width slider."""
    d = _detail(scores)
    width = d.kernel_width if kernel_width is None else _check_width(kernel_width)
    alpha = d.alpha if alpha is None else check_float(alpha, "alpha", 0.0, hint="the ridge penalty, e.g. 1.0")
    return _fit(scores.tokens, scores.target, d.words, d.groups, d.samples, d.outputs, width, alpha, d.seed,
                d.output, d.n_evaluated, d.bow, d.grouping)


# -- how much the scores move with the seed -------------------------------------------------------------------
@dataclass
class SeedSpread:
    """Scores of one text from several runs (seeds), and how much they differ.

    Attributes:
        scores: ``(R, N)`` one row per run (special tokens dropped); tokens: their labels.
        mean_spearman: mean Spearman correlation of |scores| over every pair of runs (1 = same ranking).
        token_std: ``(N,)`` each token's standard deviation over the runs.
        relative_spread: mean token_std over mean |mean score| (0 = every run the same).
    """

    scores: np.ndarray
    tokens: list[str]
    mean_spearman: float
    token_std: np.ndarray
    relative_spread: float


def seed_spread(runs: list[TokenScores]) -> SeedSpread:
    """How much the scores of the same text differ between runs (e.g. LIME with seeds 0, 1, 2, ...). LIME
    results are compared per word (:func:`word_scores`), other results per token."""
    from scipy.stats import spearmanr

    if len(runs) < 2:
        raise ValueError(f"runs must hold at least two TokenScores of the same text, got {len(runs)}")
    runs = [word_scores(r) if isinstance(getattr(r, "detail", None), LimeDetail) else r.without() for r in runs]
    if any(r.tokens != runs[0].tokens for r in runs):
        raise ValueError("the runs are for different tokens; pass explanations of the same text")
    s = np.stack([r.scores for r in runs])  # (R, N)
    rhos = []
    for a, b in itertools.combinations(range(len(runs)), 2):
        same = np.array_equal(np.abs(s[a]), np.abs(s[b]))
        rhos.append(1.0 if same else float(spearmanr(np.abs(s[a]), np.abs(s[b])).statistic))
    std = s.std(axis=0)  # (N,)
    scale = float(np.abs(s.mean(axis=0)).mean())
    return SeedSpread(s, runs[0].tokens, float(np.nanmean(rhos)), std, float(std.mean() / scale) if scale > 0 else 0.0)


register(TextMethod("LIME", _lime, signed=True, order=10, cost="n_samples", cost_keyword="lime_samples", cost_min=2,
                    cost_hint="LIME's perturbed samples, e.g. 500", long_option="allow_long",
                    check_long=check_lengths))
