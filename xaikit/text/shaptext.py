"""SHAP values for text classifiers: SHAP's Partition explainer with the tokenizer as masker (Lundberg &
Lee 2017, "A Unified Approach to Interpreting Model Predictions"). Used by notebook 04, sections 4 and 5.

**What the Partition explainer computes.** The masker groups the tokens into a binary tree (neighbours
first). From the root down, each group is split into its two halves and the model is asked about the text
with one half hidden (``[MASK]``) and the other shown. ``fixed_context`` decides in which context:

* ``None``: each split is measured with the rest of the text hidden and with it shown, and the two are
  averaged. With ``max_evals`` large enough to split the whole tree, the values are Owen values over
  that tree (Shapley values of each split, nested).
* ``1`` (the lecture's, and xaikit's default): each half is measured only against the otherwise full text,
  f(all) - f(all but that half). Each half's value then includes their interaction
  I = f11 - f10 - f01 + f00, so the two count it twice, and -I is left on the group (SHAP's
  ``dvalues[ind] -= ...``); these are not Owen values.

Whatever is left on a group (that -I, or the whole value of a group that ``max_evals`` never
split) is handed down at the end to the group's tokens in equal shares. The special tokens ([CLS], [SEP])
are always kept by the masker, so their own effect is zero, yet with ``fixed_context=1`` they receive these
shares like every other token. :func:`credit_split` separates the two parts. Either way the values add up to
f(x) - f(all masked) (checked by :func:`shap_text`).

**Padding.** The lecture's prediction function pads every masked variant to ``max_length`` (512 tokens for
BERT), so each masked variant SHAP asks about (about a dozen for a four-word sentence, hundreds for a long
text) costs a full 512-token forward pass. Padding only to the longest text in each call gives the same
numbers (padding is masked out of attention) many times faster; ``benchmarks/shap_padding.py`` measures
both. ``padding="max_length"`` keeps the lecture's recipe for that comparison.

The result is SHAP's own :class:`shap.Explanation`, so ``shap.plots.text`` and ``shap.plots.bar`` work on
it; :func:`to_token_scores` turns one row into xaikit's :class:`~xaikit.text.tokens.TokenScores` for side-by-side
comparison with Grad-SAM and the attention views.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from xaikit._fn import computing
from xaikit._text_input import (
    PreparedText,
    Tokenizer,
    check_model,
    check_target,
    check_texts,
    fit_text,
    max_tokens,
    resolve_texts_target,
    run_text,
)
from xaikit._types import Target
from xaikit._validate import bool_flags, check_choice, check_float, check_int
from xaikit.text.registry import TextMethod, register
from xaikit.text.tokens import TokenScores

__all__ = ["prediction_function", "shap_text", "to_token_scores", "token_scores", "additivity_gaps", "credit_split",
           "use_numba", "helper_kinds", "NumbaCompileWarning"]

_NUMBA_ORIGINALS: dict = {}
_NUMBA_CHOSEN: list[bool] = []  # non-empty once use_numba ran (xaikit's default or the user's choice)
# the modules whose numba helpers the Partition explainer calls (not ``shap.links``: the link functions are
# compared by identity, so they must stay as they are)
_NUMBA_MODULES = ("shap.utils._masked_model", "shap.explainers._partition", "shap.utils._clustering",
                  "shap.maskers._text")
#: the Partition explainer's helpers. shap 0.45-0.51 JIT-compiles them with numba on their first call in a
#: process; shap 0.52+ ships them compiled ahead of time (nanobind functions of ``shap._cutils``) and needs
#: no numba at all. :func:`helper_kinds` says which the installed SHAP has; only numba's are switched.
_NUMBA_EXPECTED = {
    "shap.utils._masked_model": ("_build_fixed_single_output", "_build_fixed_multi_output", "_init_masks",
                                 "_rec_fill_masks"),
    "shap.explainers._partition": ("lower_credit",),
    "shap.utils._clustering": ("_pt_shuffle_rec", "delta_minimization_order", "_reverse_window"),
}
#: the range of seconds the warning of a real compile names: numba compiles SHAP's four Partition helpers once
#: per process (benchmarks/shap_padding.py measures it)
COMPILE_SECONDS = (5, 10)


class NumbaCompileWarning(RuntimeWarning):
    """SHAP is compiling one of its numba helpers now: this call waits :data:`COMPILE_SECONDS` longer."""


_COMPILE_WARNED: list[str] = []  # the helper whose compile was announced (once per process)


def _is_dispatcher(value) -> bool:
    return hasattr(value, "py_func") and type(value).__name__.endswith("Dispatcher")


def helper_kinds() -> dict[str, str]:
    """What each Partition-explainer helper IS in the installed SHAP, by ``"module.name"``:

    * ``"numba"``: a numba dispatcher, compiled on its first call in a process (shap 0.45-0.51, as shipped);
    * ``"python"``: a plain Python function (numba's ``py_func`` that :func:`use_numba` put in place, or
      plain Python in SHAP itself);
    * ``"compiled"``: compiled ahead of time (shap 0.52+: nanobind functions), nothing to compile or switch;
    * ``"missing"``: not there (a SHAP release that moved or renamed it).
    """
    import importlib
    import inspect

    kinds = {}
    for name, helpers in _NUMBA_EXPECTED.items():
        try:
            module = importlib.import_module(name)
        except ImportError:
            module = None
        for helper in helpers:
            value = None if module is None else vars(module).get(helper)
            kinds[f"{name}.{helper}"] = ("missing" if value is None else "numba" if _is_dispatcher(value)
                                         else "python" if inspect.isfunction(value) else "compiled")
    return kinds


@bool_flags
def use_numba(enable: bool = False) -> int:
    """Run SHAP's numba-compiled helpers as plain Python (``enable=False``, xaikit's default) or compiled.

    SHAP 0.45-0.51's Partition explainer JIT-compiles a few helpers with numba the first time it runs in a
    process and does not cache them, which takes far longer (:data:`COMPILE_SECONDS`) than explaining a
    short sentence. The plain-Python versions are the same functions (numba's ``py_func``), so the values
    are identical; for long documents ``use_numba(True)`` brings the compiled versions back. Only helpers
    that ARE numba dispatchers are switched (:func:`helper_kinds`): on shap 0.52+, whose helpers are
    compiled ahead of time, this switches nothing and returns 0. Returns the number of functions switched.
    A compile that does happen (``use_numba(True)``, or helpers SHAP moved elsewhere) is announced by a
    :class:`NumbaCompileWarning` when it starts.
    """
    import sys

    import shap  # noqa: F401 - loads the modules whose helpers are switched

    _NUMBA_CHOSEN[:] = [bool(enable)]
    switched = 0
    for name in _NUMBA_MODULES:
        module = sys.modules.get(name)
        if module is None:
            continue
        for attr, value in list(vars(module).items()):
            key = (name, attr)
            if not enable and _is_dispatcher(value):
                _NUMBA_ORIGINALS[key] = value
                setattr(module, attr, value.py_func)
                switched += 1
            elif enable and key in _NUMBA_ORIGINALS and value is _NUMBA_ORIGINALS[key].py_func:
                setattr(module, attr, _NUMBA_ORIGINALS.pop(key))
                switched += 1
    return switched


@contextlib.contextmanager
def _warn_on_compile():
    """Within the block, one :class:`NumbaCompileWarning` (per process) when numba starts compiling a SHAP
    function, named, with what it costs. Nothing where numba is not installed (shap 0.52+ needs none).
    ``shap.links`` is left out: its link functions stay numba's (compared by identity) and compile in
    under a second."""
    try:
        from numba.core import event
    except ImportError:
        yield
        return

    class _Announce(event.Listener):
        def on_start(self, ev):
            fn = getattr((ev.data or {}).get("dispatcher"), "py_func", None)
            module = getattr(fn, "__module__", None) or ""
            if _COMPILE_WARNED or not module.startswith("shap.") or module == "shap.links":
                return
            name = f"{module}.{fn.__qualname__}"
            _COMPILE_WARNED.append(name)
            lo, hi = COMPILE_SECONDS
            warnings.warn(f"xaikit: numba is compiling SHAP's helper {name} now; this first call in the process "
                          f"takes about {lo}-{hi} s longer (measured on 2 CPU cores), later calls do not. "
                          "xaikit.text.shaptext.use_numba(False) runs the helpers as plain Python instead (the "
                          "same values, no compile)", NumbaCompileWarning, stacklevel=2)

        def on_end(self, ev):
            pass

    with event.install_listener("numba:compile", _Announce()):
        yield


class prediction_function:
    """The ``f`` SHAP calls: masked strings in, the chosen class's logit (or log-odds) out, shape ``(B,)``.

    Args:
        padding: ``"longest"`` pads each call to its longest string; ``"max_length"`` is the lecture's recipe
            (pad every string to the model's maximum, 512 for BERT).
        output: ``"logit"`` (the lecture's choice) or ``"log_odds"``, log(p_c / (1 - p_c)).
        batch_size: strings per forward pass.
    """

    def __init__(self, model, tokenizer, target: int, output: str = "logit", padding: str = "longest",
                 batch_size: int = 64):
        self.model, self.tokenizer, self.target = model, tokenizer, target
        self.output = check_choice(output, "output", ("logit", "log_odds"))
        self.padding = check_choice(padding, "padding", ("longest", "max_length"))
        self.batch_size = check_int(batch_size, "batch_size", 1)
        self.limit = max_tokens(model, tokenizer)
        self.device = next(model.parameters()).device
        self.n_calls = 0
        self.n_strings = 0
        self.bar = None  # a tqdm bar counting the strings evaluated (shap_text's progress)

    def __call__(self, strings) -> np.ndarray:
        strings = [str(s) for s in strings]
        self.n_calls += 1
        self.n_strings += len(strings)
        if self.bar is not None:
            self.bar.update(len(strings))
        out = []
        for start in range(0, len(strings), self.batch_size):
            chunk = strings[start:start + self.batch_size]
            enc = self.tokenizer(chunk, return_tensors="pt", truncation=True, max_length=self.limit,
                                 padding=True if self.padding == "longest" else "max_length")
            enc = {k: v.to(self.device) for k, v in enc.items()}
            with torch.no_grad():
                logits = self.model(**enc).logits.cpu().double()  # (b, C), float64 on the CPU (policies)
            out.append(_score(logits, self.target, self.output).cpu().numpy())
        return np.concatenate(out) if out else np.zeros(0)


def _score(logits: torch.Tensor, target: int, output: str) -> torch.Tensor:
    """The explained number per row of ``logits`` ``(B, C)``: the target logit or its log-odds."""
    if output == "logit":
        return logits[:, target]
    others = torch.cat([logits[:, :target], logits[:, target + 1:]], dim=1)  # (B, C-1)
    return logits[:, target] - torch.logsumexp(others, dim=1)  # log p_c - log(1 - p_c)


@bool_flags
def shap_text(model: torch.nn.Module, tokenizer: Tokenizer, texts, *, target: Target = None,
              output: str = "logit", padding: str = "longest", max_evals: int = 500,
              fixed_context: int | None = 1, batch_size: int = 64, check_additivity: bool = True,
              tol: float = 1e-4, silent: bool = True, allow_long: bool = False, progress: bool | None = None):
    """SHAP values of each text's tokens, Partition explainer with the tokenizer as masker (notebook 04 §4).

    Args:
        model, tokenizer: a sequence classifier and its tokenizer.
        texts: one string or a list of strings.
        target: the class whose score is explained; ``None`` = the predicted class, as in every xaikit
            method (all ``texts`` must then be predicted the same class: one explainer explains one output).
        output: ``"logit"`` or ``"log_odds"``.
        padding: ``"longest"`` (fast) or ``"max_length"`` (the lecture's recipe, for comparison).
        max_evals, fixed_context, batch_size: passed to SHAP's Partition explainer. The lecture uses
            ``fixed_context=1`` (each group measured against the otherwise full text; see the module
            docstring); ``None`` averages both contexts and gives Owen values once the tree is fully split.
        check_additivity: verify base + sum(phi) = f(x) for every text to ``tol`` (raise if not).
        allow_long: explain texts of more than :data:`LONG_TEXT` tokens (refused by default: each costs
            up to ``max_evals`` forward passes of that length).
        progress: a bar of the model evaluations with the time left: ``None`` on runs over two seconds,
            ``True`` always, ``False`` never. A text longer than the model takes is cut to its first words
            with a warning, as in every text method (:func:`xaikit._text_input.fit_text`).

    Returns:
        ``shap.Explanation`` with ``.values`` (one array per text), ``.base_values``, ``.data`` (the token
        strings) and ``.output_names``; plot with ``shap.plots.text(e[i])`` or ``shap.plots.bar(e.abs.sum(0))``.
    """
    texts = check_texts(texts)
    with computing(model):  # the entry: float32 and the thread policy for the whole call
        check_model(model, tokenizer, "shap_text")
        if target is not None:  # checked before any model work
            check_target(model, target, 0)
        max_evals = _check_options(output, padding, max_evals, fixed_context)
        texts, lengths = _fit_texts(model, tokenizer, texts, max_evals, allow_long)
        target = resolve_texts_target(model, tokenizer, texts, target)
        return _shap_text(model, tokenizer, texts, lengths, target, output, padding, max_evals, fixed_context,
                          batch_size, check_additivity, tol, silent, progress)


def _check_fixed_context(fixed_context) -> None:
    """SHAP's Partition explainer takes 0, 1 or None; its own error names neither the choices' meaning nor xaikit."""
    if fixed_context is not None and (isinstance(fixed_context, bool) or fixed_context not in (0, 1)):
        raise ValueError(f"fixed_context must be 0, 1 or None, got {fixed_context!r}: 1 measures each word group "
                         f"against the otherwise full text (the lecture's choice), 0 against the otherwise "
                         f"masked text, None averages both (twice the model calls); e.g. fixed_context=1")


def _check_options(output, padding, max_evals, fixed_context=1) -> int:
    _check_fixed_context(fixed_context)
    check_choice(output, "output", ("logit", "log_odds"))
    check_choice(padding, "padding", ("longest", "max_length"))
    return check_int(max_evals, "max_evals", 2)


def _shap_text(model, tokenizer, texts: list[str], lengths: list[int], target: int, output, padding, max_evals,
               fixed_context, batch_size, check_additivity, tol, silent, progress):
    """:func:`shap_text` of checked texts that fit the model (``lengths``: their token counts), for a class."""
    import shap

    if not _NUMBA_CHOSEN:
        use_numba(False)
    tol = check_float(tol, "tol", 0.0, strict_min=True)
    f = prediction_function(model, tokenizer, target, output, padding, batch_size)
    explainer = shap.Explainer(f, shap.maskers.Text(tokenizer))
    with _warn_on_compile(), _evaluations_bar(f, len(texts) * max_evals, max(lengths), progress):
        explanation = explainer(texts, max_evals=max_evals, fixed_context=fixed_context, batch_size=batch_size,
                                silent=silent)
    if check_additivity:
        gaps = additivity_gaps(explanation, f, texts)
        if gaps.max() > tol:
            raise RuntimeError(f"SHAP additivity failed: base + sum(phi) differs from f(x) by up to {gaps.max():.3g} "
                               f"(> tol={tol}); raise max_evals (now {max_evals})")
    return explanation


#: the most tokens shap_text explains without ``allow_long=True``
LONG_TEXT = 200


def _fit_texts(model, tokenizer, texts: list[str], max_evals: int, allow_long: bool):
    """Each text cut to the model's limit (one warning per cut text), and its token count; refuses texts over
    :data:`LONG_TEXT` tokens unless ``allow_long``, with the expected cost."""
    name = "text" if len(texts) == 1 else "texts[{}]"
    texts = [fit_text(model, tokenizer, t, name.format(i)) for i, t in enumerate(texts)]
    lengths = [len(tokenizer(t, verbose=False)["input_ids"]) for t in texts]
    longest = int(np.argmax(lengths))
    _refuse_long(name.format(longest), lengths[longest], max_evals, allow_long)
    return texts, lengths


def _refuse_long(name: str, n: int, max_evals: int, allow_long: bool) -> None:
    """A ValueError for a text of ``n`` tokens over :data:`LONG_TEXT` unless ``allow_long``, with the cost."""
    if n > LONG_TEXT and not allow_long:
        raise ValueError(
            f"{name} has {n} tokens; SHAP would run about max_evals={max_evals} "
            f"forward passes of up to {n} tokens per text (300 words took 101 s on 2 CPU cores, "
            f"the cost grows faster than the length). Pass allow_long=True to run it anyway, with a progress bar "
            f"of the time left, or explain a shorter text (at most {LONG_TEXT} tokens run without asking)")


def check_lengths(model, tokenizer, sentences: list[str], cost: int, keyword: str = "max_evals") -> None:
    """Refuse, before any work, a sentence too long for SHAP without ``allow_long`` (as cut to the model):
    the faithfulness lab's check over all its sentences (``keyword``: the lab's name of ``max_evals``)."""
    limit = max_tokens(model, tokenizer)
    for i, text in enumerate(sentences):
        n = min(len(tokenizer(text, verbose=False)["input_ids"]), limit)
        if n > LONG_TEXT:
            raise ValueError(
                f"sentences[{i}] has {n} tokens; SHAP would run about {keyword}={cost} forward passes of up "
                f"to {n} tokens for it (300 words took 101 s on 2 CPU cores). Pass run_lab(..., allow_long=True) "
                f"to run it anyway, shorten it to at most {LONG_TEXT} tokens, or leave 'SHAP' out of rankings")


class _evaluations_bar:
    """A tqdm bar over the strings SHAP evaluates (about ``total``), shown after two seconds (``progress=None``),
    at once (``True``) or never (``False``); it names the expected cost and tqdm shows the time left."""

    def __init__(self, f, total: int, longest: int, progress):
        self.f, self.total, self.longest, self.progress = f, total, longest, progress

    def __enter__(self):
        if self.progress is not False:
            from tqdm.auto import tqdm

            self.f.bar = tqdm(total=self.total, unit="eval", leave=False, delay=0 if self.progress else 2.0,
                              desc=f"SHAP: ~{self.total} evaluations of <= {self.longest} tokens")
        return self

    def __exit__(self, *exc):
        if self.f.bar is not None:
            if exc[0] is None:  # done: SHAP often needs fewer evaluations than the estimate, which is no
                self.f.bar.total = self.f.bar.n  # error (tqdm would leave the bar red at e.g. 30% in Jupyter)
            self.f.bar.close()
            self.f.bar = None
        return False


def additivity_gaps(explanation, f, texts) -> np.ndarray:
    """|base + sum(phi) - f(x)| per text (SHAP's local accuracy / efficiency property)."""
    fx = np.asarray(f(list(texts)), dtype=float)
    base = np.asarray(explanation.base_values, dtype=float).reshape(-1)
    sums = np.array([np.sum(v) for v in explanation.values], dtype=float)
    return np.abs(base + sums - fx)


def credit_split(explanation, i: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Row ``i``'s SHAP values as ``(own, spread)``, one entry per token, with ``own + spread == values``.

    ``own`` is the token's own effect, measured when the explainer reached the token itself; ``spread`` is
    what it received from the groups above it: each group's left-over value (see the module docstring)
    divided by the group's number of tokens. This is SHAP's own bookkeeping (``hierarchical_values`` and
    ``clustering`` of the explanation), read back, not a new estimate.
    """
    values = np.asarray(explanation.values[i], dtype=float)
    node_values = np.asarray(explanation.hierarchical_values[i], dtype=float)  # (2M - 1,): M leaves, then groups
    tree = np.asarray(explanation.clustering[i])  # (M - 1, 4): left, right, distance, size
    m = len(values)
    if node_values.shape != (2 * m - 1,) or tree.shape[0] != m - 1:
        raise ValueError("the explanation has no token tree of the expected size (was it made by shap_text?)")
    leaves: dict[int, list[int]] = {j: [j] for j in range(m)}
    spread = np.zeros(m)
    for k, row in enumerate(tree):  # children come before their parents
        node = m + k
        leaves[node] = leaves[int(row[0])] + leaves[int(row[1])]
        spread[leaves[node]] += node_values[node] / len(leaves[node])
    return node_values[:m].copy(), spread


@dataclass
class ShapDetail:
    """What a SHAP row holds besides the scores: ``base_value`` (f of the fully masked text), ``fx``
    (``base_value + sum(scores)``, f of the text) and SHAP's own feature strings ``shap_data``."""

    base_value: float
    fx: float
    shap_data: list[str]


def to_token_scores(explanation, i: int = 0, tokens: list[str] | None = None,
                    target: Target = None) -> TokenScores:
    """Row ``i`` of a SHAP text explanation as :class:`TokenScores`.

    SHAP's text masker has one feature per tokenizer token, the special tokens shown as ``''``; pass the
    model's ``tokens`` (same length) to label them ``[CLS]``, ``i``, ... so the scores line up with
    Grad-SAM's.
    """
    values = np.asarray(explanation.values[i], dtype=float)
    data = [str(t).strip() for t in explanation.data[i]]
    if tokens is not None and len(tokens) != len(data):
        raise ValueError(f"tokens has {len(tokens)} entries but the explanation has {len(data)} features")
    labels = list(tokens) if tokens is not None else data
    base = float(np.asarray(explanation.base_values).reshape(-1)[i])
    return TokenScores(labels, values, "SHAP", target, signed=True,
                       detail=ShapDetail(base, base + float(values.sum()), data))


@bool_flags
def token_scores(model: torch.nn.Module, tokenizer: Tokenizer, text: str, *, target: Target = None,
                 output: str = "logit", max_evals: int = 500, fixed_context: int | None = 1,
                 allow_long: bool = False) -> TokenScores:
    """SHAP values of one text as :class:`TokenScores`, explaining the predicted class by default."""
    return run_text(_token_scores, model, tokenizer, text, target, method="shap", output=output,
                    max_evals=max_evals, fixed_context=fixed_context, allow_long=allow_long)


def _token_scores(prepared: PreparedText, *, output: str = "logit", max_evals: int = 500,
                  fixed_context: int | None = 1, allow_long: bool = False) -> TokenScores:
    """:func:`token_scores` of a prepared text (its target resolved)."""
    max_evals = _check_options(output, "longest", max_evals, fixed_context)
    _refuse_long("text", prepared.n_tokens, max_evals, allow_long)
    e = _shap_text(prepared.model, prepared.tokenizer, [prepared.text], [prepared.n_tokens], prepared.target,
                   output, "longest", max_evals, fixed_context, 64, True, 1e-4, True, None)
    data = list(e.data[0])
    tokens = prepared.tokens if len(prepared.tokens) == len(data) else None
    return to_token_scores(e, 0, tokens, prepared.target)


register(TextMethod("SHAP", _token_scores, signed=True, order=1, cost="max_evals", cost_keyword="shap_evals",
                    cost_min=2, cost_hint="SHAP's model evaluations, e.g. 500",
                    long_option="allow_long", check_long=check_lengths))
