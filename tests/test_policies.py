"""xaikit.policies: the thread setting is explicit, visible and restored."""

import pytest
import torch

from xaikit import policies
from xaikit.models.hooks import forward_hooks
from xaikit.tensor import gradients as G


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(policies, "_method_threads", None)
    monkeypatch.setattr(policies, "_method_threads_set", False)
    monkeypatch.delenv(policies.THREADS_ENV, raising=False)
    monkeypatch.setattr(policies, "usable_cores", lambda: 64)  # counts below the cap, whatever this machine has
    return monkeypatch


def test_one_thread_unless_told_otherwise(fresh):
    assert policies.method_thread_count() == policies.DEFAULT_METHOD_THREADS == 1
    fresh.setenv(policies.THREADS_ENV, "3")
    assert policies.method_thread_count() == 3
    fresh.setenv(policies.THREADS_ENV, "auto")
    assert policies.method_thread_count() is None  # torch's own default
    policies.set_method_threads(2)  # the call wins over the environment
    assert policies.method_thread_count() == 2


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_a_bad_thread_setting_names_the_variable(fresh, value):
    fresh.setenv(policies.THREADS_ENV, value)
    with pytest.raises(ValueError, match="XAIKIT_THREADS must be a positive integer or 'auto'"):
        policies.method_thread_count()
    with pytest.raises(ValueError, match="positive int or None"):
        policies.set_method_threads(0)


def test_thread_count_is_restored_after_the_block(fresh):
    before = torch.get_num_threads()
    target = 1 if before != 1 else 2
    with policies.torch_threads(target):
        assert torch.get_num_threads() == target
    assert torch.get_num_threads() == before
    with policies.torch_threads(None):  # None leaves the count alone
        assert torch.get_num_threads() == before


# -- the thread count by the size of the work: one thread for the embedded models' short passes,
# the idle cores for a bert-base or vit-base pass, and the user's setting over both

def _meta(**config):
    from transformers import BertConfig, BertForSequenceClassification

    with torch.device("meta"):  # shapes only, no memory
        return BertForSequenceClassification(BertConfig(**config))


def test_weights_outside_embeddings_leave_the_tables_out():
    bert_base = _meta()  # 110M in all, about 24M of them the embedding tables
    minilm = _meta(hidden_size=384, num_hidden_layers=6, intermediate_size=1536)  # the embedded model's shape
    assert 80e6 < policies.weights_outside_embeddings(bert_base) < 90e6
    assert policies.weights_outside_embeddings(minilm) < 12e6 < sum(p.numel() for p in minilm.parameters())


def test_large_work_takes_the_idle_cores_small_work_one_thread(fresh):
    import torch

    for idle, expected in ((0, 1), (1, 1), (64, torch.get_num_threads())):
        fresh.setattr(policies, "idle_cores", lambda idle=idle: idle)
        assert policies.method_thread_count(_meta()) == expected
    fresh.setattr(policies, "idle_cores", lambda: None)  # not known here: torch's default
    assert policies.method_thread_count(_meta()) is None
    assert policies.method_thread_count(_meta(hidden_size=384, num_hidden_layers=6, intermediate_size=1536)) == 1
    assert policies.method_thread_count() == policies.DEFAULT_METHOD_THREADS == 1


def test_heavy_work_on_a_small_model_takes_the_idle_cores_even_inside_a_one_thread_block(fresh):
    """Heavy work (float64 LRP, the lab's batches) uses the idle cores on any model, up to torch's count when
    xaikit first asked, also where an enclosing view has set one thread; busy cores still mean one thread."""
    small = _meta(hidden_size=384, num_hidden_layers=6, intermediate_size=1536)
    fresh.setattr(policies, "_default_threads", [4])  # torch's count before any method changed it
    fresh.setattr(policies, "idle_cores", lambda: 3)
    assert policies.method_thread_count(small) == 1
    assert policies.method_thread_count(small, heavy=True) == 3 == policies.method_thread_count(heavy=True)
    with policies.torch_threads(1):  # a light view's block around a heavy re-run
        assert policies.method_thread_count(small, heavy=True) == 3
    fresh.setattr(policies, "idle_cores", lambda: 64)
    assert policies.method_thread_count(small, heavy=True) == 4  # never above torch's own count
    fresh.setattr(policies, "idle_cores", lambda: 0)  # other processes keep every core busy
    assert policies.method_thread_count(small, heavy=True) == 1
    fresh.setenv(policies.THREADS_ENV, "1")  # the user's setting wins here too
    fresh.setattr(policies, "idle_cores", lambda: 3)
    assert policies.method_thread_count(small, heavy=True) == 1


def test_the_ceiling_is_torchs_count_before_any_block_changed_it(fresh):
    """The first heavy ask inside a one-thread block must not make one thread the ceiling for the session:
    torch_threads remembers torch's own count before it first changes it."""
    fresh.setattr(policies, "_default_threads", [])  # a new process: nothing remembered yet
    fresh.setattr(policies, "idle_cores", lambda: 64)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with policies.torch_threads(1):  # e.g. a view's block, before any heavy work asked
            assert policies.method_thread_count(heavy=True) == 2
        assert policies.method_thread_count(heavy=True) == 2
    finally:
        torch.set_num_threads(before)


def test_chefer_lrp_runs_on_the_idle_cores_inside_the_lab(fresh):
    """The float64 LRP re-run, called from a view that runs on one thread, counts threads as heavy work."""
    from xaikit.models import tiny_bert, tiny_tokenizer
    from xaikit.text import lrp

    fresh.setattr(policies, "_default_threads", [2])
    fresh.setattr(policies, "idle_cores", lambda: 2)
    seen = []
    real = lrp._check_bert
    fresh.setattr(lrp, "_check_bert", lambda m: (seen.append(torch.get_num_threads()), real(m))[1])
    before = torch.get_num_threads()
    try:
        with policies.torch_threads(1):
            lrp.chefer_lrp(tiny_bert(), tiny_tokenizer(), "a good film", target=1)
            assert torch.get_num_threads() == 1  # restored to the enclosing block's count
    finally:
        torch.set_num_threads(before)
    assert seen and set(seen) == {2}  # every check inside the re-run saw both cores


def test_the_users_setting_wins_at_any_size(fresh):
    big = _meta()
    fresh.setenv(policies.THREADS_ENV, "1")
    assert policies.method_thread_count(big) == 1
    fresh.setenv(policies.THREADS_ENV, "auto")
    assert policies.method_thread_count(big) is None
    policies.set_method_threads(3)
    assert policies.method_thread_count(big) == 3


@pytest.mark.parametrize(("layers", "expected"), [(1, 1), (4, 2)])
def test_a_method_runs_at_the_count_its_model_size_chooses(fresh, layers, expected):
    fresh.setattr(policies, "idle_cores", lambda: 2)  # both cores idle (the suite's other worker may be busy)
    # a real Grad-SAM call, the thread count read inside the model's forward pass
    from transformers import BertConfig, BertForSequenceClassification

    from xaikit.models import tiny_tokenizer
    from xaikit.text.gradsam import gradsam

    torch.manual_seed(0)
    config = BertConfig(vocab_size=120, hidden_size=1024, num_hidden_layers=layers, num_attention_heads=4,
                        intermediate_size=4096, max_position_embeddings=16, attn_implementation="eager")
    model = BertForSequenceClassification(config).eval()  # 12.6M weights a block: 1 block small, 4 large
    seen = []
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with forward_hooks((model.bert.encoder.layer[0], lambda *a: seen.append(torch.get_num_threads()))):
            gradsam(model, tiny_tokenizer(), "a b", target=0)  # target given: no forward pass to resolve it
        assert seen and set(seen) == {expected}
        assert torch.get_num_threads() == 2  # restored
    finally:
        torch.set_num_threads(before)


def test_idle_cores_counts_what_other_processes_leave(monkeypatch):
    import os

    monkeypatch.setattr(policies, "_idle_seen", [float("-inf"), None])
    idle = policies.idle_cores(interval=0.05)
    assert idle is None or 0 <= idle <= (os.cpu_count() or 1)


def test_a_count_over_the_cores_is_capped_with_a_note(fresh):
    """XAIKIT_THREADS=1000000 killed the kernel (OpenMP ran out of memory making the threads)."""
    import numpy as np

    fresh.setattr(policies, "usable_cores", lambda: 4)
    fresh.setenv(policies.THREADS_ENV, "1000000")
    with pytest.warns(UserWarning, match=r"XAIKIT_THREADS asks for 1,000,000 threads.*4 cores.*uses 4"):
        assert policies.method_thread_count() == 4
    fresh.setenv(policies.THREADS_ENV, "4")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert policies.method_thread_count() == 4  # at the cap: no note
    with pytest.warns(UserWarning, match=r"set_method_threads asks for 9 threads"):
        policies.set_method_threads(9)
    assert policies.method_thread_count() == 4
    policies.set_method_threads(np.int64(2))  # was "n must be a positive int or None, got np.int64(2)"
    assert policies.method_thread_count() == 2 and type(policies.method_thread_count()) is int
    with pytest.raises(TypeError, match=r"n must be a positive int or None, got str '2'"):
        policies.set_method_threads("2")


@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5"])
def test_a_bad_thread_setting_is_refused_by_the_plain_tensor_methods(monkeypatch, value):
    """``XAIKIT_THREADS=abc`` was refused by the model methods and ignored by ``smoothgrad`` on a function."""
    monkeypatch.setenv("XAIKIT_THREADS", value)
    with pytest.raises(ValueError, match=r"XAIKIT_THREADS must be a positive integer or 'auto', got"):
        G.smoothgrad(lambda b: (b ** 2).sum(1), [1.0, 2.0], seed=0)
    with pytest.raises(ValueError, match=r"XAIKIT_THREADS must be"):
        G.gradient(lambda b: (b ** 2).sum(1), [1.0, 2.0])
    monkeypatch.setenv("XAIKIT_THREADS", "1")
    assert G.gradient(lambda b: (b ** 2).sum(1), [1.0, 2.0]).tolist() == [2.0, 4.0]


def test_fast_mode_refuses_an_unknown_value(monkeypatch):
    """``XAIKIT_FAST=maybe`` was read as off, with no word."""
    import xaikit

    for value, expected in (("ON", True), ("Yes", True), ("off", False), ("No", False), ("FALSE", False)):
        monkeypatch.setenv("XAIKIT_FAST", value)
        assert xaikit.fast_mode() is expected
    for value in ("maybe", "2"):
        monkeypatch.setenv("XAIKIT_FAST", value)
        with pytest.raises(ValueError, match=rf"XAIKIT_FAST must be one of 1, true, yes, on .*got '{value}'"):
            xaikit.pick(50, 5)
