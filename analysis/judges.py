"""The judge report's statistics (science.md "Judges"; contract names in the document).

Per judge (model, prompt): position consistency and preference fairness over items judged in
both orders, first-position rate, length preference, accuracy against labels (JudgeBench's
rule), tie and failed rates, self-preference against the other judges on the same items,
agreement with humans (Cohen's kappa), repeat consistency, and for single-answer grading the
scores' distribution and their correlation with length (analysis.judge_scores). Per (judge,
model): AlpacaEval's win rate against the source's baseline, and the mean score. Across judges:
Krippendorff's alpha and which judge departs from the others.

A flag needs a practical size (0.05 from the neutral value; kappa under 0.4; a score-length rho
of 0.3, the council's length threshold) and p < 0.05 after Holm's correction across the judge's tests.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .agreement import krippendorff_alpha_interval
from .judge_games import LEVEL_NAMES, JudgedGame, sign
from .judge_metric import Metric, half_rate_metric, rate_metric
from .judge_scores import (
    MeanScore,
    ScoreDistribution,
    mean_scores,
    repeat_consistency,
    score_distribution,
    score_length_correlation,
)
from .multiple_tests import binomial_two_sided_half, holm
from .proportions import Z95
from .special import stdtrit
from .stats import one_sample_t, sample_std, t_p_values

PRACTICAL_RATE = 0.05  # a rate this far from its neutral value matters
KAPPA_FLOOR = 0.4  # agreement with humans below this is poor
PRACTICAL_RHO = 0.3  # a score-length correlation this strong matters (the council's length threshold)
ALPHA = 0.05
BOOTSTRAP_ROUNDS = 1000
MOST_DISAGREED = 5

JudgeKey = tuple[str, str | None]


@dataclass(frozen=True, slots=True)
class Disagreement:
    item: str
    judge_verdict: str
    human_verdict: str
    distance: int


@dataclass(frozen=True, slots=True)
class JudgeSummary:
    judge: str
    prompt: str | None
    metrics: dict[str, Metric]
    n_verdicts: int
    n_items: int
    both_orders_share: float | None  # items the judge saw in both orders, of those with a known order
    notes: tuple[str, ...] = ()
    disagreements: tuple[Disagreement, ...] = ()
    score_distribution: ScoreDistribution | None = None  # single-answer grading only
    single_answer_verdicts: int = 0  # verdicts grading one answer alone (failed ones too)

    @property
    def flagged(self) -> list[str]:
        return [name for name, metric in self.metrics.items() if metric.flagged]


@dataclass(frozen=True, slots=True)
class WinRate:
    judge: str
    prompt: str | None
    model: str
    win_rate: float  # percent
    ci_lower: float
    ci_upper: float
    n: int
    # a length-controlled win rate (percent): AlpacaEval's minimal GLM, P(model preferred) ~
    # tanh(standardized length difference) + intercept, predicted at no difference; None
    # without both answers' lengths in every game
    length_controlled: float | None = None


@dataclass(frozen=True, slots=True)
class JudgeAgreement:
    alpha: float | None
    units: int  # items rated by at least two judges
    judges: int
    alpha_without: dict[JudgeKey, float | None] = field(default_factory=dict)
    departs: JudgeKey | None = None  # the judge whose removal raises alpha most


@dataclass(frozen=True, slots=True)
class JudgeReport:
    judges: list[JudgeSummary]
    models: list[WinRate]
    agreement: JudgeAgreement | None
    mean_scores: list[MeanScore] = field(default_factory=list)


METRIC_NAMES = (
    "position_consistency",
    "first_position_rate",
    "preference_fairness",
    "length_preference",
    "accuracy",
    "tie_rate",
    "failed_rate",
    "self_preference",
    "human_agreement",
    "repeat_consistency",
    "score_length_correlation",
)
TESTED = (
    "first_position_rate",
    "preference_fairness",
    "length_preference",
    "self_preference",
    "human_agreement",
    "score_length_correlation",
)


def pair_key(game: JudgedGame) -> tuple[str, tuple[str, ...], int]:
    """Games of one item, one pair of candidates and one repetition: a game and its swap."""
    return (game.item, tuple(sorted(game.models)), game.repetition)


def _swapped_pairs(games: list[JudgedGame]) -> list[tuple[JudgedGame, JudgedGame]]:
    """(game 1, game 2) of each item and repetition whose both orders were judged, order known."""
    by_item: dict[tuple[object, ...], dict[int, JudgedGame]] = defaultdict(dict)
    for g in games:
        if g.game is not None and g.order_known:
            by_item[pair_key(g)].setdefault(g.game, g)
    return [(pair[1], pair[2]) for pair in by_item.values() if 1 in pair and 2 in pair]


def position_consistency(pairs: list[tuple[JudgedGame, JudgedGame]]) -> Metric:
    """JudgeBench's rule: game 2's verdict flipped equals game 1's (direction only; a failed
    game is a verdict of its own, so two failed games agree)."""
    same = sum(1 for g1, g2 in pairs if g1.direction == (None if g2.direction is None else -g2.direction))
    return rate_metric(same, len(pairs))


def preference_fairness(pairs: list[tuple[JudgedGame, JudgedGame]]) -> Metric:
    """(recency - primacy) / pairs over swapped pairs (Shi et al. 2024): primacy, the first shown
    won both games; recency, the second shown won both. Sign test of primacy against recency."""
    n = len(pairs)
    if n == 0:
        return Metric(None, None, None, 0, None, False)
    primacy = sum(1 for g1, g2 in pairs if (g1.direction or 0) > 0 and (g2.direction or 0) > 0)
    recency = sum(1 for g1, g2 in pairs if (g1.direction or 0) < 0 and (g2.direction or 0) < 0)
    pr, pp = recency / n, primacy / n
    estimate = pr - pp
    half = Z95 * math.sqrt(max(pr + pp - estimate * estimate, 0.0) / n)
    return Metric(
        estimate,
        max(-1.0, estimate - half),
        min(1.0, estimate + half),
        n,
        binomial_two_sided_half(recency, primacy + recency),
        False,
    )


def first_position_rate(games: list[JudgedGame]) -> Metric:
    decided = [g.direction for g in games if g.order_known and g.direction]
    return half_rate_metric(sum(1 for d in decided if d > 0), len(decided))


def longer_preferred(game: JudgedGame) -> bool | None:
    """Whether a decisive verdict preferred the longer of two answers whose word counts differ
    by at least 10%; None when it does not apply."""
    if len(game.lengths) != 2 or not game.direction:
        return None
    a, b = game.lengths
    if a is None or b is None or a == b or 10 * max(a, b) < 11 * min(a, b):  # in integers: 110 vs 100 counts
        return None
    return (game.direction > 0) == (a > b)


def length_preference(games: list[JudgedGame]) -> Metric:
    preferred = [p for p in map(longer_preferred, games) if p is not None]
    return half_rate_metric(sum(preferred), len(preferred))


def accuracy(games: list[JudgedGame]) -> Metric:
    """Percent correct against labels. An item judged in both orders counts once by JudgeBench's
    rule (+1 per game agreeing with the label, -1 per game agreeing with its flip; correct when
    the sum is positive); any other game counts alone, correct when it agrees."""
    by_item: dict[tuple[object, ...], dict[int, JudgedGame]] = defaultdict(dict)
    singles: list[JudgedGame] = []
    for g in games:
        if g.label is None:
            continue
        if g.game in (1, 2):
            by_item[pair_key(g)].setdefault(g.game, g)
        else:
            singles.append(g)
    correct = total = 0
    for pair in by_item.values():
        if 1 in pair and 2 in pair:
            label = pair[1].label
            counter = 0
            for d in (pair[1].direction, None if pair[2].direction is None else -pair[2].direction):
                if d == label:
                    counter += 1
                elif d is not None and d == -label:  # type: ignore[operator]
                    counter -= 1
            correct += counter > 0
            total += 1
        else:
            singles.extend(pair.values())
    for g in singles:
        correct += g.direction == g.label
        total += 1
    return rate_metric(correct, total, 100.0)


def _human_majority(levels: tuple[int, ...]) -> int:
    """The most common human level; several equally common: their median, rounded toward zero."""
    counts = Counter(levels).most_common()
    top = [level for level, c in counts if c == counts[0][1]]
    if len(top) == 1:
        return top[0]
    ordered = sorted(levels)
    middle = (ordered[(len(ordered) - 1) // 2] + ordered[len(ordered) // 2]) / 2
    return int(middle)


def cohen_kappa(judge: np.ndarray, human: np.ndarray, categories: int, weighted: bool) -> float | None:
    """Cohen's kappa of two raters over category indices 0..categories-1; linear weights when
    `weighted` (the 5-level scale), else unweighted. None when the expected agreement is total."""
    table = np.zeros((categories, categories))
    np.add.at(table, (judge, human), 1.0)
    return _kappa_from_tables(table[None], categories, weighted)[0]


def _kappa_from_tables(tables: np.ndarray, categories: int, weighted: bool) -> list[float | None]:
    idx = np.arange(categories)
    w = 1.0 - np.abs(idx[:, None] - idx[None, :]) / (categories - 1) if weighted else np.eye(categories)
    n = tables.sum(axis=(1, 2))
    observed = (tables * w).sum(axis=(1, 2)) / n
    rows, cols = tables.sum(axis=2), tables.sum(axis=1)
    expected = np.einsum("bi,ij,bj->b", rows, w, cols) / (n * n)
    out: list[float | None] = []
    for o, e in zip(observed.tolist(), expected.tolist()):
        out.append(None if e >= 1.0 - 1e-12 else (o - e) / (1.0 - e))
    return out


def human_agreement(games: list[JudgedGame], seed: int = 0) -> tuple[Metric, tuple[Disagreement, ...]]:
    """Kappa of the judge's verdict against the majority human verdict per game; weighted on 5
    levels when both sides use strengths (A>>B), else unweighted on 3. CI: bootstrap over items."""
    rated = [(g, _human_majority(g.humans)) for g in games if g.humans and g.level is not None]
    if not rated:
        return Metric(None, None, None, 0, None, False), ()
    five = any(abs(g.level or 0) == 2 for g, _ in rated) and any(abs(h) == 2 for g, _ in rated for h in g.humans)
    if five:
        j = np.array([g.level for g, _ in rated]) + 2
        h = np.array([m for _, m in rated]) + 2
        categories = 5
    else:
        j = np.array([g.direction for g, _ in rated]) + 1
        h = np.array([sign(m) for _, m in rated]) + 1
        categories = 3
    estimate = cohen_kappa(j, h, categories, five)
    _, item = np.unique([g.item for g, _ in rated], return_inverse=True)
    n_items = int(item.max()) + 1
    per_item = np.zeros((n_items, categories * categories))
    np.add.at(per_item, (item, j * categories + h), 1.0)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n_items, np.full(n_items, 1.0 / n_items), size=BOOTSTRAP_ROUNDS).astype(np.float64)
    tables = (weights @ per_item).reshape(BOOTSTRAP_ROUNDS, categories, categories)
    boot = np.array([np.nan if k is None else k for k in _kappa_from_tables(tables, categories, five)])
    boot = boot[np.isfinite(boot)]
    if estimate is None or len(boot) == 0:
        metric = Metric(estimate, None, None, len(rated), None, False)
    else:
        low, high = np.percentile(boot, [2.5, 97.5]).tolist()
        p = (int(np.sum(boot >= KAPPA_FLOOR)) + 1) / (len(boot) + 1)  # one-sided: kappa under the floor
        metric = Metric(estimate, low, high, len(rated), p, False)
    worst = sorted(rated, key=lambda pair: (-abs(pair[0].level - pair[1]), pair[0].item))  # type: ignore[operator]
    disagreements = tuple(
        Disagreement(g.item, LEVEL_NAMES[g.level], LEVEL_NAMES[m], abs(g.level - m))  # type: ignore[index,operator]
        for g, m in worst[:MOST_DISAGREED]
        if g.level != m
    )
    return metric, disagreements


@lru_cache(maxsize=4096)
def _normalized_model(name: str) -> str:
    return name.rsplit("/", 1)[-1].strip().lower()


def _model_preference(game: JudgedGame, position: int) -> float | None:
    """P(the candidate at `position` preferred) in a two-candidate game; None when failed."""
    if game.p_first is None or len(game.models) != 2:
        return None
    return game.p_first if position == 0 else 1.0 - game.p_first


def _own_model_preferences(
    games: list[JudgedGame], own: str, items: Container[str] | None = None
) -> dict[str, list[float]]:
    """Per item, P(the `own` model preferred) in each game it met another model (of `items` only)."""
    out: dict[str, list[float]] = defaultdict(list)
    for g in games:
        if items is not None and g.item not in items:
            continue
        for position, model in enumerate(g.models):
            if _normalized_model(model) == own and len(set(map(_normalized_model, g.models))) == 2:
                p = _model_preference(g, position)
                if p is not None:
                    out[g.item].append(p)
    return out


def self_preference(key: JudgeKey, by_judge: dict[JudgeKey, list[JudgedGame]]) -> Metric | None:
    """The judge's preference for its own model minus the other judges' on the same items
    (paired by item). None when the judge's model is not a candidate's."""
    own = _normalized_model(key[0])
    mine = _own_model_preferences(by_judge[key], own)
    if not mine:
        return None
    theirs: dict[str, dict[JudgeKey, list[float]]] = defaultdict(dict)
    for other, games in by_judge.items():
        if other != key:
            for item, values in _own_model_preferences(games, own, mine).items():
                theirs[item][other] = values
    diffs = []
    for item, values in mine.items():
        judges = theirs.get(item)
        if judges:
            others = sum(sum(v) / len(v) for v in judges.values()) / len(judges)
            diffs.append(sum(values) / len(values) - others)
    if not diffs:
        return Metric(None, None, None, 0, None, False)
    n = len(diffs)
    estimate = sum(diffs) / n
    test = one_sample_t(diffs)
    if test is None:
        return Metric(estimate, None, None, n, None, False)
    half = float(stdtrit(test[0], 0.975)) * sample_std(diffs) / math.sqrt(n)
    p = t_p_values([test], two_sided=True)[0]
    return Metric(estimate, estimate - half, estimate + half, n, p, False)


def flagged_metrics(metrics: dict[str, Metric], tests: Sequence[str] = TESTED) -> dict[str, Metric]:
    """Holm across the judge's tests; a flag needs the practical size too."""
    tested = [name for name in tests if metrics[name].p_value is not None and metrics[name].estimate is not None]
    adjusted = dict(zip(tested, holm([metrics[name].p_value for name in tested])))  # type: ignore[misc]
    out = dict(metrics)
    for name in tested:
        m = metrics[name]
        assert m.estimate is not None
        if name == "human_agreement":
            practical = m.estimate < KAPPA_FLOOR
        elif name == "score_length_correlation":
            practical = abs(m.estimate) >= PRACTICAL_RHO
        elif name in ("preference_fairness", "self_preference"):
            practical = abs(m.estimate) >= PRACTICAL_RATE
        else:
            practical = abs(m.estimate - 0.5) >= PRACTICAL_RATE
        out[name] = Metric(m.estimate, m.ci_lower, m.ci_upper, m.n, m.p_value, practical and adjusted[name] < ALPHA)
    return out


def _both_orders_share(games: list[JudgedGame]) -> float | None:
    orders: dict[tuple[object, ...], set[object]] = defaultdict(set)
    for g in games:
        if not g.order_known:
            continue
        if g.game is not None:
            orders[pair_key(g)].add(g.game % 2)
        elif len(g.models) == 2 and g.models[0] != g.models[1]:
            orders[pair_key(g)].add(g.models)
    if not orders:
        return None
    return sum(1 for seen in orders.values() if len(seen) >= 2) / len(orders)


def summarize_judge(key: JudgeKey, by_judge: dict[JudgeKey, list[JudgedGame]], seed: int = 0) -> JudgeSummary:
    games = by_judge[key]
    decided = [g for g in games if g.level is not None]
    pairs = _swapped_pairs(games)
    human, disagreements = human_agreement(games, seed)
    self_pref = self_preference(key, by_judge)
    metrics = {
        "position_consistency": position_consistency(pairs),
        "first_position_rate": first_position_rate(games),
        "preference_fairness": preference_fairness(pairs),
        "length_preference": length_preference(games),
        "accuracy": accuracy(games),
        "tie_rate": rate_metric(sum(1 for g in decided if g.level == 0), len(decided)),
        "failed_rate": rate_metric(sum(1 for g in games if g.failed), len(games)),
        "self_preference": self_pref if self_pref is not None else Metric(None, None, None, 0, None, False),
        "human_agreement": human,
        "repeat_consistency": repeat_consistency(games),
        "score_length_correlation": score_length_correlation(games),
    }
    share = _both_orders_share(games)
    notes = _notes(games, metrics, share, has_pairs=bool(pairs), self_pref=self_pref)
    return JudgeSummary(
        key[0],
        key[1],
        flagged_metrics(metrics),
        len(games),
        len({g.item for g in games}),
        share,
        tuple(notes),
        disagreements,
        score_distribution(games),
        sum(1 for g in games if len(g.models) == 1),
    )


def _notes(
    games: list[JudgedGame],
    metrics: dict[str, Metric],
    share: float | None,
    *,
    has_pairs: bool,
    self_pref: Metric | None,
) -> list[str]:
    """What a reader must know to read the judge's figures: what could not be measured, and why."""
    notes: list[str] = []
    compared = [g for g in games if len(g.models) == 2]
    known = [g for g in compared if g.order_known]
    if compared and not known:
        notes.append("order unknown: the source does not record which answer was shown first, so no position metric")
    elif known and all(g.order_randomized for g in known):
        notes.append(
            "the source drew each item's display order at random, so first_position_rate measures "
            "position, not which answer was better"
        )
    elif share is not None and share < 1.0 and metrics["first_position_rate"].n:
        seen = (
            "no pair was"
            if share == 0
            else "fewer than 1% of pairs were"
            if share < 0.01
            else f"only {share:.0%} of pairs were"
        )
        notes.append(
            f"{seen} seen in both orders: first_position_rate mixes position with quality unless the source "
            "randomized the order"
        )
    if known and not has_pairs:
        notes.append("no item judged in both orders: no position consistency or preference fairness")
    if self_pref is not None and self_pref.n == 0:
        notes.append("the judge is a candidate's model, but no other judge rated the same items: no self-preference")
    if any(g.score is not None for g in games) and metrics["score_length_correlation"].n == 0:
        notes.append(
            "no answer lengths: give the answers (MT-Bench: --answers model_answer/) for score_length_correlation"
        )
    return notes


def win_rates(by_judge: dict[JudgeKey, list[JudgedGame]]) -> list[WinRate]:
    """AlpacaEval's win rate per (judge, model) against the baseline: mean P(model preferred),
    ties 0.5, in percent; CI: mean +- 1.96 standard errors."""
    out = []
    for key, games in by_judge.items():
        values: dict[str, list[float]] = defaultdict(list)
        gaps: dict[str, list[float | None]] = defaultdict(list)  # baseline's words minus the model's
        for g in games:
            if g.baseline is None or len(g.models) != 2:
                continue
            position = 1 - g.baseline
            p = _model_preference(g, position)
            if p is not None:
                values[g.models[position]].append(p)
                lengths = g.lengths if len(g.lengths) == 2 else (None, None)
                ours, theirs = lengths[position], lengths[g.baseline]
                gaps[g.models[position]].append(None if ours is None or theirs is None else float(theirs - ours))
        for model, ps in sorted(values.items()):
            array = np.asarray(ps)
            mean = float(array.mean())
            sem = float(array.std(ddof=1) / math.sqrt(len(array))) if len(array) > 1 else 0.0
            known = gaps[model]
            controlled = (
                None
                if any(gap is None for gap in known)
                else length_controlled_win_rate(array, np.asarray(known, dtype=np.float64))
            )
            out.append(
                WinRate(
                    key[0],
                    key[1],
                    model,
                    100 * mean,
                    max(0.0, 100 * (mean - Z95 * sem)),
                    min(100.0, 100 * (mean + Z95 * sem)),
                    len(array),
                    controlled,
                )
            )
    return out


def length_controlled_win_rate(preferences: np.ndarray, gaps: np.ndarray, iterations: int = 50) -> float | None:
    """Percent: the logistic fit of P(model preferred) (continuous targets, cross-entropy) on
    tanh(gap / sd(gap)) and an intercept, predicted at no length difference: logistic(intercept).
    AlpacaEval's length_controlled_minimal formula, fitted by Newton's method without a penalty.
    None below 10 games or with no spread in the gaps."""
    if len(preferences) < 10:
        return None
    spread = gaps.std(ddof=1)
    if not spread > 0:
        return None
    x = np.column_stack([np.tanh(gaps / spread), np.ones(len(gaps))])
    y = np.clip(preferences, 0.0, 1.0)
    beta = np.zeros(2)
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(x @ beta)))
        gradient = x.T @ (y - p)
        hessian = (x * (p * (1 - p))[:, None]).T @ x
        try:
            step = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            return None
        beta += step
        if np.abs(step).max() < 1e-10:
            break
    if not np.all(np.isfinite(beta)):
        return None
    return float(100.0 / (1.0 + math.exp(-beta[1])))


def _oriented(game: JudgedGame) -> tuple[tuple[str, ...], int] | None:
    """The game's unit (item and candidates) and its direction in a canonical orientation: for
    two different models, + prefers the alphabetically first; for two answers of one model,
    + prefers game 1's first shown."""
    if game.direction is None or len(game.models) != 2:
        return None
    a, b = game.models
    if a != b:
        flip = a > b
        unit = (game.item, min(a, b), max(a, b))
    else:
        if game.game is None:
            return None
        flip = game.game % 2 == 0
        unit = (game.item, a, b)
    return unit, -game.direction if flip else game.direction


def judge_agreement(by_judge: dict[JudgeKey, list[JudgedGame]]) -> JudgeAgreement | None:
    """Krippendorff's alpha (interval metric on the direction) among judges over shared items;
    each judge's value per item is the mean of its games. Only judges that share an item with
    another count (and may depart). None with fewer than two judges."""
    if len(by_judge) < 2:
        return None
    values: dict[tuple[JudgeKey, tuple[str, ...]], list[int]] = defaultdict(list)
    for key, games in by_judge.items():
        for g in games:
            oriented = _oriented(g)
            if oriented is not None:
                values[(key, oriented[0])].append(oriented[1])
    keys = list(by_judge)
    index = {key: i for i, key in enumerate(keys)}
    units_of = {unit for _, unit in values}
    unit_index = {unit: i for i, unit in enumerate(sorted(units_of))}
    judge_ids = np.array([index[key] for key, _ in values], dtype=np.int64)
    unit_ids = np.array([unit_index[unit] for _, unit in values], dtype=np.int64)
    vals = np.array([sum(v) / len(v) for v in values.values()], dtype=np.float64)

    def alpha(mask: np.ndarray) -> tuple[float | None, int]:
        return krippendorff_alpha_interval(vals[mask], unit_ids[mask])

    everyone, _ = alpha(np.ones(len(vals), dtype=bool))
    raters = np.bincount(unit_ids, minlength=len(unit_index))
    shared = int(np.sum(raters >= 2))
    sharing = set(judge_ids[raters[unit_ids] >= 2].tolist())
    keys = [key for key in keys if index[key] in sharing]
    without = {key: alpha(judge_ids != index[key])[0] for key in keys} if len(keys) >= 3 else {}
    departs = None
    known = [(a, key) for key, a in without.items() if a is not None]
    if everyone is not None and known:
        best, key = max(known, key=lambda entry: entry[0])  # by alpha alone: a prompt may be None
        if best > everyone:
            departs = key
    return JudgeAgreement(everyone, shared, len(keys), without, departs)


def group_by_judge(games: Iterable[JudgedGame]) -> dict[JudgeKey, list[JudgedGame]]:
    by_judge: dict[JudgeKey, list[JudgedGame]] = defaultdict(list)
    for g in games:
        by_judge[g.key].append(g)
    return dict(by_judge)


def _go_on() -> None:
    pass


def judge_report(games: Sequence[JudgedGame], seed: int = 0, checkpoint: Callable[[], None] = _go_on) -> JudgeReport:
    """The report over every judge's games; `checkpoint()` runs between its steps (a caller's time
    budget stops the work there by raising)."""
    by_judge = group_by_judge(games)
    summaries = []
    for key in sorted(by_judge, key=lambda k: (k[0], k[1] or "")):
        checkpoint()
        summaries.append(summarize_judge(key, by_judge, seed))
    summaries.sort(key=lambda s: (not s.flagged, s.judge, s.prompt or ""))
    checkpoint()
    rates = win_rates(by_judge)
    checkpoint()
    agreement = judge_agreement(by_judge)
    return JudgeReport(summaries, rates, agreement, mean_scores(by_judge))
