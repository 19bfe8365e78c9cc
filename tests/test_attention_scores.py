"""Luong's dot and general scores, Bahdanau's additive score and cross-attention (xaikit.attention.scratch,
notebook 03 section 2b) against their closed forms on the lecture's worked example, explicit loops over every
(query, key) pair, and torch's scaled_dot_product_attention; bad input."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from xaikit.attention import scores as SC
from xaikit.attention import scratch as A

TOL = dict(atol=1e-6, rtol=1e-6)


def _example():
    ex = A.worked_example()
    return ex["x"].double(), ex["w_q"].double(), ex["w_k"].double(), ex["w_v"].double()


def _pairs(q, k, score):
    """The score matrix by an explicit loop over every (query, key) pair."""
    return torch.tensor([[float(score(q[i], k[j])) for j in range(len(k))] for i in range(len(q))],
                        dtype=torch.float64)


def test_dot_scores_are_the_inputs_dot_products():
    x, *_ = _example()
    scores, weights = SC.dot_scores(x, x)
    # x1 = [1,0,1,0], x2 = [0,2,0,2], x3 = [1,1,1,1]: x_i . x_j by hand
    torch.testing.assert_close(scores, torch.tensor([[2.0, 0, 2], [0, 8, 4], [2, 4, 4]], dtype=torch.float64))
    torch.testing.assert_close(scores, _pairs(x, x, torch.dot))
    e = torch.exp(torch.tensor([2.0, 0, 2], dtype=torch.float64))
    torch.testing.assert_close(weights[0], e / e.sum(), **TOL)


def test_scaled_dot_scores_are_those_of_scaled_dot_product_attention():
    x, w_q, w_k, w_v = _example()
    steps = A.self_attention(x, w_q, w_k, w_v)
    scores, weights = SC.dot_scores(steps.q, steps.k, scaled=True)
    torch.testing.assert_close(scores, steps.q @ steps.k.T / math.sqrt(3), **TOL)
    torch.testing.assert_close(weights, steps.weights, **TOL)
    # unscaled, on the worked example's Q and K: the hand-computed first row [2, 4, 4]
    torch.testing.assert_close(SC.dot_scores(steps.q, steps.k)[0][0], torch.tensor([2.0, 4, 4], dtype=torch.float64))


def test_general_score_with_identity_is_dot_and_with_a_known_w_is_the_hand_value():
    x, *_ = _example()
    torch.testing.assert_close(SC.general_scores(x, x, torch.eye(4))[0], SC.dot_scores(x, x)[0])
    w = torch.diag(torch.tensor([1.0, 2, 3, 4]))
    # x_i W x_j = sum_d x_i[d] d x_j[d]: x1Wx1 = 1 + 3, x2Wx2 = 2*2*2 + 4*2*2, x2Wx3 = 2*2 + 4*2, x3Wx3 = 10
    want = torch.tensor([[4.0, 0, 4], [0, 24, 12], [4, 12, 10]], dtype=torch.float64)
    scores, weights = SC.general_scores(x, x, w)
    torch.testing.assert_close(scores, want)
    torch.testing.assert_close(weights, torch.softmax(want, -1), **TOL)


def test_general_score_with_a_nonsymmetric_w_against_a_loop():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(4, 3, generator=g, dtype=torch.float64)
    k = torch.randn(6, 5, generator=g, dtype=torch.float64)  # another width: W is (3, 5)
    w = torch.randn(3, 5, generator=g, dtype=torch.float64)
    scores, weights = SC.general_scores(q, k, w)
    torch.testing.assert_close(scores, _pairs(q, k, lambda a, b: a @ w @ b), **TOL)
    assert weights.shape == (4, 6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(4, dtype=torch.float64), **TOL)


def test_general_score_on_inputs_with_w_q_w_k_is_the_transformers_q_k():
    x, w_q, w_k, w_v = _example()
    steps = A.self_attention(x, w_q, w_k, w_v, scale=1.0)
    scores, weights = SC.general_scores(x, x, w_q @ w_k.T)
    torch.testing.assert_close(scores, steps.q @ steps.k.T, **TOL)  # x W_Q W_K^T x^T = Q K^T
    torch.testing.assert_close(weights, steps.weights, **TOL)


def test_additive_scores_against_a_loop_and_additive_attention():
    x, w_q, w_k, w_v = _example()
    steps = A.self_attention(x, w_q, w_k, w_v)
    g = torch.Generator().manual_seed(0)
    w_a, u_a = torch.randn(3, 4, generator=g, dtype=torch.float64), torch.randn(3, 4, generator=g, dtype=torch.float64)
    v_a = torch.randn(4, generator=g, dtype=torch.float64)
    scores, weights = SC.additive_scores(steps.q, steps.k, w_a, u_a, v_a)
    torch.testing.assert_close(scores, _pairs(steps.q, steps.k, lambda a, b: v_a @ torch.tanh(a @ w_a + b @ u_a)),
                               **TOL)
    out, att = SC.additive_attention(steps.q, steps.k, steps.v, w_a, u_a, v_a)
    torch.testing.assert_close(att, weights, **TOL)
    torch.testing.assert_close(out, weights @ steps.v, **TOL)
    # mixed dtypes: float32 values with float64 weights compute in float64, as before the scores were split out
    out32, _ = SC.additive_attention(steps.q.float(), steps.k.float(), steps.v.float(), w_a, u_a.float(), v_a)
    assert out32.dtype == torch.float64


def test_scores_with_a_mask():
    x, *_ = _example()
    scores, weights = SC.dot_scores(x, x, mask=A.causal_mask(3))
    assert torch.isinf(scores.triu(1)[0, 1:]).all() and bool((weights.triu(1) == 0).all())  # exact: exp(-inf) = 0
    assert weights[0, 0] == 1.0
    _, general = SC.general_scores(x, x, torch.eye(4), mask=A.causal_mask(3))
    torch.testing.assert_close(general, weights)


def _cross():
    g = torch.Generator().manual_seed(1)
    x_q = torch.randn(2, 5, generator=g, dtype=torch.float64)  # 2 queries of width 5
    x_kv = torch.randn(3, 4, generator=g, dtype=torch.float64)  # 3 keys/values of width 4
    w_q = torch.randn(5, 3, generator=g, dtype=torch.float64)
    w_k = torch.randn(4, 3, generator=g, dtype=torch.float64)
    w_v = torch.randn(4, 6, generator=g, dtype=torch.float64)
    return x_q, x_kv, w_q, w_k, w_v


def test_cross_attention_shapes_rows_and_torch():
    x_q, x_kv, w_q, w_k, w_v = _cross()
    steps = SC.cross_attention(x_q, x_kv, w_q, w_k, w_v)
    assert steps.weights.shape == (2, 3) and steps.out.shape == (2, 6) and steps.scores.shape == (2, 3)
    torch.testing.assert_close(steps.weights.sum(-1), torch.ones(2, dtype=torch.float64), **TOL)
    q, k, v = x_q @ w_q, x_kv @ w_k, x_kv @ w_v
    torch.testing.assert_close(steps.out, F.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(3)), **TOL)
    dot = SC.cross_attention(x_q, x_kv, w_q, w_k, w_v, score="dot")
    torch.testing.assert_close(dot.out, F.scaled_dot_product_attention(q, k, v, scale=1.0), **TOL)
    general = SC.cross_attention(x_q, x_kv, w_q, w_k, w_v, score="general", w=torch.eye(3))
    torch.testing.assert_close(general.weights, dot.weights, **TOL)
    assert not torch.allclose(dot.weights, steps.weights)  # the scale matters here
    masked = SC.cross_attention(x_q, x_kv, w_q, w_k, w_v, mask=torch.tensor([True, False, True]))
    assert bool((masked.weights[:, 1] == 0).all())  # exact: exp(-inf) = 0
    torch.testing.assert_close(masked.weights.sum(-1), torch.ones(2, dtype=torch.float64), **TOL)


def test_cross_attention_of_a_sequence_with_itself_is_self_attention():
    x, w_q, w_k, w_v = _example()
    steps = SC.cross_attention(x, x, w_q, w_k, w_v)
    torch.testing.assert_close(steps.out, A.self_attention(x, w_q, w_k, w_v).out, **TOL)


@pytest.mark.parametrize("call, words", [
    (lambda q, k: SC.dot_scores(q, k[:, :2]), "general_scores"),
    (lambda q, k: SC.dot_scores(q[0], k), "unsqueeze"),
    (lambda q, k: SC.general_scores(q, k, torch.eye(4)), "w must be (d_q, d_k) = (3, 3)"),
    (lambda q, k: SC.general_scores(q, k[:, :2], torch.ones(2, 3)), "pass w.T"),
    (lambda q, k: SC.dot_scores(q.expand(2, 3, 3), k.expand(4, 3, 3)), "batch dimensions"),
    (lambda q, k: SC.additive_scores(q, k, torch.ones(3, 4), torch.ones(3, 5), torch.ones(4)), "d_a"),
    (lambda q, k: SC.dot_scores(q, k, mask=torch.ones(2, 2, dtype=torch.bool)), "mask has shape"),
])
def test_score_bad_input_is_named(call, words):
    x, w_q, w_k, _ = _example()
    with pytest.raises(ValueError) as err:
        call(x @ w_q, x @ w_k)
    assert words in str(err.value)


@pytest.mark.parametrize("kwargs, words", [
    (dict(score="additive"), "score must be one of"),
    (dict(score="general"), "pass w"),
    (dict(w=torch.eye(3)), "pass w"),
    (dict(w_k=torch.ones(5, 3)), "w_k must be (d_in, d_out) with d_in = x_kv.shape[1] = 4"),
    (dict(w_k=torch.ones(4, 2)), "same width d_k"),
    (dict(x_q=torch.ones(5)), "x_q must be (tokens, features)"),
])
def test_cross_attention_bad_input_is_named(kwargs, words):
    x_q, x_kv, w_q, w_k, w_v = _cross()
    args = dict(x_q=x_q, x_kv=x_kv, w_q=w_q, w_k=w_k, w_v=w_v) | kwargs
    with pytest.raises(ValueError) as err:
        SC.cross_attention(**args)
    assert words in str(err.value)


def test_a_query_that_may_attend_to_no_key_is_named():
    from xaikit.attention.scratch import scaled_dot_product_attention

    q, k, v = torch.randn(4, 3), torch.randn(5, 3), torch.randn(5, 2)
    mask = torch.ones(4, 5, dtype=torch.bool)
    mask[2] = False  # query 2 may look at nothing
    with pytest.warns(UserWarning, match=r"mask: 1 query row\(s\) may attend to no key"):
        _, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    assert torch.isnan(weights[2]).all() and torch.isfinite(weights[[0, 1, 3]]).all()  # as torch gives them


def test_scores_that_overflow_or_no_keys_are_refused():
    from xaikit.attention.scratch import scaled_dot_product_attention

    q, k, v = torch.randn(4, 3), torch.randn(5, 3), torch.randn(5, 2)
    with pytest.raises(ValueError, match="not finite"):
        scaled_dot_product_attention(q * 1e30, k * 1e30, v)
    with pytest.raises(ValueError, match="no keys"):
        scaled_dot_product_attention(q, k[:0], v[:0])
