"""The lab: experiments about the methods, not methods (notebooks 01, 05-07).

faithfulness (notebook 06's ``run_lab``, ``LabResult``: every experiment over held-out sentences), removal
(erasure in one attention layer and deletion from the input: single-item erasure, words removed before a
flip, ERASER's AOPC, Jain & Wallace's permutation), agreement (Jain & Wallace's rank agreement), editing
(attention edits without touching weights), diagnostic_model and diagnostics (Wiegreffe & Pinter's diagnostic
model and the experiment around it), tensor_sanity and text_sanity (Adebayo et al.'s sanity checks: image
maps, notebook 01, and a transformer's token scores, notebook 06), intervention (notebooks 05 and 07: the
ground truth without TCAV, scenes repainted), pixel_scores (notebook 07: the image methods scored against the
drawn pixels).
"""

from xaikit._lazy import attach

__getattr__, __dir__ = attach(__name__, {}, ("faithfulness", "removal", "agreement", "editing", "diagnostic_model",
                                             "diagnostics", "tensor_sanity", "text_sanity", "intervention",
                                             "pixel_scores"))
