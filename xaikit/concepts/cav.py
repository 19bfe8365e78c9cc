"""Concept activation vectors, step 2 of TCAV (Kim et al. 2018, "Interpretability beyond feature
attribution: quantitative testing with concept activation vectors (TCAV)", ICML; notebook 05).

The CAV ``v_C`` is the normal of a linear classifier that separates the concept's activations from the
counterpart's (logistic regression by default; hinge-loss SGD as in the original TCAV code), unit length,
pointing towards the concept. Its held-out accuracy is reported: a CAV that cannot separate its sets means
nothing. The logistic fit is an L2-regularised Newton solver (:class:`_LogisticL2`) in the row space of the
training activations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xaikit._validate import SKLEARN_SEED_MAX, bool_flags, check_choice, check_float, check_seed

__all__ = ["CHANCE_ACCURACY", "CLASSIFIERS", "CAV", "train_cav"]

#: a CAV whose held-out accuracy is at most this is flagged as near chance (two balanced sets: 0.5)
CHANCE_ACCURACY = 0.55
CLASSIFIERS = ("logistic", "hinge")


@dataclass
class CAV:
    """A concept activation vector: unit ``vector`` (D,) pointing from the counterpart to the concept."""

    vector: np.ndarray
    concept: str
    negative: str
    layer: int
    pooling: str
    classifier: str
    accuracy: float        # held-out accuracy of the linear classifier
    train_accuracy: float

    @property
    def near_chance(self) -> bool:
        """True when the held-out accuracy is at most :data:`CHANCE_ACCURACY`: the two sets cannot be told
        apart at this layer, and a TCAV score along this CAV means nothing (Kim et al. 2018, section 3.2)."""
        return self.accuracy <= CHANCE_ACCURACY


@bool_flags
def train_cav(concept_acts: np.ndarray, negative_acts: np.ndarray, classifier: str = "logistic",
              seed: int = 0, test_fraction: float = 0.25, concept: str = "concept",
              negative: str = "negative", layer: int = -1, pooling: str = "", reduce: bool = True) -> CAV:
    """Fit a linear classifier concept (1) vs negative (0) on a seeded split; the CAV is its unit normal.

    ``classifier="logistic"`` is L2 logistic regression; ``"hinge"`` is a linear SVM by SGD with the
    original TCAV code's settings (hinge loss, alpha=0.01). The held-out accuracy on ``test_fraction`` of
    each set is ``CAV.accuracy``. ``reduce=False`` fits in the full space (the reference the tests compare
    the row-space fit with).
    """
    check_choice(classifier, "classifier", CLASSIFIERS)
    seed = check_seed(seed, maximum=SKLEARN_SEED_MAX)
    test_fraction = check_float(test_fraction, "test_fraction", 0.0, 0.9)
    pos, neg = np.asarray(concept_acts), np.asarray(negative_acts)
    if pos.ndim != 2 or neg.ndim != 2 or pos.shape[1] != neg.shape[1]:
        raise ValueError(f"concept_acts and negative_acts must be (N, D) with the same D, got {pos.shape} and "
                         f"{neg.shape}")
    if len(pos) < 2 or len(neg) < 2:
        raise ValueError(f"each activation set needs at least 2 rows, got {len(pos)} and {len(neg)}")
    for name, acts in (("concept_acts", pos), ("negative_acts", neg)):
        if not np.isfinite(acts).all():
            bad = np.argwhere(~np.isfinite(acts).all(1)).ravel()
            raise ValueError(f"train_cav: {name} holds NaN or inf in {len(bad)} of its {len(acts)} rows (first: row "
                             f"{int(bad[0])}); a CAV fitted to them would be NaN. Check the model's activations "
                             f"(a NaN input or weight), or drop those rows")
    # one float64 copy of both sets, standardised in place below (at vit-base each (100, 151296) float64 array
    # is 121 MB: separate float64 sets, their concatenation and a standardised copy held four at once)
    x = np.concatenate([pos, neg], dtype=np.float64, casting="unsafe")
    y = np.concatenate([np.ones(len(pos)), np.zeros(len(neg))])
    test = _held_out(len(pos), len(neg), seed, test_fraction)
    # standardise for the solver, then map the normal back (w / scale): x[~test].std(0) + 1e-6 and
    # x[~test].mean(0) with the training rows copied and centred once (numpy's std sums the same squares
    # about the same mean); at vit-base's 151,296 numbers per image each pass over 75 rows costs ~0.1 s
    xt = x[~test]
    mu = np.add.reduce(xt, axis=0) / len(xt)
    xt -= mu
    xt *= xt
    scale = np.sqrt(np.add.reduce(xt, axis=0) / len(xt)) + 1e-6
    del xt
    z = x  # x is not read again: centred and scaled in place
    z -= mu
    z /= scale
    clf = _classifier(classifier, seed)
    # With more dimensions than training rows (all tokens flattened: 65 x 96 = 6240 here), the
    # L2-regularised optimum lies in the row space of the training data (representer theorem), so fit in
    # that r-dimensional basis and map back: the same CAV, 100x faster.
    # An orthonormal basis of that row space comes from the small (n, n) Gram matrix Z Z^T = V L V^T:
    # the rows of L^-1/2 V^T Z. (np.linalg.svd of the wide (n, D) matrix gives the same span but took
    # 1.7 s per CAV on two busy cores against 0.02 s for this, and 0.01 s without forming the basis.)
    # Only inner products with the training rows are needed: with K = Z Z_train^T (N, n), the Gram matrix is
    # K's training rows, each row's coordinates in the basis are K V L^-1/2, and a weight vector c in the
    # basis is c L^-1/2 V^T Z_train in the full space. One (N, D) x (D, n) product instead of three.
    back = None
    if reduce and z.shape[1] > int((~test).sum()):
        zt = z[~test]
        k = z @ zt.T  # (N, n)
        evals, evecs = np.linalg.eigh(k[~test])  # ascending
        keep = evals > max(evals[-1], 1e-300) * 1e-10
        to_basis = evecs[:, keep] / np.sqrt(evals[keep])  # (n, r): V L^-1/2
        z = k @ to_basis  # (N, r), orthonormal coordinates
        back = lambda c: (to_basis @ c) @ zt  # noqa: E731  (r,) -> (D,)
    clf.fit(z[~test], y[~test])
    w = (back(clf.coef_[0]) if back is not None else clf.coef_[0]) / scale
    norm = np.linalg.norm(w)
    vector = (w / norm if norm > 0 else w).astype(np.float32)
    acc_train = float(clf.score(z[~test], y[~test]))
    acc = float(clf.score(z[test], y[test])) if test.any() else acc_train
    return CAV(vector, concept, negative, layer, pooling, classifier, acc, acc_train)


def _held_out(n_pos: int, n_neg: int, seed: int, test_fraction: float = 0.25) -> np.ndarray:
    """``(n_pos + n_neg,)`` True at :func:`train_cav`'s held-out rows of ``concat([concept, counterpart])``:
    a stratified split, at least one training row per class."""
    y = np.concatenate([np.ones(n_pos), np.zeros(n_neg)])
    test = np.zeros(len(y), bool)
    for cls in (0, 1):
        rows = np.flatnonzero(y == cls)
        # the held-out rows of a set depend on the seed and the set's size only, not on which side it is
        # on: swapping concept and counterpart then trains on the same rows and gives exactly -v
        idx = rows[np.random.default_rng([seed, len(rows)]).permutation(len(rows))]
        k = min(int(round(test_fraction * len(idx))), len(idx) - 1)
        test[idx[:k]] = True
    return test


def _classifier(classifier: str, seed: int):
    if classifier == "logistic":
        return _LogisticL2(C=1.0)
    from sklearn.linear_model import SGDClassifier

    return SGDClassifier(loss="hinge", alpha=0.01, max_iter=1000, tol=1e-3, random_state=seed)


def _vector_from_training_rows(xt: np.ndarray, n_pos: int, classifier: str, seed: int) -> np.ndarray:
    """The unit CAV of :func:`train_cav` from its training rows alone, ``xt`` ``(n, D)`` float64: the concept's
    ``n_pos`` rows, then the counterpart's, in the order ``train_cav`` keeps them. No held-out accuracy: the
    same standardisation, row-space basis and fit, with the Gram matrix of the training rows only; equal to
    ``train_cav(...).vector`` up to the order of float sums in the matrix products (tests/test_tcav.py). For
    the significance test's random concepts, whose accuracy nobody reads (:mod:`xaikit.concepts.significance`).
    """
    y = np.concatenate([np.ones(n_pos), np.zeros(len(xt) - n_pos)])
    # train_cav's x.std(0) and (x - x.mean(0)) / scale with the centred rows formed once: numpy's std centres
    # on the same mean (the sum over the rows, divided by their count) and sums the same squares
    zt = xt - np.add.reduce(xt, axis=0) / len(xt)
    scale = np.sqrt(np.add.reduce(zt * zt, axis=0) / len(xt)) + 1e-6
    zt /= scale
    clf = _classifier(classifier, seed)
    if zt.shape[1] > len(zt):  # the row space, as train_cav
        k = zt @ zt.T  # (n, n)
        evals, evecs = np.linalg.eigh(k)
        keep = evals > max(evals[-1], 1e-300) * 1e-10
        to_basis = evecs[:, keep] / np.sqrt(evals[keep])
        clf.fit(k @ to_basis, y)
        w = ((to_basis @ clf.coef_[0]) @ zt) / scale
    else:
        clf.fit(zt, y)
        w = clf.coef_[0] / scale
    norm = np.linalg.norm(w)
    return (w / norm if norm > 0 else w).astype(np.float32)


class _LogisticL2:
    """L2-regularised logistic regression by Newton's method: the objective of scikit-learn's
    ``LogisticRegression(C)`` (``0.5 |w|^2 + C sum log(1 + exp(-y_i (w.x_i + b)))``, intercept not
    penalised) and the same solution (tested to 1e-6), but 10x faster on the small row-space problems of
    :func:`train_cav` (3 ms against 35 ms for 75 rows), because it skips scikit-learn's input validation
    and L-BFGS needs hundreds of steps where Newton needs about ten."""

    def __init__(self, C: float = 1.0, tol: float = 1e-10, max_iter: int = 100):
        self.C, self.tol, self.max_iter = C, tol, max_iter

    def fit(self, z: np.ndarray, y: np.ndarray) -> _LogisticL2:
        n, d = z.shape
        x = np.hstack([z, np.ones((n, 1))])  # (n, d+1): the last weight is the intercept
        sign = 2.0 * y - 1.0  # labels as -1/+1
        reg = np.full(d + 1, 1.0 / self.C)
        reg[-1] = 0.0
        objective = lambda w: np.logaddexp(0.0, -sign * (x @ w)).sum() + 0.5 * (reg * w * w).sum()  # noqa: E731
        w = np.zeros(d + 1)
        f = objective(w)
        for _ in range(self.max_iter):
            p = 0.5 * (1.0 - np.tanh(0.5 * sign * (x @ w)))  # sigmoid(-margin), overflow-free
            grad = reg * w - x.T @ (sign * p)
            if np.abs(grad).max() < self.tol:
                break
            hess = x.T @ (x * (p * (1.0 - p))[:, None]) + np.diag(reg + 1e-12)
            step = np.linalg.solve(hess, grad)
            t = 1.0
            while True:  # backtracking keeps every step a descent step
                f_new = objective(w - t * step)
                if f_new <= f - 1e-4 * t * (grad @ step) or t < 1e-8:
                    break
                t *= 0.5
            w, f = w - t * step, f_new
        self.coef_, self.intercept_ = w[None, :-1], w[-1:]
        return self

    def score(self, z: np.ndarray, y: np.ndarray) -> float:
        return float((((z @ self.coef_[0] + self.intercept_[0]) > 0) == (y > 0.5)).mean())
