"""The lecture panels. Each one is a :class:`~xaikit.widgets.base.Panel`; import them from here.

Panels load lazily, so ``import xaikit.widgets`` does not import torch.
"""

from __future__ import annotations

from xaikit._lazy import attach
from xaikit.widgets.base import Panel

# panel name -> module under xaikit.widgets
_PANELS: dict[str, str] = {
    "PatchGridPanel": "tcav", "ConceptGalleryPanel": "tcav", "TCAVPanel": "tcav", "LayerSweepPanel": "tcav",
    "CAVSortPanel": "cavsort", "RelevancePanel": "relevance",
    "GradientPanel": "gradients",
    "GradientSaturationPanel": "gradients",
    "ThresholdPanel": "gradients",
    "SmoothGradPanel": "gradients",
    "OcclusionPanel": "gradients",
    "SanityCheckPanel": "sanity",
    "PositionalEncodingPanel": "attention",
    "WorkedExamplePanel": "attention",
    "SaturationPanel": "attention",
    "MaskPanel": "attention",
    "HeadsPanel": "attention",
    "AttentionExplorer": "explorer",
    "AttentionNormsPanel": "norms",
    "MethodComparisonPanel": "text_methods", "LabPanel": "text_methods",
    "LimePanel": "lime_panel",
    "TextSanityPanel": "text_sanity",
    "IGStepsPanel": "integrated",
    "IGErrorPanel": "integrated",
    "IGPathPanel": "integrated",
    "IGBaselinePanel": "integrated",
    "IGCompletenessPanel": "integrated",
}


__all__ = ["Panel", *sorted(_PANELS)]

__getattr__, __dir__ = attach(__name__, _PANELS)
