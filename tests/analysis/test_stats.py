import math

import numpy as np
import pytest
from scipy import stats as sps

from bias_audit.analysis.stats import (
    COUNT_BLOCK,
    GroupMoments,
    average_ranks,
    correlation_t,
    fisher_ci,
    fisher_p,
    index_type,
    level_counts,
    level_table,
    one_sample_t_p,
    pearson,
    pearson_arrays,
    pearson_from_sums,
    present_levels,
    rank_correlation,
    sorted_span,
    value_ranks,
)

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


# The two correlation kernels against scipy on the same points: a batch of rows with a mask
# (the per-session audit's shape) and sums (the windows' and the bootstrap's).
MASKED_ROWS = [
    ([3.0, 1.0, 4.0, 1.0, 5.0], [2.0, 7.0, 1.0, 8.0, 2.0], [True, True, True, True, True]),
    ([3.0, 1.0, 4.0, 9.0, 5.0], [2.0, 7.0, 1.0, 8.0, 2.0], [True, True, False, True, True]),
    ([10.0, 20.0, 30.0, 0.0, 0.0], [1.0, 3.0, 2.0, 0.0, 0.0], [True, True, True, False, False]),
]


def test_the_array_kernel_equals_scipy_on_each_masked_row():
    x = np.array([row[0] for row in MASKED_ROWS])
    y = np.array([row[1] for row in MASKED_ROWS])
    mask = np.array([row[2] for row in MASKED_ROWS])
    r, defined = pearson_arrays(x, y, mask)
    for i, (xs, ys, keep) in enumerate(MASKED_ROWS):
        chosen = [j for j, k in enumerate(keep) if k]
        expected = sps.pearsonr([xs[j] for j in chosen], [ys[j] for j in chosen]).statistic
        assert defined[i] and r[i] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    "x, y, mask",
    [
        ([1.0, 2.0, 3.0], [4.0, 4.0, 4.0], None),  # no variance in y
        ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [True, False, False]),  # one point
        ([5.0, 5.0, 1.0], [1.0, 2.0, 9.0], [True, True, False]),  # no variance among the masked
    ],
)
def test_the_array_kernel_leaves_r_undefined_without_two_points_or_variance(x, y, mask):
    _, defined = pearson_arrays(np.array(x), np.array(y), None if mask is None else np.array(mask))
    assert not defined


@pytest.mark.parametrize("x, y", CORRELATION_TABLE)
def test_the_sums_kernel_equals_scipy_in_floats_and_exact_integers(x, y):
    expected = sps.pearsonr(x, y).statistic
    xs, ys = [int(v * 100) for v in x], [int(round(v * 100)) for v in y]
    sums = (
        len(xs),
        sum(xs),
        sum(ys),
        sum(v * v for v in xs),
        sum(v * v for v in ys),
        sum(a * b for a, b in zip(xs, ys)),
    )
    assert float(pearson_from_sums(*sums)) == pytest.approx(sps.pearsonr(xs, ys).statistic, abs=1e-12)
    xf, yf = np.array(x, dtype=float), np.array(y, dtype=float)
    got = pearson_from_sums(len(xf), xf.sum(), yf.sum(), xf @ xf, yf @ yf, xf @ yf)
    assert float(got) == pytest.approx(expected, abs=1e-12)


def test_the_sums_kernel_is_nan_without_variance():
    assert np.isnan(pearson_from_sums(3, 6, 12, 14, 48, 24))  # y = 4, 4, 4


@pytest.mark.parametrize(
    "r, df, expected",
    [(0.5, 3, 0.5 * math.sqrt(3) / math.sqrt(0.75)), (-1.0, 4, -math.inf), (1.0, 1, math.inf), (0.0, 10, 0.0)],
)
def test_the_correlation_t_by_hand(r, df, expected):
    assert float(correlation_t(r, df)) == pytest.approx(expected)


@pytest.mark.parametrize(
    "values, mask",
    [
        ([[3.0, 1.0, 3.0, 2.0], [5.0, 5.0, 5.0, 1.0]], None),
        ([[3.0, 1.0, 3.0, 2.0], [5.0, 9.0, 5.0, 1.0]], [[True, True, True, False], [True, False, True, True]]),
    ],
)
def test_average_ranks_equal_scipys_rankdata_among_the_masked_cells(values, mask):
    array = np.array(values)
    keep = np.ones(array.shape, dtype=bool) if mask is None else np.array(mask)
    ranks = average_ranks(array, None if mask is None else keep)
    for row, row_keep, row_ranks in zip(array, keep, ranks):
        assert row_ranks[row_keep].tolist() == sps.rankdata(row[row_keep]).tolist()
        assert np.isfinite(row_ranks).all()


@pytest.mark.parametrize(
    "values, distinct, ranks",
    [
        ([3.0, 1.0, 3.0, 2.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.5]),
        ([5.0, 5.0, 5.0, 1.0], [1.0, 5.0], [1.0, 3.0]),
        ([7.0], [7.0], [1.0]),
        ([-1.5, 0.0, -1.5, 0.0, 0.0, 9.0], [-1.5, 0.0, 9.0], [1.5, 4.0, 6.0]),
    ],
)
@pytest.mark.parametrize("block", [1, 2, 1 << 20])  # ties cut by a block's end, or one block
def test_value_ranks_give_each_distinct_value_its_average_place(values, distinct, ranks, block):
    got_values, got_ranks = value_ranks(np.array(values), block=block)
    assert got_values.tolist() == distinct
    assert got_ranks.tolist() == ranks
    # every point's rank looked up is scipy's average rank
    looked_up = got_ranks[np.searchsorted(got_values, values)]
    assert looked_up.tolist() == sps.rankdata(values).tolist()


@pytest.mark.parametrize("block", [1, 3, 7, 1 << 20])
@pytest.mark.parametrize("seed", [0, 1])
def test_rank_correlation_read_a_block_at_a_time_is_scipys_spearman(block, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 12, 90).astype(float)  # many ties
    y = np.round(0.4 * x + rng.normal(0, 2, 90), 1)
    assert rank_correlation(x, y, block) == pytest.approx(sps.spearmanr(x, y).statistic, abs=1e-12)


@pytest.mark.parametrize("block", [5, 1 << 20])
def test_rank_correlation_over_files_is_the_one_in_memory(tmp_path, block):
    """Its sorted copy, distinct values and ranks made in a spill's files, their pages handed back
    between blocks: the same floats."""
    from bias_audit.storage.spill import Spill

    rng = np.random.default_rng(4)
    x = rng.integers(0, 30, 400).astype(float)
    y = np.round(0.2 * x + rng.normal(0, 2, 400), 2)
    in_files = rank_correlation(x, y, block, space=Spill(str(tmp_path)))
    assert in_files is not None and in_files == rank_correlation(x, y, block)


def test_rank_correlation_without_spread_or_points_is_none():
    assert rank_correlation(np.array([2.0, 2.0, 2.0]), np.array([1.0, 2.0, 3.0])) is None
    assert rank_correlation(np.zeros(0), np.zeros(0)) is None


@pytest.mark.parametrize("r, n, rank", [(0.3, 50, False), (-0.6, 12, True), (0.99, 5, False)])
def test_fishers_p_is_the_normal_tail_of_z_over_its_se(r, n, rank):
    se = math.sqrt((1 + r * r / 2 if rank else 1) / (n - 3))
    assert fisher_p(r, n, rank=rank) == pytest.approx(2 * sps.norm.sf(abs(math.atanh(r)) / se), rel=1e-12)
    assert fisher_p(1.0, n) == 0.0


@pytest.mark.parametrize(
    "values,size,levels,index",
    [
        ([5, 2, 5, 9, 2], 0, [2, 5, 9], [1, 0, 1, 2, 0]),
        ([3, 3, 3], 10, [3], [0, 0, 0]),  # a size past the values changes nothing
        ([0, 4, 1], 0, [0, 1, 4], [0, 2, 1]),
        ([], 5, [], []),
        ([-3, 7, -3], 0, [-3, 7], [0, 1, 0]),  # negative: sorted, not counted
        ([10**12, 5, 10**12], 0, [5, 10**12], [1, 0, 1]),  # a range far past the values: sorted
        ([2, 0, 1, 0], 0, [0, 1, 2], [2, 0, 1, 0]),  # already 0..k-1: their own places
        ([2, 0, 1, 0], 4, [0, 1, 2], [2, 0, 1, 0]),
    ],
)
def test_present_levels_are_numpys_unique_values_and_inverse(values, size, levels, index):
    got_levels, got_index = present_levels(np.array(values, dtype=np.int64), size)
    assert got_levels.tolist() == levels and got_index.tolist() == index
    if values:
        unique, inverse = np.unique(values, return_inverse=True)
        assert got_levels.tolist() == unique.tolist() and got_index.tolist() == inverse.tolist()
    # the table's counts: how often each level occurs, counted in plain Python
    table_levels, table_index, counts = level_table(np.array(values, dtype=np.int64), size)
    assert table_levels.tolist() == levels and table_index.tolist() == index
    assert counts.tolist() == [values.count(level) for level in levels]


def test_values_that_are_their_own_levels_are_not_copied():
    values = np.array([1, 0, 2, 2, 1], dtype=np.int32)
    assert present_levels(values)[1] is values  # a window's 32-bit column stays one array


@pytest.mark.parametrize("size", [0, 9])
def test_level_counts_taken_a_block_at_a_time_are_bincounts(size):
    values = np.random.default_rng(3).integers(0, 7, 2 * COUNT_BLOCK + 12_345).astype(np.int32)
    values[:5] = 0  # every level present and more rows than two blocks
    expected = np.bincount(values.astype(np.int64), minlength=size)
    assert level_counts(values, size).tolist() == expected.tolist()
    assert level_counts(values[:0], 4).tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize(
    ("bound", "expected"), [(0, np.int32), (2**31 - 1, np.int32), (2**31, np.int64), (10**12, np.int64)]
)
def test_keys_are_32_bit_while_they_fit(bound, expected):
    assert index_type(bound) is expected


@pytest.mark.parametrize(
    ("bound", "expected"),
    [(0, np.int8), (127, np.int8), (128, np.int16), (32_767, np.int16), (32_768, np.int32), (2**31, np.int64)],
)
def test_a_few_levels_fit_a_byte_from_the_smallest_type_asked(bound, expected):
    assert index_type(bound, np.int8) is expected
    assert np.iinfo(expected).max >= bound and np.iinfo(expected).min <= -1  # -1: no level


# (sorted column, start, stop) -> where start..stop-1 lie: (lo, hi)
SPAN_TABLE = [
    ([0, 0, 1, 1, 1, 3, 4], 1, 3, (2, 5)),  # sessions 1 and 2 (2 has no cells)
    ([0, 0, 1, 1, 1, 3, 4], 0, 1, (0, 2)),
    ([0, 0, 1, 1, 1, 3, 4], 4, 9, (6, 7)),
    ([0, 0, 1, 1, 1, 3, 4], 5, 9, (7, 7)),  # past the end: empty
    ([], 0, 2, (0, 0)),
]


@pytest.mark.parametrize("kind", [np.int8, np.int32, np.int64])
@pytest.mark.parametrize(("column", "start", "stop", "expected"), SPAN_TABLE)
def test_sorted_span_finds_the_rows_of_a_range_of_values_in_any_integer_type(column, start, stop, expected, kind):
    assert sorted_span(np.array(column, dtype=kind), start, stop) == expected


@pytest.mark.parametrize("cuts", [[], [7], [3, 3, 11], [1, 2, 3, 4, 5, 6, 20]], ids=["whole", "two", "empty", "many"])
def test_group_moments_merged_chunk_by_chunk_are_each_groups_mean_spread_and_r(cuts):
    """Groups 0..3 over 24 values cut into chunks (one chunk empty, groups missing from some);
    group 3 has one value, group 2 no spread in y. The oracle: Python's statistics module."""
    import statistics

    rng = np.random.default_rng(8)
    group = np.array([0, 1, 0, 2, 1, 0, 2, 1, 0, 1, 2, 0, 3, 1, 0, 2, 1, 0, 1, 2, 0, 1, 0, 1])
    x = np.round(rng.normal(5.0, 2.0, len(group)), 3) + 1e6  # far from zero: a raw sum of squares loses it
    y = np.where(group == 2, 4.0, np.round(rng.normal(0.0, 1.0, len(group)), 3))
    moments = GroupMoments(5)  # group 4: never seen
    for start, stop in zip([0, *cuts], [*cuts, len(group)]):
        moments.add(group[start:stop], x[start:stop], y[start:stop])
    for g in range(5):
        xs, ys = x[group == g].tolist(), y[group == g].tolist()
        assert moments.n[g] == len(xs)
        if not xs:
            assert moments.std_x(g) is None and moments.r(g) is None
            continue
        assert moments.mean_x[g] == pytest.approx(statistics.fmean(xs), abs=1e-9)
        if len(xs) < 2:
            assert moments.std_x(g) is None and moments.r(g) is None
            continue
        assert moments.std_x(g) == pytest.approx(statistics.stdev(xs), rel=1e-9)
        if g == 2:
            assert moments.r(g) is None  # y has no spread
        else:
            assert moments.r(g) == pytest.approx(statistics.correlation(xs, ys), abs=1e-9)
