"""The committed AsyncAPI 3 document matches the models and the topics the worker uses."""

import json

from bias_audit.schemas import asyncapi
from bias_audit.schemas.asyncapi import ASYNCAPI_PATH, build_asyncapi, render_asyncapi
from bias_audit.schemas.results import DeadLetter
from bias_audit.worker.settings import Settings


def test_committed_asyncapi_matches_the_models():
    assert ASYNCAPI_PATH.read_text(encoding="utf-8") == render_asyncapi(), "run `bias-audit schemas` and commit"


def test_a_changed_model_changes_the_document(monkeypatch):
    class DeadLetterV2(DeadLetter):
        retry_after_s: float | None = None

    before = build_asyncapi()
    changed = [
        (c, t, m, DeadLetterV2 if model is DeadLetter else model, d, x) for c, t, m, model, d, x in asyncapi.CHANNELS
    ]
    monkeypatch.setattr(asyncapi, "CHANNELS", changed)
    after = build_asyncapi()
    assert "retry_after_s" in after["components"]["schemas"]["DeadLetterV2"]["properties"]
    assert render_asyncapi() != json.dumps(before, indent=2, sort_keys=True) + "\n"


def test_every_topic_of_both_transports_is_documented_with_its_payload():
    document = json.loads(ASYNCAPI_PATH.read_text())
    settings = Settings()
    topics = {
        settings.council_topic,
        settings.llm_topic,
        settings.verdicts_topic,
        settings.result_topic,
        settings.alerts_topic,
        settings.tasks_topic,
        settings.deadletter_topic,
    }
    assert {c["address"] for c in document["channels"].values()} == topics
    assert document["asyncapi"].startswith("3.") and {s["protocol"] for s in document["servers"].values()} == {
        "redis",
        "googlepubsub",
    }
    for channel in document["channels"].values():
        [message_ref] = channel["messages"].values()
        message = document["components"]["messages"][message_ref["$ref"].rsplit("/", 1)[1]]
        payload = message["payload"]["$ref"].rsplit("/", 1)[1]
        assert document["components"]["schemas"][payload]["properties"]
        assert set(channel["bindings"]) == {"redis", "googlepubsub"}
    actions = {op["action"] for op in document["operations"].values()}
    assert actions == {"send", "receive"}
    headers = document["components"]["schemas"]["WireHeaders"]["properties"]
    # every attribute a Pub/Sub output carries is documented, by the name Pub/Sub carries it under
    from bias_audit.producers.cloudevents import cloudevent_fields, pubsub_attribute_name

    emitted = cloudevent_fields(event_type="bias.audit.completed", key="k", time="2026-11-26T00:00:00Z", subject="s")
    assert set(headers) == {"event_type", "tenant_id", "trace_id", "traceparent"} | {
        pubsub_attribute_name(name) for name in emitted
    }
