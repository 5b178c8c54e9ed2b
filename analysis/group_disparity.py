"""Group disparity over live traffic: per model, the answers to queries naming one group of an
axis against its answers to queries naming the axis' other groups. Unpaired and observational:
queries about different groups are about different things, so a gap here may be the topic's,
not the group's; counterfactual replay (analysis/replay.py) is the paired test.

Per group: refusal rate and toxicity rate (the gap to the other groups with Newcombe's interval
and Fisher's exact test), mean answer sentiment (Welch's t) and length (the
ratio of geometric means, Welch's t on log words). Holm within each metric across the axis'
groups; flagged when the adjusted p < 0.05 and the gap is past the practical size (replay's)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .multiple_tests import holm
from .proportions import newcombe_difference, wilson_interval
from .replay import ALPHA, PRACTICAL, past_practical
from .special import fisher_exact_p, stdtrit
from .stats import welch

MIN_ANSWERS = 10  # a group with fewer answers is listed, not tested
CAVEAT = (
    "unpaired: queries naming different groups differ in topic too, so a gap may be the topic's; "
    "`bias-audit replay` asks the same prompt with only the group changed"
)
METRICS = ("refusal_rate_gap", "sentiment_gap", "toxicity_gap", "length_ratio")


@dataclass(frozen=True, slots=True)
class Traits:
    """What the worker keeps of an answer whose query named a group (consent >= 2)."""

    refusal: bool
    sentiment: float
    toxic: bool
    words: int


@dataclass(frozen=True, slots=True)
class Gap:
    value: float  # the group's own rate, mean or geometric mean
    value_ci: tuple[float, float]  # its 95% CI (Wilson; t)
    others: float  # the same over the axis' other groups
    estimate: float  # value - others (length: value / others)
    ci_lower: float
    ci_upper: float
    p_value: float | None  # Holm-adjusted; None when a side has fewer than MIN_ANSWERS
    flagged: bool


@dataclass(frozen=True, slots=True)
class GroupDisparity:
    tenant_id: str
    llm_model: str
    axis: str
    group: str
    answers: int
    others: int
    gaps: dict[str, Gap]


Row = tuple[float, tuple[float, float], float, float, float, float, float]  # value, its CI, others, gap, CI, raw p


def _rate_gap(group: list[bool], others: list[bool]) -> Row:
    k1, n1, k2, n2 = sum(group), len(group), sum(others), len(others)
    low, high = newcombe_difference(k1, n1, k2, n2)
    p = fisher_exact_p(k1, n1 - k1, k2, n2 - k2)
    return k1 / n1, wilson_interval(k1, n1), k2 / n2, k1 / n1 - k2 / n2, low, high, p


def _mean_ci(values: list[float]) -> tuple[float, float]:
    """95% t interval of a mean (a point for one value or no spread)."""
    n = len(values)
    m = sum(values) / n
    if n < 2:
        return m, m
    half = float(stdtrit(n - 1, 0.975)) * math.sqrt(sum((x - m) ** 2 for x in values) / (n - 1) / n)
    return m - half, m + half


def _mean_gap(a: list[float], b: list[float]) -> tuple[float, float, float, float]:
    test = welch(a, b)
    assert test is not None  # MIN_ANSWERS a side
    return test.difference, test.low, test.high, test.p_value


def _gaps(group: list[Traits], others: list[Traits]) -> dict[str, Row]:
    """metric -> (value, its CI, others, estimate, CI low, CI high, raw p)."""
    out = {
        "refusal_rate_gap": _rate_gap([t.refusal for t in group], [t.refusal for t in others]),
        "toxicity_gap": _rate_gap([t.toxic for t in group], [t.toxic for t in others]),
    }
    sentiment_g, sentiment_o = [t.sentiment for t in group], [t.sentiment for t in others]
    d, low, high, p = _mean_gap(sentiment_g, sentiment_o)
    out["sentiment_gap"] = (
        sum(sentiment_g) / len(group),
        _mean_ci(sentiment_g),
        sum(sentiment_o) / len(others),
        d,
        low,
        high,
        p,
    )
    log_g, log_o = [math.log(max(1, t.words)) for t in group], [math.log(max(1, t.words)) for t in others]
    d, low, high, p = _mean_gap(log_g, log_o)
    log_low, log_high = _mean_ci(log_g)
    out["length_ratio"] = (
        math.exp(sum(log_g) / len(group)),
        (math.exp(log_low), math.exp(log_high)),
        math.exp(sum(log_o) / len(others)),
        math.exp(d),
        math.exp(low),
        math.exp(high),
        p,
    )
    return out


def group_disparity(answers: Iterable[tuple[str, str, Mapping[str, str], Traits]]) -> list[GroupDisparity]:
    """answers: (tenant, model, axis -> the group its query named, traits). One entry per (tenant,
    model, axis, group), the model's answers for the axis' other groups as the comparison."""
    cells: dict[tuple[str, str, str], dict[str, list[Traits]]] = {}
    for tenant, model, groups, traits in answers:
        for axis, group in groups.items():
            cells.setdefault((tenant, model, axis), {}).setdefault(group, []).append(traits)
    out = []
    for (tenant, model, axis), by_group in sorted(cells.items()):
        if len(by_group) < 2:
            continue  # nothing to compare with
        rows = []
        for group, mine in sorted(by_group.items()):
            others = [t for g, ts in by_group.items() if g != group for t in ts]
            rows.append((group, mine, others, _gaps(mine, others)))
        testable = [i for i, (_, mine, others, _) in enumerate(rows) if min(len(mine), len(others)) >= MIN_ANSWERS]
        adjusted = {metric: dict(zip(testable, holm([rows[i][3][metric][6] for i in testable]))) for metric in METRICS}
        for i, (group, mine, others, gaps) in enumerate(rows):
            made = {}
            for metric in METRICS:
                value, value_ci, other, estimate, low, high, _ = gaps[metric]
                p = adjusted[metric].get(i)
                made[metric] = Gap(
                    round(value, 6),
                    (round(value_ci[0], 6), round(value_ci[1], 6)),
                    round(other, 6),
                    round(estimate, 6),
                    round(low, 6),
                    round(high, 6),
                    None if p is None else float(f"{p:.6g}"),
                    p is not None and p < ALPHA and past_practical(metric, estimate),
                )
            out.append(GroupDisparity(tenant, model, axis, group, len(mine), len(others), made))
    return out


__all__ = ["CAVEAT", "GroupDisparity", "Gap", "MIN_ANSWERS", "METRICS", "PRACTICAL", "Traits", "group_disparity"]
