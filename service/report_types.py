"""The cross-session report as GraphQL types, derived from the report's pydantic models (one
definition: schemas/report.py), so `biasReport` answers with typed, selectable fields."""

from __future__ import annotations

import strawberry
from strawberry.experimental.pydantic import type as from_model
from strawberry.scalars import JSON

from bias_audit.schemas import report as models


@from_model(model=models.Estimate, all_fields=True)
class Estimate:
    confidence: str  # the models' Literal types, as plain strings
    status: str


@from_model(model=models.LengthCorrelation, all_fields=True)
class LengthCorrelation:
    confidence: str
    status: str


@from_model(model=models.ModelScore, all_fields=True)
class ModelScore:
    pass


@from_model(model=models.LengthControl, all_fields=True)
class LengthControl:
    status: str


@from_model(model=models.PositionEffect, all_fields=True)
class PositionEffect:
    pass


@from_model(model=models.PositionAnalysis, all_fields=True)
class PositionAnalysis:
    status: str
    direction: str | None


@from_model(model=models.PositionConsistency, all_fields=True)
class PositionConsistency:
    pass


@from_model(model=models.Randomization, all_fields=True)
class Randomization:
    status: str


@from_model(model=models.ReviewerProfile, all_fields=True)
class ReviewerProfile:
    confidence: str


@from_model(model=models.Agreement, all_fields=True)
class Agreement:
    pass


@from_model(model=models.TimeBucket, all_fields=True)
class TimeBucket:
    reviewer_offsets: JSON  # reviewer -> points: names are data, not fields


@from_model(model=models.TrendTest, all_fields=True)
class TrendTest:
    pass


@from_model(model=models.ChangePoint, all_fields=True)
class ChangePoint:
    pass


@from_model(model=models.CouncilBias, all_fields=True)
class CouncilBias:
    confidence: str
    status: str


@from_model(model=models.Affinity, all_fields=True)
class Affinity:
    confidence: str
    status: str


@from_model(model=models.SelfConsistency, all_fields=True)
class SelfConsistency:
    confidence: str
    status: str


@from_model(model=models.ReviewerPosterior, all_fields=True)
class ReviewerPosterior:
    pass


@from_model(model=models.CalibratedModel, all_fields=True)
class CalibratedModel:
    pass


@from_model(model=models.TenantReport)
class TenantReport:
    """One tenant's section of `bias-audit report --format json` (without the chart's points)."""

    tenant_id: strawberry.auto
    sessions: strawberry.auto
    scores: strawberry.auto
    window_start: strawberry.auto
    window_end: strawberry.auto
    confidence: str
    length_unit: strawberry.auto
    length_correlation: strawberry.auto
    length_control: strawberry.auto
    position: strawberry.auto
    position_consistency: strawberry.auto
    randomization: strawberry.auto
    reviewers: strawberry.auto
    agreement: strawberry.auto
    timeline: strawberry.auto
    trends: strawberry.auto
    change_points: strawberry.auto
    flags: strawberry.auto
    warnings: strawberry.auto
    affinity: strawberry.auto
    anchoring: strawberry.auto
    style_similarity: strawberry.auto
    self_consistency: strawberry.auto
    length_given_correctness: strawberry.auto
    reviewer_posteriors: strawberry.auto
    calibrated_view: strawberry.auto


@from_model(model=models.RolledUpTotal, all_fields=True)
class RolledUpTotal:
    source: str


@from_model(model=models.RolledUpHistory, all_fields=True)
class RolledUpHistory:
    """What retention kept of a tenant's deleted days: counts and means per model, reviewer and
    bias type (the report's `rolled_up`)."""


@from_model(model=models.DetectorPrecision, all_fields=True)
class DetectorPrecisionEntry:
    """Of the flags people reviewed, the share they confirmed (Wilson 95% CI)."""


@from_model(model=models.DismissedEvidence, all_fields=True)
class DismissedEvidenceEntry:
    pass


def tenant_report_of(document: dict) -> TenantReport:
    return TenantReport.from_pydantic(models.TenantReport.model_validate(document))  # type: ignore[attr-defined]


def rolled_up_of(entry: dict) -> RolledUpHistory:
    return RolledUpHistory.from_pydantic(models.RolledUpHistory.model_validate(entry))  # type: ignore[attr-defined]


@from_model(model=models.TrafficGap, all_fields=True)
class TrafficGap:
    pass


@from_model(model=models.GroupDisparityEntry, all_fields=True)
class GroupDisparityEntry:
    pass


@strawberry.type(
    description="live traffic, unpaired: per model, axis and group named in queries, the answers "
    "against the model's answers for the axis' other groups"
)
class GroupDisparityReport:
    note: str
    groups: list[GroupDisparityEntry]
