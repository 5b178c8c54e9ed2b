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

from collections.abc import Callable

import numpy as np

from .designs import design_index
from .parallel import each_piece
from .session_noise import two_way_solution

MEDIAN_ROWS = 1 << 15  # rows a core sorts at a time


def median_of_others(values: np.ndarray) -> np.ndarray:
    """(rows, k) -> for each defined (non-NaN) cell, the median of the other defined cells of its
    row; NaN where the cell or every other cell of the row is undefined. One sort per row: the
    median without the cell at sorted rank p reads the sorted row with index j -> j + (j >= p).
    Rows are independent, so a caller may take them a block at a time."""
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


def offsets_from_effects(effects: np.ndarray, between: Callable[[], None] = lambda: None) -> np.ndarray:
    """(sessions, reviewers) effects (NaN = not measured) -> offsets against the peers' median,
    made in the effects' own array (which they replace) a block of rows at a time, a block on each
    core: no other array a window's sessions long. `between` is called after each block."""

    def block(start: int) -> None:  # a row's median reads its own row alone
        part = effects[start : start + MEDIAN_ROWS]
        part -= median_of_others(part)
        part[np.abs(part) < ROUNDING] = 0.0
        between()

    each_piece(block, range(0, len(effects), MEDIAN_ROWS))
    return effects


def centred_effects(
    effects: np.ndarray, used: np.ndarray, designs: tuple[np.ndarray, np.ndarray] | None = None
) -> np.ndarray:
    """(B, R) reviewer effects of a two-way fit on the (B, R, M) `used` cells -> the same effects,
    each connected group's centred on its mean, NaN for a reviewer with no used cell. Effects are
    relative within a group of reviewers linked by responses they scored in common, so this is
    the one canonical choice: the same whatever solution the fit picked. `designs`: the design
    index of `used` (analysis.designs.design_index), when the caller has it."""
    scored = used.any(2)
    first, design = designs or design_index(used)  # the links are the design's: found once per design
    shared = used[first].astype(np.float64)
    linked = np.matmul(shared, np.swapaxes(shared, 1, 2)) > 0
    for _ in range(max(int(np.ceil(np.log2(max(used.shape[1], 2)))), 1)):  # reachability by squaring
        reached = np.matmul(linked.astype(np.float64), linked.astype(np.float64)) > 0
        if np.array_equal(reached, linked):  # closed: a council whose members share answers, at once
            break
        linked = reached
    weights = linked.astype(np.float64)
    means = np.matmul(weights[design], np.where(scored, effects, 0.0)[..., None])[..., 0]
    means /= np.maximum(weights.sum(2), 1.0)[design]
    return np.where(scored, effects - means, np.nan)


def reviewer_effects(score: np.ndarray, used: np.ndarray) -> np.ndarray:
    """(B, R, M) scores and the cells that count -> (B, R) reviewer effects of the least-squares
    fit score = reviewer + response per session (analysis.session_noise.two_way_solution, the one fit
    of the per-session statistics), centred within each connected group of reviewers; NaN for a
    reviewer with no counted cell."""
    solved = two_way_solution(score, used)
    return centred_effects(solved.theta[:, : score.shape[1]], used, (solved.first, solved.design))
