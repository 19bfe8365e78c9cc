"""Methods on the text of a BERT-family classifier, each returning :class:`~xaikit.text.tokens.TokenScores`
(notebooks 02 and 04), and the lab of experiments about them (:mod:`xaikit.lab`).

registry (every text method by name, each declared by its own module: the views, the lab and the panels
read it), views (``explain`` and ``all_views``), gradsam, shaptext, lime (Ribeiro et al.'s surrogate), text_ig,
attention_views (raw attention, rollout, gradient-weighted attention, attention gradient), lrp (relevance
propagation, Chefer et al.), attnlrp (AttnLRP), tokens (the result type), encoding (the text input rules of
:mod:`xaikit._text_input`). The experiments about these methods are the lab's (:mod:`xaikit.lab`).
"""

from xaikit._lazy import attach

__getattr__, __dir__ = attach(__name__, {}, ("registry", "encoding", "gradsam", "shaptext", "lime", "text_ig",
                                             "views", "attention_views", "lrp", "attnlrp", "tokens"))
