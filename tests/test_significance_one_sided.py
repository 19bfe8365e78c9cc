"""The one-sided rank test and t-test of TCAV's significance (Kim et al. 2018, section 3.5; notebook 05 section 5,
notebook 07 section 1): p-values checked against closed forms on hand-built score tables, and the per-concept
direction passed through ``tcav_significance``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from xaikit.concepts import tcav
from xaikit.models import imageworld as iw
from xaikit.models.tiny import tiny_vit


def test_one_sided_rank_p_is_the_share_of_random_concepts_on_the_alternatives_side():
    # a hand-built table: ten random concepts' mean scores and a concept's; p by counting, plus one, over K + 1
    null = np.array([0.20, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.70, 0.80, 0.90])
    assert tcav.rank_p(0.95, null, alternative="greater") == pytest.approx(1 / 11)  # above all ten
    assert tcav.rank_p(0.75, null, alternative="greater") == pytest.approx(3 / 11)  # 0.8 and 0.9 above it
    assert tcav.rank_p(0.70, null, alternative="greater") == pytest.approx(4 / 11)  # a tie counts against it
    assert tcav.rank_p(0.10, null, alternative="greater") == 1.0  # 11 / 11
    assert tcav.rank_p(0.10, null, alternative="less") == pytest.approx(1 / 11)  # below all ten
    assert tcav.rank_p(0.40, null, alternative="less") == pytest.approx(4 / 11)  # 0.2, 0.35 and the tie 0.4
    # the two-sided p of a value above all ten is larger: 0.05 is as far from the median (0.55) as 0.95 is not,
    # but 0.2 (0.35 away) is not; about the median 0.55, 0.95 is 0.40 away and nothing is further: 1/11 too,
    # while 0.75 (0.2 away) is beaten by 0.2, 0.35, 0.8 and 0.9 on both sides: 5/11, not 3/11
    assert tcav.rank_p(0.75, null) == pytest.approx(5 / 11)
    for value in (0.05, 0.33, 0.5, 0.62, 0.99):  # greater and less count complementary sides, ties in both
        assert (tcav.rank_p(value, null, alternative="greater") + tcav.rank_p(value, null, alternative="less")
                == pytest.approx((2 + len(null) + int(np.isclose(null, value).sum())) / 11))


def test_one_sided_rank_p_refuses_a_centre_and_an_unknown_alternative():
    with pytest.raises(ValueError, match="centre=0.5 is for the two-sided test"):
        tcav.rank_p(0.9, [0.1, 0.2], 0.5, alternative="greater")
    with pytest.raises(ValueError, match="alternative must be one of"):
        tcav.rank_p(0.9, [0.1, 0.2], alternative="larger")


def test_one_sided_rank_p_holds_its_level_when_the_concept_is_one_more_random_set():
    rng = np.random.default_rng(1)
    draws = rng.beta(5, 2, size=(20_000, 40))  # skewed and bounded, like TCAV means; 39 null values each
    for alternative in ("greater", "less"):
        p = np.array([tcav.rank_p(d[0], d[1:], alternative=alternative) for d in draws])
        # every rank of 40 equally likely: P(p <= 2/40) = 2/40; 4 standard errors at 20,000 trials: 0.006
        assert abs(np.mean(p <= 2 / 40) - 0.05) < 0.006, alternative


@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
def test_one_sided_t_test_matches_scipy(alternative):
    rng = np.random.default_rng(2)
    a, b = rng.normal(0.6, 0.1, 10), rng.normal(0.5, 0.1, 10)
    t, p = tcav.t_test(a, b, alternative)
    ref = stats.ttest_ind(a, b, alternative=alternative)  # the original TCAV code's test, pooled variance
    assert t == pytest.approx(ref.statistic, rel=1e-10) and p == pytest.approx(ref.pvalue, rel=1e-10)
    # constant samples: exact, 0 only on the alternative's side
    assert tcav.t_test([0.7] * 3, [0.1] * 5, "greater")[1] == 0.0
    assert tcav.t_test([0.7] * 3, [0.1] * 5, "less")[1] == 1.0


def _world():
    model = tiny_vit(seed=3, image_size=32)
    randoms = [iw.random_images(8, seed=i)[:, ::2, ::2] for i in range(4)]
    nulls = [iw.random_images(8, seed=500 + k)[:, ::2, ::2] for k in range(19)]
    concepts = {"striped": iw.concept_images("striped", 8)[:, ::2, ::2],
                "dotted": iw.concept_images("dotted", 8)[:, ::2, ::2]}
    cls_imgs = iw.make_dataset(10, seed=4)[0][:, ::2, ::2]
    return model, randoms, nulls, concepts, cls_imgs


def test_significance_takes_each_concepts_direction():
    model, randoms, nulls, concepts, cls_imgs = _world()

    def call(alternative, test="rank"):
        with pytest.warns(UserWarning, match="can never reach"):  # 19 random concepts: the level is unreachable
            return tcav.tcav_significance(model, concepts, cls_imgs, target="zebra", layer=1, random_sets=randoms,
                                          R=3, pooling="mean", test=test, null_sets=nulls, alternative=alternative)

    two = call("two-sided")
    r = call({"striped": "greater", "dotted": "less"})
    for name, alternative in (("striped", "greater"), ("dotted", "less")):
        c = r[name]
        np.testing.assert_array_equal(c.scores, two[name].scores)  # exact: the same seeded runs
        assert c.alternative == alternative and two[name].alternative == "two-sided"
        # the closed form on the result's own numbers: (1 + #{random concepts on the alternative's side}) / 20
        side = r.null_means >= c.mean - 1e-12 if alternative == "greater" else r.null_means <= c.mean + 1e-12
        assert c.p_value == pytest.approx((1 + side.sum()) / 20)
        assert c.p_corrected == pytest.approx(min(1.0, 2 * c.p_value))  # Bonferroni over the two concepts, as before
        assert c.significant == (c.p_corrected < 0.05)
    assert "one-sided: greater" in r.summary() and "one-sided" not in two.summary()
    t_two = tcav.tcav_significance(model, concepts, cls_imgs, target="zebra", layer=1, random_sets=randoms, R=3,
                                   pooling="mean")
    t_one = tcav.tcav_significance(model, concepts, cls_imgs, target="zebra", layer=1, random_sets=randoms, R=3,
                                   pooling="mean", alternative="greater")
    for name in concepts:
        # the t-test on the same runs, one-sided (checked against SciPy above; these tiny runs may be constant)
        assert t_one[name].p_value == tcav.t_test(t_one[name].scores, t_one.random_scores, "greater")[1]
        assert t_two[name].t == t_one[name].t


def test_significance_refuses_a_direction_that_does_not_name_every_concept():
    model, randoms, nulls, concepts, cls_imgs = _world()
    kw = dict(target="zebra", layer=1, random_sets=randoms, R=3, pooling="mean")
    with pytest.raises(ValueError, match=r"missing \['dotted'\], not tested \['bubbly'\]"):
        tcav.tcav_significance(model, concepts, cls_imgs, alternative={"striped": "greater", "bubbly": "less"}, **kw)
    with pytest.raises(ValueError, match=r"alternative\['dotted'\] must be one of"):
        tcav.tcav_significance(model, concepts, cls_imgs, alternative={"striped": "greater", "dotted": "up"}, **kw)
    with pytest.raises(ValueError, match="alternative must be one of"):
        tcav.tcav_significance(model, concepts, cls_imgs, alternative="higher", **kw)
    with pytest.raises(TypeError, match="alternative must be one of .* or a dict"):
        tcav.tcav_significance(model, concepts, cls_imgs, alternative=["greater"], **kw)


def test_rank_p_refuses_nan_in_value_or_null():
    from xaikit.concepts.significance import rank_p

    with pytest.raises(ValueError, match=r"value must be a finite number, got nan"):
        rank_p(float("nan"), [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"null holds 1 non-finite value\(s\) \(first at index 1: nan\)"):
        rank_p(0.5, [0.1, float("nan"), 0.3])
    with pytest.raises(ValueError, match=r"value must be a finite"):
        rank_p(float("inf"), [0.1, 0.2], alternative="greater")
    assert rank_p(0.5, [0.1, 0.3]) == pytest.approx(2 / 3)
