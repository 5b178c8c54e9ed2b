"""Sums over a window taken a block of whole sessions (or of cells) at a time, so their
temporaries stay a block long, equal to the same counts taken cell by cell in plain Python."""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict

import krippendorff
import numpy as np
import pytest
from scipy import stats

from bias_audit.analysis.agreement import agreement
from bias_audit.analysis.council_biases import anchoring, first_and_later_residuals, fitted_cells, pair_fit
from bias_audit.analysis.cross_session import (
    WindowThresholds,
    _placement_counts,
    length_and_position,
    length_control,
    length_correlation,
    position_effects,
    reviewer_profiles,
)
from bias_audit.analysis.window_cells import (
    MOST_SCORES,
    SUM_BLOCK,
    WindowCells,
    narrow_positions,
    number_scores,
    response_lengths,
    window_cells,
)
from tests.simulate import Corpus


def window(shuffle: str = "per_reviewer") -> WindowCells:
    """Sessions of 4 and 3 models (the second corpus after the first), some positions unknown."""
    digests = Corpus(sessions=40, models=4, seed=3, shuffle=shuffle).digests()
    digests += Corpus(sessions=25, models=3, seed=4, shuffle="shared").digests()
    cells = window_cells(digests)
    position = cells.position.copy()
    position[::11] = -1  # a record without its display order
    return dataclasses.replace(cells, position=position)


def cell_by_cell(cells: WindowCells) -> dict[str, object]:
    rows = [
        (s, r, m, p)
        for s, r, m, p in zip(
            cells.session.tolist(), cells.reviewer.tolist(), cells.model.tolist(), cells.position.tolist()
        )
        if p >= 0
    ]
    placements = {(s, m, p) for s, _, m, p in rows}
    orders: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for s, r, m, p in rows:
        orders[s, r].append((p, m))
    follows: Counter = Counter()
    for shown in orders.values():
        shown.sort()
        for (p, m), (q, n) in zip(shown, shown[1:]):
            if q == p + 1:
                follows[m, n] += 1
    return {
        "table": Counter((m, p) for _, m, p in placements),
        "per_reviewer": Counter((r, m, p) for _, r, m, p in rows),
        "successions": follows,
        "placements_per_session": Counter(s for s, _, _ in placements),
        "models_per_session": Counter(s for s, _ in {(s, m) for s, m, _ in placements}),
        "reviewers_per_session": Counter(s for s, _ in {(s, r) for s, r, _, _ in rows}),
    }


def as_counter(array: np.ndarray) -> Counter:
    return Counter({tuple(i) if len(i) > 1 else i[0]: int(v) for i, v in np.ndenumerate(array) if v})


@pytest.mark.parametrize("block", [1, 9, 100, 10**9])
def test_placement_counts_by_blocks_of_sessions_equal_the_counts_cell_by_cell(block):
    cells = window()
    counts = _placement_counts(cells, block)
    expected = cell_by_cell(cells)
    for name, wanted in expected.items():
        assert as_counter(getattr(counts, name)) == wanted, name


@pytest.mark.parametrize("block", [1, 9, 100, 10**9])
def test_session_blocks_cover_every_cell_once_in_whole_sessions(block):
    cells = window()
    ranges = list(cells.session_blocks(block))
    assert ranges[0][0].start == 0 and ranges[-1][0].stop == len(cells.session)
    for (rows, first, stop), (after, *_) in zip(ranges, ranges[1:]):
        assert rows.stop == after.start  # contiguous
        assert cells.session[rows.stop - 1] < cells.session[after.start]  # no session split
    for rows, first, stop in ranges:
        sessions = set(cells.session[rows].tolist())
        assert min(sessions) == first and max(sessions) < stop
        # a block is at most `block` cells, unless one session alone is longer
        assert rows.stop - rows.start <= block or len(sessions) == 1


def test_a_window_out_of_session_order_is_one_block():
    cells = window()
    reversed_cells = dataclasses.replace(cells, session=cells.session[::-1].copy())
    assert [(r.start, r.stop, a, b) for r, a, b in reversed_cells.session_blocks(9)] == [
        (0, len(cells.session), 0, cells.sessions)
    ]


@pytest.mark.parametrize("block", [1, 13, 10**9])
def test_peer_square_sums_by_blocks_equal_the_sums_cell_by_cell(block):
    cells = window()
    expected: dict[int, float] = defaultdict(float)
    for group, score, own in zip(cells.group().tolist(), cells.scores().tolist(), cells.own.tolist()):
        if not own:
            expected[group] += score * score
    got = cells.peer_square_sums(block)
    assert len(got) == cells.sessions * len(cells.models)
    assert {g: v for g, v in enumerate(got.tolist()) if v} == pytest.approx(dict(expected), rel=1e-12)


def test_length_points_are_each_responses_mean_peer_score_less_its_reviewers_offsets_cell_by_cell():
    """A harsh reviewer makes the offsets matter: each point is the mean over a response's peer
    cells of (score - that reviewer's offset in the session, 0 where undefined), with its length,
    in (session, model) order."""
    digests = Corpus(sessions=30, models=4, seed=5, reviewer_offsets={0: -2.0}).digests()
    cells = window_cells(digests)
    offsets = cells.session_offsets
    assert np.nanmax(np.abs(offsets)) > 1.0
    adjusted: dict[tuple[int, int], list[float]] = defaultdict(list)
    lengths = {  # each response's length as its session's digest has it
        (s, cells.models.index(name)): length
        for s, digest in enumerate(digests)
        for name, length in zip(digest.models, digest.lengths)
    }
    columns = (cells.session, cells.reviewer, cells.model, cells.scores(), cells.own)
    for s, r, m, score, own in zip(*(column.tolist() for column in columns)):
        if not own:
            offset = float(offsets[s, r])
            adjusted[s, m].append(score - (0.0 if np.isnan(offset) else offset))
    keys = sorted(adjusted)
    session, length, mean = cells.length_points
    assert session.tolist() == [s for s, _ in keys]
    assert length.tolist() == [lengths[key] for key in keys]
    # length control reads these two columns alone, without the offsets
    assert [column.tolist() for column in cells.response_lengths] == [session.tolist(), length.tolist()]
    np.testing.assert_allclose(mean, [sum(adjusted[key]) / len(adjusted[key]) for key in keys], rtol=0, atol=1e-12)


def test_agreement_from_the_window_sums_is_the_reference_packages_alpha_over_its_peer_scores():
    cells = window()
    # coders are reviewers, units are the scored responses (session, model), peer scores only
    reliability = np.full((len(cells.reviewers), cells.sessions * len(cells.models)), np.nan)
    peer = ~cells.own
    reliability[cells.reviewer[peer], cells.group(peer)] = cells.scores(peer)
    scored = reliability[:, ~np.isnan(reliability).all(0)]
    expected = krippendorff.alpha(reliability_data=scored, level_of_measurement="interval")
    pairable = int(np.sum((~np.isnan(scored)).sum(0)[(~np.isnan(scored)).sum(0) >= 2]))
    estimate = agreement(cells)
    assert estimate.point_estimate == round(expected, 4)
    assert estimate.sample_size == pairable


def test_a_column_no_record_carries_stays_one_value_in_the_windows_cut_from_it():
    cells = window()
    n = len(cells.session)
    unknown = dataclasses.replace(
        cells,
        similarity=np.broadcast_to(np.array(np.nan), (n,)),
        fingerprint=np.broadcast_to(np.array(-1, dtype=np.int32), (n,)),
    )
    for cut, kept in (
        (unknown.slice(5, 30), (cells.session >= 5) & (cells.session < 30)),
        (unknown.slice(0, 12), cells.session < 12),
    ):
        assert cut.similarity.strides == (0,) and cut.fingerprint.strides == (0,)  # no cells-long copy
        assert len(cut.similarity) == len(cut.fingerprint) == int(kept.sum())
        assert np.isnan(cut.similarity).all() and (cut.fingerprint == -1).all()
        assert np.array_equal(cut.correct, cells.correct[kept])  # a column records carry is cut as before
        assert np.array_equal(cut.scores(), cells.scores(kept))


PER_CELL = (
    "session",
    "reviewer",
    "model",
    "position",
    "own",
    "similarity",
    "fingerprint",
    "correct",
)


@pytest.mark.parametrize("reviewer", [0, 2])
def test_the_length_tests_without_a_reviewer_equal_them_on_a_copy_without_its_scores(reviewer):
    digests = Corpus(sessions=60, models=5, seed=11, length_slope=0.4, reviewer_offsets={2: -1.0}).digests()
    cells = window_cells(digests)
    kept = cells.reviewer != reviewer
    # the column a cell's score is in: its code, or the score itself when the window numbers none
    score = ("score_values",) if cells.score_code is None else ("score_code",)
    copy = dataclasses.replace(cells, **{name: getattr(cells, name)[kept] for name in (*PER_CELL, *score)})
    counted_out = cells.peer_scores_without(reviewer)
    assert len(counted_out.scores()) == len(cells.scores())  # no copy of the window's cells
    thresholds = WindowThresholds(bootstrap_replicates=200)
    assert length_correlation(counted_out, thresholds) == length_correlation(copy, thresholds)
    assert length_control(counted_out, thresholds) == length_control(copy, thresholds)
    assert length_control(counted_out, thresholds) != length_control(cells, thresholds)  # the reviewer mattered


@pytest.mark.parametrize("block", [1, 9, 100, 10**9])
def test_anchorings_first_and_later_residuals_by_blocks_equal_them_review_by_review(block):
    cells = window()
    fitted = pair_fit(cells)
    found = first_and_later_residuals(cells, fitted, block)
    assert found is not None
    x, later_sum, later_n = found
    reviews: dict[int, list[tuple[int, float]]] = defaultdict(list)
    [(_, here)] = fitted_cells(cells, 10**9)  # every fitted cell, their residuals made at once
    for i, residual in zip(here.tolist(), fitted.residuals_of(cells, here).tolist()):
        if cells.position[i] >= 0:
            key = int(cells.session[i]) * len(cells.reviewers) + int(cells.reviewer[i])
            reviews[key].append((int(cells.position[i]), residual))
    assert set(np.flatnonzero(~np.isnan(x)).tolist()) == set(reviews)
    for key, shown in reviews.items():
        first = min(p for p, _ in shown)
        assert x[key] == [r for p, r in shown if p == first][-1]
        later = [r for p, r in shown if p != first]
        assert later_n[key] == len(later) and later_sum[key] == pytest.approx(sum(later), abs=1e-12)


def test_anchorings_slopes_are_each_reviewers_least_squares_over_its_reviews():
    """Each reviewer's anchoring slope: scipy's least squares of the mean residual of its later
    answers on its residual on the first, over the sessions where it has both, its reviews
    gathered one by one (councils of 4 and 3, some positions unknown: reviewers see different
    numbers of answers)."""
    cells = window()
    fitted = pair_fit(cells)
    reviews: dict[tuple[int, int], list[tuple[int, float]]] = defaultdict(list)
    [(_, here)] = fitted_cells(cells, 10**9)
    for i, residual in zip(here.tolist(), fitted.residuals_of(cells, here).tolist()):
        if cells.position[i] >= 0:
            reviews[int(cells.reviewer[i]), int(cells.session[i])].append((int(cells.position[i]), residual))
    points: dict[int, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for (reviewer, _), shown in sorted(reviews.items()):
        first = min(p for p, _ in shown)
        later = [r for p, r in shown if p != first]
        if later:
            points[reviewer][0].append([r for p, r in shown if p == first][-1])
            points[reviewer][1].append(sum(later) / len(later))
    assert len({len(shown) for shown in reviews.values()}) > 1  # reviews of different lengths
    found = {bias.reviewer: bias for bias in anchoring(cells, fitted)}
    assert set(found) == {cells.reviewers[r] for r in points}
    for reviewer, (x, y) in points.items():
        bias = found[cells.reviewers[reviewer]]
        assert bias.n == len(x)
        assert bias.effect == round(float(stats.linregress(x, y).slope), 4)


def biased_window(**changes: object) -> WindowCells:
    corpus = Corpus(sessions=60, models=5, seed=11, length_slope=0.4, position_effects={0: 0.6})
    return window_cells(dataclasses.replace(corpus, **changes).digests())


@pytest.mark.parametrize(
    "case",
    ["every position known", "some positions unknown", "every length equal", "too few sessions"],
)
def test_length_control_and_the_position_fit_made_together_are_each_made_alone(case):
    """Together they share one pass over the rows when their rows are the same (every peer score
    placed); else, or when one answers before its fit, each is made as alone."""
    cells = biased_window(sessions=8) if case == "too few sessions" else biased_window()
    if case == "some positions unknown":
        position = cells.position.copy()
        position[::7] = -1
        cells = dataclasses.replace(cells, position=position)
    if case == "every length equal":
        cells = dataclasses.replace(cells, response_length=np.full(len(cells.response_length), 250.0))
    thresholds = WindowThresholds(bootstrap_replicates=200)
    control, placed = length_and_position(cells, thresholds)
    assert (control, placed) == (length_control(cells, thresholds), position_effects(cells, thresholds))
    expected_status = {"every length equal": ("not identifiable", "ok"), "too few sessions": ("collecting data",) * 2}
    assert (control.status, placed.status) == expected_status.get(case, ("ok", "ok"))
    if case == "every position known":
        assert control.coefficient.flagged and placed.flagged  # both biases are there to be found


def test_length_controls_raw_scores_are_each_models_mean_peer_score():
    cells = biased_window(reviewer_offsets={1: -1.5})
    by_model: dict[int, list[float]] = defaultdict(list)
    for model, score, own in zip(cells.model.tolist(), cells.scores().tolist(), cells.own.tolist()):
        if not own:
            by_model[model].append(score)
    expected = [(cells.models[m], round(sum(v) / len(v) + 1.0, 4), len(v)) for m, v in sorted(by_model.items())]
    found = length_control(cells, WindowThresholds(bootstrap_replicates=200)).models
    assert [(m.model, m.raw_score, m.scores) for m in found] == expected


def test_positions_numbered_with_gaps_are_the_same_positions():
    """Display positions 1, 3, 5, ... (not 0..k-1) are levels of their own: the same fit, named
    by the positions the records carry."""
    cells = biased_window()
    gapped = dataclasses.replace(cells, position=np.where(cells.position >= 0, 2 * cells.position + 1, -1))
    thresholds = WindowThresholds(bootstrap_replicates=200)
    plain, spaced = position_effects(cells, thresholds), position_effects(gapped, thresholds)
    assert spaced.baseline_position == 1 and [e.position for e in spaced.effects] == [3, 5, 7, 9]
    assert [e.effect for e in spaced.effects] == [e.effect for e in plain.effects]
    assert (spaced.f_statistic, spaced.p_value, spaced.flagged) == (plain.f_statistic, plain.p_value, plain.flagged)


@pytest.mark.parametrize(("models", "kind"), [(5, np.int8), (12, np.int16)])
def test_each_responses_peer_count_and_sum_are_its_peer_cells_the_count_in_the_narrowest_type(models, kind):
    """A count is at most its session's cells: 5x5 councils' (25) fit a byte, 12x12's (144) do not."""
    cells = window_cells(Corpus(sessions=6, models=models, seed=3).digests())
    assert max(Counter(cells.session.tolist()).values()) == models * models
    expected: dict[int, list] = defaultdict(lambda: [0, 0.0])
    for group, score, own in zip(cells.group().tolist(), cells.scores().tolist(), cells.own.tolist()):
        if not own:
            expected[group][0] += 1
            expected[group][1] += score
    count, total = cells.peer_sums
    assert count.dtype == kind and len(count) == cells.sessions * models
    assert {g: c for g, c in enumerate(count.tolist()) if c} == {g: c for g, (c, _) in expected.items()}
    assert {g: t for g, t in enumerate(total.tolist()) if g in expected} == pytest.approx(
        {g: t for g, (_, t) in expected.items()}, rel=1e-12
    )


@pytest.mark.parametrize(("models", "kind"), [(5, np.int8), (130, np.int16)])
def test_the_window_keeps_names_and_positions_in_the_narrowest_type_and_sums_as_with_wide_ones(models, kind):
    cells = window_cells(Corpus(sessions=3, models=models, seed=3).digests())
    assert {cells.reviewer.dtype, cells.model.dtype, cells.position.dtype} == {np.dtype(kind)}
    assert cells.session.dtype == np.int32
    wide = dataclasses.replace(
        cells, **{name: getattr(cells, name).astype(np.int64) for name in ("session", "reviewer", "model", "position")}
    )
    for name in ("session_offsets", "length_points", "session_mean_score"):
        np.testing.assert_array_equal(np.asarray(getattr(cells, name)), np.asarray(getattr(wide, name)), err_msg=name)
    assert cells.group().tolist() == wide.group().tolist()
    assert cells.response_lengths[0].dtype == np.int32  # a response's session: 32 bits while they fit
    assert cells.reviewer_key().tolist() == wide.reviewer_key().tolist()


@pytest.mark.parametrize("block", [1, 2, 4, 100])
def test_each_responses_length_comes_from_its_cells_or_their_slots_whatever_the_block(block):
    # sessions 0..2 of a 2-model window: session 0 has both answers, session 1 model 1's, session 2 model 0's
    session = np.array([0, 0, 0, 1, 1, 2], dtype=np.int32)
    model = np.array([0, 1, 0, 1, 1, 0], dtype=np.int8)
    first_slot = np.array([0, 2, 3], dtype=np.int8)  # each session's first slot
    within = np.array([0, 1, 0, 0, 0, 0], dtype=np.int8)  # each cell's slot within its session
    by_slot = np.array([10.0, 20.0, 30.0, 40.0])
    expected = [10.0, 20.0, 0.0, 30.0, 40.0, 0.0]
    assert response_lengths(3, 2, session, model, by_slot, (first_slot, within), block=block).tolist() == expected
    by_cell = np.array([10.0, 20.0, 10.0, 30.0, 30.0, 40.0])
    assert response_lengths(3, 2, session, model, by_cell, block=block).tolist() == expected


@pytest.mark.parametrize(
    ("positions", "kind"),
    [([-1, 0, 4], np.int8), ([0, 126], np.int8), ([-1, 127], np.int16), ([3, 40_000], np.int32), ([], np.int8)],
)
def test_positions_are_kept_in_the_narrowest_type_that_holds_them(positions, kind):
    narrow = narrow_positions(np.array(positions, dtype=np.int64))
    assert narrow.dtype == kind
    assert narrow.tolist() == positions


def test_a_cells_leave_one_out_difference_is_its_score_less_the_other_peers_mean_cell_by_cell():
    cells = window()
    peers: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for i, (group, score, own) in enumerate(zip(cells.group().tolist(), cells.scores().tolist(), cells.own.tolist())):
        if not own:
            peers[group].append((i, score))
    expected = []
    for i, (group, score, own) in enumerate(zip(cells.group().tolist(), cells.scores().tolist(), cells.own.tolist())):
        others = [s for j, s in peers[group] if j != i]
        expected.append(np.nan if own or not others else score - sum(others) / len(others))
    asked = np.flatnonzero(cells.reviewer == 1)  # one reviewer's cells, as the profiles ask
    np.testing.assert_allclose(cells.loo_difference(asked), np.array(expected)[asked], rtol=0, atol=1e-12)
    assert np.isnan(cells.loo_difference(asked)).any() and not np.isnan(cells.loo_difference(asked)).all()


def test_the_kept_quantities_are_let_go_and_made_again_alike():
    """The report lets them go before the council sections: nothing of them stays, and asked
    again they are the same arrays' values; a name the window does not keep is refused."""
    cells = window_cells(Corpus(sessions=40, models=4, seed=5).digests())
    names = ("peer_sums", "session_offsets", "length_points", "response_lengths", "session_mean_score")
    before = {name: [np.asarray(part).copy() for part in np.atleast_1d(getattr(cells, name))] for name in names}
    cells.let_go(*names)
    assert [name for name in names if name in vars(cells)] == []
    for name in names:
        again = [np.asarray(part) for part in np.atleast_1d(getattr(cells, name))]
        assert len(again) == len(before[name])
        for old, new in zip(before[name], again):
            np.testing.assert_array_equal(old, new, err_msg=name)
    with pytest.raises(ValueError, match="score is not a quantity the window keeps"):
        cells.let_go("score")


@pytest.mark.parametrize("block", [1, 7, 100, 1 << 20])
def test_each_sessions_mean_peer_score_by_blocks_equals_it_cell_by_cell(block):
    cells = window_cells(Corpus(sessions=30, models=4, seed=8).digests())
    totals, counts = [0.0] * cells.sessions, [0] * cells.sessions
    for session, score, own in zip(cells.session.tolist(), cells.scores().tolist(), cells.own.tolist()):
        if not own:
            totals[session] += score
            counts[session] += 1
    expected = [t / c if c else None for t, c in zip(totals, counts)]
    got = [None if v != v else v for v in cells.session_means(block).tolist()]
    assert got == expected and None not in got


@pytest.mark.parametrize("block", [40, 333, SUM_BLOCK])
def test_the_reviewer_profiles_by_blocks_of_sessions_are_each_reviewers_scores_cell_by_cell(block):
    """The fit and every reviewer's tally summed a block of sessions at a time: the same profiles
    whatever the block, and each reviewer's counts, mean, spread and agreement with the other
    peers' mean are those of its scores taken one by one (statistics module)."""
    import statistics

    cells = biased_window(reviewer_offsets={1: -1.5})
    # no self-review in the first sessions: a reviewer scores itself in fewer sessions than it scores
    cells = dataclasses.replace(cells, own=cells.own & (cells.session >= 12))
    thresholds = WindowThresholds(bootstrap_replicates=200)
    profiles = reviewer_profiles(cells, thresholds, block)
    assert profiles == reviewer_profiles(cells, thresholds, SUM_BLOCK)
    peers: dict[tuple[int, int], list[float]] = defaultdict(list)
    rows = list(zip(cells.session.tolist(), cells.reviewer.tolist(), cells.model.tolist(), cells.scores().tolist()))
    for (s, r, m, score), own in zip(rows, cells.own.tolist()):
        if not own:
            peers[s, m].append(score)
    for profile in profiles:
        r = cells.reviewers.index(profile.reviewer)
        mine = [(s, m, score) for (s, who, m, score), own in zip(rows, cells.own.tolist()) if who == r and not own]
        scores = [score for _, _, score in mine]
        pairs = [
            (score, (sum(peers[s, m]) - score) / (len(peers[s, m]) - 1)) for s, m, score in mine if len(peers[s, m]) > 1
        ]
        assert profile.scores == len(scores)
        assert profile.sessions == len({s for s, who, _, _ in rows if who == r})
        owned = {s for (s, who, _, _), own in zip(rows, cells.own.tolist()) if who == r and own}
        assert profile.self_preference.sessions == len(owned) < profile.sessions
        assert profile.mean_score == round(statistics.fmean(scores) + 1.0, 4)
        assert profile.score_std == round(statistics.stdev(scores), 4)
        assert profile.agreement_with_peers == round(statistics.correlation(*zip(*pairs)), 4)
    assert "HARSH" in next(p for p in profiles if p.reviewer == cells.reviewers[1]).flags


@pytest.mark.parametrize("case", ["every position known", "some positions unknown"])
@pytest.mark.parametrize("block", [40, 333])
def test_the_length_and_position_fits_by_blocks_of_sessions_are_the_fits_in_one(case, block):
    """The fits' rows come a block of whole sessions at a time (a block too small for one session
    is that session): the same estimates as from one block."""
    cells = biased_window()
    if case == "some positions unknown":
        position = cells.position.copy()
        position[::7] = -1
        cells = dataclasses.replace(cells, position=position)
    thresholds = WindowThresholds(bootstrap_replicates=200)
    assert length_and_position(cells, thresholds, block) == length_and_position(cells, thresholds, SUM_BLOCK)
    assert length_control(cells, thresholds, block) == length_control(cells, thresholds)
    assert position_effects(cells, thresholds, block) == position_effects(cells, thresholds)


@pytest.mark.parametrize("block", [1, 3, 1 << 20])
def test_scores_are_numbered_by_their_distinct_values_whatever_the_block(block):
    """A byte a cell for a scale's few scores, each read back as the same float; past MOST_SCORES
    distinct scores the column stays as it is."""
    score = np.array([3.0, 1.5, 3.0, 0.0, 9.0, 1.5, 2.9999999999999996, 9.0])
    values, code = number_scores(score, block)
    assert values.tolist() == sorted(set(score.tolist()))
    assert code is not None and code.dtype == np.int8 and values[code].tolist() == score.tolist()
    many = np.arange(MOST_SCORES + 1) / 7.0
    same, none = number_scores(many, 4096 if block > 3 else 5000)
    assert none is None and same is many


def test_cells_out_of_session_order_are_found_across_a_blocks_end():
    """The order check reads a block of cells at a time: a session going back just past a block's
    end, or just before it, is found; sessions in order, or repeated, are not."""
    cells = window()
    n = SUM_BLOCK + 10
    ordered = np.arange(n, dtype=np.int64) // 7

    def in_order(session: np.ndarray) -> bool:
        return dataclasses.replace(cells, session=session).in_session_order

    assert in_order(ordered) and in_order(np.zeros(n, np.int64))
    for at in (SUM_BLOCK - 1, SUM_BLOCK, SUM_BLOCK + 1, n - 1):
        back = ordered.copy()
        back[at] = back[at - 1] - 1  # one cell's session before the cell ahead of it
        assert not in_order(back), at


def test_the_windows_level_counts_and_active_names_equal_bincount():
    cells = window()
    assert (
        cells.level_counts(cells.reviewer, len(cells.reviewers)).tolist()
        == np.bincount(cells.reviewer, minlength=len(cells.reviewers)).tolist()
    )
    seen = set(np.unique(cells.model).tolist())
    assert cells.active_models == [name for index, name in enumerate(cells.models) if index in seen]


def test_a_window_whose_columns_live_in_files_reports_what_the_same_window_in_memory_does(tmp_path):
    """The report's sections over a window spilled to files (each column copied into one, the
    pages handed back between blocks and sections) and over the same window in memory."""
    from bias_audit.analysis.tenant_report import tenant_report
    from bias_audit.storage.spill import Spill

    digests = Corpus(sessions=60, models=5, seed=11, length_slope=0.4, reviewer_offsets={2: -1.0}).digests()
    cells = window_cells(digests)
    spill = Spill(str(tmp_path))

    def spilled(column: np.ndarray) -> np.ndarray:
        if column.strides == (0,):
            return column
        copy = spill.zeros(len(column), column.dtype)
        copy[:] = column
        return copy

    arrays = {
        field.name: spilled(getattr(cells, field.name))
        for field in dataclasses.fields(cells)
        if isinstance(getattr(cells, field.name), np.ndarray) and getattr(cells, field.name).ndim == 1
    }
    in_files = dataclasses.replace(cells, **arrays, space=spill)
    expected = tenant_report(cells).model_dump(mode="json")
    assert tenant_report(in_files).model_dump(mode="json") == expected
    assert (
        expected["length_control"]
        != tenant_report(window_cells(digests[:30])).model_dump(mode="json")["length_control"]
    )


@pytest.mark.parametrize("block", [1, 7, 40, 10**9])
def test_anchorings_points_gathered_by_blocks_of_sessions_are_each_reviewers_in_session_order(block):
    from bias_audit.analysis.council_biases import _reviewer_points

    cells = window()
    found = first_and_later_residuals(cells, pair_fit(cells))
    assert found is not None
    x, later_sum, later_n = (part.reshape(cells.sessions, len(cells.reviewers)) for part in found)
    points = _reviewer_points(cells, x, later_sum, later_n, block)
    expected = {}
    for r in range(len(cells.reviewers)):  # a reviewer's column at once: the oracle
        mine = ~np.isnan(x[:, r]) & (later_n[:, r] > 0)
        if mine.any():
            expected[r] = (x[mine, r].tolist(), (later_sum[mine, r] / later_n[mine, r]).tolist())
    assert len(expected) >= 3
    assert {r: (a.tolist(), b.tolist()) for r, (a, b, _, _) in points.items()} == expected
    assert all(n == len(a) for a, _, _, n in points.values())


@pytest.mark.parametrize("at_once", [1, 3, 1 << 16])
def test_repeated_sessions_are_nps_repeat_of_the_session_indices(at_once):
    from bias_audit.analysis.window_cells import repeated_sessions

    counts = np.array([2, 0, 3, 1, 0, 0, 4])
    assert repeated_sessions(counts, at_once=at_once).tolist() == [0, 0, 2, 2, 2, 3, 6, 6, 6, 6]
    same = repeated_sessions(np.broadcast_to(5, (4,)), at_once=at_once)  # a council's responses
    assert same.dtype == np.int32 and same.tolist() == np.repeat(np.arange(4), 5).tolist()  # 32 bits while they fit
