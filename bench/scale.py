"""Horizontal scale: 1, 2 and 4 worker processes on one consumer group / one subscription.

    python bench/scale.py                # both transports
    python bench/scale.py redis          # one

For each transport and worker count: a backlog of BACKLOG 5x5 sessions published at once
(throughput = sessions / span of the results' creation times), then RATE sessions/s for
SECONDS s (latency = result created - event timestamp, set at publish; p50/p99). Every run also
checks that every session got exactly one result. Real services: a local redis-server and
Google's Pub/Sub emulator.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis
from percentiles import percentile
from rich.console import Console
from rich.table import Table

from bias_audit.producers.wire import wire_fields
from bias_audit.worker.embedded_redis import EmbeddedRedis
from bias_audit.worker.samples import generate_sessions

BACKLOG, RATE, SECONDS = 3000, 200, 5
WORKERS = (1, 2, 4)
console = Console()


def sessions(count: int, seed: int) -> list[dict]:
    out = generate_sessions(count, seed=seed)
    for session in out:
        session["tenant_id"] = "bench"
        for response in session["responses"]:
            response["response"] = response["response"][:1024]
    return out


def stamped(session: dict) -> bytes:
    session["timestamp"] = datetime.now(timezone.utc).isoformat(timespec="microseconds")
    return json.dumps(session).encode()


def parse_ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class RedisSide:
    name = "Redis Streams"

    def __init__(self, tmp: Path) -> None:
        self.server = EmbeddedRedis(tmp / "redis", persist=False).start()
        self.client = redis.Redis.from_url(self.server.url)
        self.env = {"BIAS_AUDIT_BROKER_URL": self.server.url}

    def reset(self, tag: str) -> None:
        self.client.flushdb()

    def publish(self, bodies: list[bytes]) -> None:
        pipe = self.client.pipeline(transaction=False)
        for body in bodies:
            pipe.xadd(
                "council.sessions", wire_fields(body, event_type="council.session", tenant_id="bench", trace_id=None)
            )
        pipe.execute()

    def results(self) -> list[dict]:
        return [json.loads(fields[b"data"]) for _, fields in self.client.xrange("bias.audit.stream")]

    def count(self) -> int:
        return self.client.xlen("bias.audit.stream")

    def close(self) -> None:
        self.server.stop()


class PubSubSide:
    name = "Pub/Sub (emulator)"

    def __init__(self, tmp: Path) -> None:
        from tests.services import PubSubEmulator

        self.emulator = PubSubEmulator(tmp).start()
        os.environ["PUBSUB_EMULATOR_HOST"] = self.emulator.host
        self.redis = EmbeddedRedis(tmp / "redis", persist=False).start()
        from google.cloud import pubsub_v1

        self.publisher = pubsub_v1.PublisherClient()
        self.subscriber = pubsub_v1.SubscriberClient()
        self.collected: list[dict] = []

    def reset(self, tag: str) -> None:
        from bias_audit.worker.pubsub_admin import ensure_pubsub
        from bias_audit.worker.settings import Settings

        redis.Redis.from_url(self.redis.url).flushdb()
        self.project = f"bench-{tag}"
        ensure_pubsub(Settings(broker_url=f"pubsub://{self.project}"))
        self.reader = self.subscriber.subscription_path(self.project, "bench.results")
        self.subscriber.create_subscription(
            name=self.reader, topic=self.subscriber.topic_path(self.project, "bias.audit.stream")
        )
        self.collected = []
        self.env = {"BIAS_AUDIT_BROKER_URL": f"pubsub://{self.project}", "BIAS_AUDIT_REDIS_URL": self.redis.url}

    def publish(self, bodies: list[bytes]) -> None:
        topic = self.publisher.topic_path(self.project, "council.sessions")
        futures = [
            self.publisher.publish(topic, body, event_type="council.session", tenant_id="bench") for body in bodies
        ]
        for future in futures:
            future.result(timeout=60)

    def count(self) -> int:
        from google.api_core.exceptions import DeadlineExceeded

        try:
            reply = self.subscriber.pull(request={"subscription": self.reader, "max_messages": 1000}, timeout=2)
        except DeadlineExceeded:
            return len(self.collected)
        if reply.received_messages:
            self.subscriber.acknowledge(
                request={"subscription": self.reader, "ack_ids": [m.ack_id for m in reply.received_messages]}
            )
            self.collected.extend(json.loads(m.message.data) for m in reply.received_messages)
        return len(self.collected)

    def results(self) -> list[dict]:
        return list(self.collected)

    def close(self) -> None:
        self.emulator.stop()
        self.redis.stop()


def start_workers(side, tmp: Path, count: int) -> list[subprocess.Popen]:
    env = {
        **os.environ,
        **side.env,
        "BIAS_AUDIT_DATA_DIR": str(tmp),
        "BIAS_AUDIT_LOG_LEVEL": "WARNING",
        "BIAS_AUDIT_OPS_PORT": "-1",
        "BIAS_AUDIT_WINDOW_SESSIONS": "100000",
        "BIAS_AUDIT_STORE_URL": str(tmp),
    }  # JSONL records: the transports are measured, not the store
    workers = []
    for index in range(count):
        workers.append(
            subprocess.Popen(
                [sys.executable, "-m", "bias_audit", "worker"],
                cwd=ROOT,
                env={**env, "BIAS_AUDIT_CONSUMER_NAME": f"scale-{index}"},
            )
        )
    time.sleep(5.0)  # imported and subscribed
    return workers


def wait_for(side, expected: int, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while side.count() < expected:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{side.name}: {side.count()} of {expected} results after {timeout:.0f}s")
        time.sleep(0.02)


def run(side, tmp: Path, workers: int) -> dict:
    side.reset(f"{workers}w-{int(time.time())}")
    procs = start_workers(side, tmp, workers)
    try:
        backlog = sessions(BACKLOG, seed=70 + workers)
        side.publish([stamped(s) for s in backlog])
        wait_for(side, BACKLOG)
        created = sorted(parse_ts(r["timestamp"]) for r in side.results())
        throughput = BACKLOG / (created[-1] - created[0])
        paced = sessions(RATE * SECONDS, seed=90 + workers)
        start = time.perf_counter()
        for index, session in enumerate(paced):
            delay = start + index / RATE - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            side.publish([stamped(session)])
        wait_for(side, BACKLOG + len(paced))
        paced_ids = {s["session_id"] for s in paced}
        everything = side.results()
        latencies = sorted(
            (parse_ts(r["timestamp"]) - parse_ts(r["event_timestamp"])) * 1000
            for r in everything
            if r["audit_id"] in paced_ids
        )
        ids = [r["audit_id"] for r in everything]
        exactly_once = len(ids) == len(set(ids)) == BACKLOG + len(paced)
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=60)
    return {
        "throughput": throughput,
        "p50": percentile(latencies, 0.5),
        "p99": percentile(latencies, 0.99),
        "exactly_once": exactly_once,
    }


def main() -> None:
    chosen = sys.argv[1:] or ["redis", "pubsub"]
    table = Table(
        title=f"Horizontal scale on {os.cpu_count()} cores: backlog {BACKLOG} 5x5 sessions; "
        f"latency at {RATE}/s for {SECONDS} s"
    )
    for column in ("transport", "workers", "sessions/s", "vs 1 worker", "p50 ms", "p99 ms", "exactly once"):
        table.add_column(column, justify="right")
    with tempfile.TemporaryDirectory() as tmp:
        for name in chosen:
            side = (RedisSide if name == "redis" else PubSubSide)(Path(tmp))
            try:
                base = None
                for count in WORKERS:
                    row = run(side, Path(tmp) / f"{name}-{count}", count)
                    base = base or row["throughput"]
                    table.add_row(
                        side.name,
                        str(count),
                        f"{row['throughput']:,.0f}",
                        f"{row['throughput'] / base:.2f}x",
                        f"{row['p50']:.0f}",
                        f"{row['p99']:.0f}",
                        "yes" if row["exactly_once"] else "NO",
                    )
            finally:
                side.close()
    console.print(table)


if __name__ == "__main__":
    main()
