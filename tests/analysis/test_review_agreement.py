"""Nominal Krippendorff's alpha of reviewers' verdicts: a table of exact values, and the
krippendorff package as an independent oracle on random verdict tables."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from bias_audit.analysis.agreement import krippendorff_alpha_nominal


@pytest.mark.parametrize(
    ("labels", "units", "expected"),
    [
        (["c", "c", "d", "d"], [1, 1, 2, 2], (1.0, 4)),  # every pair agrees
        (["c", "d", "d", "c"], [1, 1, 2, 2], (-0.5, 4)),  # every pair disagrees: 1 - 1 / (2/3)
        (["c", "c", "c", "c"], [1, 1, 2, 2], (None, 4)),  # no variation: alpha is undefined
        (["c", "d", "c"], [1, 2, 3], (None, 0)),  # nobody reviewed an item twice: nothing pairable
        # D_o = (2 + 2) / 6, D_e = (36 - 18) / 30: alpha = 1 - (2/3) / (3/5) = -1/9
        (["c", "c", "d", "c", "d", "d"], [1, 1, 1, 2, 2, 2], (pytest.approx(-1 / 9), 6)),
    ],
)
def test_known_tables(labels, units, expected):
    assert krippendorff_alpha_nominal(labels, units) == expected


def test_agrees_with_the_krippendorff_package_on_random_verdicts():
    rng = np.random.default_rng(7)
    for _ in range(25):
        coders, items = rng.integers(2, 5), rng.integers(5, 40)
        matrix = rng.choice([0.0, 1.0, np.nan], size=(coders, items), p=[0.45, 0.35, 0.2])
        matrix[0] = np.where(rng.random(items) < 0.6, matrix[1], matrix[0])  # some agreement
        labels, units = [], []
        for coder in range(coders):
            for item in range(items):
                if not np.isnan(matrix[coder, item]):
                    labels.append("confirmed" if matrix[coder, item] == 1 else "dismissed")
                    units.append(item)
        ours, _ = krippendorff_alpha_nominal(labels, units)
        try:
            theirs = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
        except (ValueError, ZeroDivisionError):
            theirs = None
        if theirs is None or np.isnan(theirs):
            assert ours is None
        else:
            assert ours == pytest.approx(theirs, abs=1e-12)
