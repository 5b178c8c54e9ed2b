"""Live alert conditions and anomaly scores, evaluated for each newly counted session (pure:
the window sums Redis returned for it, and the window's columns, in; conditions out).

A condition is "firing", "ok" or "hold": between the fire and clear thresholds it holds
whatever state the alert is in (hysteresis), so a metric hovering at a threshold does not
flap. Which condition changes the alert's state is decided in one place (Redis), in the
order the sessions were counted, so two workers raise one alert per onset.
"""

from __future__ import annotations

from typing import Any

import math
from dataclasses import dataclass, field

import numpy as np

from bias_audit.schemas.results import WindowSummary

from .session_noise import REFERENCE_SPAN
from .stats import t_p_values
from .trends import MAD_TO_SD
from .window import FIXED, RECENT_OFFSET
from .window_cells import WindowCells


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


@dataclass(frozen=True, slots=True)
class Condition:
    key: str  # the alert's identity within the tenant, e.g. "reviewer_calibration:openai/gpt-4"
    alert_type: str
    metric: str
    state: str  # "firing" | "ok" | "hold"
    value: float | None
    threshold: float
    severity: str
    message: str


@dataclass(slots=True)
class SessionSignals:
    """What one session adds to its result: robust anomaly scores, and the conditions."""

    session_score_z: float | None = None
    reviewer_offset_z: dict[str, float] = field(default_factory=dict)
    conditions: list[Condition] = field(default_factory=list)

    def anomaly(self) -> dict[str, Any]:
        return {"session_mean_score_z": None if self.session_score_z is None else round(self.session_score_z, 3),
                "reviewer_offset_z": {k: round(v, 3) for k, v in self.reviewer_offset_z.items()}}


def recent_offset_tests(recent: dict[str, int]) -> dict[str, tuple[int, float, float | None]]:
    """Per reviewer (sessions, mean offset in points, two-sided p) from the recent window's sums
    of per-session offsets (fixed point), exact t with df = n - 1."""
    out: dict[str, tuple[int, float, tuple[int, float] | None]] = {}
    for key, n in recent.items():
        if not (key.startswith(RECENT_OFFSET) and key.endswith(":n")) or n < 2:
            continue
        name = key[len(RECENT_OFFSET):-2]
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
        key=f"reviewer_calibration:{name}", alert_type="reviewer_calibration", metric="reviewer_offset_recent",
        state=state, value=round(mean, 4), threshold=policy.reviewer_fire if state != "ok" else policy.reviewer_clear,
        severity="warning",
        message=(f"reviewer {name} scores {abs(mean):.2f} points {'below' if mean < 0 else 'above'} its peers over "
                 f"its last {n} sessions (p={p:.2g}): {kind}") if state != "ok" else
                (f"reviewer {name} is back within {policy.reviewer_clear:g} points of its peers "
                 f"({mean:+.2f} over its last {n} sessions)"),
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
        key="length_correlation", alert_type="length_bias", metric="length_correlation", state=state,
        value=r, threshold=policy.length_fire if state != "ok" else policy.length_clear, severity="warning",
        message=(f"scores follow response length across the window: r={r:+.2f} [{lo:+.2f}, {hi:+.2f}] over "
                 f"{estimate.sample_size} responses in {summary.sessions} sessions") if state != "ok" else
                f"length-score correlation back to r={r:+.2f} over {summary.sessions} sessions",
    )


@dataclass(frozen=True, slots=True)
class Baseline:
    """Median and robust SD (1.4826 MAD) of the window the batch arrived to: each session's
    mean score, and each reviewer's per-session offsets. NaN where there are too few values or
    no spread. Computed once per batch: the sessions of the batch are not in it, so a batch
    cannot mask itself."""

    score_median: float
    score_scale: float
    offset_median: list[float]  # per reviewer, as Python floats: read once per session and reviewer
    offset_scale: list[float]


def _column_medians(values: np.ndarray) -> np.ndarray:
    """np.nanmedian(values, axis=0), exactly, without its masked-array path (~1 ms a call on a
    100 x 5 window, paid on every batch): sort puts NaN last, so each column's median sits at
    the middle of its first `count` values. NaN for an all-NaN column."""
    count = (~np.isnan(values)).sum(0)
    if not len(values):
        return np.full(values.shape[1:], np.nan)
    ordered = np.sort(values, axis=0)
    columns = np.arange(values.shape[1])
    low = ordered[np.maximum(count - 1, 0) // 2, columns]  # the middle pair of the first `count`
    high = ordered[count // 2, columns]  # (the same value when `count` is odd)
    return np.where(count > 0, (low + high) / 2, np.nan)


def _robust(values: np.ndarray, minimum: int) -> tuple[np.ndarray, np.ndarray]:
    """Column-wise (median, 1.4826 MAD) ignoring NaN; NaN below `minimum` values or MAD 0."""
    count = (~np.isnan(values)).sum(0)
    median = _column_medians(values)
    scale = MAD_TO_SD * _column_medians(np.abs(values - median))
    bad = (count < minimum) | ~(scale > 0)
    return np.where(bad, np.nan, median), np.where(bad, np.nan, scale)


def window_baseline(cells: WindowCells, start: int, stop: int, policy: AlertPolicy) -> Baseline:
    score_median, score_scale = _robust(cells.session_mean_score[start:stop, None], policy.anomaly_min_sessions)
    offset_median, offset_scale = _robust(cells.session_offsets[start:stop], policy.anomaly_min_sessions)
    return Baseline(float(score_median[0]), float(score_scale[0]), offset_median.tolist(), offset_scale.tolist())


def _z(value: float, median: float, scale: float) -> float | None:
    z = (value - median) / scale  # Python floats: a NaN scale (never 0: see _robust) gives NaN
    return None if math.isnan(z) else z


def session_signals(
    cells: WindowCells, index: int, summary: WindowSummary, recent: dict[str, int], policy: AlertPolicy,
    baseline: Baseline,
) -> SessionSignals:
    """Signals of the session at `index` (time order): robust z against `baseline`; conditions
    from the window sums Redis returned when it counted the session (`summary`, `recent`):
    complete and in counting order whichever worker counted the sessions before it."""
    signals = SessionSignals()
    signals.session_score_z = _z(float(cells.session_mean_score[index]), baseline.score_median, baseline.score_scale)
    # as Python floats: numpy scalar arithmetic costs ~10x more per value on this hot path
    for name, value, median, scale in zip(cells.reviewers, cells.session_offsets[index].tolist(),
                                          baseline.offset_median, baseline.offset_scale):
        if math.isnan(value):
            continue
        z = _z(value, median, scale)
        if z is not None:
            signals.reviewer_offset_z[name] = z
    for name, (n, mean, p) in sorted(recent_offset_tests(recent).items()):
        condition = reviewer_condition(name, n, mean, p, policy)
        if condition is not None:
            signals.conditions.append(condition)
    z = signals.session_score_z
    if z is not None:
        anomalous = abs(z) >= policy.anomaly_z
        signals.conditions.append(Condition(
            key="session_anomaly", alert_type="session_anomaly", metric="session_mean_score_z",
            state="firing" if anomalous else "ok", value=round(z, 3), threshold=policy.anomaly_z,
            severity="info",
            message=(f"session mean score is {abs(z):.1f} robust SDs {'below' if z < 0 else 'above'} the window's median")
            if anomalous else "sessions back within the window's usual range"))
    length = length_condition(summary, policy)
    if length is not None:
        signals.conditions.append(length)
    return signals
