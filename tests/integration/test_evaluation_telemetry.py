"""A real Redis worker with BIAS_AUDIT_OTLP_ENDPOINT set sends each audited council session, LLM
response and judge verdict to a real OTLP/HTTP receiver as gen_ai.evaluation.result log records
(decoded with opentelemetry-proto), in the caller's trace; with the collector down it audits all."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from bias_audit.worker.embedded_redis import free_port
from bias_audit.worker.judge_samples import generate_verdicts
from bias_audit.worker.response_samples import generate_responses
from bias_audit.worker.samples import generate_sessions
from tests.integration.harness import INPUT, VERDICTS, RedisHarness
from tests.otlp_receiver import OtlpReceiver, attributes_of

pytestmark = pytest.mark.redis

RESPONSES = "llm.responses"
CALLER_TRACE, CALLER_SPAN = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"


def inputs() -> dict[str, list[bytes]]:
    sessions = [{**s, "tenant_id": "demo"} for s in generate_sessions(20, seed=81)]
    sessions[0]["trace_id"] = None  # its trace comes from the traceparent below
    responses = generate_responses(20, seed=82)
    responses[0]["query_context"] = {"response_id": "chatcmpl-81"}
    verdicts = generate_verdicts(10, seed=83)[:20]
    return {
        INPUT: [json.dumps(s).encode() for s in sessions],
        RESPONSES: [json.dumps(r).encode() for r in responses],
        VERDICTS: [json.dumps(v).encode() for v in verdicts],
    }


def publish_all(harness: RedisHarness, messages: dict[str, list[bytes]]) -> None:
    first, *rest = messages[INPUT]
    harness.client.xadd(INPUT, {"data": first, "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"})
    for topic, bodies in ((INPUT, rest), (RESPONSES, messages[RESPONSES]), (VERDICTS, messages[VERDICTS])):
        for body in bodies:
            harness.client.xadd(topic, {"data": body})


def test_every_audit_becomes_evaluation_events_in_the_callers_trace(tmp_path, redis_url):
    receiver = OtlpReceiver()
    harness = RedisHarness(tmp_path, redis_url)
    messages = inputs()
    try:
        harness.start(consume="all", otlp_endpoint=receiver.url)
        publish_all(harness, messages)
        results = harness.results(60)
        flags = sum(len(r["bias_type"]) for r in results)
        records = receiver.wait(receiver.log_records, 60 + flags)
    finally:
        assert harness.stop() == [0]
        receiver.close()
    assert receiver.unknown_paths == []
    events = [(record, attributes_of(record)) for record in records]
    assert {record.event_name for record, _ in events} == {"gen_ai.evaluation.result"}
    summaries = [a for _, a in events if a["gen_ai.evaluation.name"] == "bias"]
    # one summary per audited item, of each input; one event per flagged type
    assert Counter(a["bias_audit.source"] for a in summaries) == {
        "council.session": 20,
        "llm.response": 20,
        "judge.verdict": 20,
    }
    assert sorted(a["bias_audit.audit_id"] for a in summaries) == sorted(r["audit_id"] for r in results)
    flagged = Counter(
        (a["bias_audit.audit_id"], a["gen_ai.evaluation.name"])
        for _, a in events
        if a["gen_ai.evaluation.name"] != "bias"
    )
    assert flagged == Counter((r["audit_id"], t) for r in results for t in r["bias_type"])
    assert flags > 0 and all(
        a["gen_ai.evaluation.score.label"] == "flagged" for _, a in events if a["gen_ai.evaluation.name"] != "bias"
    )
    by_audit = {a["bias_audit.audit_id"]: (record, a) for record, a in events if a["gen_ai.evaluation.name"] == "bias"}
    first_session = json.loads(messages[INPUT][0])["session_id"]
    record, _ = by_audit[first_session]
    assert (record.trace_id.hex(), record.span_id.hex()) == (CALLER_TRACE, CALLER_SPAN)
    first_response = json.loads(messages[RESPONSES][0])["audit_id"]
    assert by_audit[first_response][1]["gen_ai.response.id"] == "chatcmpl-81"
    for result in results:  # the rest in the trace their results name, with no span
        record, attributes = by_audit[result["audit_id"]]
        if result["audit_id"] == first_session:
            continue
        if len(result["trace_id"]) == 32:
            assert record.trace_id.hex() == result["trace_id"] and record.span_id == b""
        else:  # not a W3C id: on the event instead
            assert attributes["bias_audit.trace_id"] == result["trace_id"] and record.trace_id == b""


def test_a_down_collector_loses_telemetry_never_audits(tmp_path, redis_url):
    harness = RedisHarness(tmp_path, redis_url)
    try:
        harness.start(consume="all", otlp_endpoint=f"http://127.0.0.1:{free_port()}")  # nothing listens
        publish_all(harness, inputs())
        results = harness.results(60)
    finally:
        assert harness.stop() == [0]
    assert len({r["audit_id"] for r in results}) == 60 and harness.alive() is False
