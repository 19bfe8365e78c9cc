"""xaikit.models.hooks: hooks leave no trace, the attention switch restores the model."""

import pytest
import torch

from xaikit.models.hooks import attention_implementation, forward_hooks
from xaikit.models.tiny import tiny_bert


def test_forward_hooks_replace_output_and_are_removed_even_on_error():
    lin = torch.nn.Linear(2, 2)
    x = torch.ones(1, 2)
    with forward_hooks((lin, lambda module, args, out: out * 0)):
        assert torch.count_nonzero(lin(x)) == 0
    assert torch.count_nonzero(lin(x)) > 0
    with pytest.raises(RuntimeError):
        with forward_hooks((lin, lambda module, args, out: out * 0)):
            raise RuntimeError("boom")
    assert not lin._forward_hooks


def test_attention_implementation_switches_and_restores():
    model = tiny_bert()
    assert model.config._attn_implementation == "eager"
    with attention_implementation(model, "sdpa") as switched:
        assert switched and model.config._attn_implementation == "sdpa"
    assert model.config._attn_implementation == "eager"
    with pytest.raises(ValueError):
        with attention_implementation(model, "sdpa"):
            raise ValueError("boom")
    assert model.config._attn_implementation == "eager"
    with attention_implementation(model, None) as switched:
        assert not switched and model.config._attn_implementation == "eager"
