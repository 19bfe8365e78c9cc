"""The embedded ViT's recipe (notebook 05; :mod:`xaikit.models.vitworld`) checks its quality on the training
images and trains on, in capped rounds of extra epochs, until the model reaches it."""

from __future__ import annotations

import pytest
import torch

from xaikit.models import imageworld as iw
from xaikit.models import vitworld

TINY = dict(n_train=48, n_test=16, epochs=1, epochs_control=1, batch_size=16, extra_epochs=1, max_extra_epochs=2)


def _weights(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_a_model_below_the_target_trains_extra_epochs_up_to_the_cap(capsys):
    model, metrics = vitworld.train_vit("main", progress=True, device="cpu", target_train_accuracy=1.01, **TINY)
    assert metrics["extra_epochs"] == 2 and metrics["epochs"] == 3 and not metrics["reached_target"]
    captured = capsys.readouterr()
    err = captured.out + captured.err
    assert err.count("is below the recipe's 1.01; training 1 more epoch") == 2
    assert "still below the recipe's 1.01 after 2 more epochs" in err
    # the recorded training accuracy is the model's on every training image, the number the target is held to
    x, y, _ = iw.make_dataset(TINY["n_train"], "main", seed=0)
    assert metrics["train_accuracy"] == vitworld.accuracy(model, x, y)
    assert metrics["target_train_accuracy"] == 1.01


def test_a_model_that_reaches_the_target_is_the_model_without_extra_epochs():
    reached, m1 = vitworld.train_vit("main", progress=False, device="cpu", target_train_accuracy=0.0, **TINY)
    plain, m2 = vitworld.train_vit("main", progress=False, device="cpu", target_train_accuracy=1.01,
                                   **{**TINY, "max_extra_epochs": 0})
    assert m1["extra_epochs"] == 0 and m1["epochs"] == 1 and m1["reached_target"]
    assert m2["extra_epochs"] == 0 and not m2["reached_target"]
    assert torch.equal(_weights(reached), _weights(plain))  # exact: the same seeded steps, nothing after them
    more, m3 = vitworld.train_vit("main", progress=False, device="cpu", target_train_accuracy=1.01, **TINY)
    assert not torch.equal(_weights(more), _weights(plain))  # the extra epochs changed the model


def test_each_world_has_its_own_target():
    assert vitworld.target_train_accuracy("main") == vitworld.RECIPE["target_train_accuracy"]
    assert vitworld.target_train_accuracy("control") == vitworld.RECIPE["target_train_accuracy_control"]
    _, metrics = vitworld.train_vit("control", progress=False, device="cpu", target_train_accuracy=1.01,
                                    target_train_accuracy_control=0.0, **TINY)
    assert metrics["extra_epochs"] == 0 and metrics["target_train_accuracy"] == 0.0


@pytest.mark.parametrize("world", ["main", "control"])
def test_the_held_out_bound_lies_below_the_training_target(world):
    # the recipe's stated held-out bound is a claim about unseen images; the target is about the training ones
    assert 0.2 < vitworld.RECIPE["held_out_bound"] <= vitworld.target_train_accuracy(world)


def test_notebook_05_asserts_the_recipes_held_out_bound():
    from xaikit.course.claims import LEDGER

    entry = LEDGER["05.1-held-out-accuracy"]
    assert entry.kind == "empirical" and entry.lower == vitworld.RECIPE["held_out_bound"]
