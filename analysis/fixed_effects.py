"""Least squares with session fixed effects absorbed (within-session demeaning).

Session effects stand for the query's difficulty (AlpacaEval's instruction term); absorbing
them instead of adding a dummy per session keeps the normal equations small (a few dozen
columns) however long the window. Coefficients are read only through estimable contrasts:
a contrast the design cannot separate (a model always shown first) reports None.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
from scipy import sparse

from .parallel import each_piece
from .special import fdtrc, stdtr, stdtrit

ALPHA_95 = 0.05
CHUNK_ROWS = 1 << 18  # rows whose temporaries X'X and X v hold at once
RCOND = 1e-10  # eigenvalues of X'X below this share of the largest are the design's null space


@dataclass(frozen=True)
class FitResult:
    beta: np.ndarray
    xtx: np.ndarray
    xtx_pinv: np.ndarray
    sigma2: float
    df: int
    n: int
    # X' diag(e^2) X, the sandwich's middle for every contrast's robust SE (with_meat: a second pass
    # over the rows); None until made
    meat: np.ndarray | None = None

    def robust_contrast(self, contrast: np.ndarray) -> tuple[float, float, float, float, float] | None:
        """contrast() with a heteroscedasticity-robust SE (White's sandwich, HC1: a noisier
        reviewer's cells do not borrow the others' precision)."""
        if self.meat is None:
            raise ValueError("robust SEs need the sandwich's middle: with_meat(fit, rows)")
        if self.df < 1 or not self.estimable(contrast):
            return None
        estimate = float(contrast @ self.beta)
        leverage = self.xtx_pinv @ contrast
        variance = float(leverage @ self.meat @ leverage) * self.n / self.df
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


def demean_by_group(
    values: np.ndarray,
    groups: np.ndarray,
    n_groups: int,
    *,
    overwrite: bool = False,
    chunks: Sequence[tuple[int, int]] | None = None,
    sizes: np.ndarray | None = None,
) -> np.ndarray:
    """`values` (n,) or (n, k) less their group's mean. overwrite: into `values` itself (the
    caller's own copy, not read again), else into a new array. chunks: ranges of rows that split
    no group (row_chunks), summed one at a time: a group's sum is then its one range's, and no
    other array as long as the values (numpy's own 64-bit copy of 32-bit groups among them) is made.
    sizes: each group's size, 1 for an absent one, when the caller has them (AbsorbedDesign.share)."""
    if len(groups) > 1 and values.ndim == 2 and bool(np.all(groups[1:] >= groups[:-1])):
        # cells arrive in session order: one pass over contiguous runs for all columns at once
        starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
        run_lengths = np.diff(np.r_[starts, len(groups)])
        means = np.zeros((n_groups, values.shape[1]))
        means[groups[starts]] = np.add.reduceat(values, starts, axis=0) / run_lengths[:, None]
    else:
        ranges = [(0, len(groups))] if chunks is None else chunks
        if sizes is None:
            counts = group_sums(groups, None, n_groups, ranges)
            counts[counts == 0] = 1.0
        else:
            counts = sizes
        columns = values.reshape(len(groups), -1)
        means = (
            np.column_stack([group_sums(groups, column, n_groups, ranges) for column in columns.T]) / counts[:, None]
        )
        if values.ndim == 1:
            means = means[:, 0]
    out = values if overwrite and values.dtype == np.float64 else np.empty_like(values, dtype=np.float64)

    def subtract(start: int) -> None:
        rows = slice(start, start + CHUNK_ROWS)
        np.subtract(values[rows], means[groups[rows]], out=out[rows])

    each_piece(subtract, range(0, len(groups), CHUNK_ROWS))  # each range writes its own rows
    return out


def group_sums(
    groups: np.ndarray, weights: np.ndarray | None, size: int, chunks: Sequence[tuple[int, int]]
) -> np.ndarray:
    """Per group, the sum of `weights` (its rows, with None), over ranges of rows that split no
    group: each group's sum is taken in one range, in row order, as one pass would take it."""
    out = np.zeros(size)

    def sums(chunk: tuple[int, int]) -> tuple[int, np.ndarray]:
        start, stop = chunk
        keys = groups[start:stop]
        low, high = int(keys.min()), int(keys.max()) + 1  # the range's groups: a span of the keys
        part = None if weights is None else weights[start:stop]
        return low, np.bincount(keys - low, weights=part, minlength=high - low)

    # a range on each core, added here in the ranges' order
    for low, part_sums in each_piece(sums, [(start, stop) for start, stop in chunks if start < stop]):
        out[low : low + len(part_sums)] += part_sums
    return out


@dataclass(frozen=True)
class Indicators:
    """Indicator columns, one per level: row i has a 1 in column index[i], none where it is -1.
    Kept as the index, never as an (n, width) matrix: the fit's sums are counts."""

    index: np.ndarray
    width: int


Block = Union[Indicators, np.ndarray]  # indicators, or dense columns: (n,) or (n, k)

_Terms = dict[tuple[int, int], np.ndarray]  # gram's terms of a range of rows, by block pair


class AbsorbedDesign:
    """A design's columns with the group means taken out, held as what they are made of: for an
    indicator block its index, for dense columns the demeaned values. X'X, X'y and X v then cost
    a pass over the rows per block, not rows x columns: an indicator column less its group mean
    is D - G M (M the per-group shares of each level), so X_a'X_b = D_a'D_b - M_a' C M_b (C the
    group sizes, G'D = C M), X'y_d = D'y_d (the demeaned y sums to 0 in every group), and
    X v = D v less each row's group mean of D v. The shares are built, sparse, only for X'X: a
    (session, model) group meets a few of the window's (reviewer, model) pairs."""

    def __init__(
        self, blocks: Sequence[Block], groups: np.ndarray, chunk_rows: int = CHUNK_ROWS, *, overwrite: bool = False
    ) -> None:
        self.groups = groups
        self.size = int(groups.max()) + 1 if len(groups) else 0
        # X'X and X v are sums over whole groups: taken over ranges of rows that split no group,
        # they hold a range's temporaries at once, not the window's
        self.chunks = row_chunks(groups, chunk_rows)
        # each range's first and last group key, found once: X v runs once per contrast
        self._keys = [
            (0, self.size) if (start, stop) == (0, len(groups)) else (int(part.min()), int(part.max()) + 1)
            for start, stop in self.chunks
            for part in [groups[start:stop]]
        ]
        size_of_group = group_sums(groups, None, self.size, self.chunks)
        self.groups_present = int(np.count_nonzero(size_of_group))
        size_of_group[size_of_group == 0] = 1.0
        self.share = size_of_group  # a group's size, 1 for an absent one
        self.indicators: list[tuple[np.ndarray, np.ndarray | None, int, int]] = []
        self.dense: list[tuple[int, np.ndarray]] = []
        self.spans: list[tuple[int, int]] = []  # each block's first column and width, in the blocks' order
        offset = 0
        for block in blocks:
            if isinstance(block, Indicators):
                on = block.index >= 0
                # a block with a column on every row (most) skips the mask's gathers
                self.indicators.append((block.index, None if on.all() else on, block.width, offset))
                width = block.width
            else:
                values = np.asarray(block, dtype=np.float64).reshape(len(groups), -1)
                demeaned = demean_by_group(
                    values, groups, self.size, overwrite=overwrite, chunks=self.chunks, sizes=self.share
                )
                self.dense.append((offset, demeaned))
                width = values.shape[1]
            self.spans.append((offset, width))
            offset += width
        self.width = offset

    def columns_of(self, block: int) -> np.ndarray:
        """The columns of X that the block-th block makes."""
        offset, width = self.spans[block]
        return np.arange(offset, offset + width)

    def gram(self, residual: np.ndarray | None = None) -> np.ndarray:
        """X'X of the demeaned design, or with a fit's residuals e, X' diag(e^2) X (the sandwich's
        meat): the row weights e^2 are squared a range of rows at a time, not as a second array as
        long as the rows.

        An indicator block's X_a'X_b is D_a'D_b - K_a'C^-1 K_b (K the per-group counts, C the group
        sizes). With row weights w (W a group's sum): D_a'WD_b - U_a'C^-1 K_b - K_a'C^-1 U_b, where U
        counts each row as w - W / 2C: the two cross terms and the group means' own term in one."""
        xtx = np.zeros((self.width, self.width))

        def put(offset_a: int, offset_b: int, block: np.ndarray) -> None:  # the block and its mirror
            rows, cols = block.shape
            xtx[offset_a : offset_a + rows, offset_b : offset_b + cols] = block
            xtx[offset_b : offset_b + cols, offset_a : offset_a + rows] = block.T

        blocks = self.indicators
        # K_a' C^-1 K_b: with L = C^-1/2 K, L_a' L_b
        products = {
            (a, b): np.zeros((blocks[a][2], blocks[b][2])) for a in range(len(blocks)) for b in range(a, len(blocks))
        }
        crossed = {
            (a, d): np.zeros((blocks[a][2], values.shape[1]))
            for a in range(len(blocks))
            for d, (_, values) in enumerate(self.dense)
        }
        root = np.sqrt(self.share)

        # each range's terms on a core, added here in the ranges' order: the same sums as one pass
        for pairs, added, taken in each_piece(
            lambda chunk: self._range_terms(chunk, residual, root), list(self._chunked())
        ):
            for key, term in pairs.items():
                products[key] += term
            for key, term in added.items():
                crossed[key] += term
                if key in taken:
                    crossed[key] -= taken[key]
        for (a, b), block in products.items():
            put(blocks[a][3], blocks[b][3], block)
        for (a, d), block in crossed.items():
            put(blocks[a][3], self.dense[d][0], block)
        squares = None if residual is None or not self.dense else np.square(residual)[:, None]
        for at, (offset_a, values_a) in enumerate(self.dense):
            for offset_b, values_b in self.dense[at:]:
                put(offset_a, offset_b, values_a.T @ (values_b if squares is None else values_b * squares))
        return xtx

    def _range_terms(
        self, chunk: tuple[slice, np.ndarray, int, int], residual: np.ndarray | None, root: np.ndarray
    ) -> tuple[_Terms, _Terms, _Terms]:
        """gram's terms of a range of rows: (each indicator pair's, each indicator and dense
        block's, and with residuals, weighted by their squares, what comes off the latter)."""
        rows, groups, lo, hi = chunk
        size = hi - lo
        # a range's indices at full width: a pair's key (a * width_b + b) overflows a byte's
        parts = [(index[rows].astype(np.intp), _rows_of(on, rows), width) for index, on, width, _ in self.indicators]
        scaled = [_scaled_counts(groups, size, index, on, width, root[lo:hi]) for index, on, width in parts]
        w = None if residual is None else np.square(residual[rows])
        halved: list[Any] = [None] * len(parts)
        if w is not None:
            half_mean = np.bincount(groups, weights=w, minlength=size) / (2.0 * self.share[lo:hi])
            centred = w - half_mean[groups]
            halved = [_scaled_counts(groups, size, i, on, width, root[lo:hi], centred) for i, on, width in parts]
        pairs: _Terms = {}
        added: _Terms = {}
        taken: _Terms = {}
        for a, (index_a, on_a, width_a) in enumerate(parts):
            for b in range(a, len(parts)):
                index_b, on_b, width_b = parts[b]
                both = on_a if on_b is None else on_b if on_a is None else on_a & on_b
                raw = np.bincount(
                    _kept(index_a, both) * width_b + _kept(index_b, both),
                    weights=None if w is None else _kept(w, both),
                    minlength=width_a * width_b,
                )
                shift = _means_term(scaled[a], scaled[b], halved[a], halved[b], a == b)
                pairs[a, b] = raw.reshape(width_a, width_b) - shift
            for d, (_, values) in enumerate(self.dense):
                chunk_values = values[rows] if w is None else values[rows] * w[:, None]
                added[a, d] = np.column_stack(
                    [
                        np.bincount(_kept(index_a, on_a), weights=column, minlength=width_a)
                        for column in _kept(chunk_values, on_a).T
                    ]
                )
                if w is not None:  # weighted, the demeaned values no longer sum to 0 in a group
                    sums = np.column_stack([np.bincount(groups, weights=c, minlength=size) for c in chunk_values.T])
                    taken[a, d] = _cross(scaled[a], sums / root[lo:hi, None])
        return pairs, added, taken

    def _chunked(self) -> Iterator[tuple[slice, np.ndarray, int, int]]:
        """Per range of rows: (its rows, its groups less the first key, first key, last key + 1)."""
        for (start, stop), (lo, hi) in zip(self.chunks, self._keys):
            rows = slice(start, stop)
            yield rows, (self.groups if (start, stop) == (0, len(self.groups)) else self.groups[rows] - lo), lo, hi

    def transpose_times(self, demeaned: np.ndarray) -> np.ndarray:
        """X'y for a y already demeaned by group."""
        out = np.zeros(self.width)

        def sums(chunk: tuple[int, int]) -> list[np.ndarray]:  # each indicator block's, over a range
            rows = slice(*chunk)
            part = demeaned[rows]
            return [
                np.bincount(
                    _kept(index[rows], _rows_of(on, rows)), weights=_kept(part, _rows_of(on, rows)), minlength=width
                )
                for index, on, width, _ in self.indicators
            ]

        for terms in each_piece(sums, self.chunks):  # added in the ranges' order, as one pass adds them
            for (_, _, width, offset), term in zip(self.indicators, terms):
                out[offset : offset + width] += term
        for offset, values in self.dense:
            out[offset : offset + values.shape[1]] = values.T @ demeaned
        return out

    def subtract_times(self, values: np.ndarray, vector: np.ndarray) -> np.ndarray:
        """values less X v (each row's demeaned design times v), into `values` itself: a range of
        rows' X v at a time, so no second array as long as the rows is made (the residuals of a
        fit, from its demeaned y)."""

        def fill(chunk: tuple[slice, np.ndarray, int, int]) -> None:
            rows, groups, lo, hi = chunk
            part_out = np.zeros(rows.stop - rows.start)  # the range's X v
            for index, on, width, offset in self.indicators:
                if not width:
                    continue
                # index -1 (no column) reads the block's last entry, which `on` then drops
                picked = vector[offset : offset + width][index[rows]]
                if on is not None:
                    picked[~on[rows]] = 0.0
                part_out += picked
                part_out -= (np.bincount(groups, weights=picked, minlength=hi - lo) / self.share[lo:hi])[groups]
            for offset, dense in self.dense:
                part_out += dense[rows] @ vector[offset : offset + dense.shape[1]]
            np.subtract(values[rows], part_out, out=values[rows])

        each_piece(fill, list(self._chunked()))  # each range writes its own rows
        return values


def row_chunks(groups: np.ndarray, chunk_rows: int, probe: int = 4096) -> list[tuple[int, int]]:
    """[start, stop) ranges of rows, about chunk_rows each, that split no group: a cut falls where
    every group key before it is below every key after it (rows in group order, or in session
    order with groups inside sessions). Rows in no such order are one range."""
    n = len(groups)
    if n <= chunk_rows:
        return [(0, n)]
    starts = np.arange(0, n, probe)
    # a cut inside probe block b needs every key before the block below every key after it
    before = np.maximum.accumulate(np.maximum.reduceat(groups, starts).astype(np.int64))
    after = np.minimum.accumulate(np.minimum.reduceat(groups, starts).astype(np.int64)[::-1])[::-1]
    low, high = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    candidates = np.flatnonzero(np.r_[low, before[:-1]] < np.r_[after[1:], high])
    cuts = [0]
    for block in candidates:
        first = int(starts[block])
        if first + probe < cuts[-1] + chunk_rows:
            continue  # the range is not full by this block's end
        local = groups[first : first + probe].astype(np.int64)  # beside the int64 bounds
        prior = int(before[block - 1]) if block else low
        later = int(after[block + 1]) if block + 1 < len(starts) else high
        # cut i of the block (before its row i, 0..len): the largest key before it, the smallest after
        largest = np.r_[prior, np.maximum(np.maximum.accumulate(local), prior)]
        smallest = np.r_[np.minimum(np.minimum.accumulate(local[::-1])[::-1], later), later]
        for cut in (first + np.flatnonzero(largest < smallest)).tolist():  # ascending
            if cuts[-1] + chunk_rows <= cut < n:
                cuts.append(cut)
    if n - cuts[-1] < chunk_rows // 2 and len(cuts) > 1:
        cuts.pop()  # a short last range joins the one before
    return list(zip(cuts, [*cuts[1:], n]))


def _scaled_counts(
    groups: np.ndarray,
    size: int,
    index: np.ndarray,
    on: np.ndarray | None,
    width: int,
    scale: np.ndarray,
    weights: np.ndarray | None = None,
) -> np.ndarray | sparse.csr_matrix:
    """(size, width) count (or weight sum) of each group's rows at each level over the group's
    `scale`: dense while the table is no larger than the rows (its product is then one BLAS call)."""
    weight = None if weights is None else _kept(weights, on)
    if size * width <= len(groups):  # few groups: count densely, no per-row triplets
        counts = np.bincount(_kept(groups, on) * width + _kept(index, on), weights=weight, minlength=size * width)
        return counts.reshape(size, width) / scale[:, None]
    member = _kept(groups, on)  # duplicate (group, level) entries add up: each is one of the group's rows
    entries = 1.0 / scale[member] if weight is None else weight / scale[member]
    return sparse.csr_matrix((entries, (member, _kept(index, on))), shape=(size, width))


def _rows_of(on: np.ndarray | None, rows: slice) -> np.ndarray | None:
    return None if on is None else on[rows]


def _kept(values: np.ndarray, on: np.ndarray | None) -> np.ndarray:
    """The rows with a column in the block (all of them when there is no mask)."""
    return values if on is None else values[on]


def _means_term(scaled_a: Any, scaled_b: Any, halved_a: Any, halved_b: Any, same: bool) -> np.ndarray:
    """The group means' part of an indicator block pair: K_a'C^-1 K_b, or with weights
    U_a'C^-1 K_b + K_a'C^-1 U_b (halved: U over the root of C; one product when a is b)."""
    if halved_a is None:
        return _cross(scaled_a, scaled_b)
    shift = _cross(halved_a, scaled_b)
    total: np.ndarray = shift + (shift.T if same else _cross(scaled_a, halved_b))
    return total


def _cross(a: np.ndarray | sparse.csr_matrix, b: np.ndarray | sparse.csr_matrix) -> np.ndarray:
    """a'b as a dense array, whichever of them is sparse."""
    product = a.T @ b
    return product.toarray() if sparse.issparse(product) else np.asarray(product)


@dataclass(frozen=True)
class FitChunk:
    """Some of a fit's rows, whole groups only (no group has rows in another chunk): a fit over
    chunks adds up each chunk's X'X, X'y and y'y, so its rows need never be held at once."""

    blocks: Sequence[Block]
    y: np.ndarray
    groups: np.ndarray


def absorbed_least_squares(
    design: np.ndarray | Sequence[Block],
    y: np.ndarray,
    groups: np.ndarray,
    *,
    chunk_rows: int = CHUNK_ROWS,
    overwrite: bool = False,
) -> FitResult | None:
    """y ~ design + group fixed effects (groups: non-negative ints, need not be dense). The design
    is a list of blocks (Indicators or dense columns), or one dense matrix. None when there are
    no residual degrees of freedom. chunk_rows: see AbsorbedDesign. overwrite: y and the dense
    blocks are the caller's own copies, not read again, and are demeaned in place (two arrays
    fewer as long as y)."""
    blocks = [design] if isinstance(design, np.ndarray) else design
    [fit] = absorbed_chunk_fits([FitChunk(blocks, y, groups)], [range(len(blocks))], chunk_rows, overwrite=overwrite)
    return fit


def absorbed_chunk_fits(
    chunks: Iterable[FitChunk],
    subsets: Sequence[Sequence[int]],
    chunk_rows: int = CHUNK_ROWS,
    *,
    overwrite: bool = False,
) -> list[FitResult | None]:
    """The fit of y on each subset of the blocks (and the groups), as absorbed_least_squares would
    make it alone (X'X of a subset is its blocks' part of the whole X'X, each part summed by
    itself: the same floats), from one pass over rows that come a chunk of whole groups at a time
    (every chunk's blocks alike): a chunk's rows and temporaries are held at once, never the whole
    rows'. overwrite: each chunk's y and dense blocks are its own, demeaned in place.
    chunk_rows: see AbsorbedDesign. A subset's fit is None without residual degrees of freedom
    (every one, without rows)."""
    xtx = xty = None
    yy, n, groups_present = 0.0, 0, 0
    x: AbsorbedDesign | None = None
    for chunk in chunks:
        demeaned = _demeaned(chunk, chunk_rows, overwrite)
        if demeaned is None:
            continue
        x, yd = demeaned
        part_xtx, part_xty = x.gram(), x.transpose_times(yd)
        if xtx is None or xty is None:  # the first chunk's sums themselves: one chunk, one pass's floats
            xtx, xty = part_xtx, part_xty
        else:
            xtx += part_xtx
            xty += part_xty
        yy += float(yd @ yd)
        n += len(yd)
        groups_present += x.groups_present
    if x is None or xtx is None or xty is None:
        return [None for _ in subsets]
    fits: list[FitResult | None] = []
    for subset in subsets:
        columns = np.concatenate([np.zeros(0, dtype=np.intp), *(x.columns_of(block) for block in subset)])
        part = xtx[np.ix_(columns, columns)]
        pinv = np.linalg.pinv(part, rcond=RCOND, hermitian=True)
        # the rank pinv used: matrix_rank's default cut (near machine epsilon) can count a null
        # direction that rounding left at 1e-8 of a 1e5 eigenvalue
        size = np.abs(np.linalg.eigvalsh(part))
        rank = int(np.count_nonzero(size > RCOND * size.max())) if len(size) else 0
        df = n - rank - groups_present
        if df < 1:
            fits.append(None)
            continue
        beta = pinv @ xty[columns]
        # the residuals' sum of squares from the normal equations (b'X'Xb = b'X'y for the pinv's b):
        # no pass over the rows for it
        rss = max(yy - float(beta @ xty[columns]), 0.0)
        fits.append(FitResult(beta=beta, xtx=part, xtx_pinv=pinv, sigma2=rss / df, df=df, n=n))
    return fits


def chunk_residuals(
    chunks: Iterable[FitChunk], beta: np.ndarray, chunk_rows: int = CHUNK_ROWS
) -> Iterator[tuple[AbsorbedDesign | None, np.ndarray]]:
    """Each chunk's design and residuals (y less its group's mean and the demeaned design times
    beta), a chunk at a time: a chunk's y and dense blocks are its own, and become its residuals
    and demeaned columns. A chunk without rows: no design, no residuals."""
    for chunk in chunks:
        demeaned = _demeaned(chunk, chunk_rows, overwrite=True)
        if demeaned is None:
            yield None, np.zeros(0)
            continue
        x, yd = demeaned
        yield x, x.subtract_times(yd, beta)


def with_meat(fit: FitResult, chunks: Iterable[FitChunk]) -> FitResult:
    """The fit with its sandwich's middle, X' diag(e^2) X, summed over a second pass over the
    fit's rows (the same chunks, their columns the chunks' own): robust SEs for its contrasts."""
    meat = np.zeros_like(fit.xtx)
    for x, residual in chunk_residuals(chunks, fit.beta):
        if x is not None:
            meat += x.gram(residual)
    return dataclasses.replace(fit, meat=meat)


def _demeaned(chunk: FitChunk, chunk_rows: int, overwrite: bool) -> tuple[AbsorbedDesign, np.ndarray] | None:
    """A chunk's design with its groups absorbed and its demeaned y; None without rows."""
    if len(chunk.y) == 0:
        return None
    low = int(chunk.groups.min())
    # a chunk's keys from 0: its per-group sums are as long as its own groups
    groups = chunk.groups - low if low else chunk.groups
    x = AbsorbedDesign(chunk.blocks, groups, chunk_rows, overwrite=overwrite)
    return x, demean_by_group(chunk.y, groups, x.size, overwrite=overwrite, chunks=x.chunks, sizes=x.share)
