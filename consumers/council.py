"""Council-session consumer: decode -> validate -> audit -> window -> records -> result.

Transport-agnostic: it takes Deliveries and returns Outcomes; the transport publishes them and
acknowledges. Exactly-once counting comes from the window store's per-session marker:
a redelivery of the same delivery resumes (records + result), any other copy is a duplicate.
"""

from __future__ import annotations

import logging
import uuid
from bisect import bisect_left
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
from pydantic import ValidationError

from analysis.alerts import AlertPolicy, Condition, SessionSignals, session_signals, window_baseline
from analysis.digest import SessionDigest, digest_from_scores
from analysis.observations import session_scores
from analysis.records import build_records, effective_consent
from analysis.session_audit import AuditConfig, audit_batch
from analysis.verdict import session_verdict
from analysis.window import WindowUpdate, session_contribution
from analysis.window_cells import window_cells
from schemas.events import CouncilSessionEvent, LLMResponseEvent
from schemas.limits import DEFAULT_LIMITS, EventLimits
from schemas.results import Alert, AlertWindow, AuditResult, DeadLetter
from windows.alert_state import AlertStateStore, Transition
from windows.base import PUBLISHED, RECORDED, WindowItem, WindowPolicy, WindowStore

from .envelope import Delivery, InvalidEvent, dead_letter, describe_validation_error, resolve_trace_id, utc_now_iso

log = logging.getLogger("bias_audit.consumer")


class RecordSink(Protocol):
    def append(self, records: list[dict[str, Any]]) -> int: ...


@dataclass(slots=True)
class Outcome:
    delivery: Delivery
    result: AuditResult | None = None  # publish on bias.audit.stream
    dead_letter: DeadLetter | None = None  # publish on bias.audit.deadletter
    duplicate: bool = False  # nothing to publish, only acknowledge
    window_item: WindowItem | None = None  # the session's window entry, to mark it published
    alerts: list[Alert] | None = None  # publish on bias.audit.alerts


@dataclass(slots=True)
class _Prepared:
    delivery: Delivery
    event: CouncilSessionEvent
    trace_id: str
    consent: int
    records: list[dict[str, Any]]
    item: WindowItem
    analysis: Any
    digest: SessionDigest | None


def classify(document: Any) -> str:
    """Tell council sessions and LLM responses apart by their fields."""
    if isinstance(document, dict):
        if "session_id" in document or "reviews" in document:
            return "council.session"
        if "audit_id" in document or "llm_response" in document:
            return "llm.response"
    return "unknown"


class CouncilSessionConsumer:
    def __init__(
        self,
        *,
        window: WindowStore,
        store: RecordSink | None,
        default_consent: int = 1,
        hash_secret: bytes | None = None,
        limits: EventLimits = DEFAULT_LIMITS,
        audit_config: AuditConfig = AuditConfig(),
        remember: int = 10_000,
        alert_state: AlertStateStore | None = None,
        alert_policy: AlertPolicy = AlertPolicy(),
        window_policy: WindowPolicy = WindowPolicy(),
    ) -> None:
        self.window = window
        self.store = store
        self.default_consent = default_consent
        self.hash_secret = hash_secret
        self.limits = limits
        self.audit_config = audit_config
        # Deliveries whose records this process appended. The RECORDED mark in the window says
        # so to every worker; this covers the one case it cannot: the append succeeded and the
        # mark did not (window Redis down), and the batch is retried here.
        self._appended: OrderedDict[str, None] = OrderedDict()
        self._remember = remember
        self.alert_state = alert_state
        self.alert_policy = alert_policy
        self.window_policy = window_policy

    def parse(self, delivery: Delivery) -> CouncilSessionEvent:
        body = delivery.body
        if len(body) > self.limits.max_event_bytes:
            raise InvalidEvent(
                f"event is {len(body)} bytes, over the limit of {self.limits.max_event_bytes}", "too_large"
            )
        try:
            return CouncilSessionEvent.model_validate_json(body, context={"limits": self.limits})
        except ValidationError as error:
            kind = error.errors(include_url=False)[0]["type"]
            if kind in ("json_invalid", "json_type", "model_type"):
                raise InvalidEvent(self._json_problem(body), "invalid_json") from None
            self._reject_other_kinds(body)
            raise InvalidEvent(describe_validation_error(error), "invalid_event") from None

    @staticmethod
    def _json_problem(body: bytes) -> str:
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as error:
            return f"message body is not UTF-8 (byte {error.start}); send the event as UTF-8 JSON"
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError as error:
            return f"message body is not valid JSON: {error}"
        return f"message body must be a JSON object, not {type(document).__name__}"

    @staticmethod
    def _reject_other_kinds(body: bytes) -> None:
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError:
            return
        if classify(document) == "llm.response":
            try:
                LLMResponseEvent.model_validate(document)
            except ValidationError:
                return
            raise InvalidEvent(
                "this is an llm.responses event; send it to the llm.responses topic",
                "wrong_topic",
            )

    def _prepare(self, delivery: Delivery, event: CouncilSessionEvent, scores, analysis) -> _Prepared:
        trace_id = resolve_trace_id(event.trace_id, delivery.attributes, event.tenant_id, event.session_id)
        requested = event.consent_level if event.consent_level is not None else self.default_consent
        consent = effective_consent(requested, self.hash_secret)
        records = build_records(event, scores, trace_id=trace_id, consent=consent, secret=self.hash_secret)
        counted = consent > 0
        digest = digest_from_scores(
            scores, session_id=event.session_id, tenant_id=event.tenant_id, timestamp=event.timestamp,
            trace_id=trace_id, config_version=event.council_config_version,
        ) if counted else None
        item = WindowItem(
            tenant_id=event.tenant_id,
            session_id=event.session_id,
            timestamp=event.timestamp,
            owner=delivery.delivery_id,
            contribution=session_contribution(scores, analysis) if counted else {},
            counted=counted,
            digest=digest.to_dict() if digest is not None else None,
        )
        return _Prepared(delivery, event, trace_id, consent, records, item, analysis, digest)

    def _result(self, prepared: _Prepared, summary) -> AuditResult:
        audit = prepared.analysis.audit
        verdict = session_verdict(audit)
        event = prepared.event
        return AuditResult(
            audit_id=event.session_id,
            source="council.session",
            tenant_id=event.tenant_id,
            trace_id=prepared.trace_id,
            timestamp=utc_now_iso(),
            event_timestamp=event.timestamp.isoformat().replace("+00:00", "Z"),
            bias_detected=verdict.bias_detected,
            bias_type=verdict.bias_type,
            bias_score=verdict.bias_score,
            bias_confidence_score=verdict.bias_confidence_score,
            overall_bias_risk=audit.overall_bias_risk,
            bias_indicators=verdict.indicators,
            audit=audit,
            window=summary,
            consent_level=prepared.consent,
        )

    async def process(self, deliveries: list[Delivery]) -> list[Outcome]:
        """Outcomes in delivery order. Raises only on transient failures (window store or
        disk); then nothing was acknowledged and the whole batch may be retried."""
        outcomes: list[Outcome] = [Outcome(d) for d in deliveries]
        parsed: list[tuple[int, CouncilSessionEvent]] = []
        for index, delivery in enumerate(deliveries):
            try:
                parsed.append((index, self.parse(delivery)))
            except InvalidEvent as error:
                outcomes[index].dead_letter = dead_letter(delivery, str(error), error.error_type)
                log.warning(
                    "dead-lettered",
                    extra={"trace_id": outcomes[index].dead_letter.trace_id, "reason": str(error),
                           "error_type": error.error_type, "delivery_id": delivery.delivery_id},
                )
        scores = [session_scores(event) for _, event in parsed]
        analyses = audit_batch(scores, self.audit_config)  # vectorized over the batch
        prepared = [
            (index, self._prepare(deliveries[index], event, session, analysis))
            for (index, event), session, analysis in zip(parsed, scores, analyses)
        ]
        before: dict[str, list[SessionDigest]] = {}
        if self.alert_state is not None and prepared:
            before = await self.window.digests(sorted({p.event.tenant_id for _, p in prepared}))
        updates = await self.window.add_many([p.item for _, p in prepared])
        to_append: list[dict[str, Any]] = []
        appended_now: list[_Prepared] = []
        for (index, p), update in zip(prepared, updates):
            if update.status in ("duplicate", "done"):  # another copy counted it / already published
                outcomes[index].duplicate = True
                log.info("duplicate skipped", extra={"trace_id": p.trace_id, "session_id": p.event.session_id,
                                                     "status": update.status})
                continue
            outcomes[index].result = self._result(p, update.summary)
            outcomes[index].window_item = p.item
            if update.status != "resume_recorded" and p.delivery.delivery_id not in self._appended:
                to_append.extend(p.records)
                appended_now.append(p)
        if to_append and self.store is not None:
            self.store.append(to_append)
        if appended_now:
            # so a redelivery, here or in another worker, does not append them again
            await self.window.mark([p.item for p in appended_now], RECORDED)
        for p in appended_now:
            self._appended[p.delivery.delivery_id] = None
        while len(self._appended) > self._remember:
            self._appended.popitem(last=False)
        counted_now = [(index, p, update) for (index, p), update in zip(prepared, updates)
                       if update.status == "new" and p.item.counted]
        if self.alert_state is not None and counted_now:
            await self._signal(counted_now, outcomes, before)
        if not log.isEnabledFor(logging.INFO):  # skip building per-session log records
            return outcomes
        for outcome in outcomes:
            if outcome.result is not None:
                log.info(
                    "audited",
                    extra={"trace_id": outcome.result.trace_id, "session_id": outcome.result.audit_id,
                           "tenant_id": outcome.result.tenant_id, "risk": outcome.result.overall_bias_risk},
                )
        return outcomes

    async def _signal(self, counted: list[tuple[int, _Prepared, WindowUpdate]], outcomes: list[Outcome],
                      before: dict[str, list[SessionDigest]]) -> None:
        """Anomaly scores for each session counted now, and the alerts whose state it changed.
        Conditions come from the sums Redis returned when it counted the session (complete, in
        counting order); the anomaly baseline is the window the batch arrived to (read before
        it), and each session's own values come from the batch's digests."""
        transitions: list[Transition] = []
        pending: list[tuple[int, _Prepared, WindowUpdate, Condition]] = []
        policy = self.window_policy
        for tenant in sorted({p.event.tenant_id for _, p, _ in counted}):
            mine = [(index, p, update) for index, p, update in counted if p.event.tenant_id == tenant]
            fresh = {p.event.session_id for _, p, _ in mine}
            digests = sorted([*(d for d in before.get(tenant, ()) if d.session_id not in fresh),
                              *(p.digest for _, p, _ in mine)], key=lambda d: d.ts_ms)
            cells = window_cells(digests)
            at = {d.session_id: i for i, d in enumerate(digests)}
            times = [d.ts_ms for d in digests]
            first = min(at[p.event.session_id] for _, p, _ in mine)
            # the window the batch arrived to: last N sessions within D days before its first session
            start = max(0, first + 1 - policy.max_sessions, bisect_left(times, times[first] - policy.window_ms))
            baseline = window_baseline(cells, start, first, self.alert_policy)
            for index, p, update in mine:
                i = at[p.event.session_id]
                signals: SessionSignals = session_signals(cells, i, update.summary, update.recent,
                                                          self.alert_policy, baseline)
                if outcomes[index].result is not None:
                    outcomes[index].result.anomaly = signals.anomaly()
                for condition in signals.conditions:
                    if condition.state == "hold":
                        continue
                    alert_id = uuid.uuid5(uuid.NAMESPACE_URL, f"bias-audit:{tenant}:{condition.key}:{update.sequence}")
                    transitions.append(Transition(tenant, condition.key, condition.state, update.sequence, alert_id.hex))
                    pending.append((index, p, update, condition))
        for (index, p, update, condition), change in zip(pending, await self.alert_state.apply(transitions)):
            if change is None:
                continue
            status, alert_id = change
            summary = update.summary
            alert = Alert(
                alert_id=alert_id, alert_type=condition.alert_type,
                status="firing" if status == "fired" else "resolved",
                severity=condition.severity, tenant_id=p.event.tenant_id, trace_id=p.trace_id,
                metric=condition.metric, value=condition.value, threshold=condition.threshold,
                window=AlertWindow(start=summary.window_start, end=summary.window_end, sessions=summary.sessions),
                detected_at=utc_now_iso(), message=condition.message, session_id=p.event.session_id,
            )
            outcomes[index].alerts = [*(outcomes[index].alerts or []), alert]
            log.warning("alert %s", alert.status, extra={"trace_id": p.trace_id, "alert_type": alert.alert_type,
                                                          "alert_key": condition.key, "value": condition.value})

    async def published(self, outcomes: list[Outcome]) -> None:
        """After a transport that cannot publish and acknowledge atomically (Pub/Sub) published
        the results: a redelivery of these messages is then only acknowledged."""
        await self.window.mark([o.window_item for o in outcomes if o.window_item is not None], PUBLISHED)
