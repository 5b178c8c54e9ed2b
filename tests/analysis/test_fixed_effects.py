"""Least squares with groups absorbed: group demeaning (both paths give the same exact means), and
the fit from indicator blocks held as indices, checked against the oracle of the same design as a
dense matrix with an explicit dummy column per group."""

from __future__ import annotations

import numpy as np
import pytest

from bias_audit.analysis.fixed_effects import (
    AbsorbedDesign,
    FitChunk,
    Indicators,
    absorbed_chunk_fits,
    absorbed_least_squares,
    chunk_residuals,
    demean_by_group,
    row_chunks,
    with_meat,
)

VALUES = np.array([[1.0, 10.0], [3.0, 20.0], [5.0, 5.0], [6.0, 6.0], [7.0, 7.0]])
EXPECTED = np.array([[-1.0, -5.0], [1.0, 5.0], [-1.0, -1.0], [0.0, 0.0], [1.0, 1.0]])  # group means 2|15, 6|6


def one_hot(index: np.ndarray, size: int) -> np.ndarray:
    """Indicator columns as a dense matrix (a row of zeros where the index is -1)."""
    out = np.zeros((len(index), size))
    on = index >= 0
    out[np.flatnonzero(on), index[on]] = 1.0
    return out


def dense(blocks: list, n: int) -> np.ndarray:
    return np.hstack(
        [
            one_hot(b.index, b.width) if isinstance(b, Indicators) else np.asarray(b, float).reshape(n, -1)
            for b in blocks
        ]
    )


def demeaned_by_loop(values: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, int]:
    """The oracle's demeaning: each column less its group's mean, group by group; and how many groups."""
    _, dense_group = np.unique(groups, return_inverse=True)
    means = np.array([values[dense_group == g].mean(axis=0) for g in range(dense_group.max() + 1)])
    return values - means[dense_group], len(means)


@pytest.mark.parametrize("order", [[0, 1, 2, 3, 4], [4, 2, 0, 3, 1]], ids=["session order", "shuffled"])
def test_each_column_loses_its_group_mean(order):
    groups = np.array([0, 0, 1, 1, 1])
    out = demean_by_group(VALUES[order], groups[order], 2)
    assert out.tolist() == EXPECTED[order].tolist()
    assert demean_by_group(VALUES[order, 0], groups[order], 2).tolist() == EXPECTED[order, 0].tolist()


def test_indicator_blocks_fit_as_their_dense_matrix_with_a_dummy_per_group():
    rng = np.random.default_rng(4)
    n, kinds = 500, 41
    group_of = rng.integers(0, kinds, n)
    groups = group_of * 3 + 1  # keys need not be dense
    model, reviewer = rng.integers(0, 4, n), rng.integers(0, 5, n)
    own = np.where(rng.random(n) < 0.2, reviewer, -1)  # reviewer x self-review: columns only on some rows
    term = rng.normal(size=n)
    y = rng.normal(size=n) + 0.4 * model - 0.3 * reviewer + 1.2 * (own >= 0) + 0.5 * term + 0.1 * group_of
    # 122 group keys: model's 4 levels are counted densely (488 <= 500 rows), the 5-level blocks as triplets
    blocks = [Indicators(model, 4), Indicators(reviewer, 5), Indicators(own, 5), term]
    fit = absorbed_least_squares(blocks, y, groups)
    own_blocks = [*blocks[:3], term.copy()]  # the chunk's own columns: demeaned in place
    [(_, residual_of_fit)] = chunk_residuals([FitChunk(own_blocks, y.copy(), groups)], fit.beta)

    x = dense(blocks, n)
    explicit = np.hstack([x, one_hot(group_of, kinds)])
    beta, *_ = np.linalg.lstsq(explicit, y, rcond=None)
    residual = y - explicit @ beta
    assert fit.df == n - np.linalg.matrix_rank(explicit)
    assert fit.sigma2 == pytest.approx(residual @ residual / fit.df, rel=1e-10)
    assert residual_of_fit == pytest.approx(residual, abs=1e-9)
    for contrast in (np.eye(15)[1] - np.eye(15)[0], np.eye(15)[9] + np.eye(15)[4] - np.eye(15)[5], np.eye(15)[14]):
        assert fit.contrast(contrast)[0] == pytest.approx(contrast @ beta[:15], abs=1e-9)
    means = np.array([x[group_of == g].mean(axis=0) for g in range(kinds)])
    v, values = rng.normal(size=15), rng.normal(size=len(group_of))
    given = values.copy()
    assert AbsorbedDesign(blocks, groups).subtract_times(given, v) is given  # in place: the residuals' own array
    assert given == pytest.approx(values - (x - means[group_of]) @ v, abs=1e-9)


@pytest.mark.parametrize(
    ("groups", "chunk_rows", "probe", "ranges"),
    [
        ([0, 0, 1, 1, 2, 2, 3, 3], 2, 2, [(0, 2), (2, 4), (4, 6), (6, 8)]),
        ([0, 0, 1, 1, 2, 2, 3, 3], 2, 8, [(0, 2), (2, 4), (4, 6), (6, 8)]),  # several cuts in one probe block
        ([0, 0, 1, 1, 2, 2, 3, 3], 3, 2, [(0, 4), (4, 8)]),  # a range ends at the first cut past its size
        ([0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5], 3, 4, [(0, 4), (4, 8), (8, 12)]),  # groups inside sessions
        ([0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5], 3, 3, [(0, 4), (4, 8), (8, 12)]),  # cuts need not be on a probe edge
        ([0, 0, 1, 1, 2], 2, 2, [(0, 2), (2, 4), (4, 5)]),
        ([0, 0, 0, 0, 1, 1, 1, 1, 2], 4, 2, [(0, 4), (4, 9)]),  # a short last range joins the one before
        ([3, 0, 2, 1, 4, 5], 1, 2, [(0, 4), (4, 5), (5, 6)]),  # no cut inside the out-of-order part
        ([5, 4, 3, 2, 1, 0], 1, 2, [(0, 6)]),
        ([0, 1, 2], 5, 2, [(0, 3)]),
    ],
)
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_rows_are_cut_into_ranges_that_split_no_group(groups, chunk_rows, probe, ranges, dtype):
    assert row_chunks(np.array(groups, dtype=dtype), chunk_rows, probe) == ranges


def session_ordered(rng, n: int):
    """Rows in session order, each session's rows interleaving its (session, model) groups."""
    session = np.sort(rng.integers(0, n // 5, n))
    model = rng.integers(0, 3, n)
    return session, session * 3 + model


@pytest.mark.parametrize("chunk_rows", [1, 7, 64, 499, 10_000])
def test_x_x_and_x_v_over_ranges_of_rows_are_the_dense_designs(chunk_rows):
    rng = np.random.default_rng(6)
    n = 500
    _, groups = session_ordered(rng, n)
    model, reviewer = rng.integers(0, 4, n), np.where(rng.random(n) < 0.9, rng.integers(0, 5, n), -1)
    blocks = [Indicators(model, 4), Indicators(reviewer, 5), rng.normal(size=(n, 2))]
    x = dense(blocks, n)
    demeaned, _ = demeaned_by_loop(x, groups)
    design = AbsorbedDesign(blocks, groups, chunk_rows)
    assert len(design.chunks) > 1 or chunk_rows >= n // 2
    assert design.gram() == pytest.approx(demeaned.T @ demeaned, abs=1e-9)
    v, values = rng.normal(size=11), rng.normal(size=n)
    assert design.subtract_times(values.copy(), v) == pytest.approx(values - demeaned @ v, abs=1e-9)


def test_indices_of_a_byte_whose_pair_keys_do_not_fit_one_give_the_dense_designs_x_x():
    """A fit's model, reviewer and position columns are a byte a row; a pair of blocks' keys
    (a * width_b + b) reach past 127 with 20 and 15 levels."""
    rng = np.random.default_rng(12)
    n = 600
    _, groups = session_ordered(rng, n)
    first, second = rng.integers(0, 20, n), np.where(rng.random(n) < 0.9, rng.integers(0, 15, n), -1)
    wide = [Indicators(first, 20), Indicators(second, 15)]
    byte = [Indicators(first.astype(np.int8), 20), Indicators(second.astype(np.int8), 15)]
    demeaned, _ = demeaned_by_loop(dense(wide, n), groups)
    for chunk_rows in (n, 64):
        assert AbsorbedDesign(byte, groups, chunk_rows).gram() == pytest.approx(demeaned.T @ demeaned, abs=1e-9)


@pytest.mark.parametrize("chunk_rows", [7, 10_000])
@pytest.mark.parametrize("groups_of", ["few groups", "many groups"])
def test_the_weighted_cross_product_is_the_dense_designs(chunk_rows, groups_of):
    """X' diag(e^2) X, the sandwich's middle, against the demeaned dense matrix; zero residuals on
    whole groups included. Few groups count densely, many as triplets."""
    rng = np.random.default_rng(11)
    n = 400
    session = np.sort(rng.integers(0, 8 if groups_of == "few groups" else 150, n))
    groups = session * 3 + rng.integers(0, 3, n)
    model, reviewer = rng.integers(0, 4, n), np.where(rng.random(n) < 0.9, rng.integers(0, 5, n), -1)
    blocks = [Indicators(model, 4), Indicators(reviewer, 5), rng.normal(size=(n, 2))]
    x = dense(blocks, n)
    demeaned, _ = demeaned_by_loop(x, groups)
    residual = rng.normal(size=n)
    residual[groups == groups[0]] = 0.0
    design = AbsorbedDesign(blocks, groups, chunk_rows)
    expected = demeaned.T @ (demeaned * (residual**2)[:, None])
    assert design.gram(residual) == pytest.approx(expected, abs=1e-9)
    assert np.abs(expected).max() > 1.0


def test_a_robust_standard_error_is_hc1_of_the_dense_design():
    """White's sandwich with the HC1 factor n / df, written out row by row from the dense design."""
    rng = np.random.default_rng(12)
    n = 300
    session, groups = session_ordered(rng, n)
    model, reviewer = rng.integers(0, 4, n), rng.integers(0, 5, n)
    noise = rng.normal(size=n) * (1.0 + reviewer)  # reviewers differ in noise
    y = noise + 0.3 * model - 0.2 * reviewer + 0.05 * session
    blocks = [Indicators(model, 4), Indicators(reviewer, 5)]
    lean = absorbed_least_squares(blocks, y, groups)  # sigma2 from the normal equations, no residuals
    # the sandwich's middle from a second pass, the rows in one chunk or a few of whole groups
    edges = [0, *np.searchsorted(session, session[[70, 150, 230]]).tolist(), n]  # between sessions
    parts = [slice(a, b) for a, b in zip(edges, edges[1:])]
    fit = with_meat(lean, [FitChunk(blocks, y.copy(), groups)])
    by_parts = with_meat(
        lean, [FitChunk([Indicators(model[r], 4), Indicators(reviewer[r], 5)], y[r].copy(), groups[r]) for r in parts]
    )
    x = dense(blocks, n)
    demeaned, _ = demeaned_by_loop(x, groups)
    y_demeaned, n_groups = demeaned_by_loop(y, groups)
    pinv = np.linalg.pinv(demeaned.T @ demeaned, rcond=1e-10)
    residual = y_demeaned - demeaned @ (pinv @ demeaned.T @ y_demeaned)
    df = n - np.linalg.matrix_rank(demeaned) - n_groups
    contrast = np.eye(9)[2] - np.eye(9)[0]
    leverage = demeaned @ (pinv @ contrast)
    robust = np.sqrt(sum((leverage[i] * residual[i]) ** 2 for i in range(n)) * n / df)
    plain = np.sqrt(contrast @ pinv @ contrast * (residual @ residual) / df)
    estimate, se, *_ = fit.robust_contrast(contrast)
    assert se == pytest.approx(robust, rel=1e-9)
    assert by_parts.robust_contrast(contrast)[1] == pytest.approx(robust, rel=1e-9)
    assert fit.contrast(contrast)[1] == pytest.approx(plain, rel=1e-9)
    assert abs(robust / plain - 1.0) > 0.01  # the two differ here: the test tells them apart
    assert lean.meat is None and fit.sigma2 == lean.sigma2
    with pytest.raises(ValueError, match="with_meat"):
        lean.robust_contrast(contrast)


def test_a_fit_over_ranges_of_rows_is_the_fit_over_all_of_them():
    rng = np.random.default_rng(8)
    n = 600
    session, groups = session_ordered(rng, n)
    model, reviewer = rng.integers(0, 4, n), rng.integers(0, 5, n)
    y = rng.normal(size=n) + 0.3 * model - 0.2 * reviewer + 0.05 * session
    blocks = [Indicators(model, 4), Indicators(reviewer, 5), rng.normal(size=n)]
    whole, ranged = (absorbed_least_squares(blocks, y, groups, chunk_rows=rows) for rows in (n, 50))
    assert len(AbsorbedDesign(blocks, groups, 50).chunks) >= 8 and len(AbsorbedDesign(blocks, groups, n).chunks) == 1
    assert ranged.df == whole.df and ranged.sigma2 == pytest.approx(whole.sigma2, rel=1e-12)
    assert ranged.beta == pytest.approx(whole.beta, abs=1e-12)
    assert ranged.contrast(np.eye(10)[1] - np.eye(10)[0]) == pytest.approx(
        whole.contrast(np.eye(10)[1] - np.eye(10)[0]), rel=1e-10
    )


def test_each_fit_read_from_a_larger_designs_sums_is_that_fit_alone_to_the_last_bit():
    """Length control and the position fit share the model and reviewer blocks and the rows: one
    pass makes both. Each subset's fit must be the floats absorbed_least_squares makes for it."""
    rng = np.random.default_rng(21)
    n = 900
    session, groups = session_ordered(rng, n)
    model, reviewer, position = rng.integers(0, 4, n), rng.integers(0, 5, n), rng.integers(0, 3, n)
    position[::13] = -1  # an indicator block without a column on every row
    term = np.tanh(rng.normal(size=n))
    y = rng.normal(size=n) + 0.3 * model - 0.2 * reviewer + 0.4 * term - 0.25 * (position == 0) + 0.05 * session
    blocks = [Indicators(model, 4), Indicators(reviewer, 5), term, Indicators(position, 3)]
    subsets = [(0, 1, 2), (0, 1, 3), (3, 1), (2,)]
    together = absorbed_chunk_fits([FitChunk(blocks, y.copy(), groups)], subsets)
    for subset, fit in zip(subsets, together):
        alone = absorbed_least_squares([blocks[b] for b in subset], y, groups)
        assert fit is not None and alone is not None
        for name in ("beta", "xtx", "xtx_pinv"):
            assert np.array_equal(getattr(fit, name), getattr(alone, name)), (subset, name)
        assert (fit.sigma2, fit.df, fit.n) == (alone.sigma2, alone.df, alone.n)
    # and the oracle: the position fit from the dense design with a dummy per session
    x = dense([blocks[b] for b in subsets[1]], n)
    with_dummies = np.hstack([x, one_hot(groups, int(groups.max()) + 1)])
    coefficients = np.linalg.lstsq(with_dummies, y, rcond=None)[0]
    contrast = np.zeros(12)
    contrast[10], contrast[9] = 1.0, -1.0  # position 1 against position 0
    assert together[1].contrast(contrast)[0] == pytest.approx(coefficients[10] - coefficients[9], abs=1e-9)
    # the caller's own copies, demeaned in place, give the same fits
    own = absorbed_chunk_fits(
        [FitChunk([*blocks[:2], term.copy(), blocks[3]], y.copy(), groups)], subsets[:2], overwrite=True
    )
    assert all(np.array_equal(a.beta, b.beta) for a, b in zip(own, together[:2]))
    assert absorbed_chunk_fits([FitChunk(blocks, y[:0], groups[:0])], subsets) == [None] * 4


def test_a_dense_matrix_is_one_block():
    rng = np.random.default_rng(5)
    groups, x, y = np.repeat(np.arange(30), 4), rng.normal(size=(120, 3)), rng.normal(size=120)
    as_matrix, as_blocks = absorbed_least_squares(x, y, groups), absorbed_least_squares([x[:, :2], x[:, 2]], y, groups)
    assert as_matrix.beta == pytest.approx(as_blocks.beta, abs=1e-12) and as_matrix.df == as_blocks.df


def test_the_residual_df_counts_the_null_directions_of_a_large_crossed_design():
    """10,000 sessions, each scoring 5 models by 4 of 5 reviewers at 5 shuffled positions: three
    indicator blocks, each summing to one in every row, so the session effect takes one direction
    of each and the design's rank is 15 - 3 = 12. X'X's eigenvalues reach 5e4 and rounding leaves
    its null directions near 1e-8, which a cut at machine epsilon would count as rank."""
    rng = np.random.default_rng(1)
    sessions, k = 10_000, 5
    session = np.repeat(np.arange(sessions), k * 4)
    model = np.tile(np.repeat(np.arange(k), 4), sessions)
    reviewer = np.concatenate([rng.permutation(k)[:4] for _ in range(sessions * k)])
    position = np.concatenate([np.repeat(rng.permutation(k), 4) for _ in range(sessions)])
    y = rng.normal(size=len(session)) + 0.3 * (position == 0)
    fit = absorbed_least_squares([Indicators(model, k), Indicators(reviewer, k), Indicators(position, k)], y, session)
    assert fit is not None
    assert fit.df == 200_000 - 12 - 10_000


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("chunk_rows", [7, 50, 10_000])
@pytest.mark.parametrize("columns", [None, 2])
def test_demeaning_over_ranges_of_rows_in_place_or_not_is_the_loops(overwrite, chunk_rows, columns):
    rng = np.random.default_rng(12)
    session, groups = session_ordered(rng, 300)
    values = rng.normal(size=300 if columns is None else (300, columns))
    wanted, _ = demeaned_by_loop(values.reshape(300, -1), groups)
    given = values.copy()
    out = demean_by_group(
        given, groups, int(groups.max()) + 1, overwrite=overwrite, chunks=row_chunks(groups, chunk_rows)
    )
    assert out.shape == values.shape
    np.testing.assert_allclose(out.reshape(300, -1), wanted, rtol=0, atol=1e-12)
    assert (out is given) == overwrite  # in place only when told; else the caller's values are kept
    if not overwrite:
        assert np.array_equal(given, values)


def test_a_fit_that_may_overwrite_its_inputs_is_the_same_fit():
    rng = np.random.default_rng(13)
    session, groups = session_ordered(rng, 400)
    model = rng.integers(0, 4, 400)
    y, term = rng.normal(size=400) + 0.3 * model, rng.normal(size=400)
    kept = absorbed_least_squares([Indicators(model, 4), term], y, groups, chunk_rows=60)
    y_own, term_own = y.copy(), term.copy()
    spent = absorbed_least_squares([Indicators(model, 4), term_own], y_own, groups, chunk_rows=60, overwrite=True)
    assert spent.beta.tolist() == kept.beta.tolist() and spent.sigma2 == kept.sigma2
    assert not np.array_equal(y_own, y)  # the copy was used as the fit's own memory


@pytest.mark.parametrize("cuts", [[], [0, 150], [40, 41, 300, 499]], ids=["one chunk", "an empty chunk", "four"])
def test_a_fit_over_chunks_of_whole_groups_is_the_dense_matrix_with_a_dummy_per_group(cuts):
    """Rows in group order cut into chunks at group boundaries (an empty chunk skipped): each
    subset's fit is the oracle's, the design as a dense matrix with a dummy per group."""
    rng = np.random.default_rng(12)
    n, kinds = 600, 50
    group_of = np.sort(rng.integers(0, kinds, n))
    model, reviewer, term = rng.integers(0, 4, n), rng.integers(0, 5, n), rng.normal(size=n)
    y = rng.normal(size=n) + 0.4 * model - 0.3 * reviewer + 0.5 * term + 0.1 * group_of
    edges = [0, *(int(np.searchsorted(group_of, group_of[cut])) for cut in cuts), n]

    def chunks():
        for start, stop in zip(edges, edges[1:]):
            rows = slice(start, stop)
            blocks = [Indicators(model[rows], 4), Indicators(reviewer[rows], 5), term[rows].copy()]
            yield FitChunk(blocks, y[rows].copy(), group_of[rows] * 2 + 7)  # keys need not be dense

    subsets = [(0, 1, 2), (0, 2)]
    fits = absorbed_chunk_fits(chunks(), subsets, overwrite=True)
    whole = dense([Indicators(model, 4), Indicators(reviewer, 5), term], n)
    for subset, fit, columns in zip(subsets, fits, ([*range(10)], [0, 1, 2, 3, 9])):
        explicit = np.hstack([whole[:, columns], one_hot(group_of, kinds)])
        beta, *_ = np.linalg.lstsq(explicit, y, rcond=None)
        residual = y - explicit @ beta
        assert fit.n == n and fit.df == n - np.linalg.matrix_rank(explicit)
        assert fit.sigma2 == pytest.approx(residual @ residual / fit.df, rel=1e-10)
        width = len(columns)
        for contrast in (np.eye(width)[1] - np.eye(width)[0], np.eye(width)[width - 1]):
            assert fit.contrast(contrast)[0] == pytest.approx(contrast @ beta[:width], abs=1e-9)
    assert absorbed_chunk_fits(iter([]), subsets) == [None, None]
