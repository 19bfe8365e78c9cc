"""Apple laptops: ``xaikit.device()`` leaves MPS alone unless asked, and float64 work never
goes to a device that holds no float64 (:func:`xaikit.policies.float64_device`).

No MPS device exists here, so the tests use stand-ins: torch's MPS check patched to say yes, a model whose
device reads as ``mps`` (this torch cannot put anything there, so a tensor sent there fails), and on a CUDA
machine the GPU declared float64-less with a torch-function mode that raises MPS's own TypeError for every
float64 tensor made on it. Oracles: the same method on the CPU model, and every result on the CPU.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

import xaikit
from xaikit import policies
from xaikit.models.tiny import tiny_bert, tiny_tokenizer

TEXT = "i cannot wait for next time"
MPS_ERROR = ("Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. "
             "Please use float32 instead.")


class RefuseFloat64(TorchFunctionMode):
    """A stand-in for MPS: any float64 tensor made on a device of type ``kind`` raises MPS's TypeError."""

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.dtype == torch.float64 and t.device.type == self.kind:
                raise TypeError(f"{MPS_ERROR} ({getattr(func, '__name__', func)})")
        return out


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    """A tiny random BERT (3 blocks) and its tokenizer, as tests/test_lrp.py builds them."""
    return tiny_bert(seed=4, num_hidden_layers=3).eval(), tiny_tokenizer(tmp_path_factory.mktemp("tok"))


@pytest.fixture
def apple(monkeypatch):
    """A machine whose torch offers MPS and no CUDA."""
    monkeypatch.delenv(xaikit._config.DEVICE_ENV, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    return monkeypatch


# -- the device choice ---------------------------------------------------------------------------------------
def test_mps_only_when_asked(apple):
    assert xaikit.device() == torch.device("cpu")
    assert xaikit.device("mps") == torch.device("mps")
    apple.setenv("XAIKIT_DEVICE", "mps")
    assert xaikit.device() == torch.device("mps")
    assert xaikit.device("cpu") == torch.device("cpu")  # prefer wins over the variable
    apple.setattr(torch.cuda, "is_available", lambda: True)
    apple.delenv("XAIKIT_DEVICE")
    assert xaikit.device() == torch.device("cuda")


def test_a_device_that_is_not_there_names_the_setting(apple):
    apple.setenv("XAIKIT_DEVICE", "gpu")
    with pytest.raises(ValueError, match=r"XAIKIT_DEVICE='gpu' is not a torch device.*XAIKIT_DEVICE=cpu"):
        xaikit.device()
    apple.setenv("XAIKIT_DEVICE", "cuda")
    with pytest.raises(ValueError, match=r"XAIKIT_DEVICE='cuda' asks for cuda.*torch sees: cpu, mps\).*unset"):
        xaikit.device()
    apple.setattr(torch.backends.mps, "is_available", lambda: False)
    apple.setenv("XAIKIT_DEVICE", "mps")
    with pytest.raises(ValueError, match=r"XAIKIT_DEVICE='mps' asks for mps.*torch sees: cpu\)"):
        xaikit.device()
    with pytest.raises(ValueError, match=r"prefer='cuda:0'.*leave prefer out"):
        xaikit.device("cuda:0")
    apple.setattr(torch.cuda, "is_available", lambda: True)
    apple.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(ValueError, match=r"asks for cuda:1.*1 CUDA device"):
        xaikit.device("cuda:1")
    assert xaikit.device("cuda:0") == torch.device("cuda:0")


# -- where float64 work goes ---------------------------------------------------------------------------------
def test_float64_device_by_type():
    cpu = torch.device("cpu")
    assert policies.float64_device(torch.device("mps")) == cpu and not policies.supports_float64("mps:0")
    assert policies.float64_device("cuda:1") == torch.device("cuda:1") and policies.supports_float64("cuda")
    assert policies.float64_device(cpu) == cpu == policies.float64_device(None)
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = policies.to_float64(x)
    assert y.dtype == torch.float64 and y.device == cpu
    y.square().sum().backward()  # differentiable, like .double()
    assert x.grad.dtype == torch.float32 and x.grad.tolist() == [2.0, 4.0]


def test_chefer_lrp_on_a_model_that_reads_as_mps(bert, monkeypatch):
    """The model's device reads as ``mps``: the float64 re-run must go to the CPU (anything sent to ``mps``
    fails on this torch), and the scores equal the plain run's."""
    from xaikit.text import lrp

    model, tok = bert
    ref = lrp.chefer_lrp(model, tok, TEXT, target=1)
    stand_in = copy.deepcopy(model)  # its own float64 weights, made under the stand-in
    monkeypatch.setattr(lrp, "model_device", lambda m: torch.device("mps"))
    with pytest.MonkeyPatch.context() as m:  # the stand-in has teeth: without the policy the re-run goes to mps
        m.setattr(lrp, "float64_device", torch.device)
        with pytest.raises(RuntimeError, match="mps"):
            lrp.chefer_lrp(stand_in, tok, TEXT, target=1)
    got = lrp.chefer_lrp(stand_in, tok, TEXT, target=1)
    assert got.tokens == ref.tokens and got.target == ref.target == 1
    np.testing.assert_allclose(got.scores, ref.scores, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.detail.totals, 1.0, rtol=1e-10)
    kept = lrp._WEIGHTS[stand_in][1]
    assert kept["position"].device.type == "cpu" and kept["position"].dtype == torch.float64


# -- on a GPU: CUDA stands in for MPS ------------------------------------------------------------------------
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a second device type (CUDA) to stand in for MPS")
def test_methods_on_a_gpu_that_refuses_float64(bert, monkeypatch):
    from xaikit.lab.agreement import input_gradient, leave_one_out
    from xaikit.lab.diagnostics import _cache_key
    from xaikit.lab.faithfulness import run_lab
    from xaikit.lab.tensor_sanity import spearman
    from xaikit.tensor.contrast import exact_shapley
    from xaikit.tensor.integrated import integrated_gradients
    from xaikit.text.encoding import encode_one
    from xaikit.text.lrp import chefer_lrp
    from xaikit.text.shaptext import shap_text

    monkeypatch.setattr(policies, "NO_FLOAT64_DEVICE_TYPES", frozenset({"mps", "cuda"}))
    near, tok = bert
    far = copy.deepcopy(near).to("cuda")
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3)).eval()
    mlp_far = copy.deepcopy(mlp).to("cuda")
    x64 = torch.tensor([0.5, -1.0, 2.0, 0.3], dtype=torch.float64)
    sentences = [TEXT, "this is so boring"]
    with RefuseFloat64("cuda"):
        with pytest.raises(TypeError, match="MPS framework doesn't support float64"):
            torch.ones(2, device="cuda").double()
        lrp = chefer_lrp(far, tok, TEXT, target=1)
        enc = encode_one(far, tok, TEXT, 1)
        grad, loo = input_gradient(far, enc), leave_one_out(far, enc, tok)
        lab = run_lab(far, tok, sentences, n_permutations=2, shap_evals=40, ig_steps=4, progress=False)
        shap = shap_text(far, tok, [TEXT], target=1, max_evals=40)
        ig = integrated_gradients(mlp_far, x64, steps=8)
        phi = exact_shapley(mlp_far, x64)
        rho = spearman(torch.arange(5.0, device="cuda"), torch.arange(5.0, device="cuda") ** 2)
        key = _cache_key(far, tok, [(TEXT, 1)], -1)
    enc_near = encode_one(near, tok, TEXT, 1)
    np.testing.assert_allclose(np.asarray(lrp.scores), np.asarray(chefer_lrp(near, tok, TEXT, target=1).scores),
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(grad, input_gradient(near, enc_near), rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(loo, leave_one_out(near, enc_near, tok), atol=1e-5)
    ref_lab = run_lab(near, tok, sentences, n_permutations=2, shap_evals=40, ig_steps=4, progress=False)
    np.testing.assert_allclose(lab.permutation_tvd, ref_lab.permutation_tvd, atol=1e-5)
    np.testing.assert_allclose(shap.values[0], shap_text(near, tok, [TEXT], target=1, max_evals=40).values[0],
                               atol=1e-5)
    assert ig.attributions.dtype == torch.float64 and ig.attributions.device.type == "cpu"
    torch.testing.assert_close(ig.attributions, integrated_gradients(mlp, x64, steps=8).attributions,
                               atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(phi, exact_shapley(mlp, x64), atol=1e-5, rtol=1e-4)
    assert rho == pytest.approx(1.0)
    assert key == _cache_key(near, tok, [(TEXT, 1)], -1)  # the weights' fingerprint is taken on the CPU
