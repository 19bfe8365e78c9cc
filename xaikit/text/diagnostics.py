"""Wiegreffe & Pinter's diagnostic model under its first name: this module is
:mod:`xaikit.text.lab.diagnostics` (``run_diagnostic``, ``diagnostic_data``, ``warm_notebook_cache``;
notebook 06, section 4), so every name of it, and a patch of one, is the same here and there.
"""

import sys

from xaikit.text.lab import diagnostics as _diagnostics

sys.modules[__name__] = _diagnostics
