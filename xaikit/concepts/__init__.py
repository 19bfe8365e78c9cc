"""Concept-based explanations: TCAV on a Vision Transformer (notebooks 05 and 07), on the generated image world
of :mod:`xaikit.models.imageworld`.

tcav (the entry points, re-exporting the rest), images (image input), activations (hooks, pooling, the cache,
directional derivatives), cav (CAVs and their solver), significance (the t-test and the rank test),
nullscores (the rank test's table of random-concept scores), nullsets (the rank test's random concepts) and
sorting (images sorted by a CAV). The lecture's claims on a pair of ViTs are course content
(:mod:`xaikit.course.claims.tcav`).
"""

from xaikit._lazy import attach

__getattr__, __dir__ = attach(__name__, {},
                              ("tcav", "images", "activations", "cav", "significance", "nullsets", "sorting",
                               "nullscores"))
