"""Concept-based explanations: TCAV on a Vision Transformer (notebooks 05 and 07), on the generated image world
of :mod:`xaikit.models.imageworld`.

tcav (the entry points, re-exporting the rest), images (image input), activations (hooks, pooling, the cache,
directional derivatives), cav (CAVs and their solver), significance (the t-test and the rank test) and runs
(the significance runs), nullsets (the rank test's random concepts), sorting (images sorted by a CAV), claims
(the lecture's claims checked on a pair of models).
"""

from xaikit._lazy import attach

__getattr__, __dir__ = attach(__name__, {},
                              ("tcav", "images", "activations", "cav", "significance", "nullsets", "sorting",
                               "claims"))
