"""A reviewer's offset against the median of its peers, per session: the report's estimator
(analysis.cross_session.reviewer_profiles) on one session's scores.

Each reviewer's effect comes from the two-way least-squares fit score = reviewer + response
(each response's quality absorbed); its offset is that effect minus the median of the other
reviewers' effects. The leave-one-out mean it replaces compares a reviewer with the mean of the
others, so one harsh peer (-d) shifts every bystander by about d / (reviewers - 1): "generous"
where nobody is. With three or more other reviewers a single harsh one cannot move the median.
With one or two others the median is their mean, and in a complete council the offset equals
the leave-one-out mean.
"""

from __future__ import annotations

import numpy as np

from .designs import eigh_per_design


def median_of_others(values: np.ndarray) -> np.ndarray:
    """(rows, k) -> for each defined (non-NaN) cell, the median of the other defined cells of its
    row; NaN where the cell or every other cell of the row is undefined. One sort per row: the
    median without the cell at sorted rank p reads the sorted row with index j -> j + (j >= p)."""
    rows, k = values.shape
    if k == 0:
        return values.copy()
    order = np.argsort(values, axis=1, kind="stable")  # NaN sorts last
    ordered = np.take_along_axis(values, order, axis=1)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(k), (rows, k)), axis=1)
    defined = ~np.isnan(values)
    others = defined.sum(1, keepdims=True) - 1
    valid = defined & (others >= 1)
    lo = np.maximum((others - 1) // 2, 0)
    hi = np.maximum(others // 2, 0)
    lo_at = np.where(valid, lo + (lo >= rank), 0)
    hi_at = np.where(valid, hi + (hi >= rank), 0)
    median = (np.take_along_axis(ordered, lo_at, axis=1) + np.take_along_axis(ordered, hi_at, axis=1)) / 2.0
    return np.where(valid, median, np.nan)


# Below this (points) an offset is the fit's rounding, not a difference: exactly 0, so that a
# reviewer who agrees with everyone gets no "significant" offset from a zero-spread t test.
ROUNDING = 1e-9


def offsets_from_effects(effects: np.ndarray) -> np.ndarray:
    """(sessions, reviewers) effects (NaN = not measured) -> offsets against the peers' median."""
    offsets = effects - median_of_others(effects)
    return np.where(np.abs(offsets) < ROUNDING, 0.0, offsets)


def reviewer_effects(score: np.ndarray, used: np.ndarray) -> np.ndarray:
    """(B, R, M) scores and the cells that count -> (B, R) reviewer effects of the least-squares
    fit score = reviewer + response, per session; NaN for a reviewer with no counted cell.

    The responses are absorbed: the effects solve L a = b with L = diag(cells per reviewer) -
    W diag(1 / cells per response) W' (a graph Laplacian over reviewers who scored a response in
    common) and b = the reviewers' score sums less their share of the responses' sums. L is
    singular (effects are relative), so the solution is its pseudo-inverse's, by one symmetric
    eigendecomposition per distinct design of the batch (analysis.designs); differences within a
    connected council are exact."""
    w = used.astype(np.float64)
    per_reviewer = w.sum(2)
    per_response = w.sum(1)
    shares = w * np.where(per_response > 0, 1.0 / np.maximum(per_response, 1.0), 0.0)[:, None, :]
    laplacian = -np.matmul(shares, np.swapaxes(w, 1, 2))
    diagonal = np.arange(score.shape[1])
    laplacian[:, diagonal, diagonal] += per_reviewer
    scored = score * w
    rhs = scored.sum(2) - np.matmul(shares, scored.sum(1)[..., None])[..., 0]
    values, vectors = eigh_per_design(laplacian, used)
    tolerance = 1e-9 * np.maximum(values.max(-1, keepdims=True), 1.0)
    inverse = np.where(values > tolerance, 1.0 / np.where(values > tolerance, values, 1.0), 0.0)
    projected = np.matmul(np.swapaxes(vectors, 1, 2), rhs[..., None])[..., 0] * inverse
    effects = np.matmul(vectors, projected[..., None])[..., 0]
    return np.where(per_reviewer > 0, effects, np.nan)
