"""End to end on Google's Pub/Sub emulator, with a real redis-server and real worker processes."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
import redis
from google.api_core.exceptions import DeadlineExceeded
from google.cloud import pubsub_v1

from bias_audit.analysis.observations import session_scores
from bias_audit.analysis.session_audit import audit_batch
from bias_audit.analysis.window import session_contribution
from bias_audit.schemas.events import CouncilSessionEvent
from bias_audit.storage.jsonl_store import read_records
from bias_audit.worker.samples import generate_sessions
from tests.integration.harness import VERDICTS, PubSubHarness, Reader, setup_project
from tests.integration.harness import stop_processes as stop
from tests.services import run_cli, run_cli_process, spawn_worker

pytestmark = [pytest.mark.redis, pytest.mark.pubsub, pytest.mark.slow]
RESULTS, DEAD, INPUT = "bias.audit.stream", "bias.audit.deadletter", "council.sessions"
# a worker holds at most 40 messages and extends their leases by 10 s: a killed one's wait briefly
HELD = {"batch_size": 10, "pubsub_max_outstanding": 40, "pubsub_lease_extension_s": 10, "window_sessions": 1000}


class EmulatorLostMessages(AssertionError):
    """Five replays did not bring every message: the emulator's loss once a stream went away
    (docs/architecture.md); our workers skip and count nothing of what they did not get."""


# a test that removes a worker runs once more, afresh (new project, emptied Redis), only when the
# emulator lost messages for good; any other failure, or a second loss, fails it
EMULATOR_MAY_LOSE = pytest.mark.flaky(reruns=1, only_rerun=[EmulatorLostMessages.__name__])


def start_worker(project: str, redis_url: str, data_dir: Path, name: str, **env) -> subprocess.Popen:
    environment = {
        "BIAS_AUDIT_BROKER_URL": f"pubsub://{project}",
        "BIAS_AUDIT_REDIS_URL": redis_url,
        "BIAS_AUDIT_DATA_DIR": str(data_dir),
        "BIAS_AUDIT_CONSUMER_NAME": name,
        "BIAS_AUDIT_WINDOW_SESSIONS": "1000",
        "BIAS_AUDIT_OPS_PORT": "0",
        "BIAS_AUDIT_LOG_LEVEL": "WARNING",
        "BIAS_AUDIT_CONSUME": "council",
        **{f"BIAS_AUDIT_{k.upper()}": str(v) for k, v in env.items()},
    }
    return spawn_worker(environment, data_dir / f"{name}.log")


def publish(project: str, bodies: list[bytes], input_topic: str = INPUT, event_type: str = "council.session") -> None:
    publisher = pubsub_v1.PublisherClient()
    topic = publisher.topic_path(project, input_topic)
    try:
        futures = [publisher.publish(topic, body, event_type=event_type, tenant_id="demo") for body in bodies]
        for future in futures:
            future.result(timeout=60)
    finally:
        publisher.stop()


def expected_window_sums(sessions: list[dict]) -> dict[str, int]:
    """What the window must hold, computed in-process from the sessions (order-free: N > count)."""
    events = [CouncilSessionEvent.model_validate(s) for s in sessions]
    scores = [session_scores(e) for e in events]
    totals: Counter = Counter()
    for s, analysis in zip(scores, audit_batch(scores)):
        totals.update(session_contribution(s, analysis).window)
    return {k: v for k, v in totals.items() if v}


def window_state(redis_url: str, tenant: str = "demo") -> tuple[int, dict[str, int]]:
    client = redis.Redis.from_url(redis_url)
    sums = {k.decode(): int(v) for k, v in client.hgetall(f"bias-audit:{{{tenant}}}:sums").items()}
    return client.zcard(f"bias-audit:{{{tenant}}}:order"), sums


def record_sessions(data_dir: Path) -> Counter:
    """How many record lines each session has across all workers' files."""
    lines = Counter()
    for record in read_records([data_dir / "records"]):
        lines[record["session_id"]] += 1
    return lines


def corpus(count=500, duplicated=50, seed=41) -> tuple[list[dict], list[bytes]]:
    sessions = generate_sessions(count, seed=seed)
    for session in sessions:
        session["tenant_id"] = "demo"
    bodies = [json.dumps(s).encode() for s in sessions]
    return sessions, bodies + bodies[:duplicated]  # 10% delivered twice, as separate messages


def replay_subscription(project: str, since_s: float, input_topic: str = INPUT) -> None:
    """Seek the input subscription back: every message is delivered again (an operator's replay)."""
    from google.protobuf import timestamp_pb2

    client = pubsub_v1.SubscriberClient()
    try:
        when = timestamp_pb2.Timestamp()
        when.FromSeconds(int(since_s))
        client.seek(
            request={"subscription": client.subscription_path(project, f"{input_topic}.bias-audit"), "time": when}
        )
    finally:
        client.close()


def replay_until_complete(
    project: str, since_s: float, results, sessions: list[dict], input_topic: str = INPUT, id_field: str = "session_id"
) -> list[dict]:
    """Replay until every event has a result, at most five times: under load the emulator
    can lose a replay's messages too (see README)."""
    wanted = {s[id_field] for s in sessions}
    for _ in range(5):
        replay_subscription(project, since_s, input_topic)
        # a replay's messages come in a steady stream: 10 s without one means the emulator lost some
        # (the workers first skip what they did before, which publishes nothing)
        got = results.until(len(wanted), timeout=60, settle=5.0, stall=10.0)
        if {r["audit_id"] for r in got} >= wanted:
            return got
    missing = len(wanted - {r["audit_id"] for r in got})
    raise EmulatorLostMessages(f"{missing} of {len(wanted)} events never delivered, five replays included")


@EMULATOR_MAY_LOSE
def test_a_worker_killed_mid_run_loses_nothing_and_counts_nothing_twice(pubsub_project, redis_url, tmp_path):
    """SIGKILL one of two workers once each has taken a share, then replay the whole subscription:
    still 500 results, records for 500 sessions, exact window sums.

    The replay is needed on the emulator: it loses messages it pushes into the stream of a
    SIGKILLed client before it notices the stream closed (reproduced with plain client code);
    real Pub/Sub redelivers them when their lease expires. The replay also proves that 550
    redelivered messages count nothing twice."""
    harness = PubSubHarness(tmp_path, redis_url, pubsub_project, pubsub_ack_deadline_s=10)
    sessions, bodies = corpus(seed=43)
    try:
        harness.start(workers=2, **HELD)
        results = harness.reader(RESULTS)
        published_at = time.time() - 5
        harness.publish_shared(bodies)
        doomed = harness.processes[0]
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
        before_replay = {r["audit_id"] for r in results.until(500, timeout=25, stall=8.0)}
        got = replay_until_complete(pubsub_project, published_at, results, sessions)
    finally:
        codes = harness.stop()
    assert codes == [-signal.SIGKILL, 0]
    assert len(before_replay) >= 100  # the survivor took over while the killed worker's share waited
    assert {r["audit_id"] for r in got} == {s["session_id"] for s in sessions}
    # The replay repeats no result; only a batch killed between publishing and marking could.
    assert len(got) - 500 <= 10, f"{len(got) - 500} repeated results"
    per_session = record_sessions(tmp_path)
    assert len(per_session) == 500
    count, sums = window_state(redis_url)
    assert count == 500 and sums == expected_window_sums(sessions)


@EMULATOR_MAY_LOSE
def test_a_judges_worker_killed_mid_run_loses_no_verdict_and_counts_none_twice(pubsub_project, redis_url, tmp_path):
    """As above for judge.verdicts: SIGKILL one of two `--consume judges` workers, replay the
    subscription; every verdict has a result and a row, and the judge's window counts each once."""
    verdicts = [
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
        for n in range(600)
    ]
    bodies = [json.dumps(v).encode() for v in verdicts]
    harness = PubSubHarness(tmp_path, redis_url, pubsub_project, pubsub_ack_deadline_s=10)
    try:
        harness.start(workers=2, consume="judges", **HELD)
        results = harness.reader(RESULTS)
        published_at = time.time() - 5
        harness.publish_shared(bodies + bodies[:60], topic=VERDICTS)
        doomed = harness.processes[0]
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
        got = replay_until_complete(pubsub_project, published_at, results, verdicts, VERDICTS, "verdict_id")
    finally:
        codes = harness.stop()
    assert codes == [-signal.SIGKILL, 0]
    assert {r["audit_id"] for r in got} == {v["verdict_id"] for v in verdicts}
    assert max(r["judge"]["window"]["verdicts"] for r in got) == 600  # each counted once
    assert {row["verdict_id"] for row in read_records([tmp_path / "verdicts"])} == {v["verdict_id"] for v in verdicts}


def test_the_subscription_dead_letter_policy_catches_what_never_reaches_our_code(pubsub_project):
    """A message nacked max_deliveries + 2 times (a crashing worker) moves to the poison topic
    (an unordered subscription: ordering plus dead-lettering wedges the emulator)."""
    setup_project(pubsub_project)
    publish(pubsub_project, [b'{"session_id": "crashes-the-worker"}'])
    subscriber = pubsub_v1.SubscriberClient()
    path = subscriber.subscription_path(pubsub_project, "council.sessions.bias-audit")
    hold = subscriber.subscription_path(pubsub_project, "bias.audit.undeliverable.bias-audit")
    attempts = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                reply = subscriber.pull(request={"subscription": path, "max_messages": 10}, timeout=3)
            except DeadlineExceeded:
                reply = None
            if reply and reply.received_messages:
                attempts.extend(m.delivery_attempt for m in reply.received_messages)
                subscriber.modify_ack_deadline(
                    request={
                        "subscription": path,
                        "ack_deadline_seconds": 0,
                        "ack_ids": [m.ack_id for m in reply.received_messages],
                    }
                )
            try:
                moved = subscriber.pull(request={"subscription": hold, "max_messages": 10}, timeout=1)
            except DeadlineExceeded:
                continue
            if moved.received_messages:
                assert moved.received_messages[0].message.data == b'{"session_id": "crashes-the-worker"}'
                break
        else:
            pytest.fail(f"never dead-lettered; attempts seen {attempts}")
    finally:
        subscriber.close()
    assert attempts[:3] == [1, 2, 3] and max(attempts) == 7  # max_deliveries (5) + 2


def test_setup_run_again_finds_everything_in_place(pubsub_project):
    setup_project(pubsub_project)
    again = run_cli("setup", "--broker", f"pubsub://{pubsub_project}")
    assert "subscription council.sessions.bias-audit: already exists" in again.stdout
    assert "created" not in again.stdout


def test_setup_against_an_unreachable_emulator_exits_1_with_a_reason(tmp_path):
    from bias_audit.worker.embedded_redis import free_port

    env = {"PUBSUB_EMULATOR_HOST": f"127.0.0.1:{free_port()}"}
    try:
        result = run_cli_process("setup", "--broker", "pubsub://p", env=env, timeout_s=120)
    except subprocess.TimeoutExpired:
        pytest.fail("setup hung against an unreachable emulator")
    assert result.returncode == 1 and "Pub/Sub setup failed" in result.stderr


def test_a_worker_without_its_subscription_exits_1_saying_to_run_setup(pubsub_project, redis_url, tmp_path):
    worker = start_worker(pubsub_project, redis_url, tmp_path, "w1")  # no `setup` for this project
    assert worker.wait(timeout=60) == 1
    assert "run `bias-audit setup --broker pubsub://" in (tmp_path / "w1.log").read_text()


@EMULATOR_MAY_LOSE
def test_a_worker_added_and_one_removed_under_load_lose_nothing(pubsub_project, redis_url, tmp_path):
    """As on Redis, with a replay at the end: the emulator does not deliver messages published
    after one of a subscription's streams closed, even cleanly, to the streams still open
    (reproduced with plain client code); real Pub/Sub does."""
    setup_project(pubsub_project)
    sessions, bodies = corpus(count=400, duplicated=0, seed=59)
    published_at = time.time() - 5
    held = {"batch_size": 10, "pubsub_max_outstanding": 40}
    first = start_worker(pubsub_project, redis_url, tmp_path, "w1", **held)
    second = None
    results = Reader(pubsub_project, RESULTS)
    try:
        time.sleep(3.0)  # subscribed
        for index in range(0, 400, 20):
            publish(pubsub_project, bodies[index : index + 20])
            if index == 120:
                second = start_worker(pubsub_project, redis_url, tmp_path, "w2", **held)  # added
            if index == 280:
                first.send_signal(signal.SIGTERM)  # removed: drains, nacks what it did not start
            time.sleep(0.1)
        assert first.wait(timeout=60) == 0
        results.until(400, timeout=20, stall=5.0)  # the emulator lost the rest: the replay brings them
        got = replay_until_complete(pubsub_project, published_at, results, sessions)
    finally:
        stop(*[w for w in (first, second) if w is not None])
        results.close()
    assert {r["audit_id"] for r in got} == {s["session_id"] for s in sessions}
    assert len(got) == 400  # SIGTERM drains cleanly: nothing published twice, even after the replay
    assert len(record_sessions(tmp_path)) == 400 and set(record_sessions(tmp_path).values()) == {25}
    count, sums = window_state(redis_url)
    assert count == 400 and sums == expected_window_sums(sessions)
    assert "did not exit" not in (tmp_path / "w1.log").read_text()
