"""End to end on a real redis-server with real worker processes."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
import redis

from bias_audit.producers.redis_streams import wire_fields
from bias_audit.storage.jsonl_store import read_records, unique_records
from bias_audit.worker.samples import generate_sessions
from tests.integration.harness import wait_for
from tests.services import run_cli, spawn_worker

pytestmark = [pytest.mark.redis, pytest.mark.slow]
RESULTS, DEAD, INPUT = "bias.audit.stream", "bias.audit.deadletter", "council.sessions"


def start_worker(url: str, data_dir: Path, name: str, **env) -> subprocess.Popen:
    environment = {
        "BIAS_AUDIT_BROKER_URL": url,
        "BIAS_AUDIT_DATA_DIR": str(data_dir),
        "BIAS_AUDIT_CONSUMER_NAME": name,
        "BIAS_AUDIT_CLAIM_IDLE_MS": "1500",
        "BIAS_AUDIT_RECLAIM_INTERVAL_S": "0.5",
        "BIAS_AUDIT_LOG_LEVEL": "WARNING",
        "BIAS_AUDIT_OPS_PORT": "0",  # several workers on one host
        "BIAS_AUDIT_CONSUME": "council",  # one stream: the reader counts below are per stream
        **{f"BIAS_AUDIT_{k.upper()}": str(v) for k, v in env.items()},
    }
    return spawn_worker(environment, data_dir / f"{name}.log")


def publish(client: redis.Redis, documents) -> None:
    pipe = client.pipeline(transaction=False)
    for document in documents:
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        pipe.xadd(INPUT, wire_fields(body, event_type="council.session", tenant_id="demo", trace_id=None))
    pipe.execute()


def results(client) -> list[dict]:
    return [json.loads(fields[b"data"]) for _, fields in client.xrange(RESULTS)]


def stop(*workers) -> None:
    for worker in workers:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
    for worker in workers:
        assert worker.wait(timeout=30) == 0


def blocked_readers(client) -> int:
    # Redis 6.2 creates a group consumer only when it is given entries; a reader waiting on an
    # empty stream shows as a client whose last command is XREADGROUP.
    return sum(1 for c in client.client_list() if c.get("cmd") == "xreadgroup")


def window_keys(client, tenant="demo"):
    return client.zcard(f"bias-audit:{{{tenant}}}:order"), client.hgetall(f"bias-audit:{{{tenant}}}:sums")


def test_a_worker_killed_mid_stream_loses_nothing_and_counts_nothing_twice(redis_url, tmp_path):
    client = redis.Redis.from_url(redis_url)
    total = 1500
    publish(client, generate_sessions(total, seed=12))
    victim = start_worker(redis_url, tmp_path, "victim", batch_size=10, window_sessions=10000)
    survivor = start_worker(redis_url, tmp_path, "survivor", batch_size=10, window_sessions=10000)
    try:
        wait_for(lambda: client.xlen(RESULTS) >= 200, what="work under way")
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
        wait_for(lambda: client.xlen(RESULTS) >= total, timeout=120, what="the survivor finishing")
        wait_for(lambda: client.xpending(INPUT, "bias-audit")["pending"] == 0, what="all acked")
        time.sleep(1.0)
    finally:
        stop(survivor)
    got = results(client)
    assert len(got) == total and len({r["audit_id"] for r in got}) == total
    sessions_in_window, sums = window_keys(client)
    assert sessions_in_window == total and int(sums[b"p:n"]) == total * 5
    unique = list(unique_records(read_records([tmp_path / "records"])))
    assert len(unique) == total * 25


def test_an_entry_without_a_data_field_is_dead_lettered_and_the_worker_lives(redis_url, tmp_path):
    # the wire-format scenarios shared by every transport are in test_scenarios.py
    client = redis.Redis.from_url(redis_url)
    worker = start_worker(redis_url, tmp_path, "w1")
    try:
        client.xadd(INPUT, {"no_data_field": "1"})
        publish(client, generate_sessions(1, seed=13))
        wait_for(lambda: client.xlen(DEAD) >= 1 and client.xlen(RESULTS) >= 1, what="a dead letter and a result")
        assert worker.poll() is None
    finally:
        stop(worker)
    [letter] = [json.loads(fields[b"data"]) for _, fields in client.xrange(DEAD)]
    assert letter["error_type"] == "invalid_json" and "empty" in letter["error"]


def test_worker_windows_equal_the_in_process_audit(redis_url, tmp_path):
    client = redis.Redis.from_url(redis_url)
    sessions = generate_sessions(60, seed=15)
    path = tmp_path / "sessions.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in sessions))
    publish(client, sessions)
    worker = start_worker(redis_url, tmp_path, "w1", window_sessions=40)
    try:
        wait_for(lambda: client.xlen(RESULTS) >= 60, what="60 results")
    finally:
        stop(worker)
    offline = run_cli("audit", str(path), "--window-sessions", "40", env={"BIAS_AUDIT_LOG_LEVEL": "WARNING"})
    assert offline.returncode == 0, offline.stderr
    live = {r["audit_id"]: r for r in results(client)}
    for line in offline.stdout.splitlines():
        expected = json.loads(line)
        assert live[expected["audit_id"]]["window"] == expected["window"]
        assert live[expected["audit_id"]]["audit"] == expected["audit"]


def test_sigterm_drains_and_exits_cleanly(redis_url, tmp_path):
    client = redis.Redis.from_url(redis_url)
    publish(client, generate_sessions(300, seed=16))
    worker = start_worker(redis_url, tmp_path, "w1", batch_size=50)
    wait_for(lambda: client.xlen(RESULTS) >= 1, what="work under way")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    info = client.xpending(INPUT, "bias-audit")
    assert info["pending"] == 0  # nothing left half-done: what was read was finished and acked


def test_window_redis_outage_is_retried_and_nothing_is_acked_early(redis_url, tmp_path):
    """The windows live on a second redis-server that goes away mid-stream (AOF keeps its data):
    the worker keeps the batch pending while it retries, then finishes every session exactly once."""
    from bias_audit.worker.embedded_redis import EmbeddedRedis

    client = redis.Redis.from_url(redis_url)
    client.flushall()
    window_server = EmbeddedRedis(tmp_path / "window-redis", persist=True).start()
    worker = start_worker(
        redis_url, tmp_path, "w1", redis_url=window_server.url, batch_size=20, retry_max_backoff_s=0.5
    )
    try:
        sessions = generate_sessions(120, seed=31)
        publish(client, sessions[:40])
        wait_for(lambda: client.xlen(RESULTS) == 40, what="first 40 results")
        window_server.stop()  # the window store is unreachable
        publish(client, sessions[40:])
        time.sleep(3.0)  # several retries with backoff
        assert client.xlen(RESULTS) == 40  # nothing completed while the window was down
        pending = client.xpending(INPUT, "bias-audit")["pending"]
        assert pending > 0  # read, not acknowledged
        assert worker.poll() is None  # alive, retrying
        window_server.start()  # back, same port, same data
        wait_for(lambda: client.xlen(RESULTS) == 120, what="all 120 results after the outage")
        wait_for(lambda: client.xpending(INPUT, "bias-audit")["pending"] == 0, what="everything acknowledged")
        assert len({r["audit_id"] for r in results(client)}) == 120
        assert results(client)[-1]["window"]["sessions"] == 100  # min(120, N): no session counted twice
        records = list(read_records(sorted((tmp_path / "records").glob("*.jsonl"))))
        assert len({r["session_id"] for r in records}) == 120
        assert len(records) == len(list(unique_records(records)))  # no record appended twice
    finally:
        stop(worker)
        window_server.stop()


def test_a_worker_added_and_one_removed_under_load_lose_nothing(redis_url, tmp_path):
    client = redis.Redis.from_url(redis_url)
    sessions = generate_sessions(600, seed=19)
    first = start_worker(redis_url, tmp_path, "w1", batch_size=10)
    second = None
    try:
        # reading (so its SIGTERM handler is in place: under CI load start-up took longer than
        # the stream's first second, and the SIGTERM below killed it before it could drain)
        wait_for(lambda: blocked_readers(client) >= 1, what="the first worker reading")
        for index in range(0, 600, 20):  # a steady stream, ~20 sessions every 50 ms
            publish(client, sessions[index : index + 20])
            if index == 200:
                second = start_worker(redis_url, tmp_path, "w2", batch_size=10)  # added under load
            if index == 400:
                first.send_signal(signal.SIGTERM)  # removed under load: drains and exits
            time.sleep(0.05)
        assert first.wait(timeout=30) == 0
        wait_for(lambda: client.xlen(RESULTS) >= 600, what="600 results")
        time.sleep(0.5)
    finally:
        stop(*[w for w in (first, second) if w is not None])
    got = results(client)
    assert len(got) == 600 and len({r["audit_id"] for r in got}) == 600
    assert client.xpending(INPUT, "bias-audit")["pending"] == 0
    assert window_keys(client)[0] == 100  # the default window holds the last 100, each once
    lines = list(read_records([tmp_path / "records"]))
    assert len(lines) == len(list(unique_records(lines))) == 600 * 25


def test_a_non_utf8_entry_is_dead_lettered_at_once_and_its_batch_is_not_held(redis_url, tmp_path):
    # a reclaimer far away (60 s): the batch must go through on its first reading
    client = redis.Redis.from_url(redis_url)
    publish(client, [b"\xff\xfe not UTF-8", *generate_sessions(3, seed=14), b'{"trailing": "comma",}'])
    worker = start_worker(redis_url, tmp_path, "w1", claim_idle_ms=60_000, batch_size=10)
    try:
        wait_for(
            lambda: client.xlen(DEAD) >= 2 and client.xlen(RESULTS) >= 3,
            timeout=15,
            what="the batch through, without waiting for the reclaimer",
        )
        assert worker.poll() is None
    finally:
        stop(worker)
    letters = [json.loads(fields[b"data"]) for _, fields in client.xrange(DEAD)]
    assert [letter["error"].split(";")[0] for letter in letters] == [
        "message body is not UTF-8 (byte 0)",
        "message body is not valid JSON: trailing comma is not allowed at byte 20",
    ]
    assert all(letter["payload"] is None and letter["delivery_attempts"] == 1 for letter in letters)


def test_a_judges_worker_killed_mid_stream_loses_no_verdict_and_counts_none_twice(redis_url, tmp_path):
    client = redis.Redis.from_url(redis_url)
    total = 3000
    pipe = client.pipeline(transaction=False)
    for n in range(total):
        body = json.dumps(
            {
                "verdict_id": f"v{n}",
                "tenant_id": "demo",
                "timestamp": "2026-11-20T10:30:00Z",
                "judge": {"model": "judge"},
                "item_id": f"i{n // 2}",
                "game": n % 2 + 1,
                "candidates": [{"model": "a", "length_words": 10}, {"model": "b", "length_words": 30}],
                "verdict": {"kind": "pairwise", "preference": "A>B" if n % 3 else "B>A"},
            }
        ).encode()
        pipe.xadd("judge.verdicts", wire_fields(body, event_type="judge.verdict", tenant_id="demo", trace_id=None))
    pipe.execute()
    options = dict(batch_size=20, consume="judges", judge_window_verdicts=100_000)
    victim = start_worker(redis_url, tmp_path, "victim", **options)
    survivor = start_worker(redis_url, tmp_path, "survivor", **options)
    try:
        wait_for(lambda: client.xlen(RESULTS) >= 400, what="work under way")
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
        wait_for(
            lambda: len({r["audit_id"] for r in results(client)}) >= total, timeout=120, what="the survivor finishing"
        )
        wait_for(lambda: client.xpending("judge.verdicts", "bias-audit")["pending"] == 0, what="all acked")
        time.sleep(1.0)
    finally:
        stop(survivor)
    got = results(client)
    assert len({r["audit_id"] for r in got}) == total
    assert max(r["judge"]["window"]["verdicts"] for r in got) == total  # each counted once in the judge's window
    rows = list(read_records([tmp_path / "verdicts"]))
    assert len({r["verdict_id"] for r in rows}) == total
