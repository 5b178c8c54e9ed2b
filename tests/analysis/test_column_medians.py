"""The alerts' column medians against numpy's nanmedian (the oracle), NaN, ties and all."""

import warnings

import numpy as np
import pytest

from bias_audit.analysis.alerts import _column_medians

NAN = np.nan
TABLE = [
    ([[1.0], [3.0], [2.0]], [2.0]),
    ([[1.0], [4.0], [2.0], [3.0]], [2.5]),
    ([[NAN, 1.0], [5.0, NAN], [NAN, 3.0]], [5.0, 2.0]),
    ([[NAN], [NAN]], [NAN]),
]


@pytest.mark.parametrize("values, medians", TABLE)
def test_exact_values(values, medians):
    np.testing.assert_array_equal(_column_medians(np.array(values)), np.array(medians))


def test_empty_window():
    assert np.isnan(_column_medians(np.zeros((0, 3)))).all()


@pytest.mark.parametrize("seed", range(20))
def test_equals_nanmedian(seed):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(rng.integers(1, 120), 6)).round(1)  # rounding: ties
    values[rng.random(values.shape) < 0.3] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column
        expected = np.nanmedian(values, axis=0)
    np.testing.assert_array_equal(_column_medians(values), expected)
