"""The stream worker on Google Cloud Pub/Sub (google-cloud-pubsub streaming pull).

- The client's callback threads only hand messages to the event loop (call_soon_threadsafe);
  flow control (max outstanding messages / bytes) is the backpressure: Pub/Sub stops sending
  while this worker holds that many unacknowledged.
- Batches go through the same pipeline as on Redis. A message is acknowledged only after its
  result or dead letter was published and its session marked published in Redis, so a
  redelivery (Pub/Sub delivers at least once) is acknowledged without a second result.
- The client's leaser extends leases while a batch is slow or being retried (up to
  pubsub_max_lease_s); a message that fails in our code is nacked and comes back with the
  subscription's backoff; after max_deliveries it gets our dead letter with the reason.
- SIGTERM: stop taking batches, finish the one in hand within the grace period, nack what was
  received but not started (another worker gets it at once), close the stream, flush publishes.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections import OrderedDict
from contextlib import suppress
from typing import Any

from google.api_core import exceptions as gexc

from bias_audit.consumers.envelope import Delivery
from bias_audit.consumers.outcome import BatchProcessor
from bias_audit.producers.pubsub import PubSubOutbox

from .batch_pipeline import BatchPipeline, drain_processor
from .health import redis_reachable, stalled
from .metrics import WorkerMetrics
from .ops_server import OpsServer

log = logging.getLogger("bias_audit.worker")

# Put by _drain into an emptied queue (in one step, no await between), so it is always taken
# first, never inside a batch; messages arriving later wait behind it and are given back.
STOP = object()

PUBSUB_TRANSIENT = (
    gexc.ServiceUnavailable,
    gexc.DeadlineExceeded,
    gexc.TooManyRequests,
    gexc.InternalServerError,
    gexc.Aborted,
    gexc.Unknown,
)


def pubsub_clients(*, publish_batch: int, publish_latency_s: float) -> tuple[Any, Any]:
    """Subscriber and batching publisher (publish_batch messages or publish_latency_s, whichever
    comes first); both honour PUBSUB_EMULATOR_HOST."""
    from google.cloud import pubsub_v1
    from google.cloud.pubsub_v1 import types

    publisher = pubsub_v1.PublisherClient(
        batch_settings=types.BatchSettings(
            max_messages=publish_batch,
            max_bytes=9 * 1024 * 1024,  # the API's request limit is 10 MB
            max_latency=publish_latency_s,
        ),
        publisher_options=types.PublisherOptions(
            flow_control=types.PublishFlowControl(
                message_limit=20 * publish_batch,
                byte_limit=200 * 1024 * 1024,
                limit_exceeded_behavior=types.LimitExceededBehavior.BLOCK,
            ),
        ),
    )
    return pubsub_v1.SubscriberClient(), publisher


class PubSubTransport:
    transient_errors: tuple[type[BaseException], ...] = PUBSUB_TRANSIENT
    publish_acknowledges = False  # two steps: publish, then ack (the pipeline marks in between)

    def __init__(self, outbox: PubSubOutbox, topic: str) -> None:
        self.outbox = outbox
        self.topic = topic

    async def publish(self, outcomes) -> None:
        await self.outbox.publish(outcomes)

    async def acknowledge(self, outcomes) -> None:
        for outcome in outcomes:
            outcome.delivery.handle.ack()

    async def hold(self, deliveries: list[Delivery]) -> None:
        return None  # the client's leaser keeps extending the leases

    async def release(self, deliveries: list[Delivery]) -> None:
        for delivery in deliveries:
            delivery.handle.nack()


class PubSubWorker:
    """Consumes one subscription by streaming pull, through the batch pipeline.

    subscriber: the Pub/Sub subscriber client; subscription: its full path; topic: the input
        topic (the deliveries' source). processor: what handles each batch; outbox: publishes
        results (acknowledged after they are published). window_client: the windows' Redis.
    batch_size: messages handed to the pipeline at once.
    max_outstanding, max_outstanding_bytes: flow control, the messages held unacknowledged.
    lease_extension_s, max_lease_s: each lease extension (how soon a dead worker's messages
        return) and the longest lease.
    max_deliveries, retry_max_backoff_s, shutdown_grace_s, liveness_stall_s, ops_host, ops_port:
        as for RedisStreamsWorker.
    """

    def __init__(
        self,
        *,
        subscriber: Any,
        subscription: str,
        topic: str,
        processor: BatchProcessor,
        outbox: PubSubOutbox,
        consumer_name: str,
        batch_size: int = 100,
        max_outstanding: int = 1000,
        max_outstanding_bytes: int = 100 * 1024 * 1024,
        lease_extension_s: int = 20,
        max_lease_s: float = 3600.0,
        max_deliveries: int = 5,
        retry_max_backoff_s: float = 10.0,
        shutdown_grace_s: float = 20.0,
        liveness_stall_s: float = 300.0,
        ops_host: str = "127.0.0.1",
        ops_port: int = 9464,
        metrics: WorkerMetrics | None = None,
        evaluations: Any = None,
        window_client: Any = None,
    ) -> None:
        self.subscriber = subscriber
        self.outbox = outbox
        self.window_client = window_client
        self.topic = topic
        self.subscription = subscription
        self.consumer_name, self.batch_size, self.max_outstanding = consumer_name, batch_size, max_outstanding
        self.max_outstanding_bytes, self.lease_extension_s = max_outstanding_bytes, lease_extension_s
        self.max_lease_s, self.shutdown_grace_s, self.liveness_stall_s = max_lease_s, shutdown_grace_s, liveness_stall_s
        self.ops_host, self.ops_port = ops_host, ops_port
        self.stopping = asyncio.Event()
        self.metrics = metrics or WorkerMetrics("pubsub")
        self.transport = PubSubTransport(outbox, self.topic)
        self.pipeline = BatchPipeline(
            processor=processor,
            transport=self.transport,
            metrics=self.metrics,
            max_deliveries=max_deliveries,
            retry_max_backoff_s=retry_max_backoff_s,
            stopping=self.stopping,
            evaluations=evaluations,
        )
        self.queue: asyncio.Queue[Any] = asyncio.Queue()  # messages from the client's threads
        self.stream: Any = None  # the StreamingPullFuture, once subscribed
        self.stream_error: BaseException | None = None
        self._consume_task: asyncio.Task[None] | None = None
        # Without a dead-letter policy Pub/Sub does not count attempts; count them here too.
        self._attempts: OrderedDict[str, int] = OrderedDict()
        self.ops: OpsServer | None = None

    @property
    def processed(self) -> int:
        return self.pipeline.completed

    def _delivery(self, message) -> Delivery:
        seen = self._attempts.pop(message.message_id, 0) + 1
        self._attempts[message.message_id] = seen
        while len(self._attempts) > 100_000:
            self._attempts.popitem(last=False)
        return Delivery(
            delivery_id=message.message_id,
            body=message.data,
            source_topic=self.topic,
            attributes=dict(message.attributes),
            delivery_attempts=max(message.delivery_attempt or 0, seen),
            handle=message,
        )

    async def _consume(self) -> None:
        while True:
            first = await self.queue.get()
            if first is STOP:
                return
            batch = [first]
            while len(batch) < self.batch_size and not self.queue.empty():
                batch.append(self.queue.get_nowait())
            self.metrics.pending.labels("pubsub", self.topic).set(self.queue.qsize() + len(batch))
            await self.pipeline.handle([self._delivery(message) for message in batch])

    def _give_back(self, messages) -> None:
        for message in messages:
            message.nack()

    def _stream_ended(self, future) -> None:
        if self.stopping.is_set():
            return
        self.stream_error = future.exception() or RuntimeError("the streaming pull ended")
        log.error("streaming pull ended", extra={"error": repr(self.stream_error), "subscription": self.subscription})
        self.stopping.set()

    # -- health (the ops server asks) --
    def liveness(self) -> tuple[bool, str]:
        if self.stream is None:
            return True, "starting"
        if self.stream.done() and not self.stopping.is_set():
            return False, "the streaming pull ended"
        if self._consume_task is not None and self._consume_task.done() and not self.stopping.is_set():
            return False, "the consume loop ended"
        return stalled(self.pipeline, self.liveness_stall_s)

    async def readiness(self) -> tuple[bool, str]:
        ok, detail = await redis_reachable({"window store": self.window_client})
        try:
            loop = asyncio.get_running_loop()
            await asyncio.wait_for(
                loop.run_in_executor(
                    None, lambda: self.subscriber.get_subscription(subscription=self.subscription, timeout=2.0)
                ),
                3.0,
            )
        except Exception as error:  # the reason is reported, not raised
            return False, f"Pub/Sub subscription {self.subscription} unreachable: {error.__class__.__name__}: {error}"
        return ok, detail if not ok else "Pub/Sub subscription and window store reachable"

    async def run(
        self, *, install_signal_handlers: bool = True, ready: asyncio.Event | None = None, ops: bool = True
    ) -> None:
        """ops=False: a MultiInputWorker serves the probes and metrics for all its inputs."""
        from google.cloud.pubsub_v1.types import FlowControl

        loop = asyncio.get_running_loop()
        self.ops = OpsServer(self, self.metrics, self.ops_host, self.ops_port if ops else -1)
        await self.ops.start()
        if install_signal_handlers:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stopping.set)

        def on_message(message) -> None:  # runs on the client's threads: only hand it over
            loop.call_soon_threadsafe(self.queue.put_nowait, message)

        flow = FlowControl(
            max_messages=self.max_outstanding,
            max_bytes=self.max_outstanding_bytes,
            max_lease_duration=self.max_lease_s,
            min_duration_per_lease_extension=self.lease_extension_s,
            max_duration_per_lease_extension=self.lease_extension_s,
        )
        stream = self.stream = self.subscriber.subscribe(
            self.subscription, on_message, flow_control=flow, await_callbacks_on_shutdown=True
        )
        stream.add_done_callback(lambda future: loop.call_soon_threadsafe(self._stream_ended, future))
        consume = self._consume_task = asyncio.create_task(self._consume())
        log.info("worker started", extra={"subscription": self.subscription, "consumer": self.consumer_name})
        if ready is not None:
            ready.set()
        try:
            await self.stopping.wait()
        finally:
            await self._drain(loop, stream, consume)
        if self.stream_error is not None:
            raise self.stream_error

    async def _drain(self, loop: asyncio.AbstractEventLoop, stream: Any, consume: asyncio.Task[None]) -> None:
        log.info("draining", extra={"grace_s": self.shutdown_grace_s})
        self._give_back(self._drain_queue())  # received, never started: another worker takes them now
        self.queue.put_nowait(STOP)  # the batch in hand finishes, then the loop ends
        try:
            await asyncio.wait_for(consume, self.shutdown_grace_s)
        except asyncio.TimeoutError:
            log.warning("grace period over; the batch in hand is left to be redelivered")
        self._give_back(self._drain_queue())  # arrived while draining
        stream.cancel()
        await loop.run_in_executor(None, self._close_clients)
        self._give_back(self._drain_queue())  # arrived while closing; redelivered after the deadline
        await drain_processor(self.pipeline.processor)  # task suggestions on their way to the webhook
        if self.ops is not None:
            await self.ops.stop()
        log.info("worker stopped", extra={"processed": self.processed})

    def _drain_queue(self) -> list:
        messages = []
        while not self.queue.empty():
            message = self.queue.get_nowait()
            if message is not STOP:
                messages.append(message)
        return messages

    def _close_clients(self) -> None:
        with suppress(Exception):
            self.stream.result(timeout=self.shutdown_grace_s)
        self.subscriber.close()
        self.outbox.stop()
