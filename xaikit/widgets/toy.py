"""The base of the tensor panels of notebook 01 (the gradient panels of :mod:`xaikit.widgets.gradients`
and the sanity checks of Adebayo et al. 2018, :mod:`xaikit.widgets.sanity`): fixed axes placed by hand,
and the toy models run on the panel's torch threads."""

from __future__ import annotations

from xaikit.policies import panel_threads
from xaikit.widgets.base import Panel

__all__ = ["ToyPanel"]


class ToyPanel(Panel):
    """A notebook 01 panel: fixed axes placed by hand, and the toy models on the panel's torch threads.

    ``draw`` builds the axes, lists the artists that change in ``self.animated`` and fills them in through
    ``update_artists``, the base class's fast-redraw hook, which every later change calls alone.
    """

    layout = None  # fixed axes positions: the constrained layout engine would double the redraw time

    def update(self):
        with panel_threads():
            return super().update()
