"""Methods on the pictures of a ViT image classifier: where it looks over its patch grid (notebook 07, section 4).

registry (the family's record and its one entry, ``relevance``: the pixels, the block and the target checked
and resolved once; every method by name, each declared by its own module), relevance (raw attention,
rollout, Chefer et al.'s gradient rule, gradient-weighted attention, gradient x input, IG on the pixels), lrp
(Chefer et al.'s CVPR 2021 LRP for a Hugging Face ViT).
"""

from xaikit._lazy import attach

__getattr__, __dir__ = attach(__name__, {}, ("registry", "relevance", "lrp"))
