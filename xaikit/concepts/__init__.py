"""Concept-based explanations: TCAV on a Vision Transformer and the generated image world (notebook 05)."""

from xaikit._lazy import attach

__getattr__, __dir__ = attach(__name__, {}, ("tcav", "imageworld"))
