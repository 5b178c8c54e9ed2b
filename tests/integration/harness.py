"""One way to drive a worker on each transport, so one scenario suite runs on all of them: the
in-memory broker (in-process, burst mode), Redis Streams and Pub/Sub (real servers, worker
processes started as `bias-audit worker`)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import redis
from google.api_core.exceptions import DeadlineExceeded
from google.cloud import pubsub_v1

from bias_audit.producers.wire import wire_fields
from bias_audit.state.memory_window import MemoryWindow
from bias_audit.worker import composition
from bias_audit.worker.embedded_redis import free_port
from bias_audit.worker.logging_setup import configure_logging
from bias_audit.worker.memory_worker import MemoryBroker, MemoryWorker
from bias_audit.worker.settings import Settings
from tests.services import run_cli, spawn_worker

RESULTS, DEAD, INPUT = "bias.audit.stream", "bias.audit.deadletter", "council.sessions"
VERDICTS = "judge.verdicts"
EVENT_TYPES = {INPUT: "council.session", VERDICTS: "judge.verdict"}
TENANT = "demo"


def redis_cloudevent(cloud_event: dict[str, str] | None) -> dict[str, str]:
    """CloudEvents attributes (spec names) as Redis entry fields: ce_<attribute>."""
    return {f"ce_{name}": value for name, value in (cloud_event or {}).items()}


def cloudevent_of(fields: dict[str, str], data: bytes) -> Any:
    """The CloudEvents SDK's event from a message's transport fields (ce-* / content-type on
    Pub/Sub, ce_* on Redis): the SDK has no binding for either, and validates the attributes."""
    from datetime import datetime

    from cloudevents.core.v1.event import CloudEvent

    attributes: dict[str, Any] = {}
    for name, value in fields.items():
        if name == "content-type":
            attributes["datacontenttype"] = value
        elif name.startswith(("ce-", "ce_")):
            attributes[name[3:]] = datetime.fromisoformat(value) if name[3:] == "time" else value
    return CloudEvent(attributes, data)


def wait_for(predicate, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def stop_processes(*workers: subprocess.Popen) -> list[int]:
    """SIGTERM and wait; for workers stopped before, the code they exited with."""
    for worker in workers:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
    return [worker.wait(timeout=60) for worker in workers]


def worker_env(data_dir: Path, name: str, **settings: Any) -> dict[str, str]:
    return {
        "BIAS_AUDIT_DATA_DIR": str(data_dir),
        "BIAS_AUDIT_CONSUMER_NAME": name,
        "BIAS_AUDIT_OPS_PORT": "0",
        "BIAS_AUDIT_LOG_LEVEL": "WARNING",
        "BIAS_AUDIT_CONSUME": "council",
        **{f"BIAS_AUDIT_{k.upper()}": str(v) for k, v in settings.items()},
    }


class MemoryHarness:
    """Workers share the broker and the window (as Redis is shared); each has its record file.
    Batches go to the workers in turn, so each takes a share."""

    name = "memory"

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.broker = MemoryBroker()
        self.workers: list[MemoryWorker] = []
        self.stores: list[Any] = []
        self.log = io.StringIO()
        self.marks: dict[str, int] = {}

    def start(self, workers: int = 1, **settings: Any) -> None:
        if "log_level" in settings:  # the workers' JSON log lines, as a process would write them
            configure_logging(settings["log_level"], self.log)
        windows: dict[str, MemoryWindow] = {}  # one per input, shared by the workers as Redis is
        for index in range(1, workers + 1):
            config = Settings(data_dir=self.data_dir, consumer_name=f"w{index}", **settings)
            kinds: dict[str, tuple[Any, Any, Any]] = {  # topic: (window policy, store, processor)
                config.verdicts_topic: (
                    config.judge_window_policy,
                    composition.verdict_store,
                    composition.verdict_processor,
                ),
                config.council_topic: (config.window_policy, composition.record_store, composition.council_processor),
            }
            for topic in config.consumed_topics:
                if topic not in kinds:
                    continue  # LLM responses: their worker has suites of its own (test_responses_worker)
                policy, make_store, make_processor = kinds[topic]
                if topic not in windows:
                    windows[topic] = MemoryWindow(policy)
                store = make_store(config)
                processor = make_processor(config, windows[topic], store)
                self.stores.append(store)
                self.workers.append(
                    MemoryWorker(
                        self.broker,
                        processor,
                        batch_size=config.batch_size,
                        max_deliveries=config.max_deliveries,
                        topic=topic,
                    )
                )

    def publish(self, bodies: list[bytes], topic: str = INPUT, cloud_event: dict[str, str] | None = None) -> None:
        for body in bodies:
            self.broker.send(
                topic,
                {
                    **wire_fields(body, event_type=EVENT_TYPES[topic], tenant_id=TENANT, trace_id=None),
                    **redis_cloudevent(cloud_event),
                },
            )

    def publish_shared(self, bodies: list[bytes]) -> None:
        self.publish(bodies)  # batches go to the workers in turn

    def _drain(self) -> None:
        async def run() -> None:
            while True:
                handled = [await worker.run_batch() for worker in self.workers]
                if not any(handled):
                    return

        asyncio.run(run())

    def begin(self) -> None:
        """A scenario starts: what was published before it is another scenario's."""
        self.marks = {topic: len(self.broker.published.get(topic, [])) for topic in (RESULTS, DEAD)}

    def results(self, count: int) -> list[dict]:
        self._drain()
        return self.broker.documents(RESULTS)[self.marks.get(RESULTS, 0) :]  # type: ignore[return-value]

    def dead_letters(self, count: int) -> list[dict]:
        self._drain()
        return self.broker.documents(DEAD)[self.marks.get(DEAD, 0) :]  # type: ignore[return-value]

    def result_fields(self) -> list[dict[str, str]]:
        return [
            {k: v if isinstance(v, str) else v.decode() for k, v in fields.items() if k != "data"}
            for fields in self.broker.published.get(RESULTS, [])[self.marks.get(RESULTS, 0) :]
        ]

    def alive(self) -> bool:
        return True  # in-process: a crash would have raised in the test

    def logs(self) -> str:
        return self.log.getvalue()

    def stop(self) -> list[int]:
        for store in self.stores:
            if store is not None:
                store.close()
        self.stores = []
        logging.getLogger().handlers.clear()
        return [0] * len(self.workers)


class _WorkerProcesses:
    """What the harnesses of real worker processes share: each writes its log to data_dir."""

    data_dir: Path
    processes: list[subprocess.Popen]

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.processes)

    def logs(self) -> str:
        return "".join(path.read_text(errors="replace") for path in sorted(self.data_dir.glob("*.log")))


class RedisHarness(_WorkerProcesses):
    name = "redis"

    def __init__(self, data_dir: Path, redis_url: str) -> None:
        self.data_dir, self.url = data_dir, redis_url
        self.client = redis.Redis.from_url(redis_url)
        self.processes: list[subprocess.Popen] = []
        self.marks: dict[str, int] = {}  # each output's length when the scenario began
        self.after: dict[str, bytes] = {}  # and its last entry's id then

    def start(self, workers: int = 1, **settings: Any) -> None:
        for index in range(1, workers + 1):
            name = f"w{index}"
            env = {
                "BIAS_AUDIT_BROKER_URL": self.url,
                "BIAS_AUDIT_CLAIM_IDLE_MS": "1500",
                "BIAS_AUDIT_RECLAIM_INTERVAL_S": "0.5",
                **worker_env(self.data_dir, name, **settings),
            }
            self.processes.append(spawn_worker(env, self.data_dir / f"{name}.log"))
        # reading, each of them (a reader per input): a backlog published now is shared, not
        # drained by the first up
        readers = workers * len(Settings(consume=settings.get("consume", "council")).consumed_topics)
        wait_for(
            lambda: sum(1 for c in self.client.client_list() if c.get("cmd") == "xreadgroup") >= readers,
            what=f"{readers} inputs of {workers} workers reading",
        )

    def publish(self, bodies: list[bytes], topic: str = INPUT, cloud_event: dict[str, str] | None = None) -> None:
        pipe = self.client.pipeline(transaction=False)
        for body in bodies:
            pipe.xadd(
                topic,
                {
                    **wire_fields(body, event_type=EVENT_TYPES[topic], tenant_id=TENANT, trace_id=None),
                    **redis_cloudevent(cloud_event),
                },
            )
        pipe.execute()

    def publish_shared(self, bodies: list[bytes]) -> None:
        self.publish(bodies)  # every worker is blocked in XREADGROUP already

    def begin(self) -> None:
        """A scenario starts: what was published before it is another scenario's."""
        self.marks = {stream: self.client.xlen(stream) for stream in (RESULTS, DEAD)}
        self.after = {
            stream: (last[0][0] if last else b"0")
            for stream in (RESULTS, DEAD)
            for last in [self.client.xrevrange(stream, count=1)]
        }

    def _entries(self, stream: str) -> list:
        """The stream's entries since the scenario began (all of them before any scenario)."""
        return (
            self.client.xrange(stream, min=b"(" + self.after[stream])
            if stream in self.after
            else self.client.xrange(stream)
        )

    def _documents(self, stream: str, count: int) -> list[dict]:
        mark = self.marks.get(stream, 0)
        wait_for(lambda: self.client.xlen(stream) - mark >= count, what=f"{count} on {stream}")
        time.sleep(0.5)  # anything extra (a repeated result) arrives too
        return [json.loads(fields[b"data"]) for _, fields in self._entries(stream)]

    def results(self, count: int) -> list[dict]:
        return self._documents(RESULTS, count)

    def dead_letters(self, count: int) -> list[dict]:
        return self._documents(DEAD, count)

    def result_fields(self) -> list[dict[str, str]]:
        return [
            {k.decode(): v.decode() for k, v in fields.items() if k != b"data"} for _, fields in self._entries(RESULTS)
        ]

    def stop(self) -> list[int]:
        return stop_processes(*self.processes)  # again: the codes they exited with


class PubSubHarness(_WorkerProcesses):
    name = "pubsub"

    def __init__(self, data_dir: Path, redis_url: str, project: str, **setup: Any) -> None:
        """setup: settings for `bias-audit setup` (pubsub_ack_deadline_s=10...)."""
        self.data_dir, self.redis_url, self.project = data_dir, redis_url, project
        setup_project(project, **setup)  # topics, subscriptions and the test's readers of the outputs
        self.processes: list[subprocess.Popen] = []
        self.readers: dict[str, Reader] = {}
        self.ports: list[int] = []
        self.marks: dict[str, int] = {}

    def start(self, workers: int = 1, **settings: Any) -> None:
        ports = self.ports = []
        for index in range(1, workers + 1):
            name = f"w{index}"
            ports.append(free_port())
            # at most 20 held each: a worker up first cannot take the whole backlog (the load is shared)
            env = {
                "BIAS_AUDIT_BROKER_URL": f"pubsub://{self.project}",
                "BIAS_AUDIT_REDIS_URL": self.redis_url,
                "BIAS_AUDIT_PUBSUB_MAX_OUTSTANDING": "20",
                **worker_env(self.data_dir, name, **settings),
                "BIAS_AUDIT_OPS_PORT": str(ports[-1]),
            }
            self.processes.append(spawn_worker(env, self.data_dir / f"{name}.log"))
        # each worker's ops server answers /readyz once its subscription is reachable, just before it
        # subscribes: a slow machine's late worker would otherwise find the backlog taken
        wait_for(lambda: all(_ready(port) for port in ports), timeout=120, what=f"{workers} workers ready")
        time.sleep(1.0)  # their streaming pulls open

    def consumed(self) -> list[int]:
        """Messages each worker has taken, from its /metrics."""
        return [_consumed(port) for port in self.ports]

    def publish_shared(
        self, bodies: list[bytes], chunk: int = 10, patience_s: float = 60.0, topic: str = INPUT
    ) -> None:
        """A backlog for every worker: a streaming pull opens some time after /readyz, with no
        signal of it, and a worker whose pull is open takes a backlog alone. So a chunk at a time,
        each taken before the next, until every worker has taken one; then the rest at once. The
        last three chunks' worth go one message a second: on a loaded machine a pull can open
        seconds after the others have taken the chunks before."""
        deadline = time.monotonic() + patience_s
        before = self.consumed()  # what earlier scenarios gave them
        sent = 0

        def taken() -> list[int]:
            return [now - then for now, then in zip(self.consumed(), before)]

        while sent < len(bodies) and not all(taken()) and time.monotonic() < deadline:
            size = chunk if len(bodies) - sent > 3 * chunk else 1
            self.publish(bodies[sent : sent + size], topic)
            sent += len(bodies[sent : sent + size])
            wait_for(lambda: sum(taken()) >= sent, what=f"{sent} taken")
            time.sleep(0.3 if size > 1 else 1.0)
        self.publish(bodies[sent:], topic)

    def publish(self, bodies: list[bytes], topic: str = INPUT, cloud_event: dict[str, str] | None = None) -> None:
        publisher = pubsub_v1.PublisherClient()
        path = publisher.topic_path(self.project, topic)
        # the Pub/Sub binding's names: ce-<attribute>
        attributes = {f"ce-{name}": value for name, value in (cloud_event or {}).items()}
        try:
            futures = [
                publisher.publish(path, body, event_type=EVENT_TYPES[topic], tenant_id=TENANT, **attributes)
                for body in bodies
            ]
            for future in futures:
                future.result(timeout=60)
        finally:
            publisher.stop()

    def reader(self, topic: str) -> Reader:
        """The test's reader of an output topic (one per topic, closed by stop)."""
        if topic not in self.readers:
            self.readers[topic] = Reader(self.project, topic)
        return self.readers[topic]

    def begin(self) -> None:
        """A scenario starts: what was read before it is another scenario's."""
        self.marks = {topic: len(self.reader(topic).messages) for topic in (RESULTS, DEAD)}

    def _documents(self, topic: str, count: int) -> list[dict]:
        mark = self.marks.get(topic, 0)
        return self.reader(topic).until(mark + count)[mark:]

    def results(self, count: int) -> list[dict]:
        return self._documents(RESULTS, count)

    def dead_letters(self, count: int) -> list[dict]:
        return self._documents(DEAD, count)

    def result_fields(self) -> list[dict[str, str]]:
        return [dict(m.attributes) for m in self.reader(RESULTS).messages[self.marks.get(RESULTS, 0) :]]

    def stop(self) -> list[int]:
        codes = stop_processes(*self.processes)
        for reader in self.readers.values():
            reader.close()
        self.readers = {}
        return codes


def _consumed(port: int) -> int:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5.0).text
    return int(
        sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("bias_audit_events_consumed_total{")
        )
    )


def _ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def setup_project(project: str, **settings: Any) -> None:
    """`bias-audit setup` (test_pubsub_worker runs it twice), then the test's readers of the outputs."""
    env = {f"BIAS_AUDIT_{k.upper()}": str(v) for k, v in settings.items()}
    first = run_cli("setup", "--broker", f"pubsub://{project}", env=env)
    assert first.returncode == 0 and "subscription council.sessions.bias-audit: created" in first.stdout, first.stderr
    subscriber = pubsub_v1.SubscriberClient()
    try:  # before anything is published
        for topic in (RESULTS, DEAD):
            subscriber.create_subscription(
                name=subscriber.subscription_path(project, f"test.{topic}"), topic=subscriber.topic_path(project, topic)
            )
    finally:
        subscriber.close()


class Reader:
    """Pulls (and acks) everything on a test subscription of an output topic."""

    def __init__(self, project: str, topic: str) -> None:
        self.client = pubsub_v1.SubscriberClient()
        self.path = self.client.subscription_path(project, f"test.{topic}")
        self.messages: list = []

    def pull(self) -> int:
        try:
            reply = self.client.pull(request={"subscription": self.path, "max_messages": 1000}, timeout=3)
        except DeadlineExceeded:
            return 0
        if reply.received_messages:
            self.client.acknowledge(
                request={"subscription": self.path, "ack_ids": [m.ack_id for m in reply.received_messages]}
            )
            self.messages.extend(m.message for m in reply.received_messages)
        return len(reply.received_messages)

    def until(self, count: int, timeout: float = 120.0, settle: float = 3.0, stall: float | None = None) -> list:
        """Everything read once `count` messages came (or `timeout` passed, or, with `stall`, no
        message came for that long: the rest was lost), then nothing more for `settle` seconds."""
        deadline = time.monotonic() + timeout
        last = time.monotonic()
        while len(self.messages) < count and time.monotonic() < deadline:
            if self.pull():
                last = time.monotonic()
            elif stall is not None and time.monotonic() - last > stall:
                break
        quiet_until = time.monotonic() + settle  # anything extra (a second result) arrives too
        while time.monotonic() < quiet_until:
            if self.pull():
                quiet_until = time.monotonic() + settle
        return [json.loads(m.data) for m in self.messages]

    def close(self) -> None:
        self.client.close()
