"""The AsyncAPI 3 document for every topic and payload, on both transports, from the models.

FastStream documents only the subscribers and publishers it runs; our outputs are published
with plain redis-py / google-cloud-pubsub (to keep the wire format free of its envelope), so the
document is built here from the same pydantic models, and a test fails when it drifts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from .events import CouncilSessionEvent, LLMResponseEvent
from .judges import JudgeVerdictEvent
from .results import Alert, AuditResult, DeadLetter
from .tasks import TaskSuggestion

ASYNCAPI_PATH = Path(__file__).parent / "asyncapi.json"

# (channel id, default topic name, message name, model, direction, what it carries)
CHANNELS: list[tuple[str, str, str, type[BaseModel], str, str]] = [
    (
        "councilSessions",
        "council.sessions",
        "CouncilSessionEvent",
        CouncilSessionEvent,
        "receive",
        "Council session events, one per session; session_id is the idempotency key.",
    ),
    (
        "llmResponses",
        "llm.responses",
        "LLMResponseEvent",
        LLMResponseEvent,
        "receive",
        "Single LLM interaction events.",
    ),
    (
        "judgeVerdicts",
        "judge.verdicts",
        "JudgeVerdictEvent",
        JudgeVerdictEvent,
        "receive",
        "One LLM judge's verdict on one item (pairwise, probability or scores); verdict_id is the idempotency key.",
    ),
    (
        "auditStream",
        "bias.audit.stream",
        "AuditResult",
        AuditResult,
        "send",
        "One audit result per input event, tagged with its trace_id.",
    ),
    (
        "alerts",
        "bias.audit.alerts",
        "Alert",
        Alert,
        "send",
        "Anomaly and trend alerts: one firing per onset, one resolved when it clears.",
    ),
    (
        "tasks",
        "bias.audit.tasks",
        "TaskSuggestion",
        TaskSuggestion,
        "send",
        "A bias that keeps needing mitigation in one tenant's domain: one suggestion per onset.",
    ),
    (
        "deadLetters",
        "bias.audit.deadletter",
        "DeadLetter",
        DeadLetter,
        "send",
        "Events that could not be processed, with the reason.",
    ),
]

_CE = (
    "CloudEvents 1.0, binary content mode: on Pub/Sub the `ce-` attribute of the Google Cloud Pub/Sub "
    "protocol binding, on Redis Streams the same name with `ce_`"
)
WIRE_HEADERS = {
    "type": "object",
    "description": "Redis Streams: plain entry fields beside `data`; Pub/Sub: message attributes. Every output "
    "is a CloudEvent in binary content mode (the body stays the JSON document): Pub/Sub carries "
    "ce-specversion, ce-id, ce-source, ce-type, ce-time, ce-subject and content-type; Redis "
    "Streams the same as ce_specversion, ce_id, ..., ce_datacontenttype. Inputs may carry them "
    "too: the contract's ids (session_id, audit_id, verdict_id) stay the idempotency keys, the "
    "input's ce-id is kept beside them as the result's cloudevent_id, and a ce-traceparent "
    "(distributed tracing extension) counts as the traceparent.",
    "properties": {
        "event_type": {"type": "string"},
        "tenant_id": {"type": "string"},
        "trace_id": {"type": "string"},
        "traceparent": {"type": "string", "description": "W3C trace context carrying trace_id"},
        "ce-specversion": {"type": "string", "const": "1.0", "description": _CE},
        "ce-id": {
            "type": "string",
            "description": _CE + "; derived from what the message is about, so a message "
            "published again is the same event",
        },
        "ce-source": {
            "type": "string",
            "description": _CE + "; /bias-audit/worker (outputs) or /bias-audit/publish (bias-audit publish)",
        },
        "ce-type": {
            "type": "string",
            "description": _CE + "; dev.bias-audit.audit.result.v1, .audit.alert.v1, "
            ".audit.task.v1, .audit.deadletter.v1 (outputs); "
            ".council.session.v1, .llm.response.v1, "
            ".judge.verdict.v1 (inputs)",
        },
        "ce-time": {"type": "string", "format": "date-time", "description": _CE},
        "ce-subject": {
            "type": "string",
            "description": _CE + "; the session / audit / verdict id (results), "
            "the session that tipped an alert, the task id, "
            "the dead letter's input message id",
        },
        "content-type": {
            "type": "string",
            "const": "application/json",
            "description": "CloudEvents datacontenttype (Redis Streams: ce_datacontenttype)",
        },
    },
}


def build_asyncapi() -> dict[str, Any]:
    models: list[tuple[type[BaseModel], Literal["validation"]]] = [
        (model, "validation") for _, _, _, model, _, _ in CHANNELS
    ]
    _, definitions = models_json_schema(models, ref_template="#/components/schemas/{model}")
    schemas = definitions.get("$defs", {})
    channels, operations, messages = {}, {}, {}
    for channel_id, topic, message, model, direction, text in CHANNELS:
        messages[message] = {
            "name": message,
            "contentType": "application/json",
            "headers": {"$ref": "#/components/schemas/WireHeaders"},
            "payload": {"$ref": f"#/components/schemas/{model.__name__}"},
        }
        channels[channel_id] = {
            "address": topic,
            "description": text,
            "messages": {message: {"$ref": f"#/components/messages/{message}"}},
            "bindings": {
                "redis": {"bindingVersion": "0.1.0"},
                "googlepubsub": {"bindingVersion": "0.2.0"},
            },
        }
        operations[f"{direction}{channel_id[0].upper()}{channel_id[1:]}"] = {
            "action": direction,
            "channel": {"$ref": f"#/channels/{channel_id}"},
            "messages": [{"$ref": f"#/channels/{channel_id}/messages/{message}"}],
        }
    schemas["WireHeaders"] = WIRE_HEADERS
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "bias-audit",
            "version": "0.1.0",
            "description": "Audits bias in LLM councils and LLM responses. The message body is the JSON "
            "document, UTF-8, on both transports (no framework envelope).",
        },
        "defaultContentType": "application/json",
        "servers": {
            "redis": {
                "host": "localhost:6379",
                "protocol": "redis",
                "description": "Redis Streams: one entry per message, field `data` = the document; "
                "consumer group `bias-audit`.",
            },
            "pubsub": {
                "host": "pubsub.googleapis.com",
                "protocol": "googlepubsub",
                "description": "Google Cloud Pub/Sub: topic per channel, subscription `<topic>.bias-audit` for inputs.",
            },
        },
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages, "schemas": dict[str, Any](sorted(schemas.items()))},
    }


def render_asyncapi() -> str:
    return json.dumps(build_asyncapi(), indent=2, sort_keys=True) + "\n"
