"""Small-sample statistics done exactly, for one series at a time (reviewer profiles, windows).

Plain Python over short lists: at n <= 10 numpy's call overhead costs more than the arithmetic.
Distribution tails come from scipy.special (exact t, not the normal approximation). The
per-session audit vectorizes the same methods over a batch (analysis.session_audit).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .special import ndtr, stdtr

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


def correlation_t(r: float, n: int) -> tuple[int, float] | None:
    """(df, t) of H0: rho = 0: t = r sqrt(n-2) / sqrt(1-r^2), df = n-2; |r| = 1 gives +-inf."""
    df = n - 2
    if df < 1:
        return None
    if abs(r) >= 1.0:
        return (df, math.copysign(INF, r))
    return (df, r * math.sqrt(df) / math.sqrt(1.0 - r * r))


def correlation_p_value(r: float, n: int) -> float | None:
    """Exact two-sided p of H0: rho = 0 (t test, df = n-2)."""
    return t_tails([correlation_t(r, n)], [])[0]


def pearson(x: Sequence[float], y: Sequence[float]) -> Correlation:
    """r with its exact p; both None below n = 3 ('insufficient') or with no variance."""
    n = len(x)
    if n < 3:
        return Correlation(None, None, n)
    r = pearson_r(x, y)
    if r is None:
        return Correlation(None, None, n)
    return Correlation(r, correlation_p_value(r, n), n)


def fisher_se(r: float, n: int, *, rank: bool = False) -> float:
    """The standard error of Fisher's z = atanh(r): 1/sqrt(n-3); of Spearman's rho (rank),
    Bonett and Wright's sqrt((1 + rho^2/2) / (n-3))."""
    return math.sqrt((1.0 + r * r / 2.0 if rank else 1.0) / (n - 3))


def fisher_ci(r: float, n: int, *, rank: bool = False) -> tuple[float, float] | None:
    """95% CI of a correlation by Fisher's z (fisher_se); None below n = 4."""
    if n < 4:
        return None
    if abs(r) >= 1.0:
        return (r, r)
    z = math.atanh(r)
    half = Z_95 * fisher_se(r, n, rank=rank)
    return (math.tanh(z - half), math.tanh(z + half))


def spearman(x: Sequence[float], y: Sequence[float]) -> Correlation:
    """Spearman's rho (Pearson's r of average ranks) with the two-sided p of Fisher's z under
    Bonett and Wright's se, so that p < 0.05 exactly when fisher_ci(rank=True) excludes 0; both
    None below n = 4 or with no variance."""
    n = len(x)
    r = pearson_r(average_ranks(np.asarray(x, dtype=np.float64)).tolist(),
                  average_ranks(np.asarray(y, dtype=np.float64)).tolist()) if n >= 4 else None
    if r is None:
        return Correlation(None, None, n)
    if abs(r) >= 1.0:
        return Correlation(r, 0.0, n)
    return Correlation(r, 2.0 * float(ndtr(-abs(math.atanh(r)) / fisher_se(r, n, rank=True))), n)


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


def t_tails(
    two_sided: Sequence[tuple[int, float] | None], upper: Sequence[tuple[int, float] | None]
) -> list[float | None]:
    """Exact p for many (df, t) tests in one ufunc call (a call costs more than the arithmetic):
    P(|T| >= |t|) for `two_sided`, then P(T >= t) for `upper`, in order; None stays None."""
    dfs, ts = [], []
    for test in two_sided:
        if test is not None:
            dfs.append(test[0])
            ts.append(-abs(test[1]))
    for test in upper:
        if test is not None:
            dfs.append(test[0])
            ts.append(-test[1])
    if not dfs:
        return [None] * (len(two_sided) + len(upper))
    tails = iter(stdtr(dfs, ts).tolist())
    return [None if test is None else 2.0 * next(tails) for test in two_sided] + [
        None if test is None else next(tails) for test in upper
    ]


def t_p_values(tests: Sequence[tuple[int, float] | None], *, two_sided: bool) -> list[float | None]:
    """Exact p for many (df, t) tests; two_sided: P(|T| >= |t|), else the upper tail P(T >= t)."""
    return t_tails(tests, []) if two_sided else t_tails([], tests)


def one_sample_t_p(values: Sequence[float]) -> float | None:
    """Two-sided p of H0: mean = 0 (exact t, df = n-1)."""
    return t_p_values([one_sample_t(values)], two_sided=True)[0]


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties sharing their average rank (scipy.stats.rankdata's 'average'),
    without importing scipy.stats (half a second of a report's start-up)."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]
    dense = np.cumsum(starts)
    bounds = np.r_[np.flatnonzero(starts), len(values)]
    ranks = np.empty(len(values))
    ranks[order] = 0.5 * (bounds[dense - 1] + bounds[dense] + 1)
    return ranks


def confidence_tier(sessions: int) -> str:
    """How far a window's estimates can be trusted, by its sessions (contracts: confidence)."""
    if sessions < 10:
        return "insufficient"
    if sessions < 20:
        return "preliminary"
    if sessions < 50:
        return "moderate"
    return "high"
