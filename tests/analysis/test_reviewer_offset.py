"""The median of the other reviewers, against statistics.median over the same lists."""

import statistics

import numpy as np
import pytest

from bias_audit.analysis.reviewer_offset import MEDIAN_ROWS, median_of_others, offsets_from_effects, reviewer_effects

nan = float("nan")


def oracle(row):
    out = []
    for i, value in enumerate(row):
        others = [v for j, v in enumerate(row) if j != i and v == v]
        out.append(statistics.median(others) if value == value and others else nan)
    return out


@pytest.mark.parametrize(
    "row,expected",
    [
        ([1.0, 2.0, 3.0, 10.0], [3.0, 3.0, 2.0, 2.0]),  # others of 1: {2, 3, 10} -> 3
        ([0.75, 0.75, 0.75, -2.25], [0.75, 0.75, 0.75, 0.75]),  # one harsh reviewer moves no median
        ([2.0, -2.0], [-2.0, 2.0]),  # two reviewers: the other one
        ([1.0, nan, 4.0, 7.0], [5.5, nan, 4.0, 2.5]),  # an unmeasured reviewer is no one's peer
        ([3.0, nan, nan], [nan, nan, nan]),  # nobody to compare with
        ([nan, nan], [nan, nan]),
    ],
)
def test_median_of_the_others_by_hand(row, expected):
    got = median_of_others(np.array([row]))[0]
    np.testing.assert_array_equal(got, np.array(expected))
    np.testing.assert_array_equal(got, np.array(oracle(row)))


def test_median_of_the_others_equals_statistics_median_on_random_rows():
    rng = np.random.default_rng(7)
    values = rng.normal(size=(400, 7)).round(2)  # rounding makes ties
    values[rng.random(values.shape) < 0.25] = nan
    got = median_of_others(values)
    expected = np.array([oracle(list(row)) for row in values])
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12, equal_nan=True)


def test_rows_past_a_block_are_each_their_own_rows_median():
    """Past MEDIAN_ROWS rows the rows are sorted a block at a time on the cores: each row's
    answer (its median of the others, and its offsets) must still be its own, across the blocks' seams."""
    rng = np.random.default_rng(11)
    values = rng.normal(size=(2 * MEDIAN_ROWS + 500, 5)).round(2)
    values[rng.random(values.shape) < 0.2] = nan
    got = median_of_others(values)
    seams = [0, MEDIAN_ROWS - 1, MEDIAN_ROWS, 2 * MEDIAN_ROWS - 1, 2 * MEDIAN_ROWS, len(values) - 1]
    rows = sorted({*seams, *rng.integers(0, len(values), 300).tolist()})
    expected = np.array([oracle(list(values[row])) for row in rows])
    np.testing.assert_allclose(got[rows], expected, rtol=0, atol=1e-12, equal_nan=True)
    offsets = offsets_from_effects(values.copy())
    by_hand = values[rows] - expected
    np.testing.assert_allclose(
        offsets[rows], np.where(np.abs(by_hand) < 1e-9, 0.0, by_hand), atol=1e-12, equal_nan=True
    )


def test_a_harsh_reviewer_leaves_its_peers_at_zero():
    # Effects of four reviewers when R4 scores 3 points below three who agree: +0.75 each, -2.25.
    offsets = offsets_from_effects(np.array([[0.75, 0.75, 0.75, -2.25]]))[0]
    np.testing.assert_allclose(offsets, [0.0, 0.0, 0.0, -3.0])


def test_the_effects_of_two_unlinked_groups_of_reviewers_are_each_centred():
    """R1, R2 score A, B and R3, R4 score C, D: nothing links the two pairs, so each pair's
    effects are relative to each other alone. By hand: R1 - R2 = ((8-6) + (6-4)) / 2 = 2 and
    R3 - R4 = ((5-2) + (5-4)) / 2 = 2, each pair centred on 0; R5 scored nothing: NaN."""
    score = np.zeros((1, 5, 4))
    used = np.zeros((1, 5, 4), dtype=bool)
    for r, m, y in [(0, 0, 8), (0, 1, 6), (1, 0, 6), (1, 1, 4), (2, 2, 5), (2, 3, 5), (3, 2, 2), (3, 3, 4)]:
        score[0, r, m], used[0, r, m] = y, True
    effects = reviewer_effects(score, used)[0]
    assert effects[:4] == pytest.approx([1.0, -1.0, 1.0, -1.0], abs=1e-12)
    assert np.isnan(effects[4])


def test_reviewers_linked_through_a_chain_of_shared_answers_are_centred_together():
    """R1 scores A, B; R2 B, C; R3 C, D; R4 D, E: R1 and R4 share nothing, yet the chain links
    them, so all four effects are one group's, centred together: the least-squares fit of
    score = reviewer + answer written out as a dense design."""
    cells = [(0, 0, 9), (0, 1, 7), (1, 1, 6), (1, 2, 5), (2, 2, 8), (2, 3, 4), (3, 3, 3), (3, 4, 6)]
    score = np.zeros((1, 4, 5))
    used = np.zeros((1, 4, 5), dtype=bool)
    design = np.zeros((len(cells), 9))
    for row, (r, m, y) in enumerate(cells):
        score[0, r, m], used[0, r, m] = y, True
        design[row, r], design[row, 4 + m] = 1.0, 1.0
    coefficients, *_ = np.linalg.lstsq(design, np.array([y for *_, y in cells], dtype=float), rcond=None)
    expected = coefficients[:4] - coefficients[:4].mean()  # the reviewer differences are identified
    assert reviewer_effects(score, used)[0] == pytest.approx(expected, abs=1e-9)
    assert abs(expected[0] - expected[3]) > 0.5


def test_offsets_are_made_in_the_effects_own_array():
    """No second array a window's sessions long: the offsets replace the effects they come from.
    By hand, row 2: 1 - median(-1, 0), -1 - median(1, 0), 0 - median(1, -1)."""
    effects = np.array([[0.75, 0.75, 0.75, -2.25], [1.0, nan, -1.0, 0.0]])
    offsets = offsets_from_effects(effects)
    assert offsets is effects
    np.testing.assert_allclose(offsets, [[0.0, 0.0, 0.0, -3.0], [1.5, nan, -1.5, 0.0]], equal_nan=True)
