"""Small-sample statistics done exactly (councils have 3-5 members).

Plain Python over short lists: at n <= 10 numpy's call overhead costs more than the arithmetic.
Distribution tails come from scipy.special (exact t and F, not normal approximations).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.special import fdtrc, stdtr

Z_95 = 1.959963984540054


@dataclass(frozen=True, slots=True)
class Correlation:
    r: float | None
    p_value: float | None
    n: int


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def sample_std(values: Sequence[float]) -> float:
    """Sample standard deviation (ddof=1); 0.0 for a single value."""
    n = len(values)
    if n < 2:
        return 0.0
    m = sum(values) / n
    ss = 0.0
    for v in values:
        ss += (v - m) * (v - m)
    return math.sqrt(ss / (n - 1))


def sample_variance(values: Sequence[float]) -> float:
    n = len(values)
    if n < 2:
        return 0.0
    m = sum(values) / n
    return sum((v - m) ** 2 for v in values) / (n - 1)


def pearson_r(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson r, or None when either side has no variance or n < 2."""
    n = len(x)
    if n < 2:
        return None
    mx, my = sum(x) / n, sum(y) / n
    sxy = sxx = syy = 0.0
    for xi, yi in zip(x, y):
        dx = xi - mx
        dy = yi - my
        sxy += dx * dy
        sxx += dx * dx
        syy += dy * dy
    if sxx <= 1e-300 or syy <= 1e-300:
        return None
    r = sxy / math.sqrt(sxx * syy)
    return 1.0 if r > 1.0 else -1.0 if r < -1.0 else r


def correlation_p_value(r: float, n: int) -> float | None:
    """Exact two-sided p of H0: rho = 0 from t = r sqrt(n-2) / sqrt(1-r^2), df = n-2."""
    df = n - 2
    if df < 1:
        return None
    if abs(r) >= 1.0:
        return 0.0
    t = r * math.sqrt(df) / math.sqrt(1.0 - r * r)
    return float(2.0 * stdtr(df, -abs(t)))


def pearson(x: Sequence[float], y: Sequence[float]) -> Correlation:
    """r with its exact p; both None below n = 3 ('insufficient') or with no variance."""
    n = len(x)
    if n < 3:
        return Correlation(None, None, n)
    r = pearson_r(x, y)
    if r is None:
        return Correlation(None, None, n)
    return Correlation(r, correlation_p_value(r, n), n)


def average_ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties share their average rank (as scipy.stats.rankdata 'average')."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        shared = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[order[k]] = shared
        i = j + 1
    return ranks


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float | None:
    if len(x) < 3:
        return None
    return pearson_r(average_ranks(x), average_ranks(y))


def fisher_ci(r: float, n: int) -> tuple[float, float] | None:
    """95% CI of a correlation by Fisher's z (se = 1/sqrt(n-3)); None below n = 4."""
    if n < 4:
        return None
    if abs(r) >= 1.0:
        return (r, r)
    z = math.atanh(r)
    half = Z_95 / math.sqrt(n - 3)
    return (math.tanh(z - half), math.tanh(z + half))


def one_way_anova_p(groups: Sequence[Sequence[float]], lost_df: int = 0) -> float | None:
    """p of the F test that group means are equal.

    lost_df: extra parameters already fitted to the values (e.g. model means removed
    from residuals), subtracted from the within-group degrees of freedom.
    """
    groups = [g for g in groups if g]
    k = len(groups)
    total = sum(len(g) for g in groups)
    df_between, df_within = k - 1, total - k - lost_df
    if df_between < 1 or df_within < 1:
        return None
    grand = sum(sum(g) for g in groups) / total
    ss_between = sum(len(g) * (sum(g) / len(g) - grand) ** 2 for g in groups)
    ss_within = sum(sum((v - sum(g) / len(g)) ** 2 for v in g) for g in groups)
    if ss_within <= 0.0:
        return 0.0 if ss_between > 0.0 else None
    f = (ss_between / df_between) / (ss_within / df_within)
    return float(fdtrc(df_between, df_within, f))


INF = float("inf")


def one_sample_t(values: Sequence[float]) -> tuple[int, float] | None:
    """(df, t) of H0: mean = 0; None below n = 2. A zero spread gives t = +-inf (p = 0)."""
    n = len(values)
    if n < 2:
        return None
    m = sum(values) / n
    sd = sample_std(values)
    if sd == 0.0:
        return (n - 1, 0.0 if m == 0.0 else math.copysign(INF, m))
    return (n - 1, m / (sd / math.sqrt(n)))


def prediction_t(value: float, sample: Sequence[float]) -> tuple[int, float] | None:
    """(df, t) for `value` as a new draw from the population of `sample`:
    t = (value - mean) / (sd * sqrt(1 + 1/k)), df = k-1. None below k = 2."""
    k = len(sample)
    if k < 2:
        return None
    m = sum(sample) / k
    sd = sample_std(sample)
    if sd == 0.0:
        return (k - 1, 0.0 if value == m else math.copysign(INF, value - m))
    return (k - 1, (value - m) / (sd * math.sqrt(1.0 + 1.0 / k)))


def t_p_values(tests: Sequence[tuple[int, float] | None], *, two_sided: bool) -> list[float | None]:
    """Exact p for many (df, t) tests in one ufunc call; None stays None.
    two_sided: P(|T| >= |t|); else the upper tail P(T >= t)."""
    present = [test for test in tests if test is not None]
    if not present:
        return [None] * len(tests)
    tails = iter(stdtr([df for df, _ in present], [-abs(t) if two_sided else -t for _, t in present]).tolist())
    factor = 2.0 if two_sided else 1.0
    return [None if test is None else factor * next(tails) for test in tests]


def one_sample_t_p(values: Sequence[float]) -> float | None:
    """Two-sided p of H0: mean = 0 (exact t, df = n-1)."""
    return t_p_values([one_sample_t(values)], two_sided=True)[0]


def prediction_p(value: float, sample: Sequence[float]) -> float | None:
    """One-sided p that `value` lies above the population `sample` came from."""
    return t_p_values([prediction_t(value, sample)], two_sided=False)[0]
