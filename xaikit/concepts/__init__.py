"""Concept-based explanations: TCAV on a Vision Transformer (notebook 05), on the generated image world of
:mod:`xaikit.models.imageworld`.

tcav (the entry points, re-exporting the rest), images (image input), activations (hooks, pooling, the cache,
directional derivatives), cav (CAVs and their solver), significance (the t-test and the significance runs),
nullsets (the rank test's random concepts), sorting (images sorted by a CAV), intervention (the ground truth
by repainting scenes), vit_relevance (where the ViT
looks, scored against the drawn pixels; notebook 07 section 4), vit_lrp (Chefer et al.'s CVPR 2021 LRP for the
ViT).
"""

from xaikit._lazy import attach

__getattr__, __dir__ = attach(__name__, {},
                              ("tcav", "images", "activations", "cav", "significance", "nullsets", "sorting",
                               "intervention", "vit_relevance", "vit_lrp"))
