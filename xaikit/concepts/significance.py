"""Significance of TCAV scores, step 5 of TCAV (Kim et al. 2018, "Interpretability beyond feature attribution:
quantitative testing with concept activation vectors (TCAV)", ICML, section 3.5; notebook 05).

:func:`tcav_significance` repeats the TCAV score with R random counterpart sets, compares the R scores with R
scores of random-vs-random CAVs by a two-sided t-test (:func:`t_test`), and Bonferroni-corrects across the
concepts tested. A concept whose scores look like random CAVs' scores is not significant.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from xaikit._validate import check_choice, check_float, check_int
from xaikit.concepts.activations import _cached, _check_common, _score, _store, activations
from xaikit.concepts.cav import CAV, CHANCE_ACCURACY, CLASSIFIERS, train_cav
from xaikit.concepts.images import _imgs, pixel_values, resolve_class

__all__ = ["ConceptSignificance", "SignificanceResult", "t_test", "tcav_significance"]


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

    def __getitem__(self, concept: str) -> ConceptSignificance:
        return self.concepts[concept]

    def summary(self) -> str:
        lines = [f"TCAV for {self.target!r} at layer {self.layer} ({self.pooling}, {self.classifier}, "
                 f"R={self.R}, vs {self.negative}); random CAVs: {self.random_scores.mean():.2f}"]
        for c in self.concepts.values():
            flag = "significant" if c.significant else "not significant"
            if c.near_chance:
                flag += "; CAV near chance: the score means nothing"
            lines.append(f"  {c.concept:>10}: {c.mean:.2f} +/- {c.std:.2f}  CAV acc {c.cav_accuracy:.2f}  "
                         f"p={c.p_corrected:.2g} ({flag})")
        return "\n".join(lines)


def t_test(a, b) -> tuple[float, float]:
    """Two-sided two-sample Student t-test with pooled variance (as ``scipy.stats.ttest_ind``, which the
    original TCAV code calls). Returns ``(t, p)``; two constant samples give p = 1 if equal else 0."""
    from scipy.special import stdtr

    a, b = np.asarray(a, float), np.asarray(b, float)
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        raise ValueError(f"each sample needs at least 2 values, got {na} and {nb}")
    df = na + nb - 2
    pooled = ((na - 1) * a.var(ddof=1) + (nb - 1) * b.var(ddof=1)) / df
    se = np.sqrt(pooled * (1 / na + 1 / nb))
    diff = a.mean() - b.mean()
    if se == 0:
        return (0.0, 1.0) if diff == 0 else (float(np.sign(diff) * np.inf), 0.0)
    t = diff / se
    return float(t), float(2 * stdtr(df, -abs(t)))


def _subsample(n: int, rng: np.random.Generator, fraction: float = 0.8) -> np.ndarray:
    return np.sort(rng.choice(n, size=max(2, int(round(fraction * n))), replace=False))


def tcav_significance(model, concepts: Mapping[str, object], class_images, target, layer: int,
                      random_sets: Sequence | None = None, R: int = 10, negative=None, pooling: str = "flatten",
                      classifier: str = "logistic", alpha: float = 0.05, processor=None, seed: int = 0,
                      n_random: int = 50, progress: bool = False) -> SignificanceResult:
    """TCAV scores of each concept over R runs, t-tested against random CAVs (Kim et al. 2018, sec. 3.5).

    Run i trains CAV(concept vs ``random_sets[i+1]``) (or vs ``negative``, an image set, subsampled per
    run) and scores it; the baseline trains R CAVs of ``random_sets[i]`` vs ``random_sets[i+1]``, a new
    pair of random sets each run. (The original TCAV code pits one fixed random set against the others;
    its baseline then inherits the quirks of that one set: on the embedded control ViT the baseline's
    mean swung from 0.38 to 0.73 with the seed, and an irrelevant concept came out "significant".) A
    two-sided t-test compares the concept's R scores with the baseline's; the p-value is Bonferroni-
    corrected by the number of concepts and ``significant`` means ``p_corrected < alpha``.

    ``random_sets``: R+1 image sets; by default :func:`xaikit.concepts.imageworld.random_images` with seeds
    ``seed*1000 + i`` and ``n_random`` images each.
    """
    from tqdm.auto import tqdm

    R = check_int(R, "R", 2, hint="a t-test needs at least 2 runs per side; the TCAV paper uses R=500, 10-50 "
                  "is enough to see significance here")
    layer = _check_common(model, layer, pooling)
    check_choice(classifier, "classifier", CLASSIFIERS)
    alpha = check_float(alpha, "alpha", 0.0, 1.0, strict_min=True)
    idx, label = resolve_class(model, target)
    if not isinstance(concepts, Mapping) or not concepts:
        raise TypeError("concepts must be a non-empty dict {name: images}, e.g. {'striped': imageworld."
                        "concept_images('striped')}")
    if random_sets is None:
        from xaikit.concepts.imageworld import random_images

        random_sets = [random_images(n_random, seed=seed * 1000 + i) for i in range(R + 1)]
    if len(random_sets) < R + 1:
        raise ValueError(f"random_sets must hold R+1={R + 1} sets (one random 'concept' plus R counterparts), "
                         f"got {len(random_sets)}")
    acts = lambda imgs, name: activations(model, _imgs(imgs, name), layer, pooling, processor)  # noqa: E731
    x_class = _imgs(class_images, "class_images")
    # gradients of the class logit at the layer, (N, D): S(x) = g(x) . v_C for every CAV below
    g = _cached(model, pixel_values(model, x_class, processor, "class_images"), layer, pooling, idx, 64)
    a_rand = [acts(r, f"random_sets[{i}]") for i, r in enumerate(random_sets[:R + 1])]
    a_neg = acts(negative, "negative") if negative is not None else None
    neg_name = "random" if negative is None else "negative"

    def run(a_pos, name, i, counter=None):
        rng = np.random.default_rng([seed, i, 17])
        if counter is None and a_neg is None:
            counter = a_rand[i + 1]
        elif counter is None:  # a fixed counterpart: vary the runs by subsampling both sets
            counter = a_neg[_subsample(len(a_neg), rng)]
            a_pos = a_pos[_subsample(len(a_pos), rng)]
        cav = _cav_cached(model, a_pos, counter, classifier, seed + i, name, neg_name, layer, pooling)
        return (*_score(g @ cav.vector), cav.accuracy)

    bar = tqdm(total=R * (len(concepts) + 1), desc="TCAV runs", disable=not progress, leave=False)
    base = []
    for i in range(R):
        # random set i vs random set i+1: every baseline run has its own pair, so the baseline's spread is
        # the spread of random CAVs, not of one random set against the others
        base.append(run(a_rand[i], "random", i, counter=a_rand[i + 1])[0])
        bar.update(1)
    random_scores = np.array(base)
    out = {}
    for name, imgs in concepts.items():
        a_pos = acts(imgs, f"concepts[{name!r}]")
        runs = []
        for i in range(R):
            runs.append(run(a_pos, name, i))
            bar.update(1)
        runs = np.array(runs)  # (R, 3): score, magnitude, CAV accuracy
        t, p = t_test(runs[:, 0], random_scores)
        p_corr = min(1.0, p * len(concepts))
        out[name] = ConceptSignificance(name, runs[:, 0], runs[:, 1], runs[:, 2], random_scores, t, p, p_corr,
                                        bool(p_corr < alpha))
    bar.close()
    return SignificanceResult(out, label, layer, pooling, classifier, neg_name, R, alpha, random_scores)


def _cav_cached(model, a_pos, a_neg, classifier, seed, concept, negative, layer, pooling) -> CAV:
    key = ("cav", hashlib.sha1(a_pos.tobytes()).hexdigest()[:16], hashlib.sha1(a_neg.tobytes()).hexdigest()[:16],
           classifier, seed)
    store = _store(model)
    if key not in store:
        store[key] = train_cav(a_pos, a_neg, classifier, seed, concept=concept, negative=negative, layer=layer,
                               pooling=pooling)
    return store[key]
