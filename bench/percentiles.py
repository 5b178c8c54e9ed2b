"""The benchmarks' one percentile: nearest rank on sorted values."""

from __future__ import annotations

from collections.abc import Sequence


def percentile(ordered: Sequence[float], q: float) -> float:
    """ordered: ascending. q in [0, 1]; 1 is the maximum."""
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
