"""Significance of TCAV scores, step 5 of TCAV (Kim et al. 2018, "Interpretability beyond feature attribution:
quantitative testing with concept activation vectors (TCAV)", ICML, section 3.5; notebook 05).

:func:`tcav_significance` repeats the TCAV score with R random counterpart sets, compares the R scores with R
scores of random-vs-random CAVs by a two-sided t-test (:func:`t_test`), and Bonferroni-corrects across the
concepts tested. A concept whose scores look like random CAVs' scores is not significant.

``test="rank"`` asks the question with a calibrated null instead: K fixed random image sets pose as concepts,
each goes through the same R runs, and the concept's p-value is its rank among them (:func:`rank_p`). The
t-test treats the concept's R scores as R independent draws, but they all share one concept set; its
quirks move all R scores together, and its yardstick, R random-vs-random scores, is one noisy draw too.
On the embedded ViTs of training seeds 5-7 it called 2-50% of 100 random image sets posing as concepts
significant after Bonferroni x3, where a calibrated test calls 5%/3 = 1.7% (``benchmarks/tcav_robustness.py``).
The rank test holds its level by construction when the concept set is one more random set. Its null
hypothesis is "this concept's score is no more extreme than a random image set's"; significant means
further out than every random set but a few, so it has less power than the t-test (with K = 100 and three
concepts, only beyond all 100).

``alternative`` asks a directional question instead, for both tests: ``"greater"`` (does the concept score
*higher* than random?) or ``"less"``, one for all concepts or one per concept. Kim et al. test two-sided, since a
concept may raise or lower a class. When the direction is fixed before any TCAV score is seen, e.g. by painting
the concept onto the class's images and measuring the logit (notebook 05's intervention), the one-sided test
asks that question and no other, and its p-value can be half the two-sided one's: with K random concepts the
smallest one-sided rank p is 1 / (K + 1), reached by a concept above all of them, while the two-sided one needs it
further from the median than every random set on *either* side.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

from xaikit._types import Target
from xaikit._validate import SKLEARN_SEED_MAX, bool_flags, check_choice, check_float, check_int, check_seed
from xaikit.concepts.activations import _activations, _cached, _check_common, _score
from xaikit.concepts.cav import CHANCE_ACCURACY, CLASSIFIERS
from xaikit.concepts.images import _imgs, pixel_values, resolve_class
from xaikit.concepts.nullscores import _cav_cached, _check_distinct_sets, _null_scores
from xaikit.concepts.nullsets import default_null_sets

if TYPE_CHECKING:
    from xaikit.concepts.images import ImageSet

__all__ = ["ALTERNATIVES", "ConceptSignificance", "SignificanceResult", "TESTS", "rank_p", "t_test",
           "tcav_significance"]

#: the significance tests :func:`tcav_significance` offers
TESTS = ("t-test", "rank")
#: the alternative hypotheses: the concept's score differs from random's, is higher, or is lower
ALTERNATIVES = ("two-sided", "greater", "less")


@dataclass
class ConceptSignificance:
    """R TCAV scores of one concept against R counterpart sets, tested against random CAVs."""

    concept: str
    scores: np.ndarray          # (R,)
    magnitudes: np.ndarray      # (R,)
    cav_accuracies: np.ndarray  # (R,)
    random_scores: np.ndarray   # (R,) the random-vs-random baseline
    t: float
    p_value: float
    p_corrected: float          # Bonferroni across the concepts tested
    significant: bool
    test: str = "t-test"        # which test gave p_value: "t-test" or "rank"
    null_means: np.ndarray | None = field(default=None, repr=False)  # (K,) the rank test's random concepts
    alternative: str = "two-sided"  # the alternative hypothesis p_value was computed for (ALTERNATIVES)

    @property
    def mean(self) -> float:
        return float(self.scores.mean())

    @property
    def std(self) -> float:
        return float(self.scores.std(ddof=1)) if len(self.scores) > 1 else 0.0

    @property
    def cav_accuracy(self) -> float:
        return float(self.cav_accuracies.mean())

    @property
    def near_chance(self) -> bool:
        """True when the CAVs' mean held-out accuracy is at most :data:`CHANCE_ACCURACY`."""
        return self.cav_accuracy <= CHANCE_ACCURACY


@dataclass
class SignificanceResult:
    """Significance of several concepts for one class at one layer (Kim et al. 2018, section 3.5)."""

    concepts: dict[str, ConceptSignificance]
    target: str
    layer: int
    pooling: str
    classifier: str
    negative: str
    R: int
    alpha: float
    random_scores: np.ndarray = field(repr=False)
    test: str = "t-test"
    null_scores: np.ndarray | None = field(default=None, repr=False)  # (K, R) the rank test's random concepts
    random_cav_accuracies: np.ndarray | None = field(default=None, repr=False)  # (R,) the baseline CAVs' accuracy

    @property
    def null_means(self) -> np.ndarray | None:
        """(K,) mean score of each random image set posing as a concept (``test="rank"`` only)."""
        return None if self.null_scores is None else self.null_scores.mean(1)

    def null_false_alarms(self) -> float | None:
        """Share of the random concepts that Kim et al.'s t-test, Bonferroni-corrected like the concepts,
        would call significant (``test="rank"`` only). A calibrated test calls ``alpha / len(concepts)`` of
        them so (:meth:`nominal_false_alarms`)."""
        if self.null_scores is None:
            return None
        m = len(self.concepts)
        return float(np.mean([min(1.0, m * t_test(s, self.random_scores)[1]) < self.alpha for s in self.null_scores]))

    def nominal_false_alarms(self) -> float:
        """What a calibrated test would flag among random concepts at this alpha, Bonferroni-corrected."""
        return self.alpha / len(self.concepts)

    def __getitem__(self, concept: str) -> ConceptSignificance:
        return self.concepts[concept]

    def summary(self) -> str:
        test = "t-test" if self.null_means is None else f"rank among {len(self.null_means)} random concepts"
        lines = [f"TCAV for {self.target!r} at layer {self.layer} ({self.pooling}, {self.classifier}, "
                 f"R={self.R}, vs {self.negative}, {test}); random CAVs: {self.random_scores.mean():.2f}"]
        for c in self.concepts.values():
            flag = "significant" if c.significant else "not significant"
            if c.near_chance:
                flag += "; CAV near chance: the score means nothing"
            sided = "" if c.alternative == "two-sided" else f", one-sided: {c.alternative}"
            lines.append(f"  {c.concept:>10}: {c.mean:.2f} +/- {c.std:.2f}  CAV acc {c.cav_accuracy:.2f}  "
                         f"p={c.p_corrected:.2g} ({flag}{sided})")
        return "\n".join(lines)


def t_test(a: np.ndarray | Sequence[float], b: np.ndarray | Sequence[float],
           alternative: str = "two-sided") -> tuple[float, float]:
    """Two-sample Student t-test with pooled variance (as ``scipy.stats.ttest_ind``, which the original TCAV
    code calls, with its ``alternative``). Returns ``(t, p)``; two constant samples give p = 1 if equal else 0
    (one-sided: 0 only when ``a`` lies on the alternative's side)."""

    check_choice(alternative, "alternative", ALTERNATIVES)
    a, b = np.asarray(a, float), np.asarray(b, float)
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        raise ValueError(f"each sample needs at least 2 values, got {na} and {nb}")
    if np.ptp(a) == 0 and np.ptp(b) == 0:  # exact: two constant samples, told by their values as given
        # (not by se == 0: the means and variances of e.g. three 0.1s and seven 0.1s round differently)
        d = a[0] - b[0]
        return (0.0, 1.0) if d == 0 else (float(np.sign(d) * np.inf), _sided_p(float(np.sign(d) * np.inf), 1, alternative))
    df = na + nb - 2
    pooled = ((na - 1) * a.var(ddof=1) + (nb - 1) * b.var(ddof=1)) / df
    se = np.sqrt(pooled * (1 / na + 1 / nb))
    diff = a.mean() - b.mean()
    if se == 0:  # exact: a division guard (spreads so small that their squares underflow)
        return (0.0, 1.0) if diff == 0 else (float(np.sign(diff) * np.inf), _sided_p(float(np.sign(diff) * np.inf),
                                                                                      df, alternative))
    t = diff / se
    return float(t), _sided_p(float(t), df, alternative)


def _sided_p(t: float, df: int, alternative: str) -> float:
    """The p-value of Student's ``t`` with ``df`` degrees of freedom under ``alternative``."""
    from scipy.special import stdtr

    if alternative == "greater":
        return float(stdtr(df, -t))
    if alternative == "less":
        return float(stdtr(df, t))
    return float(2 * stdtr(df, -abs(t)))


def rank_p(value: float, null: np.ndarray | Sequence[float], centre: float | None = None,
           alternative: str = "two-sided") -> float:
    """Monte Carlo p-value of ``value`` among ``null`` (K values of the same statistic under the null
    hypothesis), two-sided: ``(1 + #{k: |null_k - c| >= |value - c|}) / (K + 1)``; with ``alternative="greater"``
    ``(1 + #{k: null_k >= value}) / (K + 1)``, with ``"less"`` ``(1 + #{k: null_k <= value}) / (K + 1)`` (no
    centre: ``centre`` must then be left out).

    The centre ``c`` defaults to the median of all K + 1 values (``value`` included): a symmetric function
    of them, so when ``value`` and the K null values are exchangeable (the concept is one more random image
    set) every rank is equally likely and P(p <= alpha) <= alpha exactly, for any distribution (Davison &
    Hinkley 1997, "Bootstrap methods and their application", section 4.2). A centre taken from elsewhere,
    such as the mean of R = 10 random-vs-random scores, can sit far off the null's middle: on one embedded
    main model it was 0.67 while the random concepts' median was 0.43, and "striped" at 0.88 ranked among
    them. The smallest attainable p is 1 / (K + 1): K = 100 null sets reach p = 0.0099, enough for three
    concepts under Bonferroni.
    """
    check_choice(alternative, "alternative", ALTERNATIVES)
    null = np.asarray(null, float)
    if null.ndim != 1 or len(null) < 1:
        raise ValueError(f"null must hold at least one value, got shape {null.shape}")
    if not np.isfinite(value):
        raise ValueError(f"value must be a finite number, got {value!r}; a NaN score has no rank among the null "
                         "values: check how it was computed (e.g. a TCAV score over an empty or failed set)")
    if not np.isfinite(null).all():
        bad = np.flatnonzero(~np.isfinite(null))
        raise ValueError(f"null holds {len(bad)} non-finite value(s) (first at index {bad[0]}: {null[bad[0]]}); "
                         "drop the failed null runs or recompute them, each must be a finite score")
    if alternative != "two-sided":
        if centre is not None:
            raise ValueError(f"centre={centre} is for the two-sided test; alternative={alternative!r} ranks the value "
                             "itself, so leave centre out")
        far = null >= value - 1e-12 if alternative == "greater" else null <= value + 1e-12
        return (1 + int(far.sum())) / (len(null) + 1)
    c = float(np.median(np.append(null, value))) if centre is None else float(centre)
    far = int((np.abs(null - c) >= abs(value - c) - 1e-12).sum())
    return (1 + far) / (len(null) + 1)


def _subsample(n: int, rng: np.random.Generator, fraction: float = 0.8) -> np.ndarray:
    return np.sort(rng.choice(n, size=max(2, int(round(fraction * n))), replace=False))


@bool_flags
def tcav_significance(model: torch.nn.Module, concepts: Mapping[str, object], class_images: ImageSet, *,
                      target: Target, layer: int, random_sets: Sequence | None = None, R: int = 10,
                      negative: ImageSet | None = None, pooling: str = "flatten",
                      classifier: str = "logistic", alpha: float = 0.05, processor: object | None = None,
                      seed: int = 0, n_random: int = 50,
                      progress: bool | None = None, test: str = "t-test", null_sets: Sequence | None = None,
                      n_null: int = 100, alternative: str | Mapping[str, str] = "two-sided") -> SignificanceResult:
    """TCAV scores of each concept over R runs, t-tested against random CAVs (Kim et al. 2018, sec. 3.5).

    Run i trains CAV(concept vs ``random_sets[i+1]``) (or vs ``negative``, an image set, subsampled per
    run) and scores it; the baseline trains R CAVs of ``random_sets[i]`` vs ``random_sets[i+1]``, a new
    pair of random sets each run. (The original TCAV code pits one fixed random set against the others;
    its baseline then inherits the quirks of that one set: on the embedded control ViT the baseline's
    mean swung from 0.38 to 0.73 with the seed, and an irrelevant concept came out "significant".) A
    two-sided t-test compares the concept's R scores with the baseline's; the p-value is Bonferroni-
    corrected by the number of concepts and ``significant`` means ``p_corrected < alpha``.

    ``random_sets``: R+1 image sets; by default :func:`xaikit.models.imageworld.random_images` with seeds
    ``seed*1000 + i`` and ``n_random`` images each. Sets that should differ but share at least half their
    images (``[random_images(50) for _ in range(R + 1)]``, whose default seed makes them copies; a concept
    and its counterpart; two null sets) are refused with a ``ValueError`` naming them, and so is a
    random-vs-random baseline CAV that comes out zero (its sets give the same activations at ``layer``): such
    a baseline scores 0.00 and makes any concept look significant. ``random_cav_accuracies`` on the result
    holds the baseline CAVs' held-out accuracies, which sit near chance (0.5) by design.

    ``test="rank"``: a calibrated null instead of the t-test. Each of K random image sets (``null_sets``, or
    ``n_null`` sets of :func:`~xaikit.models.imageworld.random_images` with seeds ``900_000 + seed*1000 + k``
    and as many images as each concept set, which must all be the same size)
    poses as a concept and goes through the same R runs against the same counterparts; a concept's p-value is
    :func:`rank_p` of its mean score among theirs, two-sided about the median of all of them. "Is stripes'
    score further out than a random image set's would be?" is then answered with the error rate it promises. The
    K sets' activations and CAVs are computed once per model and layer, whatever the number of concepts, on
    one BLAS thread, which this function sets. Notebook 07, section 1.

    ``alternative``: ``"two-sided"`` (Kim et al.'s question, the default), ``"greater"`` or ``"less"``, for every
    concept, or a dict ``{concept: alternative}`` naming each concept's direction. State a direction only when it
    was fixed before the scores were seen (notebook 05 takes it from the intervention); the Bonferroni correction
    is the same.

    ``progress``: tqdm bars over the random sets' activations and over the runs; ``None`` shows them for a
    model of 20 M parameters or more (vit-base: minutes of forward passes on a laptop CPU).
    """

    R = check_int(R, "R", 2, hint="a t-test needs at least 2 runs per side; the TCAV paper uses R=500, 10-50 "
                  "is enough to see significance here")
    layer = _check_common(model, layer, pooling)
    if progress is None:  # a hub-sized model spends minutes in forward passes: show them
        from xaikit.concepts.activations import _DISK_CACHE_MIN_PARAMS, _n_params

        progress = _n_params(model) >= _DISK_CACHE_MIN_PARAMS
    check_choice(classifier, "classifier", CLASSIFIERS)
    seed = check_seed(seed, maximum=SKLEARN_SEED_MAX - (R - 1))  # run i < R seeds its classifier with seed + i
    alpha = check_float(alpha, "alpha", 0.0, 1.0, strict_min=True)
    check_choice(test, "test", TESTS)
    if test == "rank" and null_sets is not None and len(null_sets) == 0:
        raise ValueError("null_sets is empty: the rank test compares each concept's score with the scores of random "
                         "image sets posing as concepts; pass some, e.g. [imageworld.random_images(50, seed=1000 + k) "
                         "for k in range(100)], or leave null_sets=None for n_null such sets")
    if test == "rank" and null_sets is None:
        n_null = check_int(n_null, "n_null", 1, hint="the rank test's p-value is at least 1/(n_null+1): use 100 or "
                           "more to reach p < 0.05 for several concepts")
    idx, label = resolve_class(model, target)
    if not isinstance(concepts, Mapping) or not concepts:
        raise TypeError("concepts must be a non-empty dict {name: images}, e.g. {'striped': imageworld."
                        "concept_images('striped')}")
    alternatives = _alternatives(alternative, concepts)
    if random_sets is None:
        from xaikit.models.imageworld import random_images

        random_sets = [random_images(n_random, seed=seed * 1000 + i) for i in range(R + 1)]
    if len(random_sets) < R + 1:
        raise ValueError(f"random_sets must hold R+1={R + 1} sets (one random 'concept' plus R counterparts), "
                         f"got {len(random_sets)}")
    given_nulls = null_sets if test == "rank" else None  # the default ones are distinct by their seeds
    if test == "rank":
        sizes = {name: len(_imgs(imgs, f"concepts[{name!r}]")) for name, imgs in concepts.items()}
        if len(set(sizes.values())) > 1:
            raise ValueError(f"test='rank' compares every concept with random sets of one size, but the concept "
                             f"sets differ in size: {sizes}; give them the same number of images")
        size = next(iter(sizes.values()))
        if null_sets is None:  # as many images as the concept: a random set of another size is not exchangeable
            null_sets = default_null_sets(size, seed, n_null)
        elif any(len(_imgs(n, "null_sets")) != size for n in null_sets):
            raise ValueError(f"null_sets must hold sets of {size} images, the size of the concept sets "
                             f"(got {sorted({len(_imgs(n, 'null_sets')) for n in null_sets})}): the rank test is exact "
                             "only when a random set could have been the concept set")
        if len(concepts) / (len(null_sets) + 1) >= alpha:
            warnings.warn(f"test='rank' with {len(null_sets)} random concepts and {len(concepts)} concepts can never "
                          f"reach a corrected p below alpha={alpha}: the smallest is {len(concepts)}/"
                          f"{len(null_sets) + 1}; use n_null >= {int(np.ceil(len(concepts) / alpha))}",
                          UserWarning, stacklevel=2)
    _check_distinct_sets(concepts, random_sets[:R + 1], negative, given_nulls, R)
    def acts(imgs, name):
        return _activations(model, pixel_values(model, _imgs(imgs, name), processor, name), layer, pooling)

    x_class = _imgs(class_images, "class_images")
    # gradients of the class logit at the layer, (N, D): S(x) = g(x) . v_C for every CAV below
    g = _cached(model, pixel_values(model, x_class, processor, "class_images"), layer, pooling, idx, 64)
    from tqdm.auto import tqdm

    a_rand = [acts(r, f"random_sets[{i}]") for i, r in enumerate(tqdm(random_sets[:R + 1], desc="random sets",
                                                                       disable=not progress, leave=False))]
    a_neg = acts(negative, "negative") if negative is not None else None
    neg_name = "random" if negative is None else "negative"

    def counterpart(i, n_pos):
        """Run i's counterpart set and the rows of the concept set it keeps (``None``: all of them)."""
        if a_neg is None:
            return a_rand[i + 1], None
        rng = np.random.default_rng([seed, i, 17])  # a fixed counterpart: vary the runs by subsampling both sets
        counter = a_neg[_subsample(len(a_neg), rng)]
        return counter, _subsample(n_pos, rng)

    digests = {}  # id -> (array, digest): each activation set is hashed once, not once per run it is in

    def run(a_pos, name, i, counter=None):
        if counter is None:
            counter, rows = counterpart(i, len(a_pos))
            a_pos = a_pos if rows is None else a_pos[rows]
        cav = _cav_cached(model, a_pos, counter, classifier, seed + i, name, neg_name, layer, pooling, digests)
        return (*_score(g @ cav.vector), cav.accuracy, not np.any(cav.vector))  # last: a zero CAV

    from threadpoolctl import threadpool_limits

    from xaikit.policies import method_threads

    # hundreds of small CAV fits: one BLAS thread each; the default pool cost 10-20x on 2 busy cores. The
    # random concepts' forward passes use the method thread count (xaikit.policies), as every other pass does
    with threadpool_limits(1, user_api="blas"), method_threads(model):
        return _significance_runs(model, concepts, label, layer, pooling, classifier, neg_name, R, alpha, test,
                                  null_sets, n_null, seed, processor, progress, run, counterpart, acts, g, a_rand,
                                  a_neg, alternatives)


def _alternatives(alternative, concepts: Mapping) -> dict[str, str]:
    """``{concept: alternative}`` from one alternative for all or a dict naming every concept's."""
    if isinstance(alternative, str):
        check_choice(alternative, "alternative", ALTERNATIVES)
        return dict.fromkeys(concepts, alternative)
    if not isinstance(alternative, Mapping):
        raise TypeError(f"alternative must be one of {ALTERNATIVES} or a dict {{concept: alternative}}, got "
                        f"{type(alternative).__name__}")
    missing, extra = [c for c in concepts if c not in alternative], [c for c in alternative if c not in concepts]
    if missing or extra:
        example = dict.fromkeys(concepts, "greater")
        raise ValueError(f"alternative must name exactly the concepts tested: missing {missing}, not tested {extra}; "
                         f"e.g. alternative={example}")
    for c, a in alternative.items():
        check_choice(a, f"alternative[{c!r}]", ALTERNATIVES)
    return {c: alternative[c] for c in concepts}


def _significance_runs(model, concepts, label, layer, pooling, classifier, neg_name, R, alpha, test,
                       null_sets, n_null, seed, processor, progress, run, counterpart, acts, g,
                       a_rand, a_neg, alternatives) -> SignificanceResult:
    from tqdm.auto import tqdm

    bar = tqdm(total=R * (len(concepts) + 1), desc="TCAV runs", disable=not progress, leave=False)
    base = []
    for i in range(R):
        # random set i vs random set i+1: every baseline run has its own pair, so the baseline's spread is
        # the spread of random CAVs, not of one random set against the others
        score, _, accuracy, zero = run(a_rand[i], "random", i, counter=a_rand[i + 1])
        if zero:  # checked like the concept CAVs, whose accuracy the result reports
            raise ValueError(
                f"the baseline CAV of random_sets[{i}] vs random_sets[{i + 1}] is zero: the two sets give the same "
                f"activations at layer {layer} ({pooling} pooling), so its TCAV score is 0 whatever the model "
                f"does, and every concept would look significant against such a baseline. Pass random sets of "
                f"different images (e.g. [imageworld.random_images(50, seed=i) for i in range(R + 1)]), or a "
                f"layer and pooling at which images differ")
        base.append((score, accuracy))
        bar.update(1)
    random_scores = np.array([b[0] for b in base])
    random_accuracies = np.array([b[1] for b in base])
    null_scores = None
    if test == "rank":
        null_scores = _null_scores(model, [_imgs(s, f"null_sets[{k}]") for k, s in enumerate(null_sets)], layer, pooling,
                                 processor, counterpart, R, (g, classifier, seed, [*a_rand[1:R + 1], *([] if a_neg is None
                                                                                                 else [a_neg])]), progress)
    out = {}
    for name, imgs in concepts.items():
        a_pos = acts(imgs, f"concepts[{name!r}]")
        runs = []
        for i in range(R):
            runs.append(run(a_pos, name, i)[:3])
            bar.update(1)
        runs = np.array(runs)  # (R, 3): score, magnitude, CAV accuracy
        t, p = t_test(runs[:, 0], random_scores, alternatives[name])
        if null_scores is not None:
            p = rank_p(runs[:, 0].mean(), null_scores.mean(1), alternative=alternatives[name])
        p_corr = min(1.0, p * len(concepts))
        out[name] = ConceptSignificance(name, runs[:, 0], runs[:, 1], runs[:, 2], random_scores, t, p, p_corr,
                                        bool(p_corr < alpha), test,
                                        None if null_scores is None else null_scores.mean(1), alternatives[name])
    bar.close()
    return SignificanceResult(out, label, layer, pooling, classifier, neg_name, R, alpha, random_scores, test,
                              null_scores, random_accuracies)
