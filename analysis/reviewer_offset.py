"""A reviewer's offset against the median of its peers, per session.

Each reviewer's effect is its mean residual against the candidates' peer means; its offset is
that effect minus the median of the other reviewers' effects. The leave-one-out mean it
replaces compares a reviewer with the mean of the others, so one harsh peer (effect -d) shifts
every bystander by d / (reviewers - 1): "generous" where nobody is. With three or more other
reviewers a single harsh one cannot move the median. With one or two others the median is
their mean, and the offset equals the leave-one-out one in a complete council.
"""

from __future__ import annotations

import numpy as np


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


def offsets_from_effects(effects: np.ndarray) -> np.ndarray:
    """(sessions, reviewers) effects (NaN = not measured) -> offsets against the peers' median."""
    return effects - median_of_others(effects)
