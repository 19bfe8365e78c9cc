"""Models on another device or dtype than the tensors xaikit builds.

Each model here is a copy moved to ``xaikit.device()`` and cast to float64, so a tensor that xaikit builds
on the CPU in float32 and hands to the model unmoved fails on the same line on a CPU-only machine (a
dtype error) as on a GPU (a device error); with ``XAIKIT_DEVICE=cuda`` (``bash scripts/test.sh --device
cuda``) the same tests run on the GPU itself. Oracles: the same method on the float32 CPU original, and
the rule of :mod:`xaikit._fn` that every returned tensor is on the CPU, in the precision it was computed in.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import xaikit
from xaikit.models.tiny import tiny_bert, tiny_tokenizer, tiny_vit

TEXT = "i like the movie"


def _far(model):
    """A float64 copy of ``model`` on ``xaikit.device()`` (the original stays float32 on the CPU)."""
    return copy.deepcopy(model).to(device=xaikit.device(), dtype=torch.float64).eval()


def _on_cpu(*tensors):
    for t in tensors:
        assert isinstance(t, torch.Tensor) and t.device.type == "cpu", f"a result on {getattr(t, 'device', t)}"


@pytest.fixture(scope="module")
def pair():
    model = tiny_bert(seed=3)
    return model, _far(model)


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    return tiny_tokenizer(tmp_path_factory.mktemp("tok"))


# -- text methods (notebooks 02-04) --------------------------------------------------------------------------
def test_gradsam_and_attention_gradients(pair, tok):
    from xaikit.text.gradsam import attention_and_gradients, gradsam, gradsam_loop, gradsam_scores

    near, far = pair
    ref = gradsam(near, tok, TEXT)
    for reference in (False, True):
        got = gradsam(far, tok, TEXT, reference=reference)
        np.testing.assert_allclose(got.scores, ref.scores, atol=1e-6)
    enc = tok(TEXT, return_tensors="pt")  # on the CPU: attention_and_gradients moves it
    a, g, logits = attention_and_gradients(far, dict(enc), target=None)
    _on_cpu(a, g, logits)
    assert a.dtype == torch.float64  # computed in the model's precision, returned as it is
    torch.testing.assert_close(gradsam_scores(a, g), gradsam_loop(a, g), atol=1e-12, rtol=0)


def test_views_and_text_ig(pair, tok):
    from xaikit.text.registry import method_names
    from xaikit.text.text_ig import TEXT_BASELINES, text_integrated_gradients
    from xaikit.text.views import all_views, explain

    METHODS = method_names()

    near, far = pair
    views = all_views(far, tok, TEXT, methods=[m for m in METHODS if m != "SHAP"], ig_steps=8)
    ref = all_views(near, tok, TEXT, methods=list(views), ig_steps=8)
    for name, view in views.items():
        np.testing.assert_allclose(view.scores, ref[name].scores, atol=1e-5, err_msg=name)
    for name in ("attention", "rollout", "grad-weighted attention", "gradient"):
        assert np.isfinite(explain(far, tok, TEXT, name).scores).all()
    for baseline in TEXT_BASELINES:
        ig = text_integrated_gradients(far, tok, TEXT, baseline=baseline, steps=8)
        result = ig.detail
        _on_cpu(result.attributions, result.outputs, result.gradients, result.x, result.baseline)
        assert result.attributions.dtype == torch.float64
        ref = text_integrated_gradients(near, tok, TEXT, baseline=baseline, steps=8)
        np.testing.assert_allclose(ig.scores, ref.scores, atol=1e-5, err_msg=baseline)


def test_shap_editing_and_lab(pair, tok):
    from xaikit.lab.editing import edited_attention, run_edited
    from xaikit.lab.faithfulness import run_lab
    from xaikit.text.shaptext import shap_text

    near, far = pair
    e = shap_text(far, tok, [TEXT], target=1, max_evals=40)
    np.testing.assert_allclose(e.values[0], shap_text(near, tok, [TEXT], target=1, max_evals=40).values[0],
                               atol=1e-5)
    enc = tok([TEXT, "she hates the book"], return_tensors="pt", padding=True)  # CPU tensors
    logits = run_edited(far, enc, remove=[1], n_tokens=enc["input_ids"].shape[1])
    _on_cpu(logits)
    with torch.no_grad(), edited_attention(far, record=True) as edit:
        far(**{k: v.to(xaikit.device()) for k, v in enc.items()})
    _on_cpu(*edit.attentions)
    lab = run_lab(far, tok, [TEXT, "this is so boring"], rankings=("attention", "Grad-SAM", "random"),
                  n_permutations=2, progress=False)
    assert len(lab.sentences) == 2 and np.isfinite(lab.permutation_tvd).all()


def test_capture_and_recompute(pair, tok):
    from xaikit.attention.capture import capture_attention, recompute_attention

    near, far = pair
    cap = capture_attention(far, tok, TEXT, layer=1)
    _on_cpu(cap.attentions, cap.q, cap.k, cap.v, cap.hidden, cap.embeddings, cap.attention_mask, cap.logits)
    assert cap.attentions.dtype == torch.float64
    torch.testing.assert_close(recompute_attention(far, cap.embeddings, cap.attention_mask), cap.attentions[0],
                               atol=1e-12, rtol=0)
    torch.testing.assert_close(cap.attentions.float(), capture_attention(near, tok, TEXT).attentions, atol=1e-5,
                               rtol=0)
    vit = _far(tiny_vit(seed=2))
    pixels = torch.randn(3, 32, 32, generator=torch.Generator().manual_seed(0))  # float32, on the CPU
    cap = capture_attention(vit, pixel_values=pixels)
    _on_cpu(cap.attentions, cap.embeddings)
    # (transformers' ViT takes its softmax in float32 whatever the model's dtype: float32 agreement)
    torch.testing.assert_close(recompute_attention(vit, cap.embeddings), cap.attentions[0], atol=1e-6, rtol=0)


def test_panels_on_a_far_model(pair, tok):
    from xaikit.widgets import AttentionExplorer, MethodComparisonPanel

    _, far = pair
    explorer = AttentionExplorer(far, tok, text=TEXT, layer=0, head="mean")
    view = explorer.set(layer=1, head=0)
    assert explorer.error is None and view.weights.device.type == "cpu"
    panel = MethodComparisonPanel(far, tok, text=TEXT, a="Grad-SAM", b="rollout")
    assert panel.error is None and -1 <= panel.result.correlation["spearman"] <= 1


# -- attribution methods on f(x) (notebooks 01-02) --------------------------------------------------------------
@pytest.fixture(scope="module")
def mlp():
    torch.manual_seed(0)
    near = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3)).eval()
    return near, _far(near)


def test_attribution_methods_return_cpu_results_in_the_inputs_dtype(mlp):
    from xaikit.tensor import gradients as G
    from xaikit.tensor.contrast import deeplift_rescale, exact_shapley
    from xaikit.tensor.integrated import gap_curves, integrated_gradients, steps_for_tolerance
    from xaikit.tensor.paths import path_integrated_gradients

    near, far = mlp
    x = torch.tensor([0.5, -1.0, 2.0, 0.3])  # float32 on the CPU, as a student builds it
    for fn in (G.gradient, G.grad_times_input, G.occlusion,
               lambda f, x: G.smoothgrad(f, x, n=4, seed=0),
               lambda f, x: integrated_gradients(f, x, steps=16).attributions,
               lambda f, x: path_integrated_gradients(f, x, steps=16, path="sequential").attributions,
               deeplift_rescale, exact_shapley):
        got, ref = fn(far, x), fn(near, x)
        _on_cpu(got)
        assert got.dtype == x.dtype
        torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-4)
    ig = integrated_gradients(far, x, baseline=0.1, steps=8, rule="riemann_trapezoid")
    _on_cpu(ig.attributions, ig.outputs, ig.gradients, ig.x, ig.baseline, ig.points())
    assert steps_for_tolerance(far, x, max_steps=64).result.attributions.device.type == "cpu"
    assert set(gap_curves(far, x, steps=(2, 4))) >= {"riemann_right"}


def test_image_baselines_on_a_far_model():
    from xaikit.tensor.baselines import BASELINES, baseline_attributions

    torch.manual_seed(0)
    near = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 3)).eval()
    far = _far(near)
    x = torch.rand(1, 4, 4, generator=torch.Generator().manual_seed(1))
    data = torch.rand(10, 1, 4, 4, generator=torch.Generator().manual_seed(2))
    for kind in BASELINES:
        got = baseline_attributions(far, x, kind, data=data, steps=8, seed=3)
        ref = baseline_attributions(near, x, kind, data=data, steps=8, seed=3)
        _on_cpu(got.attributions, got.baselines)
        torch.testing.assert_close(got.attributions, ref.attributions, atol=1e-5, rtol=1e-4)


# -- the loaders' dtype switch -------------------------------------------------------------------------------
@pytest.fixture
def bert_folder(tmp_path):
    tiny_bert(seed=5).save_pretrained(tmp_path)
    tiny_tokenizer(tmp_path / "tok").save_pretrained(tmp_path)
    return tmp_path


def test_model_dtype_env(bert_folder, monkeypatch):
    from xaikit.models import loaders

    loaders.clear_cache()
    try:
        monkeypatch.delenv("XAIKIT_MODEL_DTYPE", raising=False)
        plain, _ = loaders.load_sentiment(bert_folder)
        assert plain.dtype == torch.float32
        monkeypatch.setenv("XAIKIT_MODEL_DTYPE", "float64")
        wide, tok = loaders.load_sentiment(bert_folder)
        assert wide.dtype == torch.float64 and plain.dtype == torch.float32  # a separate cache entry
        assert wide.device.type == xaikit.device().type
        from xaikit.text.gradsam import gradsam

        assert np.isfinite(gradsam(wide, tok, TEXT).scores).all()
        monkeypatch.setenv("XAIKIT_MODEL_DTYPE", "float8")
        with pytest.raises(ValueError, match="XAIKIT_MODEL_DTYPE='float8'.*float64"):
            loaders.load_sentiment(bert_folder)
    finally:
        loaders.clear_cache()


def test_xaikit_device_is_named_with_the_valid_values(monkeypatch):
    from xaikit._config import device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("XAIKIT_DEVICE", "cuda")
    with pytest.raises(ValueError, match=r"XAIKIT_DEVICE='cuda' asks for cuda, which this machine does not have "
                                         r"\(torch sees: cpu\); set XAIKIT_DEVICE=cpu"):
        device()
    monkeypatch.setenv("XAIKIT_DEVICE", "gpu")
    with pytest.raises(ValueError, match=r"XAIKIT_DEVICE='gpu' is not a torch device \(e\.g\. 'cpu', 'cuda'"):
        device()
    monkeypatch.setenv("XAIKIT_DEVICE", "cpu")
    assert device() == torch.device("cpu")
