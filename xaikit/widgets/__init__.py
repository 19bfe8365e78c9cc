"""The lecture panels. Each one is a :class:`~xaikit.widgets.base.Panel`; import them from here.

Panels load lazily, so ``import xaikit.widgets`` does not import torch.
"""

from __future__ import annotations

import importlib

from xaikit.widgets.base import Panel

# panel name -> module under xaikit.widgets
_PANELS: dict[str, str] = {
    "PatchGridPanel": "tcav", "ConceptGalleryPanel": "tcav", "TCAVPanel": "tcav", "LayerSweepPanel": "tcav",
    "GradientPanel": "gradients",
    "GradientSaturationPanel": "gradients",
    "ThresholdPanel": "gradients",
    "SmoothGradPanel": "gradients",
    "PositionalEncodingPanel": "attention",
    "WorkedExamplePanel": "attention",
    "SaturationPanel": "attention",
    "MaskPanel": "attention",
    "HeadsPanel": "attention",
    "AttentionExplorer": "attention",
    "MethodComparisonPanel": "text_methods", "LabPanel": "text_methods",
    "IGStepsPanel": "integrated",
    "IGPathPanel": "integrated",
    "IGBaselinePanel": "integrated",
    "IGCompletenessPanel": "integrated",
}


def __getattr__(name: str):
    if name in _PANELS:
        value = getattr(importlib.import_module(f"xaikit.widgets.{_PANELS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'xaikit.widgets' has no attribute {name!r}")


__all__ = ["Panel", *sorted(_PANELS)]
