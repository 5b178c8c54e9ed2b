"""Council biases across a window (contracts.md, "Report: council biases"): reviewer-model
affinity, anchoring on the first-seen answer, style mimicry, self-consistency on repeated
content, the length effect among equally correct answers, and empirical-Bayes reviewer profiles.

One fit carries the first three: peer scores ~ (reviewer x model) + (session x model) effect. The
(session, model) effect absorbs each answer's quality (and the session's difficulty), the pair
effects each reviewer's harshness toward each model. Affinity reads the pair effects; anchoring and
style mimicry read the fit's residuals, so favouritism is not read as either.
Scores are points of a 1-10 scale (WindowCells).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from bias_audit.schemas.report import (
    Affinity,
    CalibratedModel,
    CouncilBias,
    Estimate,
    ReviewerPosterior,
    ReviewerProfile,
    SelfConsistency,
)

from .cross_session import MIN_SESSIONS, collecting, contrast_estimate
from .fixed_effects import (
    RCOND,
    Block,
    FitChunk,
    FitResult,
    Indicators,
    absorbed_chunk_fits,
    absorbed_least_squares,
    chunk_residuals,
    with_meat,
)
from .multiple_tests import benjamini_hochberg
from .special import chdtri, fdtrc, ndtri, stdtr, stdtrit
from .stats import confidence_tier, index_type, rounded
from .window_cells import SUM_BLOCK, SessionBlock, WindowCells

Interval = tuple[float, float, float, float, float]  # estimate, se, ci_lower, ci_upper, p
MAX_PAIRS = 400  # the pair fit's normal equations are pairs x pairs


@dataclass(frozen=True, slots=True)
class CouncilThresholds:
    """Sizes worth a flag; a flag also needs the multiplicity-corrected p below alpha."""

    # Family-wise, per section and window. 4%, not 5%: t tails on rounded 1-10 scores are a little
    # liberal, and at 5% the simulated false-flag rate per corpus sat at 5.1% (bench/RESULTS.md).
    alpha: float = 0.04
    affinity: float = 0.5  # points
    anchoring: float = 0.15  # points of later score per point of departure on the first answer
    style: float = 1.0  # points per unit of cosine similarity
    consistency_ratio: float = 1.5  # within-content SD over the council's
    min_points: int = 8  # a reviewer's slope needs this many sessions (or cells) to be tested


@dataclass(frozen=True)
class PairFit:
    """The window's peer scores of answers that at least two reviewers scored (a lone score has no
    consensus), fitted on (reviewer, model) pairs with (session, model) absorbed. It holds no rows:
    a section that reads residuals makes them for the fitted cells of a block of sessions at a
    time (`fitted_cells`, `residuals_of`)."""

    pairs: list[tuple[int, int]]  # (reviewer, model) of each pair index
    pair_of: np.ndarray  # (reviewers * models,) each (reviewer, model) key's pair index, -1 for none
    cells_per_pair: np.ndarray
    sessions_per_pair: np.ndarray
    fit: FitResult | None

    def residuals_of(self, cells: WindowCells, here: np.ndarray) -> np.ndarray:
        """The residuals of fitted cells `here` (window indices of whole responses: a block's
        fitted cells)."""
        if self.fit is None:
            return np.zeros(len(here))
        [(_, residual)] = chunk_residuals([self._rows(cells, here)], self.fit.beta)
        return residual

    def _rows(self, cells: WindowCells, here: np.ndarray) -> FitChunk:
        key = cells.reviewer[here].astype(np.intp) * len(cells.models) + cells.model[here]
        return FitChunk([Indicators(self.pair_of[key], len(self.pairs))], cells.scores(here), cells.group(here))


def fitted_cells(cells: WindowCells, block: int = SUM_BLOCK) -> Iterator[tuple[SessionBlock, np.ndarray]]:
    """Per block of whole sessions (about `block` cells): the block and the pair fit's cells in it
    (window indices, ascending), the peer scores of responses with two or more."""
    n_models = max(len(cells.models), 1)
    for part, first, stop in cells.session_blocks(block):
        peer = ~cells.own[part]
        group = cells.group(part) - first * n_models
        size = np.bincount(group[peer], minlength=(stop - first) * n_models)
        yield (part, first, stop), part.start + np.flatnonzero(peer & (size[group] >= 2))


def pair_fit(cells: WindowCells, block: int = SUM_BLOCK) -> PairFit:
    """The pair fit, its rows read a block of sessions at a time: once to count each pair's cells
    and sessions, once for X'X and X'y, once for the sandwich's middle."""
    n_models, width = len(cells.models), len(cells.reviewers) * len(cells.models)
    cells_per_key, sessions_per_key = np.zeros(width, dtype=np.int64), np.zeros(width, dtype=np.int64)
    for (_, first, stop), here in fitted_cells(cells, block):
        key = cells.reviewer[here].astype(np.intp) * n_models + cells.model[here]
        cells_per_key += np.bincount(key, minlength=width)
        session = cells.session[here].astype(np.intp) - first
        seen = np.bincount(session * width + key, minlength=(stop - first) * width).reshape(-1, width)
        sessions_per_key += np.count_nonzero(seen, axis=0)
    keys = np.flatnonzero(cells_per_key)
    pair_of = np.full(width, -1, dtype=index_type(len(keys), smallest=np.int8))  # a byte while the pairs fit one
    pair_of[keys] = np.arange(len(keys))
    fitted = PairFit(
        pairs=[(int(k) // n_models, int(k) % n_models) for k in keys],
        pair_of=pair_of,
        cells_per_pair=cells_per_key[keys],
        sessions_per_pair=sessions_per_key[keys],
        fit=None,
    )
    if not len(keys) or len(keys) > MAX_PAIRS:
        return fitted

    def rows() -> Iterator[FitChunk]:
        return (fitted._rows(cells, here) for _, here in fitted_cells(cells, block))

    [fit] = absorbed_chunk_fits(rows(), [(0,)], overwrite=True)
    return dataclasses.replace(fitted, fit=None if fit is None else with_meat(fit, rows()))


def _additive_design(pairs: list[tuple[int, int]]) -> np.ndarray:
    """(pairs, reviewers + models) indicators: reviewer + model additivity over the pairs."""
    reviewers = sorted({r for r, _ in pairs})
    models = sorted({m for _, m in pairs})
    r_at = {r: i for i, r in enumerate(reviewers)}
    m_at = {m: len(reviewers) + i for i, m in enumerate(models)}
    design = np.zeros((len(pairs), len(reviewers) + len(models)))
    for row, (r, m) in enumerate(pairs):
        design[row, r_at[r]] = design[row, m_at[m]] = 1.0
    return design


def _additive_prediction(design: np.ndarray, target: int, reference: np.ndarray) -> np.ndarray | None:
    """Weights over the reference pairs (target excluded) whose sum of pair effects predicts the
    target's effect under reviewer + model additivity (least squares over them, rows of
    _additive_design); None when they do not connect the target's reviewer and model."""
    others = np.array([i for i in np.flatnonzero(reference) if i != target], dtype=np.int64)
    if len(others) == 0:
        return None
    x = design[others]
    xtx = x.T @ x
    pinv = np.linalg.pinv(xtx, hermitian=True)
    row = design[target]
    if not np.allclose(row @ pinv @ xtx, row, atol=1e-8):  # not estimable from the others
        return None
    weights = np.zeros(len(design))
    weights[others] = row @ pinv @ x.T
    return weights


def _sessions_of(cells: WindowCells, mask: np.ndarray) -> int:
    return len(np.unique(cells.session[mask])) if mask.any() else 0


def affinity(
    cells: WindowCells, fitted: PairFit, thresholds: CouncilThresholds = CouncilThresholds()
) -> list[Affinity]:
    """Each pair's interaction: its effect less what the reference pairs predict for it
    additively, a contrast of the pair fit (a sandwich SE, as reviewers differ in noise; t on the
    fit's residual df), BH over the pairs. The reference starts as every other pair; then, one at
    a time, the most significant flagged pair still in it leaves it, so a favoured pair does not
    lend its peers a spurious disfavour (a leave-one-out mean's bystander problem). At most a
    quarter of the pairs leave: the reference must stay the council's norm."""
    if cells.sessions < MIN_SESSIONS or fitted.fit is None:
        return []
    fit = fitted.fit
    reference = np.ones(len(fitted.pairs), dtype=bool)
    design = _additive_design(fitted.pairs)
    for _ in range(len(fitted.pairs) // 4 + 1):
        estimates: list[Interval | None] = []
        for index in range(len(fitted.pairs)):
            weights = _additive_prediction(design, index, reference)
            if weights is None:
                estimates.append(None)
                continue
            contrast = -weights
            contrast[index] += 1.0
            estimates.append(fit.robust_contrast(contrast))
        known = {i: est for i, est in enumerate(estimates) if est is not None}
        adjusted = dict(zip(known, benjamini_hochberg([est[4] for est in known.values()])))
        flagged = {
            i for i, est in known.items() if adjusted[i] < thresholds.alpha and abs(est[0]) >= thresholds.affinity
        }
        still_in = [i for i in flagged if reference[i]]
        if not still_in or reference.sum() <= len(fitted.pairs) * 3 // 4:
            break
        reference[min(still_in, key=lambda i: (known[i][4], -abs(known[i][0])))] = False
    out = []
    for index, ((r, m), est) in enumerate(zip(fitted.pairs, estimates)):
        sessions = int(fitted.sessions_per_pair[index])
        base = dict(
            reviewer=cells.reviewers[r],
            model=cells.models[m],
            n=int(fitted.cells_per_pair[index]),
            sessions=sessions,
            confidence=confidence_tier(sessions),
        )
        if est is None:
            out.append(
                Affinity(**base, effect=None, ci_lower=None, ci_upper=None, p_value=None, status="not identifiable")
            )
            continue
        value, _, lo, hi, p = est
        out.append(
            Affinity(
                **base,
                effect=rounded(value),
                ci_lower=rounded(lo),
                ci_upper=rounded(hi),
                p_value=rounded(p, 6),
                p_adjusted=rounded(adjusted[index], 6),
                flagged=index in flagged,
            )
        )
    favoured = {(a.reviewer, a.model) for a in out if a.flagged and (a.effect or 0) > 0}
    return [
        a.model_copy(update={"mutual": True})
        if (a.model, a.reviewer) in favoured and (a.reviewer, a.model) in favoured
        else a
        for a in out
    ]


SPREAD = 1e-8  # a column whose spread is below this share of its size has none: rounding's, not the data's


def _slope(x: np.ndarray, y: np.ndarray, covariate: np.ndarray | None = None) -> Interval | None:
    """OLS slope of y on x with an intercept (and a covariate held fixed): (slope, se, ci_lower,
    ci_upper, two-sided p), t on the residual df; None without residual df or spread in x, or
    with x a mix of the intercept and the covariate."""
    columns = np.column_stack([x] + ([] if covariate is None else [covariate]))
    n, width = len(x), columns.shape[1] + 1
    df = n - width
    if df < 1:
        return None
    # the intercept taken out by centering (Frisch-Waugh: same slopes, residuals and their
    # covariance block), so x far from zero does not make X'X ill-conditioned
    centered = columns - columns.mean(axis=0)
    spread = np.sqrt(np.einsum("ij,ij->j", centered, centered))
    if not np.all(spread > SPREAD * np.sqrt(np.einsum("ij,ij->j", columns, columns))):
        return None
    xtx = centered.T @ centered
    size = np.linalg.eigvalsh(xtx / np.outer(spread, spread))  # unit diagonal: units do not decide
    if size.min() <= RCOND * size.max():
        return None
    inverse = np.linalg.inv(xtx)
    yc = y - y.mean()
    beta = inverse @ (centered.T @ yc)
    residual = yc - centered @ beta
    slope = float(beta[0])
    se = float(np.sqrt(max(float(residual @ residual) / df, 0.0) * inverse[0, 0]))
    t_crit = float(stdtrit(df, 0.975))
    p = float(2 * stdtr(df, -abs(slope) / se)) if se > 0 else (0.0 if slope else 1.0)
    return slope, se, slope - t_crit * se, slope + t_crit * se, p


Points = dict[int, tuple[np.ndarray, np.ndarray, np.ndarray | None, int]]  # reviewer -> x, y, covariate, sessions


def _slopes(cells: WindowCells, points: Points, threshold: float, thresholds: CouncilThresholds) -> list[CouncilBias]:
    """Per reviewer (x, y, covariate, sessions) -> its slope, BH over the reviewers tested."""
    rows: list[tuple[int, int, int, Interval | None]] = []
    for r, (x, y, covariate, sessions) in sorted(points.items()):
        estimate = _slope(x, y, covariate) if len(x) >= thresholds.min_points else None
        rows.append((r, len(x), sessions, estimate))
        cells.hand_back()
    known = {i: row[3] for i, row in enumerate(rows) if row[3] is not None}
    adjusted = dict(zip(known, benjamini_hochberg([est[4] for est in known.values()])))
    out = []
    for i, (r, n, sessions, est) in enumerate(rows):
        base = dict(reviewer=cells.reviewers[r], n=n, sessions=sessions, confidence=confidence_tier(sessions))
        if est is None:
            out.append(
                CouncilBias(**base, effect=None, ci_lower=None, ci_upper=None, p_value=None, status="collecting data")
            )
            continue
        value, _, lo, hi, p = est
        out.append(
            CouncilBias(
                **base,
                effect=rounded(value),
                ci_lower=rounded(lo),
                ci_upper=rounded(hi),
                p_value=rounded(p, 6),
                flagged=bool(adjusted[i] < thresholds.alpha and abs(value) >= threshold),
            )
        )
    return out


def anchoring(
    cells: WindowCells, fitted: PairFit, thresholds: CouncilThresholds = CouncilThresholds()
) -> list[CouncilBias]:
    """Per reviewer and session: x = its residual on the answer it saw first (its departure from
    the council on it), y = the mean residual of its later answers; the slope of y on x across
    sessions. Positive: later scores move with the first impression."""
    if cells.sessions < MIN_SESSIONS or fitted.fit is None:
        return []
    found = first_and_later_residuals(cells, fitted)
    if found is None:
        return []
    # a row a session, a column a reviewer (reviewer_key's numbering): each reviewer's points are
    # taken in session order, and the per-review arrays let go before the fits
    shape = (cells.sessions, len(cells.reviewers))
    x, later_sum, later_n = (part.reshape(shape) for part in found)
    del found
    points = _reviewer_points(cells, x, later_sum, later_n)
    del x, later_sum, later_n
    return _slopes(cells, points, thresholds.anchoring, thresholds)


def _reviewer_points(
    cells: WindowCells, x: np.ndarray, later_sum: np.ndarray, later_n: np.ndarray, block: int = SUM_BLOCK
) -> Points:
    """Each reviewer's (first residual, mean later residual) of its reviews with both, in session
    order, in the window's space: counted, then gathered, a block of sessions' rows at a time."""
    step = max(block // max(x.shape[1], 1), 1)

    def rows() -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        for start in range(0, len(x), step):
            here = slice(start, start + step)
            yield x[here], later_sum[here], later_n[here], ~np.isnan(x[here]) & (later_n[here] > 0)
            cells.hand_back()

    counts = sum((mine.sum(0) for _, _, _, mine in rows()), np.zeros(x.shape[1], dtype=np.int64))
    first = {r: cells.space.zeros(int(count), np.float64) for r, count in enumerate(counts.tolist()) if count}
    later = {r: cells.space.zeros(len(first[r]), np.float64) for r in first}
    filled = dict.fromkeys(first, 0)
    for xs, sums, ns, mine in rows():
        for r, at in filled.items():
            m = mine[:, r]
            k = int(np.count_nonzero(m))
            first[r][at : at + k] = xs[m, r]
            np.divide(sums[m, r], ns[m, r], out=later[r][at : at + k])
            filled[r] = at + k
    return {r: (first[r], later[r], None, len(first[r])) for r in first}


def first_and_later_residuals(
    cells: WindowCells, fitted: PairFit, block: int = SUM_BLOCK
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per (session, reviewer) review (reviewer_key's numbering): the residual on the answer shown
    first (NaN if none), the sum and count of the residuals on the later ones; None when no fitted
    cell has a position. A review lies in one block of whole sessions, so each is its block's,
    and the temporaries stay a block long."""
    n_reviewers = len(cells.reviewers)
    size = cells.sessions * n_reviewers
    # a review each, in the window's space: a reviewer's answers in a session
    x, later_sum, later_n = (cells.space.zeros(size, kind) for kind in (np.float64, np.float64, np.int32))
    for start in range(0, size, block):
        x[start : start + block] = np.nan
        cells.hand_back()
    placed_any = False
    for (_, first, stop), here in fitted_cells(cells, block):
        position = cells.position[here]
        placed = position >= 0
        if not placed.any():
            continue
        placed_any = True
        span = (stop - first) * n_reviewers
        key = (cells.session[here].astype(np.int64) - first) * n_reviewers + cells.reviewer[here]
        first_position = np.full(span, np.iinfo(position.dtype).max, dtype=position.dtype)
        np.minimum.at(first_position, key[placed], position[placed])
        is_first = placed & (position == first_position[key])
        later = placed & ~is_first
        part = fitted.residuals_of(cells, here)
        at = first * n_reviewers
        x[at + key[is_first]] = part[is_first]
        later_sum[at : at + span] += np.bincount(key[later], weights=part[later], minlength=span)
        later_n[at : at + span] += np.bincount(key[later], minlength=span)
        cells.hand_back()
    return (x, later_sum, later_n) if placed_any else None


def style_similarity(
    cells: WindowCells, fitted: PairFit, thresholds: CouncilThresholds = CouncilThresholds(), block: int = SUM_BLOCK
) -> list[CouncilBias]:
    """Per reviewer: the slope of its residual score on the scored answer's similarity to its own,
    its length held fixed (lexical similarity grows with length: a reviewer's appetite for long
    answers, or a peer's, would otherwise read as mimicry)."""
    if cells.sessions < MIN_SESSIONS or fitted.fit is None:
        return []
    # only the cells with a similarity are read (records may carry none), a block of sessions at a
    # time; a block's residuals are made only where it has one
    indices, residuals = [np.zeros(0, dtype=np.intp)], [np.zeros(0)]
    for _, here in fitted_cells(cells, block):
        known = ~np.isnan(cells.similarity[here])
        if known.any():
            indices.append(here[known])
            residuals.append(fitted.residuals_of(cells, here)[known])
    index, residual = np.concatenate(indices), np.concatenate(residuals)
    similarity = cells.similarity[index]
    reviewer, session, length = cells.reviewer[index], cells.session[index], np.log1p(cells.length_of(index))
    points: Points = {}
    for r in np.unique(reviewer):
        mine = reviewer == r
        points[int(r)] = (similarity[mine], residual[mine], length[mine], len(np.unique(session[mine])))
    return _slopes(cells, points, thresholds.style, thresholds)


def _within_content(score: np.ndarray, content: np.ndarray) -> tuple[float, int, float | None, int]:
    """(within-content sum of squares, its df, one-way ICC(1), contents scored twice or more)."""
    keys, inverse, counts = np.unique(content, return_inverse=True, return_counts=True)
    repeated = counts[inverse] >= 2
    if not repeated.any():
        return 0.0, 0, None, 0
    y, g = score[repeated], inverse[repeated]
    n_g = np.bincount(g)
    present = n_g > 0
    means = np.bincount(g, weights=y)[g] / n_g[g]
    ss_within = float(((y - means) ** 2).sum())
    groups = int(present.sum())
    df_within = len(y) - groups
    icc = None
    if groups >= 2 and df_within > 0:
        grand = y.mean()
        group_means = np.bincount(g, weights=y)[present] / n_g[present]
        ms_between = float((n_g[present] * (group_means - grand) ** 2).sum()) / (groups - 1)
        ms_within = ss_within / df_within
        k0 = (len(y) - float((n_g[present] ** 2).sum()) / len(y)) / (groups - 1)
        denominator = ms_between + (k0 - 1) * ms_within
        icc = (ms_between - ms_within) / denominator if denominator > 0 else None
    return ss_within, df_within, icc, groups


def self_consistency(cells: WindowCells, thresholds: CouncilThresholds = CouncilThresholds()) -> list[SelfConsistency]:
    """Scores a reviewer gave the same content (equal fingerprints) more than once: its
    within-content SD against the other reviewers' pooled one, by a one-sided F test
    (Bonferroni over the reviewers tested), with a chi-square CI for its SD."""
    known = cells.peer & (cells.fingerprint >= 0)
    if cells.sessions < MIN_SESSIONS or not known.any():
        return []
    per_reviewer = {}
    for r in np.unique(cells.reviewer[known]):
        mine = known & (cells.reviewer == r)
        ss, df, icc, contents = _within_content(cells.scores(mine), cells.fingerprint[mine])
        per_reviewer[int(r)] = (ss, df, icc, contents, int(mine.sum()), _sessions_of(cells, mine))
    tested = [r for r, v in per_reviewer.items() if v[1] >= 2]
    out = []
    for r, (ss, df, icc, contents, n, sessions) in sorted(per_reviewer.items()):
        rest_ss = sum(v[0] for k, v in per_reviewer.items() if k != r)
        rest_df = sum(v[1] for k, v in per_reviewer.items() if k != r)
        base = dict(
            reviewer=cells.reviewers[r],
            n=n,
            sessions=sessions,
            confidence=confidence_tier(sessions),
            contents=contents,
            icc=rounded(icc),
        )
        if df < 2 or rest_df < 2:
            out.append(
                SelfConsistency(
                    **base, effect=None, ci_lower=None, ci_upper=None, p_value=None, status="collecting data"
                )
            )
            continue
        variance, council_variance = ss / df, rest_ss / rest_df
        sd, council_sd = np.sqrt(variance), np.sqrt(council_variance)
        p = (
            float(fdtrc(df, rest_df, variance / council_variance))
            if council_variance > 0
            else (0.0 if variance > 0 else 1.0)
        )
        lo, hi = np.sqrt(ss / chdtri(df, 0.025)), np.sqrt(ss / chdtri(df, 0.975))
        flagged = p < thresholds.alpha / max(len(tested), 1) and sd >= thresholds.consistency_ratio * council_sd
        out.append(
            SelfConsistency(
                **base,
                effect=rounded(sd),
                ci_lower=rounded(lo),
                ci_upper=rounded(hi),
                p_value=rounded(p, 6),
                council_sd=rounded(council_sd),
                flagged=bool(flagged),
            )
        )
    return out


def length_given_correctness(cells: WindowCells) -> Estimate | None:
    """score ~ correct + length + reviewer + session effect over peer scores of answers whose
    correctness is known: the length coefficient, in points per 100 length units. None when no
    session says which answers were correct."""
    known = cells.peer & (cells.correct >= 0)
    if not known.any():
        return None
    sessions = _sessions_of(cells, known)
    if sessions < MIN_SESSIONS:
        return collecting(int(known.sum()), sessions)
    design: list[Block] = [
        np.column_stack([cells.correct[known].astype(np.float64), cells.length_of(known) / 100.0]),
        Indicators(cells.reviewer[known], len(cells.reviewers)),
    ]
    fit = absorbed_least_squares(design, cells.scores(known), cells.session[known], overwrite=True)
    contrast = np.zeros(2 + len(cells.reviewers))
    contrast[1] = 1.0
    return contrast_estimate(
        fit, contrast, sample_size=int(known.sum()), sessions=sessions, threshold=None, alpha=CouncilThresholds().alpha
    )


def reviewer_posteriors(profiles: Sequence[ReviewerProfile]) -> list[ReviewerPosterior]:
    """Empirical-Bayes normal-normal pooling of the profiles' offsets toward 0 (the council):
    the between-reviewer variance tau^2 by the method of moments (DerSimonian-Laird), each
    offset shrunk by B = s^2 / (s^2 + tau^2), its SE read back from its 95% CI. With tau^2 = 0
    (the offsets differ no more than their noise) every reviewer is pooled to the council: 0."""
    z = float(ndtri(0.975))
    known = [
        (p, p.offset.point_estimate, (p.offset.ci_upper - p.offset.ci_lower) / (2 * z))
        for p in profiles
        if p.offset.point_estimate is not None and p.offset.ci_lower is not None and p.offset.ci_upper is not None
    ]
    tau2 = 0.0
    if len(known) >= 2:
        estimates = np.array([v for _, v, _ in known])
        variances = np.array([max(se, 1e-9) ** 2 for _, _, se in known])
        weights = 1.0 / variances
        mean = float((weights * estimates).sum() / weights.sum())
        q = float((weights * (estimates - mean) ** 2).sum())
        c = float(weights.sum() - (weights**2).sum() / weights.sum())
        tau2 = max(0.0, (q - (len(known) - 1)) / c) if c > 0 else 0.0
    posterior = {}
    for profile, value, se in known:
        variance = max(se, 1e-9) ** 2
        shrink = variance / (variance + tau2) if tau2 > 0 else 1.0
        mean = (1 - shrink) * value
        sd = float(np.sqrt((1 - shrink) * variance))
        posterior[profile.reviewer] = (value, mean, mean - z * sd, mean + z * sd, shrink)
    out = []
    for profile in profiles:
        pooled: tuple[float | None, ...] = posterior.get(profile.reviewer, (None,) * 5)
        out.append(
            ReviewerPosterior(
                reviewer=profile.reviewer,
                offset=rounded(pooled[0]),
                posterior_mean=rounded(pooled[1]),
                credible_lower=rounded(pooled[2]),
                credible_upper=rounded(pooled[3]),
                shrinkage=rounded(pooled[4]),
                mean_score=profile.mean_score,
                score_sd=profile.score_std,
            )
        )
    return out


def calibrated_view(cells: WindowCells, block: int = SUM_BLOCK) -> list[CalibratedModel]:
    """Each model's peer scores z-normalized by its reviewer's window mean and SD, averaged. Three
    passes over blocks of the window (the reviewers' means, their SDs, the models' sums), so no
    array as long as the window's scores is made."""
    if cells.sessions < MIN_SESSIONS or not cells.peer.any():
        return []
    n_reviewers, n_models = len(cells.reviewers), len(cells.models)

    def peer_cells() -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        for rows, _, _ in cells.session_blocks(block):
            peer = ~cells.own[rows]
            yield cells.reviewer[rows][peer], cells.model[rows][peer], cells.scores(rows)[peer]

    n_r, total = np.zeros(n_reviewers), np.zeros(n_reviewers)
    for reviewer, _, score in peer_cells():
        n_r += np.bincount(reviewer, minlength=n_reviewers)
        total += np.bincount(reviewer, weights=score, minlength=n_reviewers)
    mean = total / np.maximum(n_r, 1)
    square = np.zeros(n_reviewers)
    for reviewer, _, score in peer_cells():
        deviation = score - mean[reviewer]
        square += np.bincount(reviewer, weights=np.square(deviation, out=deviation), minlength=n_reviewers)
    sd = np.sqrt(square / np.maximum(n_r - 1, 1))
    usable = (n_r >= 2) & (sd > 0)
    scores, raw, z_total, z_count = (np.zeros(n_models) for _ in range(4))
    for reviewer, model, score in peer_cells():
        scores += np.bincount(model, minlength=n_models)
        raw += np.bincount(model, weights=score, minlength=n_models)
        known = usable[reviewer]  # a reviewer without spread has no z scores
        z = (score[known] - mean[reviewer[known]]) / sd[reviewer[known]]
        z_total += np.bincount(model[known], weights=z, minlength=n_models)
        z_count += np.bincount(model[known], minlength=n_models)
    return [
        CalibratedModel(
            model=name,
            scores=int(scores[m]),
            raw_mean=round(float(raw[m] / scores[m]) + 1.0, 4),
            calibrated_z=rounded(z_total[m] / z_count[m]) if z_count[m] else None,
        )
        for m, name in enumerate(cells.models)
        if scores[m]
    ]
