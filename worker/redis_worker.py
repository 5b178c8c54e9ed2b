"""The stream worker on Redis Streams: FastStream consumes, our outbox publishes and acks.

- The consumer group is created from the stream's start (id 0), so events published before the
  first worker started are processed. (FastStream creates groups at `$`, and with an explicit
  start id it keeps re-reading only its own pending entries after a restart; we create the group
  and let FastStream read `>`.)
- An entry is acknowledged only in the same atomic script call that publishes its result or dead letter.
- Transient failures (Redis unreachable, disk) are retried with backoff, never acked early.
- A batch that fails for any other reason is split so one poison entry cannot block the rest;
  an entry that keeps failing is dead-lettered after `max_deliveries`.
- A reclaimer takes over entries another worker left pending longer than `claim_idle_ms`.
- SIGTERM: stop reading, finish the batch in hand (within the grace period), exit.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from contextlib import suppress
from typing import Any

from faststream import AckPolicy
from faststream.redis import RedisBroker, StreamSub
from faststream.redis.annotations import RedisBatchStreamMessage
from redis.asyncio import Redis
from redis.exceptions import ResponseError

from bias_audit.consumers.envelope import Delivery
from bias_audit.consumers.outcome import BatchProcessor
from bias_audit.producers.redis_streams import RedisStreamsOutbox

from .batch_pipeline import BASE_TRANSIENT, BatchPipeline, drain_processor
from .health import redis_reachable, stalled, unread
from .logging_setup import FASTSTREAM_LOGGER
from .metrics import WorkerMetrics
from .ops_server import OpsServer

log = logging.getLogger("bias_audit.worker")
READ_SETTLE_S = 0.1  # beyond poll_ms: the loop to take back the read's answer


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def ensure_group(client: Redis, stream: str, group: str) -> bool:
    """Create the consumer group at the stream's start; True if it was created now."""
    try:
        await client.xgroup_create(stream, group, id="0", mkstream=True)
        return True
    except ResponseError as error:
        if "BUSYGROUP" in str(error):
            return False
        raise


def delivery_from_entry(stream: str, entry_id: bytes | str, fields: dict | None, attempts: int = 1) -> Delivery:
    entry_id = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    fields = fields or {}
    attributes = {}
    body = b""
    for key, value in fields.items():
        key = key.decode("utf-8", "replace") if isinstance(key, bytes) else key
        if key == "data":
            body = value if isinstance(value, bytes) else str(value).encode()
        else:
            attributes[key] = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return Delivery(
        delivery_id=entry_id, body=body, source_topic=stream, attributes=attributes, delivery_attempts=attempts
    )


async def _unparsed_batch(message: Any, original_parser: Any) -> Any:
    """FastStream's batch message built around placeholder entries (its parser JSON-encodes each
    entry and fails the batch on one non-UTF-8 body), then given the real entries back."""
    placeholder = {**message, "data": [{b"data": b"null"} for _ in message["data"]]}
    parsed = await original_parser(placeholder)
    parsed.raw_message = message
    return parsed


class RedisStreamsTransport:
    """Redis Streams under the batch pipeline: publish and XACK in one atomic script call; a message given
    back stays pending, and the reclaimer (here or in another worker) retries it later."""

    transient_errors: tuple[type[BaseException], ...] = ()
    publish_acknowledges = True

    def __init__(
        self, client: Redis, outbox: RedisStreamsOutbox, *, stream: str, group: str, consumer_name: str
    ) -> None:
        self.client = client
        self.outbox = outbox
        self.topic = stream
        self.group = group
        self.consumer_name = consumer_name

    async def publish(self, outcomes) -> None:
        await self.outbox.complete(outcomes, stream=self.topic, group=self.group)

    async def acknowledge(self, outcomes) -> None:
        return None  # done in publish's script call

    async def hold(self, deliveries: list[Delivery]) -> None:
        # XCLAIM JUSTID resets the idle time, so other workers' reclaimers leave them.
        with suppress(*BASE_TRANSIENT):
            await self.client.xclaim(
                self.topic, self.group, self.consumer_name, 0, [d.delivery_id for d in deliveries], justid=True
            )

    async def release(self, deliveries: list[Delivery]) -> None:
        return None  # pending until claim_idle_ms, then reclaimed


class RedisStreamsWorker:
    """Consumes one input stream in a consumer group, through the batch pipeline.

    client: the broker's Redis; window_client: the windows' Redis (default: the broker's).
    processor: what handles each batch; outbox: publishes results and acknowledges in one atomic script call.
    broker_url: for FastStream's subscriber; stream, group, consumer_name: where it reads, as whom.
    batch_size: entries per read; poll_ms: how long a read blocks.
    claim_idle_ms, reclaim_interval_s: entries pending this long in a dead consumer are taken
        over, checked this often.
    max_deliveries: attempts before a failing entry is dead-lettered; retry_max_backoff_s: the
        longest wait between retries of a batch that hit a transient error.
    shutdown_grace_s: on SIGTERM, the batch in hand is finished within this time.
    liveness_stall_s: a batch in hand longer than this makes /healthz fail.
    ops_host, ops_port: /healthz, /readyz, /metrics (port 0: any free, -1: none).
    """

    def __init__(
        self,
        *,
        client: Redis,
        processor: BatchProcessor,
        outbox: RedisStreamsOutbox,
        broker_url: str,
        stream: str,
        group: str,
        consumer_name: str,
        batch_size: int = 100,
        poll_ms: int = 100,
        claim_idle_ms: int = 30_000,
        reclaim_interval_s: float = 5.0,
        max_deliveries: int = 5,
        retry_max_backoff_s: float = 10.0,
        shutdown_grace_s: float = 20.0,
        liveness_stall_s: float = 300.0,
        ops_host: str = "127.0.0.1",
        ops_port: int = 9464,
        metrics: WorkerMetrics | None = None,
        evaluations: Any = None,
        window_client: Redis | None = None,
    ) -> None:
        self.client = client
        self.window_client = window_client or client
        self.stream = stream
        self.group = group
        self.consumer_name, self.batch_size, self.claim_idle_ms = consumer_name, batch_size, claim_idle_ms
        self.reclaim_interval_s, self.shutdown_grace_s = reclaim_interval_s, shutdown_grace_s
        self.liveness_stall_s, self.ops_host, self.ops_port = liveness_stall_s, ops_host, ops_port
        self.poll_s = poll_ms / 1000
        self.stopping = asyncio.Event()
        self.metrics = metrics or WorkerMetrics("redis")
        self.transport = RedisStreamsTransport(
            client, outbox, stream=self.stream, group=self.group, consumer_name=consumer_name
        )
        self.pipeline = BatchPipeline(
            processor=processor,
            transport=self.transport,
            metrics=self.metrics,
            max_deliveries=max_deliveries,
            retry_max_backoff_s=retry_max_backoff_s,
            stopping=self.stopping,
            evaluations=evaluations,
        )
        # Entries this process is handling (or retrying): the reclaimer must not start a second
        # handling of them, or a session would get two results.
        self.in_flight: set[str] = set()
        self.broker = RedisBroker(
            broker_url,
            graceful_timeout=shutdown_grace_s,
            log_level=logging.DEBUG,  # its per-batch "Received/Processed" lines: debug only
            logger=logging.getLogger(FASTSTREAM_LOGGER),
        )
        self.subscriber = self.broker.subscriber(
            stream=StreamSub(
                self.stream,
                group=self.group,
                consumer=consumer_name,
                batch=True,
                max_records=batch_size,
                polling_interval=poll_ms,
                last_id=">",
            ),
            ack_policy=AckPolicy.MANUAL,
            # FastStream would decode every entry before our handler runs, and one non-UTF-8 entry
            # then fails the whole batch until the reclaimer takes it: each entry is
            # decoded (and dead-lettered if it must be) by the consumer, one by one.
            parser=_unparsed_batch,
        )
        self.subscriber(self._on_batch)
        # the read loop's heartbeat: when a batch was last read, and since when entries wait unread
        self.last_read = time.monotonic()
        self.waiting_since: float | None = None
        self._started = False
        self.ops: OpsServer | None = None

    @property
    def processed(self) -> int:
        return self.pipeline.completed

    async def _on_batch(self, body: Any, msg: RedisBatchStreamMessage) -> None:  # body: placeholders
        self.last_read = time.monotonic()
        raw = msg.raw_message
        deliveries = [
            delivery_from_entry(self.stream, entry_id, fields)
            for entry_id, fields in zip(raw["message_ids"], raw["data"])
        ]
        await self.handle(deliveries)

    async def handle(self, deliveries: list[Delivery]) -> None:
        """Process and complete a batch; on return every entry is acked or left pending."""
        ids = [d.delivery_id for d in deliveries]
        self.in_flight.update(ids)
        try:
            await self.pipeline.handle(deliveries)
        finally:
            self.in_flight.difference_update(ids)

    # -- health (the ops server asks) --
    def liveness(self) -> tuple[bool, str]:
        if not self._started:
            return True, "starting"
        if not self.subscriber.running:
            return False, "the stream subscriber is not running"
        ok, detail = unread(self.waiting_since, self.last_read, self.liveness_stall_s, time.monotonic())
        return stalled(self.pipeline, self.liveness_stall_s) if ok else (ok, detail)

    async def readiness(self) -> tuple[bool, str]:
        return await redis_reachable({"broker": self.client, "window store": self.window_client})

    async def refresh_lag(self) -> None:
        """The group's pending and lag gauges, and whether entries wait unread (the last id the
        group was handed is not the stream's last: Redis 6 reports no lag)."""
        newest = _text((await self.client.xinfo_stream(self.stream)).get("last-generated-id"))
        for group in await self.client.xinfo_groups(self.stream):
            if _text(group.get("name")) == self.group:
                waiting = _text(group.get("last-delivered-id")) != newest
                if not waiting:
                    self.waiting_since = None
                elif self.waiting_since is None:
                    self.waiting_since = time.monotonic()
                self.metrics.pending.labels("redis", self.stream).set(int(group.get("pending") or 0))
                if group.get("lag") is not None:  # Redis >= 7
                    self.metrics.lag.labels("redis", self.stream).set(int(group["lag"]))

    async def reclaim_once(self) -> None:
        """Take over entries idle longer than claim_idle_ms (a dead or stuck worker's)."""
        start = "0-0"
        while not self.stopping.is_set():
            reply = await self.client.xautoclaim(
                self.stream,
                self.group,
                self.consumer_name,
                min_idle_time=self.claim_idle_ms,
                start_id=start,
                count=self.batch_size,
            )
            start, entries = reply[0], reply[1]
            if entries:
                await self._take_over(entries, "reclaimed pending entries")
            if start in (b"0-0", "0-0"):
                return

    async def _take_over(self, entries, what: str) -> None:
        """Handle claimed entries (not those this process is handling already)."""
        attempts = await self._delivery_counts([e[0] for e in entries])
        deliveries = [
            delivery_from_entry(self.stream, entry_id, fields, attempts.get(entry_id, 1))
            for entry_id, fields in entries
        ]
        live = [d for d in deliveries if (d.body or d.attributes) and d.delivery_id not in self.in_flight]
        gone = [d for d in deliveries if not (d.body or d.attributes)]
        if gone:  # trimmed from the stream while pending: nothing left to process
            await self.client.xack(self.stream, self.group, *[d.delivery_id for d in gone])
        if live:
            log.info(what, extra={"count": len(live)})
            await self.handle(live)

    async def finish_read_entries(self) -> None:
        """At shutdown: FastStream can stop between reading a batch and handing it over. Those
        entries are pending under this consumer; finish them now instead of leaving them for
        another worker's reclaimer after claim_idle_ms."""
        pending = await self.client.xpending_range(
            self.stream,
            self.group,
            min="-",
            max="+",
            count=10 * self.batch_size,
            consumername=self.consumer_name,
        )
        ids: list[Any] = [p["message_id"] for p in pending]
        if ids:
            entries = await self.client.xclaim(self.stream, self.group, self.consumer_name, 0, ids)
            await self._take_over(entries, "finishing entries read before the stop")

    async def _delivery_counts(self, ids) -> dict:
        pending = await self.client.xpending_range(
            self.stream,
            self.group,
            min=ids[0],
            max=ids[-1],
            count=len(ids) + 100,
            consumername=self.consumer_name,
        )
        return {p["message_id"]: p["times_delivered"] for p in pending}

    async def _reclaimer(self) -> None:
        while not self.stopping.is_set():
            try:
                await self.reclaim_once()
                await self.refresh_lag()
            except BASE_TRANSIENT as error:
                log.warning("reclaimer: Redis unreachable", extra={"error": repr(error)})
            except Exception:
                log.exception("reclaimer failed; will retry")
            with suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), timeout=self.reclaim_interval_s)

    async def run(
        self, *, install_signal_handlers: bool = True, ready: asyncio.Event | None = None, ops: bool = True
    ) -> None:
        """ops=False: a MultiInputWorker serves the probes and metrics for all its inputs."""
        await ensure_group(self.client, self.stream, self.group)
        ops_server = OpsServer(self, self.metrics, self.ops_host, self.ops_port if ops else -1)
        await ops_server.start()
        self.ops = ops_server
        if install_signal_handlers:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stopping.set)
        await self.broker.start()
        self._started = True
        reclaimer = asyncio.create_task(self._reclaimer())
        log.info("worker started", extra={"stream": self.stream, "group": self.group, "consumer": self.consumer_name})
        if ready is not None:
            ready.set()
        try:
            await self.stopping.wait()
        finally:
            log.info("draining", extra={"grace_s": self.shutdown_grace_s})
            await self.subscriber.stop()  # waits for the batch in hand, up to graceful_timeout
            # the stop does not cut a read in flight, which blocks up to poll_ms more: closing the
            # connection under it would log "Message fetch error" with a traceback
            await asyncio.sleep(self.poll_s + READ_SETTLE_S)
            await self.broker.stop()
            with suppress(*BASE_TRANSIENT):
                await asyncio.wait_for(self.finish_read_entries(), self.shutdown_grace_s)
            reclaimer.cancel()
            with suppress(asyncio.CancelledError):
                await reclaimer
            await drain_processor(self.pipeline.processor)  # task suggestions on their way to the webhook
            await ops_server.stop()
            log.info("worker stopped", extra={"processed": self.processed})
