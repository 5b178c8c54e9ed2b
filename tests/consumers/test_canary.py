"""The raw query never reaches a log line (at DEBUG), a dead letter, a result or the API's
answer, whatever shape the body has; only the operator's raw stream may hold it."""

from __future__ import annotations

import asyncio
import io
import json
import logging

import pytest
from fastapi.testclient import TestClient

from bias_audit.consumers.council import CouncilSessionProcessor
from bias_audit.consumers.responses import ResponseProcessor
from bias_audit.consumers.router import EventRouter
from bias_audit.lexicons.load import shipped_lexicons
from bias_audit.lexicons.sentiment import vader_scorer
from bias_audit.producers.wire import OutputTopics, wire_fields
from bias_audit.state.memory_window import MemoryWindow
from bias_audit.worker.composition import api_app
from bias_audit.worker.logging_setup import configure_logging
from bias_audit.worker.memory_worker import MemoryBroker, MemoryWorker
from bias_audit.worker.settings import Settings
from tests.builders import council_event

CANARY = "CANARY-90d1-raw-user-query"
RAW = "bias.audit.deadletter.raw"


def session(**fields) -> dict:
    return council_event({"M1": {"M1": 9, "M2": 6}, "M2": {"M1": 7, "M2": 8}}, query=CANARY, **fields)


def response(**fields) -> dict:
    return {
        "audit_id": "a-1",
        "timestamp": "2026-11-20T10:30:00Z",
        "original_query": CANARY,
        "llm_response": "Fine.",
        **fields,
    }


def with_number(document: dict, number: str) -> bytes:
    """The document with its first score (or token count) replaced by text JSON does not allow."""
    text = json.dumps(document)
    for old in ('"Response A": 9', '"prompt_tokens": 1'):
        if old in text:
            return text.replace(old, old.split(":")[0] + ": " + number, 1).encode()
    raise AssertionError("nothing to replace")


HOSTILE = [
    with_number(session(session_id="nan"), "NaN"),
    with_number(session(session_id="inf"), "Infinity"),
    with_number(response(audit_id="big", prompt_tokens=1), "1e400"),
    json.dumps(session(session_id="comma"))[:-1].encode() + b",}",  # trailing comma
    b"\xff" + json.dumps(session(session_id="latin")).encode(),  # not UTF-8
    json.dumps([session(session_id="listed")]).encode(),  # a top-level list
    json.dumps({**session(session_id="late"), "timestamp": "9999-12-31T00:00:00Z"}).encode(),
    json.dumps({**response(audit_id="bad"), "llm_response": 42}).encode(),
    json.dumps(session(session_id="good")).encode(),  # and one that is fine
]


def run_worker_on(bodies: list[bytes], log: io.StringIO) -> MemoryBroker:
    broker = MemoryBroker()
    for body in bodies:
        broker.send("council.sessions", wire_fields(body, event_type="x", tenant_id=None, trace_id=None))
    window = MemoryWindow()
    router = EventRouter(
        CouncilSessionProcessor(window=window, store=None),
        ResponseProcessor(window=window, store=None, lexicons=shipped_lexicons(), sentiment=vader_scorer()),
        llm_topic="llm.responses",
        council_topic="audit-file",
    )  # by fields, as `audit` reads
    configure_logging("DEBUG", log)
    try:
        asyncio.run(
            MemoryWorker(
                broker, router, topic="council.sessions", outputs=OutputTopics(raw_deadletter=RAW)
            ).run_until_idle()
        )
    finally:
        logging.getLogger().handlers.clear()
    return broker


def test_the_query_reaches_no_log_line_and_no_dead_letter_at_debug():
    log = io.StringIO()
    broker = run_worker_on(HOSTILE, log)
    letters = broker.documents("bias.audit.deadletter")
    results = broker.documents("bias.audit.stream")
    assert [r["audit_id"] for r in results] == ["good"]
    assert len(letters) == len(HOSTILE) - 1
    assert log.getvalue().count("\n") >= len(HOSTILE)  # it did log, at DEBUG
    assert CANARY not in log.getvalue()
    assert CANARY not in json.dumps(letters) and CANARY not in json.dumps(results)
    reasons = " | ".join(letter["error"] for letter in letters)
    for expected in (
        "reviews.0.scores.Response A: NaN",
        "prompt_tokens: NaN, Infinity and numbers beyond",
        "trailing comma",
        "not UTF-8",
        "not an array",
        "ahead of this worker's clock",
        "llm_response: Input should be a valid string",
    ):
        assert expected in reasons


def test_the_operator_raw_stream_keeps_what_the_dead_letter_omits():
    broker = run_worker_on(HOSTILE, io.StringIO())
    raw = broker.documents(RAW)
    omitted = [
        letter for letter in broker.documents("bias.audit.deadletter") if letter["payload_encoding"] == "omitted"
    ]
    assert len(raw) == len(omitted) == 6  # NaN, Infinity, 1e400, trailing comma, not UTF-8, a list
    assert sum(CANARY in json.dumps(letter["payload"]) for letter in raw) == 5  # all but the base64 one
    assert {letter["payload_sha256"] for letter in raw} == {letter["payload_sha256"] for letter in omitted}


def test_the_api_answers_a_4xx_and_logs_no_query_at_debug(tmp_path):
    log = io.StringIO()
    client = TestClient(
        api_app(Settings(data_dir=tmp_path, consumer_name="c")),
        base_url="http://localhost",
    )
    configure_logging("DEBUG", log)
    try:
        replies = [
            client.post("/audit-session", content=body, headers={"content-type": "application/json"})
            for body in HOSTILE[:-1]
        ]
    finally:
        logging.getLogger().handlers.clear()
    assert [reply.status_code for reply in replies] == [400, 400, 400, 400, 400, 400, 422, 422]
    assert all(reply.headers["content-type"] == "application/problem+json" for reply in replies)
    assert replies[0].json()["detail"].startswith("reviews.0.scores.Response A: NaN")
    assert CANARY not in log.getvalue() and not any(CANARY in reply.text for reply in replies)


@pytest.mark.parametrize("model", ["CouncilSessionEvent", "LLMResponseEvent"])
def test_a_validation_error_quotes_no_input(model):
    from pydantic import ValidationError

    from bias_audit.schemas import events

    with pytest.raises(ValidationError) as caught:
        getattr(events, model).model_validate({"query": CANARY, "original_query": CANARY, "timestamp": CANARY})
    assert CANARY not in str(caught.value)


def test_a_body_too_deep_to_serialize_reaches_the_raw_stream_as_text():
    deep = ('{"query": "%s", "a": ' % CANARY + '{"b": ' * 300 + "1" + "}" * 300 + "}").encode()
    broker = run_worker_on([deep, json.dumps(session(session_id="good")).encode()], io.StringIO())
    [letter] = broker.documents("bias.audit.deadletter")
    [raw] = broker.documents(RAW)
    assert letter["payload_encoding"] == "omitted" and CANARY not in json.dumps(letter)
    assert raw["payload_encoding"] == "text" and raw["payload"] == deep.decode()
    assert [r["audit_id"] for r in broker.documents("bias.audit.stream")] == ["good"]
