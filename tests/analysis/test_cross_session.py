"""Cross-session metrics: exact values on hand-built windows, and independent oracles
(explicit dummy regression, the krippendorff package, scipy) on random ones."""

from __future__ import annotations

import dataclasses

import krippendorff
import numpy as np
import pytest
from scipy import stats

from bias_audit.analysis.agreement import alpha_interval_of_sums, krippendorff_alpha_interval, position_consistency
from bias_audit.analysis.alerts import _z, robust_location
from bias_audit.analysis.cross_session import (
    BOOTSTRAP_CLUSTERS,
    ClusterBootstrap,
    WindowThresholds,
    chi_square_independence,
    cluster_bootstrap_ci,
    length_correlation,
    length_fit,
    randomization_balance,
    reviewer_profiles,
    session_length_sums,
)
from bias_audit.analysis.digest import SessionDigest
from bias_audit.analysis.fixed_effects import absorbed_least_squares
from bias_audit.analysis.stats import average_ranks, fisher_ci, welch
from bias_audit.analysis.tenant_report import tenant_report
from bias_audit.analysis.trends import change_points
from bias_audit.analysis.window_cells import SESSIONS_PER_FIT, window_cells
from tests.analysis.test_fixed_effects import one_hot
from tests.simulate import Corpus

NAMES = ("a", "b", "c")


def digest(session: int, cells, *, lengths=(100.0, 200.0, 300.0), models=NAMES, reviewers=NAMES) -> SessionDigest:
    """cells: (reviewer, model, position, score in points 1-10, self)."""
    return SessionDigest.from_cells(
        tuple((r, m, p, (score - 1.0) / 9.0, own) for r, m, p, score, own in cells),
        session_id=f"s{session}",
        tenant_id="t",
        ts_ms=1_700_000_000_000 + session * 60_000,
        trace_id=None,
        config_version=None,
        reviewers=reviewers,
        models=models,
        lengths=lengths,
        length_unit="words",
    )


def test_session_offsets_of_a_three_member_council():
    # a scores b=6, c=6; b scores a=8, c=7; c scores a=9, b=7; a also scores itself 10 (not counted)
    window = window_cells(
        [
            digest(
                0,
                [
                    (0, 1, 0, 6, False),
                    (0, 2, 1, 6, False),
                    (1, 0, 0, 8, False),
                    (1, 2, 1, 7, False),
                    (2, 0, 0, 9, False),
                    (2, 1, 1, 7, False),
                    (0, 0, 2, 10, True),
                ],
            )
        ]
    )
    offsets = window.session_offsets[0]
    # With two others the median is their mean, so the offsets are the leave-one-out ones:
    # a: (6 - 7) on b and (6 - 7) on c -> -1; b: (8 - 9) and (7 - 6) -> 0; c: (9 - 8) and (7 - 6) -> +1
    assert offsets.tolist() == pytest.approx([-1.0, 0.0, 1.0])
    # the same council among 300 names a window has seen: each session's names are numbered by sorting
    names = [f"n{i}" for i in range(300)]
    sparse = dataclasses.replace(
        window,
        reviewer=window.reviewer.astype(np.int64) * 100,
        model=window.model.astype(np.int64) * 100,
        reviewers=names,
        models=names,
    )
    assert sparse.session_offsets[0, [0, 100, 200]].tolist() == pytest.approx([-1.0, 0.0, 1.0])
    assert np.isnan(np.delete(sparse.session_offsets[0], [0, 100, 200])).all()


def test_pooled_length_correlation_matches_scipy_and_fisher():
    digests = Corpus(sessions=30, seed=4, length_slope=0.4).digests()
    window = window_cells(digests)
    _, x, y = window.length_points
    result = length_correlation(window, WindowThresholds(bootstrap_replicates=200))
    r = stats.pearsonr(x, y).statistic
    assert result.point_estimate == pytest.approx(r, abs=1e-4)
    lo, hi = fisher_ci(r, len(x))
    assert (result.ci_lower, result.ci_upper) == pytest.approx((lo, hi), abs=1e-4)
    assert result.sample_size == 30 * 5 and result.sessions == 30
    # the cluster bootstrap interval brackets the estimate
    assert result.bootstrap_ci_lower < result.point_estimate < result.bootstrap_ci_upper
    assert result.flagged


@pytest.mark.parametrize("sessions", [BOOTSTRAP_CLUSTERS, 3 * BOOTSTRAP_CLUSTERS])
def test_the_cluster_bootstrap_of_independent_points_is_fishers_interval(sessions):
    """One point a session, drawn from a bivariate normal with rho 0.3: the points are independent,
    so the bootstrap's percentile interval is Fisher's z interval (scipy's pearsonr) up to Monte
    Carlo error, whether the sessions are resampled one by one or dealt into clusters."""
    rng = np.random.default_rng(7)
    x, y = rng.multivariate_normal([0.0, 0.0], [[1.0, 0.3], [0.3, 1.0]], sessions).T
    per_session = np.column_stack([np.ones(sessions), x, y, x * x, y * y, x * y])
    got = cluster_bootstrap_ci(per_session, 1000, 11)
    want = stats.pearsonr(x, y).confidence_interval(0.95)
    assert got is not None
    assert got == pytest.approx((want.low, want.high), abs=0.0025)


@pytest.mark.parametrize("sessions", [500, 3 * BOOTSTRAP_CLUSTERS])
def test_a_bootstrap_plan_gives_each_set_of_points_the_draws_of_a_fresh_one(sessions):
    """The finding drivers test several sets of points on the same sessions with one plan: each
    interval must be the one a plan made for that set alone would give, to the last bit."""
    rng = np.random.default_rng(8)
    sets = []
    for rho in (0.3, -0.1, 0.0):
        x, y = rng.multivariate_normal([0.0, 0.0], [[1.0, rho], [rho, 1.0]], sessions).T
        sets.append(np.column_stack([np.ones(sessions), x, y, x * x, y * y, x * y]))
    shared = ClusterBootstrap(sessions, 300, 5, keep_draws=True)
    got = [shared.interval(shared.grouped(points)) for points in sets]
    assert got == [cluster_bootstrap_ci(points, 300, 5) for points in sets]
    assert shared.interval(shared.grouped(sets[0])) == got[0]
    assert len(set(got)) == 3 and got[0][0] > 0.2


def test_a_plan_summing_a_long_windows_sessions_into_its_clusters_gives_the_per_session_interval():
    """Past BOOTSTRAP_CLUSTERS sessions a plan adds each session's length sums into its cluster as
    they are made: the interval is the one a plan given each session's row gives, to the last bit."""
    cells = window_cells(Corpus(sessions=BOOTSTRAP_CLUSTERS + 500, models=3, seed=11, length_slope=0.4).digests())
    plan = ClusterBootstrap(cells.sessions, 200, 5)
    sums = plan.sums(cells)
    assert sums.shape == (BOOTSTRAP_CLUSTERS, 6)
    got = plan.interval(sums)
    assert got is not None and got[0] > 0
    assert got == cluster_bootstrap_ci(session_length_sums(cells), 200, 5)


def test_below_ten_sessions_every_metric_is_collecting_data():
    report = tenant_report(Corpus(sessions=9, seed=1, reviewer_offsets={0: -3.0}).digests())
    assert report.confidence == "insufficient"
    assert report.length_correlation.status == "collecting data" and report.length_correlation.point_estimate is None
    assert report.position.status == "collecting data"
    assert all(p.offset.status == "collecting data" and p.offset.point_estimate is None for p in report.reviewers)
    assert report.flags == []


@pytest.mark.parametrize(
    ("sessions", "tier"), [(10, "preliminary"), (19, "preliminary"), (20, "moderate"), (49, "moderate"), (50, "high")]
)
def test_confidence_tiers_count_sessions(sessions, tier):
    assert tenant_report(Corpus(sessions=sessions, seed=2).digests()).confidence == tier


def test_absorbed_least_squares_equals_explicit_session_dummies():
    rng = np.random.default_rng(0)
    n, groups = 300, 40
    group = rng.integers(0, groups, n)
    model = rng.integers(0, 4, n)
    y = rng.normal(size=n) + model * 0.3 + group * 0.05
    design = one_hot(model, 4)[:, 1:]  # drop one level: the explicit fit below has group dummies
    fit = absorbed_least_squares(design, y, group)
    explicit = np.hstack([design, one_hot(group, groups)])
    beta, *_ = np.linalg.lstsq(explicit, y, rcond=None)
    assert fit.beta == pytest.approx(beta[:3], abs=1e-9)
    residual = y - explicit @ beta
    df = n - np.linalg.matrix_rank(explicit)
    assert fit.df == df
    assert fit.sigma2 == pytest.approx(residual @ residual / df)


def test_a_contrast_the_design_cannot_separate_is_not_estimable():
    # position always equals model: their effects are confounded
    model = np.tile(np.arange(3), 20)
    design = np.hstack([one_hot(model, 3), one_hot(model, 3)])
    fit = absorbed_least_squares(design, np.random.default_rng(1).normal(size=60), np.repeat(np.arange(20), 3))
    position_contrast = np.array([0, 0, 0, -1.0, 1.0, 0])
    assert fit.contrast(position_contrast) is None


@pytest.mark.parametrize("shift", [0, 10**12, -7], ids=["unit keys counted as they are", "far apart", "negative"])
def test_krippendorff_alpha_matches_the_reference_package(shift):
    rng = np.random.default_rng(3)
    reliability = rng.normal(5, 2, size=(4, 60)) + rng.normal(0, 2, size=60)  # 4 coders, 60 units
    reliability[rng.random(reliability.shape) < 0.2] = np.nan  # missing scores
    expected = krippendorff.alpha(reliability_data=reliability, level_of_measurement="interval")
    coders, units = np.nonzero(~np.isnan(reliability))
    alpha, _ = krippendorff_alpha_interval(reliability[coders, units], units * 3 + shift)
    assert alpha == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("block", [1, 7, 1 << 20])
def test_krippendorff_alpha_from_unit_sums_read_a_block_of_units_at_a_time(block):
    rng = np.random.default_rng(4)
    reliability = rng.normal(5, 2, size=(3, 40)) + rng.normal(0, 2, size=40)
    reliability[rng.random(reliability.shape) < 0.3] = np.nan  # some units pair nothing
    expected = krippendorff.alpha(reliability_data=reliability, level_of_measurement="interval")
    known = ~np.isnan(reliability)
    values = np.where(known, reliability, 0.0)
    count, total, squares = known.sum(0), values.sum(0), (values * values).sum(0)
    alpha, n = alpha_interval_of_sums(count, total, squares, block)
    assert alpha == pytest.approx(expected, abs=1e-9)
    assert n == int(count[count >= 2].sum())


def test_position_consistency_on_swapped_pairs():
    # reviewer a sees (b, c) as b first in s0 and c first in s1, s2, s3
    #  s0: b first, prefers b | s1: c first, prefers c -> primacy (first shown won both times)
    #  s2: c first, prefers b -> pairs with nothing (one b-first observation only)
    cells = [
        [(0, 1, 0, 8, False), (0, 2, 1, 6, False)],
        [(0, 1, 1, 6, False), (0, 2, 0, 8, False)],
        [(0, 1, 1, 8, False), (0, 2, 0, 6, False)],
    ]
    result = position_consistency(window_cells([digest(i, c) for i, c in enumerate(cells)]))
    assert len(result) == 1
    (a,) = result
    assert (a.reviewer, a.pairs, a.position_consistency, a.primacy_preferred, a.recency_preferred) == (
        "a",
        1,
        0.0,
        1,
        0,
    )
    assert a.preference_fairness == -1.0
    # consistent case: b wins in both orders
    consistent = [cells[0], [(0, 1, 1, 8, False), (0, 2, 0, 6, False)]]
    (b,) = position_consistency(window_cells([digest(i, c) for i, c in enumerate(consistent)]))
    assert (b.pairs, b.position_consistency, b.preference_fairness) == (1, 1.0, 0.0)


@pytest.mark.parametrize("n_models", [3, 5])
@pytest.mark.parametrize("block", [7, 50, 1 << 20])
def test_position_consistency_matches_each_order_with_the_other_in_time_order(block, n_models):
    """Random windows against a loop: per reviewer and pair of models, the k-th time it saw the
    lower model first is matched with the k-th time it saw the higher model first, whether the
    window is read in one block or in blocks of a few sessions (orders carried across them). With
    five models a reviewer sees several pairs a session, some not side by side among its cells."""
    models = (*NAMES, "d", "e")[:n_models]
    rng = np.random.default_rng(21)
    sessions = []
    for _ in range(60):
        order = rng.permutation(n_models)  # each model's position this session
        cells = [
            (r, m, int(order[m]), int(rng.integers(5, 9)), False)
            for r in range(3)
            for m in range(n_models)
            if m != r and rng.random() < 0.8
        ]
        sessions.append(cells)
    expected = {}
    for r in range(3):
        seen: dict[tuple[int, int, bool], list[int]] = {}
        for cells in sessions:
            mine = {m: (p, score) for rr, m, p, score, _ in cells if rr == r}
            for lo in mine:
                for hi in mine:
                    if lo < hi:
                        (p_lo, s_lo), (p_hi, s_hi) = mine[lo], mine[hi]
                        seen.setdefault((lo, hi, p_lo < p_hi), []).append(int(np.sign(s_lo - s_hi)))
        counts = [0, 0, 0, 0]
        for (lo, hi, lo_first), first in seen.items():
            if not lo_first:
                continue
            for pa, pb in zip(first, seen.get((lo, hi, False), [])):
                counts[0] += 1
                counts[1] += pa == pb
                counts[2] += pa == 1 and pb == -1
                counts[3] += pa == -1 and pb == 1
        if counts[0]:
            expected[NAMES[r]] = tuple(counts)
    lengths = tuple(100.0 * (m + 1) for m in range(n_models))
    window = window_cells([digest(i, c, models=models, lengths=lengths) for i, c in enumerate(sessions)])
    result = position_consistency(window, block)
    got = {
        a.reviewer: (a.pairs, round(a.position_consistency * a.pairs), a.primacy_preferred, a.recency_preferred)
        for a in result
    }
    assert got == expected
    assert all(counts[0] >= 10 for counts in expected.values())


@pytest.mark.parametrize(
    ("shuffle", "broken", "shared"), [("fixed", True, True), ("shared", False, True), ("per_reviewer", False, False)]
)
def test_randomization_balance(shuffle, broken, shared):
    result = randomization_balance(
        window_cells(Corpus(sessions=40, seed=5, shuffle=shuffle).digests()), WindowThresholds()
    )
    assert (result.broken, result.shared) == (broken, shared)
    # a shared order is counted once per session, not once per reviewer
    if shuffle != "per_reviewer":
        assert result.placements == 40 * 5


def test_shared_orders_still_identify_position_across_sessions():
    report = tenant_report(Corpus(sessions=60, seed=6, shuffle="shared", position_effects={0: 1.0}).digests())
    assert report.position.status == "ok" and report.position.flagged
    fixed = tenant_report(Corpus(sessions=60, seed=6, shuffle="fixed").digests())
    assert fixed.position.status == "not identifiable"


def test_reviewer_offset_against_the_median_reviewer_without_noise():
    corpus = Corpus(sessions=20, seed=7, noise=0.0, reviewer_offsets={2: -1.5})
    profiles = {p.reviewer: p for p in reviewer_profiles(window_cells(corpus.digests()), WindowThresholds())}
    harsh = profiles["vendor2/model-2"]
    assert harsh.offset.point_estimate == pytest.approx(-1.5, abs=0.05)  # clipping at the scale's ends aside
    assert harsh.flags == ["HARSH"]
    others = [p for name, p in profiles.items() if name != "vendor2/model-2"]
    assert all(abs(p.offset.point_estimate) < 0.05 and not p.flags for p in others)


@pytest.mark.parametrize(
    ("value", "baseline", "expected"),
    [
        (10.0, [1, 2, 3, 4, 5], (10 - 3) / (1.4826 * 1)),
        (3.0, [1, 2, 3, 4, 5], 0.0),
        (0.0, [1, 2, 3, 4, 5, np.nan], (0 - 3) / 1.4826),  # a reviewer absent from a session
        (9.0, [2, 2, 2, 2, 2], None),  # MAD 0
        (9.0, [1, 2, 3, 4], None),  # too few
    ],
)
def test_robust_z(value, baseline, expected):
    median, scale = robust_location([float(v) for v in baseline], 5)
    result = _z(value, median, scale)
    assert result == (None if expected is None else pytest.approx(expected))


def test_ranks_and_chi_square_match_scipy():
    rng = np.random.default_rng(9)
    values = rng.integers(0, 20, 200).astype(float)  # many ties
    assert average_ranks(values) == pytest.approx(stats.rankdata(values))
    table = rng.integers(5, 40, size=(5, 4))
    statistic, dof, p = chi_square_independence(table)
    expected = stats.chi2_contingency(table, correction=False)
    assert (statistic, dof, p) == pytest.approx((expected.statistic, expected.dof, expected.pvalue))


def test_welch_test_matches_scipy():
    rng = np.random.default_rng(8)
    a, b = rng.normal(0, 1, 15), rng.normal(0.8, 2, 25)
    test = welch(b, a)
    diff, p = test.difference, test.p_value
    assert diff == pytest.approx(b.mean() - a.mean())
    assert p == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue)


def test_a_models_mean_score_trend_reads_on_the_1_to_10_scale():
    """Model x scored 7 by both peers in every earlier session and 8 in every later one: the trend
    says 7.0 -> 8.0, as the models table's scores read, not points above the bottom."""
    from bias_audit.analysis.trends import compare_windows

    def session(number: int, score: float) -> SessionDigest:
        return digest(
            number,
            [
                (1, 0, 0, score, False),
                (2, 0, 1, score, False),
                (0, 1, 0, 5, False),
                (2, 1, 1, 5, False),
                (0, 2, 0, 5, False),
                (1, 2, 1, 5, False),
            ],
        )

    before = window_cells([session(i, 7.0) for i in range(12)])
    after = window_cells([session(12 + i, 8.0) for i in range(12)])
    [trend] = [t for t in compare_windows(before, after) if t.metric == "model_mean_score" and t.subject == "a"]
    assert (trend.previous, trend.current) == (7.0, 8.0) and trend.difference == pytest.approx(1.0)


def _versioned(session: int, version: str | None) -> SessionDigest:
    plain = digest(session, [(0, 1, 0, 6.0, False), (1, 0, 1, 7.0, False), (2, 2, 0, 5.0, False)])
    return dataclasses.replace(plain, config_version=version, trace_id=f"t{session}")


def test_config_changes_are_marked_where_a_known_version_follows_another_in_every_slice():
    versions = [None] * 3 + ["1.0"] * 10 + ["1.1"] * 10 + [None] + ["1.2"] * 6
    cells = window_cells([_versioned(i, v) for i, v in enumerate(versions)])
    assert cells.change_traces == {13: "t13"}  # None -> 1.0, 1.1 -> None -> 1.2: no known pair
    assert [(c.from_version, c.to_version, c.trace_id) for c in change_points(cells)] == [("1.0", "1.1", "t13")]
    assert cells.slice(10, 30).change_traces == {3: "t13"}
    assert cells.slice(13, 30).change_traces == {}  # its first session has no session before it
    assert cells.slice(10, 30).config_version(3) == "1.1" and cells.slice(0, 5).config_version(0) is None


def test_a_window_built_a_batch_at_a_time_equals_one_built_at_once():
    from bias_audit.analysis.window_cells import WindowCellsBuilder

    digests = Corpus(sessions=40, seed=21).digests()
    whole = window_cells(digests)
    builder = WindowCellsBuilder(1, 1)  # fewer than it gets: the columns grow
    for batch in (digests[:7], [], digests[7:31], digests[31:]):
        builder.add(batch)
    batched = builder.build()
    for name, value in vars(whole).items():
        other = getattr(batched, name)
        if isinstance(value, np.ndarray):
            assert value.dtype == other.dtype and np.array_equal(value, other, equal_nan=value.dtype.kind == "f"), name
        else:
            assert value == other, name
    assert whole.sessions == 40 and whole.tenant_id == digests[0].tenant_id


def test_session_offsets_do_not_depend_on_the_cells_order():
    """The per-session fits, SESSIONS_PER_FIT sessions at a time, find a chunk's cells by bisection
    on the session column; cells given out of session order are put in order first."""
    cells = window_cells(Corpus(sessions=2 * SESSIONS_PER_FIT + 10, seed=9, reviewer_offsets={1: -1.0}).digests())
    shuffled = np.random.default_rng(3).permutation(len(cells.scores()))
    score = "score_values" if cells.score_code is None else "score_code"  # the column a cell's score is in
    per_cell = ("session", "reviewer", "model", "position", score, "own", "similarity", "fingerprint")
    moved = dataclasses.replace(cells, **{name: getattr(cells, name)[shuffled] for name in (*per_cell, "correct")})
    assert np.isfinite(cells.session_offsets).sum() == cells.sessions * 5  # 5 reviewers by default
    np.testing.assert_allclose(moved.session_offsets, cells.session_offsets, rtol=0, atol=1e-12)


@pytest.mark.parametrize("block", [1, 7, 1 << 20])
def test_the_length_points_rank_correlation_line_and_session_sums_are_the_references(block):
    """Over a window's length points (lengths tie within a model): Spearman's rho is scipy's, the
    chart's line numpy's least squares, and each session's sums those of its points one by one,
    whatever the block of points summed at a time."""
    cells = window_cells(Corpus(sessions=60, models=5, seed=11, length_slope=0.4).digests())
    session, x, y = cells.length_points
    assert len(np.unique(x)) < len(x)  # ties in the ranks
    found = length_correlation(cells, WindowThresholds(bootstrap_replicates=200))
    assert found.spearman == round(float(stats.spearmanr(x, y).statistic), 4)
    slope, intercept = np.polyfit(x, y, 1)
    assert length_fit(cells, block) == pytest.approx((intercept + 1.0, slope), rel=1e-9)
    sums = session_length_sums(cells, block)
    for s in range(cells.sessions):
        mine = session == s
        xs, ys = x[mine].tolist(), y[mine].tolist()
        expected = [
            len(xs),
            sum(xs),
            sum(ys),
            sum(a * a for a in xs),
            sum(b * b for b in ys),
            sum(a * b for a, b in zip(xs, ys)),
        ]
        assert sums[s].tolist() == pytest.approx(expected, rel=1e-12)
    # dealt into clusters as they are made: each cluster's totals are its sessions' sums added in
    # session order, the same floats as adding the rows above one by one
    cluster = np.random.default_rng(3).permutation(cells.sessions) % 7
    totals = [[0.0] * 6 for _ in range(7)]
    for s in range(cells.sessions):
        totals[cluster[s]] = [t + v for t, v in zip(totals[cluster[s]], sums[s].tolist())]
    assert session_length_sums(cells, block, cluster, 7).tolist() == totals


def test_a_response_without_a_peer_score_is_no_length_point():
    """Each length point by hand: a response's length and the mean of its peer scores less each
    reviewer's offset in that session; a response no peer scored (here: session 3's first model,
    its cells made self-reviews) has none."""
    plain = window_cells(Corpus(sessions=12, models=4, seed=12).digests())
    cells = dataclasses.replace(plain, own=plain.own | ((plain.session == 3) & (plain.model == 0)))
    offsets, scores = cells.session_offsets, cells.scores()
    expected = []
    for s in range(cells.sessions):
        for m in range(len(cells.models)):
            peer = np.flatnonzero((cells.session == s) & (cells.model == m) & ~cells.own)
            if len(peer):
                adjusted = [scores[c] - np.nan_to_num(offsets[s, cells.reviewer[c]]) for c in peer]
                expected.append((s, cells.response_length[s * len(cells.models) + m], sum(adjusted) / len(adjusted)))
    session, x, y = cells.length_points
    assert len(session) == cells.sessions * len(cells.models) - 1
    assert session.tolist() == [e[0] for e in expected] and x.tolist() == [e[1] for e in expected]
    assert y.tolist() == pytest.approx([e[2] for e in expected], rel=1e-12)
