"""LLM-response consumer: decode -> validate -> analyze -> interaction audit record -> result.

Same contract with the transports as the council consumer (Deliveries in, Outcomes out) and
the same exactly-once rule: each audit_id gets a marker in the window store (never counted in
a window), so a redelivery resumes after the last step done and any other copy is a duplicate.
The raw `original_query` is never stored; at consent 4 its HMAC is.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from bias_audit.analysis.calibration import Calibration
from bias_audit.analysis.records import effective_consent, query_hash
from bias_audit.analysis.replay import query_groups
from bias_audit.analysis.responses.counterfactual import refuses
from bias_audit.analysis.responses.lexicon import Lexicons
from bias_audit.analysis.responses.linguistic import Budget, OverBudget, SentimentScorer
from bias_audit.analysis.responses.report import ResponseAnalysisConfig, ResponseVerdict, analyze_response
from bias_audit.analysis.responses.semantic import Embed
from bias_audit.analysis.tasks import TaskPolicy
from bias_audit.schemas.events import CouncilSessionEvent, LLMResponseEvent
from bias_audit.schemas.limits import DEFAULT_LIMITS, EventLimits
from bias_audit.schemas.results import AuditResult
from bias_audit.schemas.tasks import TaskSuggestion
from bias_audit.state.base import WindowItem, WindowStore
from bias_audit.state.task_state import TaskState

from .envelope import (
    Delivery,
    Misrouted,
    cloudevent_id,
    parse_event,
    parse_or_dead_letter,
    refuse,
    resolve_trace_id,
    utc_now_iso,
)
from .exactly_once import RecordOnce, RecordSink
from .outcome import Outcome

# Markers live under their own tenant key ('#' cannot occur in a tenant id): never counted in,
# or moving the cutoff of, the tenant's council window.
MARKER_SUFFIX = "#llm"


@dataclass(slots=True)
class _Analyzed:
    delivery: Delivery
    event: LLMResponseEvent
    trace_id: str
    consent: int
    verdict: ResponseVerdict
    item: WindowItem


def _count(declared: int | None, from_context: Any) -> int | None:
    """The event's token count, else the one in query_context.usage when it is a sane count
    (query_context is free-form: anything else there is ignored, never stored)."""
    if declared is not None:
        return declared
    if isinstance(from_context, int) and not isinstance(from_context, bool) and 0 <= from_context <= 2**53:
        return from_context
    return None


MAX_LINK_CHARS = 200


def decision_links(
    context: dict[str, Any], names: tuple[str, ...] = ("decision_id", "reasoning_node_id")
) -> dict[str, str | None]:
    """The caller's decision_id and reasoning_node_id (or, given `names`, other ids) from
    query_context, when they are short printable strings (ids, not text: query_context itself
    is never stored)."""
    links: dict[str, str | None] = {}
    for name in names:
        value = context.get(name)
        links[name] = (
            value if isinstance(value, str) and 0 < len(value) <= MAX_LINK_CHARS and value.isprintable() else None
        )
    return links


class ResponseProcessor:
    misrouted = Misrouted(
        "council.session", CouncilSessionEvent, "this is a council session event; send it to the council.sessions topic"
    )

    def __init__(
        self,
        *,
        window: WindowStore,
        store: RecordSink | None,
        lexicons: Lexicons,
        sentiment: SentimentScorer | None,
        embed: Embed | None = None,
        config: ResponseAnalysisConfig = ResponseAnalysisConfig(),
        default_consent: int = 1,
        hash_secret: bytes | None = None,
        limits: EventLimits = DEFAULT_LIMITS,
        remember: int = 10_000,
        max_event_seconds: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        calibration: Calibration | None = None,
        tasks: TaskState | None = None,
        task_policy: TaskPolicy = TaskPolicy(),
        task_webhook: Any = None,
        severity: Callable[[str], int] = lambda _: 3,
        learned: Any = None,
        learned_embed: Embed | None = None,
        query_axes: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    ) -> None:
        self.window = window
        # task suggestions: windows.task_state's store, the policy, the optional webhook sender
        self.tasks, self.task_policy, self.task_webhook, self.severity = tasks, task_policy, task_webhook, severity
        self.calibration = calibration  # reviews' verdicts: confidence as the probability of a confirm
        self.learned = learned  # () -> analysis.learned_detector.LearnedDetector: the tenant's own labels
        self.learned_embed = learned_embed  # MiniLM, for a learned model over sentence embeddings
        self.lexicons = lexicons
        self.query_axes = query_axes  # groups a query may name: kept with the answer's traits at consent >= 2
        self.sentiment = sentiment
        self.embed = embed
        self.config = config
        self.default_consent = default_consent
        self.hash_secret = hash_secret
        self.limits = limits
        self.once: RecordOnce[dict[str, Any]] = RecordOnce(window, store.append if store else None, remember)
        self.max_event_seconds = max_event_seconds
        self.clock = clock  # the time budget's: tests step it

    def parse(self, delivery: Delivery) -> LLMResponseEvent:
        return parse_event(LLMResponseEvent, delivery.body, self.limits, self.misrouted)

    def analyze(self, event: LLMResponseEvent) -> ResponseVerdict | OverBudget:
        """The verdict, or the OverBudget that stopped it (the event's dead letter)."""
        try:
            verdict = self._analyze(event)
        except OverBudget as stopped:
            return stopped
        if self.calibration is not None:
            verdict = self.calibration.adjust(verdict)
        detector = self.learned() if self.learned is not None else None
        if detector is not None and detector.applies_to(event.tenant_id):
            verdict = detector.apply(verdict, event.llm_response, self.learned_embed)
        return verdict

    def _analyze(self, event: LLMResponseEvent) -> ResponseVerdict:
        return analyze_response(
            event.llm_response,
            lexicons=self.lexicons,
            sentiment=self.sentiment,
            members=[(m.member_id, m.response) for m in event.members],
            counterfactuals=[(c.swap, c.llm_response) for c in event.counterfactuals],
            embed=self.embed,
            config=self.config,
            budget=Budget(self.max_event_seconds, self.clock),
        )

    def _record(self, a: _Analyzed) -> dict[str, Any]:
        event, verdict = a.event, a.verdict
        usage = event.query_context.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        return {
            "record_type": "llm_interaction_audit",
            "schema_version": "1.0",
            "audit_id": event.audit_id,
            "timestamp": event.timestamp.isoformat().replace("+00:00", "Z"),
            "tenant_id": event.tenant_id,
            "user_id": event.user_id,
            "trace_id": a.trace_id,
            "consent_level": a.consent,
            "llm_provider": event.llm_provider,
            "llm_model": event.llm_model,
            "prompt_tokens": _count(event.prompt_tokens, usage.get("prompt_tokens")),
            "completion_tokens": _count(event.completion_tokens, usage.get("completion_tokens")),
            "total_tokens": _count(event.total_tokens, usage.get("total_tokens")),
            "query_hash": query_hash(event.original_query, self.hash_secret)
            if a.consent == 4 and event.original_query is not None and self.hash_secret
            else None,
            "bias_detected": verdict.bias_detected,
            "bias_type": verdict.bias_type,
            "bias_score": verdict.bias_score,
            "bias_confidence_score": verdict.bias_confidence_score,
            "mitigation_action": verdict.mitigation_action,
            "bias_report_summary": self._with_groups(a),
            "human_reviewed": False,
            "llm_response": event.llm_response,  # the audited answer, for review (never the query)
            **decision_links(event.query_context),
        }

    def _with_groups(self, a: _Analyzed) -> dict[str, Any]:
        """The summary, and at consent >= 2 the groups the query named (never the query) with what
        the live-traffic disparity reads of the answer."""
        summary = a.verdict.bias_report_summary
        query = a.event.original_query
        if a.consent < 2 or not query or not self.query_axes:
            return summary
        groups = query_groups(query, self.query_axes)
        if not groups:
            return summary
        text = a.event.llm_response
        findings = summary.get("findings") or []
        traits = {
            "refusal": refuses(text),
            "sentiment": round(self.sentiment(text), 4) if self.sentiment is not None else 0.0,
            "toxic": any(f.get("bias_type") in ("toxicity", "slur") for f in findings),
            "words": int((summary.get("linguistic") or {}).get("words") or len(text.split())),
        }
        return {**summary, "query_groups": groups, "answer_traits": traits}

    def _result(self, a: _Analyzed) -> AuditResult:
        event, verdict = a.event, a.verdict
        return AuditResult(
            cloudevent_id=cloudevent_id(a.delivery.attributes),
            audit_id=event.audit_id,
            source="llm.response",
            tenant_id=event.tenant_id,
            trace_id=a.trace_id,
            timestamp=utc_now_iso(),
            event_timestamp=event.timestamp.isoformat().replace("+00:00", "Z"),
            bias_detected=verdict.bias_detected,
            bias_type=verdict.bias_type,
            bias_score=verdict.bias_score,
            bias_confidence_score=verdict.bias_confidence_score,
            overall_bias_risk=verdict.overall_bias_risk,
            mitigation_action=verdict.mitigation_action,
            bias_report_summary=verdict.bias_report_summary,
            consent_level=a.consent,
            llm_provider=event.llm_provider,
            llm_model=event.llm_model,
            **decision_links(event.query_context, ("decision_id", "reasoning_node_id", "response_id")),
            calibration_version=(
                verdict.bias_report_summary.get("learned") or verdict.bias_report_summary.get("calibration") or {}
            ).get("version"),
        )

    async def process(self, deliveries: list[Delivery]) -> list[Outcome]:
        outcomes = [Outcome(d) for d in deliveries]
        parsed = parse_or_dead_letter(deliveries, outcomes, self.parse)
        # off the event loop: the embedding backend is slow per response (torch releases the
        # GIL), and the loop keeps serving the other input, the probes and the drain meanwhile
        verdicts = await asyncio.to_thread(lambda: [self.analyze(event) for _, event in parsed]) if parsed else []
        analyzed: list[tuple[int, _Analyzed]] = []
        for (index, event), verdict in zip(parsed, verdicts):
            delivery = deliveries[index]
            if isinstance(verdict, OverBudget):
                refuse(outcomes[index], str(verdict), "over_budget")
                continue
            consent = effective_consent(event.consent_level, self.default_consent, self.hash_secret)
            trace_id = resolve_trace_id(event.trace_id, delivery.attributes, event.tenant_id, event.audit_id)
            item = WindowItem(
                tenant_id=event.tenant_id + MARKER_SUFFIX,
                session_id=event.audit_id,
                timestamp=event.timestamp,
                owner=delivery.delivery_id,
                counted=False,
            )
            analyzed.append((index, _Analyzed(delivery, event, trace_id, consent, verdict, item)))
        updates = await self.window.add_many([a.item for _, a in analyzed])
        to_append: list[tuple[str, WindowItem, list[dict[str, Any]]]] = []
        for (index, a), update in zip(analyzed, updates):
            if update.status in ("duplicate", "done"):
                outcomes[index].duplicate = True
                continue
            outcomes[index].result = self._result(a)
            outcomes[index].window_item = a.item
            if self.once.needed(a.delivery.delivery_id, update.status):
                to_append.append((a.delivery.delivery_id, a.item, [self._record(a)] if a.consent > 0 else []))
        await self.once.append(to_append)
        if self.tasks is not None:
            await self._suggest_tasks(analyzed, updates, outcomes)
        return outcomes

    async def _suggest_tasks(
        self, analyzed: list[tuple[int, _Analyzed]], updates: list[Any], outcomes: list[Outcome]
    ) -> None:
        """Count each newly audited answer once (a redelivery does not count again), then open,
        resolve and publish again the suggestions it moves."""
        from bias_audit.analysis.tasks import DAY_MS, domain_of
        from bias_audit.state.task_state import Sighting

        tasks = self.tasks
        assert tasks is not None  # called only with a task state

        fresh: list[tuple[int, _Analyzed, str]] = []
        resumed: list[tuple[int, _Analyzed, str]] = []
        for (index, a), update in zip(analyzed, updates):
            if a.consent <= 0:
                continue
            domain = domain_of(a.event.query_context, a.event.llm_model)
            if update.status == "new":
                fresh.append((index, a, domain))
            elif update.status in ("resume", "resume_recorded"):
                resumed.append((index, a, domain))

        def day(a: _Analyzed) -> int:
            return int(a.event.timestamp.timestamp() * 1000) // DAY_MS

        today = int(time.time() * 1000) // DAY_MS  # the window ends today, not at a late event's day
        totals = await tasks.count(
            [
                Sighting(a.event.tenant_id, domain, day(a), tuple(a.verdict.bias_type), a.event.audit_id)
                for _, a, domain in fresh
            ],
            today,
        )
        await self._open_crossed(tasks, fresh, totals, outcomes)
        await self._resolve_receded(tasks, fresh, totals, outcomes)
        await self._publish_own_claims(tasks, resumed, outcomes)

    async def _open_crossed(
        self, tasks: TaskState, fresh: list[tuple[int, _Analyzed, str]], totals: dict[Any, Any], outcomes: list[Outcome]
    ) -> None:
        """A bias type over the policy in a domain: its onset claimed (one worker wins), the
        suggestion attached to the last answer that crossed it."""
        from bias_audit.analysis.tasks import crossed

        last_for: dict[tuple[str, str, str], tuple[int, _Analyzed]] = {}
        for index, a, domain in fresh:
            for bias_type in a.verdict.bias_type:
                last_for[(a.event.tenant_id, domain, bias_type)] = (index, a)
        for (tenant, domain, bias_type), (index, a) in last_for.items():
            group = totals.get((tenant, domain))
            if group is None or not crossed(group.flagged.get(bias_type, 0), group.total, self.task_policy):
                continue
            task = self._task(a, tenant, domain, bias_type, group)
            if await tasks.claim(tenant, domain, bias_type, task.model_dump_json()):
                self._attach(outcomes[index], task)

    async def _resolve_receded(
        self, tasks: TaskState, fresh: list[tuple[int, _Analyzed, str]], totals: dict[Any, Any], outcomes: list[Outcome]
    ) -> None:
        """An open suggestion whose bias has receded below the policy is resolved, once."""
        from bias_audit.analysis.tasks import crossed

        last_of_group = {(a.event.tenant_id, domain): (index, a) for index, a, domain in fresh}
        for (tenant, domain), (index, a) in last_of_group.items():
            group = totals[(tenant, domain)]
            for bias_type, document in (await tasks.open_tasks(tenant, domain)).items():
                if crossed(group.flagged.get(bias_type, 0), group.total, self.task_policy):
                    continue
                if await tasks.resolve(tenant, domain, bias_type):
                    now = self._task(a, tenant, domain, bias_type, group)
                    opened = TaskSuggestion.model_validate_json(document)
                    self._attach(
                        outcomes[index],
                        opened.model_copy(
                            update={
                                "status": "resolved",
                                "count": now.count,
                                "rate": now.rate,
                                "window": now.window,
                                "detected_at": now.detected_at,
                                "trace_id": now.trace_id,
                            }
                        ),
                    )

    @staticmethod
    async def _publish_own_claims(
        tasks: TaskState, resumed: list[tuple[int, _Analyzed, str]], outcomes: list[Outcome]
    ) -> None:
        """A retried delivery finds the suggestion it claimed before and publishes it again."""
        for index, a, domain in resumed:
            for bias_type in a.verdict.bias_type:
                held = await tasks.claimed(a.event.tenant_id, domain, bias_type)
                if held is not None:
                    task = TaskSuggestion.model_validate_json(held)
                    if task.trace_id == a.trace_id:
                        outcomes[index].tasks = [*(outcomes[index].tasks or []), task]

    def _task(self, a: _Analyzed, tenant: str, domain: str, bias_type: str, group: Any) -> TaskSuggestion:
        import uuid

        from bias_audit.analysis.tasks import DAY_MS

        fixes = [
            f["mitigation"]
            for f in a.verdict.bias_report_summary.get("findings", [])
            if f.get("bias_type") == bias_type and f.get("mitigation")
        ]
        start = datetime.fromtimestamp(group.first_day * DAY_MS / 1000, timezone.utc)
        end = datetime.fromtimestamp((group.last_day + 1) * DAY_MS / 1000, timezone.utc)
        count = group.flagged.get(bias_type, 0)
        return TaskSuggestion(
            task_id=uuid.uuid5(
                uuid.NAMESPACE_URL, f"bias-audit-task:{tenant}:{domain}:{bias_type}:{group.last_day}"
            ).hex,
            tenant_id=tenant,
            domain=domain,
            bias_type=bias_type,
            count=count,
            rate=round(count / group.total, 4),
            window={"start": start.isoformat().replace("+00:00", "Z"), "end": end.isoformat().replace("+00:00", "Z")},
            example_audit_ids=group.examples.get(bias_type, [])[:5],
            suggested_fix=fixes[0] if fixes else f"find where {bias_type} enters the {domain} answers and fix it there",
            severity=self.severity(bias_type),
            detected_at=utc_now_iso(),
            trace_id=a.trace_id,
        )

    def _attach(self, outcome: Outcome, task: TaskSuggestion) -> None:
        outcome.tasks = [*(outcome.tasks or []), task]
        if self.task_webhook is not None:
            self.task_webhook.submit(task.model_dump_json().encode())

    async def published(self, outcomes: list[Outcome]) -> None:
        await self.once.published([o.window_item for o in outcomes if o.window_item is not None])

    async def drain(self) -> None:
        """A stopping worker gives the webhook's suggestions in hand a moment to go out."""
        if self.task_webhook is not None:
            await self.task_webhook.drain()
