"""Council-session consumer: decode -> validate -> audit -> window -> records -> result.

Transport-agnostic: it takes Deliveries and returns Outcomes; the transport publishes them and
acknowledges. Exactly-once counting comes from the window store's per-session marker:
a redelivery of the same delivery resumes (records + result), any other copy is a duplicate.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from bias_audit.analysis.alerts import (
    AlertPolicy,
    Condition,
    SessionSignals,
    audited_level,
    session_levels,
    session_signals,
    window_baseline,
)
from bias_audit.analysis.digest import SessionDigest, digest_from_scores
from bias_audit.analysis.observations import SessionScores, session_scores
from bias_audit.analysis.records import SessionRecords, effective_consent, session_records, stored_bytes_over
from bias_audit.analysis.response_traits import response_traits
from bias_audit.analysis.session_audit import AuditConfig, SessionAnalysis, audit_batch
from bias_audit.analysis.session_noise import NOISE_SESSIONS, digests_noise
from bias_audit.analysis.verdict import session_verdict
from bias_audit.analysis.window import Contribution, WindowUpdate, session_contribution, window_bounds
from bias_audit.schemas.events import CouncilSessionEvent, LLMResponseEvent
from bias_audit.schemas.limits import DEFAULT_LIMITS, EventLimits
from bias_audit.schemas.results import Alert, AlertWindow, AuditResult, WindowSummary
from bias_audit.state.alert_state import AlertStateStore
from bias_audit.state.base import RESUMED, WindowItem, WindowPolicy, WindowStore

from .envelope import (
    Delivery,
    InvalidEvent,
    Misrouted,
    cloudevent_id,
    parse_event,
    parse_or_dead_letter,
    resolve_trace_id,
    utc_now_iso,
)
from .exactly_once import RecordOnce, SessionSink
from .outcome import AlertMove, Outcome, decide_alerts, recall_alerts
from .window_memo import WindowMemo

log = logging.getLogger("bias_audit.consumer")


def _council_alert(p: _Prepared, summary: Any, condition: Condition, status: str, alert_id: str) -> Alert:
    return Alert(
        alert_id=alert_id,
        alert_type=condition.alert_type,
        status=status,
        severity=condition.severity,
        tenant_id=p.event.tenant_id,
        trace_id=p.trace_id,
        metric=condition.metric,
        value=condition.value,
        threshold=condition.threshold,
        window=AlertWindow(start=summary.window_start, end=summary.window_end, sessions=summary.sessions),
        detected_at=utc_now_iso(),
        message=condition.message,
        session_id=p.event.session_id,
    )


def _counting_order(entry: tuple[int, Any, WindowUpdate]) -> int:
    """A counted or resumed session's place in its tenant's counting order: the alert state
    takes each key's transitions in that order (an older one after a newer one is ignored)."""
    update = entry[2]
    return update.sequence or update.counted_as


@dataclass(slots=True)
class _Prepared:
    delivery: Delivery
    event: CouncilSessionEvent
    trace_id: str
    consent: int
    records: list[SessionRecords]  # the session's, or none (consent 0)
    item: WindowItem
    analysis: Any
    digest: SessionDigest | None


class CouncilSessionProcessor:
    misrouted = Misrouted(
        "llm.response", LLMResponseEvent, "this is an llm.responses event; send it to the llm.responses topic"
    )

    def __init__(
        self,
        *,
        window: WindowStore,
        store: SessionSink | None,
        default_consent: int = 1,
        hash_secret: bytes | None = None,
        limits: EventLimits = DEFAULT_LIMITS,
        audit_config: AuditConfig = AuditConfig(),
        remember: int = 10_000,
        alert_state: AlertStateStore | None = None,
        alert_policy: AlertPolicy = AlertPolicy(),
        window_policy: WindowPolicy = WindowPolicy(),
        max_stored_ratio: float = 10.0,
        embed: Callable[[Sequence[str]], np.ndarray] | None = None,
    ) -> None:
        self.window = window
        self.default_consent = default_consent
        self.hash_secret = hash_secret
        self.limits = limits
        self.audit_config = audit_config
        self.once: RecordOnce[SessionRecords] = RecordOnce(window, store.append_sessions if store else None, remember)
        self.alert_state = alert_state
        self.alert_policy = alert_policy
        self.window_policy = window_policy
        self.max_stored_ratio = max_stored_ratio
        self.embed = embed  # answers -> unit vectors: semantic style similarity (the embedding extra)
        # per session of each tenant's window: its two-way fit's (rss, df), what its anomaly scores compare
        self.noise = WindowMemo(digests_noise)
        self.levels = WindowMemo(session_levels)

    def parse(self, delivery: Delivery) -> CouncilSessionEvent:
        event = parse_event(CouncilSessionEvent, delivery.body, self.limits, self.misrouted)
        if effective_consent(event.consent_level, self.default_consent, self.hash_secret) > 0:
            # each reviewer x model record repeats the session's fields: bound what one event writes
            trace_id = resolve_trace_id(event.trace_id, delivery.attributes, event.tenant_id, event.session_id)
            over = stored_bytes_over(event, trace_id, self.max_stored_ratio * len(delivery.body))
            if over is not None:
                records, size = over
                raise InvalidEvent(
                    f"its {records} records would store up to {size} bytes, more than {self.max_stored_ratio:g}x "
                    f"the event's {len(delivery.body)} bytes; send fewer reviewers x models per session or shorter "
                    "ids and metadata",
                    "too_large",
                )
        return event

    def _prepare(
        self,
        delivery: Delivery,
        event: CouncilSessionEvent,
        scores: SessionScores,
        analysis: SessionAnalysis,
        embeddings: np.ndarray | None = None,
    ) -> _Prepared:
        trace_id = resolve_trace_id(event.trace_id, delivery.attributes, event.tenant_id, event.session_id)
        consent = effective_consent(event.consent_level, self.default_consent, self.hash_secret)
        counted = consent > 0
        traits = (
            response_traits(
                scores,
                [r.response for r in event.responses],
                [r.correct for r in event.responses],
                self.hash_secret,
                embeddings,
            )
            if counted
            else None
        )
        session = session_records(
            event, scores, trace_id=trace_id, consent=consent, secret=self.hash_secret, traits=traits
        )
        digest = (
            digest_from_scores(
                scores,
                session_id=event.session_id,
                tenant_id=event.tenant_id,
                timestamp=event.timestamp,
                trace_id=trace_id,
                config_version=event.council_config_version,
                traits=traits,
            )
            if counted
            else None
        )
        contribution = session_contribution(scores, analysis) if counted else Contribution({}, {})
        item = WindowItem(
            tenant_id=event.tenant_id,
            session_id=event.session_id,
            timestamp=event.timestamp,
            owner=delivery.delivery_id,
            contribution=contribution.window,
            recent_contribution=contribution.recent,
            counted=counted,
            digest=digest,
        )
        return _Prepared(
            delivery, event, trace_id, consent, [] if session is None else [session], item, analysis, digest
        )

    def _embeddings(
        self, parsed: list[CouncilSessionEvent], counted: list[CouncilSessionEvent]
    ) -> list[np.ndarray | None]:
        """Per parsed session, its answers embedded (one call for the batch's counted sessions: the
        others store no record); None without the extra."""
        if self.embed is None or not counted:
            return [None] * len(parsed)
        vectors = self.embed([r.response for event in counted for r in event.responses])
        ends = np.cumsum([len(event.responses) for event in counted])
        by_session = {id(event): part for event, part in zip(counted, np.split(vectors, ends[:-1]))}
        return [by_session.get(id(event)) for event in parsed]

    def _noise_history(self, tenant: str, digests: list[SessionDigest], fresh: set[str]) -> list[tuple[float, int]]:
        """The tenant's last sessions' (rss, df), oldest first, the batch's own sessions left out
        (a redelivered one is in the window already)."""
        return self.noise.values(tenant, [d for d in digests if d.session_id not in fresh][-(NOISE_SESSIONS - 1) :])

    def _result(self, prepared: _Prepared, summary: WindowSummary) -> AuditResult:
        audit = prepared.analysis.audit
        verdict = session_verdict(audit)
        event = prepared.event
        return AuditResult(
            cloudevent_id=cloudevent_id(prepared.delivery.attributes),
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
        parsed = parse_or_dead_letter(deliveries, outcomes, self.parse)
        scores = [session_scores(event) for _, event in parsed]
        tenants = sorted({event.tenant_id for _, event in parsed})
        # the window the batch arrives to: the reviewer tests' noise scale, the alerts' baseline
        before = await self.window.digests(tenants) if tenants else {}
        fresh = {event.session_id for _, event in parsed}
        analyses = audit_batch(
            scores,
            self.audit_config,
            [event.tenant_id for _, event in parsed],
            {tenant: self._noise_history(tenant, digests, fresh) for tenant, digests in before.items()},
        )
        events = [event for _, event in parsed]
        embeddings = self._embeddings(
            events,
            [
                event
                for event in events
                if effective_consent(event.consent_level, self.default_consent, self.hash_secret) > 0
            ],
        )
        prepared = [
            (index, self._prepare(deliveries[index], event, session, analysis, vectors))
            for (index, event), session, analysis, vectors in zip(parsed, scores, analyses, embeddings)
        ]
        updates = await self.window.add_many([p.item for _, p in prepared])
        to_append: list[tuple[str, WindowItem, list[SessionRecords]]] = []
        for (index, p), update in zip(prepared, updates):
            if update.status in ("duplicate", "done"):  # another copy counted it / already published
                outcomes[index].duplicate = True
                log.info(
                    "duplicate skipped",
                    extra={"trace_id": p.trace_id, "session_id": p.event.session_id, "status": update.status},
                )
                continue
            outcomes[index].result = self._result(p, update.summary)
            outcomes[index].window_item = p.item
            if self.once.needed(p.delivery.delivery_id, update.status):
                to_append.append((p.delivery.delivery_id, p.item, p.records))
        await self.once.append(to_append)
        counted_now = [
            (index, p, update)
            for (index, p), update in zip(prepared, updates)
            if update.status == "new" and p.item.counted
        ]
        # the next batch's noise history holds these sessions: their fits are known already
        for _, p, _ in counted_now:
            self.noise.remember(p.event.tenant_id, {p.event.session_id: p.analysis.noise_contribution})
        # a session counted by an earlier attempt at this delivery (its batch failed after the
        # window counted it) is evaluated now: its anomaly scores, and its alerts under the
        # sequence it was counted with while it is in the recent window. If that attempt got as
        # far as applying its transitions, the alert state ignores them, and the alerts that
        # attempt decided come back from the alert store instead (recall_alerts)
        resumed = [
            (index, p, update)
            for (index, p), update in zip(prepared, updates)
            if update.status in RESUMED and p.item.counted
        ]
        if self.alert_state is not None and resumed:  # before this attempt decides any
            await recall_alerts(
                self.alert_state, [(index, p.event.tenant_id, p.event.session_id) for index, p, _ in resumed], outcomes
            )
        if self.alert_state is not None and (counted_now or resumed):
            await self._signal(self.alert_state, sorted(counted_now + resumed, key=_counting_order), outcomes, before)
        if not log.isEnabledFor(logging.INFO):  # skip building per-session log records
            return outcomes
        for outcome in outcomes:
            if outcome.result is not None:
                log.info(
                    "audited",
                    extra={
                        "trace_id": outcome.result.trace_id,
                        "session_id": outcome.result.audit_id,
                        "tenant_id": outcome.result.tenant_id,
                        "risk": outcome.result.overall_bias_risk,
                    },
                )
        return outcomes

    async def _signal(
        self,
        alert_state: AlertStateStore,
        counted: list[tuple[int, _Prepared, WindowUpdate]],
        outcomes: list[Outcome],
        before: dict[str, list[SessionDigest]],
    ) -> None:
        """Anomaly scores for each session counted now, and the alerts whose state it changed.
        Conditions come from the sums Redis returned when it counted the session (complete, in
        counting order); the anomaly baseline is the window the batch arrived to (read before
        it), and each session's own values come from the batch's digests."""
        moves: list[AlertMove] = []
        policy = self.window_policy
        for tenant in sorted({p.event.tenant_id for _, p, _ in counted}):
            mine = [(index, p, update) for index, p, update in counted if p.event.tenant_id == tenant]
            fresh = {p.event.session_id for _, p, _ in mine}
            digests = sorted(
                [
                    *(d for d in before.get(tenant, ()) if d.session_id not in fresh),
                    *(p.digest for _, p, _ in mine if p.digest is not None),
                ],
                key=lambda d: d.ts_ms,
            )
            audited = {
                p.event.session_id: audited_level(
                    p.digest, p.analysis.audit.reviewer_offsets, p.analysis.scores.scale_span
                )
                for _, p, _ in mine
                if p.digest is not None
            }
            self.levels.remember(tenant, audited)  # the batch's own, from their audits: not fitted again
            levels = self.levels.values(tenant, digests)
            at = {d.session_id: i for i, d in enumerate(digests)}
            times = [d.ts_ms for d in digests]
            first = min(at[p.event.session_id] for _, p, _ in mine)
            # the window the batch arrived to: last N sessions within D days ending at its first session
            _, start = window_bounds(times[: first + 1], times[first], policy.max_sessions, policy.max_days)
            baseline = window_baseline(levels[start:first], self.alert_policy)
            for index, p, update in mine:
                signals: SessionSignals = session_signals(
                    levels[at[p.event.session_id]], update.summary, update.recent, self.alert_policy, baseline
                )
                result = outcomes[index].result
                if result is not None:
                    result.anomaly = signals.anomaly()
                sequence = update.sequence or update.counted_as
                if not sequence:  # resumed, and out of the recent window since: its order is unknown
                    continue
                for condition in signals.conditions:
                    if condition.state != "hold":
                        moves.append(
                            AlertMove(
                                index,
                                tenant,
                                p.event.session_id,
                                condition.key,
                                condition.state,
                                sequence,
                                partial(_council_alert, p, update.summary, condition),
                            )
                        )
        await decide_alerts(alert_state, moves, outcomes)

    async def published(self, outcomes: list[Outcome]) -> None:
        await self.once.published([o.window_item for o in outcomes if o.window_item is not None])
