"""The judge metrics on tables of hand-built games, each expected value worked out by hand from
the documented rule (science.md "Judges") or computed by an independent library (scikit-learn's
Cohen's kappa, the krippendorff package, scipy's binomial test)."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn.metrics import cohen_kappa_score

from bias_audit.analysis.judge_games import JudgedGame, game_from_event
from bias_audit.analysis.judges import (
    _swapped_pairs,
    accuracy,
    cohen_kappa,
    first_position_rate,
    human_agreement,
    judge_agreement,
    judge_report,
    length_preference,
    position_consistency,
    preference_fairness,
    self_preference,
    win_rates,
)
from bias_audit.analysis.multiple_tests import binomial_two_sided_half
from bias_audit.analysis.proportions import wilson_interval


def game(level, *, item="q", game_no=None, judge="j", models=("m", "m"), **extra) -> JudgedGame:
    p_first = None if level is None else ((level > 0) - (level < 0) + 1) / 2
    return JudgedGame(
        judge=judge, prompt=None, item=item, models=models, level=level, p_first=p_first, game=game_no, **extra
    )


def swapped(item: str, g1: int | None, g2: int | None, label: int | None = None) -> list[JudgedGame]:
    """An item judged in both orders; label in game 1's positions (game 2's is its flip)."""
    return [
        game(g1, item=item, game_no=1, label=label),
        game(g2, item=item, game_no=2, label=None if label is None else -label),
    ]


# (game 1 level, game 2 level, consistent?, primacy?, recency?), by JudgeBench's rule
SWAPS = [
    (1, -1, True, False, False),  # A then (swapped) B: the same answer both times
    (2, -1, True, False, False),  # strength ignored
    (-2, 1, True, False, False),
    (1, 1, False, True, False),  # the first shown both times
    (-1, -2, False, False, True),  # the second shown both times
    (0, 0, True, False, False),  # a tie survives the swap
    (None, None, True, False, False),  # two failed games: a verdict of its own, the same
    (None, 1, False, False, False),
    (0, 1, False, False, False),
]


def test_position_consistency_and_preference_fairness_by_hand():
    games = [g for i, (a, b, *_) in enumerate(SWAPS) for g in swapped(f"q{i}", a, b)]
    pairs = _swapped_pairs(games)
    assert len(pairs) == len(SWAPS)
    consistent = sum(row[2] for row in SWAPS)
    primacy, recency = sum(row[3] for row in SWAPS), sum(row[4] for row in SWAPS)
    pc = position_consistency(pairs)
    assert pc.estimate == pytest.approx(consistent / 9) and pc.n == 9
    assert (pc.ci_lower, pc.ci_upper) == pytest.approx(wilson_interval(consistent, 9))
    pf = preference_fairness(pairs)
    assert pf.estimate == pytest.approx((recency - primacy) / 9)
    assert pf.p_value == pytest.approx(binomtest(recency, primacy + recency, 0.5).pvalue)


def test_first_position_rate_counts_decisive_known_order_verdicts_only():
    games = [game(2), game(1), game(1), game(-1), game(0), game(None), game(1, order_known=False)]
    metric = first_position_rate(games)
    assert (metric.estimate, metric.n) == (0.75, 4)  # 3 of the 4 decisive ones prefer the first shown
    assert metric.p_value == pytest.approx(binomtest(3, 4, 0.5).pvalue)


@pytest.mark.parametrize("k,n", [(0, 1), (3, 4), (30, 50), (250, 500), (311, 500), (1, 1000)])
def test_exact_binomial_matches_scipy(k, n):
    assert binomial_two_sided_half(k, n) == pytest.approx(binomtest(k, n, 0.5).pvalue, rel=1e-9)


def test_accuracy_is_judgebench_rule():
    # label A>B (+1): per pair +1 per game agreeing (game 2 flipped), -1 per game agreeing with the flip
    games = (
        swapped("a", 1, -1, label=1)  # +2: correct
        + swapped("b", 1, 1, label=1)  # +1 - 1 = 0: not correct
        + swapped("c", 0, -1, label=1)  # 0 + 1: correct
        + swapped("d", None, 1, label=1)  # 0 - 1: not correct
        + [game(-1, item="e", label=-1), game(1, item="f", label=-1)]
    )  # single games: 1 of 2 agree
    metric = accuracy(games)
    assert metric.estimate == pytest.approx(100 * 3 / 6) and metric.n == 6


def test_length_preference_needs_a_ten_percent_difference():
    games = [
        game(1, lengths=(100, 50)),
        game(-1, lengths=(100, 50)),
        game(1, lengths=(110, 100)),
        game(1, lengths=(109, 100)),
        game(0, lengths=(200, 10)),
        game(1, lengths=(None, 10)),
        game(-1, lengths=(10, 200)),
    ]
    metric = length_preference(games)
    # eligible: (100,50) first: longer; (100,50) second: shorter; (110,100) first: longer; (10,200) second: longer
    assert (metric.estimate, metric.n) == (0.75, 4)


@pytest.mark.parametrize("weighted", [False, True])
def test_cohen_kappa_matches_scikit_learn(weighted):
    rng = np.random.default_rng(3)
    judge = rng.integers(0, 5 if weighted else 3, 200)
    human = np.where(rng.random(200) < 0.6, judge, rng.integers(0, 5 if weighted else 3, 200))
    ours = cohen_kappa(judge, human, 5 if weighted else 3, weighted)
    assert ours == pytest.approx(cohen_kappa_score(judge, human, weights="linear" if weighted else None))


def test_human_agreement_uses_the_majority_and_three_levels_without_strengths():
    games = [
        game(1, item="a", humans=(1, 1, -1)),
        game(-1, item="b", humans=(-1,)),
        game(0, item="c", humans=(0, 0)),
        game(1, item="d", humans=(-1, -1)),
        game(-1, item="e", humans=(1, -1)),
    ]  # e: a tie of modes -> 0
    metric, worst = human_agreement(games)
    judge = [2, 0, 1, 2, 0]
    majority = [2, 0, 1, 0, 1]
    assert metric.estimate == pytest.approx(cohen_kappa_score(judge, majority)) and metric.n == 5
    assert metric.ci_lower <= metric.estimate <= metric.ci_upper
    assert worst[0].item == "d" and worst[0].distance == 2


def test_win_rate_is_alpaca_evals_mean_preference():
    # preferences of the compared model: 1 (baseline wins), 2, 1.5 (draw), 0.7 probability
    base = dict(judge="ann", models=("base", "m"), baseline=0)
    games = [
        JudgedGame(
            item=str(i), level=None if p is None else 0, p_first=None if p is None else 1 - p, prompt=None, **base
        )
        for i, p in enumerate([0.0, 1.0, 0.5, 0.7, None])
    ]
    [rate] = win_rates({("ann", None): games})
    assert rate.model == "m" and rate.n == 4
    assert rate.win_rate == pytest.approx(100 * (0 + 1 + 0.5 + 0.7) / 4)
    sem = np.std([0, 1, 0.5, 0.7], ddof=1) / 2
    assert rate.ci_lower == pytest.approx(max(0.0, 100 * (0.55 - 1.959963984540054 * sem)))


def test_self_preference_against_the_other_judges_on_the_same_items():
    def verdicts(judge, wins):  # judge's verdicts on items 0..n of "gpt-x" (shown first) against "other"
        return [
            JudgedGame(
                judge=judge,
                prompt=None,
                item=str(i),
                models=("gpt-x", "other"),
                level=1 if w else -1,
                p_first=1.0 if w else 0.0,
            )
            for i, w in enumerate(wins)
        ]

    by_judge = {
        ("gpt-x", None): verdicts("gpt-x", [1, 1, 1, 0]),
        ("judge-b", None): verdicts("judge-b", [1, 0, 0, 0]),
        ("judge-c", None): verdicts("judge-c", [1, 0, 1, 0]),
    }
    metric = self_preference(("gpt-x", None), by_judge)
    diffs = [1 - 1, 1 - 0, 1 - 0.5, 0 - 0]
    assert metric.estimate == pytest.approx(sum(diffs) / 4) and metric.n == 4
    from scipy.stats import ttest_1samp

    assert metric.p_value == pytest.approx(ttest_1samp(diffs, 0).pvalue)
    assert self_preference(("judge-b", None), by_judge) is None  # not a candidate's model


def test_agreement_between_judges_matches_the_krippendorff_package():
    rng = np.random.default_rng(5)
    truth = rng.choice([-1, 1], 40)
    by_judge = {}
    table = []
    for j, noise in enumerate([0.1, 0.2, 0.6]):
        directions = np.where(rng.random(40) < noise, -truth, truth)
        by_judge[(f"j{j}", None)] = [
            JudgedGame(judge=f"j{j}", prompt=None, item=str(i), models=("a", "b"), level=int(d), p_first=float(d > 0))
            for i, d in enumerate(directions)
        ]
        table.append(directions.astype(float))
    result = judge_agreement(by_judge)
    expected = krippendorff.alpha(reliability_data=np.array(table), level_of_measurement="interval")
    assert result.alpha == pytest.approx(expected)
    assert result.departs == ("j2", None)  # the noisiest judge
    without = krippendorff.alpha(reliability_data=np.array(table[:2]), level_of_measurement="interval")
    assert result.alpha_without[("j2", None)] == pytest.approx(without)


def test_a_judge_that_shares_no_item_is_not_one_of_the_agreeing_judges():
    rng = np.random.default_rng(9)
    truth = rng.choice([-1, 1], 30)
    by_judge = {}
    for j, noise in enumerate([0.1, 0.3]):
        directions = np.where(rng.random(30) < noise, -truth, truth)
        by_judge[(f"j{j}", None)] = [
            JudgedGame(judge=f"j{j}", prompt=None, item=str(i), models=("a", "b"), level=int(d), p_first=float(d > 0))
            for i, d in enumerate(directions)
        ]
    alone = [
        JudgedGame(judge="alone", prompt=None, item=f"own-{i}", models=("a", "b"), level=1, p_first=1.0)
        for i in range(30)
    ]
    shared = judge_agreement(by_judge)
    result = judge_agreement({**by_judge, ("alone", None): alone})
    assert (result.judges, result.units) == (2, 30)
    assert result.alpha == pytest.approx(shared.alpha)  # its items have no second rating: alpha is unmoved
    assert ("alone", None) not in result.alpha_without and result.departs is None


def _order_games(randomized: bool) -> list[JudgedGame]:
    # each pair seen in one order only, by a judge that prefers the first shown 70 times in 100
    return [
        JudgedGame(
            judge="j",
            prompt=None,
            item=str(i),
            models=("base", "m") if i % 2 else ("m", "base"),
            level=1 if i % 10 < 7 else -1,
            p_first=1.0 if i % 10 < 7 else 0.0,
            order_randomized=randomized,
        )
        for i in range(100)
    ]


def test_notes_say_what_is_true_of_the_display_order():
    [fixed] = judge_report(_order_games(False)).judges
    [random_order] = judge_report(_order_games(True)).judges
    assert any(
        note.startswith("no pair was seen in both orders: first_position_rate mixes position with quality")
        for note in fixed.notes
    )
    assert not any("%" in note for note in fixed.notes + random_order.notes)
    assert any("drew each item's display order at random" in note for note in random_order.notes)
    assert not any("mixes position with quality" in note for note in random_order.notes)


def test_flags_need_practical_size_and_holm():
    # 60 of 100 prefer the first shown: p = 0.057 before correction, not flagged
    near = [game(1, item=str(i)) for i in range(60)] + [game(-1, item=str(60 + i)) for i in range(40)]
    [summary] = judge_report(near).judges
    assert not summary.metrics["first_position_rate"].flagged
    # 320 of 500: far from 1/2 and far below any correction: flagged
    far = [game(1, item=str(i)) for i in range(320)] + [game(-1, item=str(400 + i)) for i in range(180)]
    [summary] = judge_report(far).judges
    assert summary.metrics["first_position_rate"].flagged and summary.flagged == ["first_position_rate"]


def test_an_event_becomes_a_game():
    event = {
        "verdict_id": "v",
        "tenant_id": "t",
        "judge": {"model": "j", "prompt": "p"},
        "item_id": "i",
        "game": 2,
        "candidates": [
            {"model": "a", "response": "one two three"},
            {"model": "b", "length_words": 7, "baseline": True},
        ],
        "verdict": {"kind": "scores", "scores": [1.0, 3.5]},
        "label": "A>>B",
        "human": [{"preference": "B>A"}, {"preferred_model": "a"}, {"tie": True}],
    }
    g = game_from_event(event)
    assert (g.key, g.level, g.p_first, g.lengths, g.baseline, g.label, g.humans) == (
        ("j", "p"),
        -1,
        0.0,
        (3, 7),
        1,
        1,
        (-1, 1, 0),
    )
    probability = game_from_event({**event, "verdict": {"kind": "probability", "p_first": 0.73}})
    assert (probability.level, probability.p_first) == (1, 0.73)
    failed = game_from_event({**event, "verdict": {"kind": "failed"}})
    assert failed.level is None and failed.direction is None
    assert math.isclose(game_from_event({**event, "verdict": {"kind": "pairwise", "preference": "A=B"}}).p_first, 0.5)


def test_the_length_controlled_win_rate_is_the_logistic_fit_at_no_length_difference():
    from sklearn.linear_model import LogisticRegression

    from bias_audit.analysis.judges import length_controlled_win_rate

    rng = np.random.default_rng(11)
    gaps = rng.normal(0, 50, 400)  # the baseline's words minus the model's: longer models win more below
    preferences = 1 / (1 + np.exp(-(0.3 - 1.5 * np.tanh(gaps / gaps.std(ddof=1))))) * rng.uniform(0.8, 1.0, 400)
    ours = length_controlled_win_rate(preferences, gaps)
    # the oracle: scikit-learn's unpenalized logistic regression on continuous targets, each game
    # twice (label 1 weighted p, label 0 weighted 1 - p), as AlpacaEval fits its GLM
    x = np.tanh(gaps / gaps.std(ddof=1))[:, None]
    fit = LogisticRegression(C=np.inf, fit_intercept=True, tol=1e-10, max_iter=1000).fit(
        np.vstack([x, x]), np.r_[np.ones(400), np.zeros(400)], sample_weight=np.r_[preferences, 1 - preferences]
    )
    assert ours == pytest.approx(100 / (1 + math.exp(-fit.intercept_[0])), abs=1e-4)
    assert ours != pytest.approx(100 * preferences.mean(), abs=1.0)  # it moved away from the raw win rate
    assert length_controlled_win_rate(preferences[:5], gaps[:5]) is None


def test_the_departing_judge_is_found_when_prompts_are_missing_for_some_judges():
    # equal alphas without two judges whose keys differ only by a prompt and no prompt: no comparison of None with text
    games = {("j", None): [], ("j", "p"): [], ("k", "p"): []}
    for i in range(30):
        for key in games:
            d = 1 if (i % 3 or key == ("k", "p")) else -1
            games[key].append(
                JudgedGame(judge=key[0], prompt=key[1], item=str(i), models=("a", "b"), level=d, p_first=float(d > 0))
            )
    result = judge_agreement(games)
    assert result.departs == ("k", "p")
    assert result.alpha_without[("j", None)] == result.alpha_without[("j", "p")]
