"""Methods to contrast with Integrated Gradients: DeepLIFT-Rescale and exact Shapley values.

* DeepLIFT with the Rescale rule (Shrikumar, Greenside & Kundaje 2017, "Learning Important Features Through
  Propagating Activation Differences", ICML) replaces each ReLU's gradient by the ratio of differences
  ``(ReLU(z) - ReLU(z')) / (z - z')`` between input and baseline, then chains those ratios back like
  gradients. It adds up to ``F(x) - F(x')`` exactly, but discrete ratios do not obey the chain rule, so two
  networks that compute the same function can get different attributions: it is not
  implementation-invariant (Sundararajan, Taly & Yan 2017, section 2.2). Written here for small
  ``nn.Sequential`` networks of ``Linear`` and ``ReLU`` layers.
* Exact Shapley values (Shapley 1953) by enumerating every subset of features, with absent features set to
  the baseline ("baseline Shapley", Sundararajan & Najmi 2020). Feasible for a handful of features; used as
  the oracle that IG equals on additive models.

Notebook 02, sections 2 and 5.
"""

from __future__ import annotations

import itertools
from math import factorial

import torch
from torch import nn

from xaikit._fn import as_baseline, call, entry, select, to_cpu, to_model
from xaikit._types import Baseline, Input, ModelFn, Target
from xaikit._validate import check_int

__all__ = ["deeplift_rescale", "exact_shapley", "twin_relu_networks"]


def _layers(model) -> list[nn.Module]:
    if not isinstance(model, nn.Sequential):
        raise TypeError(f"model must be an nn.Sequential of Linear and ReLU layers, got {type(model).__name__}")
    layers = list(model)
    for i, layer in enumerate(layers):
        if not isinstance(layer, (nn.Linear, nn.ReLU)):
            raise TypeError(f"layer {i} is {type(layer).__name__}; deeplift_rescale handles only Linear and ReLU "
                            "layers (a small MLP)")
    return layers


def deeplift_rescale(model: nn.Sequential, x: Input, baseline: Baseline = None, *,
                     target: Target = None) -> torch.Tensor:
    """DeepLIFT-Rescale attributions of a ReLU MLP at ``x`` against ``baseline`` (zeros by default).

    Forward both inputs, keep each ReLU's input difference ``dz`` and output difference ``da``; going
    backwards the multiplier of a ReLU is ``da / dz`` (the gradient where ``dz`` is ~0) and that of a
    ``Linear`` is its weight matrix. The attribution is ``(x - x') * multiplier``; it sums to
    ``F(x) - F(x')`` (summation-to-delta).
    """
    layers = _layers(model)
    with entry(model, x, target, "deeplift_rescale") as (x, target):
        b = as_baseline(baseline, x)
        h = to_model(model, torch.stack([x, b]))  # (2, d): input and baseline side by side, in the model's dtype
        ratios = []
        with torch.no_grad():
            for layer in layers:
                out = layer(h)
                if isinstance(layer, nn.ReLU):
                    dz, da = h[0] - h[1], out[0] - out[1]  # (d_l,)
                    grad = (h[0] > 0).to(h.dtype)  # the gradient, used where dz ~ 0
                    small = dz.abs() < 1e-7
                    ratios.append(torch.where(small, grad, da / torch.where(small, torch.ones_like(dz), dz)))
                h = out
            n_out = h.shape[1]
            m = torch.zeros(n_out, dtype=h.dtype, device=h.device)  # (C,): multiplier of the explained output
            m[0 if target is None else target] = 1.0
            for layer in reversed(layers):
                if isinstance(layer, nn.ReLU):
                    m = m * ratios.pop()  # (d_l,)
                else:
                    m = m @ layer.weight  # (d_in,)
        return to_cpu((x - b) * m, x.dtype)


def twin_relu_networks() -> tuple[nn.Sequential, nn.Sequential]:
    """Two ReLU networks that compute the same function in different ways (the IG paper's figure 7 idea).

    ``f(x) = ReLU(ReLU(x1) - 1 - ReLU(x2))`` and ``g(x) = ReLU(ReLU(x1 - 1) - ReLU(x2))`` agree on every
    input (check: for ``x1 >= 1`` both inner terms are ``x1 - 1``; otherwise both outputs are 0), yet
    DeepLIFT gives them different attributions at ``x = (3, 1)``.
    """
    def net(w1, b1, w2, b2):
        first, second = nn.Linear(2, 2), nn.Linear(2, 1)
        with torch.no_grad():
            first.weight.copy_(torch.tensor(w1))
            first.bias.copy_(torch.tensor(b1))
            second.weight.copy_(torch.tensor(w2))
            second.bias.copy_(torch.tensor(b2))
        return nn.Sequential(first, nn.ReLU(), second, nn.ReLU()).eval()

    f = net([[1.0, 0.0], [0.0, 1.0]], [0.0, 0.0], [[1.0, -1.0]], [-1.0])
    g = net([[1.0, 0.0], [0.0, 1.0]], [-1.0, 0.0], [[1.0, -1.0]], [0.0])
    return f, g


def exact_shapley(f: ModelFn, x: Input, baseline: Baseline = None, *, target: Target = None,
                  max_features: int = 12) -> torch.Tensor:
    """Exact (baseline) Shapley values of the flattened features of ``x`` by enumerating all subsets.

    ``v(S) = F(x_S, x'_rest)``; ``phi_i = sum_{S without i} |S|! (d-|S|-1)! / d! (v(S + i) - v(S))``.
    All ``2**d`` inputs go through ``f`` in one batch, so keep ``d <= max_features``.
    """
    with entry(f, x, target, "exact_shapley") as (x, target):
        b = as_baseline(baseline, x)
        d = x.numel()
        max_features = check_int(max_features, "max_features", 1)
        if d > max_features:
            raise ValueError(f"x has {d} features; exact Shapley needs 2**{d} model calls. Use at most "
                             f"max_features={max_features} features (or raise max_features if you can wait)")
        masks = torch.tensor(list(itertools.product([0.0, 1.0], repeat=d)), dtype=x.dtype, device=x.device)  # (2^d, d)
        batch = b.reshape(1, -1) + masks * (x - b).reshape(1, -1)  # (2^d, d)
        with torch.no_grad():
            v = select(call(f, batch.reshape(-1, *x.shape)), target).cpu().double()  # (2^d,)
        index = {tuple(int(t) for t in row): k for k, row in enumerate(masks.tolist())}
        phi = torch.zeros(d, dtype=torch.float64)
        for key, k in index.items():
            size = sum(key)
            for i in range(d):
                if key[i] == 0:
                    with_i = list(key)
                    with_i[i] = 1
                    weight = factorial(size) * factorial(d - size - 1) / factorial(d)
                    phi[i] += weight * (v[index[tuple(with_i)]] - v[k])
        return phi.reshape(x.shape).to(x.dtype)
