"""Pydantic models of every contract document, and their committed JSON Schemas."""

from .events import CouncilSessionEvent, LLMResponseEvent, parse_score_scale
from .limits import DEFAULT_LIMITS, EventLimits
from .records import RECORD_SCHEMA_VERSION, BiasMetricRecord
from .results import (
    Alert,
    AuditResult,
    BiasIndicators,
    CorrelationEstimate,
    DeadLetter,
    SessionAudit,
    WindowSummary,
)

__all__ = [
    "DEFAULT_LIMITS",
    "RECORD_SCHEMA_VERSION",
    "Alert",
    "AuditResult",
    "BiasIndicators",
    "BiasMetricRecord",
    "CorrelationEstimate",
    "CouncilSessionEvent",
    "DeadLetter",
    "EventLimits",
    "LLMResponseEvent",
    "SessionAudit",
    "WindowSummary",
    "parse_score_scale",
]
