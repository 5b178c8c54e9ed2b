"""Group demeaning: the contiguous-runs path and the general path give the same exact means."""

from __future__ import annotations

import numpy as np
import pytest

from bias_audit.analysis.fixed_effects import demean_by_group

VALUES = np.array([[1.0, 10.0], [3.0, 20.0], [5.0, 5.0], [6.0, 6.0], [7.0, 7.0]])
EXPECTED = np.array([[-1.0, -5.0], [1.0, 5.0], [-1.0, -1.0], [0.0, 0.0], [1.0, 1.0]])  # group means 2|15, 6|6


@pytest.mark.parametrize("order", [[0, 1, 2, 3, 4], [4, 2, 0, 3, 1]], ids=["session order", "shuffled"])
def test_each_column_loses_its_group_mean(order):
    groups = np.array([0, 0, 1, 1, 1])
    out = demean_by_group(VALUES[order], groups[order], 2)
    assert out.tolist() == EXPECTED[order].tolist()
    assert demean_by_group(VALUES[order, 0], groups[order], 2).tolist() == EXPECTED[order, 0].tolist()
