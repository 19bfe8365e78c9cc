"""The claims ledger: every number a lecture notebook states about a computation, with how it is known.

A claim is a measurement over every build a student can get (training seeds 0-4 of
``python -m xaikit prepare --seed N``, the CPU's own kernels and the AVX2 ones, CUDA), not what one build
happened to show. So each claim is one :class:`Claim` in ``xaikit/course/claims/nbNN.py``, of one of three kinds:

* ``identity``: true by construction (completeness of IG at many steps, a softmax row summing to 1, a
  conserved LRP total), or a computation with no trained model in it (a closed form, the lecture's fixed
  worked example, a seeded random draw), which gives the same value on every build up to rounding. ``why``
  says which construction or computation; the bound is a numerical tolerance or the notebook's margin
  around the computed value.
* ``empirical``: a property of trained models, measured by ``benchmarks/claims_matrix.py`` over the build
  matrix. ``bound`` is what the notebook asserts and ``worst`` the worst value that matrix observed; the
  bound was fixed before (or independently of) the sweep and is never loosened to the builds seen.
* ``shown``: printed, never asserted, with the reason in ``why`` (it flips with the training seed, or it
  depends on the CPU that trained the model).

A notebook checks a claim by its id::

    from xaikit.course.claims import claim
    claim("04.5-shap-cls-never-first", share_of_sentences)   # asserts the bound, prints the sentence and value

The student sees the lecture, not the ledger: by default a call prints the claim's sentence and the number
behind it (:func:`student_line`), and nothing of ids, kinds, bounds or builds. Every claim is still checked
on every run, and a failing ``identity`` or ``empirical`` claim raises :class:`ClaimFailed` with the full
detail (id, bound, worst value over the build matrix, sentence), which is for the instructor and CI.

The instructor's view: with ``$XAIKIT_LEDGER=1`` (or after :func:`instructor` ``(True)``) every call prints
the full ledger line instead (:func:`ledger_line`: id, kind, value, bound, the matrix's worst value or range,
and for a shown claim why it is not asserted); ``python -m xaikit claims report`` writes the whole ledger as
one page (:mod:`xaikit.course.claims.report`).

When ``$XAIKIT_CLAIMS_LOG`` names a file a call also appends the value as one JSON line there, which is how
the claims matrix collects a run's values. The matrix also sets ``$XAIKIT_CLAIMS_COLLECT=1``, under which a
claim that fails is logged and printed as FAILED but does not stop the notebook, so one run measures every
claim; the matrix then fails instead. ``tests/test_claims.py`` checks that the ledger and the notebooks name
the same claims.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, SupportsFloat

from xaikit._validate import bool_flags

__all__ = ["Claim", "ClaimFailed", "LEDGER", "claim", "by_notebook", "LOG_ENV", "LEDGER_ENV", "instructor",
           "student_line", "ledger_line"]

LOG_ENV = "XAIKIT_CLAIMS_LOG"
COLLECT_ENV = "XAIKIT_CLAIMS_COLLECT"
#: set to 1 for the instructor's view: every claim() prints its full ledger line
LEDGER_ENV = "XAIKIT_LEDGER"
KINDS = ("identity", "empirical", "shown")


class ClaimFailed(AssertionError):
    """A notebook's claim did not hold on this build (an ``AssertionError``, so notebook tests see it)."""


@dataclass(frozen=True)
class Claim:
    """One entry of the ledger.

    Attributes:
        id: ``"NN.S-short-name"``: notebook number, section number, a few words.
        sentence: the sentence of the notebook that states the claim, in short.
        kind: ``"identity"``, ``"empirical"`` or ``"shown"`` (see the module docstring).
        lower, upper: the asserted bound(s), inclusive unless ``strict``; ``None`` for no bound on that side.
            A ``shown`` claim has neither.
        strict: the bound is strict (``>``/``<``) rather than ``>=``/``<=``.
        why: for identities, the construction that makes it true; for shown claims, why it is not asserted;
            for empirical claims, where the bound comes from (the lecture, the paper, a control).
        worst: for empirical claims, the worst value ``benchmarks/claims_matrix.py`` observed over the
            matrix (closest to or past the bound), and ``worst_build`` which build gave it.
        lecture: the lecture's or paper's own number beside ours, where there is one.
        seen: for shown claims, the smallest and largest value over the build matrix (printed beside the
            build's own value, so a prose range is printed by code), or ``None`` before a matrix run.
        seen_builds: how many builds ``seen`` covers (fewer than the matrix's when a claim was measured on some
            builds only); 0 when unknown.
    """

    id: str
    sentence: str
    kind: Literal["identity", "empirical", "shown"]
    lower: float | None = None
    upper: float | None = None
    strict: bool = False
    why: str = ""
    worst: float | None = None
    worst_build: str = ""
    lecture: str = ""
    seen: tuple[float, float] | None = None
    seen_builds: int = 0
    notebook: str = field(init=False)
    section: str = field(init=False)

    def __post_init__(self) -> None:
        head = self.id.split("-", 1)[0]
        notebook, _, section = head.partition(".")
        if len(notebook) != 2 or not notebook.isdigit() or not section or "-" not in self.id:
            raise ValueError(f"claim id {self.id!r} must look like 'NN.S-short-name' (notebook, section, name)")
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.id}: kind must be one of {KINDS}, got {self.kind!r}")
        bounded = self.lower is not None or self.upper is not None
        if self.kind == "shown" and bounded:
            raise ValueError(f"claim {self.id}: a shown claim is printed, not asserted, so it has no bound")
        if self.kind != "shown" and not bounded:
            raise ValueError(f"claim {self.id}: an {self.kind} claim needs a lower or an upper bound")
        if self.kind in ("identity", "shown") and not self.why:
            raise ValueError(f"claim {self.id}: a {self.kind} claim must say why (the construction, or why "
                             "it is not asserted)")
        object.__setattr__(self, "notebook", notebook)
        object.__setattr__(self, "section", section)

    def holds(self, value: float) -> bool:
        """Whether ``value`` is inside the bound (always True for a shown claim; False for NaN)."""
        if self.kind == "shown":
            return True
        if value is None or math.isnan(value):
            return False
        if self.lower is not None and (value <= self.lower if self.strict else value < self.lower):
            return False
        if self.upper is not None and (value >= self.upper if self.strict else value > self.upper):
            return False
        return True

    def margin(self, value: float) -> float | None:
        """How far ``value`` is inside its bound (negative: outside); None for a shown claim."""
        if self.kind == "shown" or value is None or math.isnan(value):
            return None
        sides = []
        if self.lower is not None:
            sides.append(value - self.lower)
        if self.upper is not None:
            sides.append(self.upper - value)
        return min(sides)

    def bound_text(self) -> str:
        lo, hi = ("<", "<") if self.strict else ("<=", "<=")
        if self.lower is not None and self.upper is not None:
            return f"{self.lower:g} {lo} value {hi} {self.upper:g}"
        if self.lower is not None:
            return f"{'>' if self.strict else '>='} {self.lower:g}"
        if self.upper is not None:
            return f"{'<' if self.strict else '<='} {self.upper:g}"
        return "shown, not asserted"


def _load() -> dict[str, Claim]:
    from importlib import import_module

    ledger: dict[str, Claim] = {}
    files = sorted(p.stem[2:] for p in Path(__file__).parent.glob("nb[0-9][0-9].py"))
    for nn in files:
        module = import_module(f"xaikit.course.claims.nb{nn}")
        for entry in module.CLAIMS:
            if entry.id in ledger:
                raise ValueError(f"claim id {entry.id!r} appears twice in the ledger")
            if entry.notebook != nn:
                raise ValueError(f"claim {entry.id!r} is listed in nb{nn}.py but names notebook {entry.notebook}")
            ledger[entry.id] = entry
    return ledger


#: the worst value of every claim over the last full build matrix, written by
#: ``python benchmarks/claims_matrix.py --record`` (a committed file: the evidence behind each bound)
MEASURED_FILE = Path(__file__).with_name("measured.json")


def _with_measured(ledger: dict[str, Claim]) -> dict[str, Claim]:
    import dataclasses

    if not MEASURED_FILE.is_file():
        return ledger
    measured = json.loads(MEASURED_FILE.read_text())["claims"]
    out = {}
    for cid, entry in ledger.items():
        seen = measured.get(cid)
        if seen is not None and entry.kind == "empirical" and seen.get("worst") is not None:
            entry = dataclasses.replace(entry, worst=seen["worst"], worst_build=seen["worst_build"])
        elif seen is not None and entry.kind == "shown" and seen.get("range") is not None:
            entry = dataclasses.replace(entry, seen=(float(seen["range"][0]), float(seen["range"][1])),
                                        seen_builds=int(seen.get("builds") or 0))
        out[cid] = entry
    return out


LEDGER: dict[str, Claim] = _with_measured(_load())


def _matrix_builds() -> list[str]:
    """The builds of the committed claims-matrix record (empty before the first ``--record``)."""
    if not MEASURED_FILE.is_file():
        return []
    return list(json.loads(MEASURED_FILE.read_text()).get("builds", []))


def by_notebook(nn: str) -> list[Claim]:
    """The ledger's claims of notebook ``nn`` ("01" ... "07"), in the order they are listed."""
    return [c for c in LEDGER.values() if c.notebook == nn]


def _as_float(value, claim_id: str) -> float:
    try:
        import torch

        if isinstance(value, torch.Tensor):
            value = value.detach().cpu()
    except ImportError:  # pragma: no cover - torch is a hard dependency
        pass
    if isinstance(value, (str, bytes)):  # float("0.5") would pass: a claim checks a computed number, not text
        raise TypeError(f"claim({claim_id!r}, value): value must be one number (a float, an int, a bool or a "
                        f"one-element tensor/array), got the {type(value).__name__} {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"claim({claim_id!r}, value): value must be one number (a float, an int, a bool or "
                        f"a one-element tensor/array), got {type(value).__name__}") from err


_YES = {"1", "true", "yes", "on"}
_instructor: bool | None = None

#: shown claims whose spread over training seeds is itself what the lecture says: the student's line gives
#: the range the claims matrix saw ("varies with the training seed: a to b") beside this build's value
SEED_SPREAD = frozenset({
    "02.3-steepest-early", "02.3-flat-near-x", "02.3-gradient-at-x-misses",
    "02.8-cannot-wait-positive", "04.1-cannot-wait-p-positive", "04.1-lecture-labels",
    "06.4-wp-attention-over-uniform-mean", "06.4-wp-attention-over-learned-mean",
    "05.4-striped-vs-dotted", "05.4-bubbly-vs-striped", "05.4-dotted-vs-bubbly",
    "06.6-not-beating-random", "07.3-zebra-first-share",
})


@bool_flags
def instructor(on: bool | None = True) -> None:
    """Switch the instructor's view on (``True``: every :func:`claim` prints its full ledger line) or off
    (``False``: the student's line); ``None`` goes back to following ``$XAIKIT_LEDGER``."""
    global _instructor
    if on is not None and not isinstance(on, bool):
        raise TypeError(f"instructor(on): on must be True, False or None, got {on!r}")
    _instructor = on


def instructor_view() -> bool:
    """Whether :func:`claim` prints the ledger line: :func:`instructor`'s setting, else ``$XAIKIT_LEDGER``."""
    if _instructor is not None:
        return _instructor
    return os.environ.get(LEDGER_ENV, "").strip().lower() in _YES


def _number(x: float) -> str:
    if math.isfinite(x) and x == int(x) and abs(x) < 1e6:
        return str(int(x))
    return f"{x:.3g}"


def student_line(entry: Claim, value: float, note: str = "") -> str:
    """What the student reads: the claim's sentence and the number behind it (and ``note``); for a claim of
    :data:`SEED_SPREAD` also the range over training seeds. No id, kind, bound or build."""
    sentence = entry.sentence.strip().rstrip(".")
    extra = f" ({note})" if note else ""
    spread = ""
    if entry.id in SEED_SPREAD and entry.seen is not None:
        spread = f"; varies with the training seed: {_number(entry.seen[0])} to {_number(entry.seen[1])}"
    join = " " if sentence.endswith("?") else ": "  # "Is it high, as in the lecture? 0.8"
    return f"{sentence}{join}{_number(value)}{extra}{spread}"


def ledger_line(entry: Claim, value: float, note: str = "") -> str:
    """The instructor's line: id, kind, value, bound and what the claims matrix saw (for a shown claim its
    range and why it is not asserted)."""
    x, extra = value, (f" ({note})" if note else "")
    if entry.kind == "shown":
        n = entry.seen_builds or len(_matrix_builds())  # some claims were measured on fewer builds
        over = (f"; over {n} build{'s' if n != 1 else ''} of the claims matrix {entry.seen[0]:.3g} to "
                f"{entry.seen[1]:.3g}" if entry.seen is not None else "")
        return f"[shown] {entry.id}: {x:.4g}{extra}{over}  (not asserted: {entry.why})"
    if entry.kind == "identity":
        return f"[identity] {entry.id}: {x:.3g}{extra}, bound {entry.bound_text()}"
    seen = f"; worst over the build matrix {entry.worst:.4g}" if entry.worst is not None else ""
    return f"[claim] {entry.id}: {x:.4g}{extra}, bound {entry.bound_text()}{seen}"


@bool_flags
def claim(claim_id: str, value: SupportsFloat, *, quiet: bool = False, note: str = "") -> float:
    """Check ledger claim ``claim_id`` against ``value``, print one line, and return the value as a float.

    An ``identity`` or ``empirical`` claim raises :class:`ClaimFailed` (an ``AssertionError``) when the value
    is outside its bound, with the id, the bound, the worst value seen over the build matrix and the sentence;
    a ``shown`` claim only prints. The line printed is the student's (:func:`student_line`: the sentence and
    the value), or in the instructor's view the ledger's (:func:`ledger_line`). ``note``: a few words printed
    after the value (e.g. which sentence). ``quiet``: print nothing unless the claim fails (for claims
    checked in a loop).
    """
    if claim_id not in LEDGER:
        raise KeyError(f"claim {claim_id!r} is not in the ledger (xaikit/course/claims/nbNN.py); add an entry there "
                       "with its sentence, kind and bound")
    entry = LEDGER[claim_id]
    x = _as_float(value, claim_id)
    ok = entry.holds(x)
    log = os.environ.get(LOG_ENV)
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"id": claim_id, "value": x, "holds": ok, "kind": entry.kind}) + "\n")
    if not ok and os.environ.get(COLLECT_ENV, "").strip().lower() in _YES:
        print(f"[FAILED, collected] {claim_id}: {x:.6g}, bound {entry.bound_text()}")
        return x
    if not ok:
        seen = f"; worst over the build matrix: {entry.worst:g} ({entry.worst_build})" if entry.worst is not None else ""
        reason = f"; why: {entry.why}" if entry.why else ""
        raise ClaimFailed(f"claim {claim_id} does not hold on this build: value {x:.6g}, bound {entry.bound_text()}"
                          f"{seen}. The claim: {entry.sentence}{reason}")
    if not quiet:
        print(ledger_line(entry, x, note) if instructor_view() else student_line(entry, x, note))
    return x
