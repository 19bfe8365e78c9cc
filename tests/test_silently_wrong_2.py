"""Issue 26, "silently wrong" items 4, 5, 6, 8 and 9 (and item 13's global RNG of the digits CNN): inputs that
used to give a plausible but wrong answer. Each test failed on 1e5e02a; the README's "Bad input and safety"
table lists them."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from torch import nn

import xaikit
from tests.test_tcav import ToyViT, _colour_images
from xaikit.attention import scores as SC
from xaikit.attention import scratch as A
from xaikit.concepts import tcav
from xaikit.models import cache, digits
from xaikit.models import imageworld as iw
from xaikit.tensor import toys


# -- 4: TCAV significance against identical random sets ---------------------------------------------------------
def _sets():
    return {"red": _colour_images((0.8, 0.4, 0.2), 12, 0)}, _colour_images((0.5, 0.5, 0.5), 10, 2)


def test_identical_random_sets_are_refused_with_the_seed_fix():
    concepts, cls_imgs = _sets()
    model = ToyViT().eval()
    same = [iw.random_images(10)[:, ::4, ::4] for _ in range(6)]  # the default seed: six copies of one set
    with pytest.raises(ValueError, match=r"random_sets\[0\] and random_sets\[1\] hold the same images.*seed=i"):
        tcav.tcav_significance(model, concepts, cls_imgs, target="zebra", layer=1, random_sets=same, R=5,
                               pooling="mean")
    one = iw.random_images(10, seed=1)[:, ::4, ::4]
    with pytest.raises(ValueError, match=r"random_sets\[1\] and random_sets\[2\] hold the same images"):
        tcav.tcav_significance(model, concepts, cls_imgs, target="zebra", layer=1, R=3, pooling="mean",
                               random_sets=[iw.random_images(10, seed=0)[:, ::4, ::4], *[one] * 3])
    # near-identical: 8 of 10 images in common
    a, b = iw.random_images(10, seed=2)[:, ::4, ::4], iw.random_images(10, seed=3)[:, ::4, ::4]
    mixed = np.concatenate([a[:8], b[:2]])
    with pytest.raises(ValueError, match=r"random_sets\[0\] and random_sets\[1\] hold 8 of the same 10 images"):
        tcav.tcav_significance(model, concepts, cls_imgs, target="zebra", layer=1, random_sets=[a, mixed, b],
                               R=2, pooling="mean")
    # a concept against itself as the counterpart
    with pytest.raises(ValueError, match=r"concepts\['red'\] and negative hold the same images"):
        tcav.tcav_significance(model, concepts, cls_imgs, target="zebra", layer=1, R=2, pooling="mean",
                               random_sets=[a, b, one], negative=concepts["red"])
    # null sets of the rank test, all the same
    with pytest.raises(ValueError, match=r"null_sets\[0\] and null_sets\[1\] hold the same images"):
        tcav.tcav_significance(model, {"r": a}, cls_imgs, target="zebra", layer=1, R=2, pooling="mean",
                               test="rank",
                               random_sets=[_colour_images((0.1, 0.9, 0.1), 10, k) for k in range(3)],
                               null_sets=[b] * 20)


def test_a_baseline_cav_of_indistinguishable_sets_is_refused():
    concepts, cls_imgs = _sets()
    model = ToyViT().eval()  # its [CLS] token is 0 for every image: at "cls" pooling no two sets differ
    rng = np.random.default_rng(0)
    randoms = [rng.integers(0, 256, (10, 16, 16, 3), dtype=np.uint8) for _ in range(3)]
    # was: every baseline score 0.00 (a zero CAV), and any concept measured against that baseline
    with pytest.raises(ValueError, match=r"baseline CAV of random_sets\[0\] vs random_sets\[1\] is zero.*layer 1 "
                                         r"\(cls pooling\)"):
        tcav.tcav_significance(model, concepts, cls_imgs, target="zebra", layer=1, random_sets=randoms, R=2,
                               pooling="cls")
    res = tcav.tcav_significance(model, concepts, cls_imgs, target="zebra", layer=1, random_sets=randoms,
                                 R=2, pooling="mean")
    assert res.random_cav_accuracies.shape == (2,)


# -- 5 and 13: the digits CNN cache is checked; the global RNG is left alone --------------------------------------
@pytest.fixture
def digits_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path))
    digits._MEMORY.clear()
    yield tmp_path / "toys"
    digits._MEMORY.clear()


def _reload():
    digits._MEMORY.clear()
    return toys.digits_classifier(seed=1, epochs=1, progress=False)


def test_a_damaged_digits_cnn_is_trained_again(digits_cache, capsys):
    first = toys.digits_classifier(seed=1, epochs=1, progress=False)
    path = digits_cache / "digits_cnn_seed1_epochs1_v1.safetensors"  # the name scheme is unchanged
    assert _reload().from_cache

    weights = load_file(str(path))
    weights["head.weight"][0, 0] = float("nan")
    save_file(weights, str(path))  # was: loaded with from_cache=True, NaN logits, 9.8% accuracy
    again = _reload()
    assert not again.from_cache and again.accuracy == first.accuracy  # exact: the same seeded training
    assert "SHA-256 differs" in capsys.readouterr().out
    assert _reload().from_cache
    sidecar = path.with_name(path.name + ".sha256")
    assert sidecar.read_text().split()[0] == cache.sha256_file(path)

    data = bytearray(path.read_bytes())
    data[-50] ^= 0x01  # one flipped bit of a weight: finite, a little less accurate
    path.write_bytes(bytes(data))
    assert not _reload().from_cache

    sidecar.unlink()  # saved by an older xaikit, or cut off between the two renames
    assert not _reload().from_cache
    assert "no checksum file" in capsys.readouterr().out
    assert sidecar.is_file() and _reload().from_cache
    assert sorted(p.name for p in digits_cache.iterdir() if not p.name.startswith(".")) == [
        path.name, sidecar.name]  # no temporary files left


def test_digits_classifier_leaves_the_global_rng_alone(digits_cache):
    for disk_cache in (False, True, True):  # trained, trained and saved, read back
        digits._MEMORY.clear()
        state = torch.get_rng_state()
        toys.digits_classifier(seed=1, epochs=1, progress=False, disk_cache=disk_cache)
        assert torch.equal(state, torch.get_rng_state())  # exact: no draw from the global generator


# -- 6: a folder without its manifest is adopted only if the model works ----------------------------------------
def _fake_sentiment(tmp: Path, **kw) -> dict:
    from xaikit.models.tiny import tiny_bert, tiny_tokenizer

    tiny_bert().save_pretrained(tmp)
    tiny_tokenizer(tmp).save_pretrained(tmp)
    metrics = {"test_accuracy": 0.9, "train_seconds": 0.0, "lecture_labels_match": True, "lecture_sentences": {}}
    (tmp / "metrics.json").write_text(json.dumps(metrics))
    return metrics


def test_a_damaged_model_without_manifest_is_rebuilt_not_adopted(tmp_path, monkeypatch, capsys):
    from xaikit.models import sentiment

    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path))
    calls = []
    monkeypatch.setattr(sentiment, "train_sentiment", lambda tmp, **kw: calls.append(1) or _fake_sentiment(tmp))
    folder = sentiment.ensure_embedded_sentiment(progress=False)
    (folder / cache.MANIFEST).unlink()
    assert sentiment.is_built() and (folder / cache.MANIFEST).is_file()  # intact: adopted

    (folder / cache.MANIFEST).unlink()
    weights = load_file(str(folder / "model.safetensors"))
    weights["bert.embeddings.word_embeddings.weight"][2] = 9.6e37  # finite; every sentence's logits NaN
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    # was: adopted (complete and finite), the manifest recorded the damage, and prepare said "done"
    assert not sentiment.is_built() and not (folder / cache.MANIFEST).exists()
    assert "not usable: bert.embeddings.word_embeddings.weight holds 9.6e+37" in capsys.readouterr().out
    sentiment.ensure_embedded_sentiment(progress=False)
    assert len(calls) == 2 and sentiment.is_built()
    (folder / cache.MANIFEST).unlink()
    assert sentiment.is_built()  # the rebuilt model works: adopted after running it
    assert "the model runs" in capsys.readouterr().out


def test_probes_find_nan_logits_and_a_damaged_vit(tmp_path):
    from xaikit.models import sentiment, vitworld
    from xaikit.models.tiny import tiny_vit

    good = tmp_path / "vit"
    tiny_vit(image_size=64, num_labels=5).save_pretrained(good)
    (good / "metrics.json").write_text(json.dumps({"test_accuracy": 1.0}))
    assert vitworld.probe(good) is None and cache.is_built(good, probe=vitworld.probe)
    (good / cache.MANIFEST).unlink()
    weights = load_file(str(good / "model.safetensors"))
    weights["vit.embeddings.cls_token"][0, 0, 0] = 9.6e37
    save_file(weights, str(good / "model.safetensors"), metadata={"format": "pt"})
    assert not cache.is_built(good, probe=vitworld.probe)
    assert cache.is_built(good)  # no probe: structure only, as for data folders

    text = tmp_path / "text"
    text.mkdir()
    _fake_sentiment(text)

    def nan_logits(folder):  # a model whose weights look fine but compute NaN
        return "its logits on the lecture's sentences are NaN or inf"

    assert sentiment.probe(text) is None
    assert not cache.is_built(text, probe=nan_logits) and not (text / cache.MANIFEST).exists()
    assert not cache.is_built(text, probe=lambda folder: 1 / 0)  # a probe that fails counts as "not usable"


# -- 8: a float 0/1 mask is refused --------------------------------------------------------------------------
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


# -- 9: a batch of N > 1 given as x -----------------------------------------------------------------------------
def test_a_batch_of_several_inputs_is_refused_with_the_loop():
    X = torch.tensor([[1.0, -2.0], [3.0, 0.5], [-1.0, 2.0]])
    square = lambda b: (b ** 2).sum(1)  # noqa: E731
    # was: one input of shape (3, 2), its output (1, 2) read as two classes
    for method in (xaikit.gradient, xaikit.grad_times_input, xaikit.smoothgrad, xaikit.integrated_gradients,
                   xaikit.occlusion):
        with pytest.raises(ValueError, match=r"a batch of 3 inputs.*ONE input at a time.*for i in range\(3\)"):
            method(square, X)
    w = torch.tensor([1.0, -1.0])
    with pytest.raises(ValueError, match=r"output \(1, 3\), which would be read as 3 classes"):
        xaikit.gradient(lambda b: b @ w, X)  # the rows as "classes"
    assert xaikit.gradient(square, X[0]).tolist() == [2.0, -4.0]  # exact: 2 x at small numbers


def test_one_input_with_a_leading_size_is_still_one_input():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # f reads x either way but gives one output: nothing to misread
        got = xaikit.gradient(lambda b: b.flatten(1).sum(1), torch.ones(3, 2))
        assert torch.equal(got, torch.ones(3, 2))  # exact: the gradient of a sum
        # an RGB image (3, 8, 8) and a CNN with three classes: f(x) as three (8, 8) inputs runs, but one
        # (1, 8, 8) does not, so x is one input
        torch.manual_seed(0)
        conv, head = nn.Conv2d(3, 4, 3, padding=1), nn.Linear(4, 3)
        cnn = lambda b: head(torch.relu(conv(b)).mean((-2, -1)))  # noqa: E731
        x = torch.rand(3, 8, 8)
        assert xaikit.gradient(cnn, x).shape == (3, 8, 8)


# --- item 7: explain() passes every option on, or refuses it ---------------------------------------------------

@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    from xaikit.models.tiny import tiny_bert, tiny_tokenizer

    return tiny_bert(seed=1), tiny_tokenizer(tmp_path_factory.mktemp("tok"))


def test_explain_passes_layer_on_to_the_methods_that_take_it(bert):
    from xaikit.text.attention_views import attention_gradient, raw_attention
    from xaikit.text.views import explain

    model, tok = bert
    text = "a fine and moving film"
    for method, fn, extra in (("attention", raw_attention, {}),
                              ("gradient", attention_gradient, {"target": 1}),
                              ("gradient x attention", attention_gradient, {"target": 1, "times_attention": True})):
        got = explain(model, tok, text, method, target=1, layer=0).scores
        want = fn(model, tok, text, layer=0, **extra).scores
        last = fn(model, tok, text, layer=-1, **extra).scores
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
        assert not np.allclose(got, last), method  # the option changed the answer


@pytest.mark.parametrize("method", ["Grad-SAM", "grad-weighted attention", "Chefer LRP", "rollout"])
def test_explain_refuses_an_option_the_method_does_not_take(bert, method):
    from xaikit.text.views import explain

    model, tok = bert
    with pytest.raises(TypeError, match=rf"explain\(method='{method}'\) got the option layer=2.*Remove it"):
        explain(model, tok, "a fine film", method, layer=2)


# --- item 12: baseline_attributions warns about a completeness gap like every other IG entry point -------------

def test_baseline_attributions_warns_about_a_completeness_gap():
    from xaikit.tensor.baselines import baseline_attributions
    from xaikit.tensor.integrated import CompletenessWarning

    def f(batch):
        return batch.flatten(1).pow(6).sum(1)  # curved along the path: two Riemann nodes miss badly

    x = torch.linspace(0.2, 1.0, 16).reshape(1, 4, 4)
    with pytest.warns(CompletenessWarning, match=r"baseline_attributions: .*completeness gap.*Raise steps"):
        coarse = baseline_attributions(f, x, "zero", steps=2, rule="riemann_right")
    assert coarse.relative_gap > 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompletenessWarning)  # enough steps: silent
        fine = baseline_attributions(f, x, "zero", steps=32, rule="gausslegendre")
    assert fine.relative_gap < 1e-3


# --- item 13: smaller silent cases -------------------------------------------------------------------------------

def test_smoothgrad_on_a_constant_input_asks_for_value_range():
    from xaikit.tensor.gradients import smoothgrad

    def f(b):
        return b.flatten(1).square().sum(1)

    grey = torch.full((1, 3, 3), 0.5)
    with pytest.raises(ValueError, match=r"x is constant.*Pass value_range.*value_range=\(0, 1\)"):
        smoothgrad(f, grey, seed=0)
    noisy = smoothgrad(f, grey, seed=0, value_range=(0, 1), n=8)
    assert not torch.allclose(noisy, 2 * grey)  # real noise now: not the plain gradient 2x
    assert torch.allclose(smoothgrad(f, grey, sigma=0.0, n=2, seed=0), 2 * grey)  # sigma 0: asked for, allowed


@pytest.mark.parametrize("text", ["\u200b\u200b", "\x00\x07", "\ufeff \u2060", "\u200d\t\u200c"])
def test_a_sentence_of_invisible_characters_is_refused_as_empty(bert, text):
    from xaikit.text.views import explain

    model, tok = bert
    with pytest.raises(ValueError, match=r"text is empty: it holds only invisible characters \(U\+"):
        explain(model, tok, text, "attention")


def test_a_sentence_with_a_zero_width_space_among_words_is_still_explained(bert):
    from xaikit.text.views import explain

    model, tok = bert
    assert len(explain(model, tok, "a fine\u200b film", "attention").scores) >= 3


# --- item 15: run_lab checks every sentence's length before any work, and takes allow_long -------------------

def test_run_lab_refuses_a_long_sentence_before_any_work(bert, monkeypatch):
    from xaikit.lab import faithfulness
    from xaikit.text import shaptext, views

    model, tok = bert
    monkeypatch.setattr(shaptext, "LONG_TEXT", 6)  # the tiny model takes too few tokens for the real 200
    calls = []
    real = views.all_views
    monkeypatch.setattr(views, "all_views", lambda *a, **k: calls.append(1) or real(*a, **k))
    sentences = ["a fine film", "a fine film and a fine moving film"]
    with pytest.raises(ValueError, match=r"sentences\[1\] has \d+ tokens.*run_lab\(\.\.\., allow_long=True\)"):
        faithfulness.run_lab(model, tok, sentences, shap_evals=20, ig_steps=4, n_permutations=2, progress=False)
    assert calls == []  # refused before the first sentence was explained
    lab = faithfulness.run_lab(model, tok, sentences, shap_evals=20, ig_steps=4, n_permutations=2, progress=False,
                               allow_long=True)
    assert len(lab.sentences) == 2


# --- a fresh round (cases 270/271, 186/268): caches that outlived an edit ---------------------------------------

class _SignedViT(ToyViT):
    """ToyViT whose logits are multiplied by a parameter: flipping it in place flips every TCAV score."""

    def __init__(self):
        super().__init__()
        self.sign = nn.Parameter(torch.ones(1))

    def forward(self, pixel_values):
        out = super().forward(pixel_values)
        out.logits = out.logits * self.sign
        return out


def test_tcav_notices_weights_edited_in_place():
    model = _SignedViT().eval()
    red, blue = _colour_images((0.8, 0.4, 0.2), 20, 0), _colour_images((0.2, 0.4, 0.8), 20, 1)
    cls_imgs = _colour_images((0.5, 0.5, 0.5), 10, 2)
    before = tcav.tcav(model, red, blue, cls_imgs, target="zebra", layer=1, pooling="mean").score
    with torch.no_grad():
        model.sign.mul_(-1)  # the model now says the opposite
    after = tcav.tcav(model, red, blue, cls_imgs, target="zebra", layer=1, pooling="mean").score
    assert before == pytest.approx(1.0) and after == pytest.approx(0.0)  # it served 1.0 again from the cache
    model.sign.data = torch.ones(1)  # a new tensor, version 0 again: still noticed
    assert tcav.tcav(model, red, blue, cls_imgs, target="zebra", layer=1,
                     pooling="mean").score == pytest.approx(1.0)


def test_a_re_saved_tokenizer_is_not_served_from_the_loader_cache(tmp_path):
    from xaikit.models import loaders
    from xaikit.models.tiny import tiny_bert, tiny_tokenizer

    tiny_bert().save_pretrained(tmp_path)
    tok = tiny_tokenizer(tmp_path)
    tok.save_pretrained(tmp_path)
    loaders.clear_cache()
    _, first = loaders.load_sentiment(tmp_path)
    assert first.model_max_length != 77
    tok.model_max_length = 77
    tok.save_pretrained(tmp_path)  # only the tokenizer's files change
    _, second = loaders.load_sentiment(tmp_path)
    assert second.model_max_length == 77


def test_the_rank_tests_null_sets_on_disk_are_the_drawn_ones_and_a_damaged_file_is_drawn_again(tmp_path, monkeypatch):
    from xaikit.concepts import nullsets

    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path))
    drawn = nullsets._draw_null_sets(4, 0, 3)
    first = nullsets.null_sets_on_disk(4, 0, 3, progress=False)
    again = nullsets.null_sets_on_disk(4, 0, 3, progress=False)  # read back
    for a, b, c in zip(drawn, first, again, strict=True):
        assert np.array_equal(a, b) and np.array_equal(a, c)  # exact: uint8 images, saved and loaded
    (file,) = (tmp_path / "imageworld").glob("*/null-sets.npy")
    raw = bytearray(file.read_bytes())
    raw[-5] ^= 0xFF
    file.write_bytes(bytes(raw))
    cache._verified.clear()  # checksums are remembered per process
    repaired = nullsets.null_sets_on_disk(4, 0, 3, progress=False)
    assert all(np.array_equal(a, b) for a, b in zip(drawn, repaired, strict=True))  # exact: drawn again
