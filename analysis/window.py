"""Rolling-window sums and what they say (science.md, 'Across sessions').

A session contributes integer sums (fixed point, 1e-6 of the score scale) so that adding and
later evicting it is exact: no float drift however long the window slides. The same
contribution and summary run against Redis (windows.redis_window) and in-process
(windows.memory_window), so both give equal results.

Scores are normalized to [0, 1] of their scale before summing, so sessions on different
scales pool; summaries report score quantities back in points of a 1-10 scale.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from itertools import repeat
from operator import add, mul, neg
from typing import TYPE_CHECKING, NamedTuple

from .session_noise import REFERENCE_SPAN
from .stats import confidence_tier, fisher_ci, pearson_from_sums

if TYPE_CHECKING:  # the report reads window bounds without the audit and result models
    from bias_audit.schemas.results import CorrelationEstimate, WindowSummary

    from .observations import SessionScores
    from .session_audit import SessionAnalysis

FIXED = 1_000_000  # fixed-point unit: 1e-6 of the scale span
MIN_SESSIONS_FOR_ESTIMATE = 10

# Field prefixes of the sums; names after the prefix are reviewer/model/position keys.
POINTS = "p:"  # pooled length points: n, x, y, xx, yy, xy
REVIEWER = "r:"  # leave-one-out score differences: n, s, q
POSITION = "o:"  # within-model residuals by display position: n, s, q
MODEL = "m:"  # peer scores by model: n, s
RECENT_OFFSET = "ro:"  # per-session reviewer offsets, recent window only: n, s, q


class Contribution(NamedTuple):
    """What one session adds to its tenant's sums, zero fields left out."""

    window: dict[str, int]  # to the window's sums
    recent: dict[str, int]  # to the recent window's (the last K sessions counted): RECENT_OFFSET fields


def session_contribution(scores: SessionScores, analysis: SessionAnalysis) -> Contribution:
    """Integer sums one session adds to its tenant's windows. Each key is written once (a model,
    reviewer or position appears once in its loop): no read-modify-write per score."""
    low, span = scores.scale_low, scores.scale_span
    unit = FIXED / span
    sums: dict[str, int] = {}
    recent: dict[str, int] = {}
    offsets = analysis.audit.reviewer_offsets
    n = sx = sy = sxx = syy = sxy = 0
    differences: dict[str, list[float]] = {}
    for model, received in analysis.peer_scores.items():
        # Offset-adjusted mean peer score: a harsh reviewer's absence does not lift a candidate.
        adjusted = sum(s - offsets.get(r, 0.0) for r, s in received) / len(received)
        x = scores.candidates[model].words
        y = round((adjusted - low) * unit)
        n += 1
        sx += x
        sy += y
        sxx += x * x
        syy += y * y
        sxy += x * y
        total = sum(s for _, s in received)
        count = len(received)
        key = MODEL + model
        sums[key + ":n"] = count
        sums[key + ":s"] = round((total - low * count) * unit)
        if count > 1:
            for reviewer, score in received:
                differences.setdefault(reviewer, []).append(score - (total - score) / (count - 1))
    for reviewer, values in differences.items():
        # each leave-one-out difference moved so that their mean is the session's offset against
        # the median of the peers (analysis.reviewer_offset); their spread is kept
        shift = offsets.get(reviewer, 0.0) - sum(values) / len(values)
        _put_moments(sums, REVIEWER + reviewer, [round((value + shift) * unit) for value in values])
    if n:
        sums.update(
            {
                POINTS + "n": n,
                POINTS + "x": sx,
                POINTS + "y": sy,
                POINTS + "xx": sxx,
                POINTS + "yy": syy,
                POINTS + "xy": sxy,
            }
        )
    for reviewer, offset in analysis.audit.reviewer_offsets.items():
        # one value per session: the alert's t test counts sessions
        _put_moments(recent, RECENT_OFFSET + reviewer, [round(offset * unit)])
    by_position: dict[int, list[int]] = {}
    for position, residual in analysis.position_residuals:
        by_position.setdefault(position, []).append(round(residual * unit))
    for position, moved in by_position.items():
        _put_moments(sums, f"{POSITION}{position}", moved)
    return Contribution({k: v for k, v in sums.items() if v != 0}, {k: v for k, v in recent.items() if v != 0})


def _put_moments(sums: dict[str, int], key: str, values: list[int]) -> None:
    """The count, sum and sum of squares of fixed-point values, as "<key>:n", ":s" and ":q"."""
    sums[key + ":n"] = len(values)
    sums[key + ":s"] = sum(values)
    sums[key + ":q"] = sum(map(mul, values, values))


def add_into(sums: dict[str, int], contribution: Mapping[str, int], sign: int) -> None:
    """Add (sign 1) or take back (sign -1) a contribution. A sum reaching 0 is removed, as if
    never written, as the Redis script does (HINCRBY on a missing field restarts from 0). The
    maps run in C: each session's replay adds and takes back ~100 fields."""
    keys, values = contribution.keys(), contribution.values()
    totals = list(map(add, map(sums.get, keys, repeat(0)), values if sign > 0 else map(neg, values)))
    sums.update(zip(keys, totals))
    if 0 in totals:
        for key, total in zip(keys, totals):
            if not total:
                del sums[key]


def pooled_correlation(sums: Mapping[str, int]) -> tuple[float | None, int]:
    """Pearson r from the window's integer sums (exact until the one division), and its n."""
    n = sums.get(POINTS + "n", 0)
    if n < 3:
        return None, n
    r = float(pearson_from_sums(n, *(sums.get(POINTS + name, 0) for name in ("x", "y", "xx", "yy", "xy"))))
    return (None if math.isnan(r) else r), n


@lru_cache(maxsize=100_000)
def _count_key(key: str) -> tuple[str, str, str] | None:
    """ "<prefix><name>:n" -> (prefix, name, "<prefix><name>:s"); None for any other key. Cached:
    a tenant's keys repeat from session to session."""
    if not key.endswith(":n"):
        return None
    cut = key.find(":") + 1  # every prefix is a name and one colon
    return key[:cut], key[cut:-2], f"{key[:-2]}:s"


def _per_key_means(sums: Mapping[str, int], *prefixes: str) -> list[dict[str, float]]:
    """Per prefix, {name: mean} from its "<prefix><name>:n" and ":s" sums, in one pass over the
    sums (every session's result summarizes a window of hundreds of them)."""
    means: dict[str, dict[str, float]] = {prefix: {} for prefix in prefixes}
    for key, count in sums.items():
        parts = _count_key(key)
        if parts is not None and count > 0:
            found = means.get(parts[0])
            if found is not None:
                found[parts[1]] = sums.get(parts[2], 0) / count / FIXED
    return [means[prefix] for prefix in prefixes]


@cache
def _summary_models() -> tuple[type[CorrelationEstimate], type[WindowSummary]]:
    # imported on first use: the report reads window bounds without the result models
    from bias_audit.schemas.results import CorrelationEstimate, WindowSummary

    return CorrelationEstimate, WindowSummary


def summarize_window(
    sums: Mapping[str, int],
    *,
    tenant_id: str,
    sessions: int,
    window_start: str | None,
    window_end: str | None,
) -> WindowSummary:
    CorrelationEstimate, WindowSummary = _summary_models()
    r, n = pooled_correlation(sums)
    collecting = sessions < MIN_SESSIONS_FOR_ESTIMATE or r is None
    ci = None if r is None or collecting else fisher_ci(r, n)
    estimate = CorrelationEstimate(
        point_estimate=None if r is None or collecting else round(r, 6),
        ci_lower=None if ci is None else round(ci[0], 6),
        ci_upper=None if ci is None else round(ci[1], 6),
        sample_size=n,
        status="collecting data" if collecting else "ok",
    )
    model_means, reviewer_means, position_means = _per_key_means(sums, MODEL, REVIEWER, POSITION)
    return WindowSummary(
        tenant_id=tenant_id,
        sessions=sessions,
        confidence=confidence_tier(sessions),
        window_start=window_start,
        window_end=window_end,
        length_correlation=estimate,
        reviewer_offsets={k: round(v * REFERENCE_SPAN, 4) for k, v in sorted(reviewer_means.items())},
        position_effects={k: round(v * REFERENCE_SPAN, 4) for k, v in sorted(position_means.items())},
        # model means on a 1-10 scale: 1 + fraction * 9
        model_mean_scores={k: round(1.0 + v * REFERENCE_SPAN, 4) for k, v in sorted(model_means.items())},
    )


@dataclass(frozen=True, slots=True)
class WindowUpdate:
    """What a window store answers for one session it was asked to count."""

    # "new"; "resume" (this delivery counted it before), "resume_recorded" (and appended its
    # records), "done" (and published its result); "duplicate" (another delivery counted it)
    status: str
    summary: WindowSummary
    sequence: int = 0  # the tenant's counting order of this session (0 unless counted now)
    recent: dict[str, int] = field(default_factory=dict)  # sums of the last K sessions counted
    # a resumed session's ("resume", "resume_recorded") counting order, while it is among the
    # last K sessions counted (else 0): its live alerts are evaluated when it is resumed
    counted_as: int = 0
    sums: dict[str, int] = field(default_factory=dict)  # the whole window's, when the policy keeps them


DAY_MS = 86_400_000


def window_bounds(times: list[int], newest_ms: int | None, sessions: int | None, days: float | None) -> tuple[int, int]:
    """Over sessions sorted oldest first: (first of the window before, first of the window).
    The window is the newest `sessions` within `days` of the tenant's newest event (the worker's
    rule); the window before is the `sessions` preceding it (all of them when unlimited)."""
    first = bisect_left(times, newest_ms - int(days * DAY_MS)) if days is not None and newest_ms is not None else 0
    if sessions is not None:
        first = max(first, len(times) - sessions)
    return max(0, first - (sessions or first)), first
