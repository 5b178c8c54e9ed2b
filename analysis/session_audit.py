"""Per-session bias audit (science.md, 'Per session').

Every metric excludes self-reviews; self-preference measures them separately. Reviewer offsets
are leave-one-out, so they work from 2 reviewers up and are not fooled by one better candidate.
A reviewer or self-preference flag needs both size (the threshold, in points) and evidence
(p < alpha), so one session's noise is not called a bias. Position is only estimated when the
same model was seen at different positions.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from schemas.results import SessionAudit

from .observations import SessionScores
from .stats import (
    one_sample_t,
    one_way_anova_p,
    pearson,
    pearson_r,
    prediction_t,
    t_p_values,
    sample_std,
    sample_variance,
    spearman_rho,
)

REFERENCE_SPAN = 9.0  # thresholds are stated in points of a 1-10 scale


@dataclass(frozen=True, slots=True)
class AuditConfig:
    length_correlation_threshold: float = 0.3
    alpha: float = 0.05
    calibration_threshold: float = 1.5  # points on a 1-10 scale
    self_preference_threshold: float = 1.5  # points on a 1-10 scale

    def scaled(self, points: float, span: float) -> float:
        return points * span / REFERENCE_SPAN


@dataclass(frozen=True, slots=True)
class SessionAnalysis:
    """The audit plus intermediate values that windows and verdicts reuse."""

    audit: SessionAudit
    offsets: dict[str, float]
    peer_scores: dict[str, list[tuple[str, float]]]  # model -> [(reviewer, score)], self excluded
    position_residuals: list[tuple[int, float]]  # (position, score - model mean) when identifiable


def _loo_differences(
    by_reviewer: dict[str, dict[str, float]], peer_scores: dict[str, list[tuple[str, float]]]
) -> tuple[dict[str, list[float]], float | None]:
    """For each reviewer, score_i(c) - mean_{j != i} score_j(c) over the candidates it scored;
    and agreement: the mean over reviewers of corr(score_i, rest-of-council mean), >= 3 candidates."""
    totals = {m: (sum(s for _, s in got), len(got)) for m, got in peer_scores.items()}
    differences: dict[str, list[float]] = {}
    agreement_total, agreement_count = 0.0, 0
    for reviewer, scored in by_reviewer.items():
        diffs, own, rest = [], [], []
        for model, score in scored.items():
            total, count = totals[model]
            if count > 1:
                others = (total - score) / (count - 1)
                diffs.append(score - others)
                own.append(score)
                rest.append(others)
        if diffs:
            differences[reviewer] = diffs
        if len(own) >= 3:
            r = pearson_r(own, rest)
            if r is not None:
                agreement_total += r
                agreement_count += 1
    return differences, (agreement_total / agreement_count if agreement_count else None)


def _position_residuals(peer) -> tuple[list[tuple[int, float]], dict[int, list[float]], int]:
    """Within-model residuals by display position (only called when identifiable)."""
    totals: dict[str, list[float]] = {}
    for obs in peer:
        if obs.position is not None:
            t = totals.setdefault(obs.model, [0.0, 0])
            t[0] += obs.score
            t[1] += 1
    means = {m: t[0] / t[1] for m, t in totals.items()}
    residuals = [(o.position, o.score - means[o.model]) for o in peer if o.position is not None]
    groups: dict[int, list[float]] = defaultdict(list)
    for position, residual in residuals:
        groups[position].append(residual)
    return residuals, groups, len(means)


def audit_scores(scores: SessionScores, config: AuditConfig = AuditConfig()) -> SessionAnalysis:
    peer_scores: dict[str, list[tuple[str, float]]] = {}
    by_reviewer: dict[str, dict[str, float]] = {}
    positions_by_model: dict[str, set[int]] = {}
    peer = []
    for obs in scores.observations:
        if obs.is_self:
            continue
        peer.append(obs)
        peer_scores.setdefault(obs.model, []).append((obs.reviewer, obs.score))
        by_reviewer.setdefault(obs.reviewer, {})[obs.model] = obs.score
        if obs.position is not None:
            positions_by_model.setdefault(obs.model, set()).add(obs.position)

    # Length: each candidate's words against its mean score from the other reviewers.
    lengths, means = [], []
    for model, candidate in scores.candidates.items():
        received = peer_scores.get(model)
        if received:
            lengths.append(float(candidate.words))
            means.append(sum(s for _, s in received) / len(received))
    length = pearson(lengths, means)
    length_detected = (
        length.p_value is not None
        and abs(length.r) > config.length_correlation_threshold
        and length.p_value < config.alpha
    )

    differences, agreement = _loo_differences(by_reviewer, peer_scores)
    offsets = {r: sum(d) / len(d) for r, d in differences.items()}
    threshold = config.scaled(config.calibration_threshold, scores.scale_span)

    self_pref: dict[str, float] = {}
    self_samples: dict[str, tuple[float, list[float]]] = {}
    for obs in scores.observations:
        if obs.is_self and obs.model in peer_scores:
            others = [s for _, s in peer_scores[obs.model]]
            self_pref[obs.reviewer] = obs.score - sum(others) / len(others)
            self_samples[obs.reviewer] = (obs.score, others)
    self_threshold = config.scaled(config.self_preference_threshold, scores.scale_span)

    # Exact t tails (science: never the normal approximation), one vectorized call per family.
    offset_p = dict(zip(differences, t_p_values([one_sample_t(d) for d in differences.values()], two_sided=True)))
    self_p = dict(zip(self_samples, t_p_values([prediction_t(v, peers) for v, peers in self_samples.values()],
                                               two_sided=False)))

    def significant(p: float | None) -> bool:
        return p is not None and p < config.alpha

    harsh = sorted(r for r, o in offsets.items() if o <= -threshold and significant(offset_p[r]))
    generous = sorted(r for r, o in offsets.items() if o >= threshold and significant(offset_p[r]))
    self_preferring = sorted(r for r, d in self_pref.items() if d >= self_threshold and significant(self_p[r]))

    identifiable = any(len(p) > 1 for p in positions_by_model.values())
    residuals: list[tuple[int, float]] = []
    effects: dict[int, float] = {}
    position_p = None
    if identifiable:
        residuals, groups, n_models = _position_residuals(peer)
        effects = {p: sum(v) / len(v) for p, v in sorted(groups.items())}
        position_p = one_way_anova_p(list(groups.values()), lost_df=max(n_models - 1, 0))
    position_variance = sample_variance(list(effects.values())) if len(effects) >= 2 else None
    position_detected = significant(position_p)

    risk_factors = length_detected + position_detected + bool(harsh) + bool(generous) + bool(self_preferring)
    risk = "low" if risk_factors == 0 else "medium" if risk_factors <= 2 else "high"

    # model_construct: every value is computed here, with the types the model declares.
    audit = SessionAudit.model_construct(
        length_score_correlation=length.r,
        length_score_p_value=length.p_value,
        length_score_spearman=spearman_rho(lengths, means),
        length_score_sample_size=length.n,
        length_bias_detected=length_detected,
        position_identifiable=identifiable,
        position_score_variance=position_variance,
        position_effects={str(p): e for p, e in effects.items()},
        position_p_value=position_p,
        position_bias_detected=position_detected,
        reviewer_mean_scores={r: sum(s.values()) / len(s) for r, s in by_reviewer.items()},
        reviewer_score_std={r: sample_std(list(s.values())) for r, s in by_reviewer.items()},
        reviewer_offsets=offsets,
        reviewer_offset_p_values=offset_p,
        harsh_reviewers=harsh,
        generous_reviewers=generous,
        self_preference=self_pref,
        self_preference_p_values=self_p,
        self_preferring_reviewers=self_preferring,
        reviewer_agreement=agreement,
        calibration_threshold=threshold,
        overall_bias_risk=risk,
    )
    return SessionAnalysis(audit, offsets, peer_scores, residuals)
