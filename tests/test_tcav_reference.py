"""TCAV on the embedded ViT against a plain reference computation: the memory and time changes
(gradients in bounded batches, cached activations) must leave every score and p-value where it was.

The reference here takes the block's output with its own forward hook, all images in one batch, the
gradients by one ``torch.autograd.grad`` call, each CAV by ``train_cav``, the t-test by scipy and the rank
p-value by counting: the plain reading of Kim et al. 2018 (notebook 05), sharing none of the batching,
caching or row-space shortcuts of :mod:`xaikit.concepts.significance`.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from xaikit.concepts import activations as activations_module
from xaikit.concepts import tcav
from xaikit.concepts.cav import train_cav
from xaikit.concepts.images import pixel_values
from xaikit.models import imageworld as iw
from xaikit.models.arch import encoder_layers
from xaikit.models.hooks import forward_hooks
from xaikit.models.vitworld import TCAV_LAYER

N, R, K, SEED = 16, 3, 6, 0
POOLING = "flatten"


@pytest.fixture(scope="module")
def vit():
    from xaikit.models import load_vit

    return load_vit("embedded")


def _block_output(model, images, processor, target=None):
    """(N, T*D) block output (``target=None``) or the gradient of the ``target`` logit at it, all at once."""
    x = pixel_values(model, images, processor)
    seen = {}

    def hook(_m, _i, out):
        seen["h"] = out[0] if isinstance(out, (tuple, list)) else out

    with forward_hooks((encoder_layers(model)[TCAV_LAYER], hook)), torch.enable_grad():
        logits = model(pixel_values=x).logits
        if target is None:
            return seen["h"].detach().flatten(1).numpy().astype(np.float64)
        (g,) = torch.autograd.grad(logits[:, target].sum(), seen["h"])
    return g.flatten(1).numpy().astype(np.float64)


def _score(g, cav):
    return float(((g @ cav.vector.astype(np.float64)) > 0).mean())


@pytest.fixture(scope="module")
def sets():
    concepts = {c: iw.concept_images(c, N) for c in ("striped", "dotted")}
    randoms = [iw.random_images(N, seed=500 + i) for i in range(R + 1)]
    nulls = [iw.random_images(N, seed=700 + k) for k in range(K)]
    return concepts, iw.class_images("zebra", N), randoms, nulls


@pytest.fixture(params=["as configured", "one image per batch"])
def batching(request, monkeypatch):
    """The library's own batches, and batches of one image (the bound a large model gets)."""
    if request.param == "one image per batch":
        monkeypatch.setattr(activations_module, "_GRAD_BATCH_BYTES", 1)
        monkeypatch.setattr(activations_module, "_FORWARD_BATCH_BYTES", 1)
    tcav.clear_cache()
    yield request.param
    tcav.clear_cache()


def test_tcav_score_equals_the_plain_computation(vit, sets, batching):
    model, processor = vit
    concepts, zebras, randoms, _ = sets
    target = model.config.label2id["zebra"]
    got = tcav.tcav(model, concepts["striped"], randoms[0], zebras, target="zebra", layer=TCAV_LAYER,
                    pooling=POOLING, processor=processor, seed=SEED)
    a_pos, a_neg = (_block_output(model, s, processor) for s in (concepts["striped"], randoms[0]))
    g = _block_output(model, zebras, processor, target)
    cav = train_cav(a_pos, a_neg, "logistic", SEED)
    s = g @ cav.vector.astype(np.float64)
    np.testing.assert_allclose(got.derivatives, s, rtol=1e-4, atol=1e-6)
    assert abs(got.score - float((s > 0).mean())) <= 1e-6
    assert abs(got.magnitude - s[s > 0].sum() / np.abs(s).sum()) <= 1e-6


@pytest.mark.filterwarnings("ignore:test='rank' with:UserWarning")  # K = 6 keeps it fast; the p-values still compare
@pytest.mark.filterwarnings("ignore:Precision loss:RuntimeWarning")  # scipy's, on R = 3 near-equal scores
@pytest.mark.parametrize("test", ["t-test", "rank"])
def test_significance_equals_the_plain_computation(vit, sets, batching, test):
    from scipy.stats import ttest_ind

    model, processor = vit
    concepts, zebras, randoms, nulls = sets
    target = model.config.label2id["zebra"]
    got = tcav.tcav_significance(model, concepts, zebras, target="zebra", layer=TCAV_LAYER, random_sets=randoms,
                                 R=R, pooling=POOLING, processor=processor, seed=SEED, test=test,
                                 null_sets=nulls if test == "rank" else None)
    g = _block_output(model, zebras, processor, target)
    a_rand = [_block_output(model, r, processor) for r in randoms]
    base = np.array([_score(g, train_cav(a_rand[i], a_rand[i + 1], "logistic", SEED + i)) for i in range(R)])
    np.testing.assert_allclose(got.random_scores, base, atol=1e-6)
    null_means = None
    if test == "rank":
        a_null = [_block_output(model, n, processor) for n in nulls]
        null = np.array([[_score(g, train_cav(a, a_rand[i + 1], "logistic", SEED + i)) for i in range(R)]
                         for a in a_null])
        np.testing.assert_allclose(got.null_scores, null, atol=1e-6)
        null_means = null.mean(1)
    for name, imgs in concepts.items():
        a = _block_output(model, imgs, processor)
        scores = np.array([_score(g, train_cav(a, a_rand[i + 1], "logistic", SEED + i)) for i in range(R)])
        np.testing.assert_allclose(got[name].scores, scores, atol=1e-6)
        if test == "t-test":
            p = ttest_ind(scores, base).pvalue if np.ptp(np.r_[scores, base]) > 0 else 1.0
        else:  # the rank among the K random concepts, two-sided about the median of all K + 1 means
            c = np.median(np.append(null_means, scores.mean()))
            p = (1 + np.sum(np.abs(null_means - c) >= abs(scores.mean() - c) - 1e-12)) / (K + 1)
        assert abs(got[name].p_value - p) <= 1e-6, (name, got[name].p_value, p)
        assert abs(got[name].p_corrected - min(1.0, p * len(concepts))) <= 1e-6


# -- the on-disk activation cache -------------------------------------------------------------------------

@pytest.fixture
def on_disk(tmp_path, monkeypatch):
    """A tiny ViT whose activations go to a disk cache under ``tmp_path``, and a counter of forward passes."""
    from xaikit.models.tiny import tiny_vit

    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path))
    monkeypatch.setattr(activations_module, "_DISK_CACHE_MIN_PARAMS", 0)
    passes = []
    real_run = activations_module._run
    monkeypatch.setattr(activations_module, "_run", lambda *a, **k: passes.append(1) or real_run(*a, **k))
    tcav.clear_cache()
    yield tiny_vit(seed=4, image_size=32), iw.random_images(6, seed=11), passes
    tcav.clear_cache()


def _plain(model, images, layer):
    x = pixel_values(model, images)
    with torch.no_grad():
        return model(pixel_values=x, output_hidden_states=True).hidden_states[layer + 1].flatten(1).numpy()


def test_disk_cache_serves_a_new_kernel_without_a_forward_pass(on_disk):
    model, images, passes = on_disk
    first = tcav.activations(model, images, 1, "flatten")
    assert len(passes) == 1
    folder = activations_module._activations_folder(model, pixel_values(model, images), 1, "flatten")
    assert (folder / activations_module._ACTS_FILE).is_file()
    tcav.clear_cache()  # a new kernel: nothing in memory
    again = tcav.activations(model, images, 1, "flatten")
    assert len(passes) == 1, "read back from disk, not computed"
    np.testing.assert_allclose(again, _plain(model, images, 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(again, first)  # the same float32 bytes, written and read back
    grads = tcav.gradients(model, images, 1, target=0)  # the class logit's gradients too, keyed by target
    assert len(passes) == 2
    tcav.clear_cache()
    np.testing.assert_array_equal(tcav.gradients(model, images, 1, target=0), grads)
    assert len(passes) == 2
    assert not np.allclose(tcav.gradients(model, images, 1, target=1), grads)  # another target, another entry
    assert len(passes) == 3
    with torch.no_grad():  # other weights: another key, computed afresh
        next(model.parameters()).mul_(-1.0)
    flipped = tcav.activations(model, images, 1, "flatten")
    assert len(passes) == 4
    np.testing.assert_allclose(flipped, _plain(model, images, 1), rtol=1e-5, atol=1e-6)


def test_disk_cache_rebuilds_a_corrupt_entry_and_never_loads_it(on_disk):
    model, images, passes = on_disk
    good = tcav.activations(model, images, 0, "mean")
    path = activations_module._activations_folder(model, pixel_values(model, images), 0, "mean") / \
        activations_module._ACTS_FILE
    raw = bytearray(path.read_bytes())
    np.save(path, np.full_like(good, 7.0))  # the same size, other numbers: only the checksum tells
    assert path.stat().st_size == len(raw)
    tcav.clear_cache()
    again = tcav.activations(model, images, 0, "mean")
    assert len(passes) == 2, "the damaged entry was computed again"
    np.testing.assert_allclose(again, _plain_mean(model, images, 0), rtol=1e-5, atol=1e-6)
    assert not np.any(np.load(path) == 7.0), "and replaced on disk"
    tcav.clear_cache()
    tcav.activations(model, images, 0, "mean")
    assert len(passes) == 2  # the rebuilt entry is read back


def _plain_mean(model, images, layer):
    x = pixel_values(model, images)
    with torch.no_grad():
        return model(pixel_values=x, output_hidden_states=True).hidden_states[layer + 1][:, 1:].mean(1).numpy()


@pytest.mark.filterwarnings("ignore:test='rank' with:UserWarning")
def test_disk_cache_keeps_the_rank_tests_null_scores(on_disk):
    model, _, passes = on_disk
    n = 8
    kwargs = dict(target=0, layer=1, R=2, test="rank", random_sets=[iw.random_images(n, seed=60 + i) for i in range(3)],
                  null_sets=[iw.random_images(n, seed=80 + k) for k in range(3)])
    concepts = {"striped": iw.concept_images("striped", n)}
    zebras = iw.class_images("zebra", n)
    first = tcav.tcav_significance(model, concepts, zebras, **kwargs)
    cold = len(passes)
    assert cold >= 3 + 3 + 2  # the null sets', the random sets', the concept's and the class images' passes
    tcav.clear_cache()  # a new kernel
    again = tcav.tcav_significance(model, concepts, zebras, **kwargs)
    assert len(passes) == cold, "every pass, the null sets' included, read back from disk"
    np.testing.assert_array_equal(again.null_scores, first.null_scores)
    assert again["striped"].p_value == pytest.approx(first["striped"].p_value, abs=1e-12)
    tcav.clear_cache()
    other = tcav.tcav_significance(model, concepts, zebras, **{**kwargs, "R": 3, "random_sets": kwargs["random_sets"]
                                                               + [iw.random_images(n, seed=70)]})
    assert other.null_scores.shape == (3, 3)  # another R: another entry, not the kept (3, 2) table
