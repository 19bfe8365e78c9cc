"""Methods on tensors: ``f`` maps a batch ``(B, ...)`` to ``(B,)`` or ``(B, C)`` (notebooks 01-02).

gradients (gradient, gradient x input, occlusion, SmoothGrad), integrated (Integrated Gradients and its
quadrature), baselines (image baselines of Sturmfels et al. 2020), paths (other path methods), contrast
(DeepLIFT and exact Shapley values for comparison), toys (the lecture's small models), registry (every map by name, read by the sanity checks of
:mod:`xaikit.lab.tensor_sanity`).
"""

from xaikit._lazy import attach

__getattr__, __dir__ = attach(__name__, {}, ("gradients", "integrated", "baselines", "paths", "contrast", "toys",
                                             "registry"))
