"""Metrics over time: Welch trend tests between adjacent windows,
change points where council_config_version changes, and the report's timeline buckets."""

from __future__ import annotations

import numpy as np

from bias_audit.schemas.report import ChangePoint, TimeBucket, TrendTest

from .digest import iso_ms
from .special import ndtr
from .stats import pearson_arrays, rounded, welch
from .window_cells import WindowCells

MAD_TO_SD = 1.4826  # MAD of a normal sample x this = its standard deviation
MIN_BUCKET = 10


def _pooled_r(cells: WindowCells, span: tuple[int, int] | None = None) -> tuple[float | None, int]:
    """Pearson r of the length points of the sessions span[0]..span[1]-1 (every one's by default)."""
    session, x, y = cells.length_points
    if span is not None:
        lo, hi = np.searchsorted(session, span)  # the points come in session order: a range
        x, y = x[lo:hi], y[lo:hi]
    r, defined = pearson_arrays(x, y)
    return (float(r) if defined and len(x) >= 4 else None), len(x)


def timeline(cells: WindowCells, buckets: int = 10) -> list[TimeBucket]:
    """Equal-count buckets of the window's sessions in time order, at least 10 sessions each."""
    sessions = cells.sessions
    count = min(buckets, sessions // MIN_BUCKET)
    if count < 1:
        return []
    edges = np.linspace(0, sessions, count + 1).astype(int)
    out = []
    offsets = cells.session_offsets
    for lo, hi in zip(edges[:-1], edges[1:]):
        cells.hand_back()  # the bucket before's points
        r, _ = _pooled_r(cells, (int(lo), int(hi)))
        means = cells.session_mean_score[lo:hi]
        reviewer_offsets = {}
        for k, name in enumerate(cells.reviewers):
            column = offsets[lo:hi, k]  # all-NaN for a reviewer absent from the bucket
            if (~np.isnan(column)).any():
                reviewer_offsets[name] = round(float(np.nanmean(column)), 4)
        out.append(
            TimeBucket(
                start=iso_ms(int(cells.ts_ms[lo])),
                end=iso_ms(int(cells.ts_ms[hi - 1])),
                sessions=int(hi - lo),
                mean_score=rounded(np.nanmean(means) + 1.0) if (~np.isnan(means)).any() else None,
                length_correlation=rounded(r),
                reviewer_offsets=reviewer_offsets,
            )
        )
    return out


def _trend(metric: str, subject: str, before: np.ndarray, after: np.ndarray, size: float, alpha: float) -> TrendTest:
    a, b = before[~np.isnan(before)], after[~np.isnan(after)]
    test = welch(b, a)
    diff, p = (test.difference, test.p_value) if test else (None, None)
    return TrendTest(
        metric=metric,
        subject=subject,
        previous=rounded(a.mean()) if len(a) else None,
        current=rounded(b.mean()) if len(b) else None,
        difference=rounded(diff),
        p_value=rounded(p, 6),
        previous_sessions=len(a),
        current_sessions=len(b),
        flagged=bool(p is not None and diff is not None and p < alpha and abs(diff) >= size),
    )


def compare_windows(
    previous: WindowCells, current: WindowCells, *, size: float = 0.5, alpha: float = 0.01
) -> list[TrendTest]:
    """Each reviewer's offset and each model's mean score, previous window vs current (Welch on
    per-session values), and the pooled length correlation (Fisher z difference)."""
    if previous.sessions < MIN_BUCKET or current.sessions < MIN_BUCKET:
        return []
    tests = []
    for name in sorted(set(previous.active_reviewers) & set(current.active_reviewers)):
        tests.append(
            _trend(
                "reviewer_offset",
                name,
                previous.session_offsets[:, previous.reviewers.index(name)],
                current.session_offsets[:, current.reviewers.index(name)],
                size,
                alpha,
            )
        )
    for name in sorted(set(previous.active_models) & set(current.active_models)):
        # +1: points above the bottom -> a 1-10 value, as the report's model scores read
        tests.append(
            _trend(
                "model_mean_score",
                name,
                _model_session_means(previous, name) + 1.0,
                _model_session_means(current, name) + 1.0,
                size,
                alpha,
            )
        )
    (r0, n0), (r1, n1) = _pooled_r(previous), _pooled_r(current)
    if r0 is not None and r1 is not None and n0 > 3 and n1 > 3:
        z = np.arctanh(min(max(r1, -0.999999), 0.999999)) - np.arctanh(min(max(r0, -0.999999), 0.999999))
        z /= np.sqrt(1 / (n0 - 3) + 1 / (n1 - 3))
        p = float(2 * ndtr(-abs(z)))
        tests.append(
            TrendTest(
                metric="length_correlation",
                subject="pooled",
                previous=rounded(r0),
                current=rounded(r1),
                difference=rounded(r1 - r0),
                p_value=rounded(p, 6),
                previous_sessions=previous.sessions,
                current_sessions=current.sessions,
                flagged=bool(p < alpha and abs(r1 - r0) >= 0.2),
            )
        )
    # Bonferroni over the family: a dozen tests at alpha each would flag noise in every other report
    family = len(tests)
    return [
        t.model_copy(update={"flagged": t.flagged and t.p_value is not None and t.p_value < alpha / family})
        for t in tests
    ]


def _model_session_means(cells: WindowCells, model: str) -> np.ndarray:
    index = cells.models.index(model)
    use = cells.peer & (cells.model == index)
    total = np.bincount(cells.session[use], weights=cells.scores(use), minlength=cells.sessions)
    count = np.bincount(cells.session[use], minlength=cells.sessions)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan)


def change_points(cells: WindowCells, *, limit: int = 5, alpha: float = 0.01) -> list[ChangePoint]:
    """Where council_config_version changes between consecutive sessions (time order): the
    sessions since the previous change vs those until the next, compared like two windows."""
    marks = sorted(cells.change_traces)
    out = []
    bounds = [0, *marks, cells.sessions]
    for k, at in enumerate(marks[-limit:], start=len(marks) - min(limit, len(marks))):
        before = cells.slice(bounds[k], at)
        after = cells.slice(at, bounds[k + 2])
        out.append(
            ChangePoint(
                at=iso_ms(int(cells.ts_ms[at])),
                trace_id=cells.change_traces[at],
                from_version=str(cells.config_version(at - 1)),
                to_version=str(cells.config_version(at)),
                tests=compare_windows(before, after, alpha=alpha),
            )
        )
    return out
