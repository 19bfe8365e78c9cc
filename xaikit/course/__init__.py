"""Course tools, not methods: the claims ledger, homework self-checks, homework sheets, the nbgrader course,
presenter mode and the notebook builds."""

from xaikit._lazy import attach

__getattr__, __dir__ = attach(__name__, {}, ("checks", "homework", "nbgrading", "presenter", "notebooks"))
