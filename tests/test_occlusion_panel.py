"""Occlusion on the digits (notebook 01, section 4; Zeiler & Fergus 2014): xaikit's occlusion against a plain
loop over the patches on a tiny CNN, and the OcclusionPanel driven through its controls."""

from __future__ import annotations

import pytest
import torch

from xaikit import widgets as W
from xaikit.tensor import gradients as G
from xaikit.tensor import toys


def occlusion_loop(f, x, k, stride, baseline, target):
    """The definition, one patch at a time: each pixel gets the mean drop F(x) - F(x with the patch set to
    the baseline) over the k x k patches (corners 0, stride, ... until one reaches the edge) covering it."""
    _, h, w = x.shape
    total, count = torch.zeros_like(x), torch.zeros_like(x)
    with torch.no_grad():
        fx = f(x[None])[0, target]
        rows = list(range(0, h - k + 1, stride)) or [0]
        cols = list(range(0, w - k + 1, stride)) or [0]
        if rows[-1] + k < h:
            rows.append(rows[-1] + stride)
        if cols[-1] + k < w:
            cols.append(cols[-1] + stride)
        for i in rows:
            for j in cols:
                y = x.clone()
                y[:, i:i + k, j:j + k] = baseline
                total[:, i:i + k, j:j + k] += fx - f(y[None])[0, target]
                count[:, i:i + k, j:j + k] += 1
    return total / count


@pytest.fixture(scope="module")
def tiny_cnn():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 3, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(3 * 6 * 6, 4))
    return net.eval()


@pytest.mark.parametrize("k,stride,baseline", [(1, 1, 0.0), (2, 1, 0.0), (3, 2, 0.5), (4, 4, -1.0), (6, 1, 0.0)])
def test_occlusion_is_the_loop_over_patches(tiny_cnn, k, stride, baseline):
    x = torch.rand(1, 6, 6, generator=torch.Generator().manual_seed(k))
    got = G.occlusion(tiny_cnn, x, window=k, stride=stride, baseline=baseline, target=2)
    want = occlusion_loop(tiny_cnn, x, k, stride, baseline, 2)
    assert want.abs().max() > 1e-3  # the patches do move the output
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)


@pytest.fixture(scope="module")
def trained():
    return toys.digits_classifier(seed=0, epochs=1, progress=False, disk_cache=False)


def test_the_occlusion_panel_follows_its_patch_slider(trained):
    p = W.OcclusionPanel(trained, patch=2)
    assert p.error is None and "xk-patch" in p.controls["patch"]._dom_classes
    r = p.result
    model, x = trained.model, trained.data.test_x[0]
    torch.testing.assert_close(r.occlusion, occlusion_loop(model, x, 2, 1, 0.0, r.predicted), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(r.gradient, G.gradient(model, x, target=r.predicted))
    before = p.image.value
    r3 = p.set(patch=3)
    assert p.error is None and r3.patch == 3 and p.image.value != before
    torch.testing.assert_close(r3.occlusion, occlusion_loop(model, x, 3, 1, 0.0, r3.predicted), atol=1e-5,
                               rtol=1e-5)
    assert "3x3" in p._axes[3].get_title()
    r4 = p.set(image=4)
    assert r4.index == 4 and torch.equal(r4.image, trained.data.test_x[4])  # exact: the same tensor
    p.set(patch="big")  # refused, named, and the panel keeps its last result
    assert isinstance(p.error, TypeError) and "patch" in str(p.error) and p.result is r4
    p.set(patch=20)  # clamped to the slider's 8, with a note
    assert p.error is None and p.result.patch == 8 and "patch" in p.status.value
    with pytest.raises(ValueError, match="stride"):
        W.OcclusionPanel(trained, stride=0)
