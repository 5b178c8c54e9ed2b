"""Per-session reviewer flags that are honest and have power (science.md 'Per session').

One session's scores cannot both estimate the noise and test a reviewer against it at 3-5 models
(the two-way fit leaves 1, 5, 11 residual df at M = 3, 4, 5). The noise scale comes instead from
the tenant's recent sessions: the pooled residual variance of each session's two-way additive fit
score ~ reviewer + candidate on the non-self scores, over the last NOISE_SESSIONS sessions, this
one included. Without enough of them, a fixed SIGMA0 with a normal test (honest, weaker).

- Harsh / generous: reviewer i's leave-one-out offset d_i = mean over its candidates c of
  (its score - the mean of the other reviewers' scores of c), SE = s0 sqrt(sum_c (1 + 1/(n_c - 1))) / k_i
  (s0 / sqrt(M - 2) in a complete council); flagged when |d_i| >= the threshold, p < alpha / R
  (Bonferroni over the session's tested reviewers) and |d_i| is the session's largest, so one
  harsh reviewer cannot make its peers look generous. Harsh and generous are two flags, each
  with its own false-flag rate: p is one-sided, in the direction of d_i (the issue's two-sided
  rule spent half of each flag's alpha on the other flag; the one-sided one keeps each flag
  <= 5% under the null and finds a -2.5 point reviewer more often, bench/RESULTS.md).
- Self-preference: the own score minus the two-way fit's prediction for that cell (the reviewer's
  effect + the candidate's), SE = s0 sqrt(1 + x0' N+ x0), one-sided p < alpha / (reviewers with an
  own score): generosity is in the prediction, so it is not read as self-preference.

Scores stay on each session's own scale; the noise is pooled in points of a 1-10 scale.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .designs import design_index
from .digest import SessionDigest
from .score_arrays import ScoreArrays
from .special import ndtr, stdtr

REFERENCE_SPAN = 9.0  # points of a 1-10 scale: thresholds and the pooled noise are stated in them
SIGMA0_POINTS = 1.2  # the fixed noise SD without a window: the simulation's worst realistic case
NOISE_SESSIONS = 50  # the window the noise is pooled over, this session included
MIN_NOISE_SESSIONS = 10
MIN_NOISE_DF = 20
TIE = 1e-9  # offsets this close are equally large (the two paths sum in different orders)


@dataclass(frozen=True, slots=True)
class NoiseScale:
    """The noise SD a session's reviewer tests use, in points of a 1-10 scale."""

    sd: float
    df: int | None  # the pooled residual df (None: fixed, a normal test)
    sessions: int  # sessions pooled (0: fixed)
    source: Literal["window", "fixed"]


FIXED = NoiseScale(SIGMA0_POINTS, None, 0, "fixed")


def pooled_noise(history: Sequence[tuple[float, int]]) -> NoiseScale:
    """The last NOISE_SESSIONS (rss in points^2, df) pairs, oldest first -> the noise scale."""
    recent = [(rss, df) for rss, df in history[-NOISE_SESSIONS:] if df > 0]
    rss = sum(r for r, _ in recent)
    df = sum(d for _, d in recent)
    if len(recent) < MIN_NOISE_SESSIONS or df < MIN_NOISE_DF or rss <= 0.0:
        return FIXED
    return NoiseScale(float(np.sqrt(rss / df)), int(df), len(recent), "window")


@dataclass(frozen=True, slots=True)
class TwoWayFit:
    """Per session, least squares score = reviewer + candidate over the used cells."""

    rss: np.ndarray  # (B,) residual sum of squares, in the session's units^2
    df: np.ndarray  # (B,) residual degrees of freedom
    reviewer: np.ndarray  # (B, R) effects
    candidate: np.ndarray  # (B, M) effects
    pinv: np.ndarray  # (B, R + M, R + M) pseudo-inverse of the normal matrix
    normal: np.ndarray  # (B, R + M, R + M) the normal matrix


@dataclass(frozen=True, slots=True)
class TwoWaySolution:
    """The effects of each session's fit, and what its design's sessions share."""

    theta: np.ndarray  # (B, R + M) reviewer effects, then candidate effects
    first: np.ndarray  # (D,) the first session of each design
    design: np.ndarray  # (B,) each session's design
    normal: np.ndarray  # (D, R + M, R + M) each design's normal matrix
    pinv: np.ndarray  # (D, R + M, R + M) its pseudo-inverse
    rank: np.ndarray  # (D,) its rank


def two_way_solution(score: np.ndarray, used: np.ndarray) -> TwoWaySolution:
    """One pseudo-inverse of the (R + M) normal matrix per distinct design of the batch, applied to
    each of its sessions; the effects are one solution of the singular system (predictions and
    residuals do not depend on which)."""
    w = used.astype(np.float64)
    sessions, reviewers, models = w.shape
    first, design = design_index(used)
    shared = w[first]
    normal = np.zeros((len(first), reviewers + models, reviewers + models))
    rows, cols = np.arange(reviewers), reviewers + np.arange(models)
    normal[:, rows, rows] = shared.sum(2)
    normal[:, cols, cols] = shared.sum(1)
    normal[:, :reviewers, reviewers:] = shared
    normal[:, reviewers:, :reviewers] = np.swapaxes(shared, 1, 2)
    # one symmetric eigendecomposition gives both the pseudo-inverse and the rank
    values, vectors = np.linalg.eigh(normal)
    kept = values > 1e-9 * np.maximum(values.max(-1, keepdims=True), 1.0)
    inverse = np.where(kept, 1.0 / np.where(kept, values, 1.0), 0.0)
    pinv = np.matmul(vectors * inverse[:, None, :], np.swapaxes(vectors, 1, 2))
    scored = score * w
    rhs = np.concatenate([scored.sum(2), scored.sum(1)], axis=1)
    theta = np.matmul(pinv[design], rhs[..., None])[..., 0]
    return TwoWaySolution(theta=theta, first=first, design=design, normal=normal, pinv=pinv, rank=kept.sum(1))


def two_way_fit(score: np.ndarray, used: np.ndarray) -> TwoWayFit:
    """The batch's fits, with each session's residual sum of squares and normal matrices."""
    solved = two_way_solution(score, used)
    reviewers = score.shape[1]
    a, b = solved.theta[:, :reviewers], solved.theta[:, reviewers:]
    w = used.astype(np.float64)
    residual = (score - a[:, :, None] - b[:, None, :]) * w
    return TwoWayFit(
        rss=(residual * residual).sum((1, 2)),
        df=w.sum((1, 2)) - solved.rank[solved.design],
        reviewer=a,
        candidate=b,
        pinv=solved.pinv[solved.design],
        normal=solved.normal[solved.design],
    )


def session_noise(arrays: ScoreArrays, fit: TwoWayFit) -> tuple[np.ndarray, np.ndarray]:
    """(rss in points^2, df) of each session's two-way fit on its peer scores: what the tenant's
    noise pools."""
    return fit.rss * (REFERENCE_SPAN / arrays.span) ** 2, fit.df.astype(np.int64)


@dataclass(frozen=True, slots=True)
class ReviewerTests:
    """(B, R) arrays; NaN / False where a reviewer is not tested."""

    loo_offset: np.ndarray
    offset_p: np.ndarray
    offset_tested: np.ndarray
    harsh: np.ndarray
    generous: np.ndarray
    self_preference: np.ndarray
    self_p: np.ndarray
    self_tested: np.ndarray
    self_preferring: np.ndarray


def _tail(z: np.ndarray, df: np.ndarray) -> np.ndarray:
    """Upper tail beyond z: Student's t on df where df > 0, else the normal."""
    t_tail = stdtr(np.where(df > 0, df, 1.0), -z)
    tail: np.ndarray = np.where(df > 0, t_tail, ndtr(-z))
    return tail


def reviewer_tests(
    arrays: ScoreArrays,
    fit: TwoWayFit,
    noise: Sequence[NoiseScale],
    offset_points: float,
    self_points: float,
    alpha: float,
) -> ReviewerTests:
    """The batch's harsh / generous and self-preference tests at each session's noise scale."""
    S, peer, own = arrays.score, arrays.peer, arrays.own
    unit = arrays.span / REFERENCE_SPAN  # session units per point
    sd = np.array([n.sd for n in noise]) * unit
    df = np.array([n.df or 0 for n in noise], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        pw = peer.astype(np.float64)
        n_c = pw.sum(1)  # (B, M) peer scores per candidate
        total = (S * pw).sum(1)
        loo = peer & (n_c >= 2)[:, None, :]
        lw = loo.astype(np.float64)
        k = lw.sum(2)
        others = (total[:, None, :] - S) / np.maximum(n_c - 1.0, 1.0)[:, None, :]
        d = ((S - others) * lw).sum(2) / np.maximum(k, 1.0)
        factor = (lw * (1.0 + 1.0 / np.maximum(n_c - 1.0, 1.0))[:, None, :]).sum(2)
        se = sd[:, None] * np.sqrt(factor) / np.maximum(k, 1.0)
        offset_tested = k >= 1
        z = np.where(offset_tested, np.abs(d) / se, 0.0)
        offset_p = np.where(offset_tested, _tail(z, np.broadcast_to(df[:, None], z.shape)), np.nan)
        tested_n = np.maximum(offset_tested.sum(1, keepdims=True), 1)
        size = np.where(offset_tested, np.abs(d), -np.inf)
        largest = size >= size.max(1, keepdims=True) - TIE
        evidence = offset_tested & (offset_p < alpha / tested_n) & largest
        threshold = (offset_points * unit)[:, None]
        harsh = evidence & (d <= -threshold)
        generous = evidence & (d >= threshold)

        R = S.shape[1]
        has_own = own.any(2)
        own_model = np.argmax(own, axis=2)  # (B, R): the candidate a reviewer wrote (where has_own)
        batch_index = np.arange(S.shape[0])[:, None]
        reviewer_index = np.arange(R)[None, :]
        own_score = np.take_along_axis(S, own_model[..., None], axis=2)[..., 0]
        predicted = fit.reviewer + np.take_along_axis(fit.candidate, own_model, axis=1)
        # x0' N+ x0 for x0 = e_reviewer + e_candidate
        variance = (
            fit.pinv[batch_index, reviewer_index, reviewer_index]
            + fit.pinv[batch_index, R + own_model, R + own_model]
            + 2.0 * fit.pinv[batch_index, reviewer_index, R + own_model]
        )
        # the cell is predictable (x0 in the row space of the normal matrix): the reviewer is linked
        # to the candidate's scorers by the peer scores
        projection = np.matmul(fit.pinv, fit.normal)
        x0 = np.zeros(S.shape[:2] + (R + S.shape[2],))
        x0[batch_index, reviewer_index, reviewer_index] = 1.0
        x0[batch_index, reviewer_index, R + own_model] += 1.0
        estimable = np.abs(np.matmul(x0, projection) - x0).max(2) < 1e-6
        reviewer_peer = pw.sum(2) > 0
        candidate_peer = np.take_along_axis(n_c, own_model, axis=1) > 0
        self_tested = has_own & reviewer_peer & candidate_peer & estimable
        self_pref = own_score - predicted
        self_se = sd[:, None] * np.sqrt(1.0 + np.maximum(variance, 0.0))
        self_p = np.where(
            self_tested, _tail(self_pref / self_se, np.broadcast_to(df[:, None], self_pref.shape)), np.nan
        )
        self_n = np.maximum(self_tested.sum(1, keepdims=True), 1)
        preferring = self_tested & (self_p < alpha / self_n) & (self_pref >= (self_points * unit)[:, None])
    return ReviewerTests(
        loo_offset=np.where(offset_tested, d, np.nan),
        offset_p=offset_p,
        offset_tested=offset_tested,
        harsh=harsh,
        generous=generous,
        self_preference=np.where(self_tested, self_pref, np.nan),
        self_p=self_p,
        self_tested=self_tested,
        self_preferring=preferring,
    )


def digests_noise(digests: Sequence[SessionDigest]) -> list[tuple[float, int]]:
    """(rss in points^2, df) of each stored session's two-way fit on its peer scores: the
    tenant's noise history, from the window's digests (what session_noise gives the live session)."""
    if not digests:
        return []
    rows = max(len(d.reviewers) for d in digests) or 1
    cols = max(len(d.models) for d in digests) or 1
    score = np.zeros((len(digests), rows, cols))
    used = np.zeros((len(digests), rows, cols), dtype=bool)
    for b, digest in enumerate(digests):
        peer = [not own for own in digest.cell_own]
        r = np.asarray(digest.cell_reviewer, dtype=np.int64)[peer]
        m = np.asarray(digest.cell_model, dtype=np.int64)[peer]
        score[b, r, m] = np.asarray(digest.cell_score, dtype=np.float64)[peer] * REFERENCE_SPAN
        used[b, r, m] = True
    fit = two_way_fit(score, used)
    return list(zip(fit.rss.tolist(), fit.df.astype(np.int64).tolist()))
