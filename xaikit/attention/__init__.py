"""Self-attention from scratch and attention read out of a real model (notebook 03).

scratch (scaled dot-product and multi-head attention, masks, the worked example), capture (a model's
attention weights and their recomputation from its own weights), norms (what each head moves:
Kobayashi et al. 2020's ``||alpha f(x)||`` beside the weights ``alpha``).
"""

from xaikit._lazy import attach

__getattr__, __dir__ = attach(__name__, {}, ("scratch", "capture", "norms"))
