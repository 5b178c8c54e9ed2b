import math

import pytest
from scipy import stats as sps

from bias_audit.analysis.stats import fisher_ci, one_sample_t_p, pearson

CORRELATION_TABLE = [
    ([100, 200, 300], [5.0, 6.1, 7.05]),  # n = 3: df = 1
    ([10, 20, 30, 40], [1.0, 3.0, 2.0, 5.0]),
    ([120, 80, 400, 260, 150], [6.5, 5.0, 8.0, 7.5, 6.0]),
    ([1, 2, 3, 4, 5, 6], [6.0, 5.0, 4.0, 4.0, 2.0, 1.0]),
]


@pytest.mark.parametrize("x, y", CORRELATION_TABLE)
def test_pearson_matches_scipy_exact_t(x, y):
    expected = sps.pearsonr(x, y)
    got = pearson([float(v) for v in x], y)
    assert got.r == pytest.approx(expected.statistic, abs=1e-12)
    assert got.p_value == pytest.approx(expected.pvalue, rel=1e-9)


def test_three_points_give_the_exact_t_p_not_the_normal_approximation():
    # science.md: the reference reports p ~ 4e-12 at n = 3 where the exact t (df = 1) gives ~0.09.
    x, y = [100.0, 200.0, 300.0], [5.0, 6.3, 7.0]
    r = sps.pearsonr(x, y).statistic
    t = r * math.sqrt(1) / math.sqrt(1 - r * r)
    normal_p = math.erfc(abs(t) / math.sqrt(2))
    got = pearson(x, y)
    assert normal_p < 1e-6  # what a normal approximation would claim
    assert 0.05 < got.p_value < 0.2  # exact: not significant
    assert got.p_value == pytest.approx(2 * sps.t.sf(abs(t), df=1), rel=1e-9)


@pytest.mark.parametrize("x, y", [([1.0, 2.0], [3.0, 4.0]), ([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])])
def test_pearson_is_insufficient_below_three_or_without_variance(x, y):
    got = pearson(x, y)
    assert got.r is None and got.p_value is None


@pytest.mark.parametrize("r, n", [(0.21, 320), (-0.5, 10), (0.0, 4)])
def test_fisher_ci_by_hand(r, n):
    half = 1.959963984540054 / math.sqrt(n - 3)
    low, high = fisher_ci(r, n)
    assert low == pytest.approx(math.tanh(math.atanh(r) - half))
    assert high == pytest.approx(math.tanh(math.atanh(r) + half))


def test_fisher_ci_needs_four_points():
    assert fisher_ci(0.5, 3) is None


@pytest.mark.parametrize("values", [[1.0, 2.0, 4.0], [-2.5, -2.0, -3.1, -1.9], [0.3, -0.2]])
def test_one_sample_t_matches_scipy(values):
    assert one_sample_t_p(values) == pytest.approx(sps.ttest_1samp(values, 0.0).pvalue, rel=1e-9)
