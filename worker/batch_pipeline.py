"""What every transport does with a batch: process, publish, acknowledge; retry, split, give up.

Transports differ only in how they publish, acknowledge, keep and give back messages; that is
the `Transport` interface. The processor never learns which transport runs.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import suppress
from typing import Protocol

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from bias_audit.consumers.envelope import Delivery, dead_letter
from bias_audit.consumers.outcome import BatchProcessor, Outcome
from bias_audit.gc_tuning import collector_paused
from bias_audit.storage.postgres import TRANSIENT_ERRORS as POSTGRES_TRANSIENT

from .metrics import WorkerMetrics

log = logging.getLogger("bias_audit.worker")

# The window store is Redis on every transport; the record store is the disk or PostgreSQL.
BASE_TRANSIENT: tuple[type[BaseException], ...] = (
    RedisConnectionError,
    RedisTimeoutError,
    OSError,
    asyncio.TimeoutError,
    *POSTGRES_TRANSIENT,
)


class Transport(Protocol):
    topic: str
    transient_errors: tuple[type[BaseException], ...]
    # True when publishing also acknowledges, atomically (Redis: one script); else the pipeline marks
    # the sessions published between the two steps, so a redelivery is only acknowledged.
    publish_acknowledges: bool

    async def publish(self, outcomes: list[Outcome]) -> None: ...

    async def acknowledge(self, outcomes: list[Outcome]) -> None: ...

    async def hold(self, deliveries: list[Delivery]) -> None:
        """Keep the messages while retrying (other workers must not take them)."""

    async def release(self, deliveries: list[Delivery]) -> None:
        """Give the messages back for a later attempt (here or in another worker)."""


class EvaluationSink(Protocol):
    def emit(self, outcomes: list[Outcome]) -> None:
        """Queue the batch's evaluation events for export; never blocks on the network, never raises."""


class BatchPipeline:
    def __init__(
        self,
        *,
        processor: BatchProcessor,
        transport: Transport,
        metrics: WorkerMetrics,
        max_deliveries: int,
        retry_max_backoff_s: float,
        stopping: asyncio.Event,
        evaluations: EvaluationSink | None = None,
    ) -> None:
        self.processor = processor
        self.evaluations = evaluations
        self.transport = transport
        self.metrics = metrics
        self.max_deliveries = max_deliveries
        self.retry_max_backoff_s = retry_max_backoff_s
        self.stopping = stopping
        self.transient = BASE_TRANSIENT + tuple(transport.transient_errors)
        self.completed = 0
        self.busy_since: float | None = None  # liveness: how long the batch in hand has taken

    async def handle(self, deliveries: list[Delivery]) -> None:
        """On return every message is acknowledged, or given back / left for a later attempt."""
        self.metrics.consumed_batch(self.transport.topic, len(deliveries))
        self.busy_since = time.monotonic()
        try:
            with collector_paused():
                await self._handle(deliveries, time.perf_counter())
        finally:
            self.busy_since = None

    async def _complete(self, outcomes: list[Outcome]) -> None:
        await self.transport.publish(outcomes)
        if not self.transport.publish_acknowledges:
            await self.processor.published(outcomes)
        await self.transport.acknowledge(outcomes)

    async def _handle(self, deliveries: list[Delivery], started: float) -> None:
        backoff = 0.05
        while True:
            try:
                outcomes = await self.processor.process(deliveries)
                await self._complete(outcomes)
                self.completed += len(deliveries)
                self.metrics.completed(self.transport.topic, outcomes, started)
                if self.evaluations is not None:  # after the acknowledgement: what was acknowledged, once
                    self.evaluations.emit(outcomes)
                return
            except self.transient as error:
                self.metrics.failure(self.transport.topic, "transient", len(deliveries))
                log.warning("transient failure, retrying", extra={"error": repr(error), "backoff_s": backoff})
                if self.stopping.is_set():
                    await self._release(deliveries)
                    return
                await self.transport.hold(deliveries)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.retry_max_backoff_s)
            except Exception:
                self.metrics.failure(self.transport.topic, "error", len(deliveries))
                log.exception("batch failed; processing its messages one by one")
                if len(deliveries) == 1:
                    await self._give_up_or_release(deliveries[0], started)
                    return
                for delivery in deliveries:
                    await self._handle([delivery], started)
                return

    async def _release(self, deliveries: list[Delivery]) -> None:
        with suppress(*self.transient):
            await self.transport.release(deliveries)

    async def _give_up_or_release(self, delivery: Delivery, started: float) -> None:
        if delivery.delivery_attempts < self.max_deliveries:
            await self._release([delivery])
            return
        letter = dead_letter(
            delivery,
            f"processing failed {delivery.delivery_attempts} times; see the worker log for the error",
            "processing_failed",
        )
        outcome = Outcome(delivery, dead_letter=letter)
        try:
            await self._complete([outcome])
        except self.transient:
            await self._release([delivery])
            return
        self.metrics.completed(self.transport.topic, [outcome], started)


async def drain_processor(processor: BatchProcessor) -> None:
    """Let a processor finish work it does beside the batches (the task webhook's POSTs)."""
    drain = getattr(processor, "drain", None)
    if drain is not None:
        await drain()
