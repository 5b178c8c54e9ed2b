"""The audit API's GraphQL types (strawberry): the design document's LlmInteractionAudit and the
types and inputs around it. Fields that hold what people wrote or the audited answer are
resolved only for the roles that may read them."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any

import strawberry
from graphql import GraphQLError
from strawberry.scalars import JSON
from strawberry.types import Info

from .auth import READ, Forbidden, Principal
from .report_types import DetectorPrecisionEntry, DismissedEvidenceEntry


def fail(code: str, message: str) -> GraphQLError:
    return GraphQLError(message, extensions={"code": code})


def authorized(info: Info, needed: frozenset[str], what: str) -> Principal:
    principal: Principal = info.context["principal"]
    try:
        principal.require(needed, what)
    except Forbidden as error:
        raise fail("FORBIDDEN", str(error)) from None
    return principal


@strawberry.type
class BiasTaxonomyEntry:
    id: int
    bias_key: str
    description: str
    severity_level: int


@strawberry.type
class BiasReview:
    reviewer: str
    reviewed_at: datetime
    verdicts: JSON
    tags: JSON
    notes: str | None


@strawberry.type(
    description="what updateLlmInteractionAuditBias answers: the item's ids and its bias and status "
    "columns, never its texts or context (a service token may write these, not read the item); "
    "read the rest with llmInteractionAudit"
)
class LlmInteractionAuditBias:
    id: strawberry.ID
    audit_id: str
    tenant_id: str
    trace_id: str | None
    status: str
    log_timestamp: datetime
    bias_detected: bool
    bias_type: list[str]
    bias_score: JSON
    bias_confidence_score: float
    mitigation_action: JSON
    human_reviewed: bool


@strawberry.type
class LlmInteractionAudit(LlmInteractionAuditBias):
    """The audit log's item: the bias and status columns, and what a reader may see besides."""

    user_id: str | None
    original_query: str | None  # never stored: always null
    query_context: JSON | None
    llm_provider: str | None
    llm_model: str | None
    answer: strawberry.Private[str | None]
    prompt_tokens: int | None
    response_tokens: int | None
    total_tokens: int | None
    error_message: str | None
    bias_report_summary: JSON
    human_bias_tag: JSON | None
    notes: strawberry.Private[str | None]
    created_at: datetime
    decision_id: str | None  # the caller's decision this answer fed (query_context.decision_id)
    reasoning_node_id: str | None

    @strawberry.field(description="the audited answer (reviewer, auditor, admin)")
    def llm_response(self, info: Info) -> str | None:
        authorized(info, READ, "reading llmResponse")
        return self.answer

    @strawberry.field(description="the latest review's notes (reviewer, auditor, admin)")
    def review_notes(self, info: Info) -> str | None:
        authorized(info, READ, "reading reviewNotes")
        return self.notes

    @strawberry.field(
        description="every review of this item, oldest first, never overwritten (reviewer, auditor, admin)"
    )
    async def reviews(self, info: Info) -> list[BiasReview] | None:
        authorized(info, READ, "reading reviews")
        rows = await info.context["review_loader"].load((self.tenant_id, self.audit_id))
        return [
            BiasReview(
                reviewer=r["reviewer"],
                reviewed_at=r["reviewed_at"],
                verdicts=r["verdicts"],
                tags=r["tags"],
                notes=r["notes"],
            )
            for r in rows
        ]

    @strawberry.field(description="the taxonomy entries of this item's bias types")
    async def taxonomy(self, info: Info) -> list[BiasTaxonomyEntry]:
        found = await info.context["taxonomy_loader"].load_many(self.bias_type)
        return [entry for entry in found if entry is not None]


def bias_columns_of(row: dict[str, Any]) -> LlmInteractionAuditBias:
    return LlmInteractionAuditBias(
        id=strawberry.ID(row["audit_id"]),
        audit_id=row["audit_id"],
        tenant_id=row["tenant_id"],
        trace_id=row["trace_id"],
        status=row["status"],
        log_timestamp=row["log_timestamp"],
        bias_detected=row["bias_detected"],
        bias_type=list(row["bias_type"] or []),
        bias_score=row["bias_score"],
        bias_confidence_score=row["bias_confidence_score"],
        mitigation_action=row["mitigation_action"],
        human_reviewed=row["human_reviewed"],
    )


# the store's columns each LlmInteractionAudit field is made from; a page reads only those its query asks for
AUDIT_FIELD_COLUMNS: dict[str, tuple[str, ...]] = {
    "id": ("audit_id",),
    "auditId": ("audit_id",),
    "tenantId": ("tenant_id",),
    "traceId": ("trace_id",),
    "status": ("status",),
    "logTimestamp": ("log_timestamp",),
    "biasDetected": ("bias_detected",),
    "biasType": ("bias_type",),
    "biasScore": ("bias_score",),
    "biasConfidenceScore": ("bias_confidence_score",),
    "mitigationAction": ("mitigation_action",),
    "humanReviewed": ("human_reviewed",),
    "userId": ("user_id",),
    "originalQuery": (),
    "queryContext": ("query_context",),
    "llmProvider": ("llm_provider",),
    "llmModel": ("llm_model",),
    "promptTokens": ("prompt_tokens",),
    "responseTokens": ("response_tokens",),
    "totalTokens": ("total_tokens",),
    "errorMessage": ("error_message",),
    "biasReportSummary": ("bias_report_summary",),
    "humanBiasTag": ("human_bias_tag",),
    "createdAt": ("created_at",),
    "decisionId": ("decision_id",),
    "reasoningNodeId": ("reasoning_node_id",),
    "llmResponse": ("llm_response",),
    "reviewNotes": ("review_notes",),
    "reviews": ("tenant_id", "audit_id"),
    "taxonomy": ("bias_type",),
    "__typename": (),
}


def audit_columns(selections: list[Any]) -> set[str] | None:
    """The columns the selected LlmInteractionAudit fields are made from (fragments followed);
    None, read them all, for a field this map does not know."""
    columns: set[str] = set()
    for selection in selections:
        if hasattr(selection, "type_condition"):  # a fragment (spread or inline): its own selections
            inner = audit_columns(selection.selections)
            if inner is None:
                return None
            columns |= inner
        elif selection.name in AUDIT_FIELD_COLUMNS:
            columns.update(AUDIT_FIELD_COLUMNS[selection.name])
        else:
            return None
    return columns


def audit_of(row: dict[str, Any]) -> LlmInteractionAudit:
    """The item of a stored row; a field whose column was not read (not asked for) is None."""
    get: Any = row.get  # what a column holds is checked by the schema's types, not here
    return LlmInteractionAudit(
        id=strawberry.ID(row["audit_id"]),
        audit_id=row["audit_id"],
        tenant_id=row["tenant_id"],
        user_id=get("user_id"),
        trace_id=get("trace_id"),
        original_query=None,
        query_context=get("query_context"),
        llm_provider=get("llm_provider"),
        llm_model=get("llm_model"),
        answer=get("llm_response"),
        prompt_tokens=get("prompt_tokens"),
        response_tokens=get("response_tokens"),
        total_tokens=get("total_tokens"),
        status=get("status"),
        error_message=get("error_message"),
        log_timestamp=row["log_timestamp"],
        bias_detected=get("bias_detected"),
        bias_type=list(get("bias_type") or []),
        bias_score=get("bias_score"),
        bias_confidence_score=get("bias_confidence_score"),
        mitigation_action=get("mitigation_action"),
        bias_report_summary=get("bias_report_summary"),
        human_reviewed=get("human_reviewed"),
        human_bias_tag=get("human_bias_tag"),
        notes=get("review_notes"),
        created_at=get("created_at"),
        decision_id=get("decision_id"),
        reasoning_node_id=get("reasoning_node_id"),
    )


@strawberry.type
class CouncilSessionAudit:
    session_id: str
    tenant_id: str
    session_timestamp: datetime
    trace_id: str | None
    consent_level: int
    council_config_version: str | None
    members: list[str]
    scores: int


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None


@strawberry.type
class LlmInteractionAuditEdge:
    cursor: str
    node: LlmInteractionAudit


@strawberry.type
class LlmInteractionAuditConnection:
    edges: list[LlmInteractionAuditEdge]
    page_info: PageInfo
    total_count: int


@strawberry.type
class ReviewLease:
    taken: bool
    holder: str
    expires_in_seconds: int
    item: LlmInteractionAudit | None


@strawberry.type
class ReviewAgreement:
    items: int  # items with verdicts from two or more reviewers
    verdicts: int  # the pairable verdicts behind alpha
    krippendorff_alpha: float | None  # nominal metric; null without variation or pairs


@strawberry.input
class LlmInteractionAuditFilterInput:
    tenant_id: str | None = None
    user_id: str | None = None
    llm_provider: str | None = None
    llm_model: str | None = None
    sensitivity_score: float | None = strawberry.field(default=None, description="bias confidence at least this (0-1)")
    bias_detected: bool | None = None
    human_reviewed: bool | None = None
    bias_type: str | None = None
    decision_id: str | None = None
    log_timestamp_start: datetime | None = None
    log_timestamp_end: datetime | None = None


@strawberry.input
class PaginationInput:
    limit: int = 50
    offset: int = 0


@strawberry.input
class CouncilSessionFilterInput:
    tenant_id: str | None = None
    start: datetime | None = None
    end: datetime | None = None


@strawberry.enum(description="what to do about a flagged answer (the worker's own actions)")
class MitigationAction(Enum):
    NONE = "none"
    REWRITE = "rewrite"
    HUMAN_REVIEW = "human_review"
    BLOCK = "block"


@strawberry.input
class UpdateLlmInteractionAuditBiasInput:
    bias_detected: bool | None = None
    bias_type: list[str] | None = None
    bias_score: JSON | None = strawberry.field(default=None, description="bias type -> a number (or null)")
    bias_confidence_score: float | None = None
    mitigation_action: MitigationAction | None = None


@strawberry.input
class RecordBiasReviewInput:
    human_reviewed: bool = True
    human_bias_tag: JSON | None = strawberry.field(default=None, description="a list of bias_taxonomy keys")
    review_notes: str | None = None
    verdicts: JSON | None = strawberry.field(default=None, description="bias type -> confirmed | dismissed")
    answer_biased: bool | None = strawberry.field(
        default=None,
        description="the whole answer, biased or not (with "
        "humanBiasTag naming the types): what an unflagged item's review says",
    )


@strawberry.type
class DetectorPrecisionReport:
    detectors: list[DetectorPrecisionEntry]
    most_dismissed: list[DismissedEvidenceEntry]


@strawberry.type
class SandboxComparison:
    bias_type: str
    baseline_rate: float
    candidate_rate: float
    difference: float
    ci_lower: float
    ci_upper: float
    p_value: float
    paired: bool
    verdict: str


@strawberry.type
class SandboxRun:
    id: int
    tenant_id: str
    created_at: datetime
    worse: bool
    baseline: JSON  # model, since, until
    baseline_n: int
    candidate_n: int
    correction: str
    bias_types: list[SandboxComparison]
