"""Least squares with session fixed effects absorbed (within-session demeaning).

Session effects stand for the query's difficulty (AlpacaEval's instruction term); absorbing
them instead of adding a dummy per session keeps the normal equations small (a few dozen
columns) however long the window. Coefficients are read only through estimable contrasts:
a contrast the design cannot separate (a model always shown first) reports None.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .special import fdtrc, stdtr, stdtrit

ALPHA_95 = 0.05


@dataclass(frozen=True)
class FitResult:
    beta: np.ndarray
    xtx: np.ndarray
    xtx_pinv: np.ndarray
    sigma2: float
    df: int
    n: int
    residual: np.ndarray | None = None  # y less its fit, in the cells' order
    design: np.ndarray | None = None  # the design with the groups absorbed, for robust SEs

    def robust_contrast(self, contrast: np.ndarray) -> tuple[float, float, float, float, float] | None:
        """contrast() with a heteroscedasticity-robust SE (White's sandwich, HC1: a noisier
        reviewer's cells do not borrow the others' precision)."""
        if self.df < 1 or self.residual is None or self.design is None or not self.estimable(contrast):
            return None
        estimate = float(contrast @ self.beta)
        leverage = self.design @ (self.xtx_pinv @ contrast)
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
        demeaned: np.ndarray = values - np.repeat(np.add.reduceat(values, starts, axis=0) / run_lengths[:, None],
                                                  run_lengths, axis=0)
        return demeaned
    counts = np.bincount(groups, minlength=n_groups).astype(np.float64)
    counts[counts == 0] = 1.0
    if values.ndim == 1:
        demeaned = values - (np.bincount(groups, weights=values, minlength=n_groups) / counts)[groups]
        return demeaned
    means = np.column_stack(
        [np.bincount(groups, weights=values[:, j], minlength=n_groups) for j in range(values.shape[1])]
    ) / counts[:, None]
    demeaned = values - means[groups]
    return demeaned


def absorbed_least_squares(design: np.ndarray, y: np.ndarray, groups: np.ndarray,
                           keep_design: bool = False) -> FitResult | None:
    """y ~ design + group fixed effects (groups: non-negative ints, need not be dense).
    None when there are no residual degrees of freedom."""
    n = len(y)
    if n == 0:
        return None
    size = int(groups.max()) + 1
    n_groups = int(np.count_nonzero(np.bincount(groups, minlength=size)))
    x = demean_by_group(design, groups, size)
    yd = demean_by_group(y, groups, size)
    xtx = x.T @ x
    pinv = np.linalg.pinv(xtx, rcond=1e-10, hermitian=True)
    beta = pinv @ (x.T @ yd)
    rank = int(np.linalg.matrix_rank(xtx, hermitian=True))
    df = n - rank - n_groups
    if df < 1:
        return None
    residual = yd - x @ beta
    return FitResult(beta=beta, xtx=xtx, xtx_pinv=pinv, sigma2=float(residual @ residual) / df, df=df, n=n,
                     residual=residual, design=x if keep_design else None)


def one_hot(index: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros((len(index), size))
    out[np.arange(len(index)), index] = 1.0
    return out
