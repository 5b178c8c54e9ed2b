"""The contract's wire format, shared by both transports: the body is the JSON document, and
plain fields (Redis) or attributes (Pub/Sub) carry event_type, tenant_id, trace_id, traceparent."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bias_audit.consumers.council import Outcome
from bias_audit.consumers.envelope import raw_dead_letter, traceparent_for


@dataclass(frozen=True, slots=True)
class OutputTopics:
    results: str = "bias.audit.stream"
    alerts: str = "bias.audit.alerts"
    deadletter: str = "bias.audit.deadletter"
    raw_deadletter: str | None = None  # operator switch: unparseable bodies as received, restricted
    tasks: str = "bias.audit.tasks"


def wire_fields(data: bytes | str, *, event_type: str, tenant_id: str | None, trace_id: str | None) -> dict[str, str | bytes]:
    fields: dict[str, str | bytes] = {"data": data, "event_type": event_type}
    if tenant_id:
        fields["tenant_id"] = tenant_id
    if trace_id:
        fields["trace_id"] = trace_id
        fields["traceparent"] = traceparent_for(trace_id)
    return fields


def outcome_entries(outcomes: Iterable[Outcome], topics: OutputTopics) -> list[tuple[str, dict]]:
    entries = []
    for outcome in outcomes:
        if outcome.result is not None:
            result = outcome.result
            entries.append((topics.results, wire_fields(
                result.model_dump_json(), event_type=result.event_type,
                tenant_id=result.tenant_id, trace_id=result.trace_id)))
            for alert in outcome.alerts or ():
                entries.append((topics.alerts, wire_fields(
                    alert.model_dump_json(), event_type=alert.event_type,
                    tenant_id=alert.tenant_id, trace_id=alert.trace_id)))
            for task in outcome.tasks or ():
                entries.append((topics.tasks, wire_fields(
                    task.model_dump_json(), event_type=task.event_type, tenant_id=task.tenant_id,
                    trace_id=task.trace_id)))
        elif outcome.dead_letter is not None:
            letter = outcome.dead_letter
            entries.append((topics.deadletter, wire_fields(
                letter.model_dump_json(), event_type=letter.event_type,
                tenant_id=None, trace_id=letter.trace_id)))
            if topics.raw_deadletter and letter.payload_encoding == "omitted":
                raw = raw_dead_letter(outcome.delivery, letter)
                entries.append((topics.raw_deadletter, wire_fields(
                    raw.model_dump_json(), event_type=raw.event_type, tenant_id=None, trace_id=raw.trace_id)))
    return entries
