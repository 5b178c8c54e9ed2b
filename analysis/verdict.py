"""Turn a session audit into the result envelope's verdict fields.

bias_confidence_score is the strength of evidence for the strongest detected bias:
1 - p for tested effects (length, position); |effect| / (2 x threshold), capped at 1, for
reviewer calibration and self-preference, which have no per-session test. 0.0 when nothing
was detected.
"""

from __future__ import annotations

from dataclasses import dataclass

from bias_audit.schemas.results import BiasIndicators, SessionAudit


@dataclass(frozen=True, slots=True)
class Verdict:
    bias_detected: bool
    bias_type: list[str]
    bias_score: dict[str, float | None]
    bias_confidence_score: float
    indicators: BiasIndicators


def _strength(effect: float, threshold: float) -> float:
    return min(1.0, abs(effect) / (2.0 * threshold)) if threshold > 0 else 1.0


def session_verdict(audit: SessionAudit) -> Verdict:
    types: list[str] = []
    flags: list[str] = []
    confidences: list[float] = []
    if audit.length_bias_detected:
        types.append("length")
        flags.append("LENGTH_BIAS_DETECTED")
        confidences.append(1.0 - (audit.length_score_p_value or 0.0))
    if audit.position_bias_detected:
        types.append("position")
        flags.append("POSITION_BIAS_DETECTED")
        confidences.append(1.0 - (audit.position_p_value or 0.0))
    if audit.harsh_reviewers or audit.generous_reviewers:
        types.append("reviewer_calibration")
        if audit.harsh_reviewers:
            flags.append("HARSH_REVIEWER")
        if audit.generous_reviewers:
            flags.append("GENEROUS_REVIEWER")
        flagged = audit.harsh_reviewers + audit.generous_reviewers
        confidences.append(max(_strength(audit.reviewer_offsets[r], audit.calibration_threshold) for r in flagged))
    if audit.self_preferring_reviewers:
        types.append("self_preference")
        flags.append("SELF_PREFERENCE_DETECTED")
        confidences.append(
            max(
                _strength(audit.self_preference[r], audit.calibration_threshold)
                for r in audit.self_preferring_reviewers
            )
        )
    if not audit.position_identifiable:
        flags.append("POSITION_NOT_IDENTIFIABLE")
    offsets = audit.reviewer_offsets.values()
    self_pref = audit.self_preference.values()
    score = {
        "length_correlation": audit.length_score_correlation,
        "position_variance": audit.position_score_variance,
        "max_abs_reviewer_offset": round(max((abs(o) for o in offsets), default=0.0), 6) if offsets else None,
        "max_self_preference": round(max(self_pref), 6) if self_pref else None,
    }
    return Verdict(
        bias_detected=bool(types),
        bias_type=types,
        bias_score=score,
        bias_confidence_score=round(max(confidences, default=0.0), 6),
        indicators=BiasIndicators(
            position_variance=audit.position_score_variance,
            length_correlation=audit.length_score_correlation,
            reviewer_agreement=audit.reviewer_agreement,
            flags=flags,
        ),
    )
