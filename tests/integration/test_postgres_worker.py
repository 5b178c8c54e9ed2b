"""Workers writing to a real PostgreSQL: a SIGKILL with every session published twice leaves
each record exactly once and the raw query in no table; PostgreSQL stopped mid-stream and started
again loses nothing and doubles nothing (the batches wait, unacknowledged)."""

from __future__ import annotations

import json
import signal
from collections import Counter

import psycopg
import pytest
import redis

from bias_audit.storage.embedded_postgres import EmbeddedPostgres
from bias_audit.storage.postgres import apply_migrations, connect, every_row_as_text, read_records
from bias_audit.worker.samples import generate_sessions
from tests.builders import read_all
from tests.integration.harness import wait_for
from tests.integration.test_redis_worker import DEAD, INPUT, RESULTS, publish, start_worker, stop

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]
CANARY = "CANARY-c41f-raw-user-query"


def sessions_with_query(count: int, seed: int) -> list[dict]:
    return [{**s, "query": CANARY} for s in generate_sessions(count, seed=seed)]


def all_acked(client: redis.Redis) -> bool:
    return client.xpending(INPUT, "bias-audit")["pending"] == 0


def test_two_workers_a_sigkill_and_every_session_twice_store_each_record_once(redis_url, postgres_url, tmp_path):
    apply_migrations(postgres_url)
    client = redis.Redis.from_url(redis_url)
    sessions = sessions_with_query(600, seed=91)
    publish(client, sessions + sessions)
    store = {"store_url": postgres_url, "batch_size": 10, "window_sessions": 10_000}
    victim = start_worker(redis_url, tmp_path, "victim", **store)
    survivor = start_worker(redis_url, tmp_path, "survivor", **store)
    try:
        wait_for(lambda: client.xlen(RESULTS) >= 150, what="work under way")
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
        wait_for(
            lambda: len({json.loads(f[b"data"])["audit_id"] for _, f in client.xrange(RESULTS)}) >= 600,
            timeout=120,
            what="a result for every session",
        )
        wait_for(lambda: all_acked(client), what="every entry acknowledged")
    finally:
        stop(survivor)
    assert client.xlen(DEAD) == 0
    cells = Counter((r["session_id"], r["reviewer_id"], r["model_id"]) for r in read_all(read_records, postgres_url))
    assert len(cells) == 600 * 25 and set(cells.values()) == {1}
    with connect(postgres_url) as connection:
        rows = list(every_row_as_text(connection))  # every table's every row
    assert len(rows) > 100 and not any(CANARY in row for row in rows)


def test_postgres_stopped_mid_stream_loses_nothing_and_doubles_nothing(redis_url, tmp_path):
    database = EmbeddedPostgres(tmp_path / "pg").start()
    url = database.url
    apply_migrations(url)
    client = redis.Redis.from_url(redis_url)
    worker = start_worker(
        redis_url, tmp_path, "w1", store_url=url, batch_size=10, window_sessions=10_000, retry_max_backoff_s=1
    )
    try:
        publish(client, sessions_with_query(100, seed=92))
        wait_for(lambda: client.xlen(RESULTS) >= 100, what="the first sessions stored")
        database.stop()
        publish(client, sessions_with_query(200, seed=93))
        wait_for(lambda: "OperationalError" in (tmp_path / "w1.log").read_text(), what="the worker noticing")
        assert client.xlen(RESULTS) < 300 and not all_acked(client)  # waiting, not acknowledging
        database = EmbeddedPostgres(tmp_path / "pg").start()
        wait_for(lambda: client.xlen(RESULTS) >= 300, timeout=90, what="the rest after PostgreSQL is back")
        wait_for(lambda: all_acked(client), what="every entry acknowledged")
        assert worker.poll() is None
    finally:
        stop(worker)
        database.stop()
    database = EmbeddedPostgres(tmp_path / "pg").start()
    try:
        with psycopg.connect(database.url) as connection:
            [(count,)] = connection.execute("SELECT count(*) FROM council_session_audit").fetchall()
        records = Counter(
            (r["session_id"], r["reviewer_id"], r["model_id"]) for r in read_all(read_records, database.url)
        )
    finally:
        database.stop()
    assert count == 300 and len(records) == 300 * 25 and set(records.values()) == {1}
