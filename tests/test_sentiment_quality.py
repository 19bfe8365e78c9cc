"""The sentiment recipe's quality target: a model short of it after its recipe's steps trains on, an epoch at a
time, and says so; a model that reaches it trains exactly as the recipe says. The target is no part of the
recipe's hash, so the folders of the models already built keep their names. Training runs the real
``train_sentiment`` on 40 made-up texts (two steps an epoch)."""

from __future__ import annotations

import pytest

from xaikit.models import sentiment


def test_the_target_is_no_part_of_the_recipe_hash():
    """The cache folders built before the target existed (training seed 0) keep their names."""
    assert sentiment.sentiment_folder(0).name == "sentiment-v2-bc7ab2bf"
    assert sentiment.sentiment_folder(0, "shuffled").name == "shuffled-sentiment-v2-5be43867"
    assert sentiment.sentiment_folder(0, "subset").name == "subset-sentiment-v2-ef56a255"
    assert all("target" not in k and "quality" not in k for k in sentiment.recipe(0))
    assert sentiment.QUALITY_TARGETS["real"] == ("held-out accuracy", 0.85)  # the recipe's stated target


def _stub(values):
    """A model whose quality after each extra epoch is the next of ``values``; records the epochs trained."""
    trained, it = [], iter(values)
    return trained, (lambda k: trained.append(k)), (lambda: next(it))


def test_train_until_stops_as_soon_as_the_target_is_reached(capsys):
    trained, one_more, measure = _stub([0.84, 0.86, 0.99])
    history = sentiment.train_until(0.80, 0.85, one_more, measure, what="held-out accuracy", name="model",
                                    max_extra=5)
    assert trained == [1, 2] and history == [0.80, 0.84, 0.86]
    out = capsys.readouterr().out
    assert "reached held-out accuracy 0.800 after its recipe's steps, below its recipe's 0.85: training on" in out
    assert "extra epoch 2 of at most 5" in out and "0.860 after 2 extra epochs" in out


def test_train_until_leaves_a_model_that_reached_the_target_alone(capsys):
    trained, one_more, measure = _stub([])
    assert sentiment.train_until(0.85, 0.85, one_more, measure, what="accuracy", name="model") == [0.85]
    assert trained == [] and capsys.readouterr().out == ""


def test_train_until_warns_when_the_extra_epochs_do_not_reach_the_target():
    trained, one_more, measure = _stub([0.5, 0.6, 0.7])
    with pytest.warns(RuntimeWarning, match="0.600 after 2 extra epochs, still below its recipe's 0.85"):
        history = sentiment.train_until(0.4, 0.85, one_more, measure, what="accuracy", name="model", max_extra=2)
    assert trained == [1, 2] and history == [0.4, 0.5, 0.6]


@pytest.fixture
def small_data(monkeypatch, tmp_path):
    """40 made-up texts to train on, 8 of them held out; counts the training steps."""
    from transformers.models.bert import modeling_bert

    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path / "cache"))
    pairs = [(f"the film number {i} was {'good' if i % 3 else 'bad'}", int(i % 3 > 0)) for i in range(40)]
    monkeypatch.setattr(sentiment, "training_pairs", lambda progress=True: list(pairs))
    monkeypatch.setattr(sentiment, "load_movie_reviews", lambda split="train", progress=True: pairs[:8])
    steps = []
    forward = modeling_bert.BertForSequenceClassification.forward

    def spy(self, *args, labels=None, **kw):
        if labels is not None:
            steps.append(len(labels))
        return forward(self, *args, labels=labels, **kw)

    monkeypatch.setattr(modeling_bert.BertForSequenceClassification, "forward", spy)
    return steps


def test_a_model_short_of_its_target_trains_extra_epochs(small_data, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(sentiment, "QUALITY_TARGETS", {"real": ("held-out accuracy", 1.01)})  # out of reach
    with pytest.warns(RuntimeWarning, match="still below its recipe's 1.01"):
        metrics = sentiment.train_sentiment(tmp_path / "model", progress=False, threads=1, seed=0)
    assert sorted(small_data) == sorted([32, 8] * (1 + sentiment.MAX_EXTRA_EPOCHS))  # the epoch, then two more
    assert metrics["extra_epochs"] == sentiment.MAX_EXTRA_EPOCHS and metrics["n_steps"] == 6
    assert len(metrics["quality_by_epoch"]) == 3 and metrics["quality_target"] == {"held-out accuracy": 1.01}
    assert metrics["test_accuracy"] == pytest.approx(metrics["quality_by_epoch"][-1], abs=1e-4)
    assert metrics["recipe_hash"] == "bc7ab2bf"  # the same recipe and folder name
    assert "training on, extra epoch 1 of at most 2" in capsys.readouterr().out


def test_a_model_that_reaches_its_target_trains_the_recipes_steps_only(small_data, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(sentiment, "QUALITY_TARGETS", {"real": ("held-out accuracy", 0.0)})
    metrics = sentiment.train_sentiment(tmp_path / "model", progress=False, threads=1, seed=0)
    assert sorted(small_data) == [8, 32] and metrics["n_steps"] == 2 and metrics["extra_epochs"] == 0
    assert "training on" not in capsys.readouterr().out
