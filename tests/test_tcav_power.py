"""The power study of ``benchmarks/tcav_power.py`` of the rank test (Kim et al. 2018's TCAV significance, notebook 07
section 1) reads every protocol off one K x R table per model. That is sound only if each random concept's row
depends on its own set alone, so that the first K rows are the table a call with K random concepts computes; and
its one-sided p must hold its level when the concept is one more random set."""

from __future__ import annotations

import numpy as np
import pytest

from xaikit.concepts import tcav
from xaikit.concepts.significance import rank_p
from xaikit.models import imageworld as iw
from xaikit.models.tiny import tiny_vit


def rank_p_greater(value, null):
    """The power study's one-sided p: the rank test's ``alternative="greater"``."""
    return rank_p(value, null, alternative="greater")


def test_a_split_call_gives_the_rows_of_one_call():
    model = tiny_vit(seed=5, image_size=32)
    randoms = [iw.random_images(8, seed=i)[:, ::2, ::2] for i in range(4)]
    nulls = [iw.random_images(8, seed=700 + k)[:, ::2, ::2] for k in range(12)]
    concepts = {"striped": iw.concept_images("striped", 8)[:, ::2, ::2]}
    cls_imgs = iw.make_dataset(10, seed=4)[0][:, ::2, ::2]

    def call(sets, R=3):
        tcav.clear_cache(model)
        with pytest.warns(UserWarning, match="can never reach"):  # few random concepts: the level is unreachable
            return tcav.tcav_significance(model, concepts, cls_imgs, target="zebra", layer=1, random_sets=randoms,
                                          R=R, pooling="mean", test="rank", null_sets=sets)

    whole = call(nulls)
    first, rest = call(nulls[:5]), call(nulls[5:])
    # exact: the same seeded CAVs on the same activations, whichever other sets share the call
    np.testing.assert_array_equal(np.concatenate([first.null_scores, rest.null_scores]), whole.null_scores)
    np.testing.assert_array_equal(first["striped"].scores, whole["striped"].scores)
    # fewer runs: the first R columns, run i does not depend on how many runs follow it
    fewer = call(nulls, R=2)
    np.testing.assert_array_equal(fewer.null_scores, whole.null_scores[:, :2])
    np.testing.assert_array_equal(fewer["striped"].scores, whole["striped"].scores[:2])


def test_one_sided_rank_p_counts_the_null_values_at_least_as_high():
    assert rank_p_greater(0.9, [0.1, 0.5, 0.95, 0.9]) == 3 / 5  # 0.95 and 0.9 (a tie counts), plus one
    assert rank_p_greater(0.0, [0.1, 0.2]) == 1.0
    assert rank_p_greater(99.0, np.arange(99)) == 1 / 100 and rank_p_greater(97.0, np.arange(99)) == 3 / 100


def test_one_sided_rank_p_holds_its_level_for_one_more_null_value():
    rng = np.random.default_rng(0)
    k, trials = 39, 20_000
    draws = rng.standard_t(3, (trials, k + 1))  # heavy tails: the level holds for any distribution
    p = np.array([rank_p_greater(d[0], d[1:]) for d in draws])
    # every rank of 40 equally likely: P(p <= 2/40) = 2/40; 20,000 trials put 4 standard errors at 0.006
    assert abs(np.mean(p <= 2 / 40) - 0.05) < 0.006
    assert abs(np.mean(p <= 0.5) - 0.5) < 0.015
