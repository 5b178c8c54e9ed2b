"""The statistics kernels every analysis calls: Pearson's r over arrays (with an optional mask,
along the last axis, so a batch of sessions is one call) and from sums (windows, bootstrap
replicates), the correlation's t, Fisher's z, average ranks, and exact t tails.

Distribution tails come from scipy.special (exact t, not the normal approximation). Means and
spreads of one short series stay plain Python: at n <= 10 numpy's call overhead costs more than
the arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .column_space import IN_MEMORY, ColumnSpace
from .special import ndtr, stdtr, stdtrit

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


def pearson_arrays(x: np.ndarray, y: np.ndarray, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Pearson r along the last axis over the masked cells (every cell without a mask):
    (r, defined); r is undefined below 2 points or without variance on either side."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if mask is None:
        n = np.full(x.shape[:-1], float(x.shape[-1]))
        dx, dy = x - x.mean(-1, keepdims=True), y - y.mean(-1, keepdims=True)
    else:
        w = mask.astype(np.float64)
        n = w.sum(-1)
        safe_n = np.maximum(n, 1.0)[..., None]
        dx = (x - (x * w).sum(-1, keepdims=True) / safe_n) * w
        dy = (y - (y * w).sum(-1, keepdims=True) / safe_n) * w
    sxx, syy = (dx * dx).sum(-1), (dy * dy).sum(-1)
    defined = (n >= 2) & (sxx > 1e-300) & (syy > 1e-300)
    r = (dx * dy).sum(-1) / np.sqrt(np.where(defined, sxx * syy, 1.0))
    return np.clip(r, -1.0, 1.0), defined


def pearson_from_sums(n: Any, sx: Any, sy: Any, sxx: Any, syy: Any, sxy: Any) -> np.ndarray:
    """Pearson r from the sums n, sum x, sum y, sum x^2, sum y^2, sum xy (elementwise over arrays;
    Python integers stay exact until the one division); NaN where either side has no variance."""
    vx, vy = n * sxx - sx * sx, n * syy - sy * sy
    defined = (np.asarray(vx) > 0) & (np.asarray(vy) > 0)
    spread = np.asarray(vx, dtype=np.float64) * np.asarray(vy, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.asarray(n * sxy - sx * sy, dtype=np.float64) / np.sqrt(np.where(defined, spread, 1.0))
    return np.where(defined, np.clip(r, -1.0, 1.0), np.nan)


def correlation_t(r: Any, df: Any) -> np.ndarray:
    """t of H0: rho = 0, elementwise: r sqrt(df) / sqrt(1 - r^2) with df = n - 2; |r| = 1 gives +-inf."""
    r = np.asarray(r, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        t: np.ndarray = np.where(
            np.abs(r) >= 1.0, np.copysign(INF, r), r * np.sqrt(np.maximum(df, 0.0)) / np.sqrt(1.0 - r * r)
        )
    return t


def correlation_p_value(r: float, n: int) -> float | None:
    """Exact two-sided p of H0: rho = 0 (t test, df = n-2)."""
    if n < 3:
        return None
    return t_tails([(n - 2, float(correlation_t(r, n - 2)))], [])[0]


def _defined_r(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float | None:
    r, defined = pearson_arrays(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    return float(r) if defined else None


def pearson(x: Sequence[float], y: Sequence[float]) -> Correlation:
    """r with its exact p; both None below n = 3 ('insufficient') or with no variance."""
    n = len(x)
    r = _defined_r(x, y) if n >= 3 else None
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
    r = rank_correlation(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)) if n >= 4 else None
    if r is None:
        return Correlation(None, None, n)
    return Correlation(r, fisher_p(r, n, rank=True), n)


def fisher_p(r: float, n: int, *, rank: bool = False) -> float:
    """Two-sided p of H0: rho = 0 by Fisher's z under fisher_se; 0 at |r| = 1."""
    if abs(r) >= 1.0:
        return 0.0
    return 2.0 * float(ndtr(-abs(math.atanh(r)) / fisher_se(r, n, rank=rank)))


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


@dataclass(frozen=True, slots=True)
class MeanDifference:
    difference: float  # mean a - mean b
    low: float  # its 95% CI
    high: float
    p_value: float  # two-sided


def welch(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> MeanDifference | None:
    """Welch's t of mean a - mean b; None below 2 values a side. A zero spread on both sides gives
    a point interval and p 1 (equal means) or 0."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = float(a.var(ddof=1)) / len(a), float(b.var(ddof=1)) / len(b)
    d = float(a.mean() - b.mean())
    se2 = va + vb
    if se2 == 0.0:
        return MeanDifference(d, d, d, 1.0 if d == 0.0 else 0.0)
    df = se2**2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = float(stdtrit(df, 0.975)) * math.sqrt(se2)
    return MeanDifference(d, d - half, d + half, float(2.0 * stdtr(df, -abs(d) / math.sqrt(se2))))


def average_ranks(values: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """1-based ranks along the last axis among the masked cells (every cell without a mask), ties
    sharing their average rank (scipy.stats.rankdata's 'average'), without importing scipy.stats
    (half a second of a report's start-up). Cells outside the mask get finite ranks past the rest.
    A tie run's first and last places are made in place in two float arrays (whole numbers below
    2^53: exact), so a million values cost a few arrays of them, not a dozen."""
    values = np.asarray(values, dtype=np.float64)
    if mask is not None:
        values = np.where(mask, values, np.inf)
    order = np.argsort(values, axis=-1, kind="mergesort")
    ordered = np.take_along_axis(values, order, axis=-1)
    k = values.shape[-1]
    tied = ordered[..., 1:] == ordered[..., :-1]  # each sorted value equals the one before it
    del ordered
    place = np.arange(k, dtype=np.float64)
    first = np.empty(values.shape)
    first[...] = place
    first[..., 1:][tied] = 0.0
    np.maximum.accumulate(first, axis=-1, out=first)  # each value's tie run's first place
    last = np.empty(values.shape)
    last[...] = place
    last[..., :-1][tied] = k
    backwards = last[..., ::-1]
    np.minimum.accumulate(backwards, axis=-1, out=backwards)  # and its last place
    del tied, backwards
    first += last
    del last
    first *= 0.5
    first += 1.0
    ranks = np.empty(values.shape)
    np.put_along_axis(ranks, order, first, axis=-1)
    return ranks


RANK_BLOCK = 1 << 20  # points whose ranks are looked up at a time


def value_ranks(
    values: np.ndarray, space: ColumnSpace = IN_MEMORY, block: int = RANK_BLOCK
) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct values, ascending; each one's average 1-based rank among `values`, ties
    sharing it, as average_ranks gives them) of finite values, from one copy sorted in place: a
    point's rank is then looked up, and a window of points that repeat their values holds a few
    ranks. The copy, the values and their ranks are made in `space` a block at a time, its pages
    handed back after each."""
    n = len(values)
    ordered = space.zeros(n, np.float64)
    for start in range(0, n, block):
        ordered[start : start + block] = values[start : start + block]
        space.hand_back()
    ordered.sort()
    space.hand_back()
    distinct = space.zeros(n, np.float64)  # room for every value distinct
    starts = space.zeros(n + 1, np.int64)
    found = 0
    for start in range(0, n, block):
        part = ordered[start : start + block]
        opens = np.empty(len(part), dtype=bool)
        opens[0] = start == 0 or part[0] != ordered[start - 1]
        np.not_equal(part[1:], part[:-1], out=opens[1:])
        here = np.flatnonzero(opens)
        distinct[found : found + len(here)] = part[here]
        starts[found : found + len(here)] = here + start
        found += len(here)
        space.hand_back()
    starts[found] = n
    ranks = space.zeros(found, np.float64)
    for start in range(0, found, block):
        stop = min(start + block, found)
        ranks[start:stop] = (starts[start:stop] + starts[start + 1 : stop + 1] + 1) / 2.0  # places starts+1 .. stops
        space.hand_back()
    return distinct[:found], ranks


def rank_correlation(
    x: np.ndarray, y: np.ndarray, block: int = RANK_BLOCK, space: ColumnSpace = IN_MEMORY
) -> float | None:
    """Spearman's rho of finite values: Pearson's r of the average ranks, a block of points'
    ranks looked up among the distinct values (value_ranks, made in `space`) and merged as
    moments (GroupMoments), so no rank array is the points long. None below 2 points or without
    spread."""
    x_values, x_ranks = value_ranks(x, space, block)
    y_values, y_ranks = value_ranks(y, space, block)
    moments = GroupMoments(1)
    for start in range(0, len(x), block):
        rx = x_ranks[np.searchsorted(x_values, x[start : start + block])]
        ry = y_ranks[np.searchsorted(y_values, y[start : start + block])]
        moments.add(np.zeros(len(rx), dtype=np.intp), rx, ry)
        space.hand_back()
    return moments.r(0)


class GroupMoments:
    """Per group (0..size-1): the count, the means of x and y, and the sums of squared and crossed
    deviations from them, over values that arrive a chunk at a time: each chunk's are taken about
    its own means and merged (Chan, Golub and LeVeque's pairwise update), so no chunk's values are
    held after it and no sum of raw squares loses the digits a variance is made of."""

    def __init__(self, size: int) -> None:
        self.n = np.zeros(size)
        self.mean_x, self.mean_y = np.zeros(size), np.zeros(size)
        self.xx, self.yy, self.xy = np.zeros(size), np.zeros(size), np.zeros(size)

    def add(self, group: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
        size = len(self.n)
        n = np.bincount(group, minlength=size).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_x = np.bincount(group, weights=x, minlength=size) / n
            mean_y = np.bincount(group, weights=y, minlength=size) / n
        dx, dy = x - mean_x[group], y - mean_y[group]
        xx, yy, xy = (np.bincount(group, weights=a * b, minlength=size) for a, b in ((dx, dx), (dy, dy), (dx, dy)))
        total = self.n + n
        here = n > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(here, n / total, 0.0)  # the chunk's part of the merged count
            weight = np.where(here, self.n * n / total, 0.0)
        ex, ey = np.where(here, mean_x - self.mean_x, 0.0), np.where(here, mean_y - self.mean_y, 0.0)
        self.xx += xx + ex * ex * weight
        self.yy += yy + ey * ey * weight
        self.xy += xy + ex * ey * weight
        self.mean_x += ex * share
        self.mean_y += ey * share
        self.n = total

    def std_x(self, group: int) -> float | None:
        """The sample standard deviation of the group's x (ddof 1); None below 2 values."""
        n = self.n[group]
        return float(np.sqrt(self.xx[group] / (n - 1))) if n > 1 else None

    def r(self, group: int) -> float | None:
        """Pearson's r of the group's x and y; None below 2 values or without spread on a side
        (pearson_arrays' rule)."""
        n, xx, yy = self.n[group], self.xx[group], self.yy[group]
        if n < 2 or xx <= 1e-300 or yy <= 1e-300:
            return None
        return float(np.clip(self.xy[group] / np.sqrt(xx * yy), -1.0, 1.0))


COUNT_BLOCK = 1 << 20  # values counted at a time: bincount copies its input to 64 bits


def sorted_span(column: np.ndarray, start: int, stop: int) -> tuple[int, int]:
    """Where the values start..stop-1 lie in an ascending integer column (both bounds within its
    type): bisection with bounds of the column's own type (bounds of another would make numpy
    convert the whole column on every call)."""
    lo, hi = np.searchsorted(column, np.array([start, stop], dtype=column.dtype))
    return int(lo), int(hi)


def level_counts(values: np.ndarray, size: int = 0) -> np.ndarray:
    """How often each of 0..max(values) (at least `size` entries) occurs among non-negative
    integers: bincount's counts, taken a block at a time, so a 32-bit column is not copied to 64
    bits whole."""
    counts = np.zeros(max(int(values.max()) + 1 if len(values) else 0, size), dtype=np.int64)
    for start in range(0, len(values), COUNT_BLOCK):
        counts += np.bincount(values[start : start + COUNT_BLOCK], minlength=len(counts))
    return counts


def present_levels(values: np.ndarray, size: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct values, ascending; each value's place among them) of integers: np.unique's
    values and inverse (level_table without the counts)."""
    distinct, inverse, _ = level_table(values, size)
    return distinct, inverse


def level_table(values: np.ndarray, size: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the distinct values, ascending; each value's place among them; how often each occurs) of
    integers: np.unique's values, inverse and counts, by counting where they are non-negative and
    span no more than a few times their number (keys built from a window's indices), else by
    sorting. Values that are already 0..k-1, every one present, are their own places: `values`
    itself is returned."""
    if len(values) and (values.min() < 0 or values.max() >= max(size, 8 * len(values) + 64)):
        distinct, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
        return distinct, inverse.reshape(-1), counts
    counts = level_counts(values, size)
    present = counts > 0
    if present.all():
        return np.arange(len(present)), values, counts
    return np.flatnonzero(present), (np.cumsum(present) - 1)[values], counts[present]


def index_type(bound: int, smallest: type[np.signedinteger] = np.int32) -> type[np.signedinteger]:
    """The integer type for keys and indices below `bound` (and -1): the smallest of 8, 16, 32 and
    64 bits from `smallest` up that holds them. Keys built from a window's indices default to 32
    bits at least (half the memory of a window's cells long array); a column of a few levels
    copied for a fit can be a byte."""
    types: list[type[np.signedinteger]] = [np.int8, np.int16, np.int32, np.int64]
    for kind in types[types.index(smallest) :]:
        if bound <= np.iinfo(kind).max:
            return kind
    return np.int64


def rounded(value: float | None, digits: int = 4) -> float | None:
    """value at `digits` decimals for a report; None for None, NaN or an infinity."""
    return None if value is None or not np.isfinite(value) else round(float(value), digits)


def confidence_tier(sessions: int) -> str:
    """How far a window's estimates can be trusted, by its sessions (contracts: confidence)."""
    if sessions < 10:
        return "insufficient"
    if sessions < 20:
        return "preliminary"
    if sessions < 50:
        return "moderate"
    return "high"
