"""Single-answer grading and repeat consistency on tables of hand-built games: each expected value
from scipy (Spearman's rho, the t interval, the normal tail), from the formula written out here, or
counted by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from bias_audit.analysis.judge_games import JudgedGame, game_from_event
from bias_audit.analysis.judge_scores import (
    mean_interval,
    mean_scores,
    repeat_consistency,
    score_distribution,
    score_length_correlation,
)
from bias_audit.analysis.judges import judge_report
from bias_audit.analysis.stats import fisher_ci, spearman


def graded(score, *, length=None, item="q", model="m", judge="j", prompt=None, scale=(1.0, 10.0)) -> JudgedGame:
    return JudgedGame(
        judge=judge,
        prompt=prompt,
        item=item,
        models=(model,),
        level=None,
        score=score,
        scale=None if score is None else scale,
        lengths=(length,),
    )


def pair(level, *, item="q", repetition=0) -> JudgedGame:
    p = None if level is None else ((level > 0) - (level < 0) + 1) / 2
    return JudgedGame(
        judge="j", prompt=None, item=item, models=("a", "b"), level=level, p_first=p, repetition=repetition
    )


def single_event(score, *, item="q", model="m", verdict=None) -> dict:
    return {
        "verdict_id": f"v-{item}-{model}-{score}",
        "timestamp": "2026-11-20T10:30:00Z",
        "judge": {"model": "j"},
        "item_id": item,
        "candidates": [{"model": model}],
        "verdict": verdict or {"kind": "scores", "scores": [score], "scale": "1-10"},
    }


def test_a_score_is_not_a_failed_verdict_and_a_failed_grading_is():
    events = [
        single_event(7),
        single_event(9, item="r"),
        single_event(None, item="s", verdict={"kind": "failed", "reason": "-1"}),
    ]
    [judge] = judge_report([game_from_event(e) for e in events]).judges
    assert judge.metrics["failed_rate"].estimate == pytest.approx(1 / 3) and judge.metrics["failed_rate"].n == 3
    assert judge.metrics["tie_rate"].n == 0  # no side preferred, so no tie either
    assert judge.single_answer_verdicts == 3


# (scores, scale, expected mean, ceiling share, floor share): shares at the named scale's ends, else the range seen
DISTRIBUTIONS = [
    ([10, 10, 9, 1, 5], (1.0, 10.0), 7.0, 2 / 5, 1 / 5),
    ([8.5, 9.5, 9.5, 7], (1.0, 10.0), 8.625, 0.0, 0.0),  # nothing at the scale's ends
    ([3, 4, 4, 5], None, 4.0, 1 / 4, 1 / 4),  # unbounded: the highest and lowest seen
    ([0, 10], (1.0, 10.0), 5.0, 1 / 2, 1 / 2),  # a 0 on a 1-10 scale is at (below) its bottom
]


@pytest.mark.parametrize("scores,scale,mean,ceiling,floor", DISTRIBUTIONS)
def test_score_distribution_by_hand(scores, scale, mean, ceiling, floor):
    d = score_distribution([graded(s, scale=scale) for s in scores] + [graded(None)])
    assert d is not None and d.n == len(scores)
    assert d.mean == pytest.approx(mean) and d.sd == pytest.approx(np.std(scores, ddof=1))
    assert (d.min, d.max) == (min(scores), max(scores))
    assert d.ceiling_share == pytest.approx(ceiling) and d.floor_share == pytest.approx(floor)


def test_no_scores_no_distribution():
    assert score_distribution([graded(None), pair(1)]) is None


@pytest.mark.parametrize("seed,n", [(1, 30), (2, 200), (3, 8)])
def test_score_length_correlation_is_spearman_with_a_ci_and_p_on_one_footing(seed, n):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(20, 600, n)
    scores = np.clip(np.round(5 + 0.004 * lengths + rng.normal(0, 2, n)), 1, 10)
    metric = score_length_correlation([graded(float(s), length=int(w)) for s, w in zip(scores, lengths)])
    oracle = stats.spearmanr(lengths, scores)
    assert metric.estimate == pytest.approx(oracle.statistic) and metric.n == n
    # Fisher's z of rho with Bonett and Wright's se, written out: the CI and p from the same z
    se = math.sqrt((1 + oracle.statistic**2 / 2) / (n - 3))
    z = math.atanh(oracle.statistic)
    assert (metric.ci_lower, metric.ci_upper) == pytest.approx(
        (math.tanh(z - 1.959964 * se), math.tanh(z + 1.959964 * se)), abs=1e-6
    )
    assert metric.p_value == pytest.approx(2 * stats.norm.sf(abs(z) / se))
    assert (metric.p_value < 0.05) == (metric.ci_lower > 0 or metric.ci_upper < 0)


def test_score_length_correlation_needs_lengths_and_four_points():
    assert score_length_correlation([graded(5.0), graded(6.0), graded(7.0), graded(8.0)]).n == 0
    few = score_length_correlation([graded(5.0, length=10), graded(6.0, length=20), graded(7.0, length=30)])
    assert few.estimate is None and few.n == 3


def test_spearman_and_its_ci_against_scipy_with_ties():
    x, y = [1, 2, 2, 3, 5, 5, 5, 9], [3, 1, 4, 1, 5, 9, 2, 6]
    rho = spearman(x, y)
    assert rho.r == pytest.approx(stats.spearmanr(x, y).statistic)
    assert fisher_ci(rho.r, 8, rank=True)[0] < fisher_ci(rho.r, 8)[0]  # Bonett-Wright is the wider


@pytest.mark.parametrize("values", [[7.0, 9.0, 8.0, 10.0, 3.0], [5.5, 5.5], list(np.linspace(1, 10, 37))])
def test_mean_score_is_the_t_interval(values):
    metric = mean_interval(values)
    low, high = (
        stats.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=stats.sem(values))
        if np.std(values) > 0
        else (values[0], values[0])
    )
    assert metric.estimate == pytest.approx(np.mean(values)) and metric.n == len(values)
    assert (metric.ci_lower, metric.ci_upper) == pytest.approx((low, high))


def test_one_score_has_a_mean_and_no_interval():
    metric = mean_interval([6.0])
    assert (metric.estimate, metric.ci_lower, metric.ci_upper, metric.n) == (6.0, None, None, 1)


def test_mean_scores_per_judge_and_model_leave_failed_gradings_out():
    games = [
        graded(8, model="a"),
        graded(6, model="a"),
        graded(None, model="a"),
        graded(3, model="b"),
        graded(9, model="a", prompt="other"),
    ]
    by_judge = {("j", None): games[:4], ("j", "other"): games[4:]}
    rows = {(m.prompt, m.model): (m.mean_score.estimate, m.mean_score.n) for m in mean_scores(by_judge)}
    assert rows == {(None, "a"): (7.0, 2), (None, "b"): (3.0, 1), ("other", "a"): (9.0, 1)}


def test_repeat_consistency_of_scores_counts_pairs_within_a_point():
    games = [
        graded(8, item="q1"),
        graded(9, item="q1"),  # agree
        graded(8, item="q2"),
        graded(5, item="q2"),  # disagree
        graded(7, item="q3"),
        graded(None, item="q3"),  # a failed grading: no pair to judge
        graded(4, item="q4"),
    ]  # judged once
    metric = repeat_consistency(games)
    assert (metric.estimate, metric.n) == (0.5, 2)


def test_repeat_consistency_of_pairs_is_the_same_side_and_a_failed_game_is_a_verdict():
    games = [
        pair(1, item="a"),
        pair(2, item="a", repetition=1),  # same side, other strength: agree
        pair(1, item="b"),
        pair(-1, item="b", repetition=1),  # disagree
        pair(None, item="c"),
        pair(None, item="c", repetition=1),  # both failed: agree
        pair(0, item="d"),
        pair(None, item="d", repetition=1),
    ]  # tie vs failed: disagree
    metric = repeat_consistency(games)
    k, n = 2, 4
    # Wilson's score interval written out
    z = 1.959964
    centre = (k / n + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(k / n * (1 - k / n) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert (metric.estimate, metric.n) == (0.5, 4)
    assert (metric.ci_lower, metric.ci_upper) == pytest.approx((centre - half, centre + half), abs=1e-6)


def test_items_judged_many_times_widen_the_interval():
    # 10 items judged 3 times each: 30 dependent pairs; items either all agree or all split
    games = []
    for i in range(10):
        scores = (8, 8, 8) if i < 6 else (2, 6, 10)
        games += [graded(s, item=f"q{i}") for s in scores]
    metric = repeat_consistency(games)
    assert metric.estimate == pytest.approx(18 / 30) and metric.n == 30
    from bias_audit.analysis.proportions import wilson_interval

    independent = wilson_interval(18, 30)
    assert metric.ci_upper - metric.ci_lower > 1.3 * (independent[1] - independent[0])


def test_single_answer_judges_get_no_position_notes():
    [judge] = judge_report([graded(7.0, item="a"), graded(8.0, item="b")]).judges
    assert not any("order" in note for note in judge.notes)
    assert any("--answers" in note for note in judge.notes)  # and how to get the length correlation
