"""Alerts across two workers on real Redis Streams, and `report --redis` on the live window."""

from __future__ import annotations

import json

import orjson
import pytest
import redis

from bias_audit.analysis.tenant_report import tenant_report
from bias_audit.storage.report_reader import WindowReader
from tests.integration.test_redis_worker import RESULTS, blocked_readers, publish, start_worker, stop, wait_for
from tests.services import run_cli
from tests.simulate import Corpus, digest_event

pytestmark = [pytest.mark.redis, pytest.mark.slow]
ALERTS = "bias.audit.alerts"
CHANGE, STOP = 150, 240
BATCH = 10  # each worker reads and counts ten sessions at a time


def test_harsh_reviewer_alerts_once_across_two_workers_and_report_reads_the_live_window(redis_url, tmp_path):
    client = redis.Redis.from_url(redis_url)
    corpus = Corpus(
        sessions=300, models=5, seed=3, reviewer_offsets={1: -2.0}, offset_from=CHANGE, offset_until=STOP, tenant="demo"
    )
    events = [digest_event(d) for d in corpus.digests()]
    workers = [start_worker(redis_url, tmp_path, f"w{i}", batch_size=BATCH) for i in (1, 2)]
    try:
        wait_for(lambda: blocked_readers(client) >= 2, what="two workers reading")
        for start in range(0, len(events), BATCH):  # a live stream, not one backlog
            publish(client, [orjson.dumps(e) for e in events[start : start + BATCH]])
        wait_for(lambda: client.xlen(RESULTS) >= 300, what="300 results")
        wait_for(lambda: client.xpending("council.sessions", "bias-audit")["pending"] == 0, what="all acked")
    finally:
        stop(*workers)
    alerts = [json.loads(fields[b"data"]) for _, fields in client.xrange(ALERTS)]
    firing = [a for a in alerts if a["status"] == "firing"]
    resolved = [a for a in alerts if a["status"] == "resolved"]
    assert len(firing) == 1 and len(resolved) == 1, [(a["status"], a["message"]) for a in alerts]
    index = {e["session_id"]: i for i, e in enumerate(events)}
    fired_at, resolved_at = index[firing[0]["session_id"]], index[resolved[0]["session_id"]]
    # Alerts are judged in counting order, which two workers make differ from event order: one
    # can count the sessions just before the change after the other counted its batches past it
    # (a fresh-clone CI run fired at session 147). So the firing may come up to two batches early,
    # and it must name the harsh reviewer.
    assert CHANGE - 2 * BATCH <= fired_at < CHANGE + 30 and resolved_at > STOP
    assert firing[0]["message"].startswith("reviewer vendor1/model-1 scores"), firing[0]["message"]
    assert firing[0]["trace_id"] == events[fired_at]["trace_id"]
    assert resolved[0]["alert_id"] == firing[0]["alert_id"]
    assert {fields[b"event_type"] for _, fields in client.xrange(ALERTS)} == {b"bias.audit.alert"}
    # both workers raised alerts' worth of work: the sessions were shared
    records_dir = tmp_path / "records"
    assert len(list(records_dir.glob("*.jsonl"))) == 2

    live = run_cli("report", "--redis", redis_url, "--format", "json", "--days", "0")
    assert live.returncode == 0, live.stderr
    [tenant] = json.loads(live.stdout)["tenants"]
    reader = WindowReader(sessions=100, days=None)
    reader.read(sorted(records_dir.glob("*.jsonl")))
    [window] = reader.windows()
    offline = tenant_report(window.cells, window.previous_sessions)
    assert tenant["sessions"] == offline.sessions == 100
    assert tenant["window_end"] == offline.window_end
    assert tenant["length_correlation"]["point_estimate"] == pytest.approx(
        offline.length_correlation.point_estimate, abs=1e-6
    )
    live_offsets = {r["reviewer"]: r["offset"]["point_estimate"] for r in tenant["reviewers"]}
    assert live_offsets == pytest.approx({r.reviewer: r.offset.point_estimate for r in offline.reviewers}, abs=1e-6)
