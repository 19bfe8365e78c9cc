"""xaikit: a Jupyter-widget teaching toolkit for explainable AI.

Five lecture-aligned notebooks (``notebooks/``) call this package for every computation, widget and
figure. Importing ``xaikit`` is cheap: torch, transformers and shap load only when a name that needs
them is first used (PEP 562 module ``__getattr__``), so ``import xaikit`` stays well under a second.

Public names, by the module that holds them::

    gradients     gradient, grad_times_input, occlusion, smoothgrad      (notebook 01)
    toys          saturating, thresholded, softplus_relu, DigitsClassifier (notebook 01)
    integrated    integrated_gradients, steps_for_tolerance                (notebook 02)
    attention     scaled_dot_product_attention, multi_head_attention, ...  (notebook 03)
    gradsam       gradsam                                                  (notebook 04)
    shaptext      shap_text                                                (notebook 04)
    lime          lime                                                     (notebook 04)
    tcav          tcav, tcav_significance, ...                             (notebook 05)
    models        load_sentiment, load_vit                                 (notebooks 02-06)
    prepare       prepare: builds the cache (python -m xaikit prepare)
    widgets       the lecture panels
"""

from __future__ import annotations

from xaikit._config import cache_dir, device, fast_mode, pick, set_seed, shared_cache_dir, training_seed
from xaikit._lazy import attach
from xaikit._moved import install as _install_moved

__version__ = "0.1.0"

# name -> submodule that defines it; resolved on first access.
_EXPORTS: dict[str, str] = {
    # notebook 01
    "gradient": "tensor.gradients",
    "grad_times_input": "tensor.gradients",
    "occlusion": "tensor.gradients",
    "smoothgrad": "tensor.gradients",
    # notebook 02
    "integrated_gradients": "tensor.integrated",
    "steps_for_tolerance": "tensor.integrated",
    "text_integrated_gradients": "text.text_ig",
    "embedding_integrated_gradients": "text.text_ig",
    # notebook 03
    "scaled_dot_product_attention": "attention.scratch",
    "multi_head_attention": "attention.scratch",
    "capture_attention": "attention.capture",
    # notebook 04
    "gradsam": "text.gradsam",
    "shap_text": "text.shaptext",
    "lime": "text.lime",
    "TokenScores": "text.tokens",
    # notebook 05
    "tcav": "concepts.tcav",
    "tcav_significance": "concepts.significance",
    # homework self-checks (xaikit.course.checks)
    "check_grad_times_input": "course.checks.gradients", "check_ig_riemann": "course.checks.gradients",
    "check_attention": "course.checks.attention", "check_gradsam": "course.checks.gradsam",
    "check_cls_share": "course.checks.gradsam", "check_head_plots": "course.checks.gradsam",
    "check_cav": "course.checks.concepts", "check_tcav_score": "course.checks.concepts",
    "check_rank_p": "course.checks.concepts", "check_cav_cosines": "course.checks.concepts",
    "exercise": "course.checks",
}

# subpackages and modules reachable as attributes, e.g. ``xaikit.concepts.tcav.tcav_significance``.
_SUBMODULES = {"tensor", "text", "image", "attention", "concepts", "lab", "models", "widgets", "course", "plotting", "policies",
               "diagrams", "prepare"}

__all__ = ["__version__", "cache_dir", "device", "fast_mode", "pick", "set_seed", "shared_cache_dir", "training_seed", *sorted(_EXPORTS)]

__getattr__, __dir__ = attach(__name__, _EXPORTS, _SUBMODULES)

_install_moved()  # old module paths, kept for one release with a DeprecationWarning (xaikit._moved)
