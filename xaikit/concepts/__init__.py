"""Concept-based explanations: TCAV on a Vision Transformer and the generated image world (notebook 05).

tcav (the entry points, re-exporting the rest), images (image input), activations (hooks, pooling, the cache,
directional derivatives), cav (CAVs and their solver), significance (the t-test and the significance runs),
sorting (images sorted by a CAV), imageworld (the generated images), intervention (the ground truth by
repainting scenes).
"""

from xaikit._lazy import attach

__getattr__, __dir__ = attach(__name__, {},
                              ("tcav", "images", "activations", "cav", "significance", "sorting", "imageworld",
                                "intervention"))
