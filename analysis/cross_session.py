"""Cross-session metrics over a window of session digests (science.md, 'Across sessions').

Pure: window columns (analysis.window_cells) in, schemas.report models out. `report --redis`
(digests from the live window) and `report --input` (digests from records) compute the same
numbers from the same digests.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from bias_audit.schemas.report import (
    Estimate,
    LengthControl,
    LengthCorrelation,
    ModelScore,
    PositionAnalysis,
    PositionEffect,
    Randomization,
    ReviewerProfile,
)

from .column_space import ColumnSpace
from .fixed_effects import (
    Block,
    FitChunk,
    FitResult,
    Indicators,
    absorbed_chunk_fits,
)
from .parallel import PIECE_CELLS, each_piece
from .special import chdtrc
from .stats import (
    GroupMoments,
    confidence_tier,
    fisher_ci,
    fisher_p,
    index_type,
    pearson_from_sums,
    rank_correlation,
    rounded,
)
from .window_cells import SUM_BLOCK, SessionBlock, WindowCells

MIN_SESSIONS = 10  # below this a metric says "collecting data"


@dataclass(frozen=True, slots=True)
class WindowThresholds:
    """Effect sizes worth a flag, in points of a 1-10 scale (and r for length); a flag also
    needs p < alpha, so noise is not called a bias."""

    alpha: float = 0.05
    reviewer_offset: float = 0.5
    self_preference: float = 0.5
    position_effect: float = 0.25
    position_alpha: float = 0.01  # joint test over several positions
    length_correlation: float = 0.2
    length_coefficient: float = 0.25
    randomization_alpha: float = 0.001
    shared_order_fraction: float = 0.5
    bootstrap_replicates: int = 1000
    bootstrap_seed: int = 20240501


def collecting(sample_size: int, sessions: int, status: str = "collecting data") -> Estimate:
    return Estimate(
        point_estimate=None,
        ci_lower=None,
        ci_upper=None,
        sample_size=sample_size,
        sessions=sessions,
        confidence=confidence_tier(sessions),
        status=status,
    )


def _defined(r: np.ndarray, defined: np.ndarray) -> float | None:
    """A kernel's r rounded for the report, None where it is undefined."""
    return rounded(float(r)) if defined else None


def session_length_sums(
    cells: WindowCells, block: int = SUM_BLOCK, cluster: np.ndarray | None = None, clusters: int = 0
) -> np.ndarray:
    """(sessions, 6) sums of the length points of each session, for the cluster bootstrap: a
    block of whole sessions' points at a time (the points are in session order), so each sum
    is the same floats as one pass over them all and the temporaries stay a block long. With
    `cluster` (each session's cluster), (clusters, 6): each block's sessions added into their
    clusters as they are made, so no row a session is kept."""
    session, x, y = cells.length_points
    out = np.zeros((cells.sessions if cluster is None else clusters, 6))
    start = 0
    while start < len(x):
        stop = min(start + block, len(x))
        if stop < len(x):  # back to the start of the session the block would cut, or past a long one
            cut = int(np.searchsorted(session, session[stop]))
            stop = cut if cut > start else int(np.searchsorted(session, session[start], side="right"))
        first = int(session[start])
        at = session[start:stop] - first
        size = int(session[stop - 1]) - first + 1
        xs, ys = x[start:stop], y[start:stop]
        sums = out[first : first + size] if cluster is None else np.empty((size, 6))
        sums[:, 0] = np.bincount(at, minlength=size)
        for column, (a, b) in enumerate(((xs, None), (ys, None), (xs, xs), (ys, ys), (xs, ys)), start=1):
            sums[:, column] = np.bincount(at, weights=a if b is None else a * b, minlength=size)
        if cluster is not None:
            # bincount adds in session order, so block by block the totals are one pass's floats
            out += cluster_sums(sums, cluster[first : first + size], clusters)
        start = stop
    return out


def cluster_sums(per_session: np.ndarray, cluster: np.ndarray, clusters: int) -> np.ndarray:
    """(clusters, 6): each cluster's sessions' sums, added in session order."""
    return np.column_stack([np.bincount(cluster, weights=column, minlength=clusters) for column in per_session.T])


BOOTSTRAP_CLUSTERS = 20_000  # a longer window's sessions are resampled in this many clusters


class ClusterBootstrap:
    """Percentile CIs of pooled r, resampling whole sessions (points of a session move together).
    Past BOOTSTRAP_CLUSTERS sessions, the sessions are dealt at random into that many clusters
    and the clusters are resampled: clusters of independent sessions are independent too, and
    the work is replicates x clusters however long the window. With keep_draws, the draws are
    made once and kept (a byte a count: 20 MB at 1,000 replicates) for the next set of points on
    the same sessions: the finding drivers test the window again without each reviewer."""

    def __init__(self, sessions: int, replicates: int, seed: int, *, keep_draws: bool = False) -> None:
        self.sessions, self.replicates, self.keep_draws = sessions, replicates, keep_draws
        self._rng = np.random.default_rng(seed)
        self._cluster: np.ndarray | None = None  # dealt at the first interval: a plan costs nothing unused
        self._counts: list[np.ndarray] = []

    def _draws(self) -> Iterator[np.ndarray]:
        """How often each cluster is drawn, per replicate: a few hundred thousand draws at a
        time, so the counts stay in the CPU cache."""
        if self._counts:
            yield from self._counts
            return
        clusters = min(self.sessions, BOOTSTRAP_CLUSTERS)
        chunk = max(1, min(self.replicates, 250_000 // clusters))
        for done in range(0, self.replicates, chunk):
            size = min(chunk, self.replicates - done)
            draws = self._rng.integers(0, clusters, (size, clusters), dtype=np.int32)  # int32 halves the memory traffic
            draws += (np.arange(size, dtype=np.int32) * clusters)[:, None]
            counts = np.bincount(draws.ravel(), minlength=size * clusters).reshape(size, clusters)
            if self.keep_draws:
                self._counts.append(counts.astype(np.min_scalar_type(int(counts.max()))))
            yield counts

    def clusters(self) -> np.ndarray | None:
        """Each session's cluster, dealt at the first call (None: the sessions are resampled one
        by one). Dealt before any draw, so a plan's draws are the same whoever asks first."""
        if self.sessions <= BOOTSTRAP_CLUSTERS:
            return None
        if self._cluster is None:
            self._cluster = self._rng.permutation(self.sessions) % BOOTSTRAP_CLUSTERS
        return self._cluster

    def sums(self, cells: WindowCells) -> np.ndarray:
        """The window's length sums as this plan resamples them: a row a session, or a cluster."""
        return session_length_sums(cells, cluster=self.clusters(), clusters=BOOTSTRAP_CLUSTERS)

    def grouped(self, per_session: np.ndarray) -> np.ndarray:
        """(sessions, 6) sums of each session's points as this plan resamples them."""
        cluster = self.clusters()
        return per_session if cluster is None else cluster_sums(per_session, cluster, BOOTSTRAP_CLUSTERS)

    def interval(self, sums: np.ndarray) -> tuple[float, float] | None:
        """The sums as this plan resamples them (`sums`, `grouped`) -> the interval."""
        if self.sessions < MIN_SESSIONS:
            return None

        def replicates(counts: np.ndarray) -> np.ndarray:
            r: np.ndarray = pearson_from_sums(*(counts.astype(np.float64) @ sums).T)
            return r

        # kept draws are there to share among the cores; fresh ones come from one generator, in turn
        estimates = each_piece(replicates, self._counts) if self._counts else list(map(replicates, self._draws()))
        r = np.concatenate(estimates)
        r = r[~np.isnan(r)]
        if len(r) < self.replicates // 2:
            return None
        return float(np.quantile(r, 0.025)), float(np.quantile(r, 0.975))


def cluster_bootstrap_ci(per_session: np.ndarray, replicates: int, seed: int) -> tuple[float, float] | None:
    """The session bootstrap's percentile CI of pooled r (ClusterBootstrap), for one set of points."""
    plan = ClusterBootstrap(per_session.shape[0], replicates, seed)
    return plan.interval(plan.grouped(per_session))


def chi_square_independence(table: np.ndarray) -> tuple[float, int, float]:
    """(statistic, degrees of freedom, p) of Pearson's chi-square test of independence."""
    total = table.sum()
    expected = np.outer(table.sum(1), table.sum(0)) / total
    statistic = float(((table - expected) ** 2 / expected).sum())
    dof = (table.shape[0] - 1) * (table.shape[1] - 1)
    return statistic, dof, float(chdtrc(dof, statistic))


def contrast_estimate(
    fit: FitResult | None,
    contrast: np.ndarray,
    *,
    sample_size: int,
    sessions: int,
    threshold: float | None,
    alpha: float,
) -> Estimate:
    """A fitted contrast as an Estimate; flagged when |value| >= threshold and p < alpha
    (threshold None: never flagged on its own)."""
    if sessions < MIN_SESSIONS:
        return collecting(sample_size, sessions)
    est = fit.contrast(contrast) if fit is not None else None
    if est is None:
        return collecting(sample_size, sessions, "not identifiable")
    value, _, lo, hi, p = est
    return Estimate(
        point_estimate=rounded(value),
        ci_lower=rounded(lo),
        ci_upper=rounded(hi),
        sample_size=sample_size,
        sessions=sessions,
        confidence=confidence_tier(sessions),
        p_value=rounded(p, 6),
        flagged=bool(threshold is not None and abs(value) >= threshold and p < alpha),
    )


def length_correlation(
    cells: WindowCells,
    thresholds: WindowThresholds,
    *,
    ranks: bool = True,
    bootstrap: ClusterBootstrap | None = None,
) -> LengthCorrelation:
    """Pearson r of response length and offset-adjusted mean peer score, flagged when the session
    bootstrap's interval excludes 0 and |r| reaches the threshold. ranks=False leaves Spearman's
    rho out (a sort of every point, twice), for a caller that asks only whether it flags;
    `bootstrap` is the caller's plan for these sessions (its draws kept from an earlier test)."""
    session, x, y = cells.length_points
    n, sessions = len(x), cells.sessions
    base = dict(sample_size=n, sessions=sessions, confidence=confidence_tier(sessions))
    if sessions < MIN_SESSIONS or n < 4:
        return LengthCorrelation(point_estimate=None, ci_lower=None, ci_upper=None, status="collecting data", **base)
    r = float(pearson_from_sums(n, *_point_sums(cells, x, y)))
    if np.isnan(r):
        return LengthCorrelation(point_estimate=None, ci_lower=None, ci_upper=None, status="not identifiable", **base)
    ci = fisher_ci(float(r), n)
    assert ci is not None  # n >= 4 here
    lo, hi = ci
    if bootstrap is None:
        bootstrap = ClusterBootstrap(sessions, thresholds.bootstrap_replicates, thresholds.bootstrap_seed)
    boot = bootstrap.interval(bootstrap.sums(cells))
    cells.hand_back()
    # The flag trusts the bootstrap interval: it does not pretend points in a session are independent.
    excludes_zero = boot is not None and (boot[0] > 0 or boot[1] < 0)
    p = fisher_p(r, n)
    return LengthCorrelation(
        point_estimate=rounded(r),
        ci_lower=rounded(lo),
        ci_upper=rounded(hi),
        p_value=rounded(p, 6),
        bootstrap_ci_lower=rounded(boot[0]) if boot else None,
        bootstrap_ci_upper=rounded(boot[1]) if boot else None,
        spearman=_rank_correlation(x, y, cells.space) if ranks else None,
        flagged=bool(excludes_zero and abs(r) >= thresholds.length_correlation),
        **base,
    )


def _point_sums(cells: WindowCells, x: np.ndarray, y: np.ndarray, block: int = SUM_BLOCK) -> np.ndarray:
    """(sum x, sum y, sum x^2, sum y^2, sum xy) of the points, a block at a time, their pages handed
    back after each (one block: the sums of the whole arrays)."""
    sums = np.zeros(5)
    for start in range(0, len(x), block):
        a, b = x[start : start + block], y[start : start + block]
        sums += (a.sum(), b.sum(), a @ a, b @ b, a @ b)
        cells.hand_back()
    return sums


def _rank_correlation(x: np.ndarray, y: np.ndarray, space: ColumnSpace) -> float | None:
    """Spearman's rho, rounded for the report; its sorts made in `space`."""
    r = rank_correlation(x, y, space=space)
    return None if r is None else rounded(r)


def length_fit(cells: WindowCells, block: int = SUM_BLOCK) -> tuple[float, float] | None:
    """Least-squares line of the length chart: (intercept, slope) in points and points/unit, from
    the centred sums, a block of points at a time (not the solver's design and its copies)."""
    _, x, y = cells.length_points
    if len(x) < 2:
        return None
    low, high, sum_x, sum_y = np.inf, -np.inf, 0.0, 0.0
    for start in range(0, len(x), block):  # the points' range and means, a block at a time
        part = x[start : start + block]
        low, high = min(low, float(part.min())), max(high, float(part.max()))
        sum_x, sum_y = sum_x + part.sum(), sum_y + y[start : start + block].sum()
        cells.hand_back()
    if low == high:
        return None
    mean_x, mean_y = float(sum_x / len(x)), float(sum_y / len(y))
    sxy = sxx = 0.0
    for start in range(0, len(x), block):  # the centred points a block at a time
        dx = x[start : start + block] - mean_x
        sxy += float(dx @ (y[start : start + block] - mean_y))
        sxx += float(dx @ dx)
        cells.hand_back()
    slope = sxy / sxx
    return mean_y - slope * mean_x + 1.0, slope  # +1: points above the bottom -> a 1-10 value


def rank_by_score(values: list[float]) -> list[int]:
    """1 for the highest value, 2 for the next, ... (ties in list order): a leaderboard's ranks."""
    order = sorted(range(len(values)), key=lambda i: -values[i])
    ranks = [0] * len(values)
    for rank, i in enumerate(order, 1):
        ranks[i] = rank
    return ranks


@dataclass(frozen=True, slots=True)
class _PeerCensus:
    """What the length and position fits know of their rows before fitting, counted a block of
    sessions at a time: the peer scores, those with a known position, each position's count
    among the latter, and the sessions with one."""

    peer: int
    placed: int
    position_counts: np.ndarray
    placed_sessions: int

    @staticmethod
    def of(cells: WindowCells, block: int) -> _PeerCensus:
        peer_scores = placed_scores = placed_sessions = 0
        counts = np.zeros(0, dtype=np.int64)
        for part, first, stop in cells.session_blocks(block):
            peer = ~cells.own[part]
            placed = peer & (cells.position[part] >= 0)
            peer_scores += int(np.count_nonzero(peer))
            placed_scores += int(np.count_nonzero(placed))
            here = np.bincount(cells.position[part][placed])
            if len(here) > len(counts):
                counts = np.r_[counts, np.zeros(len(here) - len(counts), dtype=np.int64)]
            counts[: len(here)] += here
            sessions = cells.session[part][placed].astype(np.int64) - first
            placed_sessions += int(np.count_nonzero(np.bincount(sessions, minlength=stop - first)))
        return _PeerCensus(peer_scores, placed_scores, counts, placed_sessions)


@dataclass(frozen=True, slots=True)
class _LengthTerm:
    """Length control's inputs past its early answers: what its third block is made of (each
    session's mean response length, the spread it is standardized by) and its models' raw means."""

    session_mean: np.ndarray
    spread: float
    present: list[int]
    raw: list[tuple[str, float, int]]
    grand: float


@dataclass(frozen=True, slots=True)
class _Positions:
    """The position fit's inputs past its early answers: its third block's levels."""

    positions: np.ndarray
    level: np.ndarray  # each position's place among them, -1 for a position no peer score has
    scores: np.ndarray  # the scores at each
    sessions: int


def _fit_rows(
    cells: WindowCells, block: int, *, placed_only: bool, term: _LengthTerm | None, positions: _Positions | None
) -> Iterator[FitChunk]:
    """The peer scores (with a known position only, if asked), a block of whole sessions at a
    time: y, the session as the group, the model and reviewer blocks, then length control's term
    and the positions' block where given. Each chunk's columns are its own (demeaned in place)."""
    n_models, n_reviewers = len(cells.models), len(cells.reviewers)
    for part, _, _ in cells.session_blocks(block):
        chosen = ~cells.own[part]
        if placed_only:
            chosen &= cells.position[part] >= 0
        session = cells.session[part][chosen]
        blocks: list[Block] = [
            Indicators(cells.model[part][chosen], n_models),
            Indicators(cells.reviewer[part][chosen], n_reviewers),
        ]
        if term is not None:
            # the standardized difference from the session's mean response length, squashed
            difference = cells.length_of(part)[chosen]
            difference -= term.session_mean[session]
            np.tanh(np.divide(difference, term.spread, out=difference), out=difference)
            blocks.append(difference)
        if positions is not None:
            blocks.append(Indicators(positions.level[cells.position[part][chosen]], len(positions.positions)))
        yield FitChunk(blocks, cells.scores(part)[chosen], session)


def length_and_position(
    cells: WindowCells, thresholds: WindowThresholds, block: int = SUM_BLOCK
) -> tuple[LengthControl, PositionAnalysis]:
    """Length control and the position effects: two fits over the peer scores with the same model
    and reviewer blocks and, when every peer score has a known position (as councils send them),
    the same rows: then one pass over the rows makes both, each the same floats as alone. Both
    read their rows a block of whole sessions (about `block` cells) at a time."""
    census = _PeerCensus.of(cells, block)
    if census.placed != census.peer:
        return length_control(cells, thresholds, block), position_effects(cells, thresholds, block)
    term, positions = _length_term(cells, census), _positions(census)
    if isinstance(term, LengthControl):  # answered before its fit: the positions fit alone
        if isinstance(positions, _Positions):
            return term, _fit_positions(cells, thresholds, positions, block)
        return term, positions
    if isinstance(positions, PositionAnalysis):
        return _fit_length(cells, thresholds, census, term, block), positions
    control_fit, position_fit = absorbed_chunk_fits(
        _fit_rows(cells, block, placed_only=False, term=term, positions=positions),
        [(0, 1, 2), (0, 1, 3)],
        overwrite=True,
    )
    return (
        _length_result(cells, thresholds, term, control_fit, census.peer),
        _position_result(cells, thresholds, positions, position_fit),
    )


def length_control(cells: WindowCells, thresholds: WindowThresholds, block: int = SUM_BLOCK) -> LengthControl:
    """AlpacaEval-style LC: score ~ model + reviewer + b*tanh(standardized length difference)
    + session effect; each model's score predicted at zero length difference."""
    census = _PeerCensus.of(cells, block)
    term = _length_term(cells, census)
    return term if isinstance(term, LengthControl) else _fit_length(cells, thresholds, census, term, block)


def position_effects(cells: WindowCells, thresholds: WindowThresholds, block: int = SUM_BLOCK) -> PositionAnalysis:
    """score ~ model + reviewer + position + session effect over peer scores; effects relative to
    the first position, a joint F test over all of them, and a flag that needs both p and size."""
    positions = _positions(_PeerCensus.of(cells, block))
    if isinstance(positions, PositionAnalysis):
        return positions
    return _fit_positions(cells, thresholds, positions, block)


def _fit_length(
    cells: WindowCells, thresholds: WindowThresholds, census: _PeerCensus, term: _LengthTerm, block: int
) -> LengthControl:
    [fit] = absorbed_chunk_fits(
        _fit_rows(cells, block, placed_only=False, term=term, positions=None), [(0, 1, 2)], overwrite=True
    )
    return _length_result(cells, thresholds, term, fit, census.peer)


def _fit_positions(
    cells: WindowCells, thresholds: WindowThresholds, positions: _Positions, block: int
) -> PositionAnalysis:
    [fit] = absorbed_chunk_fits(
        _fit_rows(cells, block, placed_only=True, term=None, positions=positions), [(0, 1, 2)], overwrite=True
    )
    return _position_result(cells, thresholds, positions, fit)


def _length_term(cells: WindowCells, census: _PeerCensus) -> LengthControl | _LengthTerm:
    """Length control's answer when it has one before the fit, else what its length term is made
    of (the standardized difference from the session's mean response length, each response
    counted once) and the models' raw mean scores."""
    sessions = cells.sessions
    if sessions < MIN_SESSIONS or census.peer == 0:
        return LengthControl(status="collecting data", coefficient=collecting(census.peer, sessions))
    ls, lx = cells.response_lengths
    session_mean = np.bincount(ls, weights=lx, minlength=sessions) / np.maximum(np.bincount(ls, minlength=sessions), 1)
    spread = float((lx - session_mean[ls]).std())
    # each model's scores and their sum: the peer sums' groups are (session, model)
    count, total = (column.reshape(-1, len(cells.models)).sum(0) for column in cells.peer_sums)
    present = [int(i) for i in np.flatnonzero(count)]
    raw = [(cells.models[i], float(total[i] / count[i]) + 1.0, int(count[i])) for i in present]
    if spread == 0:
        models = [
            ModelScore(
                model=m,
                scores=k,
                raw_score=round(s, 4),
                length_controlled_score=None,
                raw_rank=rank,
                length_controlled_rank=None,
            )
            for (m, s, k), rank in zip(raw, rank_by_score([s for _, s, _ in raw]))
        ]
        return LengthControl(
            status="not identifiable", coefficient=collecting(census.peer, sessions, "not identifiable"), models=models
        )
    grand = float(total.sum() / count.sum()) + 1.0  # the mean peer score
    return _LengthTerm(session_mean=session_mean, spread=spread, present=present, raw=raw, grand=grand)


def _length_result(
    cells: WindowCells, thresholds: WindowThresholds, term: _LengthTerm, fit: FitResult | None, samples: int
) -> LengthControl:
    sessions = cells.sessions
    if fit is None:
        return LengthControl(status="not identifiable", coefficient=collecting(samples, sessions, "not identifiable"))
    width = len(cells.models) + len(cells.reviewers) + 1
    c = np.zeros(width)
    c[-1] = 1.0
    estimate = contrast_estimate(
        fit, c, sample_size=samples, sessions=sessions, threshold=thresholds.length_coefficient, alpha=thresholds.alpha
    )
    lc_scores: list[float | None] = []
    for i in term.present:
        contrast = np.zeros(width)
        contrast[term.present] = -1.0 / len(term.present)
        contrast[i] += 1.0
        est = fit.contrast(contrast)
        lc_scores.append(None if est is None else term.grand + est[0])
    lc_known = [s for s in lc_scores if s is not None]
    lc_ranks = rank_by_score(lc_known) if len(lc_known) == len(lc_scores) else [None] * len(lc_scores)
    raw_ranks = rank_by_score([s for _, s, _ in term.raw])
    models = [
        ModelScore(
            model=m,
            scores=k,
            raw_score=round(s, 4),
            length_controlled_score=rounded(lc),
            raw_rank=rank,
            length_controlled_rank=lc_rank,
        )
        for (m, s, k), rank, lc, lc_rank in zip(term.raw, raw_ranks, lc_scores, lc_ranks)
    ]
    changes = sum(1 for m in models if m.length_controlled_rank is not None and m.length_controlled_rank != m.raw_rank)
    return LengthControl(status="ok", coefficient=estimate, models=models, rank_changes=changes)


def _positions(census: _PeerCensus) -> PositionAnalysis | _Positions:
    """The position fit's answer when it has one before the fit, else its positions' levels."""
    if census.placed_sessions < MIN_SESSIONS:
        return PositionAnalysis(status="collecting data")
    positions = np.flatnonzero(census.position_counts)
    if len(positions) < 2:
        return PositionAnalysis(status="not identifiable")
    # a council shows a few positions: a byte a row
    level = np.full(len(census.position_counts), -1, dtype=index_type(len(positions), np.int8))
    level[positions] = np.arange(len(positions))
    return _Positions(
        positions=positions, level=level, scores=census.position_counts[positions], sessions=census.placed_sessions
    )


def _position_result(
    cells: WindowCells, thresholds: WindowThresholds, placed: _Positions, fit: FitResult | None
) -> PositionAnalysis:
    if fit is None:
        return PositionAnalysis(status="not identifiable")
    positions = placed.positions
    offset = len(cells.models) + len(cells.reviewers)
    width = offset + len(positions)
    effects, rows = [], []
    for k in range(1, len(positions)):
        c = np.zeros(width)
        c[offset + k] = 1.0
        c[offset] = -1.0
        # one position alone is not flagged: the joint F test below decides
        effect = contrast_estimate(
            fit,
            c,
            sample_size=int(placed.scores[k]),
            sessions=placed.sessions,
            threshold=None,
            alpha=thresholds.position_alpha,
        )
        effects.append(PositionEffect(position=int(positions[k]), effect=effect))
        if effect.status == "ok":
            rows.append(c)
    if not rows:
        return PositionAnalysis(status="not identifiable", baseline_position=int(positions[0]), effects=effects)
    joint = fit.joint_test(np.array(rows))
    f, p = joint if joint else (None, None)
    sizes = [e.effect.point_estimate for e in effects if e.effect.point_estimate is not None]
    biggest = max((abs(s) for s in sizes), default=0.0)
    flagged = p is not None and p < thresholds.position_alpha and biggest >= thresholds.position_effect
    direction = None
    if flagged:
        # all later positions below the first: primacy; all above: recency
        direction = "primacy" if all(s < 0 for s in sizes) else "recency" if all(s > 0 for s in sizes) else "mixed"
    return PositionAnalysis(
        status="ok",
        baseline_position=int(positions[0]),
        effects=effects,
        f_statistic=rounded(f),
        p_value=rounded(p, 6),
        flagged=bool(flagged),
        direction=direction,
    )


def randomization_balance(cells: WindowCells, thresholds: WindowThresholds) -> Randomization:
    """Chi-square of models x positions. A placement is a distinct (session, model, position):
    a shared order counts once per session, so it cannot inflate the test."""
    if not (cells.position >= 0).any():
        return Randomization(status="collecting data", sessions=0, placements=0)
    counts = _placement_counts(cells)
    table = counts.table
    keep_rows, keep_cols = table.sum(1) > 0, table.sum(0) > 0
    table = table[keep_rows][:, keep_cols]
    models = [m for m, keep in zip(cells.models, keep_rows) if keep]
    positions = [int(p) for p in np.flatnonzero(keep_cols)]
    sessions = int(np.count_nonzero(counts.placements_per_session))
    # shared: every reviewer of the session saw the same order (distinct placements == models placed)
    multi = counts.reviewers_per_session >= 2
    shared_fraction = (
        float((counts.placements_per_session[multi] == counts.models_per_session[multi]).mean())
        if multi.any()
        else None
    )
    balanced = table.shape[0] == table.shape[1] >= 2 and _even(table)
    successions = counts.successions[keep_rows][:, keep_rows]
    base = dict(
        sessions=sessions,
        placements=int(counts.placements_per_session.sum()),
        models=models,
        positions=positions,
        counts=table.tolist(),
        shared_order_fraction=rounded(shared_fraction),
        balanced=bool(balanced),
        carryover_balanced=bool(balanced and _even(successions, off_diagonal=True)),
    )
    if sessions < MIN_SESSIONS or table.shape[0] < 2 or table.shape[1] < 2:
        return Randomization(status="collecting data", **base)
    chi2, dof, p = chi_square_independence(table)
    return Randomization(
        status="ok",
        chi_square=rounded(chi2),
        degrees_of_freedom=int(dof),
        p_value=rounded(p, 8),
        broken=bool(p < thresholds.randomization_alpha),
        shared=bool(shared_fraction is not None and shared_fraction >= thresholds.shared_order_fraction),
        **base,
        **_per_reviewer_balance(counts.per_reviewer, cells.reviewers, thresholds.randomization_alpha),
    )


@dataclass
class _PlacementCounts:
    """What the randomization checks count, over the cells with a known position."""

    table: np.ndarray  # (models, positions) distinct placements (session, model, position)
    per_reviewer: np.ndarray  # (reviewers, models, positions) every review's placements
    successions: np.ndarray  # (models, models) how often a model was shown right after another
    placements_per_session: np.ndarray  # (sessions,) distinct placements
    models_per_session: np.ndarray  # (sessions,) models placed
    reviewers_per_session: np.ndarray  # (sessions,) reviewers who saw an order


def _placement_counts(cells: WindowCells, block: int = PIECE_CELLS) -> _PlacementCounts:
    """The counts, a block of whole sessions at a time (a block on each core): each is a sum over
    sessions of integers, so the blocks add up to the window's exactly, and the temporaries stay a
    block long."""
    width = int(cells.position.max()) + 1
    n_models, n_reviewers = len(cells.models), len(cells.reviewers)
    out = _PlacementCounts(
        table=np.zeros((n_models, width), dtype=np.int64),
        per_reviewer=np.zeros((n_reviewers, n_models, width), dtype=np.int64),
        successions=np.zeros((n_models, n_models), dtype=np.int64),
        placements_per_session=np.zeros(cells.sessions, dtype=np.int64),
        models_per_session=np.zeros(cells.sessions, dtype=np.int64),
        reviewers_per_session=np.zeros(cells.sessions, dtype=np.int64),
    )

    def count(part: SessionBlock) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The block's (table, per-reviewer tables, successions); its sessions' own counts in place."""
        rows, first, stop = part
        placed = cells.position[rows] >= 0
        session = cells.session[rows][placed].astype(np.int64) - first
        model, reviewer = cells.model[rows][placed], cells.reviewer[rows][placed]
        position = cells.position[rows][placed]
        span = stop - first
        unique = np.flatnonzero(np.bincount((session * n_models + model) * width + position))  # sorted
        here = unique // (n_models * width)
        model_here = (unique // width) % n_models
        out.placements_per_session[first:stop] += np.bincount(here, minlength=span)
        models = np.flatnonzero(np.bincount(here * n_models + model_here)) // n_models
        out.models_per_session[first:stop] += np.bincount(models, minlength=span)
        review = session * n_reviewers + reviewer  # (session, reviewer): one reviewer's order
        out.reviewers_per_session[first:stop] += np.bincount(
            np.flatnonzero(np.bincount(review)) // n_reviewers, minlength=span
        )
        key = (reviewer.astype(np.int64) * n_models + model) * width + position
        cells.hand_back()  # the block's pages of a spilled window
        return (
            np.bincount(unique % (n_models * width), minlength=n_models * width).reshape(n_models, width),
            np.bincount(key, minlength=out.per_reviewer.size).reshape(out.per_reviewer.shape),
            _successions(review, position, model, n_models),
        )

    for table, per_reviewer, successions in each_piece(count, list(cells.session_blocks(block))):
        out.table += table
        out.per_reviewer += per_reviewer
        out.successions += successions
    return out


def _per_reviewer_balance(tables: np.ndarray, names: list[str], alpha: float) -> dict[str, object]:
    """Each reviewer's models x positions table (every review counts) tested on its own: the
    chi-squares of independent tables add up, and a reviewer whose own table departs at
    alpha / reviewers (Bonferroni) is named."""
    total, dof_total, even, named, tested = 0.0, 0, True, [], []
    for reviewer, table in enumerate(tables):
        table = table[table.sum(1) > 0][:, table.sum(0) > 0]
        if table.shape[0] < 2 or table.shape[1] < 2:
            continue
        even = even and table.shape[0] == table.shape[1] and _even(table)
        chi2, dof, p = chi_square_independence(table)
        total += chi2
        dof_total += dof
        tested.append((names[reviewer], p))
    if not tested:
        return {}
    named = [name for name, p in tested if p < alpha / len(tested)]
    return dict(
        reviewers_balanced=bool(even),
        reviewer_chi_square=rounded(total),
        reviewer_degrees_of_freedom=dof_total,
        reviewer_p_value=rounded(float(chdtrc(dof_total, total)), 8),
        confounded_reviewers=named,
    )


BALANCE_TOLERANCE = 0.02  # of the mean count: a designed order's counts differ by at most one per cycle


def _even(counts: np.ndarray, off_diagonal: bool = False) -> bool:
    """Every cell of the table (its off-diagonal cells) within one count, or 2% of their mean,
    of each other: what a Latin square / Williams design gives and random orders do not."""
    values = counts[~np.eye(counts.shape[0], dtype=bool)] if off_diagonal else counts.ravel()
    if values.size == 0 or values.mean() == 0:
        return False
    return bool(values.max() - values.min() <= max(1.0, BALANCE_TOLERANCE * values.mean()))


def _successions(review: np.ndarray, position: np.ndarray, model: np.ndarray, n_models: int) -> np.ndarray:
    """(models, models) how often each model was shown right after each other one, per
    reviewer's order (display positions p and p + 1 of the same review: session and reviewer)."""
    order = np.lexsort((position, review))
    review, position, model = review[order], position[order], model[order]
    follows = (review[1:] == review[:-1]) & (position[1:] == position[:-1] + 1)
    pairs = model[:-1][follows].astype(np.int64) * n_models + model[1:][follows]
    return np.bincount(pairs, minlength=n_models * n_models).reshape(n_models, n_models)


def _median_reference(values: dict[int, float]) -> dict[int, float]:
    """Weights of the median of `values` (one reviewer, or the middle two halved)."""
    order = sorted(values, key=values.__getitem__)
    if not order:
        return {}
    middle = len(order) // 2
    if len(order) % 2:
        return {order[middle]: 1.0}
    return {order[middle - 1]: 0.5, order[middle]: 0.5}


def reviewer_profiles(
    cells: WindowCells, thresholds: WindowThresholds, block: int = SUM_BLOCK
) -> list[ReviewerProfile]:
    """score ~ reviewer + reviewer x self-review + (session, model) effect. The (session, model)
    effect absorbs each response's quality; a reviewer's offset is its effect minus the median
    of the other reviewers' effects, so one harsh reviewer does not make the rest look generous
    (a plain leave-one-out mean shifts them by offset / (reviewers - 1)); self-preference is
    net of the reviewer's own offset and of a harsh peer among the scorers of its response.
    The fit and each reviewer's counts, spread and agreement are summed a block of whole sessions
    (about `block` cells) at a time."""
    n_reviewers = len(cells.reviewers)

    def rows() -> Iterator[FitChunk]:
        for part, _, _ in cells.session_blocks(block):
            reviewer = cells.reviewer[part]
            own = np.where(
                cells.own[part], reviewer, -1
            )  # reviewer x self-review: a column only where it scores itself
            blocks = [Indicators(reviewer, n_reviewers), Indicators(own, n_reviewers)]
            yield FitChunk(blocks, cells.scores(part), cells.group(part))

    [fit] = absorbed_chunk_fits(rows(), [(0, 1)])
    width = 2 * n_reviewers
    relative: dict[int, float] = {}
    if fit is not None:
        for k in range(n_reviewers):
            c = np.zeros(width)
            c[k], c[0] = c[k] + 1.0, c[0] - 1.0
            est = fit.contrast(c) if k else (0.0,)
            if est is not None:
                relative[k] = est[0]
    tally = _reviewer_tally(cells, block)
    profiles = []
    for i, name in enumerate(cells.reviewers):
        scored_sessions = int(tally.scored_in[i])
        if scored_sessions == 0:  # a name from another slice of the window
            continue
        peer_scores, own_scores = int(tally.scores.n[i]), int(tally.own[i])
        contrast = np.zeros(width)
        contrast[i] = 1.0
        others = {k: v for k, v in relative.items() if k != i}
        if i in relative and others:
            for k, weight in _median_reference(others).items():
                contrast[k] -= weight
        else:
            contrast[:] = 0.0
        offset = (
            contrast_estimate(
                fit,
                contrast,
                sample_size=peer_scores,
                threshold=thresholds.reviewer_offset,
                sessions=scored_sessions,
                alpha=thresholds.alpha,
            )
            if contrast.any()
            else collecting(peer_scores, scored_sessions)
        )
        self_contrast = np.zeros(width)
        self_contrast[n_reviewers + i] = 1.0
        own_sessions = int(tally.owned_in[i])
        self_estimate = (
            contrast_estimate(
                fit,
                self_contrast,
                sample_size=own_scores,
                sessions=own_sessions,
                threshold=thresholds.self_preference,
                alpha=thresholds.alpha,
            )
            if own_scores
            else collecting(0, 0)
        )
        agreement = tally.with_peers.r(i) if tally.with_peers.n[i] >= 3 else None
        flags = []
        if offset.flagged:
            flags.append("HARSH" if (offset.point_estimate or 0) < 0 else "GENEROUS")
        if self_estimate.flagged and (self_estimate.point_estimate or 0) > 0:
            flags.append("SELF_PREFERENCE")
        profiles.append(
            ReviewerProfile(
                reviewer=name,
                sessions=scored_sessions,
                scores=peer_scores,
                confidence=confidence_tier(scored_sessions),
                mean_score=rounded(float(tally.scores.mean_x[i]) + 1.0) if peer_scores else None,
                score_std=rounded(tally.scores.std_x(i)),
                offset=offset,
                self_preference=self_estimate,
                agreement_with_peers=rounded(agreement),
                flags=flags,
            )
        )
    return profiles


@dataclass(frozen=True, slots=True)
class _ReviewerTally:
    """Per reviewer: the sessions it scored in and scored itself in, its self-reviews, its peer
    scores' moments, and the moments of (its peer score, the other peers' mean score of the same
    response) where that mean exists."""

    scored_in: np.ndarray
    owned_in: np.ndarray
    own: np.ndarray
    scores: GroupMoments
    with_peers: GroupMoments


def _reviewer_tally(cells: WindowCells, block: int) -> _ReviewerTally:
    """The reviewers' tally, a block of whole sessions at a time."""
    n_reviewers = len(cells.reviewers)
    scored_in, owned_in, own_count = (np.zeros(n_reviewers, dtype=np.int64) for _ in range(3))
    scores, with_peers = GroupMoments(n_reviewers), GroupMoments(n_reviewers)
    for part, first, stop in cells.session_blocks(block):
        reviewer, own, score = cells.reviewer[part], cells.own[part], cells.scores(part)
        size = (stop - first) * n_reviewers
        key = (cells.session[part].astype(np.int64) - first) * n_reviewers + reviewer
        scored_in += (np.bincount(key, minlength=size).reshape(-1, n_reviewers) > 0).sum(0)
        owned_in += (np.bincount(key[own], minlength=size).reshape(-1, n_reviewers) > 0).sum(0)
        own_count += np.bincount(reviewer[own], minlength=n_reviewers)
        peer = ~own
        scores.add(reviewer[peer], score[peer], score[peer])
        loo = cells.loo_difference(np.arange(part.start, part.stop))
        defined = ~np.isnan(loo)
        mine = score[defined]
        with_peers.add(reviewer[defined], mine, mine - loo[defined])  # the other peers' mean score
    return _ReviewerTally(scored_in, owned_in, own_count, scores, with_peers)
