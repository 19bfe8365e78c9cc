"""The faithfulness lab under its first name: :mod:`xaikit.text.lab.faithfulness` (``run_lab``,
``LabResult``), with the experiments of :mod:`xaikit.text.lab.removal` and :mod:`xaikit.text.lab.agreement`.
Notebook 06, sections 2-6.
"""

from __future__ import annotations

from xaikit.text.lab.agreement import (
    TAU_PAIRS,
    RankAgreement,
    input_gradient,
    leave_one_out,
    rank_agreement,
    word_tau,
)
from xaikit.text.lab.faithfulness import EXTRA_VIEWS, LabResult, rankings, run_lab
from xaikit.text.lab.removal import (
    ERASER_BINS,
    Erasure,
    PermutationChange,
    aopc,
    content_positions,
    erasure,
    flip_fraction,
    js_divergence,
    permutation_change,
)

__all__ = ["EXTRA_VIEWS", "ERASER_BINS", "TAU_PAIRS", "js_divergence", "content_positions", "erasure",
           "flip_fraction", "aopc", "permutation_change", "word_tau", "input_gradient", "leave_one_out",
           "RankAgreement", "rank_agreement", "LabResult", "run_lab", "rankings", "Erasure", "PermutationChange"]


def __getattr__(name: str):
    if name == "RANKINGS":  # the lab's rankings, read live from the registry
        return rankings()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
