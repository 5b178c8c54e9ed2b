"""Outputs: the audit result, its per-session `audit` and `window` parts, alerts, dead letters."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .tiers import ConfidenceTier

RiskLevel = Literal["low", "medium", "high"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)


class SessionAudit(_Out):
    """Per-session metrics (science.md, 'Per session'). None means 'not computable here'."""

    length_score_correlation: float | None
    length_score_p_value: float | None
    length_score_spearman: float | None
    length_score_sample_size: int
    length_bias_detected: bool
    position_identifiable: bool
    position_score_variance: float | None
    position_effects: dict[str, float] = Field(default_factory=dict)
    position_p_value: float | None = None
    position_bias_detected: bool
    reviewer_mean_scores: dict[str, float]
    reviewer_score_std: dict[str, float]
    reviewer_offsets: dict[str, float]  # effect vs the median of the other reviewers' (display)
    # The harsh / generous test (analysis.session_noise): each reviewer's leave-one-out offset and
    # its p at the noise scale below, one-sided in the offset's direction (harsh and generous are
    # two flags); flagged at p < alpha / reviewers, the session's largest offset only.
    reviewer_offset_p_values: dict[str, float | None] = Field(default_factory=dict)
    reviewer_loo_offsets: dict[str, float] = Field(default_factory=dict)
    harsh_reviewers: list[str]
    generous_reviewers: list[str]
    self_preference: dict[str, float]  # own score - the two-way fit's prediction for that cell
    self_preference_p_values: dict[str, float | None] = Field(default_factory=dict)  # one-sided
    self_preferring_reviewers: list[str] = Field(default_factory=list)
    reviewer_agreement: float | None = None
    calibration_threshold: float
    overall_bias_risk: RiskLevel
    # The noise SD those tests used, on the session's scale: pooled over the tenant's last
    # noise_sessions sessions (source "window", t on noise_df) or the fixed sigma0 ("fixed", normal).
    noise_sd: float | None = None
    noise_df: int | None = None
    noise_sessions: int = 0
    noise_source: Literal["window", "fixed"] = "fixed"


class CorrelationEstimate(_Out):
    point_estimate: float | None
    ci_lower: float | None
    ci_upper: float | None
    sample_size: int
    status: Literal["ok", "collecting data"] = "ok"


class WindowSummary(_Out):
    tenant_id: str
    sessions: int
    confidence: ConfidenceTier
    window_start: str | None
    window_end: str | None
    length_correlation: CorrelationEstimate
    reviewer_offsets: dict[str, float] = Field(default_factory=dict)
    position_effects: dict[str, float] = Field(default_factory=dict)
    model_mean_scores: dict[str, float] = Field(default_factory=dict)


class BiasIndicators(_Out):
    position_variance: float | None
    length_correlation: float | None
    reviewer_agreement: float | None
    flags: list[str]


class AuditResult(BaseModel):
    model_config = ConfigDict(extra="allow", hide_input_in_errors=True)

    schema_version: str = "1.0"
    event_type: Literal["bias.audit.completed"] = "bias.audit.completed"
    audit_id: str
    source: Literal["council.session", "llm.response", "judge.verdict"]
    tenant_id: str
    trace_id: str
    timestamp: str
    event_timestamp: str
    bias_detected: bool
    bias_type: list[str]
    bias_score: dict[str, float | None]
    bias_confidence_score: float
    overall_bias_risk: RiskLevel
    bias_indicators: BiasIndicators | None = None
    audit: SessionAudit | None = None
    window: WindowSummary | None = None
    cloudevent_id: str | None = None  # the input's CloudEvents `id`, when it came as one
    # robust z (median/MAD) of this session against its window: its mean score, and each
    # reviewer's offset against that reviewer's history
    # the caller's decision this answer fed (query_context.decision_id / reasoning_node_id)
    decision_id: str | None = None
    reasoning_node_id: str | None = None
    response_id: str | None = None  # query_context.response_id: the completion audited (gen_ai.response.id)
    # set when bias_confidence_score is a calibrated probability that a reviewer confirms
    calibration_version: str | None = None
    anomaly: dict[str, Any] | None = None
    mitigation_action: str | None = None
    bias_report_summary: dict[str, Any] | None = None


class AlertWindow(_Out):
    start: str | None
    end: str | None
    sessions: int


class Alert(_Out):
    schema_version: str = "1.0"
    event_type: Literal["bias.audit.alert"] = "bias.audit.alert"
    alert_id: str
    alert_type: str
    status: Literal["firing", "resolved"]
    severity: Literal["info", "warning", "critical"]
    tenant_id: str
    trace_id: str
    metric: str
    value: float | None
    threshold: float | None
    window: AlertWindow
    detected_at: str
    message: str
    session_id: str | None = None  # the session that tipped it


class DeadLetter(_Out):
    schema_version: str = "1.0"
    event_type: Literal["bias.audit.deadletter"] = "bias.audit.deadletter"
    source_topic: str
    error: str
    error_type: str
    received_at: str
    delivery_attempts: int
    trace_id: str | None = None
    payload: Any = None
    # "omitted": the body was not a JSON object, so nothing in it can be told apart from the raw
    # query; its size and hash identify it (the operator's raw stream may hold it).
    payload_encoding: Literal["json", "text", "base64", "omitted"] = "json"
    payload_bytes: int | None = None
    payload_sha256: str | None = None
