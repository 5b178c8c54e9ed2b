"""The contract's wire format, shared by both transports: the body is the JSON document, and
plain fields (Redis) or attributes (Pub/Sub) carry event_type, tenant_id, trace_id, traceparent
and the CloudEvents 1.0 attributes of binary content mode (producers/cloudevents.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bias_audit.consumers.envelope import raw_dead_letter, traceparent_for
from bias_audit.consumers.outcome import Outcome

from .cloudevents import cloudevent_fields


@dataclass(frozen=True, slots=True)
class OutputTopics:
    results: str = "bias.audit.stream"
    alerts: str = "bias.audit.alerts"
    deadletter: str = "bias.audit.deadletter"
    raw_deadletter: str | None = None  # operator switch: unparseable bodies as received, restricted
    tasks: str = "bias.audit.tasks"


def wire_fields(
    data: bytes | str,
    *,
    event_type: str,
    tenant_id: str | None,
    trace_id: str | None,
    cloud_event: dict[str, str] | None = None,
) -> dict[str, str | bytes]:
    fields: dict[str, str | bytes] = {"data": data, "event_type": event_type}
    if tenant_id:
        fields["tenant_id"] = tenant_id
    if trace_id:
        fields["trace_id"] = trace_id
        fields["traceparent"] = traceparent_for(trace_id)
    if cloud_event:
        fields.update(cloud_event)
    return fields


def _entry(
    topic: str, document, *, tenant_id: str | None, key: str, time: str | None, subject: str | None
) -> tuple[str, dict]:
    """One output message: the document, its plain fields and its CloudEvents attributes."""
    return topic, wire_fields(
        document.model_dump_json(),
        event_type=document.event_type,
        tenant_id=tenant_id,
        trace_id=document.trace_id,
        cloud_event=cloudevent_fields(event_type=document.event_type, key=key, time=time, subject=subject),
    )


def outcome_entries(outcomes: Iterable[Outcome], topics: OutputTopics) -> list[tuple[str, dict]]:
    entries = []
    for outcome in outcomes:
        if outcome.result is not None:
            result = outcome.result
            entries.append(
                _entry(
                    topics.results,
                    result,
                    tenant_id=result.tenant_id,
                    key=f"{result.tenant_id}\x1f{result.audit_id}",
                    time=result.timestamp,
                    subject=result.audit_id,
                )
            )
            entries += [
                _entry(
                    topics.alerts,
                    alert,
                    tenant_id=alert.tenant_id,
                    key=alert.alert_id,
                    time=alert.detected_at,
                    subject=alert.session_id or alert.alert_id,
                )
                for alert in outcome.alerts or ()
            ]
            entries += [
                _entry(
                    topics.tasks,
                    task,
                    tenant_id=task.tenant_id,
                    key=task.task_id,
                    time=task.detected_at,
                    subject=task.task_id,
                )
                for task in outcome.tasks or ()
            ]
        elif outcome.dead_letter is not None:
            letter, delivery = outcome.dead_letter, outcome.delivery
            key = f"{delivery.source_topic}\x1f{delivery.delivery_id}"
            entries.append(
                _entry(
                    topics.deadletter,
                    letter,
                    tenant_id=None,
                    key=key,
                    time=letter.received_at,
                    subject=delivery.delivery_id,
                )
            )
            if topics.raw_deadletter and letter.payload_encoding == "omitted":  # the same event, as received
                entries.append(
                    _entry(
                        topics.raw_deadletter,
                        raw_dead_letter(delivery, letter),
                        tenant_id=None,
                        key=key,
                        time=letter.received_at,
                        subject=delivery.delivery_id,
                    )
                )
    return entries
