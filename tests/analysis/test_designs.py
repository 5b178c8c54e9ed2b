"""Sessions of a batch with the same design share one eigendecomposition (analysis.designs):
the floats must be exactly those of decomposing every session's matrix."""

import numpy as np

from bias_audit.analysis.designs import eigh_per_design
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


def test_shared_designs_give_every_sessions_own_decomposition_exactly():
    rng = np.random.default_rng(11)
    for designs in (1, 2, 7):
        _, used = _batch(rng, 60, designs)
        matrices = _normal(used)
        values, vectors = eigh_per_design(matrices, used)
        expected_values, expected_vectors = np.linalg.eigh(matrices)
        assert np.array_equal(values, expected_values) and np.array_equal(vectors, expected_vectors)


def test_a_batch_of_distinct_designs_and_a_batch_of_one_are_decomposed_as_given():
    rng = np.random.default_rng(12)
    used = rng.random((6, 5, 5)) > 0.3
    while len({u.tobytes() for u in used}) < 6:
        used = rng.random((6, 5, 5)) > 0.3
    for batch in (used, used[:1]):
        values, vectors = eigh_per_design(_normal(batch), batch)
        expected_values, expected_vectors = np.linalg.eigh(_normal(batch))
        assert np.array_equal(values, expected_values) and np.array_equal(vectors, expected_vectors)


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
