"""Checks of notebook 05: a concept activation vector (``check_cav``) and the TCAV score (``check_tcav_score``),
Kim et al. 2018, and the rank test's p-value among random concepts (``check_rank_p``; a Monte Carlo test, Davison
& Hinkley 1997, section 4.2); of notebook 07: the cosine of activations with a CAV (``check_cav_cosines``, Kim et
al.'s Fig. 2). With the references an exercise falls back to while it is a stub. The skeleton they share is
:func:`xaikit.course.checks._core._run_check`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from xaikit.course.checks._core import CheckResult, _own, _run_check, _tensor

__all__ = ["check_cav", "check_tcav_score", "check_rank_p", "check_cav_cosines"]


# -- CAV and TCAV (notebook 05) ------------------------------------------------------------------------------
def _cav_case(seed: int = 0, n: int = 40, d: int = 6):
    """Concept activations shifted along a known direction u; negatives around the origin."""
    rng = np.random.default_rng(seed)
    u = np.zeros(d)
    u[1], u[3] = 0.8, -0.6  # unit
    concept = rng.normal(size=(n, d)) + 2.5 * u
    negative = rng.normal(size=(n, d))
    return concept, negative, u


def check_cav(student_fn: Callable, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(concept_acts (N, D), negative_acts (N, D)) -> cav (D,)`` (Kim et al. 2018; notebook
    05): a unit vector normal to a linear boundary between the two sets, pointing towards the concept.
    The concept set is shifted along a known direction, so the check knows where the CAV should point.
    Compared with :func:`xaikit.concepts.cav.train_cav` (cosine similarity, not exact: solvers differ)."""
    from xaikit.concepts.cav import train_cav

    concept, negative, u = _cav_case()
    ref = train_cav(concept, negative).vector.astype(np.float64)
    cases = [((concept.copy(), negative.copy()), (ref, u))]
    return _run_check("check_cav", student_fn, cases, _grade_cav, verbose)


def _grade_cav(result: CheckResult, got, ref: np.ndarray, u: np.ndarray) -> None:
    """The student's CAV against xaikit's ``ref`` and the direction ``u`` the concept was shifted along."""
    v = np.asarray(_tensor(got).numpy() if _tensor(got) is not None else [], dtype=np.float64).reshape(-1)
    if v.shape != ref.shape:
        result.fail(f"expected a vector of {ref.shape[0]} numbers (one per activation dimension), got shape "
                    f"{v.shape}", "shape")
        return
    norm = float(np.linalg.norm(v))
    if norm == 0 or not np.isfinite(norm):  # exact: only an all-zero vector has length 0
        result.fail(f"the CAV has length {norm}: it must be a direction", "zero_vector")
        return
    cos_ref, cos_u = float(v @ ref / norm), float(v @ u / norm)
    if cos_ref < -0.9:
        result.fail(f"your CAV points away from the concept (cosine with xaikit's CAV {cos_ref:.3f}): label the "
                    "concept examples 1 and the negatives 0, or flip the sign", "sign_flipped")
    elif cos_ref < 0.9:
        result.fail(f"your CAV is not the normal of a boundary between the sets: cosine with xaikit's CAV "
                    f"{cos_ref:.3f} (want > 0.9), with the true concept direction {cos_u:.3f}", "wrong_direction")
    else:
        result.ok(f"points towards the concept: cosine {cos_ref:.3f} with xaikit's CAV, {cos_u:.3f} with the "
                  "direction the concept was shifted along")
    if not math.isclose(norm, 1.0, rel_tol=1e-3):
        result.fail(f"normalise the CAV to length 1 (yours has length {norm:.4g}): directional derivatives are "
                    "then comparable across concepts and layers", "not_normalised")
    elif result.passed:
        result.ok("unit length")


def _tcav_case(seed: int = 1, n: int = 12, d: int = 5):
    rng = np.random.default_rng(seed)
    cav = np.zeros(d)
    cav[0] = 1.0
    grads = rng.normal(size=(n, d))
    grads[:, 0] += 0.3
    grads[2, 0] = 0.0  # exactly zero directional derivative: neither positive nor negative
    grads[7, 0] = 0.0
    return grads, cav


def check_tcav_score(student_fn: Callable, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(grads (N, D), cav (D,)) -> float``: the TCAV score, the fraction of class images
    whose directional derivative ``S(x) = grad . cav`` is strictly positive (Kim et al. 2018; notebook 05).
    Images whose derivative is exactly zero are included, to catch ``>= 0``; each image is also checked on
    its own, so the report names the images your function counts differently."""
    grads, cav = _tcav_case()
    s = grads @ cav  # (N,)
    ref = float((s > 0).mean())
    own = _own(student_fn)  # an exercise's own function, never the reference it falls back to
    cases = [((grads.copy(), cav.copy()), (grads, cav, s, ref, own))]
    return _run_check("check_tcav_score", student_fn, cases, _grade_tcav_score, verbose)


def _grade_tcav_score(result: CheckResult, got, grads: np.ndarray, cav: np.ndarray, s: np.ndarray, ref: float,
                      student_fn) -> None:
    """The student's score of ``grads`` along ``cav``; ``student_fn`` is run again on one image at a time."""
    try:
        got = float(np.asarray(_tensor(got).numpy()).reshape(()))
    except (AttributeError, TypeError, ValueError):
        result.fail(f"return one number (the fraction of images with S > 0), got {type(got).__name__}", "shape")
        return
    if math.isclose(got, ref, abs_tol=1e-9):
        result.ok(f"TCAV score {ref:.4g} = {int((s > 0).sum())} of {len(s)} images with S(x) > 0")
        return
    result.fail(f"expected {ref:.4g} ({int((s > 0).sum())} of {len(s)} images with S > 0), got {got:.4g}")
    positive = s[s > 0].sum()
    variants = {
        "greater_equal": ("images with S(x) = 0 are counted: TCAV counts only S > 0", float((s >= 0).mean())),
        "count_not_fraction": ("return the fraction of images, not the count", float((s > 0).sum())),
        "sign_flipped": ("you count S < 0: the score counts images whose logit rises along the CAV",
                         float((s < 0).mean())),
        "magnitude": ("this is the magnitude variant (sum of positive S over sum of |S|); the TCAV score is "
                      "the fraction of images with S > 0", float(positive / np.abs(s).sum())),
        "mean_derivative": ("this is the mean directional derivative, not a fraction", float(s.mean())),
    }
    for name, (message, value) in variants.items():
        if math.isclose(got, value, abs_tol=1e-9):
            result.fail(message, name)
            break
    disagree = []
    for i in range(len(s)):
        try:
            one = float(np.asarray(_tensor(student_fn(grads[i:i + 1].copy(), cav.copy())).numpy()).reshape(()))
        except Exception:  # noqa: BLE001 - a function that needs several images: skip locating
            disagree = []
            break
        if not math.isclose(one, float(s[i] > 0), abs_tol=1e-9):
            disagree.append(f"image {i} (S = {s[i]:.3g}): you give {one:.3g}, expected {float(s[i] > 0):.0f}")
    if disagree:
        result.hint("on one image at a time: " + "; ".join(disagree[:4]))


# -- the rank test among random concepts (notebook 05, section 5; used at scale in notebook 07) ----------------
def _rank_cases():
    """(value, null) pairs with known answers: far above, far below (two-sided), near one end of a few null
    values, in the middle of them, and ties at the value's distance."""
    # multiples of 1/64 throughout, so every distance is exact and a tie is a tie in any float arithmetic
    null = 0.25 + np.arange(19) / 32  # (19,) K = 19 random concepts' mean scores, 0.25 ... 0.8125
    yield 31 / 32, null      # beyond every random concept, above: p = 1/20
    yield 1 / 32, null       # beyond every one, below: the test is two-sided, p = 1/20 again
    # few random concepts, the concept near one end: the centre must include the concept (median 0.625, p = 4/6)
    yield 0.875, np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    yield 33 / 64, null      # in the middle: every random concept lies at least as far out, p = 1
    tied = np.array([0.125, 0.375, 0.5, 0.5, 0.625, 0.875])  # (6,) binary fractions: distances are exact
    yield 0.875, tied        # centre 0.5; 0.125 and 0.875 lie exactly as far out as the value: ties count (p = 3/7)


def check_rank_p(student_fn: Callable, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(value, null (K,)) -> p``: the two-sided Monte Carlo p-value of ``value`` among the
    K null values, ``(1 + #{k: |null_k - c| >= |value - c|}) / (K + 1)`` with ``c`` the median of all K + 1
    values (Davison & Hinkley 1997, section 4.2; notebook 05). Compared with
    :func:`xaikit.concepts.significance.rank_p` on five cases: far above, far below, near one end of a few random
    concepts (where the centre must include the concept), in the middle, and ties."""
    from xaikit.concepts.significance import rank_p

    cases = (((value, null.copy()), (value, null, rank_p(value, null))) for value, null in _rank_cases())
    return _run_check("check_rank_p", student_fn, cases, _grade_rank_p, verbose)


def _rank_variants(value: float, null: np.ndarray) -> dict[str, tuple[str, float]]:
    """The classic mistakes, each as the p-value it would give: (what to say, value)."""
    K = len(null)
    c = float(np.median(np.append(null, value)))
    far = np.abs(null - c)
    return {
        "no_plus_one": ("count the concept itself: p = (1 + #far) / (K + 1), so p is never 0 (the smallest p is "
                        "1/(K+1))", float((far >= abs(value - c)).sum() / K)),
        "one_sided": ("the test is two-sided: a concept far *below* the random concepts is as unusual as one far "
                      "above; compare distances from the centre", float((1 + (null >= value).sum()) / (K + 1))),
        "ties_not_counted": ("a random concept exactly as far out as the concept counts (>=, not >)",
                             float((1 + (far > abs(value - c)).sum()) / (K + 1))),
        "wrong_centre": ("measure distances from the median of all K + 1 values, the concept's included (not the "
                         "random concepts' median alone, not a mean, which one extreme value drags)",
                         float((1 + (np.abs(null - np.median(null)) >= abs(value - np.median(null))).sum())
                               / (K + 1))),
        "wrong_centre_mean": ("measure distances from the median of all K + 1 values, not their mean (one "
                              "extreme value drags a mean)",
                              float((1 + (np.abs(null - np.append(null, value).mean())
                                          >= abs(value - np.append(null, value).mean())).sum()) / (K + 1))),
    }


def _grade_rank_p(result: CheckResult, got, value: float, null: np.ndarray, ref: float) -> None:
    """The student's p-value of ``value`` among ``null`` against :func:`rank_p`'s ``ref``."""
    try:
        got = float(np.asarray(_tensor(got).numpy()).reshape(()))
    except (AttributeError, TypeError, ValueError):
        result.fail(f"return one number (the p-value), got {type(got).__name__}", "shape")
        return
    where = f"value {value:g} among {len(null)} random concepts"
    if math.isclose(got, ref, abs_tol=1e-9):
        result.ok(f"{where}: p = {ref:.4g}")
        return
    result.fail(f"{where}: expected p = {ref:.4g}, got {got:.4g}")
    for name, (message, wrong) in _rank_variants(value, null).items():
        if not math.isclose(wrong, ref, abs_tol=1e-9) and math.isclose(got, wrong, abs_tol=1e-9):
            result.fail(message, name.removesuffix("_mean"))
            break


# -- images sorted by a CAV: the cosine of each activation with it (notebook 07, section 3) ------------------------
def _cosine_case(seed: int = 2, n: int = 8, d: int = 5):
    """Activations of very different lengths and a CAV of length 2, so each missing normalisation shows."""
    rng = np.random.default_rng(seed)
    acts = rng.normal(size=(n, d)) * rng.uniform(0.2, 5.0, size=(n, 1))  # (n, d) rows of unequal length
    cav = np.zeros(d)
    cav[0], cav[2] = 1.2, -1.6  # (d,) length 2
    return acts, cav


def check_cav_cosines(student_fn: Callable, verbose: bool = True) -> CheckResult:
    """Check ``student_fn(acts (N, D), cav (D,)) -> (N,)``: the cosine similarity of each image's activation with
    the CAV, in the input's order, as Kim et al. (2018, Fig. 2) sort images by it (notebook 07). Compared with
    :func:`xaikit.concepts.sorting.sort_activations`' ``similarity``; the activations differ in length and the
    CAV has length 2, so a dot product, or a cosine normalised on one side only, is named."""
    from xaikit.concepts.sorting import sort_activations

    acts, cav = _cosine_case()
    ref = sort_activations(acts, cav).similarity.astype(np.float64)
    cases = [((acts.copy(), cav.copy()), (acts, cav, ref))]
    return _run_check("check_cav_cosines", student_fn, cases, _grade_cav_cosines, verbose)


def _grade_cav_cosines(result: CheckResult, got, acts: np.ndarray, cav: np.ndarray, ref: np.ndarray) -> None:
    t = _tensor(got)
    g = np.asarray(t.numpy() if t is not None else [], dtype=np.float64).reshape(-1)
    if g.shape != ref.shape:
        result.fail(f"expected one cosine per image, {ref.shape[0]} numbers, got shape {g.shape}", "shape")
        return
    if np.allclose(g, ref, atol=1e-6):
        result.ok(f"cosines of {len(ref)} activations with the CAV, in their order (largest {ref.max():.3f})")
        return
    worst = int(np.argmax(np.abs(g - ref)))
    result.fail(f"image {worst}: expected cosine {ref[worst]:.4f}, got {g[worst]:.4f}")
    dots = acts @ cav  # (N,)
    norms, length = np.linalg.norm(acts, axis=1), np.linalg.norm(cav)
    variants = {
        "dot_product": ("this is the dot product: divide by the lengths of the activation and of the CAV", dots),
        "cav_norm_only": ("divide by each activation's length too: long activations must not count for more",
                          dots / length),
        "activation_norm_only": ("divide by the CAV's length too (a CAV need not be a unit vector)", dots / norms),
        "sorted": ("return the cosines in the images' order, not sorted (sorting comes after)", np.sort(ref)[::-1]),
        "sign_flipped": ("the cosine with the CAV, not with minus the CAV", -ref),
    }
    for name, (message, wrong) in variants.items():
        if np.allclose(g, wrong, atol=1e-6):
            result.fail(message, name)
            break


# -- the references an exercise falls back to while it is a stub ------------------------------------------------
def _cav_reference(concept_acts, negative_acts):
    from xaikit.concepts.cav import train_cav

    return train_cav(concept_acts, negative_acts).vector


def _tcav_score_reference(grads, cav):
    return float((np.asarray(grads) @ np.asarray(cav) > 0).mean())


def _rank_p_reference(value, null):
    from xaikit.concepts.significance import rank_p

    return rank_p(value, null)


def _cav_cosines_reference(acts, cav):
    from xaikit.concepts.sorting import sort_activations

    return sort_activations(acts, cav).similarity
