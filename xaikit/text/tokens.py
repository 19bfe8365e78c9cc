"""One type for per-token scores, shared by every text method (IG, Grad-SAM, SHAP, attention views).

Because every method returns a :class:`TokenScores`, any two can be drawn side by side and compared by
rank correlation (Spearman's rho and Kendall's tau, as in Jain & Wallace 2019, "Attention is not
Explanation"). Used by notebooks 02 (section 8), 04 and 06.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xaikit._validate import bool_flags, check_int


@dataclass
class TokenScores:
    """Scores for the tokens of one text.

    Attributes:
        tokens: the model's tokens, special tokens included (``[CLS] i like the movie [SEP]``).
        scores: one float per token, shape ``(len(tokens),)``.
        method: a short name for legends, e.g. ``"Grad-SAM"``.
        target: the class explained (``None`` when not applicable).
        signed: whether negative scores are meaningful (IG, SHAP) or scores are non-negative (Grad-SAM).
        detail: the method's own typed result with the intermediates a figure needs, or ``None``:
            :class:`~xaikit.text.gradsam.GradSAMDetail`, :class:`~xaikit.tensor.integrated.IGResult` (text
            IG), :class:`~xaikit.text.shaptext.ShapDetail`, :class:`~xaikit.text.attention_views.AttentionDetail`,
            :class:`~xaikit._lrp.LRPDetail`, :class:`~xaikit.text.lime.LimeDetail`.
            Every array in it is on the CPU (NumPy, or CPU tensors for IG).
    """

    tokens: list[str]
    scores: np.ndarray
    method: str = ""
    target: int | None = None
    signed: bool = True
    detail: Any = None

    def __post_init__(self):
        if isinstance(self.tokens, str):  # a sentence would be split into its characters
            raise TypeError(f"tokens must be a list of token strings, got one str {self.tokens[:40]!r}; e.g. "
                            f"TokenScores(tokenizer.tokenize(text), scores) or TokenScores(text.split(), scores)")
        self.tokens = [str(t) for t in self.tokens]
        s = self.scores
        if hasattr(s, "detach"):  # a tensor, on any device and in any dtype (bfloat16 included)
            from xaikit._fn import to_cpu

            s = to_cpu(s).numpy()
        self.scores = np.asarray(s, dtype=float).reshape(-1)
        if len(self.tokens) != len(self.scores):
            raise ValueError(f"tokens and scores differ in length: {len(self.tokens)} tokens, {len(self.scores)} scores")

    def __len__(self) -> int:
        return len(self.tokens)

    @bool_flags
    def ranking(self, by_abs: bool | None = None) -> list[int]:
        """Token indices from most to least important (by |score| for signed methods, unless told)."""
        use_abs = self.signed if by_abs is None else by_abs
        scores = np.asarray(self.scores, dtype=float)
        if np.isnan(scores).any():  # argsort puts NaN last: a NaN token would read as the least important
            bad = [self.tokens[i] for i in np.flatnonzero(np.isnan(scores))]
            raise ValueError(f"scores hold NaN for token(s) {bad[:5]}: a NaN has no rank, and ranking it last would "
                             f"call it the least important. Recompute the scores (a NaN input or model output?), or "
                             f"set those scores explicitly")
        key = np.abs(scores) if use_abs else scores
        return [int(i) for i in np.argsort(-key, kind="stable")]

    @bool_flags
    def top(self, k: int = 5, by_abs: bool | None = None) -> list[tuple[str, float]]:
        """The ``k`` most important tokens with their scores (all of them if ``k`` is larger)."""
        k = check_int(k, "k", 1, hint="k is how many of the most important tokens to list, e.g. 5")
        return [(self.tokens[i], float(self.scores[i])) for i in self.ranking(by_abs)[:k]]

    def without(self, drop: tuple[str, ...] = ("[CLS]", "[SEP]", "<s>", "</s>")) -> TokenScores:
        """The same scores with special tokens removed (for comparing with SHAP, which has none)."""
        keep = [i for i, t in enumerate(self.tokens) if t not in drop]
        return TokenScores([self.tokens[i] for i in keep], self.scores[keep], self.method, self.target,
                           self.signed, self.detail)

    def normalized(self) -> np.ndarray:
        """Scores divided by their largest absolute value (all zeros stay zeros)."""
        m = float(np.abs(self.scores).max()) if len(self) else 0.0
        return self.scores / m if m > 0 else self.scores.copy()

    def html(self, title: str | None = None) -> str:
        from xaikit.plotting import token_heatmap_html

        return token_heatmap_html(self.tokens, self.scores, signed=self.signed,
                                  title=title if title is not None else self.method)

    def _repr_html_(self) -> str:
        return self.html()

    def bar(self, ax, title: str | None = None):
        """Signed bars per token (diverging colours) on a Matplotlib axis."""
        from xaikit.plotting import signed_bars

        return signed_bars(ax, self.tokens, self.scores, title=title if title is not None else self.method)


@bool_flags
def rank_correlation(a: TokenScores, b: TokenScores, by_abs: bool = True) -> dict[str, float]:
    """Spearman's rho and Kendall's tau between two methods' scores on the same tokens.

    ``by_abs=True`` compares importance magnitudes (the usual choice when one method is unsigned).
    """
    from scipy.stats import kendalltau, spearmanr

    if a.tokens != b.tokens:
        raise ValueError(f"the two score sets are for different tokens: {a.tokens} vs {b.tokens}; "
                         "compare scores of the same sentence and tokenizer (use .without() on both to drop "
                         "special tokens)")
    x = np.abs(a.scores) if by_abs else a.scores
    y = np.abs(b.scores) if by_abs else b.scores
    if len(x) < 2:
        raise ValueError("rank correlation needs at least 2 tokens")
    rho = spearmanr(x, y).statistic
    tau = kendalltau(x, y).statistic
    return {"spearman": float(rho), "kendall": float(tau)}
