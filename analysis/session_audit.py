"""Per-session bias audit (science.md, 'Per session') of a batch of sessions, vectorized with numpy.

Every metric excludes self-reviews; self-preference measures them separately. Reviewer offsets
are against the median of the other reviewers (analysis.reviewer_offset), so they work from 2
reviewers up, are not fooled by one better candidate, and one harsh reviewer does not make its
peers look generous.
A reviewer or self-preference flag needs both size (the threshold, in points) and evidence
(p < alpha), so one session's noise is not called a bias. Position is only estimated when the
same model was seen at different positions.

Each metric is computed for every session of the batch at once on (session, reviewer, model)
arrays (analysis.score_arrays); a masked-out cell never enters a sum.
audit_scores(one) is a batch of one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from typing import Any

import numpy as np

from bias_audit.schemas.results import SessionAudit

from .observations import SessionScores
from .reviewer_offset import centred_effects, offsets_from_effects
from .score_arrays import ScoreArrays, score_arrays
from .session_noise import (
    FIXED,
    REFERENCE_SPAN,
    NoiseScale,
    ReviewerTests,
    TwoWayFit,
    pooled_noise,
    reviewer_tests,
    session_noise,
    two_way_fit,
)
from .special import fdtrc, stdtr
from .stats import average_ranks, correlation_t, pearson_arrays


@dataclass(frozen=True, slots=True)
class AuditConfig:
    length_correlation_threshold: float = 0.3
    alpha: float = 0.05
    calibration_threshold: float = 1.5  # points on a 1-10 scale
    self_preference_threshold: float = 1.5  # points on a 1-10 scale


@dataclass(frozen=True, slots=True)
class SessionAnalysis:
    """The audit plus what the window contribution reuses."""

    audit: SessionAudit
    scores: SessionScores
    # (display position, score - the model's mean) of every placed peer score, from the batch
    # arrays; empty unless position is identifiable.
    position_residuals: list[tuple[int, float]]
    # (rss in points^2, df) of the session's two-way fit: its share of the tenant's noise scale
    noise_contribution: tuple[float, int] = (0.0, 0)

    @property
    def peer_scores(self) -> dict[str, list[tuple[str, float]]]:
        """model -> [(reviewer, score)], self-reviews excluded, in review order."""
        reviewers, models = self.scores.reviewers, self.scores.models
        received: dict[str, list[tuple[str, float]]] = {}
        for r, m, score, _, own in self.scores.cell_tuples():
            if not own:
                received.setdefault(models[int(m)], []).append((reviewers[int(r)], score))
        return received


def _upper_tail_tests(t: np.ndarray, df: np.ndarray, tested: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Arguments for stdtr: -t where tested (df >= 1), else a placeholder that is discarded."""
    return np.where(tested, -t, 0.0), np.where(tested, df, 1.0)


@dataclass(frozen=True, slots=True)
class _PositionTests:
    identifiable: np.ndarray  # (B,) some model was shown at two different positions
    group_n: np.ndarray  # (B, G) placed peer scores per display position
    group_mean: np.ndarray  # (B, G) mean within-model residual per display position
    k_groups: np.ndarray  # (B,) positions with scores
    p_value: np.ndarray  # (B,) F test p (nan where ss_within = ss_between = 0)
    tested: np.ndarray  # (B,) the F test is defined
    effect_var: np.ndarray  # (B,) sample variance of the position effects
    residuals: list[list[tuple[int, float]]]  # per session: (position, residual), if identifiable


def _position_tests(S: np.ndarray, peer: np.ndarray, P: np.ndarray) -> _PositionTests:
    """Within-model residuals grouped by display position, only where some model was shown at
    two different positions (otherwise position and quality are confounded); the F test has
    the model means' degrees of freedom removed from the within-group df."""
    B = S.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        placed = peer & (P >= 0)
        plw = placed.astype(np.float64)
        placed_n = plw.sum(1)
        groups = max(int(P.max()) + 1, 1)
        first = np.where(placed, P, groups).min(1)
        last = np.where(placed, P, -1).max(1)
        identifiable = ((placed_n > 0) & (last > first)).any(1)
        residual = S - ((S * plw).sum(1) / np.maximum(placed_n, 1.0))[:, None, :]
        session_of = np.broadcast_to(np.arange(B)[:, None, None], S.shape)[placed]  # sorted by session
        cell_position = P[placed]
        cell_group = session_of * groups + cell_position
        residuals = residual[placed]
        group_n = np.bincount(cell_group, minlength=B * groups).reshape(B, groups)
        group_mean = np.bincount(cell_group, weights=residuals, minlength=B * groups).reshape(B, groups) / np.maximum(
            group_n, 1
        )
        within = np.bincount(session_of, weights=(residuals - group_mean.ravel()[cell_group]) ** 2, minlength=B)
        total_n = group_n.sum(1)
        k_groups = (group_n > 0).sum(1)
        grand = (group_mean * group_n).sum(1) / np.maximum(total_n, 1)
        between = (group_n * (group_mean - grand[:, None]) ** 2).sum(1)
        df_between = k_groups - 1
        df_within = total_n - k_groups - np.maximum((placed_n > 0).sum(1) - 1, 0)
        f = (between / np.maximum(df_between, 1)) / (within / np.maximum(df_within, 1))
        p_value = np.where(
            within > 0.0,
            fdtrc(np.maximum(df_between, 1), np.maximum(df_within, 1), f),
            np.where(between > 0.0, 0.0, np.nan),
        )
        tested = identifiable & (df_between >= 1) & (df_within >= 1) & ~np.isnan(p_value)
        shown = group_n > 0
        effect_mean = (group_mean * shown).sum(1) / np.maximum(k_groups, 1)
        effect_var = (((group_mean - effect_mean[:, None]) * shown) ** 2).sum(1) / np.maximum(k_groups - 1, 1)
    ends = np.cumsum(np.bincount(session_of, minlength=B)).tolist()
    pairs = list(zip(cell_position.tolist(), residuals.tolist()))
    per_session = [
        pairs[start:end] if ok else [] for start, end, ok in zip([0, *ends[:-1]], ends, identifiable.tolist())
    ]
    return _PositionTests(identifiable, group_n, group_mean, k_groups, p_value, tested, effect_var, per_session)


def audit_batch(
    batch: Sequence[SessionScores],
    config: AuditConfig = AuditConfig(),
    tenants: Sequence[str] | None = None,
    history: Mapping[str, Sequence[tuple[float, int]]] | None = None,
) -> list[SessionAnalysis]:
    """The audits of a batch, in its order. The reviewer flags use each session's noise scale:
    given `tenants` (each session's), the tenant's recent sessions' noise (`history`: (rss in
    points^2, df) oldest first, the batch's own sessions not among them) rolled forward through the
    batch, this session included (analysis.session_noise); without, the fixed sigma0.

    numpy's fixed cost per call is paid once per batch, so a lone session costs about as much as
    a batch of dozens."""
    if not batch:
        return []
    arrays = score_arrays(batch)
    fit = two_way_fit(arrays.score, arrays.peer)
    rss, df = session_noise(arrays, fit)
    contributions = list(zip(rss.tolist(), df.tolist()))
    noise = _noise_scales(tenants, history, contributions)
    tested = reviewer_tests(
        arrays, fit, noise, config.calibration_threshold, config.self_preference_threshold, config.alpha
    )
    return _audited_batch(batch, config, arrays, fit, tested, noise, contributions)


def _noise_scales(
    tenants: Sequence[str] | None,
    history: Mapping[str, Sequence[tuple[float, int]]] | None,
    contributions: Sequence[tuple[float, int]],
) -> list[NoiseScale]:
    """Each session's noise scale: its tenant's history rolled forward through the batch, this
    session included (the fixed sigma0 without tenants)."""
    if tenants is None:
        return [FIXED] * len(contributions)
    rolling = {tenant: list((history or {}).get(tenant, ())) for tenant in set(tenants)}
    noise = []
    for tenant, contribution in zip(tenants, contributions):
        rolling[tenant].append(contribution)
        noise.append(pooled_noise(rolling[tenant]))
    return noise


AUDIT_FIELDS = tuple(SessionAudit.model_fields)


def _audit_vectorized(
    batch: Sequence[SessionScores], config: AuditConfig, a: ScoreArrays, fit_reviewer: np.ndarray
) -> tuple[dict[str, list[Any]], list[list[tuple[int, float]]], np.ndarray]:
    """The audit's own values a column per field, each session's position residuals, and how
    many of length and position each session flags."""
    S, peer, P = a.score, a.peer, a.position
    pw = peer.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        # Peer scores each model received.
        model_n = pw.sum(1)  # (B, M)
        model_total = (S * pw).sum(1)
        model_mean = model_total / np.maximum(model_n, 1.0)
        scored = model_n > 0

        # Length: each candidate's words against its mean score from the other reviewers.
        length_n = scored.sum(1)
        length_r, length_defined = pearson_arrays(a.words, model_mean, scored)
        length_defined &= length_n >= 3
        ranks_x, ranks_y = average_ranks(a.words, scored), average_ranks(model_mean, scored)
        spearman, spearman_defined = pearson_arrays(ranks_x, ranks_y, scored)
        spearman_defined &= length_n >= 3
        length_df = length_n - 2.0
        length_t = correlation_t(length_r, length_df)

        # Reviewers: mean and spread of the peer scores they gave.
        reviewer_n = pw.sum(2)  # (B, R)
        reviewer_mean = (S * pw).sum(2) / np.maximum(reviewer_n, 1.0)
        spread = (S - reviewer_mean[..., None]) * pw
        reviewer_std = np.where(
            reviewer_n >= 2, np.sqrt((spread * spread).sum(2) / np.maximum(reviewer_n - 1.0, 1.0)), 0.0
        )

        # Offsets on the candidates c that have another peer score: the reviewer's effect in the
        # session's two-way fit minus the median of the other reviewers' effects
        # (analysis.reviewer_offset: a harsh peer cannot make the bystanders look generous).
        loo = peer & (model_n > 1)[:, None, :]
        lw = loo.astype(np.float64)
        k = lw.sum(2)
        offset = np.nan_to_num(offsets_from_effects(centred_effects(fit_reviewer, loo)))
        others = (model_total[:, None, :] - S) / np.maximum(model_n - 1.0, 1.0)[:, None, :]
        # Agreement: corr(score_i, rest-of-council mean) per reviewer with >= 3 candidates.
        agree_r, agree_defined = pearson_arrays(S, others, loo)
        agree_defined &= k >= 3
        agree_n = agree_defined.sum(1)
        agreement = np.where(agree_defined, agree_r, 0.0).sum(1) / np.maximum(agree_n, 1)

        # Exact t tails (science: never the normal approximation).
        length_args = _upper_tail_tests(np.abs(length_t), length_df, length_defined)
        length_p = 2.0 * stdtr(length_args[1], length_args[0])

    position = _position_tests(S, peer, P)
    identifiable, k_groups, shown, group_mean = (
        position.identifiable,
        position.k_groups,
        position.group_n > 0,
        position.group_mean,
    )
    position_p, position_tested, effect_var = position.p_value, position.tested, position.effect_var

    threshold = config.calibration_threshold * a.span / REFERENCE_SPAN  # points on each session's own scale
    alpha = config.alpha
    length_detected = length_defined & (np.abs(length_r) > config.length_correlation_threshold) & (length_p < alpha)
    position_detected = position_tested & (position_p < alpha)

    # Back to Python values a column (a list over the batch) per field: one tolist() per array
    shown &= identifiable[:, None]
    positions = tuple(map(str, range(group_mean.shape[1])))
    effects = list(map(dict, map(compress, map(zip, repeat(positions), group_mean.tolist()), shown.tolist())))
    names, real = a.reviewers, _real_reviewers(a.reviewers, S.shape[1])
    columns: dict[str, list[Any]] = {
        "length_score_correlation": _or_none(length_r, length_defined).tolist(),
        "length_score_p_value": _or_none(length_p, length_defined).tolist(),
        "length_score_spearman": _or_none(spearman, spearman_defined).tolist(),
        "length_score_sample_size": length_n.tolist(),
        "length_bias_detected": length_detected.tolist(),
        "position_identifiable": identifiable.tolist(),
        "position_score_variance": _or_none(effect_var, identifiable & (k_groups >= 2)).tolist(),
        "position_effects": effects,
        "position_p_value": _or_none(position_p, position_tested).tolist(),
        "position_bias_detected": position_detected.tolist(),
        "reviewer_mean_scores": _by_name(names, reviewer_mean, reviewer_n > 0, real),
        "reviewer_score_std": _by_name(names, reviewer_std, reviewer_n > 0, real),
        "reviewer_offsets": _by_name(names, offset, k > 0, real),
        "reviewer_agreement": _or_none(agreement, agree_n > 0).tolist(),
        "calibration_threshold": threshold.tolist(),
    }
    return columns, position.residuals, length_detected.astype(np.int64) + position_detected


def _real_reviewers(names: Sequence[tuple[str, ...]], width: int) -> np.ndarray:
    """(B, R): the slots that hold one of the session's reviewers (the rest pad to the widest)."""
    return np.arange(width) < np.array([len(n) for n in names])[:, None]


def _by_name(
    names: Sequence[tuple[str, ...]], values: np.ndarray, defined: np.ndarray, real: np.ndarray
) -> list[dict[str, Any]]:
    """Per session {reviewer: value} where defined, in the session's reviewer order, built by
    maps in C: dict(zip()) when every reviewer of every session has one (the usual case), else
    through compress()."""
    rows = values.tolist()
    if (defined | ~real).all():
        return list(map(dict, map(zip, names, rows)))
    return list(map(dict, map(compress, map(zip, names, rows), defined.tolist())))


def _flagged(names: Sequence[tuple[str, ...]], flags: np.ndarray) -> list[list[str]]:
    """Per session the sorted names of its flagged reviewers (most sessions flag none)."""
    out: list[list[str]] = [[] for _ in names]
    for b in np.flatnonzero(flags.any(1)).tolist():
        out[b] = sorted(name for name, flag in zip(names[b], flags[b].tolist()) if flag)
    return out


RISK = ("low", "medium", "medium", "high", "high", "high")  # by the count of flagged kinds


def _audited_batch(
    batch: Sequence[SessionScores],
    config: AuditConfig,
    arrays: ScoreArrays,
    fit: TwoWayFit,
    tests: ReviewerTests,
    noise: Sequence[NoiseScale],
    contributions: Sequence[tuple[float, int]],
) -> list[SessionAnalysis]:
    """The batch's audits built a column per field: each session's dict is then made by zip and
    dict mapped in C, with no Python statement per session and field."""
    columns, residuals, detected = _audit_vectorized(batch, config, arrays, fit.reviewer)
    names, real = arrays.reviewers, _real_reviewers(arrays.reviewers, tests.offset_tested.shape[1])
    columns["reviewer_offset_p_values"] = _by_name(names, tests.offset_p, tests.offset_tested, real)
    columns["reviewer_loo_offsets"] = _by_name(names, tests.loo_offset, tests.offset_tested, real)
    columns["harsh_reviewers"] = _flagged(names, tests.harsh)
    columns["generous_reviewers"] = _flagged(names, tests.generous)
    columns["self_preference"] = _by_name(names, tests.self_preference, tests.self_tested, real)
    columns["self_preference_p_values"] = _by_name(names, tests.self_p, tests.self_tested, real)
    columns["self_preferring_reviewers"] = _flagged(names, tests.self_preferring)
    risk = detected + tests.harsh.any(1) + tests.generous.any(1) + tests.self_preferring.any(1)
    columns["overall_bias_risk"] = [RISK[level] for level in risk.tolist()]
    columns["noise_sd"] = [scale.sd * scores.scale_span / REFERENCE_SPAN for scale, scores in zip(noise, batch)]
    columns["noise_df"] = [scale.df for scale in noise]
    columns["noise_sessions"] = [scale.sessions for scale in noise]
    columns["noise_source"] = [scale.source for scale in noise]
    rows = zip(*(columns[field] for field in AUDIT_FIELDS))
    # every value was computed here with its declared type: nothing for validation to check
    audits = [SessionAudit.model_construct(**dict(zip(AUDIT_FIELDS, row))) for row in rows]
    return list(map(SessionAnalysis, audits, batch, residuals, contributions))


def _or_none(values: np.ndarray, defined: np.ndarray) -> np.ndarray:
    """An object array whose tolist() gives the float where defined, else None."""
    out = values.astype(object)
    out[~defined] = None
    return out


def audit_scores(scores: SessionScores, config: AuditConfig = AuditConfig()) -> SessionAnalysis:
    """The audit of one session (a batch of one)."""
    return audit_batch([scores], config)[0]
