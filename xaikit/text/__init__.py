"""Methods on the text of a BERT-family classifier, each returning :class:`~xaikit.text.tokens.TokenScores`
(notebooks 02 and 04).

registry (every text method by name: the views, the lab and the panels read it), encoding (the one entry
check and truncation rule), gradsam, shaptext, text_ig, views (attention-based views), lrp (relevance
propagation, Chefer et al.), editing (attention edits without touching weights), faithfulness (the "is
attention explanation?" lab), diagnostics (Wiegreffe & Pinter's diagnostic model), tokens (the result type).
"""

from xaikit._lazy import attach

__getattr__, __dir__ = attach(__name__, {}, ("registry", "encoding", "gradsam", "shaptext", "text_ig", "views",
                                             "lrp", "editing", "faithfulness", "diagnostics", "tokens"))
