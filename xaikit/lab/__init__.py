"""The faithfulness lab of notebook 06 (sections 2-6): experiments about the text methods, not methods.

faithfulness (``run_lab``, ``LabResult``: every experiment over held-out sentences), removal (erasure in one
attention layer and deletion from the input: single-item erasure, words removed before a flip, ERASER's
AOPC, Jain & Wallace's permutation), agreement (Jain & Wallace's rank agreement), editing (attention edits
without touching weights), diagnostic_model and diagnostics (Wiegreffe & Pinter's diagnostic model and
the experiment around it).
"""

from xaikit._lazy import attach

__getattr__, __dir__ = attach(__name__, {}, ("faithfulness", "removal", "agreement", "editing", "diagnostic_model",
                                             "diagnostics"))
