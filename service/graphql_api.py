"""The audit API's GraphQL schema (strawberry): the queries and mutations over the design
document's LlmInteractionAudit (types in graphql_types.py), council sessions, the taxonomy, the
review queue and leases, a keyset-paginated connection and the cross-session report; what a
document may cost is in graphql_limits.py. Every resolver reads within the caller's tenants;
another tenant's item is NOT_FOUND, exactly as a missing one.

Errors carry `extensions.code`: UNAUTHENTICATED, FORBIDDEN, NOT_FOUND, BAD_USER_INPUT, CONFLICT,
RATE_LIMITED, TIMEOUT (a report stopped at its time budget), BIAS_ANALYSIS_FAILED.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import strawberry
from strawberry.dataloader import DataLoader
from strawberry.types import Info

from bias_audit.storage.postgres.audit_api import AuditStore, InteractionFilter, LeaseRefused

from .auth import READ, REVIEW, UPDATE_BIAS, Principal
from .graphql_limits import EXTENSIONS
from .graphql_types import (
    BiasTaxonomyEntry,
    CouncilSessionAudit,
    CouncilSessionFilterInput,
    DetectorPrecisionReport,
    LlmInteractionAudit,
    LlmInteractionAuditBias,
    LlmInteractionAuditConnection,
    LlmInteractionAuditEdge,
    LlmInteractionAuditFilterInput,
    PageInfo,
    PaginationInput,
    RecordBiasReviewInput,
    ReviewAgreement,
    ReviewLease,
    SandboxComparison,
    SandboxRun,
    UpdateLlmInteractionAuditBiasInput,
    audit_columns,
    audit_of,
    authorized,
    bias_columns_of,
    fail,
)
from .judge_types import HumanJudgeVerdict, JudgeReport, JudgeReviewItem, judge_report_of
from .report_types import (
    DetectorPrecisionEntry,
    DismissedEvidenceEntry,
    GroupDisparityEntry,
    GroupDisparityReport,
    ReviewerProfile,
    RolledUpHistory,
    TenantReport,
    rolled_up_of,
    tenant_report_of,
)
from .state import ReportSlots

MAX_PAGE = 500
VERDICTS = ("confirmed", "dismissed")
MAX_REPORT_DAYS = 36_500
MAX_SCORE_ENTRIES = 64  # biasScore: one number per bias type, and the taxonomy is far smaller
MAX_KEY_CHARS = 64
FLIP_PREFERENCE = {"A>>B": "B>>A", "A>B": "B>A", "A=B": "A=B", "B>A": "A>B", "B>>A": "A>>B"}


def _store(info: Info) -> AuditStore:
    return info.context["store"]


def _filter(given: LlmInteractionAuditFilterInput | None) -> InteractionFilter:
    given = given or LlmInteractionAuditFilterInput()
    if given.sensitivity_score is not None and not 0 <= given.sensitivity_score <= 1:
        raise fail("BAD_USER_INPUT", "sensitivityScore is a confidence between 0 and 1")
    return InteractionFilter(
        tenant_id=given.tenant_id,
        user_id=given.user_id,
        llm_provider=given.llm_provider,
        llm_model=given.llm_model,
        min_confidence=given.sensitivity_score,
        bias_detected=given.bias_detected,
        human_reviewed=given.human_reviewed,
        bias_type=given.bias_type,
        decision_id=given.decision_id,
        start=given.log_timestamp_start,
        end=given.log_timestamp_end,
    )


def _bias_score(given: Any) -> dict[str, float | None] | None:
    """biasScore as the worker writes it: bias type -> a finite number or null, a flat map."""
    if given is None:
        return None
    if (
        not isinstance(given, dict)
        or len(given) > MAX_SCORE_ENTRIES
        or not all(len(key) <= MAX_KEY_CHARS for key in given)
        or not all(
            value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value))
            for value in given.values()
        )
    ):
        raise fail(
            "BAD_USER_INPUT",
            f"biasScore maps at most {MAX_SCORE_ENTRIES} bias types (names of at most "
            f"{MAX_KEY_CHARS} characters) to a number or null",
        )
    return given


def _limit(value: int, what: str = "limit") -> int:
    if not 1 <= value <= MAX_PAGE:
        raise fail("BAD_USER_INPUT", f"{what} must be between 1 and {MAX_PAGE}")
    return value


async def _visible(info: Info, principal: Principal, audit_id: str) -> dict[str, Any]:
    row = await _store(info).interaction(principal.scope(None), audit_id)
    if row is None:  # another tenant's item reads exactly as a missing one
        raise fail("NOT_FOUND", f"no interaction audit {audit_id!r}")
    return row


def _item_columns(info: Info) -> set[str] | None:
    """The columns a list of items needs: its selected fields' (the field may be asked for more
    than once under one name: GraphQL merges them)."""
    return audit_columns([part for field in info.selected_fields for part in field.selections])


def _node_columns(info: Info) -> set[str] | None:
    """The columns a connection's nodes need (edges { node { ... } }); None, all, when its
    selection is not plain fields."""
    columns: set[str] = set()
    for selected in (part for field in info.selected_fields for part in field.selections):
        if hasattr(selected, "type_condition"):
            return None  # a fragment over the connection: not worth following
        if selected.name == "edges":
            for part in selected.selections:
                if hasattr(part, "type_condition"):
                    return None
                if part.name == "node":
                    inner = audit_columns(part.selections)
                    if inner is None:
                        return None
                    columns |= inner
    return columns


@strawberry.type
class Query:
    @strawberry.field
    async def llm_interaction_audit(self, info: Info, id: strawberry.ID) -> LlmInteractionAudit | None:
        principal = authorized(info, READ, "reading audits")
        return audit_of(await _visible(info, principal, str(id)))

    @strawberry.field
    async def llm_interaction_audits(
        self,
        info: Info,
        filter: LlmInteractionAuditFilterInput | None = None,
        pagination: PaginationInput | None = None,
    ) -> list[LlmInteractionAudit] | None:
        principal = authorized(info, READ, "reading audits")
        pagination = pagination or PaginationInput()
        if pagination.offset < 0:
            raise fail("BAD_USER_INPUT", "offset must be 0 or more")
        found = _filter(filter)
        page = await _store(info).interactions(
            principal.scope(found.tenant_id),
            found,
            limit=_limit(pagination.limit),
            offset=pagination.offset,
            columns=_item_columns(info),
        )
        return [audit_of(row) for row in page.rows]

    @strawberry.field(description="keyset pages, newest first: a page never overlaps the next")
    async def llm_interaction_audit_connection(
        self,
        info: Info,
        filter: LlmInteractionAuditFilterInput | None = None,
        first: int = 50,
        after: str | None = None,
    ) -> LlmInteractionAuditConnection:
        from bias_audit.storage.postgres.audit_api import encode_cursor

        principal = authorized(info, READ, "reading audits")
        found = _filter(filter)
        # totalCount reads every matching row: only when it is asked for
        counted = any(
            getattr(field, "name", None) == "totalCount"
            for selected in info.selected_fields
            for field in selected.selections
        )
        try:
            page = await _store(info).interactions(
                principal.scope(found.tenant_id),
                found,
                limit=_limit(first, "first"),
                after=after,
                count=counted,
                columns=_node_columns(info),
            )
        except ValueError as error:
            raise fail("BAD_USER_INPUT", str(error)) from None
        edges = [
            LlmInteractionAuditEdge(cursor=encode_cursor(row["log_timestamp"], row["id"]), node=audit_of(row))
            for row in page.rows
        ]
        return LlmInteractionAuditConnection(
            edges=edges,
            total_count=page.total,
            page_info=PageInfo(
                has_next_page=page.next_cursor is not None, end_cursor=edges[-1].cursor if edges else None
            ),
        )

    @strawberry.field(
        description="the audits of the answers that fed one of the caller's decisions "
        "(query_context.decision_id), newest first"
    )
    async def bias_events_for_decision(
        self, info: Info, decision_id: str, tenant_id: str | None = None, limit: int = 100
    ) -> list[LlmInteractionAudit]:
        principal = authorized(info, READ, "reading audits")
        page = await _store(info).interactions(
            principal.scope(tenant_id),
            InteractionFilter(decision_id=decision_id),
            limit=_limit(limit),
            columns=_item_columns(info),
        )
        return [audit_of(row) for row in page.rows]

    @strawberry.field(
        description="unreviewed items: the flagged ones and a uniform sample of the unflagged ones "
        "(BIAS_AUDIT_REVIEW_SAMPLE_UNFLAGGED), in random order so the reviews measure precision and "
        "recall; items another reviewer holds are left out"
    )
    async def review_queue(
        self, info: Info, filter: LlmInteractionAuditFilterInput | None = None, limit: int = 50
    ) -> list[LlmInteractionAudit]:
        principal = authorized(info, REVIEW, "the review queue")
        found = _filter(filter)
        rows = await _store(info).review_queue(
            principal.scope(found.tenant_id),
            found,
            limit=_limit(limit),
            holder=principal.subject,
            columns=_item_columns(info),
        )
        return [audit_of(row) for row in rows]

    @strawberry.field
    async def council_session_audits(
        self, info: Info, filter: CouncilSessionFilterInput | None = None, pagination: PaginationInput | None = None
    ) -> list[CouncilSessionAudit]:
        principal = authorized(info, READ, "reading audits")
        given = filter or CouncilSessionFilterInput()
        pagination = pagination or PaginationInput()
        rows = await _store(info).sessions(
            principal.scope(given.tenant_id),
            start=given.start,
            end=given.end,
            limit=_limit(pagination.limit),
            offset=max(0, pagination.offset),
        )
        return [
            CouncilSessionAudit(
                session_id=r["session_id"],
                tenant_id=r["tenant_id"],
                session_timestamp=r["session_ts"],
                trace_id=r["trace_id"],
                consent_level=r["consent_level"],
                council_config_version=r["council_config_version"],
                members=list(r["members"]),
                scores=r["scores"],
            )
            for r in rows
        ]

    @strawberry.field
    async def bias_taxonomy(self, info: Info) -> list[BiasTaxonomyEntry]:
        authorized(info, READ | UPDATE_BIAS, "the taxonomy")
        return [BiasTaxonomyEntry(**row) for row in await _store(info).taxonomy()]

    @strawberry.field(
        description="the cross-session report of one tenant's stored sessions (the fields of "
        "`bias-audit report --format json`'s tenant section)"
    )
    async def bias_report(
        self, info: Info, tenant_id: str, sessions: int = 100, days: float | None = None
    ) -> TenantReport:
        return tenant_report_of(await _tenant_report(info, tenant_id, sessions, days))

    @strawberry.field(description="the report's reviewer profiles of one tenant")
    async def reviewer_profiles(self, info: Info, tenant_id: str, sessions: int = 100) -> list[ReviewerProfile]:
        return tenant_report_of(await _tenant_report(info, tenant_id, sessions, None)).reviewers


@strawberry.type
class ReviewQuery:
    @strawberry.field(
        description="per tenant, bias type and analyzer: the share of reviewed flags people "
        "confirmed (Wilson 95% CI, N), and the evidence most often dismissed"
    )
    async def detector_precision(self, info: Info, tenant_id: str | None = None) -> DetectorPrecisionReport:
        from bias_audit.analysis.detector_precision import precision_of_reviews

        principal = authorized(info, READ, "detector precision")
        precision, dismissed = precision_of_reviews(await _store(info).reviewed_items(principal.scope(tenant_id)))
        return DetectorPrecisionReport(
            detectors=[DetectorPrecisionEntry.from_pydantic(p) for p in precision],  # type: ignore[attr-defined]
            most_dismissed=[DismissedEvidenceEntry.from_pydantic(d) for d in dismissed],  # type: ignore[attr-defined]
        )

    @strawberry.field(
        description="live traffic, unpaired: per model, axis and group the queries named (kept at "
        "consent >= 2), refusal, sentiment, toxicity and length against the model's answers for "
        "the axis' other groups, each with its 95% CI, flagged after Holm past the practical size"
    )
    async def group_disparity(self, info: Info, tenant_id: str) -> GroupDisparityReport:
        from bias_audit.schemas import report as models

        principal = authorized(info, READ, "reports")
        missing = f"no answers to queries naming a group for tenant {tenant_id!r}"
        if not principal.sees(tenant_id):
            raise fail("NOT_FOUND", missing)
        document = await _built(info, principal, missing, info.context["group_disparity"], tenant_id)
        return GroupDisparityReport(
            note=document["note"],
            groups=[
                GroupDisparityEntry.from_pydantic(models.GroupDisparityEntry.model_validate(g))  # type: ignore[attr-defined]
                for g in document["groups"]
            ],
        )

    @strawberry.field(
        description="how far reviewers agree on the items two or more of them reviewed "
        "(per item and bias type; each reviewer's latest verdict)"
    )
    async def review_agreement(self, info: Info, tenant_id: str | None = None) -> ReviewAgreement:
        from bias_audit.analysis.agreement import krippendorff_alpha_nominal

        principal = authorized(info, READ, "review agreement")
        rows = await _store(info).latest_verdicts(principal.scope(tenant_id))
        labels: list[str] = []
        units: list[object] = []
        for row in rows:
            for bias_type, verdict in (row["verdicts"] or {}).items():
                labels.append(verdict)
                units.append((row["tenant_id"], row["audit_id"], bias_type))
        alpha, pairable = krippendorff_alpha_nominal(labels, units)
        reviewers: dict[tuple[str, str], int] = {}
        for row in rows:
            reviewers[(row["tenant_id"], row["audit_id"])] = reviewers.get((row["tenant_id"], row["audit_id"]), 0) + 1
        return ReviewAgreement(
            items=sum(1 for n in reviewers.values() if n >= 2),
            verdicts=pairable,
            krippendorff_alpha=None if alpha is None else round(alpha, 6),
        )


@strawberry.type
class HistoryQuery:
    @strawberry.field(description="sandbox runs against the store's history, newest first")
    async def sandbox_runs(self, info: Info, tenant_id: str | None = None, limit: int = 20) -> list[SandboxRun]:
        principal = authorized(info, READ, "sandbox runs")
        rows = await _store(info).sandbox_runs(principal.scope(tenant_id), limit=_limit(limit))
        return [
            SandboxRun(
                id=r["id"],
                tenant_id=r["tenant_id"],
                created_at=r["created_at"],
                worse=r["worse"],
                baseline=r["baseline"],
                baseline_n=r["document"]["baseline"]["n"],
                candidate_n=r["document"]["candidate"]["n"],
                correction=r["document"]["correction"],
                bias_types=[SandboxComparison(**entry) for entry in r["document"]["bias_types"]],
            )
            for r in rows
        ]

    @strawberry.field(
        description="an item sampled from the judges' verdicts that the caller has not judged yet: its "
        "two answers in a random order, without the models or the judge's verdict, under a review id "
        "for this caller alone (null when none is left)"
    )
    async def judge_review_item(self, info: Info, tenant_id: str | None = None) -> JudgeReviewItem | None:
        import secrets

        principal = authorized(info, REVIEW, "judging items")
        row = await _store(info).serve_judge_item(
            principal.scope(tenant_id),
            principal.subject,
            review_id=secrets.token_urlsafe(18),
            shown_swapped=secrets.randbelow(2) == 1,
        )
        return None if row is None else JudgeReviewItem(**row)

    @strawberry.field(
        description="the judge report of one tenant's stored verdicts (the fields of `bias-audit "
        "judges --format json`): per judge position, length, accuracy, self-preference and "
        "agreement with humans, each with its CI; win rates; agreement between judges"
    )
    async def judge_report(self, info: Info, tenant_id: str) -> JudgeReport:
        principal = authorized(info, READ, "reports")
        missing = f"no judge verdicts for tenant {tenant_id!r}"
        if not principal.sees(tenant_id):
            raise fail("NOT_FOUND", missing)
        document = await _built(info, principal, missing, info.context["judge_report"], tenant_id)
        if principal.can(REVIEW):  # an item still open to this reviewer is judged blind
            document = _without_disagreements_on(
                document, await _store(info).judge_items_open_to(tenant_id, principal.subject)
            )
        return judge_report_of(document)

    @strawberry.field(
        description="per tenant, what retention kept of the days it rolled up and deleted: "
        "counts and means (the report's rolled_up)"
    )
    async def rolled_up(self, info: Info, tenant_id: str | None = None) -> list[RolledUpHistory]:
        principal = authorized(info, READ, "reading audits")
        return [rolled_up_of(entry) for entry in await _store(info).rolled_up(principal.scope(tenant_id))]


def _without_disagreements_on(document: dict[str, Any], items: set[str]) -> dict[str, Any]:
    """The judge report without the disagreements about `items` (they show the judge's verdict
    and people's)."""
    if not items:
        return document
    return {
        **document,
        "judges": [
            {**judge, "disagreements": [d for d in judge["disagreements"] if d["item_id"] not in items]}
            for judge in document["judges"]
        ],
    }


async def _tenant_report(info: Info, tenant_id: str, sessions: int, days: float | None) -> dict[str, Any]:
    principal = authorized(info, READ, "reports")
    if not principal.sees(tenant_id):
        raise fail("NOT_FOUND", f"no sessions for tenant {tenant_id!r}")
    if days is not None and not 0 < days <= MAX_REPORT_DAYS:
        raise fail("BAD_USER_INPUT", f"days must be more than 0 and at most {MAX_REPORT_DAYS:,}")
    sessions = _limit(sessions, "sessions")
    return await _built(
        info, principal, f"no sessions for tenant {tenant_id!r}", info.context["report"], tenant_id, sessions, days
    )


async def _built(
    info: Info, principal: Principal, missing: str, build: Callable[..., Any], *args: Any
) -> dict[str, Any]:
    """A report built off the event loop, one at a time per caller and within the report time
    budget; NOT_FOUND (`missing`) when there is nothing to report."""
    from bias_audit.reports.budget import OutOfTime

    slots: ReportSlots = info.context["report_slots"]
    if not slots.take(principal.subject):
        raise fail(
            "RATE_LIMITED",
            "a report for this caller is already being built, or the server is building "
            f"{slots.capacity} reports; ask again when it is done",
        )
    try:
        document = await slots.run(principal.subject, build, *args)
    except OutOfTime as error:
        raise fail("TIMEOUT", str(error)) from None
    except Exception as error:
        raise fail("BIAS_ANALYSIS_FAILED", f"the report could not be built: {error}") from None
    if document is None:
        raise fail("NOT_FOUND", missing)
    return document


@strawberry.type
class Mutation:
    @strawberry.mutation
    async def update_llm_interaction_audit_bias(
        self, info: Info, id: strawberry.ID, input: UpdateLlmInteractionAuditBiasInput
    ) -> LlmInteractionAuditBias:
        principal = authorized(info, UPDATE_BIAS, "updating the bias columns")
        changes = {
            "bias_detected": input.bias_detected,
            "bias_type": input.bias_type,
            "bias_score": _bias_score(input.bias_score),
            "bias_confidence_score": input.bias_confidence_score,
            "mitigation_action": input.mitigation_action.value if input.mitigation_action else None,
        }
        if all(value is None for value in changes.values()):  # else it would only read the row back
            raise fail(
                "BAD_USER_INPUT",
                "give at least one field to change: biasDetected, biasType, biasScore, "
                "biasConfidenceScore or mitigationAction",
            )
        if input.bias_confidence_score is not None and not 0 <= input.bias_confidence_score <= 1:
            raise fail("BAD_USER_INPUT", "biasConfidenceScore is between 0 and 1")
        if input.bias_type is not None and (
            len(input.bias_type) > MAX_SCORE_ENTRIES or any(len(t) > MAX_KEY_CHARS for t in input.bias_type)
        ):
            raise fail(
                "BAD_USER_INPUT",
                f"biasType holds at most {MAX_SCORE_ENTRIES} names of at most {MAX_KEY_CHARS} characters",
            )
        row = await _visible(info, principal, str(id))
        return bias_columns_of(await _store(info).update_bias(row["tenant_id"], row["audit_id"], changes))

    @strawberry.mutation(
        description="a person's own verdict on an item served to them by judgeReviewItem, given "
        "blind (A>>B, A>B, A=B, B>A, B>>A over the answers as shown); their first on an item counts "
        "toward the judge's agreement with humans, a change is kept as history"
    )
    async def record_judge_verdict(self, info: Info, review_id: str, preference: str) -> HumanJudgeVerdict:
        principal = authorized(info, REVIEW, "judging items")
        if preference not in FLIP_PREFERENCE:
            raise fail("BAD_USER_INPUT", f"preference is one of {', '.join(FLIP_PREFERENCE)}")
        counted = await _store(info).record_judge_verdict(
            principal.scope(None), review_id, reviewer=principal.subject, flip=FLIP_PREFERENCE, preference=preference
        )
        if counted is None:  # another reviewer's review id reads exactly as a made-up one
            raise fail("NOT_FOUND", "no item was served to you under this review id; ask judgeReviewItem for one")
        return HumanJudgeVerdict(review_id=review_id, preference=preference, counted=counted)

    @strawberry.mutation(description="take (or renew) the short lease on an item before reviewing it")
    async def open_review_item(self, info: Info, id: strawberry.ID) -> ReviewLease:
        from bias_audit.storage.postgres.audit_api import LEASE_SECONDS

        principal = authorized(info, REVIEW, "reviewing")
        row = await _visible(info, principal, str(id))
        try:
            taken, holder = await _store(info).lease(row["tenant_id"], row["audit_id"], principal.subject)
        except LeaseRefused as error:
            raise fail("CONFLICT", str(error)) from None
        return ReviewLease(
            taken=taken, holder=holder, expires_in_seconds=LEASE_SECONDS, item=audit_of(row) if taken else None
        )

    @strawberry.mutation
    async def record_bias_review(
        self, info: Info, id: strawberry.ID, input: RecordBiasReviewInput
    ) -> LlmInteractionAudit:
        principal = authorized(info, REVIEW, "reviewing")
        row = await _visible(info, principal, str(id))
        tags: Any = input.human_bias_tag if input.human_bias_tag is not None else []
        verdicts: Any = input.verdicts if input.verdicts is not None else {}
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise fail("BAD_USER_INPUT", "humanBiasTag is a list of bias_taxonomy keys")
        if len(tags) > MAX_SCORE_ENTRIES:
            raise fail("BAD_USER_INPUT", f"humanBiasTag holds at most {MAX_SCORE_ENTRIES} tags")
        known = {entry["bias_key"] for entry in await _store(info).taxonomy()}
        unknown = sorted(set(tags) - known)
        if unknown:
            raise fail("BAD_USER_INPUT", f"not in the taxonomy: {', '.join(unknown)}")
        if not isinstance(verdicts, dict) or not all(v in VERDICTS for v in verdicts.values()):
            raise fail("BAD_USER_INPUT", "verdicts maps a bias type to confirmed or dismissed")
        if input.review_notes is not None and len(input.review_notes) > 10_000:
            raise fail("BAD_USER_INPUT", "reviewNotes is at most 10,000 characters")
        # an empty review would mark the item reviewed while saying nothing about it
        if not verdicts and not tags and input.answer_biased is None and not (input.review_notes or "").strip():
            raise fail("BAD_USER_INPUT", "a review says something: give a verdict, a tag or a note")
        flagged = set(row["bias_type"] or [])
        strange = sorted(set(verdicts) - flagged)
        if strange:  # a verdict on a type the item was never flagged for would count as a detector's in precision
            raise fail(
                "BAD_USER_INPUT",
                f"verdicts are for this item's bias types ({', '.join(sorted(flagged)) or 'none'}); "
                f"not {', '.join(strange)}: tag other biases you see instead",
            )
        try:
            stored = await _store(info).record_review(
                row["tenant_id"],
                row["audit_id"],
                reviewer=principal.subject,
                verdicts=verdicts,
                tags=tags,
                notes=input.review_notes,
                reviewed=input.human_reviewed,
                trace_id=info.context.get("trace_id"),
                answer_biased=input.answer_biased,
            )
        except LeaseRefused as error:
            raise fail("CONFLICT", str(error)) from None
        for verdict in verdicts.values():
            info.context["reviews_counter"].labels(verdict).inc()
        return audit_of(stored)


class _Schema(strawberry.Schema):
    def process_errors(self, errors, execution_context=None) -> None:
        """Log only the unexpected: a caller's mistake (an error with a code) is its answer, not ours."""
        unexpected = [error for error in errors if not (error.extensions or {}).get("code")]
        if unexpected:
            super().process_errors(unexpected, execution_context)


@strawberry.type(name="Query")
class RootQuery(Query, ReviewQuery, HistoryQuery):
    """Every query field: the audit log's and the reviews'."""


schema = _Schema(query=RootQuery, mutation=Mutation, extensions=EXTENSIONS)


def loaders(store: AuditStore) -> dict[str, DataLoader]:
    """Per request: one query for all the reviews (or taxonomy entries) a page asks for."""

    async def reviews(keys: list[tuple[str, str]]) -> list[list[dict[str, Any]]]:
        return await store.reviews(keys)

    async def taxonomy(keys: list[str]) -> list[BiasTaxonomyEntry | None]:
        found = {row["bias_key"]: BiasTaxonomyEntry(**row) for row in await store.taxonomy(list(keys))}
        return [found.get(key) for key in keys]

    return {"review_loader": DataLoader(load_fn=reviews), "taxonomy_loader": DataLoader(load_fn=taxonomy)}
