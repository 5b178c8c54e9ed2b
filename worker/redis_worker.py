"""The stream worker on Redis Streams: FastStream consumes, our outbox publishes and acks.

- The consumer group is created from the stream's start (id 0), so events published before the
  first worker started are processed. (FastStream creates groups at `$`, and with an explicit
  start id it keeps re-reading only its own pending entries after a restart; we create the group
  and let FastStream read `>`.)
- An entry is acknowledged only in the same MULTI that publishes its result or dead letter.
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
from contextlib import suppress

from faststream import AckPolicy
from faststream.redis import RedisBroker, StreamSub
from faststream.redis.annotations import RedisBatchStreamMessage
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from consumers.council import CouncilSessionConsumer, Outcome
from consumers.envelope import Delivery, dead_letter
from producers.redis_streams import RedisStreamsOutbox

from .logging_setup import FASTSTREAM_LOGGER

log = logging.getLogger("bias_audit.worker")

TRANSIENT = (RedisConnectionError, RedisTimeoutError, OSError, asyncio.TimeoutError)


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
    return Delivery(delivery_id=entry_id, body=body, source_topic=stream, attributes=attributes,
                    delivery_attempts=attempts)


class RedisStreamsWorker:
    def __init__(self, *, settings, client: Redis, consumer: CouncilSessionConsumer, outbox: RedisStreamsOutbox) -> None:
        self.settings = settings
        self.client = client
        self.consumer = consumer
        self.outbox = outbox
        self.stream = settings.input_topic
        self.group = settings.group
        self.stopping = asyncio.Event()
        self.processed = 0
        # Entries this process is handling (or retrying): the reclaimer must not start a second
        # handling of them, or a session would get two results.
        self.in_flight: set[str] = set()
        self.broker = RedisBroker(
            settings.broker_url,
            graceful_timeout=settings.shutdown_grace_s,
            log_level=logging.DEBUG,  # its per-batch "Received/Processed" lines: debug only
            logger=logging.getLogger(FASTSTREAM_LOGGER),
        )
        subscriber = self.broker.subscriber(
            stream=StreamSub(
                self.stream,
                group=self.group,
                consumer=settings.consumer_name,
                batch=True,
                max_records=settings.batch_size,
                polling_interval=settings.poll_ms,
                last_id=">",
            ),
            ack_policy=AckPolicy.MANUAL,
        )
        subscriber(self._on_batch)

    async def _on_batch(self, body, msg: RedisBatchStreamMessage) -> None:
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
            await self._handle(deliveries)
        finally:
            self.in_flight.difference_update(ids)

    async def _keep_claimed(self, deliveries: list[Delivery]) -> None:
        """Reset the entries' idle time while retrying, so other workers' reclaimers leave them."""
        with suppress(*TRANSIENT):
            await self.client.xclaim(self.stream, self.group, self.settings.consumer_name, 0,
                                     [d.delivery_id for d in deliveries], justid=True)

    async def _handle(self, deliveries: list[Delivery]) -> None:
        backoff = 0.05
        while True:
            try:
                outcomes = await self.consumer.process(deliveries)
                await self.outbox.complete(outcomes, stream=self.stream, group=self.group)
                self.processed += len(deliveries)
                return
            except TRANSIENT as error:
                log.warning("transient failure, retrying", extra={"error": repr(error), "backoff_s": backoff})
                if self.stopping.is_set():
                    return  # left pending: another worker (or this one, restarted) takes it
                await self._keep_claimed(deliveries)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.settings.retry_max_backoff_s)
            except Exception:
                log.exception("batch failed; processing its entries one by one")
                if len(deliveries) == 1:
                    await self._give_up_or_leave(deliveries[0])
                    return
                for delivery in deliveries:
                    await self._handle([delivery])
                return

    async def _give_up_or_leave(self, delivery: Delivery) -> None:
        if delivery.delivery_attempts < self.settings.max_deliveries:
            return  # stays pending; the reclaimer retries it after claim_idle_ms
        letter = dead_letter(
            delivery,
            f"processing failed {delivery.delivery_attempts} times; see the worker log for the error",
            "processing_failed",
        )
        with suppress(*TRANSIENT):
            await self.outbox.complete([Outcome(delivery, dead_letter=letter)], stream=self.stream, group=self.group)

    async def reclaim_once(self) -> None:
        """Take over entries idle longer than claim_idle_ms (a dead or stuck worker's)."""
        start = "0-0"
        while not self.stopping.is_set():
            reply = await self.client.xautoclaim(
                self.stream, self.group, self.settings.consumer_name,
                min_idle_time=self.settings.claim_idle_ms, start_id=start, count=self.settings.batch_size,
            )
            start, entries = reply[0], reply[1]
            if entries:
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
                    log.info("reclaimed pending entries", extra={"count": len(live)})
                    await self.handle(live)
            if start in (b"0-0", "0-0"):
                return

    async def _delivery_counts(self, ids) -> dict:
        pending = await self.client.xpending_range(
            self.stream, self.group, min=ids[0], max=ids[-1], count=len(ids) + 100,
            consumername=self.settings.consumer_name,
        )
        return {p["message_id"]: p["times_delivered"] for p in pending}

    async def _reclaimer(self) -> None:
        while not self.stopping.is_set():
            try:
                await self.reclaim_once()
            except TRANSIENT as error:
                log.warning("reclaimer: Redis unreachable", extra={"error": repr(error)})
            except Exception:
                log.exception("reclaimer failed; will retry")
            with suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), timeout=self.settings.reclaim_interval_s)

    async def run(self, *, install_signal_handlers: bool = True, ready: asyncio.Event | None = None) -> None:
        await ensure_group(self.client, self.stream, self.group)
        if install_signal_handlers:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stopping.set)
        await self.broker.start()
        reclaimer = asyncio.create_task(self._reclaimer())
        log.info("worker started", extra={"stream": self.stream, "group": self.group,
                                          "consumer": self.settings.consumer_name})
        if ready is not None:
            ready.set()
        try:
            await self.stopping.wait()
        finally:
            log.info("draining", extra={"grace_s": self.settings.shutdown_grace_s})
            await self.broker.stop()  # waits for the batch in hand, up to graceful_timeout
            reclaimer.cancel()
            with suppress(asyncio.CancelledError):
                await reclaimer
            log.info("worker stopped", extra={"processed": self.processed})
