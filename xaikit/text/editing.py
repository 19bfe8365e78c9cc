"""Attention edits without touching weights, under their first name: :mod:`xaikit.text.lab.editing`
(``edited_attention``, ``run_edited``; notebook 06, sections 2-3)."""

from __future__ import annotations

from xaikit.text.lab.editing import AttentionEdit, edited_attention, run_edited

__all__ = ["AttentionEdit", "edited_attention", "run_edited"]
