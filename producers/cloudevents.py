"""CloudEvents 1.0 attributes for our messages, in binary content mode: the body stays the JSON
document and the attributes ride beside it, as `ce_*` fields on Redis Streams and, through
`pubsub_attribute_name`, as the Pub/Sub binding's `ce-*` attributes (datacontenttype as content-type).
Ids are derived from what the message is about, so a message published again is the same event."""

from __future__ import annotations

import uuid

SPEC_VERSION = "1.0"
SOURCE = "/bias-audit/worker"
DATA_CONTENT_TYPE = "application/json"
_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://bias-audit.dev/cloudevents")

# our event_type -> the CloudEvents type, versioned as the consumers of each rely on its shape
TYPES = {
    "bias.audit.completed": "dev.bias-audit.audit.result.v1",
    "bias.audit.alert": "dev.bias-audit.audit.alert.v1",
    "bias.audit.deadletter": "dev.bias-audit.audit.deadletter.v1",
    "bias.audit.task_suggestion": "dev.bias-audit.audit.task.v1",
    "council.session": "dev.bias-audit.council.session.v1",
    "llm.response": "dev.bias-audit.llm.response.v1",
    "judge.verdict": "dev.bias-audit.judge.verdict.v1",
}


def cloudevent_type(event_type: str) -> str:
    return TYPES.get(event_type, "dev.bias-audit.unknown.v1")


def cloudevent_fields(
    *, event_type: str, key: str, time: str | None, subject: str | None, source: str = SOURCE
) -> dict[str, str]:
    """The `ce_*` fields of one message; `key` names the event among all of its type."""
    ce_type = cloudevent_type(event_type)
    fields = {
        "ce_specversion": SPEC_VERSION,
        "ce_id": str(uuid.uuid5(_ID_NAMESPACE, f"{ce_type}\x1f{key}")),
        "ce_source": source,
        "ce_type": ce_type,
        "ce_datacontenttype": DATA_CONTENT_TYPE,
    }
    if time:
        fields["ce_time"] = time
    if subject:
        fields["ce_subject"] = subject
    return fields


def pubsub_attribute_name(field: str) -> str:
    """A wire field's Pub/Sub attribute name under the CloudEvents Pub/Sub binding."""
    if field == "ce_datacontenttype":
        return "content-type"
    if field.startswith("ce_"):
        return "ce-" + field[3:]
    return field
