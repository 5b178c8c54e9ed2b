"""Least squares with session fixed effects absorbed (within-session demeaning).

Session effects stand for the query's difficulty (AlpacaEval's instruction term); absorbing
them instead of adding a dummy per session keeps the normal equations small (a few dozen
columns) however long the window. Coefficients are read only through estimable contrasts:
a contrast the design cannot separate (a model always shown first) reports None.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Union

import numpy as np
from scipy import sparse

from .special import fdtrc, stdtr, stdtrit

ALPHA_95 = 0.05
RCOND = 1e-10  # eigenvalues of X'X below this share of the largest are the design's null space


@dataclass(frozen=True)
class FitResult:
    beta: np.ndarray
    xtx: np.ndarray
    xtx_pinv: np.ndarray
    sigma2: float
    df: int
    n: int
    residual: np.ndarray  # y less its fit, in the cells' order
    design: AbsorbedDesign  # the design with the groups absorbed, for robust SEs (indices and per-group shares)

    def robust_contrast(self, contrast: np.ndarray) -> tuple[float, float, float, float, float] | None:
        """contrast() with a heteroscedasticity-robust SE (White's sandwich, HC1: a noisier
        reviewer's cells do not borrow the others' precision)."""
        if self.df < 1 or not self.estimable(contrast):
            return None
        estimate = float(contrast @ self.beta)
        leverage = self.design.times(self.xtx_pinv @ contrast)
        variance = float((leverage * leverage) @ (self.residual * self.residual)) * self.n / self.df
        se = float(np.sqrt(max(variance, 0.0)))
        t_crit = float(stdtrit(self.df, 1 - ALPHA_95 / 2))
        p = float(2.0 * stdtr(self.df, -abs(estimate) / se)) if se > 0 else (0.0 if estimate != 0.0 else 1.0)
        return estimate, se, estimate - t_crit * se, estimate + t_crit * se, p

    def estimable(self, contrast: np.ndarray) -> bool:
        """c'b is estimable iff c lies in the row space of X'X."""
        projected = contrast @ self.xtx_pinv @ self.xtx
        return bool(np.allclose(projected, contrast, atol=1e-7 * max(1.0, np.abs(contrast).max())))

    def contrast(self, contrast: np.ndarray) -> tuple[float, float, float, float, float] | None:
        """(estimate, se, ci_lower, ci_upper, two-sided p) or None when not estimable."""
        if self.df < 1 or not self.estimable(contrast):
            return None
        estimate = float(contrast @ self.beta)
        variance = float(contrast @ self.xtx_pinv @ contrast) * self.sigma2
        se = float(np.sqrt(max(variance, 0.0)))
        t_crit = float(stdtrit(self.df, 1 - ALPHA_95 / 2))
        if se == 0.0:
            p = 0.0 if estimate != 0.0 else 1.0
        else:
            p = float(2.0 * stdtr(self.df, -abs(estimate) / se))
        return estimate, se, estimate - t_crit * se, estimate + t_crit * se, p

    def joint_test(self, contrasts: np.ndarray) -> tuple[float, float] | None:
        """(F, p) of H0: every contrast (rows) = 0; rows must be estimable."""
        if self.df < 1 or contrasts.shape[0] == 0:
            return None
        estimate = contrasts @ self.beta
        covariance = contrasts @ self.xtx_pinv @ contrasts.T * self.sigma2
        q = int(np.linalg.matrix_rank(covariance))
        if q == 0:
            return None
        f = float(estimate @ np.linalg.pinv(covariance, hermitian=True) @ estimate) / q
        return f, float(fdtrc(q, self.df, f))


def demean_by_group(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    if len(groups) > 1 and values.ndim == 2 and bool(np.all(groups[1:] >= groups[:-1])):
        # cells arrive in session order: one pass over contiguous runs for all columns at once
        starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
        run_lengths = np.diff(np.r_[starts, len(groups)])
        demeaned: np.ndarray = values - np.repeat(
            np.add.reduceat(values, starts, axis=0) / run_lengths[:, None], run_lengths, axis=0
        )
        return demeaned
    counts = np.bincount(groups, minlength=n_groups).astype(np.float64)
    counts[counts == 0] = 1.0
    if values.ndim == 1:
        demeaned = values - (np.bincount(groups, weights=values, minlength=n_groups) / counts)[groups]
        return demeaned
    means = (
        np.column_stack([np.bincount(groups, weights=values[:, j], minlength=n_groups) for j in range(values.shape[1])])
        / counts[:, None]
    )
    demeaned = values - means[groups]
    return demeaned


@dataclass(frozen=True)
class Indicators:
    """Indicator columns, one per level: row i has a 1 in column index[i], none where it is -1.
    Kept as the index, never as an (n, width) matrix: the fit's sums are counts."""

    index: np.ndarray
    width: int


Block = Union[Indicators, np.ndarray]  # indicators, or dense columns: (n,) or (n, k)


class AbsorbedDesign:
    """A design's columns with the group means taken out, held as what they are made of: for an
    indicator block its index, for dense columns the demeaned values. X'X, X'y and X v then cost
    a pass over the rows per block, not rows x columns: an indicator column less its group mean
    is D - G M (M the per-group shares of each level), so X_a'X_b = D_a'D_b - M_a' C M_b (C the
    group sizes, G'D = C M), X'y_d = D'y_d (the demeaned y sums to 0 in every group), and
    X v = D v less each row's group mean of D v. The shares are built, sparse, only for X'X: a
    (session, model) group meets a few of the window's (reviewer, model) pairs."""

    def __init__(self, blocks: Sequence[Block], groups: np.ndarray) -> None:
        self.groups = groups
        self.size = int(groups.max()) + 1 if len(groups) else 0
        self.count = np.bincount(groups, minlength=self.size).astype(np.float64)
        self.share = np.where(self.count > 0, self.count, 1.0)  # a group's size, 1 for an absent one
        self.indicators: list[tuple[np.ndarray, np.ndarray, int, int]] = []
        self.dense: list[tuple[int, np.ndarray]] = []
        offset = 0
        for block in blocks:
            if isinstance(block, Indicators):
                self.indicators.append((block.index, block.index >= 0, block.width, offset))
                offset += block.width
            else:
                values = np.asarray(block, dtype=np.float64).reshape(len(groups), -1)
                self.dense.append((offset, demean_by_group(values, groups, self.size)))
                offset += values.shape[1]
        self.width = offset

    def gram(self) -> np.ndarray:
        """X'X of the demeaned design."""
        xtx = np.zeros((self.width, self.width))

        def put(offset_a: int, offset_b: int, block: np.ndarray) -> None:  # the block and its mirror
            rows, cols = block.shape
            xtx[offset_a : offset_a + rows, offset_b : offset_b + cols] = block
            xtx[offset_b : offset_b + cols, offset_a : offset_a + rows] = block.T

        # M_a' C M_b = K_a' C^-1 K_b with K the per-group counts: with L = C^-1/2 K, L_a' L_b
        root = np.sqrt(self.share)
        scaled = [self._scaled_counts(index, on, width, root) for index, on, width, _ in self.indicators]
        for at, (index_a, on_a, width_a, offset_a) in enumerate(self.indicators):
            for (index_b, on_b, width_b, offset_b), scaled_b in zip(self.indicators[at:], scaled[at:]):
                both = on_a & on_b
                raw = np.bincount(index_a[both] * width_b + index_b[both], minlength=width_a * width_b)
                put(offset_a, offset_b, raw.reshape(width_a, width_b) - (scaled[at].T @ scaled_b).toarray())
            for offset_d, values in self.dense:
                put(
                    offset_a,
                    offset_d,
                    np.column_stack(
                        [np.bincount(index_a[on_a], weights=column[on_a], minlength=width_a) for column in values.T]
                    ),
                )
        for at, (offset_a, values_a) in enumerate(self.dense):
            for offset_b, values_b in self.dense[at:]:
                put(offset_a, offset_b, values_a.T @ values_b)
        return xtx

    def _scaled_counts(self, index: np.ndarray, on: np.ndarray, width: int, root: np.ndarray) -> sparse.csr_matrix:
        """(groups, width) count of each group's rows at each level over `root`, the root of its size."""
        if self.size * width <= len(self.groups):  # few groups: count densely, no per-row triplets
            counts = np.bincount(self.groups[on] * width + index[on], minlength=self.size * width)
            return sparse.csr_matrix(counts.reshape(self.size, width) / root[:, None])
        member = self.groups[on]  # duplicate (group, level) entries add up: each is one of the group's rows
        return sparse.csr_matrix((1.0 / root[member], (member, index[on])), shape=(self.size, width))

    def transpose_times(self, demeaned: np.ndarray) -> np.ndarray:
        """X'y for a y already demeaned by group."""
        out = np.zeros(self.width)
        for index, on, width, offset in self.indicators:
            out[offset : offset + width] = np.bincount(index[on], weights=demeaned[on], minlength=width)
        for offset, values in self.dense:
            out[offset : offset + values.shape[1]] = values.T @ demeaned
        return out

    def times(self, vector: np.ndarray) -> np.ndarray:
        """X v: each row's demeaned design times v."""
        out = np.zeros(len(self.groups))
        for index, on, width, offset in self.indicators:
            if not width:
                continue
            part = vector[offset : offset + width]
            # index -1 (no column) reads part[-1], which `on` then drops
            picked = np.where(on, part[index], 0.0)
            out += picked
            out -= (np.bincount(self.groups, weights=picked, minlength=self.size) / self.share)[self.groups]
        for offset, values in self.dense:
            out += values @ vector[offset : offset + values.shape[1]]
        return out


def absorbed_least_squares(design: np.ndarray | Sequence[Block], y: np.ndarray, groups: np.ndarray) -> FitResult | None:
    """y ~ design + group fixed effects (groups: non-negative ints, need not be dense). The design
    is a list of blocks (Indicators or dense columns), or one dense matrix. None when there are
    no residual degrees of freedom."""
    n = len(y)
    if n == 0:
        return None
    x = AbsorbedDesign([design] if isinstance(design, np.ndarray) else design, groups)
    n_groups = int(np.count_nonzero(x.count))
    yd = demean_by_group(y, groups, len(x.count))
    xtx = x.gram()
    pinv = np.linalg.pinv(xtx, rcond=RCOND, hermitian=True)
    beta = pinv @ x.transpose_times(yd)
    # the rank pinv used: matrix_rank's default cut (near machine epsilon) can count a null
    # direction that rounding left at 1e-8 of a 1e5 eigenvalue
    size = np.abs(np.linalg.eigvalsh(xtx))
    rank = int(np.count_nonzero(size > RCOND * size.max())) if len(size) else 0
    df = n - rank - n_groups
    if df < 1:
        return None
    residual = yd - x.times(beta)
    return FitResult(
        beta=beta,
        xtx=xtx,
        xtx_pinv=pinv,
        sigma2=float(residual @ residual) / df,
        df=df,
        n=n,
        residual=residual,
        design=x,
    )
