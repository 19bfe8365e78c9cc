"""Is attention explanation? The faithfulness lab over held-out sentences (notebook 06, sections 2-6):
:func:`run_lab` runs every experiment below (:mod:`xaikit.lab.removal`, :mod:`xaikit.lab.agreement`)
and returns a :class:`LabResult`.

Only word tokens are ranked and removed; [CLS] and [SEP] always stay. A token is removed in one of two ways,
and the two are different experiments:

* **Erasure in one attention layer** (Serrano & Smith 2019, "Is Attention Interpretable?", ACL): the token's
  attention weight is set to zero in the one attention layer whose weights gave the ranking, in every head,
  and each row is renormalised to sum to 1; every other layer runs as it is (:mod:`xaikit.lab.editing`). The
  rankings by attention, attention gradient and gradient x attention read the last layer's [CLS] row, so the
  erasure acts on the last layer (``layer=-1``). There the classifier reads only the [CLS] position, so the
  erasure changes exactly the [CLS] row's weights that were ranked. The token stays in the input, and the
  layers below have already mixed it into every position, [CLS] included.
* **Deletion** (as in ERASER, DeYoung et al. 2020): the token is deleted from the input ids and the tokens
  after it move up one position, so no layer ever sees it.

The experiments:

* **Single-item erasure** (Serrano & Smith): erase the most attended word versus a random other word; the
  Jensen-Shannon divergence (base 2, so in [0, 1]) of the output distributions and the 2x2 table of decision
  flips.
* **Fraction removed before the first decision flip** (Serrano & Smith): remove words from the top of a
  ranking down until the predicted class changes, by erasure and, separately, by deletion; rankings by
  attention, attention gradient, gradient x attention, Grad-SAM, SHAP, IG and a random order (1.0 and
  ``flipped=False`` when removing every word never flips the decision).
* **Permutation** (Jain & Wallace 2019, "Attention is not Explanation", NAACL): shuffle one layer's
  attention weights over the tokens and measure the total variation distance of the outputs (median over
  ``n_permutations`` shuffles), for the last layer and, one at a time, for every layer.
* **Comprehensiveness and sufficiency** (DeYoung et al. 2020, "ERASER", ACL): the drop in the predicted
  class's probability when the top k% of the words are deleted (comprehensiveness; high = faithful) or when
  all but them are deleted (sufficiency; low = faithful), averaged over ERASER's bins k = 1, 5, 10, 20 and
  50% (AOPC; at least one word per bin, ``ceil(k * n_words)`` as in ERASER's scorer).
* **Rank agreement** (Jain & Wallace 2019, section 4.1): per sentence, Kendall's tau-b between the
  attention ranking and (a) the input gradient, (b) leave-one-out deletion, and (c) between those two
  (:func:`rank_agreement`, and ``LabResult.agreement`` in the lab).

What it all cost is kept apart: ``LabResult.costs`` is what producing the explanations took and
``LabResult.evaluation_costs`` what the experiments above took to evaluate them, both as passes counted by
hooks on the encoder blocks (:func:`xaikit.models.passes.count_passes`) and wall time, summed over the
sentences.
"""


from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from xaikit._fn import inputs_to_model
from xaikit._text_input import Tokenizer, check_model, check_texts, prepare_text
from xaikit._validate import (
    bool_flags,
    check_choice,
    check_float,
    check_fraction,
    check_int,
    check_names,
    check_seed,
)
from xaikit.lab.agreement import TAU_PAIRS, RankAgreement, _agreement, _agreement_row
from xaikit.lab.removal import (
    ERASER_BINS,
    Erasure,
    _bin_sizes,
    _cumulative_masks,
    _first_flip,
    _order,
    _pad_id,
    _probs_deleted,
    _probs_erased,
    content_positions,
    js_divergence,
    permutation_change,
)
from xaikit.models.arch import attention_modules, check_layer
from xaikit.models.passes import Cost, count_passes
from xaikit.policies import method_threads
from xaikit.text import registry
from xaikit.text.tokens import TokenScores

__all__ = ["rankings", "LabRanking", "LAB_RANKINGS", "EXTRA_VIEWS", "TAU_PAIRS", "LabResult", "run_lab", "EVALUATIONS"]

#: the parts of the evaluation whose cost ``LabResult.evaluation_costs`` keeps, in the order they run
EVALUATIONS = ("erasure and deletion (flips, AOPC)", "permutation", "rank agreement", "empty text")

#: views the lab keeps per sentence besides its rankings (``LabResult.scores``), read from the forward/backward
#: pass the attention rankings share: notebook 06 (section 6) ranks Chefer et al.'s relevance against them.
EXTRA_VIEWS = ("grad-weighted attention",)


@dataclass(frozen=True)
class LabRanking:
    """How the lab ranks tokens by one registered text method: a row of :data:`LAB_RANKINGS`.

    Attributes:
        place: its place among the lab's rankings (the table's order).
        cost: its cost in the lab (the method's ``cost`` option) unless the caller sets its ``cost_keyword``;
            ``None``: the method's own default.
        options: options the method gets in the lab (a method with some is run on its own there, not from the
            shared pass).
        gap: ``TokenScores -> float``, a number the lab keeps per sentence (IG's relative completeness gap:
            the lab ranks by IG's order only), or ``None``.
    """

    place: int
    cost: int | None = None
    options: dict = field(default_factory=dict)
    gap: Callable[[TokenScores], float] | None = None


#: the lab's rankings by method name (a name of :mod:`xaikit.text.registry`): a method joins the lab with a
#: row here, read live; a row whose method is not registered is left out
LAB_RANKINGS: dict[str, LabRanking] = {
    "attention": LabRanking(0),
    "gradient": LabRanking(1),
    "gradient x attention": LabRanking(2),
    "Grad-SAM": LabRanking(3),
    "SHAP": LabRanking(4, cost=200),
    "IG": LabRanking(5, cost=16, options={"rule": "gausslegendre"}, gap=lambda ig: float(ig.detail.relative_gap)),
    "Chefer LRP": LabRanking(6),
    "AttnLRP": LabRanking(7),
}


def _table_rows() -> dict[str, LabRanking]:
    """The rows of :data:`LAB_RANKINGS` whose method is registered, by name (empty rows for the others)."""
    return {name: LAB_RANKINGS.get(name, _NOT_RANKED) for name in registry.entries()}


_NOT_RANKED = LabRanking(place=-1)


def rankings() -> tuple[str, ...]:
    """The rankings the lab compares, in their table order, then ``"random"``: every registered method with a
    row in :data:`LAB_RANKINGS` (both read live)."""
    return _ranked()


def _ranked() -> tuple[str, ...]:
    registered = registry.entries()
    ranked = sorted((LAB_RANKINGS[n].place, i, n) for i, n in enumerate(registered) if n in LAB_RANKINGS)
    return (*(n for _, _, n in ranked), "random")


@dataclass(kw_only=True)
class LabResult:
    """Everything the lab measured, one entry per sentence (arrays) or per ranking (dicts of arrays).

    ``fraction``/``flipped``: words erased (Serrano & Smith, attention layer ``layer``) before the first
    decision flip; ``fraction_deleted``/``flipped_deleted``: the same with the words deleted from the input.
    ``permutation_tvd``: Jain & Wallace's output change when the last layer is shuffled;
    ``permutation_by_layer`` ``(sentences, layers)``: the same with one layer at a time shuffled (every query
    row); ``permutation_by_layer_cls``: the same shuffles applied to the ``[CLS]`` query row alone, the one row
    that reaches the classifier from the last layer, so that every depth is compared on the same row.
    ``predicted``: each sentence's predicted class; ``empty_probs``: the output probabilities ``(C,)`` for the
    input with every word deleted (``[CLS] [SEP]``), where deleting a whole sentence ends.
    ``gaps``: per sentence, the number the lab keeps for a ranking (its row's ``gap``: IG's relative completeness
    gap, since the IG ranking uses only its order), by ranking; ``ig_relative_gap`` is IG's, or ``None``
    without an IG ranking.
    ``agreement``: Jain & Wallace's Kendall taus between attention, the input gradient and leave-one-out
    (:class:`RankAgreement`).
    ``scores``: every sentence's token scores ``(N,)`` by name, one list entry per sentence: each ranking
    (``"random"``: its order, highest first), the views of :data:`EXTRA_VIEWS` (or ``run_lab``'s
    ``extra_views``), and ``"input gradient"`` and ``"LOO"`` (:func:`input_gradient`, :func:`leave_one_out`,
    NaN at the special tokens) of the agreement. ``positions``: each sentence's word-token positions, the
    only ones ranked (:func:`content_positions`), so ``word_tau(scores[a][i], scores[b][i], positions[i])``
    compares two of them on sentence ``i`` without running anything again.
    ``costs``: what producing the explanations cost, summed over the sentences, each a
    :class:`~xaikit.models.passes.Cost` (forward and backward passes counted by hooks on the encoder blocks,
    seconds): every view that ran its own passes by name, ``"random"`` (drawing its order: no pass),
    ``"shared pass"`` (:data:`xaikit.text.views.SHARED_PASS`: the one forward/backward pass per sentence that
    the views in ``shared`` read, counted once and not split between them) and ``"prepare"`` (each sentence's
    forward pass that tokenizes it and resolves the target, used by every view and the evaluation).
    ``evaluation_costs``: what evaluating them cost, by part (:data:`EVALUATIONS`); an erasure re-runs only
    the blocks from the edited layer up, counted as the fraction of a pass it is.
    """

    sentences: list[str]
    rankings: tuple[str, ...]
    js_top: np.ndarray
    js_random: np.ndarray
    attention_gap: np.ndarray
    flip_top: np.ndarray
    flip_random: np.ndarray
    fraction: dict[str, np.ndarray]
    flipped: dict[str, np.ndarray]
    fraction_deleted: dict[str, np.ndarray]
    flipped_deleted: dict[str, np.ndarray]
    comprehensiveness: dict[str, np.ndarray]
    sufficiency: dict[str, np.ndarray]
    permutation_tvd: np.ndarray
    permutation_by_layer: np.ndarray
    max_attention: np.ndarray
    layer: int = -1
    bins: tuple[float, ...] = ERASER_BINS
    seconds: float = 0.0
    gaps: dict[str, np.ndarray] | None = None
    agreement: RankAgreement | None = None
    scores: dict[str, list[np.ndarray]] | None = None
    positions: list[list[int]] | None = None
    permutation_by_layer_cls: np.ndarray | None = None
    predicted: np.ndarray | None = None
    empty_probs: np.ndarray | None = None
    costs: dict[str, Cost] | None = None
    shared: tuple[str, ...] = ()
    evaluation_costs: dict[str, Cost] | None = None

    def cost_of(self, ranking: str) -> tuple[Cost, bool]:
        """What producing ``ranking``'s scores cost over the lab's sentences, and whether that is the shared
        pass (``True``: the cost of the one pass that every view in ``shared`` read, not this view's share of
        it; do not add it up over the views). The text's preparation (``costs["prepare"]``) is not in it."""
        check_choice(ranking, "ranking", self.rankings)
        if self.costs is None:
            raise ValueError("this LabResult was built without costs; run run_lab again to count them")
        if ranking in self.shared:
            return self.costs["shared pass"], True
        return self.costs[ranking], False

    @property
    def ig_relative_gap(self) -> np.ndarray | None:
        """IG's relative completeness gap per sentence (``gaps["IG"]``), or ``None`` without an IG ranking."""
        return (self.gaps or {}).get("IG")

    def flipped_within(self, ranking: str, budget: float, how: str = "deleted") -> np.ndarray:
        """Per sentence, did the decision flip with at most ``ceil(budget * n_words)`` words (at least one)
        removed from the top of ``ranking``? ``how``: ``"deleted"`` or ``"erased"``."""
        how = check_choice(how, "how", ("deleted", "erased"))
        check_choice(ranking, "ranking", self.rankings)
        budget = check_float(budget, "budget", 0.0, 1.0, strict_min=True)
        fraction, flipped = ((self.fraction_deleted, self.flipped_deleted) if how == "deleted"
                             else (self.fraction, self.flipped))
        n_words = np.array([len(p) for p in self.positions], dtype=float)
        allowed = np.maximum(1, np.ceil(budget * n_words - 1e-9))
        return flipped[ranking] & (np.rint(fraction[ranking] * n_words) <= allowed)

    @property
    def flip_table(self) -> np.ndarray:
        """Percent of sentences: rows = erasing the top item flips (yes, no), columns = erasing a random one
        flips (yes, no), as in Serrano & Smith's Table 2."""
        t, r = self.flip_top, self.flip_random
        cells = [[t & r, t & ~r], [~t & r, ~t & ~r]]
        return np.array([[100.0 * c.mean() for c in row] for row in cells])

    def summary(self) -> dict[str, dict[str, float]]:
        """Per ranking: mean fraction of the words removed before a flip and the share of sentences that
        flipped at all, by erasure and by deletion; mean comprehensiveness and sufficiency (AOPC)."""
        return {m: {"erased before a flip": float(np.mean(self.fraction[m])),
                    "flipped by erasure (%)": 100.0 * float(np.mean(self.flipped[m])),
                    "deleted before a flip": float(np.mean(self.fraction_deleted[m])),
                    "flipped by deletion (%)": 100.0 * float(np.mean(self.flipped_deleted[m])),
                    "comprehensiveness": float(np.mean(self.comprehensiveness[m])),
                    "sufficiency": float(np.mean(self.sufficiency[m]))} for m in self.rankings}

    def table_html(self) -> str:
        """The summary per ranking and, with ``costs``, what producing each ranking cost (a shared pass says
        "shared"; its cost is given once, under the table, with the evaluation's)."""
        with_costs = self.costs is not None

        def cost_cells(m):
            if not with_costs:
                return ""
            c, shared = self.cost_of(m)
            if shared:
                return '<td colspan="3">shared pass</td>'
            return f"<td>{c.forward:g}</td><td>{c.backward:g}</td><td>{c.seconds:.2f}</td>"

        rows = "".join(
            f"<tr><td>{m}</td>" + "".join(f"<td>{v:.3f}</td>" for v in s.values()) + cost_cells(m) + "</tr>"
            for m, s in self.summary().items())
        heads = ["ranking", *next(iter(self.summary().values()))]
        if with_costs:
            heads += ["forward passes", "backward passes", "seconds"]
        head = "".join(f"<th>{h}</th>" for h in heads)
        note = ""
        if with_costs:
            shared, prep = self.costs.get("shared pass", Cost()), self.costs.get("prepare", Cost())
            evaluation = sum(self.evaluation_costs.values(), Cost())
            note = (f"<p><small>Explanation costs over the {len(self.sentences)} sentences, counted by hooks on the "
                    f"encoder blocks. One shared pass per sentence ({', '.join(self.shared) or 'none'}): "
                    f"{shared}. Preparing the texts: {prep}. The evaluation (erasure, deletion, AOPC, shuffles, "
                    f"agreement): {evaluation}.</small></p>")
        return f'<table class="xk-lab-table"><tr>{head}</tr>{rows}</table>{note}'


@bool_flags
def run_lab(model: torch.nn.Module, tokenizer: Tokenizer, sentences: str | Sequence[str],
            rankings: Sequence[str] | None = None, n_permutations: int = 16, seed: int = 0, layer: int = -1,
            bins: Sequence[float] = ERASER_BINS, progress: bool = True,
            extra_views: Sequence[str] = EXTRA_VIEWS, allow_long: bool = False, **costs: int) -> LabResult:
    """Run every experiment of the lab over ``sentences`` (notebook 06 §2-6).

    ``rankings``: the rankings compared (default: :func:`rankings`, every registered lab method and
    ``"random"``). ``layer``: the attention layer whose [CLS] row gives the attention rankings and in which
    Serrano & Smith's erasure acts (the last by default). ``bins``: the AOPC bins (ERASER's by default).
    ``progress``: a progress bar over the sentences. ``extra_views``: views of each sentence kept in
    ``LabResult.scores`` besides the rankings' (from the shared pass of :func:`xaikit.text.views.all_views`,
    with ``layer``), ranked nowhere. ``allow_long``: let a method with a length limit (SHAP) explain longer
    sentences (refused by default, before any work: each costs minutes). ``costs``: a method's cost by its
    entry's ``cost_keyword`` (``shap_evals=200``, ``ig_steps=16``); the others run at their row's ``cost``
    in :data:`LAB_RANKINGS`.
    """
    from xaikit.text.views import _check_costs

    entries = registry.entries()
    sentences = check_texts(sentences, "sentences")
    ranked = _ranked()
    rankings = tuple(check_names(ranked if rankings is None else rankings, "rankings", ranked))
    extra = tuple(check_names(extra_views, "extra_views", tuple(entries)))
    n_permutations = check_int(n_permutations, "n_permutations", 1, hint="shuffles per sentence and layer, e.g. 16")
    given = _check_costs(costs, "run_lab")
    table = _table_rows()
    costs = {m.name: given.get(m.name, table[m.name].cost) for m in entries.values()
             if m.cost and table[m.name].cost is not None}
    costs.update(given)
    seed = check_seed(seed)
    check_model(model, tokenizer, "run_lab")
    layer = check_layer(model, layer)
    if isinstance(bins, (str, bytes)) or not hasattr(bins, "__iter__"):
        raise TypeError(f"bins must be a list of fractions in (0, 1], e.g. bins=(0.1, 0.2, 0.5), got {bins!r}")
    bins = tuple(check_fraction(b, f"bins[{i}]", 0.1, " of the words") for i, b in enumerate(bins))
    if not bins:
        raise ValueError("bins must hold at least one fraction of the words to remove (AOPC averages over them), "
                         "e.g. bins=(0.1, 0.2, 0.5), or leave it out for ERASER's bins")
    if not isinstance(allow_long, bool):
        raise TypeError(f"allow_long must be True or False, got {type(allow_long).__name__} {allow_long!r}")
    if not allow_long:  # every sentence, before any work
        for name in dict.fromkeys((*rankings, *extra)):
            entry = entries.get(name)
            if entry is not None and entry.check_long is not None:
                cost = costs.get(name, entry.defaults.get(entry.cost))
                entry.check_long(model, tokenizer, sentences, cost, entry.cost_keyword or entry.cost)
    rng = np.random.default_rng(seed)
    view_names = tuple(r for r in rankings if r != "random")
    if "attention" not in view_names:
        view_names = ("attention", *view_names)
    view_names += tuple(v for v in extra if v not in view_names)
    start = time.perf_counter()
    spent: dict[str, Cost] = {}
    evaluated = dict.fromkeys(EVALUATIONS, Cost())
    with method_threads(model, heavy=True):  # batches of hundreds of edited inputs
        rows, kept, gaps, agreement, shared = _lab_rows(model, tokenizer, sentences, rankings, view_names, rng,
                                                        n_permutations, costs, layer, bins, progress, allow_long,
                                                        spent, evaluated)
    if not rows:
        raise ValueError("no sentence had at least two word tokens; pass real sentences")
    with count_passes(model) as passes:
        empty_probs = _empty_probs(model, tokenizer)
    evaluated["empty text"] += passes.cost

    def col(fn, dtype=float):
        return np.array([fn(r) for r in rows], dtype=dtype)

    def per_ranking(key, i, dtype=float):
        return {m: col(lambda r, m=m: r[key][m][i], dtype) for m in rankings}

    return LabResult(
        sentences=kept, rankings=tuple(rankings), js_top=col(lambda r: r["erasure"].js_top),
        js_random=col(lambda r: r["erasure"].js_random), attention_gap=col(lambda r: r["erasure"].attention_gap),
        flip_top=col(lambda r: r["erasure"].flip_top, bool), flip_random=col(lambda r: r["erasure"].flip_random, bool),
        fraction=per_ranking("erased", 0), flipped=per_ranking("erased", 1, bool),
        fraction_deleted=per_ranking("deleted", 0), flipped_deleted=per_ranking("deleted", 1, bool),
        comprehensiveness=per_ranking("aopc", 0), sufficiency=per_ranking("aopc", 1),
        permutation_tvd=col(lambda r: r["perm"]["median_tvd"]),
        permutation_by_layer=np.array([r["perm_by_layer"] for r in rows]),
        max_attention=col(lambda r: r["max_attention"]), layer=layer, bins=bins,
        seconds=time.perf_counter() - start,
        gaps={k: np.array(v) for k, v in gaps.items()} or None, agreement=agreement,
        scores={k: [r["scores"][k] for r in rows] for k in rows[0]["scores"]},
        positions=[r["positions"] for r in rows],
        permutation_by_layer_cls=np.array([r["perm_by_layer_cls"] for r in rows]),
        predicted=col(lambda r: r["predicted"], int), empty_probs=empty_probs,
        costs=spent, shared=shared, evaluation_costs=evaluated)


def _empty_probs(model, tokenizer) -> np.ndarray:
    """Output probabilities ``(C,)`` for the empty text, ``[CLS] [SEP]``: every word deleted."""
    enc = tokenizer("", return_tensors="pt")
    with torch.no_grad():
        logits = model(**inputs_to_model(model, dict(enc))).logits[0]
    return torch.softmax(logits.cpu().double(), dim=-1).numpy()


def _lab_rows(model, tokenizer, sentences, rankings, view_names, rng, n_permutations, costs, layer, bins,
              progress, allow_long=False, explained=None, evaluated=None):
    """The per-sentence rows; ``explained`` and ``evaluated`` (dicts of :class:`Cost`) gather what producing
    the views and evaluating them cost (:func:`run_lab` documents the keys). Returns ``rows, kept, gaps,
    agreement, shared`` (``shared``: the views read from the shared pass)."""
    from tqdm.auto import tqdm

    from xaikit.tensor.integrated import CompletenessWarning
    from xaikit.text.views import PREPARE, _all_views, _counted

    explained = {} if explained is None else explained
    evaluated = {} if evaluated is None else evaluated
    entries, lab = registry.entries(), _table_rows()
    rows, kept, gaps, taus, n_words, spent, shared = [], [], {}, [], [], 0.0, ()
    n_layers = len(attention_modules(model))
    for text in tqdm(sentences, desc="attention lab", disable=not progress):
        with _counted(model, explained, PREPARE):
            enc = prepare_text(model, tokenizer, text, method="run_lab")
        positions = content_positions(enc, tokenizer)
        if len(positions) < 2:  # nothing to compare on a one-word text
            continue
        own = {v: {**lab[v].options, **({entries[v].long_option: True}  # explained with the lab's options
                                        if allow_long and entries[v].long_option else {})}
               for v in view_names if lab[v].options or (allow_long and entries[v].long_option)}
        with warnings.catch_warnings():  # a ranking needs IG's order, not its exact sum: the gap is kept
            warnings.simplefilter("ignore", CompletenessWarning)
            part: dict[str, Cost] = {}
            views = _all_views(enc, view_names, layer, costs, own, spent=part)
        shared = tuple(v for v in view_names if v not in part)  # no entry of their own: they read the shared pass
        for key, cost in part.items():
            explained[key] = explained.get(key, Cost()) + cost
        for name in view_names:
            if lab[name].gap is not None:
                gaps.setdefault(name, []).append(lab[name].gap(views[name]))
        if "random" in rankings:
            with _counted(model, explained, "random"):
                order = rng.permutation(positions)
                rand = np.zeros(enc.n_tokens)
                rand[order] = np.arange(len(order), 0, -1)
                views["random"] = TokenScores(enc.tokens, rand, "random", enc.target, signed=False)
        with _counted(model, evaluated, EVALUATIONS[0]):
            row = _one_sentence(model, enc, tokenizer, views, rankings, rng, layer, bins)
        seed = int(rng.integers(1 << 30))
        with _counted(model, evaluated, EVALUATIONS[1]):
            by_layer = [permutation_change(model, enc, n_permutations, layers=(i,), seed=seed).median_tvd
                        for i in range(n_layers)]
            row["perm_by_layer_cls"] = [  # the same shuffles, the [CLS] query row alone
                permutation_change(model, enc, n_permutations, layers=(i,), seed=seed, queries=(0,)).median_tvd
                for i in range(n_layers)]
        row["perm"] = {"median_tvd": by_layer[layer]}
        row["perm_by_layer"] = by_layer
        row["predicted"] = int(enc.logits.argmax())
        row["max_attention"] = float(views["attention"].scores[positions].max())
        start = time.perf_counter()
        kept_scores = {k: np.asarray(v.scores, dtype=float).copy() for k, v in views.items()}
        with _counted(model, evaluated, EVALUATIONS[2]):
            taus.append(_agreement_row(model, enc, tokenizer, views["attention"], kept_scores))
        spent += time.perf_counter() - start
        row["scores"], row["positions"] = kept_scores, list(positions)
        n_words.append(len(positions))
        rows.append(row)
        kept.append(text)
    agreement = _agreement(taus, kept, n_words, layer, spent) if rows else None
    return rows, kept, gaps, agreement, shared


def _one_sentence(model, enc, tokenizer, views: dict, rankings, rng, layer: int = -1, bins=ERASER_BINS) -> dict:
    """Erasure, flip fractions and AOPC of every ranking from two batched forward passes, one with erased
    attention and one with deleted tokens.

    The same numbers as :func:`erasure`, :func:`flip_fraction` and :func:`aopc` (the tests check it): the
    comprehensiveness rows are among the deletion flip rows (top-k deleted), so only the sufficiency rows
    are added to them.
    """
    positions = content_positions(enc, tokenizer)
    n, n_words = enc.n_tokens, len(positions)
    ks = _bin_sizes(bins, n_words)
    top = _order(views["attention"], positions)[0]
    others = [p for p in positions if p != top] or [top]
    rand = int(rng.choice(others))
    erase = torch.zeros(2, n, dtype=torch.bool)
    erase[0, top], erase[1, rand] = True, True
    removed, kept = {}, {}
    for r in rankings:
        order = _order(views[r], positions)
        removed[r] = _cumulative_masks(order, n)  # n_words rows: top-1 .. top-all removed
        kept[r] = _cumulative_masks(order, n, True, ks, positions)  # len(ks) rows: only the top-k kept
    erased_masks = torch.cat([erase, *removed.values()])
    deleted_masks = torch.cat([m for r in rankings for m in (removed[r], kept[r])])
    erased = np.concatenate([_probs_erased(model, enc, c, layer) for c in erased_masks.split(256)])
    pad = _pad_id(model, tokenizer)
    deleted = _probs_deleted(model, enc, deleted_masks, pad)
    p = torch.softmax(enc.logits.cpu().double(), -1).numpy()
    pred = int(p.argmax())
    js = js_divergence(p[None], erased[:2])
    row = {"erasure": Erasure(top=top, random=rand, js_top=float(js[0]), js_random=float(js[1]),
                              flip_top=bool(erased[0].argmax() != pred), flip_random=bool(erased[1].argmax() != pred),
                              attention_gap=float(views["attention"].scores[top] - views["attention"].scores[rand])),
           "erased": {}, "deleted": {}, "aopc": {}}
    at_e, at_d = 2, 0
    for r in rankings:
        row["erased"][r] = _first_flip(erased[at_e:at_e + n_words], pred, n_words)
        gone, only = deleted[at_d:at_d + n_words], deleted[at_d + n_words:at_d + n_words + len(ks)]
        at_e, at_d = at_e + n_words, at_d + n_words + len(ks)
        row["deleted"][r] = _first_flip(gone, pred, n_words)
        comp = float(np.mean(p[pred] - gone[[k - 1 for k in ks], pred]))
        suff = float(np.mean(p[pred] - only[:, pred]))
        row["aopc"][r] = (comp, suff)
    return row
