"""The rows of the lecture-scale measurement: what xaikit's methods cost at the lecture's model sizes
(bert-base and vit-base-patch16-224, random weights of the hub configurations).

``scripts/lecture_scale.py`` measures each row and records it in ``xaikit/models/lecture_scale.json``; the
notebooks' model cells print the rows they name through :func:`xaikit.models.costs.lecture_costs`. A row's
``fn`` names the script's function that measures it; ``None`` means not measured yet.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    """One measured row: its name, what it runs, its goals (seconds, peak GB; ``None``: no goal) and the
    name of the function in ``scripts/lecture_scale.py`` that measures it."""

    name: str
    what: str
    goal_s: float | None
    goal_gb: float | None
    fn: str | None


#: the whole TCAV significance call against its forward passes alone (the ``tcav_floor`` row): at most this
FLOOR_RATIO_GOAL = 1.2

#: every row; add one by appending here and writing its function in ``scripts/lecture_scale.py``
ROWS: tuple[Row, ...] = (
    Row("tcav_activations", "TCAV activations, vit-base, block 10 (flatten), 50 images", None, 3.0,
        "row_tcav_activations"),
    Row("tcav_activations_disk", "the same activations read back from the disk cache in a new kernel", 5.0, 3.0,
        "row_tcav_activations_disk"),
    Row("tcav_score", "one TCAV score, vit-base, block 10, 50+50 images, 50 class images", None, 3.0,
        "row_tcav_score"),
    Row("tcav_significance", "tcav_significance t-test, vit-base, block 10, 3 concepts, R=10", 60.0, 3.0,
        "row_tcav_significance"),
    Row("tcav_floor", "tcav_significance t-test, vit-base, block 10, 3 concepts, R=10, against its forward "
        "passes alone in the same run (ratio <= 1.2)", None, 3.0, "row_tcav_floor"),
    Row("tcav_significance_next_kernel", "the same t-test in a new kernel, activations on disk", 60.0, 3.0,
        "row_tcav_significance_next_kernel"),
    Row("tcav_rank", "tcav_significance rank test, vit-base, K=100 sets of 50, R=10", 120.0, 3.0,
        "row_tcav_rank"),
    Row("gradsam", "Grad-SAM, bert-base, one sentence", None, 3.0, "row_gradsam"),
    Row("shap", "SHAP, bert-base, the five lecture sentences", None, 3.0, "row_shap"),
    Row("text_ig", "text IG, bert-base, 50 steps, one sentence", None, 3.0, "row_text_ig"),
    Row("rollout", "attention rollout, bert-base, one sentence", None, 3.0, "row_rollout"),
    Row("lrp", "Chefer LRP, bert-base, one sentence", None, 3.0, "row_lrp"),
    Row("lab", "the faithfulness lab, bert-base, 10 sentences", 20.0, 3.0, "row_lab"),
)
