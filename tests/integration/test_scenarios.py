"""One scenario suite, run on every transport: the in-memory broker, Redis Streams and Pub/Sub.
What a transport must guarantee is written once; transport-specific behaviour (a killed worker,
an outage, scaling, the subscription's own dead-letter policy) stays in the per-transport files."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from bias_audit.storage.jsonl_store import read_records
from bias_audit.worker.samples import generate_sessions
from tests.integration.harness import MemoryHarness, PubSubHarness, RedisHarness


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis),
                        pytest.param("pubsub", marks=[pytest.mark.pubsub, pytest.mark.redis])])
def transport(request, tmp_path):
    if request.param == "memory":
        harness = MemoryHarness(tmp_path)
    elif request.param == "redis":
        harness = RedisHarness(tmp_path, request.getfixturevalue("redis_url"))
    else:
        harness = PubSubHarness(tmp_path, request.getfixturevalue("redis_url"),
                                request.getfixturevalue("pubsub_project"))
    yield harness
    assert set(harness.stop()) <= {0}  # every worker drained and exited cleanly


def bodies(sessions: list[dict]) -> list[bytes]:
    return [json.dumps({**s, "tenant_id": "demo"}).encode() for s in sessions]


def test_duplicates_are_counted_once_and_two_workers_share_the_load(transport, tmp_path):
    sessions = generate_sessions(120, seed=71)
    transport.start(workers=2, batch_size=10, window_sessions=1000)
    transport.publish(bodies(sessions) + bodies(sessions[:30]))  # a quarter delivered twice
    got = transport.results(120)
    assert sorted(r["audit_id"] for r in got) == sorted(s["session_id"] for s in sessions)  # once each
    assert max(r["window"]["sessions"] for r in got) == 120  # each counted once in the shared window
    transport.stop()
    records = list(read_records([tmp_path / "records"]))
    per_pair = Counter((r["session_id"], r["reviewer_id"], r["model_id"]) for r in records)
    assert len(per_pair) == 120 * 25 and set(per_pair.values()) == {1}  # one record per scored pair
    files = sorted((tmp_path / "records").glob("*.jsonl"))
    assert len(files) == 2 and all(f.stat().st_size > 0 for f in files)  # both workers took a share


MALFORMED = {
    b"not json": "invalid_json",
    b"\xff\xfe\x00": "invalid_json",
    b"[1, 2]": "invalid_json",
    b'{"session_id": "x", "query": "sample private question"}': "invalid_event",
    json.dumps({"audit_id": "llm-1", "timestamp": "2026-11-20T10:30:00Z", "llm_response": "x"}).encode(): "wrong_topic",
}


def test_malformed_events_become_dead_letters_with_reasons_and_the_worker_lives(transport):
    good = generate_sessions(3, seed=72)
    transport.start(batch_size=10)
    transport.publish(list(MALFORMED) + bodies(good))
    letters = transport.dead_letters(len(MALFORMED))
    got = transport.results(3)
    assert transport.alive()
    assert sorted(r["audit_id"] for r in got) == sorted(s["session_id"] for s in good)
    assert Counter(letter["error_type"] for letter in letters) == Counter(MALFORMED.values())
    assert all(letter["error"] and "\n" not in letter["error"] and letter["source_topic"] == "council.sessions"
               for letter in letters)
    # not JSON, not UTF-8, not an object: by size and hash only; the JSON objects keep their fields
    omitted = sorted(letter["payload_bytes"] for letter in letters if letter["payload_encoding"] == "omitted")
    assert omitted == sorted([len(b"not json"), len(b"\xff\xfe\x00"), len(b"[1, 2]")])
    assert all("sample private question" not in json.dumps(letter["payload"]) for letter in letters)


def test_results_are_plain_json_with_the_contract_fields(transport, tmp_path):
    session = {**generate_sessions(1, seed=73)[0], "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"}
    transport.start()
    transport.publish(bodies([session]))
    [result] = transport.results(1)
    [fields] = transport.result_fields()
    assert set(fields) == {"event_type", "tenant_id", "trace_id", "traceparent"}
    assert fields["event_type"] == result["event_type"] == "bias.audit.completed"
    assert fields["trace_id"] == result["trace_id"] == session["trace_id"]
    assert fields["tenant_id"] == result["tenant_id"] == "demo"
    assert fields["traceparent"].split("-")[1] == session["trace_id"]
    transport.stop()
    record = next(read_records([tmp_path / "records"]))
    assert record["trace_id"] == session["trace_id"]


CANARY = "CANARY-3b7d-raw-user-query"


def test_the_raw_query_reaches_no_log_line_and_no_dead_letter_at_debug(transport):
    session = {**generate_sessions(1, seed=74)[0], "tenant_id": "demo", "query": CANARY}
    text = json.dumps(session)
    first_score = text.index('"scores": {') + len('"scores": {')
    colon = text.index(":", first_score)
    hostile = [
        (text[:colon + 1] + " NaN" + text[text.index(",", colon):]).encode(),  # a score JSON does not have
        text[:-1].encode() + b",}",  # a trailing comma
        b"\xff" + text.encode(),  # not UTF-8
        json.dumps([session]).encode(),  # not an object
        json.dumps({**session, "timestamp": "9999-12-31T00:00:00Z"}).encode(),  # from the future
        json.dumps({**session, "session_id": "fine"}).encode(),
    ]
    transport.start(log_level="DEBUG")
    transport.publish(hostile)
    letters = transport.dead_letters(len(hostile) - 1)
    [result] = transport.results(1)
    transport.stop()
    logs = transport.logs()
    assert result["audit_id"] == "fine" and len(letters) == len(hostile) - 1
    assert '"level":"debug"' in logs or '"level":"info"' in logs  # it did log, below WARNING
    assert CANARY not in logs and CANARY not in json.dumps(letters) and CANARY not in json.dumps(result)
    assert sorted(letter["payload_encoding"] for letter in letters) == ["json", "omitted", "omitted", "omitted",
                                                                        "omitted"]
