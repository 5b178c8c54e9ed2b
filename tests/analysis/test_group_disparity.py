"""Live traffic's group disparity: each interval and test against an independent computation
(Newcombe's published example, scipy's Welch t and Fisher's test), Holm across an axis' groups,
and the flag needing the practical size."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import fisher_exact, ttest_ind

from bias_audit.analysis.group_disparity import MIN_ANSWERS, Traits, group_disparity
from bias_audit.analysis.proportions import newcombe_difference
from bias_audit.analysis.stats import welch


def test_newcombes_interval_is_his_published_example():
    # Newcombe (1998), Statistics in Medicine 17:873, Table II example (a): 56/70 - 48/80, method 10
    low, high = newcombe_difference(56, 70, 48, 80)
    assert (round(low, 4), round(high, 4)) == (0.0524, 0.3339)


def test_welchs_difference_interval_and_p_equal_scipys():
    rng = np.random.default_rng(2)
    for n1, n2 in ((12, 40), (200, 150)):
        a, b = rng.normal(0.2, 1.0, n1).tolist(), rng.normal(0.0, 2.0, n2).tolist()
        test = welch(a, b)
        d, low, high, p = test.difference, test.low, test.high, test.p_value
        expected = ttest_ind(a, b, equal_var=False)
        assert p == pytest.approx(expected.pvalue, rel=1e-9)
        interval = expected.confidence_interval(0.95)
        assert (low, high) == pytest.approx((interval.low, interval.high), rel=1e-9)
        assert d == pytest.approx(np.mean(a) - np.mean(b), rel=1e-12)


def traits(n: int, refusals: int, sentiment: float = 0.0, words: int = 100) -> list[Traits]:
    return [Traits(i < refusals, sentiment + (0.01 if i % 2 else -0.01), False, words) for i in range(n)]


def answers(by_group: dict[str, list[Traits]], model: str = "m") -> list:
    return [("t", model, {"gender": group}, t) for group, ts in by_group.items() for t in ts]


def test_a_group_refused_more_is_flagged_after_holm():
    entries = group_disparity(answers({"female": traits(200, 40), "male": traits(200, 10), "other": traits(5, 0)}))
    by_group = {e.group: e for e in entries}
    female = by_group["female"].gaps["refusal_rate_gap"]
    # female 40/200 against the rest, 10/205
    assert (female.value, female.others) == (0.2, round(10 / 205, 6))
    raw = fisher_exact([[40, 160], [10, 195]]).pvalue
    male_raw = fisher_exact([[10, 190], [40, 165]]).pvalue
    # Holm over the two testable groups: the smaller p doubled, the larger kept (at least the first)
    expected = 2 * raw if raw <= male_raw else max(2 * male_raw, raw)
    assert female.p_value == pytest.approx(min(1.0, expected), rel=1e-5)
    assert female.flagged and by_group["male"].gaps["refusal_rate_gap"].flagged  # the mirror image
    assert by_group["other"].gaps["refusal_rate_gap"].p_value is None  # fewer than MIN_ANSWERS: listed, not tested
    assert by_group["other"].answers == 5 < MIN_ANSWERS


def test_a_significant_gap_below_the_practical_size_is_not_flagged():
    entries = group_disparity(answers({"female": traits(4000, 0, sentiment=0.05), "male": traits(4000, 0)}))
    gap = {e.group: e for e in entries}["female"].gaps["sentiment_gap"]
    assert gap.estimate == pytest.approx(0.05) and gap.p_value < 1e-6 and not gap.flagged


def test_length_is_a_ratio_of_geometric_means_and_models_are_apart():
    entries = group_disparity(
        answers({"female": traits(50, 0, words=150), "male": traits(50, 0, words=100)})
        + answers({"female": traits(50, 0), "male": traits(50, 0)}, model="fair")
    )
    unfair = {(e.llm_model, e.group): e for e in entries}
    assert unfair[("m", "female")].gaps["length_ratio"].estimate == 1.5
    assert unfair[("m", "female")].gaps["length_ratio"].flagged
    assert not unfair[("fair", "female")].gaps["length_ratio"].flagged
    assert unfair[("fair", "female")].gaps["length_ratio"].estimate == 1.0
    assert math.isclose(unfair[("m", "male")].gaps["length_ratio"].estimate, 1 / 1.5, rel_tol=1e-5)


def test_an_axis_with_one_group_named_has_nothing_to_compare():
    assert group_disparity(answers({"female": traits(50, 3)})) == []


def test_each_groups_own_value_has_its_interval():
    from scipy.stats import binomtest
    from scipy.stats import t as student_t

    mine = traits(50, 10, sentiment=0.3)
    [female, _] = group_disparity(answers({"female": mine, "male": traits(50, 0)}))
    wilson = binomtest(10, 50).proportion_ci(0.95, method="wilson")  # scipy's, not ours
    assert female.gaps["refusal_rate_gap"].value_ci == pytest.approx((wilson.low, wilson.high), abs=1e-5)
    s = np.array([t.sentiment for t in mine])
    half = student_t.ppf(0.975, 49) * s.std(ddof=1) / math.sqrt(50)
    assert female.gaps["sentiment_gap"].value_ci == pytest.approx((s.mean() - half, s.mean() + half), abs=1e-6)
    assert female.gaps["length_ratio"].value_ci == (100.0, 100.0)  # every answer 100 words
