"""llm.responses end to end, on a real redis-server and on Google's Pub/Sub emulator: each
response gets exactly one result (duplicates too), bad messages get dead letters with reasons,
the interaction records hold no raw query, and the worker lives through it all."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import redis
from google.cloud import pubsub_v1

from bias_audit.producers.redis_streams import wire_fields
from bias_audit.storage.jsonl_store import read_records
from bias_audit.worker.response_samples import WEAK, generate_responses
from tests.integration import test_pubsub_worker as pubsub_helpers
from tests.integration.test_redis_worker import start_worker, stop, wait_for

RESULTS, DEAD, LLM = "bias.audit.stream", "bias.audit.deadletter", "llm.responses"
QUERY = "How should we roll out the new service?"  # every sample's original_query
BAD = [b"not json", json.dumps({"audit_id": "x-1", "timestamp": "2026-11-20T10:30:00Z"}).encode()]


def corpus() -> tuple[list[dict], list[bytes]]:
    events = generate_responses(60, seed=3)
    bodies = [json.dumps(e).encode() for e in events]
    return events, bodies + bodies[:10] + BAD  # ten delivered twice


def xadd_all(client: redis.Redis, stream: str, bodies: list[bytes], event_type: str) -> None:
    pipe = client.pipeline(transaction=False)
    for body in bodies:
        pipe.xadd(stream, wire_fields(body, event_type=event_type, tenant_id="demo", trace_id=None))
    pipe.execute()


def check(events: list[dict], results: list[dict], dead: list[dict], data_dir) -> None:
    per_id = Counter(r["audit_id"] for r in results)
    assert per_id == Counter({e["audit_id"]: 1 for e in events})
    assert all(r["source"] == "llm.response" for r in results)
    injected = {e["audit_id"]: e["query_context"]["injected"] for e in events}
    for result in results:  # the injected biases are found; the neutral answers and weak signals are left alone
        kind = injected[result["audit_id"]]
        if kind in WEAK:  # scored, not flagged (the members' answers may still disagree about the group)
            assert result["bias_score"][kind] > 0 and kind not in result["bias_type"], result["audit_id"]
        else:
            assert result["bias_detected"] is (kind is not None), result["audit_id"]
    assert sorted(d["error_type"] for d in dead) == ["invalid_event", "invalid_json"]
    assert any("llm_response: required field is missing" in d["error"] for d in dead)
    records = list(read_records([data_dir / "interactions"]))
    assert Counter(r["audit_id"] for r in records) == per_id
    assert all(QUERY not in path.read_text() for path in (data_dir / "interactions").glob("*.jsonl"))


@pytest.mark.redis
@pytest.mark.slow
def test_responses_on_redis_streams(redis_url, tmp_path):
    client = redis.Redis.from_url(redis_url)
    events, bodies = corpus()
    xadd_all(client, LLM, bodies, "llm.response")
    worker = start_worker(redis_url, tmp_path, "r1", consume="responses", batch_size=25)
    try:
        wait_for(lambda: client.xlen(RESULTS) >= 60 and client.xlen(DEAD) >= 2, what="results and dead letters")
        assert worker.poll() is None
    finally:
        stop(worker)
    results = [json.loads(f[b"data"]) for _, f in client.xrange(RESULTS)]
    dead = [json.loads(f[b"data"]) for _, f in client.xrange(DEAD)]
    check(events, results, dead, tmp_path)
    assert client.xpending(LLM, "bias-audit")["pending"] == 0  # every entry acknowledged


@pytest.mark.redis
@pytest.mark.pubsub
@pytest.mark.slow
def test_responses_on_pubsub(pubsub_project, redis_url, tmp_path):
    pubsub_helpers.setup_project(pubsub_project)
    events, bodies = corpus()
    results_reader = pubsub_helpers.Reader(pubsub_project, RESULTS)
    dead_reader = pubsub_helpers.Reader(pubsub_project, DEAD)
    worker = pubsub_helpers.start_worker(pubsub_project, redis_url, tmp_path, "p1", consume="responses")
    publisher = pubsub_v1.PublisherClient()
    try:
        topic = publisher.topic_path(pubsub_project, LLM)
        for future in [publisher.publish(topic, body, event_type="llm.response") for body in bodies]:
            future.result(timeout=60)
        results = results_reader.until(60)
        dead = dead_reader.until(2, settle=1.0)
        assert worker.poll() is None
    finally:
        publisher.stop()
        results_reader.close()
        dead_reader.close()
        assert pubsub_helpers.stop(worker) == [0]
    check(events, results, dead, tmp_path)


@pytest.mark.redis
@pytest.mark.slow
def test_one_worker_consumes_both_inputs(redis_url, tmp_path):
    """`--consume all` (the default): council sessions and LLM responses in one process."""
    from bias_audit.worker.samples import generate_sessions

    client = redis.Redis.from_url(redis_url)
    events, bodies = corpus()
    xadd_all(client, LLM, bodies, "llm.response")
    xadd_all(
        client, "council.sessions", [json.dumps(s).encode() for s in generate_sessions(20, seed=8)], "council.session"
    )
    worker = start_worker(redis_url, tmp_path, "both", consume="all", batch_size=25)
    try:
        wait_for(lambda: client.xlen(RESULTS) >= 80 and client.xlen(DEAD) >= 2, what="both inputs' results")
        assert worker.poll() is None
    finally:
        stop(worker)  # one SIGTERM drains both inputs and exits 0
    results = [json.loads(f[b"data"]) for _, f in client.xrange(RESULTS)]
    assert Counter(r["source"] for r in results) == {"llm.response": 60, "council.session": 20}
    check(
        events,
        [r for r in results if r["source"] == "llm.response"],
        [json.loads(f[b"data"]) for _, f in client.xrange(DEAD)],
        tmp_path,
    )
    assert len(list(read_records([tmp_path / "records"]))) > 0  # council records in their own files
    for stream in (LLM, "council.sessions"):
        assert client.xpending(stream, "bias-audit")["pending"] == 0


@pytest.mark.redis
@pytest.mark.pubsub
@pytest.mark.slow
def test_one_pubsub_worker_consumes_both_subscriptions(pubsub_project, redis_url, tmp_path):
    from bias_audit.worker.samples import generate_sessions

    pubsub_helpers.setup_project(pubsub_project)
    events, bodies = corpus()
    sessions = generate_sessions(20, seed=8)
    results_reader = pubsub_helpers.Reader(pubsub_project, RESULTS)
    worker = pubsub_helpers.start_worker(pubsub_project, redis_url, tmp_path, "both", consume="all")
    publisher = pubsub_v1.PublisherClient()
    try:
        futures = [publisher.publish(publisher.topic_path(pubsub_project, LLM), body) for body in bodies]
        futures += [
            publisher.publish(publisher.topic_path(pubsub_project, "council.sessions"), json.dumps(s).encode())
            for s in sessions
        ]
        for future in futures:
            future.result(timeout=60)
        results = results_reader.until(80)
        assert worker.poll() is None
    finally:
        publisher.stop()
        results_reader.close()
        assert pubsub_helpers.stop(worker) == [0]
    assert Counter(r["source"] for r in results) == {"llm.response": 60, "council.session": 20}
    assert Counter(r["audit_id"] for r in results if r["source"] == "llm.response") == Counter(
        {e["audit_id"]: 1 for e in events}
    )
