"""The sandbox's statistics: published values (Newcombe 1998) and scipy as oracles, then a
simulation of candidates with and without a real change."""

from __future__ import annotations

import random

import pytest
from scipy.stats import binomtest

from bias_audit.analysis.multiple_tests import holm
from bias_audit.analysis.proportions import newcombe_difference, wilson_interval
from bias_audit.analysis.sandbox import agresti_min_paired, compare, mcnemar_exact_p


@pytest.mark.parametrize(("k", "n"), [(0, 10), (1, 10), (81, 263), (15, 148), (29, 29), (5, 5000)])
def test_wilson_equals_scipys(k, n):
    oracle = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert wilson_interval(k, n) == pytest.approx((oracle.low, oracle.high), abs=1e-9)


@pytest.mark.parametrize(
    ("counts", "published"),
    [
        # Newcombe (1998), Statistics in Medicine 17:873-890, table II, method 10
        ((56, 70, 48, 80), (0.0524, 0.3339)),
        ((9, 10, 3, 10), (0.1705, 0.8090)),
    ],
)
def test_newcombe_difference_matches_his_table(counts, published):
    assert newcombe_difference(*counts) == pytest.approx(published, abs=1e-4)


def test_mcnemar_is_the_exact_binomial_test_on_discordant_pairs():
    for b, c in ((0, 0), (3, 9), (10, 2), (0, 7), (25, 25)):
        expected = 1.0 if b + c == 0 else binomtest(min(b, c), b + c, 0.5).pvalue
        assert mcnemar_exact_p(b, c) == pytest.approx(expected)
    assert mcnemar_exact_p(0, 7) == pytest.approx(2 * 0.5**7)  # by hand: both tails of 7 heads


def test_agresti_min_by_hand():
    # b = 2, c = 8, n = 40 -> (8.5 - 2.5) / 42 = 0.142857; se = sqrt((11 - 36/42) / 42^2) = 0.075828
    lower, upper = agresti_min_paired(2, 8, 40)
    assert (lower, upper) == pytest.approx((0.142857 - 1.959964 * 0.075828, 0.142857 + 1.959964 * 0.075828), abs=1e-5)


def test_holm_by_hand():
    # sorted 0.01, 0.02, 0.04 -> x3, x2, x1 = 0.03, 0.04, 0.04 (monotone)
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def _side(rng: random.Random, n: int, rates: dict[str, float]) -> list[frozenset[str]]:
    return [frozenset(t for t, rate in rates.items() if rng.random() < rate) for _ in range(n)]


def test_a_doubled_bias_is_worse_and_an_unchanged_model_is_not():
    rng = random.Random(5)
    rates = {"gendered_language": 0.15, "toxicity": 0.05, "stereotype": 0.08}
    worse = flagged_same = 0
    for _ in range(200):
        baseline = _side(rng, 300, rates)
        doubled = _side(rng, 300, {**rates, "gendered_language": 0.30})
        same = _side(rng, 300, rates)
        verdicts = {c.bias_type: c.verdict for c in compare(baseline, doubled)}
        worse += verdicts["gendered_language"] == "worse"
        flagged_same += any(c.verdict != "no_difference" for c in compare(baseline, same))
    assert worse >= 180  # found at least 90% of the time at 300 answers a side
    assert flagged_same <= 10  # Holm keeps the family-wise false verdicts near 5%


def test_paired_answers_use_mcnemar_on_the_pairs():
    baseline = [frozenset({"toxicity"})] * 10 + [frozenset()] * 30
    candidate = [frozenset({"toxicity"})] * 10 + [frozenset({"toxicity"})] * 9 + [frozenset()] * 21
    [paired] = compare(baseline, candidate, pairs=[(i, i) for i in range(40)])
    assert paired.paired and paired.p_value == pytest.approx(2 * 0.5**9) and paired.verdict == "worse"
    assert (paired.baseline_rate, paired.candidate_rate) == (0.25, 0.475)
