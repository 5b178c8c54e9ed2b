"""CloudEvents attributes of our messages: named by the spec, stable for the same event, and
spelled as each transport's binding spells them."""

from __future__ import annotations

import json
import uuid

import pytest
from cloudevents.core.v1.event import CloudEvent

from bias_audit.producers.cloudevents import cloudevent_fields, pubsub_attribute_name
from bias_audit.producers.publish import entries_for
from bias_audit.producers.pubsub import message_parts


@pytest.mark.parametrize(
    ("field", "attribute"),
    [
        ("ce_id", "ce-id"),
        ("ce_type", "ce-type"),
        ("ce_specversion", "ce-specversion"),
        ("ce_subject", "ce-subject"),
        ("ce_datacontenttype", "content-type"),
        ("event_type", "event_type"),
        ("traceparent", "traceparent"),
    ],
)
def test_pubsub_names_follow_the_binding(field, attribute):
    assert pubsub_attribute_name(field) == attribute


@pytest.mark.parametrize(
    ("event_type", "ce_type"),
    [
        ("bias.audit.completed", "dev.bias-audit.audit.result.v1"),
        ("bias.audit.alert", "dev.bias-audit.audit.alert.v1"),
        ("bias.audit.deadletter", "dev.bias-audit.audit.deadletter.v1"),
        ("bias.audit.task_suggestion", "dev.bias-audit.audit.task.v1"),
        ("judge.verdict", "dev.bias-audit.judge.verdict.v1"),
    ],
)
def test_types_are_reverse_dns_and_versioned(event_type, ce_type):
    fields = cloudevent_fields(event_type=event_type, key="k", time="2026-11-26T08:00:00Z", subject="s-1")
    assert fields["ce_type"] == ce_type
    assert uuid.UUID(fields["ce_id"]).version == 5
    event = CloudEvent({name[3:]: value for name, value in fields.items() if name != "ce_time"})
    assert event.get_subject() == "s-1" and event.get_specversion() == "1.0"


def test_the_same_event_keeps_its_id_and_another_gets_another():
    one = cloudevent_fields(event_type="bias.audit.completed", key="acme\x1fs-1", time=None, subject="s-1")
    again = cloudevent_fields(event_type="bias.audit.completed", key="acme\x1fs-1", time=None, subject="s-1")
    other_tenant = cloudevent_fields(event_type="bias.audit.completed", key="beta\x1fs-1", time=None, subject="s-1")
    alert = cloudevent_fields(event_type="bias.audit.alert", key="acme\x1fs-1", time=None, subject="s-1")
    assert one["ce_id"] == again["ce_id"]
    assert len({one["ce_id"], other_tenant["ce_id"], alert["ce_id"]}) == 3
    assert "ce_time" not in one


def test_published_inputs_are_cloudevents_on_both_transports():
    line = json.dumps({"session_id": "s-9", "tenant_id": "acme", "timestamp": "2026-11-26T08:00:00Z"}).encode()
    [entry] = entries_for([(1, line)], lambda kind: kind)
    assert entry.fields["ce_type"] == "dev.bias-audit.council.session.v1"
    assert entry.fields["ce_source"] == "/bias-audit/publish" and entry.fields["ce_subject"] == "s-9"
    data, attributes = message_parts(entry.fields)
    assert data == line and attributes["ce-id"] == entry.fields["ce_id"]
    assert attributes["content-type"] == "application/json" and "ce_id" not in attributes
    # a line without its key goes without: nothing to name the event by, and it is dead-lettered
    [bare] = entries_for([(1, b'{"reviews": []}')], lambda kind: kind)
    assert not any(name.startswith("ce_") for name in bare.fields)
