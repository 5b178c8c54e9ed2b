"""Tests many at once: Holm's step-down adjustment (family-wise error), Benjamini-Hochberg's
step-up (false discovery rate), and exact binomial tails without scipy.stats (half a second of a
command's start-up)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import bdtr, bdtrc


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p values, in the input's order (family-wise error at the nominal level)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """BH-adjusted p-values (step-up, monotone), in the input order."""
    p = np.asarray(p_values, dtype=np.float64)
    n = len(p)
    if n == 0:
        return []
    order = np.argsort(p)
    scaled = p[order] * n / np.arange(1, n + 1)
    adjusted = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(n)
    out[order] = np.minimum(adjusted, 1.0)
    return [float(v) for v in out]


def binomial_two_sided_half(k: int, n: int) -> float:
    """Exact two-sided p of k successes in n trials against 1/2 (symmetric: twice the smaller tail)."""
    if n <= 0:
        return 1.0
    lower = float(bdtr(k, n, 0.5))  # P(X <= k)
    upper = 1.0 if k <= 0 else float(bdtrc(k - 1, n, 0.5))  # P(X >= k)
    return min(1.0, 2.0 * min(lower, upper))
