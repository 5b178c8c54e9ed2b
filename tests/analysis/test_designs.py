"""Sessions of a batch with the same design share one normal matrix, pseudo-inverse and set of
links between reviewers (analysis.designs): the floats must be exactly those of fitting every
session on its own."""

import numpy as np

from bias_audit.analysis.designs import design_index
from bias_audit.analysis.reviewer_offset import reviewer_effects
from bias_audit.analysis.session_noise import two_way_fit


def _normal(used: np.ndarray) -> np.ndarray:
    """The two-way fit's normal matrix of each session, a function of its design alone."""
    w = used.astype(np.float64)
    sessions, reviewers, models = w.shape
    size = reviewers + models
    normal = np.zeros((sessions, size, size))
    for b in range(sessions):
        normal[b, :reviewers, reviewers:] = w[b]
        normal[b, reviewers:, :reviewers] = w[b].T
        normal[b, range(reviewers), range(reviewers)] = w[b].sum(1)
        normal[b, range(reviewers, size), range(reviewers, size)] = w[b].sum(0)
    return normal


def _batch(rng: np.random.Generator, sessions: int, designs: int, shape=(5, 5)) -> tuple[np.ndarray, np.ndarray]:
    """Scores and designs: `designs` distinct patterns (self-reviews and abstentions left out),
    dealt to the sessions in a random order."""
    patterns = rng.random((designs, *shape)) > 0.25
    used = patterns[rng.integers(0, designs, sessions)]
    return rng.integers(1, 11, (sessions, *shape)).astype(np.float64), used


def _distinct_oracle(used: np.ndarray) -> tuple[list[int], list[int]]:
    """(first session of each design in order of first appearance, each session's design number)."""
    seen: dict[bytes, int] = {}
    first, which = [], []
    for b, pattern in enumerate(used):
        key = pattern.tobytes()
        if key not in seen:
            seen[key] = len(seen)
            first.append(b)
        which.append(seen[key])
    return first, which


def test_design_index_groups_the_sessions_of_each_design():
    """Small designs (one integer key a session) and large ones (more than 64 cells), against
    a dictionary of each session's pattern; the numbering may differ, the grouping may not."""
    rng = np.random.default_rng(11)
    for shape in ((5, 5), (8, 8), (9, 8), (3, 40)):
        for designs in (1, 2, 7):
            _, used = _batch(rng, 60, designs, shape=shape)
            first, which = design_index(used)
            expected_first, expected_which = _distinct_oracle(used)
            assert len(first) == len(expected_first) and which.shape == (60,)
            assert np.array_equal(used[first][which], used)  # each session's design is its own
            relabel = {int(w): e for w, e in zip(which, expected_which)}
            assert len(set(relabel.values())) == len(relabel)
            assert all(relabel[int(w)] == e for w, e in zip(which, expected_which))
    assert [a.tolist() for a in design_index(np.ones((1, 3, 3), dtype=bool))] == [[0], [0]]
    assert [a.tolist() for a in design_index(np.ones((0, 3, 3), dtype=bool))] == [[], []]


def test_the_fit_of_a_batch_solves_each_sessions_normal_equations():
    """Independent of how the designs are shared: each session's normal matrix built cell by
    cell, its pseudo-inverse from numpy, and effects that solve the normal equations."""
    rng = np.random.default_rng(12)
    for shape in ((5, 5), (9, 8)):
        score, used = _batch(rng, 50, 4, shape=shape)
        fit = two_way_fit(score, used)
        normal = _normal(used)
        assert np.array_equal(fit.normal, normal)
        assert np.allclose(fit.pinv, np.linalg.pinv(normal, hermitian=True), atol=1e-10)
        reviewers = shape[0]
        w = used.astype(np.float64)
        rhs = np.concatenate([(score * w).sum(2), (score * w).sum(1)], axis=1)
        theta = np.concatenate([fit.reviewer, fit.candidate], axis=1)
        assert np.allclose(np.einsum("bij,bj->bi", normal, theta), rhs, atol=1e-9)
        assert np.array_equal(fit.df, w.sum((1, 2)) - np.linalg.matrix_rank(normal, hermitian=True))
        assert fit.reviewer.shape == (50, reviewers)


def test_the_fits_of_a_batch_equal_each_sessions_fit_on_its_own():
    """The two-way fit and the reviewers' effects of a batch with shared designs, against each
    session fitted alone (a batch of one decomposes its own matrix)."""
    rng = np.random.default_rng(13)
    score, used = _batch(rng, 40, 3, shape=(4, 6))
    fit = two_way_fit(score, used)
    effects = reviewer_effects(score, used)
    for b in range(len(score)):
        alone = two_way_fit(score[b : b + 1], used[b : b + 1])
        assert fit.rss[b] == alone.rss[0] and fit.df[b] == alone.df[0]
        assert np.array_equal(fit.reviewer[b], alone.reviewer[0]) and np.array_equal(fit.pinv[b], alone.pinv[0])
        assert np.array_equal(effects[b], reviewer_effects(score[b : b + 1], used[b : b + 1])[0], equal_nan=True)


def test_designs_that_differ_in_one_late_cell_are_told_apart():
    """The packed key's last byte matters: designs alike but for their last cell."""
    for shape in ((5, 5), (9, 8)):
        base = np.ones(shape, dtype=bool)
        late = base.copy()
        late[-1, -1] = False
        used = np.stack([base, late, base, late, late])
        first, which = design_index(used)
        assert len(first) == 2 and np.array_equal(used[first][which], used)


def test_a_batch_of_linked_and_unlinked_designs_centres_each_session_by_its_own_links():
    """Sessions whose reviewers form two unlinked pairs (by hand: 1, -1, 1, -1 and NaN for a
    reviewer who scored nothing) dealt among complete sessions: each is centred by its own links."""
    pairs = np.zeros((5, 4), dtype=bool)
    pair_score = np.zeros((5, 4))
    for r, m, y in [(0, 0, 8), (0, 1, 6), (1, 0, 6), (1, 1, 4), (2, 2, 5), (2, 3, 5), (3, 2, 2), (3, 3, 4)]:
        pair_score[r, m], pairs[r, m] = y, True
    rng = np.random.default_rng(14)
    kinds = rng.integers(0, 2, 30)
    kinds[:2] = [0, 1]
    used = np.stack([pairs if kind else np.ones((5, 4), dtype=bool) for kind in kinds])
    score = np.stack([pair_score if kind else rng.integers(1, 11, (5, 4)).astype(np.float64) for kind in kinds])
    effects = reviewer_effects(score, used)
    for b in np.flatnonzero(kinds):
        assert np.allclose(effects[b, :4], [1.0, -1.0, 1.0, -1.0], atol=1e-12) and np.isnan(effects[b, 4])
    for b in np.flatnonzero(kinds == 0):
        assert abs(effects[b].sum()) < 1e-9  # one group: centred on the council's mean
