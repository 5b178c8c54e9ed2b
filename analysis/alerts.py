"""Live alert conditions and anomaly scores, evaluated for each newly counted session (pure:
the window sums Redis returned for it, and the window's columns, in; conditions out).

A condition is "firing", "ok" or "hold": between the fire and clear thresholds it holds
whatever state the alert is in (hysteresis), so a metric hovering at a threshold does not
flap. Which condition changes the alert's state is decided in one place (Redis), in the
order the sessions were counted, so two workers raise one alert per onset.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from bias_audit.schemas.results import WindowSummary

from .digest import SessionDigest
from .session_noise import REFERENCE_SPAN
from .stats import t_p_values
from .trends import MAD_TO_SD
from .window import FIXED, RECENT_OFFSET
from .window_cells import window_cells


@dataclass(frozen=True, slots=True)
class AlertPolicy:
    min_sessions: int = 10  # below this (the "insufficient" tier) nothing fires
    reviewer_fire: float = 1.0  # points of a 1-10 scale
    reviewer_clear: float = 0.5
    fire_alpha: float = 0.001
    clear_alpha: float = 0.05
    length_fire: float = 0.3
    length_clear: float = 0.2
    length_min_sessions: int = 20
    anomaly_z: float = 5.0
    anomaly_min_sessions: int = 20


class Condition(NamedTuple):  # a NamedTuple: ~7 a session, built in half the time of a frozen dataclass
    key: str  # the alert's identity within the tenant, e.g. "reviewer_calibration:openai/gpt-4"
    alert_type: str
    metric: str
    state: str  # "firing" | "ok" | "hold"
    value: float | None
    threshold: float
    severity: str
    # the message's template and its values, formatted only when an alert is sent: most
    # conditions (~7 a session) never become one
    template: str
    values: tuple[Any, ...] = ()

    @property
    def message(self) -> str:
        return self.template.format(*self.values)


@dataclass(slots=True)
class SessionSignals:
    """What one session adds to its result: robust anomaly scores, and the conditions."""

    session_score_z: float | None = None
    reviewer_offset_z: dict[str, float] = field(default_factory=dict)
    conditions: list[Condition] = field(default_factory=list)

    def anomaly(self) -> dict[str, Any]:
        return {
            "session_mean_score_z": None if self.session_score_z is None else round(self.session_score_z, 3),
            "reviewer_offset_z": {k: round(v, 3) for k, v in self.reviewer_offset_z.items()},
        }


def recent_offset_tests(recent: dict[str, int]) -> dict[str, tuple[int, float, float | None]]:
    """Per reviewer (sessions, mean offset in points, two-sided p) from the recent window's sums
    of per-session offsets (fixed point), exact t with df = n - 1."""
    out: dict[str, tuple[int, float, tuple[int, float] | None]] = {}
    for key, n in recent.items():
        if not (key.startswith(RECENT_OFFSET) and key.endswith(":n")) or n < 2:
            continue
        name = key[len(RECENT_OFFSET) : -2]
        s, q = recent.get(f"{RECENT_OFFSET}{name}:s", 0), recent.get(f"{RECENT_OFFSET}{name}:q", 0)
        mean = s / n
        variance = max(q - s * s / n, 0) / (n - 1)  # integers: exact until this division
        if variance == 0:
            test = (n - 1, 0.0 if mean == 0 else math.copysign(math.inf, mean))
        else:
            test = (n - 1, mean / math.sqrt(variance / n))
        out[name] = (n, mean / FIXED * REFERENCE_SPAN, test)
    tests = t_p_values([t for _, _, t in out.values()], two_sided=True)
    return {name: (n, points, p) for (name, (n, points, _)), p in zip(out.items(), tests)}


def reviewer_condition(name: str, n: int, mean: float, p: float | None, policy: AlertPolicy) -> Condition | None:
    """The reviewer's mean offset over the recent window's sessions (points) and its p. Fires
    when the mean is far from 0 with strong evidence."""
    if n < policy.min_sessions or p is None:
        return None
    if abs(mean) >= policy.reviewer_fire and p < policy.fire_alpha:
        state = "firing"
    elif abs(mean) < policy.reviewer_clear or p >= policy.clear_alpha:
        state = "ok"
    else:
        state = "hold"
    kind = "harsh" if mean < 0 else "generous"
    return Condition(
        key=f"reviewer_calibration:{name}",
        alert_type="reviewer_calibration",
        metric="reviewer_offset_recent",
        state=state,
        value=round(mean, 4),
        threshold=policy.reviewer_fire if state != "ok" else policy.reviewer_clear,
        severity="warning",
        template="reviewer {0} scores {1:.2f} points {2} its peers over its last {3} sessions (p={4:.2g}): {5}"
        if state != "ok"
        else "reviewer {0} is back within {1:g} points of its peers ({2:+.2f} over its last {3} sessions)",
        values=(name, abs(mean), "below" if mean < 0 else "above", n, p, kind)
        if state != "ok"
        else (name, policy.reviewer_clear, mean, n),
    )


def length_condition(summary: WindowSummary, policy: AlertPolicy) -> Condition | None:
    estimate = summary.length_correlation
    if summary.sessions < policy.length_min_sessions or estimate.point_estimate is None:
        return None
    r, lo, hi = estimate.point_estimate, estimate.ci_lower, estimate.ci_upper
    excludes_zero = lo is not None and hi is not None and (lo > 0 or hi < 0)
    if abs(r) >= policy.length_fire and excludes_zero:
        state = "firing"
    elif abs(r) < policy.length_clear or not excludes_zero:
        state = "ok"
    else:
        state = "hold"
    return Condition(
        key="length_correlation",
        alert_type="length_bias",
        metric="length_correlation",
        state=state,
        value=r,
        threshold=policy.length_fire if state != "ok" else policy.length_clear,
        severity="warning",
        template="scores follow response length across the window: r={0:+.2f} [{1:+.2f}, {2:+.2f}] over "
        "{3} responses in {4} sessions"
        if state != "ok"
        else "length-score correlation back to r={0:+.2f} over {4} sessions",
        values=(r, lo, hi, estimate.sample_size, summary.sessions),
    )


@dataclass(frozen=True, slots=True)
class SessionLevel:
    """What the anomaly scores compare of one session: its mean peer score (points above the
    bottom of the scale, NaN without peer scores) and each reviewer's offset against the median
    of its peers (points; reviewers with an offset only). A function of the session alone, so a
    worker computes it once per session, not once per batch for the whole window."""

    mean_score: float
    offsets: dict[str, float]


def session_levels(digests: Sequence[SessionDigest]) -> list[SessionLevel]:
    """Each session's level, computed together (one vectorized fit over the sessions)."""
    cells = window_cells(digests)
    column = {name: j for j, name in enumerate(cells.reviewers)}
    return [
        SessionLevel(
            mean,
            {
                name: row[column[name]]
                for name in digest.reviewers  # the session's order
                if not math.isnan(row[column[name]])
            },
        )
        for digest, mean, row in zip(digests, cells.session_mean_score.tolist(), cells.session_offsets.tolist())
    ]


def audited_level(digest: SessionDigest, reviewer_offsets: Mapping[str, float], scale_span: float) -> SessionLevel:
    """The level of a session just audited: its mean from the digest, as session_levels takes
    it; its offsets from the audit's (scale points; the same estimator, equal to rounding), so
    the worker does not fit the session a second time."""
    peer = [score * REFERENCE_SPAN for score, own in zip(digest.cell_score, digest.cell_own) if not own]
    to_points = REFERENCE_SPAN / scale_span
    offsets = {
        name: reviewer_offsets[name] * to_points  # in the digest's reviewer order, as session_levels
        for name in digest.reviewers
        if name in reviewer_offsets
    }
    return SessionLevel(sum(peer) / len(peer) if peer else math.nan, offsets)


@dataclass(frozen=True, slots=True)
class Baseline:
    """Median and robust SD (1.4826 MAD) of the window the batch arrived to: each session's
    mean score, and each reviewer's per-session offsets. NaN where there are too few values or
    no spread. Computed once per batch: the sessions of the batch are not in it, so a batch
    cannot mask itself."""

    score_median: float
    score_scale: float
    offsets: dict[str, tuple[float, float]]  # per reviewer seen in the window: (median, scale)


def robust_location(values: Sequence[float], minimum: int) -> tuple[float, float]:
    """(median, 1.4826 MAD) of the defined (non-NaN) values; NaN, NaN below `minimum` values or
    at MAD 0. In Python, not numpy: ~100 values, where numpy's per-call costs dominate."""
    defined = [v for v in values if v == v]  # NaN is the one float unequal to itself
    if len(defined) < minimum or not defined:
        return math.nan, math.nan
    median = statistics.median(defined)
    scale = MAD_TO_SD * statistics.median([abs(v - median) for v in defined])
    return (median, scale) if scale > 0 else (math.nan, math.nan)


def window_baseline(levels: Sequence[SessionLevel], policy: AlertPolicy) -> Baseline:
    """The baseline of the window's sessions `levels` (the batch's own sessions not among them)."""
    minimum = policy.anomaly_min_sessions
    columns: dict[str, list[float]] = {}
    for level in levels:
        for name, value in level.offsets.items():
            columns.setdefault(name, []).append(value)
    score_median, score_scale = robust_location([level.mean_score for level in levels], minimum)
    return Baseline(
        score_median, score_scale, {name: robust_location(values, minimum) for name, values in columns.items()}
    )


def _z(value: float, median: float, scale: float) -> float | None:
    z = (value - median) / scale  # Python floats: a NaN scale (never 0: see robust_location) gives NaN
    return None if math.isnan(z) else z


def session_signals(
    level: SessionLevel,
    summary: WindowSummary,
    recent: dict[str, int],
    policy: AlertPolicy,
    baseline: Baseline,
) -> SessionSignals:
    """Signals of the session whose level is `level`: robust z against `baseline`; conditions
    from the window sums Redis returned when it counted the session (`summary`, `recent`):
    complete and in counting order whichever worker counted the sessions before it."""
    signals = SessionSignals()
    signals.session_score_z = _z(level.mean_score, baseline.score_median, baseline.score_scale)
    for name, value in level.offsets.items():
        location = baseline.offsets.get(name)  # None: a reviewer new to the window has no baseline
        z = None if location is None else _z(value, *location)
        if z is not None:
            signals.reviewer_offset_z[name] = z
    for name, (n, mean, p) in sorted(recent_offset_tests(recent).items()):
        condition = reviewer_condition(name, n, mean, p, policy)
        if condition is not None:
            signals.conditions.append(condition)
    z = signals.session_score_z
    if z is not None:
        anomalous = abs(z) >= policy.anomaly_z
        signals.conditions.append(
            Condition(
                key="session_anomaly",
                alert_type="session_anomaly",
                metric="session_mean_score_z",
                state="firing" if anomalous else "ok",
                value=round(z, 3),
                threshold=policy.anomaly_z,
                severity="info",
                template="session mean score is {0:.1f} robust SDs {1} the window's median"
                if anomalous
                else "sessions back within the window's usual range",
                values=(abs(z), "below" if z < 0 else "above"),
            )
        )
    length = length_condition(summary, policy)
    if length is not None:
        signals.conditions.append(length)
    return signals
