"""The anomaly baseline's median and 1.4826 MAD against numpy (the oracle): NaN, ties, too few
values and no spread."""

import math
import warnings

import numpy as np
import pytest

from bias_audit.analysis.alerts import robust_location

NAN = math.nan
TABLE = [  # values, minimum, (median, scale)
    ([1.0, 3.0, 2.0], 1, (2.0, 1.4826)),
    ([1.0, 4.0, 2.0, 3.0], 1, (2.5, 1.4826)),
    ([NAN, 5.0, NAN, 1.0, 3.0], 3, (3.0, 2 * 1.4826)),
    ([NAN, 5.0, NAN, 1.0, 3.0], 4, (NAN, NAN)),  # three defined values: too few
    ([2.0, 2.0, 2.0, 9.0], 1, (NAN, NAN)),  # MAD 0
    ([NAN, NAN], 0, (NAN, NAN)),
    ([], 0, (NAN, NAN)),
]


@pytest.mark.parametrize("values, minimum, expected", TABLE)
def test_exact_values(values, minimum, expected):
    assert robust_location(values, minimum) == pytest.approx(expected, abs=1e-12, nan_ok=True)


@pytest.mark.parametrize("seed", range(20))
def test_equals_numpy(seed):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=int(rng.integers(1, 120))).round(1)  # rounding: ties
    values[rng.random(values.shape) < 0.3] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all NaN
        median = np.nanmedian(values)
        scale = 1.4826 * np.nanmedian(np.abs(values - median))
    if np.isnan(median) or not scale > 0:
        median = scale = np.nan
    assert robust_location(values.tolist(), 1) == pytest.approx((median, scale), rel=0, abs=0, nan_ok=True)  # exactly
