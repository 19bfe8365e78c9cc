"""xaikit.policies: the thread setting is explicit, visible and restored (issue 15, item 5)."""

import pytest
import torch

from xaikit import policies


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(policies, "_method_threads", None)
    monkeypatch.setattr(policies, "_method_threads_set", False)
    monkeypatch.delenv(policies.THREADS_ENV, raising=False)
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
