"""The contract's wire format, shared by both transports: the body is the JSON document, and
plain fields (Redis) or attributes (Pub/Sub) carry event_type, tenant_id, trace_id, traceparent
and the CloudEvents 1.0 attributes of binary content mode (producers/cloudevents.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bias_audit.consumers.council import Outcome
from bias_audit.consumers.envelope import raw_dead_letter, traceparent_for

from .cloudevents import cloudevent_fields


@dataclass(frozen=True, slots=True)
class OutputTopics:
    results: str = "bias.audit.stream"
    alerts: str = "bias.audit.alerts"
    deadletter: str = "bias.audit.deadletter"
    raw_deadletter: str | None = None  # operator switch: unparseable bodies as received, restricted
    tasks: str = "bias.audit.tasks"


def wire_fields(data: bytes | str, *, event_type: str, tenant_id: str | None, trace_id: str | None,
                cloud_event: dict[str, str] | None = None) -> dict[str, str | bytes]:
    fields: dict[str, str | bytes] = {"data": data, "event_type": event_type}
    if tenant_id:
        fields["tenant_id"] = tenant_id
    if trace_id:
        fields["trace_id"] = trace_id
        fields["traceparent"] = traceparent_for(trace_id)
    if cloud_event:
        fields.update(cloud_event)
    return fields


def outcome_entries(outcomes: Iterable[Outcome], topics: OutputTopics) -> list[tuple[str, dict]]:
    entries = []
    for outcome in outcomes:
        if outcome.result is not None:
            result = outcome.result
            entries.append((topics.results, wire_fields(
                result.model_dump_json(), event_type=result.event_type,
                tenant_id=result.tenant_id, trace_id=result.trace_id,
                cloud_event=cloudevent_fields(event_type=result.event_type, key=f"{result.tenant_id}\x1f{result.audit_id}",
                                              time=result.timestamp, subject=result.audit_id))))
            for alert in outcome.alerts or ():
                entries.append((topics.alerts, wire_fields(
                    alert.model_dump_json(), event_type=alert.event_type,
                    tenant_id=alert.tenant_id, trace_id=alert.trace_id,
                    cloud_event=cloudevent_fields(event_type=alert.event_type, key=alert.alert_id,
                                                  time=alert.detected_at, subject=alert.session_id or alert.alert_id))))
            for task in outcome.tasks or ():
                entries.append((topics.tasks, wire_fields(
                    task.model_dump_json(), event_type=task.event_type, tenant_id=task.tenant_id,
                    trace_id=task.trace_id,
                    cloud_event=cloudevent_fields(event_type=task.event_type, key=task.task_id,
                                                  time=task.detected_at, subject=task.task_id))))
        elif outcome.dead_letter is not None:
            letter = outcome.dead_letter
            delivery = outcome.delivery
            letter_event = cloudevent_fields(event_type=letter.event_type, key=f"{delivery.source_topic}\x1f{delivery.delivery_id}",
                                             time=letter.received_at, subject=delivery.delivery_id)
            entries.append((topics.deadletter, wire_fields(
                letter.model_dump_json(), event_type=letter.event_type,
                tenant_id=None, trace_id=letter.trace_id, cloud_event=letter_event)))
            if topics.raw_deadletter and letter.payload_encoding == "omitted":
                raw = raw_dead_letter(delivery, letter)
                entries.append((topics.raw_deadletter, wire_fields(
                    raw.model_dump_json(), event_type=raw.event_type, tenant_id=None, trace_id=raw.trace_id,
                    cloud_event=letter_event)))
    return entries
