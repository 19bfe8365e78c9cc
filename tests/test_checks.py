"""Homework self-checks (xaikit.course.checks): each passes a correct implementation and fails each classic mistake
with the right diagnosis and a location (token, layer/head, step, image)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

import xaikit
from xaikit.course import checks
from xaikit.course.checks.gradsam import _synthetic_attention

# --- Integrated Gradients ------------------------------------------------------------------------------------


def _path_grads(f, x, baseline, alphas):
    points = (baseline + torch.as_tensor(alphas, dtype=x.dtype)[:, None] * (x - baseline)).requires_grad_(True)
    (grads,) = torch.autograd.grad(f(points).sum(), points)
    return grads  # (S, d)


def ig_right(f, x, baseline, steps):
    alphas = torch.arange(1, steps + 1) / steps
    return (x - baseline) * _path_grads(f, x, baseline, alphas).mean(0)


def ig_left(f, x, baseline, steps):
    return (x - baseline) * _path_grads(f, x, baseline, torch.arange(steps) / steps).mean(0)


def ig_no_difference(f, x, baseline, steps):
    return _path_grads(f, x, baseline, torch.arange(1, steps + 1) / steps).mean(0)


def ig_times_x(f, x, baseline, steps):
    return x * _path_grads(f, x, baseline, torch.arange(1, steps + 1) / steps).mean(0)


def ig_no_divide(f, x, baseline, steps):
    return (x - baseline) * _path_grads(f, x, baseline, torch.arange(1, steps + 1) / steps).sum(0)


def ig_from_zero(f, x, baseline, steps):
    return ig_right(f, x, torch.zeros_like(x), steps)


def ig_off_by_one(f, x, baseline, steps):  # steps + 1 points from 0 to 1, averaged
    return (x - baseline) * _path_grads(f, x, baseline, torch.linspace(0, 1, steps + 1)).mean(0)


def ig_middle(f, x, baseline, steps):
    return (x - baseline) * _path_grads(f, x, baseline, (torch.arange(steps) + 0.5) / steps).mean(0)


def ig_trapezoid(f, x, baseline, steps):
    weights = torch.ones(steps + 1, dtype=x.dtype)
    weights[0] = weights[-1] = 0.5
    grads = _path_grads(f, x, baseline, torch.arange(steps + 1) / steps)
    return (x - baseline) * (weights[:, None] * grads).sum(0) / steps


def test_ig_correct_right_sum(capsys):
    result = checks.check_ig_riemann(ig_right)
    assert result and result.mistake is None
    out = capsys.readouterr().out
    assert "all checks passed" in out and "right Riemann sum (the IG paper's)" in out


@pytest.mark.parametrize("fn, mistake, name", [
    (ig_left, "left_sum", "left Riemann sum"),
    (ig_middle, "middle_sum", "midpoint Riemann sum"),
    (ig_trapezoid, "trapezoid_sum", "trapezoid rule"),
])
def test_ig_other_rules_are_named_and_fail(fn, mistake, name):
    """The exercise asks for the right sum: another rule approximates the same integral but is not the answer."""
    result = checks.check_ig_riemann(fn, verbose=False)
    assert not result and result.mistake == mistake, result.report()
    assert name in result.report() and "alpha_k = k/m" in result.report()


@pytest.mark.parametrize("fn, mistake", [
    (ig_no_difference, "missing_x_minus_baseline"),
    (ig_times_x, "times_x_not_difference"),
    (ig_no_divide, "missing_divide_by_steps"),
    (ig_from_zero, "path_from_zero"),
])
def test_ig_classic_mistakes(fn, mistake):
    result = checks.check_ig_riemann(fn, verbose=False)
    assert not result and result.mistake == mistake, result.report()
    assert "steps=8: feature" in result.report() and "expected" in result.report()


def test_ig_reports_the_steps_it_evaluated():
    result = checks.check_ig_riemann(ig_off_by_one, verbose=False)
    assert not result
    report = result.report()
    assert "you evaluated f at 9 alphas from 0.0 to 1.0" in report, report
    assert "alpha_k = k/8" in report


def test_ig_stub_and_shape():
    def stub(f, x, baseline, steps):
        raise NotImplementedError

    with pytest.raises(NotImplementedError):  # the sheet stops at the stub, not at a failed check
        checks.check_ig_riemann(stub, verbose=False)
    bad = checks.check_ig_riemann(lambda f, x, b, s: torch.zeros(2), verbose=False)
    assert bad.mistake == "shape"


# --- attention -----------------------------------------------------------------------------------------------


def attn_from_inputs(x, w_q, w_k, w_v, dim=-1, scale=True, transpose=False):
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    scores = (k @ q.T) if transpose else (q @ k.T)
    if scale:
        scores = scores / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=dim)
    return weights @ v, weights


def test_attention_correct_both_signatures():
    assert checks.check_attention(attn_from_inputs, verbose=False)

    def sdpa(q, k, v):
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
        return w @ v, w

    assert checks.check_scaled_dot_product_attention(sdpa, verbose=False)
    assert checks.check_attention(lambda q, k, v: sdpa(q, k, v)[0], verbose=False)  # out only


@pytest.mark.parametrize("kwargs, mistake", [
    ({"dim": 0}, "softmax_wrong_dim"),
    ({"scale": False}, "missing_scale"),
    ({"transpose": True}, "transposed"),
])
def test_attention_classic_mistakes(kwargs, mistake):
    result = checks.check_attention(lambda x, wq, wk, wv: attn_from_inputs(x, wq, wk, wv, **kwargs),
                                    verbose=False)
    assert not result and result.mistake == mistake, result.report()
    assert "weight of query" in result.report() and "on key" in result.report()


def test_attention_wrong_dim_found_from_out_alone():
    def out_only(q, k, v):
        return torch.softmax(q @ k.T / math.sqrt(q.shape[-1]), dim=0) @ v

    result = checks.check_attention(out_only, verbose=False)
    assert not result and result.mistake == "softmax_wrong_dim", result.report()
    assert "out[" in result.report()


# --- Grad-SAM ------------------------------------------------------------------------------------------------


def gradsam_correct(a, g):
    L, M, N, _ = a.shape
    return (a * torch.relu(g)).sum(dim=(0, 1, 3)) / (L * M * N)


def gradsam_wrong_axis(a, g):
    L, M, N, _ = a.shape
    return (a * torch.relu(g)).sum(dim=(0, 1, 2)) / (L * M * N)


def gradsam_no_relu(a, g):
    L, M, N, _ = a.shape
    return (a * g).sum(dim=(0, 1, 3)) / (L * M * N)


def gradsam_no_norm(a, g):
    return (a * torch.relu(g)).sum(dim=(0, 1, 3))


def test_gradsam_correct(capsys):
    assert checks.check_gradsam(gradsam_correct)
    out = capsys.readouterr().out
    assert "tiny BERT on 'I like the movie': all 6 token scores match" in out


def gradsam_transposed_a(a, g):  # A^T o ReLU(G): the attention transposed, its gradient not
    L, M, N, _ = a.shape
    return (a.transpose(-1, -2) * torch.relu(g)).sum(dim=(0, 1, 3)) / (L * M * N)


def gradsam_relu_after_sum(a, g):  # ReLU(sum of A o G) instead of the sum of A o ReLU(G)
    L, M, N, _ = a.shape
    return torch.relu((a * g).sum(dim=(0, 1, 3))) / (L * M * N)


def gradsam_relu_after_row_sum(a, g):  # the ReLU on each head's row sum
    L, M, N, _ = a.shape
    return torch.relu((a * g).sum(dim=3)).sum(dim=(0, 1)) / (L * M * N)


GRADSAM_MISTAKES = [
    (gradsam_wrong_axis, "wrong_axis", "you sum over the queries"),
    (gradsam_no_relu, "missing_relu", "the ReLU on the gradient is missing"),
    (gradsam_no_norm, "missing_normalisation", "not divided by L * M * N"),
    (gradsam_transposed_a, "transposed_attention", "you transpose the attention but not its gradient"),
    (gradsam_relu_after_sum, "relu_after_sum", "you apply the ReLU after the sum"),
    (gradsam_relu_after_row_sum, "relu_after_row_sum", "you apply the ReLU to each head's row sum"),
]


@pytest.mark.parametrize("fn, mistake, message", GRADSAM_MISTAKES, ids=[m for _, m, _ in GRADSAM_MISTAKES])
def test_gradsam_classic_mistakes(fn, mistake, message):
    """Each mistake gets its own name and message, and no other mistake's message, the transposed attention
    and the ReLU after the sum included."""
    result = checks.check_gradsam(fn, verbose=False)
    report = result.report()
    assert not result and result.mistake == mistake, report
    assert "token " in report and "off by" in report
    assert message in report, report
    others = [text for _, name, text in GRADSAM_MISTAKES if name != mistake]
    assert not [text for text in others if text in report], report


def test_gradsam_mistake_messages_are_not_given_to_a_right_answer():
    """The synthetic case tells every named mistake apart from Grad-SAM and from each other (else a
    mistake would be named by the first variant it happens to equal)."""
    from xaikit.course.checks._core import _close
    from xaikit.course.checks.gradsam import _gradsam_reference, _gradsam_variants

    a, g = _synthetic_attention()
    variants = _gradsam_variants(a, g)
    ref = _gradsam_reference(a, g)
    assert not [name for name, (_, v) in variants.items() if _close(v, ref)]
    names = list(variants)
    assert not [(m, n) for i, m in enumerate(names) for n in names[i + 1:] if _close(variants[m][1], variants[n][1])]
    assert checks.check_gradsam(gradsam_correct, verbose=False).mistake is None


def test_gradsam_missing_relu_located_by_head():
    """Layer 0 head 0 of the random case has only positive gradients: there the missing ReLU is harmless."""
    report = checks.check_gradsam(gradsam_no_relu, verbose=False).report()
    assert "layer 0 head 1" in report and "agrees in the other 1 head(s)" in report, report
    assert "layer 0 head 0," not in report


# --- the [CLS] question ----------------------------------------------------------------------------------


def cls_share_correct(a, g):
    h = (a * torch.relu(g)).sum(dim=(1, 3))  # (L, N)
    return h[:, 0] / h.sum(dim=1)


def cls_share_column(a, g):
    h = (a * torch.relu(g)).sum(dim=(1, 2))  # (L, N) by key
    return h[:, 0] / h.sum(dim=1)


def test_cls_share_correct_and_last_layer_is_all_cls(capsys):
    assert checks.check_cls_share(cls_share_correct)
    out = capsys.readouterr().out
    assert "in the last layer the [CLS] row holds 100% of the mass" in out


def test_cls_share_mistakes():
    result = checks.check_cls_share(cls_share_column, verbose=False)
    assert not result and result.mistake == "wrong_axis" and "layer " in result.report()
    raw = checks.check_cls_share(lambda a, g: (a * torch.relu(g)).sum(dim=(1, 3))[:, 0], verbose=False)
    assert raw.mistake == "not_a_share"


# --- two heads of two layers -------------------------------------------------------------------------------


def plot_heads(attentions, tokens, picks, transpose=False, vmax=1.0, mean=False, shift=0):
    fig = Figure(figsize=(8, 4))
    axes = fig.subplots(1, len(picks))
    for ax, (layer, head) in zip(axes, picks, strict=True):
        layer = min(layer + shift, attentions.shape[0] - 1) if shift else layer
        m = attentions[layer].mean(0) if mean else attentions[layer, head]
        m = m.T if transpose else m
        ax.imshow(m.numpy(), vmin=0, vmax=vmax, cmap="viridis")
        ax.set_xticks(range(len(tokens)), tokens)
        ax.set_yticks(range(len(tokens)), tokens)
    return fig


def test_head_plots_correct():
    result = checks.check_head_plots(plot_heads, verbose=False)
    assert result, result.report()
    assert "layer 0 head 1: heatmap shows attentions[0, 1]" in result.report()


@pytest.mark.parametrize("kwargs, mistake", [
    ({"transpose": True}, "transposed"), ({"mean": True}, "mean_of_heads"), ({"vmax": None}, "colour_range"),
    ({"shift": 1}, "wrong_head"),
])
def test_head_plots_mistakes(kwargs, mistake):
    result = checks.check_head_plots(lambda a, t, p: plot_heads(a, t, p, **kwargs), verbose=False)
    assert not result and result.mistake == mistake, result.report()


def test_head_plots_pcolormesh_and_axes_are_accepted():
    def mesh(attentions, tokens, picks):
        fig = Figure()
        axes = fig.subplots(1, 2)
        for ax, (layer, head) in zip(axes, picks, strict=True):
            ax.pcolormesh(attentions[layer, head].numpy(), vmin=0, vmax=1)
            ax.set_xticks(np.arange(len(tokens)) + 0.5, tokens)
            ax.set_yticks(np.arange(len(tokens)) + 0.5, tokens)
        return axes

    assert checks.check_head_plots(mesh, verbose=False)
    assert checks.check_head_plots(lambda a, t, p: "a plot", verbose=False).mistake == "no_figure"


# --- CAV and TCAV ----------------------------------------------------------------------------------------------


def cav_logistic(concept, negative, flip=False, normalise=True):
    from sklearn.linear_model import LogisticRegression

    x = np.concatenate([concept, negative])
    y = np.r_[np.ones(len(concept)), np.zeros(len(negative))]
    w = LogisticRegression().fit(x, 1 - y if flip else y).coef_[0]
    return w / np.linalg.norm(w) if normalise else w


def test_cav_correct_including_mean_difference():
    assert checks.check_cav(cav_logistic, verbose=False)
    mean_diff = checks.check_cav(lambda c, n: (d := c.mean(0) - n.mean(0)) / np.linalg.norm(d), verbose=False)
    assert mean_diff, mean_diff.report()


@pytest.mark.parametrize("fn, mistake", [
    (lambda c, n: cav_logistic(c, n, flip=True), "sign_flipped"),
    (lambda c, n: cav_logistic(c, n, normalise=False), "not_normalised"),
    (lambda c, n: np.ones(c.shape[1]), "wrong_direction"),
    (lambda c, n: c.mean(0)[:3], "shape"),
])
def test_cav_mistakes(fn, mistake):
    result = checks.check_cav(fn, verbose=False)
    assert not result and result.mistake == mistake, result.report()


def tcav_correct(grads, cav):
    return float(((grads @ cav) > 0).mean())


def test_tcav_score_correct(capsys):
    assert checks.check_tcav_score(tcav_correct)
    assert "images with S(x) > 0" in capsys.readouterr().out


@pytest.mark.parametrize("fn, mistake", [
    (lambda g, c: float(((g @ c) >= 0).mean()), "greater_equal"),
    (lambda g, c: float(((g @ c) > 0).sum()), "count_not_fraction"),
    (lambda g, c: float(((g @ c) < 0).mean()), "sign_flipped"),
    (lambda g, c: float((g @ c).mean()), "mean_derivative"),
])
def test_tcav_score_mistakes(fn, mistake):
    result = checks.check_tcav_score(fn, verbose=False)
    assert not result and result.mistake == mistake, result.report()


def test_tcav_score_names_the_images():
    report = checks.check_tcav_score(lambda g, c: float(((g @ c) >= 0).mean()), verbose=False).report()
    assert "image 2 (S = 0)" in report and "image 7 (S = 0)" in report, report


# --- exercise sheets run to the end: a stub falls back to the reference -------------------------------------


def test_exercise_stub_is_todo_and_falls_back_to_the_reference(capsys):
    from xaikit.text.gradsam import gradsam_scores

    @checks.exercise(checks.check_gradsam)
    def my_gradsam(attentions, gradients):
        raise NotImplementedError("Exercise: replace this line with your solution.")

    result = checks.check_gradsam(my_gradsam)
    assert result and not result.passed and result.todo  # truthy: the sheet's assert lets it run on
    assert "NOT WRITTEN YET" in capsys.readouterr().out
    a, g = _synthetic_attention()
    torch.testing.assert_close(my_gradsam(a, g), gradsam_scores(a, g))  # a later cell gets the reference ...
    assert "NOTE: my_gradsam is not written yet" in capsys.readouterr().out  # ... and is told so
    assert my_gradsam.n_fallbacks == 1 and my_gradsam.__name__ == "my_gradsam"


def test_exercise_written_wrong_fails_then_later_calls_use_the_reference(capsys):
    """A wrong exercise: the check fails and names the mistake (on stderr, which nbgrader counts as a failed
    grade cell), yet is truthy so the sheet runs on, and later calls run the reference with a note. Fixed and
    checked again, the student's own function is called again."""
    from xaikit.text.gradsam import gradsam_scores

    @checks.exercise("check_gradsam")
    def no_relu(a, g):
        return (a * g).sum(dim=(0, 1, 3)) / (a.shape[0] * a.shape[1] * a.shape[2])

    a, g = _synthetic_attention()
    torch.testing.assert_close(no_relu(a, g), no_relu.student(a, g))  # not checked yet: the student's answer
    result = checks.check_gradsam(no_relu)
    assert result and not result.passed and not result.todo and result.fallback and result.mistake == "missing_relu"
    printed = capsys.readouterr()
    assert "some checks failed (mistake: missing_relu)" in printed.err and "ReLU" in printed.err
    assert "FAIL" not in printed.out
    assert not torch.allclose(no_relu.student(a, g), gradsam_scores(a, g))
    torch.testing.assert_close(no_relu(a, g), gradsam_scores(a, g))  # a later cell gets the reference ...
    assert "NOTE: no_relu failed check_gradsam(no_relu) (missing_relu)" in capsys.readouterr().out  # ... told so
    assert no_relu.n_fallbacks == 1 and no_relu.failed == "missing_relu"

    no_relu.student = gradsam_correct  # fixed (as a rerun of the cell would), then checked again
    assert checks.check_gradsam(no_relu, verbose=False).passed and no_relu.failed is None
    torch.testing.assert_close(no_relu(a, g), gradsam_correct(a, g))
    assert no_relu.n_fallbacks == 1

    plain = checks.check_gradsam(gradsam_no_relu, verbose=False)  # a plain function's mistake stays falsy
    assert not plain and not plain.fallback


def test_exercise_that_raises_falls_back_too():
    @checks.exercise(checks.check_tcav_score)
    def broken(grads, cav):
        return grads.nonexistent

    result = checks.check_tcav_score(broken, verbose=False)
    assert result and not result.passed and result.mistake == "raised" and result.fallback
    from xaikit.course.checks.concepts import _tcav_score_reference

    grads, cav = np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([1.0, 0.0])
    assert broken(grads, cav) == pytest.approx(_tcav_score_reference(grads, cav))


def test_another_check_does_not_switch_an_exercise_to_its_reference():
    @checks.exercise(checks.check_gradsam)
    def my_gradsam(a, g):
        return gradsam_correct(a, g)

    assert not checks.check_cls_share(my_gradsam, verbose=False)  # not its check: graded as a plain function
    assert my_gradsam.failed is None


def test_exercise_needs_a_known_check():
    with pytest.raises(ValueError, match="one of xaikit's checks"):
        checks.exercise(print)


@pytest.mark.parametrize("name", sorted(checks._REFERENCES))
def test_every_reference_passes_its_own_check(name):
    """What a stub falls back to is right: each reference, handed to its check as a student's function."""
    reference = checks._REFERENCES[name]()
    result = getattr(checks, name)(reference, verbose=False)
    assert result.passed, result.report()


def test_grad_times_input_right_and_wrong():
    from xaikit.tensor.gradients import gradient

    assert checks.check_grad_times_input(lambda f, x: x * gradient(f, x), verbose=False)
    only_gradient = checks.check_grad_times_input(lambda f, x: gradient(f, x), verbose=False)
    assert not only_gradient and only_gradient.mistake == "gradient_only" and "x = [0.0, 1.5]" in only_gradient.report()
    summed = checks.check_grad_times_input(lambda f, x: (x * gradient(f, x)).sum().expand(2), verbose=False)
    assert summed.mistake == "summed"


# -- the rank test's p-value (notebook 05, section 5) ---------------------------------------------------------
def rank_p_by_hand(value, null):
    """The Monte Carlo p-value written from its definition (Davison & Hinkley 1997, section 4.2). A random
    value as far from the centre as ``value`` up to rounding is a tie (with an even count the median is the
    midpoint of two values, equally far by construction)."""
    null = np.asarray(null, dtype=float)
    centre = np.median(np.append(null, value))
    return (1 + np.sum(np.abs(null - centre) >= abs(value - centre) - 1e-12)) / (len(null) + 1)


def test_rank_p_correct_and_the_reference_agrees_with_it(capsys):
    from xaikit.concepts.significance import rank_p

    assert checks.check_rank_p(rank_p_by_hand)
    assert "p = 0.05\n" in capsys.readouterr().out  # 1/(K+1) for a value beyond all K = 19
    rng = np.random.default_rng(0)
    for _ in range(50):  # the reference the check compares with, against the definition, on random draws
        null = rng.normal(size=int(rng.integers(1, 40)))
        value = float(rng.normal(scale=2.0))
        assert rank_p(value, null) == pytest.approx(rank_p_by_hand(value, null))


def _median_all(v, n):
    return np.median(np.append(n, v))


@pytest.mark.parametrize("fn, mistake", [
    (lambda v, n: (1 + np.sum(np.asarray(n) >= v)) / (len(n) + 1), "one_sided"),
    (lambda v, n: np.sum(np.abs(n - _median_all(v, n)) >= abs(v - _median_all(v, n))) / len(n), "no_plus_one"),
    (lambda v, n: (1 + np.sum(np.abs(n - _median_all(v, n)) > abs(v - _median_all(v, n)))) / (len(n) + 1),
     "ties_not_counted"),
    (lambda v, n: (1 + np.sum(np.abs(n - np.median(n)) >= abs(v - np.median(n)))) / (len(n) + 1), "wrong_centre"),
    (lambda v, n: (1 + np.sum(np.abs(n - np.mean(n)) >= abs(v - np.mean(n)))) / (len(n) + 1), "wrong_centre"),
    (lambda v, n: [0.05, 0.05], "shape"),
])
def test_rank_p_mistakes(fn, mistake):
    result = checks.check_rank_p(fn, verbose=False)
    assert not result and result.mistake == mistake, result.report()


# -- the cosine of activations with a CAV (notebook 07, section 3) --------------------------------------------
def cosines_by_hand(acts, cav):
    acts, cav = np.asarray(acts, dtype=float), np.asarray(cav, dtype=float)
    return acts @ cav / (np.linalg.norm(acts, axis=1) * np.linalg.norm(cav))


def test_cav_cosines_correct(capsys):
    assert checks.check_cav_cosines(cosines_by_hand)
    assert "cosines of 8 activations" in capsys.readouterr().out


@pytest.mark.parametrize("fn, mistake", [
    (lambda a, v: a @ v, "dot_product"),
    (lambda a, v: a @ v / np.linalg.norm(v), "cav_norm_only"),
    (lambda a, v: a @ v / np.linalg.norm(a, axis=1), "activation_norm_only"),
    (lambda a, v: np.sort(cosines_by_hand(a, v))[::-1], "sorted"),
    (lambda a, v: -cosines_by_hand(a, v), "sign_flipped"),
    (lambda a, v: cosines_by_hand(a, v)[:3], "shape"),
])
def test_cav_cosines_mistakes(fn, mistake):
    result = checks.check_cav_cosines(fn, verbose=False)
    assert not result and result.mistake == mistake, result.report()


# -- attention rollout (notebook 06) ------------------------------------------------------------------------

def _rollout_by_hand(a, first_on_the_left=False, residual=True, heads="mean", last_only=False):
    """Rollout written out loop by loop, independently of xaikit's rollout_matrix (Abnar & Zuidema 2020)."""
    L, M, N, _ = a.shape
    steps = []
    for layer in range(L):
        h = sum(a[layer, m] for m in range(M)) / (M if heads == "mean" else 1)
        step = 0.5 * h + 0.5 * torch.eye(N, dtype=a.dtype) if residual else h
        steps.append(step / step.sum(-1, keepdim=True))
    if last_only:
        return steps[-1]
    r = torch.eye(N, dtype=a.dtype)
    for step in steps:
        r = r @ step if first_on_the_left else step @ r
    return r


def test_rollout_correct_rows_sum_to_one(capsys):
    result = checks.check_rollout(_rollout_by_hand)
    assert result.passed and result.mistake is None
    assert "rollout matches" in capsys.readouterr().out
    a, _ = _synthetic_attention()
    r = _rollout_by_hand(a)
    torch.testing.assert_close(r.sum(-1), torch.ones(a.shape[-1], dtype=a.dtype))  # a product of stochastic rows


@pytest.mark.parametrize(("kwargs", "mistake"), [
    (dict(first_on_the_left=True), "wrong_order"),
    (dict(residual=False), "missing_residual"),
    (dict(heads="sum"), "summed_heads"),
    (dict(last_only=True), "last_layer_only"),
])
def test_rollout_classic_mistakes(kwargs, mistake):
    result = checks.check_rollout(lambda a: _rollout_by_hand(a, **kwargs), verbose=False)
    assert not result.passed and result.mistake == mistake, result.report()


def test_rollout_wrong_shape_is_named():
    result = checks.check_rollout(lambda a: _rollout_by_hand(a)[0], verbose=False)
    assert not result.passed and result.mistake == "shape"


def test_check_ig_riemann_takes_the_result_object():
    from xaikit.course.checks import check_ig_riemann
    from xaikit.tensor.integrated import integrated_gradients

    def mine(f, x, b, steps):
        return integrated_gradients(f, x, b, steps, "riemann_right")

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = check_ig_riemann(mine, verbose=False)
    assert not any("got None" in line for line in result.lines)


def test_check_attention_reads_torchs_own_function():
    """``check_attention(torch.nn.functional.scaled_dot_product_attention)``: a builtin with no signature was
    called as ``fn(x, w_q, w_k, w_v)`` and failed with "mat1 and mat2 shapes cannot be multiplied"."""
    result = xaikit.check_attention(torch.nn.functional.scaled_dot_product_attention, verbose=False)
    assert result.passed and not any("raised" in line for line in result.lines)
