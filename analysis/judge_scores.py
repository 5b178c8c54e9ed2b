"""Single-answer grading (one answer scored alone: MT-Bench's `*_single.jsonl`, rubric scores)
and a judge's agreement with itself when it judged the same thing again.

Per judge: the scores' distribution (where they pile up at the scale's ends) and Spearman's rho
between score and answer length; per (judge, model): the mean score with its t interval
(FastChat's show_result: the mean over the scores it parsed); per judge: repeat consistency.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from .judge_games import JudgedGame
from .judge_metric import EMPTY, Metric
from .proportions import wilson_interval
from .special import stdtrit
from .stats import fisher_ci, sample_std, spearman

SCORE_AGREEMENT = 1.0  # two scores of the same answer agree when at most a point apart


@dataclass(frozen=True, slots=True)
class ScoreDistribution:
    mean: float
    sd: float | None  # None for a single score
    min: float
    max: float
    ceiling_share: float  # at the top of the scale the source names (else the highest seen)
    floor_share: float  # at its bottom (else the lowest seen)
    n: int
    scale: tuple[float, float] | None  # the source's scale, when every score named the same one

    def document(self, digits: int = 4) -> dict[str, object]:
        return {
            "mean": round(self.mean, digits),
            "sd": None if self.sd is None else round(self.sd, digits),
            "min": self.min,
            "max": self.max,
            "ceiling_share": round(self.ceiling_share, digits),
            "floor_share": round(self.floor_share, digits),
            "n": self.n,
        }


@dataclass(frozen=True, slots=True)
class MeanScore:
    judge: str
    prompt: str | None
    model: str
    mean_score: Metric


def score_distribution(games: Sequence[JudgedGame]) -> ScoreDistribution | None:
    numbers = [g.score for g in games if g.score is not None]
    if not numbers:
        return None
    scales = {g.scale for g in games if g.score is not None}
    scale = next(iter(scales)) if len(scales) == 1 else None
    low, high = scale if scale is not None else (min(numbers), max(numbers))
    n = len(numbers)
    return ScoreDistribution(
        mean=sum(numbers) / n,
        sd=sample_std(numbers) if n > 1 else None,
        min=min(numbers),
        max=max(numbers),
        ceiling_share=sum(v >= high for v in numbers) / n,
        floor_share=sum(v <= low for v in numbers) / n,
        n=n,
        scale=scale,
    )


def score_length_correlation(games: Sequence[JudgedGame]) -> Metric:
    """Spearman's rho between a graded answer's score and its length in words; its CI and p from
    Fisher's z with Bonett and Wright's se (stats.spearman), so p < 0.05 when the CI excludes 0."""
    points = [
        (float(g.lengths[0]), g.score)
        for g in games
        if g.score is not None and len(g.lengths) == 1 and g.lengths[0] is not None
    ]
    n = len(points)
    rho = spearman([length for length, _ in points], [score for _, score in points])
    if rho.r is None:
        return Metric(None, None, None, n, None, False)
    interval = fisher_ci(rho.r, n, rank=True)
    low, high = interval if interval is not None else (None, None)
    return Metric(rho.r, low, high, n, rho.p_value, False)


def mean_interval(values: Sequence[float]) -> Metric:
    """The mean with its t interval (n - 1 df); no interval for one value."""
    n = len(values)
    if n == 0:
        return EMPTY
    mean = sum(values) / n
    if n < 2:
        return Metric(mean, None, None, n)
    half = float(stdtrit(n - 1, 0.975)) * sample_std(values) / math.sqrt(n)
    return Metric(mean, mean - half, mean + half, n)


def mean_scores(by_judge: dict[tuple[str, str | None], list[JudgedGame]]) -> list[MeanScore]:
    """Per (judge, model): the mean of the scores the judge gave (failed gradings left out)."""
    out: list[MeanScore] = []
    for (judge, prompt), games in by_judge.items():
        values: dict[str, list[float]] = defaultdict(list)
        for g in games:
            if g.score is not None:
                values[g.models[0]].append(g.score)
        out.extend(MeanScore(judge, prompt, model, mean_interval(v)) for model, v in sorted(values.items()))
    return out


def _agree(a: JudgedGame, b: JudgedGame) -> bool | None:
    """Whether two judgments of the same thing agree: scores within a point (None when either
    was not scored); else the same side, strength ignored, a failed game a verdict of its own."""
    if len(a.models) == 1:
        if a.score is None or b.score is None:
            return None
        return abs(a.score - b.score) <= SCORE_AGREEMENT
    return a.direction == b.direction


def repeat_consistency(games: Sequence[JudgedGame]) -> Metric:
    """Over every pair of games that judged the same item, game and candidates again, the share
    that agree. The interval is Wilson's at the effective number of pairs: an item judged three
    times gives three pairs that are not independent (the design effect of items as clusters)."""
    groups: dict[tuple[object, ...], list[JudgedGame]] = defaultdict(list)
    for g in games:
        groups[(g.item, g.game, g.models)].append(g)
    agreed: list[tuple[int, int]] = []  # (agreeing pairs, pairs) per repeated group
    for group in groups.values():
        if len(group) > 1:
            verdicts = [_agree(a, b) for a, b in combinations(group, 2)]
            judged = [v for v in verdicts if v is not None]
            if judged:
                agreed.append((sum(judged), len(judged)))
    pairs = sum(m for _, m in agreed)
    if pairs == 0:
        return EMPTY
    rate = sum(a for a, _ in agreed) / pairs
    effective = float(pairs)
    if len(agreed) > 1 and any(m > 1 for _, m in agreed) and 0.0 < rate < 1.0:
        groups_n = len(agreed)
        clustered = groups_n / (groups_n - 1) * sum((a - rate * m) ** 2 for a, m in agreed) / pairs**2
        simple = rate * (1.0 - rate) / pairs
        effective = pairs / max(1.0, clustered / simple)
    low, high = wilson_interval(rate * effective, effective)
    return Metric(rate, low, high, pairs)
