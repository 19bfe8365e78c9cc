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
    tcav          tcav, tcav_significance, ...                             (notebook 05)
    models        load_sentiment, load_vit, prepare                        (notebooks 02-05)
    widgets       the lecture panels
"""

from __future__ import annotations

import importlib

from xaikit._config import cache_dir, device, fast_mode, set_seed

__version__ = "0.1.0"

# name -> submodule that defines it; resolved on first access.
_EXPORTS: dict[str, str] = {
    "tcav_significance": "tcav",
    # notebook 01
    "gradient": "gradients",
    "grad_times_input": "gradients",
    "occlusion": "gradients",
    "smoothgrad": "gradients",
    # notebook 02
    "integrated_gradients": "integrated",
    "steps_for_tolerance": "integrated",
    "text_integrated_gradients": "text_ig",
    # notebook 03
    "scaled_dot_product_attention": "attention", "multi_head_attention": "attention", "capture_attention": "capture",
    # notebook 04
    "gradsam": "gradsam",
    "shap_text": "shaptext",
    # homework self-checks (xaikit.checks)
    "check_grad_times_input": "checks", "check_ig_riemann": "checks", "check_attention": "checks",
    "check_gradsam": "checks",
    "check_cls_share": "checks", "check_head_plots": "checks", "check_cav": "checks",
    "check_tcav_score": "checks", "exercise": "checks",
}

# submodules reachable as attributes, e.g. ``xaikit.tcav.tcav_significance``.
_SUBMODULES = {
    "attention", "checks", "faithfulness", "gradients", "gradsam", "integrated", "models", "paths",
    "baselines", "plotting", "shaptext", "tcav", "toys", "widgets", "presenter", "contrast", "tokens",
    "imageworld", "views", "editing", "capture", "homework", "text_ig",
}

__all__ = ["__version__", "cache_dir", "device", "fast_mode", "set_seed", *sorted(_EXPORTS)]


def __getattr__(name: str):
    if name in _EXPORTS:
        module = importlib.import_module(f"xaikit.{_EXPORTS[name]}")
        value = getattr(module, name)
        globals()[name] = value  # later look-ups skip this function
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"xaikit.{name}")
    raise AttributeError(f"module 'xaikit' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS) | _SUBMODULES)
