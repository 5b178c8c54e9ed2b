"""Intervals for proportions: Wilson's score interval for one, Newcombe's hybrid score interval
(his method 10) for the difference of two independent ones."""

from __future__ import annotations

import math

Z95 = 1.959963984540054


def wilson_interval(k: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for k successes in n trials (an effective, fractional n too)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_difference(k1: int, n1: int, k2: int, n2: int, z: float = Z95) -> tuple[float, float]:
    """95% CI of p1 - p2 from independent samples (Newcombe 1998, method 10)."""
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_interval(k1, n1, z)
    l2, u2 = wilson_interval(k2, n2, z)
    d = p1 - p2
    return (d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2))
