"""xaikit.attention.scratch against torch's own attention (F.scaled_dot_product_attention, nn.MultiheadAttention),
additive attention against a pair-by-pair loop, analytic facts (rows sum to 1, permutation equivariance, PE
formula, softmax Jacobian, uniform additive weights when the keys are ignored) and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from xaikit.attention import positions as PE
from xaikit.attention import saturation as SAT
from xaikit.attention import scores as SC
from xaikit.attention import scratch as A

TOL = dict(atol=1e-6, rtol=1e-6)


def _qkv(seed=0, batch=(2,), t_q=5, t_k=7, d_k=8, d_v=6, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch, t_q, d_k, generator=g, dtype=dtype)
    k = torch.randn(*batch, t_k, d_k, generator=g, dtype=dtype)
    v = torch.randn(*batch, t_k, d_v, generator=g, dtype=dtype)
    return q, k, v


# -- scaled dot-product attention ---------------------------------------------------------------------------
@pytest.mark.parametrize("batch", [(), (3,), (2, 4)])
def test_sdpa_matches_torch_without_mask(batch):
    q, k, v = _qkv(batch=batch)
    out, weights = A.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), **TOL)
    assert weights.shape == (*batch, 5, 7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(*batch, 5, dtype=q.dtype), **TOL)


def test_sdpa_matches_torch_with_causal_padding_and_scale():
    q, k, v = _qkv(t_q=6, t_k=6)
    causal = A.causal_mask(6)
    torch.testing.assert_close(A.scaled_dot_product_attention(q, k, v, mask=causal)[0],
                               F.scaled_dot_product_attention(q, k, v, attn_mask=causal), **TOL)
    pad = A.padding_mask(torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]]))  # (2, 1, 6)
    out, weights = A.scaled_dot_product_attention(q, k, v, mask=pad)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=pad), **TOL)
    assert torch.all(weights[0, :, 4:] == 0), "no query may attend to a padding token"  # exact: exp(-inf) = 0
    assert torch.all(weights[1] > 0)
    # additive float mask and an explicit scale (temperature 3)
    add = torch.zeros(6, 6, dtype=q.dtype).masked_fill(~causal, float("-inf"))
    torch.testing.assert_close(A.scaled_dot_product_attention(q, k, v, mask=add, scale=1 / 3)[0],
                               F.scaled_dot_product_attention(q, k, v, attn_mask=add, scale=1 / 3), **TOL)


def test_causal_weights_are_lower_triangular_and_rows_sum_to_one():
    q, k, v = _qkv(t_q=5, t_k=5)
    _, w = A.scaled_dot_product_attention(q, k, v, mask=A.causal_mask(5))
    assert torch.all(w.triu(1) == 0)  # exact: exp(-inf) = 0
    torch.testing.assert_close(w[..., 0, 0], torch.ones(2, dtype=w.dtype))  # token 0 sees only itself
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 5, dtype=w.dtype), **TOL)


def test_worked_example_matches_hand_computation():
    ex = A.worked_example()
    steps = A.self_attention(ex["x"], ex["w_q"], ex["w_k"], ex["w_v"], scale=1.0)
    # Q, K, V by hand (x @ W) for the three inputs
    torch.testing.assert_close(steps.q, torch.tensor([[1.0, 0, 2], [2, 2, 2], [2, 1, 3]]))
    torch.testing.assert_close(steps.k, torch.tensor([[0.0, 1, 1], [4, 4, 0], [2, 3, 1]]))
    torch.testing.assert_close(steps.v, torch.tensor([[1.0, 2, 3], [2, 8, 0], [2, 6, 3]]))
    torch.testing.assert_close(steps.scores[0], torch.tensor([2.0, 4, 4]))
    e = torch.exp(torch.tensor([2.0, 4, 4]))
    torch.testing.assert_close(steps.weights[0], e / e.sum())
    torch.testing.assert_close(steps.out, F.scaled_dot_product_attention(steps.q, steps.k, steps.v, scale=1.0))
    default = A.self_attention(ex["x"], ex["w_q"], ex["w_k"], ex["w_v"])
    assert default.scale == pytest.approx(1 / math.sqrt(3))


# -- multi-head attention against nn.MultiheadAttention ----------------------------------------------------
def _mha_pair(d_model=12, n_heads=3, seed=0, bias=True):
    torch.manual_seed(seed)
    ref = nn.MultiheadAttention(d_model, n_heads, bias=bias, batch_first=True).double().eval()
    with torch.no_grad():
        if bias:  # the default initialisation puts zeros in the biases; make them count
            ref.in_proj_bias.normal_()
            ref.out_proj.bias.normal_()
    w_q, w_k, w_v = (w.T for w in ref.in_proj_weight.detach().chunk(3))  # nn stores W^T
    kw = dict(w_q=w_q, w_k=w_k, w_v=w_v, w_o=ref.out_proj.weight.detach().T, n_heads=n_heads)
    if bias:
        b_q, b_k, b_v = ref.in_proj_bias.detach().chunk(3)
        kw.update(b_q=b_q, b_k=b_k, b_v=b_v, b_o=ref.out_proj.bias.detach())
    return ref, kw


@pytest.mark.parametrize("n_heads", [1, 3, 4])
@pytest.mark.parametrize("bias", [False, True])
def test_multi_head_matches_nn_multihead_attention(n_heads, bias):
    ref, kw = _mha_pair(n_heads=n_heads, bias=bias)
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    out, weights = A.multi_head_attention(x, **kw)
    ref_out, ref_w = ref(x, x, x, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, **TOL)
    torch.testing.assert_close(weights, ref_w, **TOL)
    assert weights.shape == (2, n_heads, 5, 5)


def test_multi_head_matches_nn_with_causal_and_padding_masks():
    ref, kw = _mha_pair(n_heads=4)
    x = torch.randn(2, 6, 12, dtype=torch.float64)
    causal = A.causal_mask(6)
    out, w = A.multi_head_attention(x, **kw, mask=causal)
    ref_out, ref_w = ref(x, x, x, attn_mask=~causal, average_attn_weights=False)  # nn: True = blocked
    torch.testing.assert_close(out, ref_out, **TOL)
    torch.testing.assert_close(w, ref_w, **TOL)
    am = torch.tensor([[1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0]])
    out, w = A.multi_head_attention(x, **kw, mask=A.padding_mask(am))
    ref_out, ref_w = ref(x, x, x, key_padding_mask=am == 0, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, **TOL)
    torch.testing.assert_close(w, ref_w, **TOL)
    assert torch.all(w[1, :, :, 3:] == 0)  # exact: exp(-inf) = 0


def test_multi_head_unbatched_and_single_head_equals_sdpa():
    ref, kw = _mha_pair(n_heads=1, bias=False)
    x = torch.randn(4, 12, dtype=torch.float64)
    out, w = A.multi_head_attention(x, **kw)
    assert out.shape == (4, 12) and w.shape == (1, 4, 4)
    o1, w1 = A.scaled_dot_product_attention(x @ kw["w_q"], x @ kw["w_k"], x @ kw["w_v"])
    torch.testing.assert_close(out, o1 @ kw["w_o"], **TOL)
    torch.testing.assert_close(w[0], w1, **TOL)


# -- permutation equivariance ---------------------------------------------------------------------------------
def test_permutation_equivariance_holds_without_pe_and_breaks_with_it():
    ref, kw = _mha_pair(n_heads=2)
    x = torch.randn(7, 12, dtype=torch.float64)
    perm = torch.tensor([3, 0, 6, 1, 5, 2, 4])
    out, w = A.multi_head_attention(x, **kw)
    out_p, w_p = A.multi_head_attention(x[perm], **kw)
    torch.testing.assert_close(out_p, out[perm], **TOL)  # f(P x) = P f(x)
    torch.testing.assert_close(w_p, w[:, perm][:, :, perm], **TOL)
    pe = PE.sinusoidal_positional_encoding(7, 12).double()
    out_pe, _ = A.multi_head_attention(x + pe, **kw)
    out_pe_p, _ = A.multi_head_attention(x[perm] + pe, **kw)
    assert (out_pe_p - out_pe[perm]).abs().max() > 1e-2


# -- positional encoding -----------------------------------------------------------------------------------
def test_sinusoidal_positional_encoding_formula_and_similarity():
    pe = PE.sinusoidal_positional_encoding(50, 16)
    assert pe.shape == (50, 16)
    for pos in (0, 3, 49):
        for i in range(8):
            angle = pos / 10000 ** (2 * i / 16)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    sim = PE.position_similarity(pe)
    torch.testing.assert_close(sim.diagonal(), torch.ones(50), atol=1e-5, rtol=0)
    assert sim[10, 11] > sim[10, 20] > sim[10, 40]  # nearby positions are more alike
    torch.testing.assert_close(sim[5, 8], sim[20, 23], atol=1e-5, rtol=0)  # depends only on the offset
    odd = PE.sinusoidal_positional_encoding(4, 5)
    assert odd.shape == (4, 5) and torch.isfinite(odd).all()
    raw = PE.position_similarity(pe, normalize=False)
    torch.testing.assert_close(raw.diagonal(), torch.full((50,), 8.0), atol=1e-4, rtol=0)  # sum sin^2+cos^2


# -- saturation --------------------------------------------------------------------------------------------
def test_entropy_max_weight_and_jacobian_norm():
    uniform = torch.full((1, 4), 0.25, dtype=torch.float64)
    one_hot = torch.tensor([[1.0, 0, 0, 0]], dtype=torch.float64)
    assert SAT.row_entropy(uniform).item() == pytest.approx(math.log(4))
    assert SAT.row_entropy(one_hot).item() == pytest.approx(0.0, abs=1e-12)
    assert SAT.max_weight(uniform).item() == pytest.approx(0.25)
    assert SAT.softmax_jacobian_norm(one_hot).item() == pytest.approx(0.0, abs=1e-12)
    s = torch.tensor([0.3, -1.2, 2.0, 0.5], dtype=torch.float64)
    jac = torch.autograd.functional.jacobian(lambda z: torch.softmax(z, -1), s)
    assert SAT.softmax_jacobian_norm(torch.softmax(s, -1)).item() == pytest.approx(jac.norm().item(), rel=1e-10)
    # sharper temperature -> lower entropy, higher max weight, smaller gradient
    ents, grads = [], []
    for temp in (10.0, 1.0, 0.1, 0.01):
        p = torch.softmax(s / temp, -1)
        ents.append(SAT.row_entropy(p).item())
        grads.append(SAT.softmax_jacobian_norm(p).item())
    assert ents == sorted(ents, reverse=True) and grads[-1] < 1e-6 < grads[1]


def test_qk_variance_grows_with_d_k_and_scaling_fixes_it():
    res = SAT.qk_variance((1, 16, 256), n_samples=20000, seed=0)
    for d, raw, scaled in zip(res["d_k"], res["raw"], res["scaled"], strict=True):
        assert raw == pytest.approx(d, rel=0.1)
        assert scaled == pytest.approx(1.0, rel=0.1)


# -- additive (Bahdanau) attention ----------------------------------------------------------------------------
def _additive_setup(seed=0, batch=(2,), t_q=5, t_k=7, d_q=6, d_k=4, d_a=8, d_v=3):
    """Queries and keys of different widths (allowed in additive attention) and random weights, float64."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch, t_q, d_q, generator=g, dtype=torch.float64)
    k = torch.randn(*batch, t_k, d_k, generator=g, dtype=torch.float64)
    v = torch.randn(*batch, t_k, d_v, generator=g, dtype=torch.float64)
    w_q = torch.randn(d_q, d_a, generator=g, dtype=torch.float64) / math.sqrt(d_q)
    w_k = torch.randn(d_k, d_a, generator=g, dtype=torch.float64) / math.sqrt(d_k)
    v_a = torch.randn(d_a, generator=g, dtype=torch.float64)
    return q, k, v, w_q, w_k, v_a


def _additive_by_loop(q, k, v, w_q, w_k, v_a, allowed=None):
    """The oracle: Bahdanau's alignment model for one (T_q, d_q) x (T_k, d_k) problem, pair by pair, in Python
    floats (float64) with no tensor operation. ``allowed[i][j]`` False drops key j for query i."""
    q, k, v, w_q, w_k, v_a = (t.tolist() for t in (q, k, v, w_q, w_k, v_a))
    d_a = len(v_a)
    out, weights = [], []
    for i, q_i in enumerate(q):
        scores = {}
        for j, k_j in enumerate(k):
            if allowed is not None and not allowed[i][j]:
                continue
            e_ij = 0.0
            for a in range(d_a):
                pre = sum(q_i[c] * w_q[c][a] for c in range(len(q_i))) + sum(k_j[c] * w_k[c][a]
                                                                             for c in range(len(k_j)))
                e_ij += v_a[a] * math.tanh(pre)
            scores[j] = e_ij
        top = max(scores.values())
        total = sum(math.exp(s - top) for s in scores.values())
        row = [math.exp(scores[j] - top) / total if j in scores else 0.0 for j in range(len(k))]
        weights.append(row)
        out.append([sum(row[j] * v[j][c] for j in range(len(k))) for c in range(len(v[0]))])
    return torch.tensor(out, dtype=torch.float64), torch.tensor(weights, dtype=torch.float64)


@pytest.mark.parametrize("batch", [(), (3,)])
def test_additive_matches_a_loop_over_every_pair(batch):
    q, k, v, w_q, w_k, v_a = _additive_setup(batch=batch)
    out, weights = SC.additive_attention(q, k, v, w_q, w_k, v_a)
    assert out.shape == (*batch, 5, 3) and weights.shape == (*batch, 5, 7)
    flat = (lambda t: t.reshape(-1, *t.shape[-2:])) if batch else (lambda t: t.unsqueeze(0))
    for qb, kb, vb, ob, wb in zip(flat(q), flat(k), flat(v), flat(out), flat(weights), strict=True):
        ref_out, ref_w = _additive_by_loop(qb, kb, vb, w_q, w_k, v_a)
        assert (wb - ref_w).abs().max() < 1e-12
        assert (ob - ref_out).abs().max() < 1e-12
    torch.testing.assert_close(weights.sum(-1), torch.ones(*batch, 5, dtype=torch.float64), **TOL)


def test_additive_with_keys_ignored_is_uniform_and_with_queries_ignored_is_the_same_for_every_query():
    q, k, v, w_q, w_k, v_a = _additive_setup(batch=())
    # w_k = 0: e_ij = v_a . tanh(q_i W_q) does not depend on j, so every key gets 1 / T_k
    out, weights = SC.additive_attention(q, k, v, w_q, torch.zeros_like(w_k), v_a)
    torch.testing.assert_close(weights, torch.full((5, 7), 1 / 7, dtype=torch.float64), atol=1e-15, rtol=0)
    torch.testing.assert_close(out, v.mean(0).expand(5, -1), atol=1e-15, rtol=1e-14)
    # w_q = 0: e_ij = v_a . tanh(k_j W_k) does not depend on i, so every row is softmax of the same scores
    _, weights = SC.additive_attention(q, k, v, torch.zeros_like(w_q), w_k, v_a)
    one_row = torch.softmax(torch.tanh(k @ w_k) @ v_a, dim=-1)  # (T_k,)
    torch.testing.assert_close(weights, one_row.expand(5, -1), atol=1e-15, rtol=0)
    # one key: all the weight goes to it, whatever the scores
    out, weights = SC.additive_attention(q, k[:1], v[:1], w_q, w_k, v_a)
    torch.testing.assert_close(weights, torch.ones(5, 1, dtype=torch.float64), atol=1e-15, rtol=0)
    torch.testing.assert_close(out, v[:1].expand(5, -1), atol=1e-15, rtol=1e-14)


def test_additive_masks_give_exact_zeros_and_renormalise_the_rest():
    q, k, v, w_q, w_k, v_a = _additive_setup(batch=(2,), t_q=6, t_k=6)
    causal = A.causal_mask(6)
    out, weights = SC.additive_attention(q, k, v, w_q, w_k, v_a, mask=causal)
    assert torch.all(weights.triu(1) == 0), "a masked key gets weight exactly 0"
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 6, dtype=torch.float64), **TOL)
    ref_out, ref_w = _additive_by_loop(q[1], k[1], v[1], w_q, w_k, v_a, allowed=causal.tolist())
    assert (weights[1] - ref_w).abs().max() < 1e-12 and (out[1] - ref_out).abs().max() < 1e-12
    pad = A.padding_mask(torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]]))  # (2, 1, 6)
    _, weights = SC.additive_attention(q, k, v, w_q, w_k, v_a, mask=pad)
    assert torch.all(weights[0, :, 4:] == 0) and torch.all(weights[1] > 0)  # exact: exp(-inf) = 0
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 6, dtype=torch.float64), **TOL)
    # the same masks as 0/1 integers and as an additive float mask give the same weights
    as_float = torch.zeros(6, 6, dtype=torch.float64).masked_fill(~causal, float("-inf"))
    for same in (causal.int(), as_float):
        torch.testing.assert_close(SC.additive_attention(q, k, v, w_q, w_k, v_a, mask=same)[1],
                                   SC.additive_attention(q, k, v, w_q, w_k, v_a, mask=causal)[1],
                                   atol=0, rtol=0)  # exact: the same scores (+0 or -inf), the same softmax


def test_additive_scores_stay_bounded_where_dot_product_scores_grow_with_the_keys():
    """What the tanh buys (Vaswani et al. 2017, 3.2.1: unscaled dot products grow large): |e_ij| <= ||v_a||_1,
    so no additive weight falls below exp(-2 ||v_a||_1) / T_k however the keys are scaled, while multiplying
    the keys by c multiplies dot-product scores by c, which pushes the softmax past that floor for large c."""
    q, k, v, w_q, w_k, v_a = _additive_setup(batch=(), d_q=4, d_k=4)
    t_k = k.shape[0]
    floor = math.exp(-2 * v_a.abs().sum().item()) / t_k
    for c in (0.0, 1.0, 10.0, 1e3, 1e6):
        _, additive = SC.additive_attention(q, c * k, v, w_q, w_k, v_a)
        assert additive.min() >= floor, f"keys x {c}: an additive weight fell below the floor"
        torch.testing.assert_close(additive.sum(-1), torch.ones(5, dtype=torch.float64), **TOL)
    # dot product: log(w_ij / w_il) = c (s_ij - s_il) exactly, so the spread of log-weights scales with c
    _, base = A.scaled_dot_product_attention(q, k, v)
    _, times_3 = A.scaled_dot_product_attention(q, 3 * k, v)
    log_base, log_3 = base.log(), times_3.log()
    torch.testing.assert_close(log_3 - log_3[:, :1], 3 * (log_base - log_base[:, :1]), atol=1e-10, rtol=1e-10)
    # pick c from the data so that every row's spread c * (s_max - s_min) exceeds 2 ||v_a||_1 + log T_k + 1
    spread = (log_base.amax(-1) - log_base.amin(-1)).min().item()  # min over rows of s_max - s_min, > 0
    assert spread > 0, "no row has all its scores equal"
    c = (2 * v_a.abs().sum().item() + math.log(t_k) + 1) / spread
    _, dot = A.scaled_dot_product_attention(q, c * k, v)
    assert torch.all(dot.amin(-1) < floor), "scaled keys push dot-product weights below additive's floor"
    _, additive = SC.additive_attention(q, c * k, v, w_q, w_k, v_a)
    assert additive.min() >= floor


def test_additive_bad_shapes_raise_clear_errors():
    q, k, v, w_q, w_k, v_a = _additive_setup(batch=())  # d_q = 6, d_k = 4, d_a = 8
    with pytest.raises(ValueError, match=r"w_q must be \(d_q, d_a\) with d_q = q.shape\[-1\] = 6"):
        SC.additive_attention(q, k, v, w_k, w_k, v_a)
    with pytest.raises(ValueError, match=r"w_q must be .*got shape \(8,\)"):
        SC.additive_attention(q, k, v, v_a, w_k, v_a)
    with pytest.raises(ValueError, match=r"w_k must be \(d_k, d_a\) with d_k = k.shape\[-1\] = 4.*weight.T"):
        SC.additive_attention(q, k, v, w_q, w_q, v_a)
    with pytest.raises(ValueError, match=r"same number of hidden units d_a.*w_k is \(4, 5\)"):
        SC.additive_attention(q, k, v, w_q, w_k[:, :5], v_a)
    with pytest.raises(ValueError, match=r"v_a must be a vector \(d_a,\) = \(8,\).*v_a.reshape\(-1\)"):
        SC.additive_attention(q, k, v, w_q, w_k, v_a.unsqueeze(1))
    with pytest.raises(ValueError, match=r"v_a must be a vector .*got shape \(7,\)"):
        SC.additive_attention(q, k, v, w_q, w_k, v_a[:7])
    with pytest.raises(ValueError, match="k and v must have the same number of tokens"):
        SC.additive_attention(q, k, v[:3], w_q, w_k, v_a)
    with pytest.raises(ValueError, match="mask has shape"):
        SC.additive_attention(q, k, v, w_q, w_k, v_a, mask=torch.ones(5, 5, dtype=torch.bool))
    with pytest.raises(TypeError, match="w_k must be a torch tensor"):
        SC.additive_attention(q, k, v, w_q, "abc", v_a)
    # nested lists work like tensors, in the default dtype, promoted to the tensors' float64
    out, _ = SC.additive_attention(q, k, v, w_q.tolist(), w_k, v_a.tolist())
    assert out.dtype == torch.float64


# -- bad input ---------------------------------------------------------------------------------------------
def test_bad_inputs_raise_clear_errors():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="q and k must have the same last dimension"):
        A.scaled_dot_product_attention(q, k[..., :3], v)
    with pytest.raises(ValueError, match="k and v must have the same number of tokens"):
        A.scaled_dot_product_attention(q, k, v[:, :4])
    with pytest.raises(ValueError, match="batch dimensions"):
        A.scaled_dot_product_attention(q, k[:1].expand(3, -1, -1).clone(), v[:1].expand(3, -1, -1).clone())
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        A.scaled_dot_product_attention(torch.randn(4), torch.randn(4), torch.randn(4))
    with pytest.raises(ValueError, match="mask has shape"):
        A.scaled_dot_product_attention(q, k, v, mask=torch.ones(5, 5, dtype=torch.bool))
    with pytest.raises(TypeError, match="q must be a torch tensor"):
        A.scaled_dot_product_attention("abc", k, v)
    ref, kw = _mha_pair(d_model=12, n_heads=3)
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    with pytest.raises(ValueError, match="not divisible by n_heads = 5.*choose n_heads from"):
        A.multi_head_attention(x, **{**kw, "n_heads": 5})
    with pytest.raises(ValueError, match="w_o must be"):
        A.multi_head_attention(x, **{**kw, "w_o": torch.eye(6)})
    with pytest.raises(ValueError, match="mask has shape"):
        A.multi_head_attention(x, **kw, mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="n_positions"):
        PE.sinusoidal_positional_encoding(0, 8)
    with pytest.raises(TypeError, match="d_model must be an int"):
        PE.sinusoidal_positional_encoding(8, 4.5)
    with pytest.raises(ValueError, match="only 0"):
        A.padding_mask(torch.tensor([[1, 2, 0]]))


@pytest.mark.parametrize("d_model,k", [(2, 1), (16, 3), (64, 11), (128, -4)])
def test_position_shift_moves_every_position_by_k(d_model, k):
    """Oracle: the angle-sum identities, checked numerically on the encoding itself (Vaswani et al. 3.5)."""
    pe = PE.sinusoidal_positional_encoding(80, d_model).double()  # (P, d)
    m = PE.position_shift(k, d_model).double()
    lo, hi = max(0, -k), 80 - max(0, k)
    assert torch.allclose(pe[lo:hi] @ m.T, pe[lo + k:hi + k], atol=2e-6)  # float32 tables
    assert torch.allclose(m @ m.T, torch.eye(d_model, dtype=m.dtype), atol=1e-6)
    assert torch.allclose(PE.position_shift(0, d_model).double(), torch.eye(d_model, dtype=m.dtype))


def test_position_shift_rejects_odd_width():
    with pytest.raises(ValueError, match="d_model must be even"):
        PE.position_shift(1, 7)


def test_float_zero_one_masks_are_refused_with_the_fix():
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4)
    causal = torch.tril(torch.ones(3, 3))  # float: was added to the scores, the future key kept weight 0.087
    with pytest.raises(ValueError, match=r"float tensor of only 0s and 1s.*pass mask\.bool\(\)"):
        A.scaled_dot_product_attention(q, k, v, mask=causal)
    with pytest.raises(ValueError, match=r"mask\.bool\(\)"):
        A.self_attention(torch.eye(3), torch.eye(3), torch.eye(3), torch.eye(3), mask=causal)
    w = torch.eye(4)
    with pytest.raises(ValueError, match=r"mask\.bool\(\)"):
        A.multi_head_attention(torch.randn(3, 4), w, w, w, w, 2, mask=causal)
    with pytest.raises(ValueError, match=r"mask\.bool\(\)"):
        SC.additive_attention(q, k, v, torch.randn(4, 5), torch.randn(4, 5), torch.randn(5), mask=causal.tolist())
    # what keeps working: the boolean, the 0/1 integer and the additive float mask give the same weights
    _, want = A.scaled_dot_product_attention(q, k, v, mask=causal.bool())
    assert torch.all(want.triu(1) == 0)
    for same in (causal.long(), torch.zeros(3, 3).masked_fill(causal == 0, float("-inf"))):
        torch.testing.assert_close(A.scaled_dot_product_attention(q, k, v, mask=same)[1], want)
    torch.testing.assert_close(A.scaled_dot_product_attention(q, k, v, mask=torch.zeros(3, 3))[1],
                               A.scaled_dot_product_attention(q, k, v)[1])  # an all-zero additive mask: no mask


def test_padding_mask_passed_as_is_is_refused_with_padding_mask_fix():
    q = torch.randn(3, 3, 4, generator=torch.Generator().manual_seed(0))
    am = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 0]])  # a tokenizer's attention_mask, B = T = 3
    with pytest.raises(ValueError, match=r"looks like a tokenizer's attention_mask.*padding_mask\(mask\)"):
        A.scaled_dot_product_attention(q, q, q, mask=am)
    with pytest.raises(ValueError, match=r"padding_mask\(mask\)"):  # B != T: the shape error names the fix too
        A.scaled_dot_product_attention(q[:2], q[:2], q[:2], mask=am[:2])
    _, w = A.scaled_dot_product_attention(q, q, q, mask=A.padding_mask(am))
    assert float(w[1, :, 2].abs().max()) == 0.0 and float(w[0, 2, 1]) > 0  # padding keys, per batch element
    A.scaled_dot_product_attention(q, q, q, mask=am.bool())  # a shared (queries, keys) mask, said so
    A.scaled_dot_product_attention(q[0], q[0], q[0], mask=am)  # unbatched: (T_q, T_k), as before


@pytest.mark.parametrize("base", [0, -10, 1, 0.5])
def test_positional_encoding_base_must_exceed_one(base):
    with pytest.raises(ValueError, match=r"base must be > 1.0, got .*usual value is 10000"):
        PE.sinusoidal_positional_encoding(3, 4, base=base)
    with pytest.raises(ValueError, match=r"base must be > 1.0"):
        PE.position_shift(1, 4, base=base)
    assert bool(torch.isfinite(PE.sinusoidal_positional_encoding(3, 4, base=100)).all())


def test_row_entropy_refuses_rows_that_are_not_distributions():
    """``row_entropy([[2, -1]])`` was -70 nats; rows not summing to 1 gave a number with no meaning."""
    with pytest.raises(ValueError, match=r"row_entropy: weights holds a negative value.*torch.softmax"):
        SAT.row_entropy(torch.tensor([[2.0, -1.0]]))
    with pytest.raises(ValueError, match=r"row_entropy: a row of weights sums to 0.4, not 1"):
        SAT.row_entropy(torch.tensor([[0.2, 0.2]]))
    assert float(SAT.row_entropy(torch.tensor([[0.5, 0.5]]))) == pytest.approx(np.log(2))
    nan_row = SAT.row_entropy(torch.tensor([[0.5, 0.5], [float("nan"), float("nan")]]))  # a query with no key
    assert nan_row[0] == pytest.approx(np.log(2)) and torch.isnan(nan_row[1])


def test_saturation_measures_and_js_divergence_refuse_rows_that_are_not_distributions():
    from xaikit.lab.removal import js_divergence

    scores = torch.tensor([[2.0, -1.0, 0.5]])
    for fn in (SAT.max_weight, SAT.softmax_jacobian_norm, SAT.row_entropy):
        with pytest.raises(ValueError, match=rf"{fn.__name__}: weights holds a negative value.*not the scores"):
            fn(scores)
        with pytest.raises(ValueError, match=rf"{fn.__name__}: a row of weights sums to 1.8, not 1"):
            fn(torch.tensor([[0.9, 0.9]]))
    p = torch.softmax(scores, -1)
    jac = torch.diag(p[0]) - p[0, :, None] * p[0, None, :]
    assert float(SAT.softmax_jacobian_norm(p)[0]) == pytest.approx(float(jac.norm()), rel=1e-5)
    assert float(SAT.max_weight(p)[0]) == pytest.approx(float(p.max()))
    with pytest.raises(ValueError, match=r"js_divergence: p must hold probability rows.*Pass softmax\(logits\)"):
        js_divergence([2.0, -1.0], [0.5, 0.5])
    assert js_divergence([1.0, 0.0], [0.0, 1.0]) == pytest.approx(1.0)  # disjoint: 1 bit
    assert js_divergence([0.5, 0.5], [0.5, 0.5]) == pytest.approx(0.0)


def test_mixed_dtypes_in_attention_are_promoted():
    from xaikit.attention import scratch as A

    torch.manual_seed(0)
    q, k, v = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4), torch.randn(3, 4)
    out, weights = A.scaled_dot_product_attention(q, k, v)  # was "expected m1 and m2 to have the same dtype"
    want, want_w = A.scaled_dot_product_attention(q, k.double(), v.double())
    assert out.dtype == torch.float64 and torch.equal(out, want) and torch.equal(weights, want_w)
    x, w = torch.randn(3, 4, dtype=torch.float64), torch.randn(4, 4)
    assert A.self_attention(x, w, w, w).out.dtype == torch.float64
    assert A.multi_head_attention(x, w, w, w, w, n_heads=2)[0].dtype == torch.float64


def test_padding_mask_refuses_a_str():
    from xaikit.attention import scratch as A

    with pytest.raises(TypeError, match=r"attention_mask must be a tensor or a list of 0s and 1s, got str '1101'"):
        A.padding_mask("1101")
