"""An in-memory broker and the worker over it: the batch pipeline with its retry, split and
dead-letter paths, run in-process on lists instead of a network (as faststream's TestBroker
does for its brokers). For fast tests; the scenario suite runs it beside Redis and Pub/Sub.

Messages live in a topic until acknowledged; a message given back is delivered again with its
attempt count raised, as Redis' reclaimer and Pub/Sub's redelivery do.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field

import orjson

from bias_audit.consumers.envelope import Delivery
from bias_audit.consumers.outcome import BatchProcessor, Outcome
from bias_audit.producers.wire import OutputTopics, outcome_entries

from .batch_pipeline import BatchPipeline
from .metrics import WorkerMetrics


@dataclass
class _Message:
    message_id: str
    fields: dict[str, str | bytes]
    attempts: int = 1


@dataclass
class MemoryBroker:
    """Input topics (queues of messages not yet handed out) and every published entry."""

    waiting: dict[str, deque[_Message]] = field(default_factory=dict)
    unacknowledged: dict[str, _Message] = field(default_factory=dict)
    published: dict[str, list[dict[str, str | bytes]]] = field(default_factory=dict)
    _next_id: int = 0

    def send(self, topic: str, fields: dict[str, str | bytes]) -> str:
        """An input message, as a producer sends it (wire fields: data, event_type, ...)."""
        self._next_id += 1
        message = _Message(f"{topic}-{self._next_id}", fields)
        self.waiting.setdefault(topic, deque()).append(message)
        return message.message_id

    def take(self, topic: str, count: int) -> list[_Message]:
        queue = self.waiting.get(topic, deque())
        taken = [queue.popleft() for _ in range(min(count, len(queue)))]
        self.unacknowledged.update((m.message_id, m) for m in taken)
        return taken

    def documents(self, topic: str) -> list[dict[str, object]]:
        """The JSON documents published on an output topic, in order."""
        return [orjson.loads(fields["data"]) for fields in self.published.get(topic, [])]


class MemoryTransport:
    """The Transport of the batch pipeline over a MemoryBroker: publish appends, acknowledge
    forgets, release puts the message back at the end of its topic with one more attempt."""

    transient_errors: tuple[type[BaseException], ...] = ()
    publish_acknowledges = False

    def __init__(self, broker: MemoryBroker, topic: str, outputs: OutputTopics) -> None:
        self.broker, self.topic, self.outputs = broker, topic, outputs
        self.held: list[str] = []  # message ids kept while a batch was retried

    async def publish(self, outcomes: list[Outcome]) -> None:
        for topic, fields in outcome_entries(outcomes, self.outputs):
            self.broker.published.setdefault(topic, []).append(fields)

    async def acknowledge(self, outcomes: list[Outcome]) -> None:
        for outcome in outcomes:
            self.broker.unacknowledged.pop(outcome.delivery.delivery_id, None)

    async def hold(self, deliveries: list[Delivery]) -> None:
        self.held.extend(d.delivery_id for d in deliveries)

    async def release(self, deliveries: list[Delivery]) -> None:
        for delivery in deliveries:
            message = self.broker.unacknowledged.pop(delivery.delivery_id)
            message.attempts += 1
            self.broker.waiting.setdefault(self.topic, deque()).append(message)


class MemoryWorker:
    """A worker on one input topic of a MemoryBroker.

    processor: what handles each batch (a CouncilSessionProcessor, ResponseProcessor or the
        EventRouter over both).
    topic: the input topic; batch_size: messages per batch.
    max_deliveries: attempts before a message that keeps failing is dead-lettered.
    retry_max_backoff_s: the longest wait between retries of a batch that hit a transient error.
    outputs: the result, alert and dead-letter topics.
    """

    def __init__(
        self,
        broker: MemoryBroker,
        processor: BatchProcessor,
        *,
        topic: str = "council.sessions",
        batch_size: int = 100,
        max_deliveries: int = 5,
        retry_max_backoff_s: float = 0.05,
        outputs: OutputTopics = OutputTopics(),
    ) -> None:
        self.broker, self.topic, self.batch_size = broker, topic, batch_size
        self.stopping = asyncio.Event()
        self.transport = MemoryTransport(broker, topic, outputs)
        self.pipeline = BatchPipeline(
            processor=processor,
            transport=self.transport,
            metrics=WorkerMetrics("memory"),
            max_deliveries=max_deliveries,
            retry_max_backoff_s=retry_max_backoff_s,
            stopping=self.stopping,
        )

    async def run_batch(self) -> int:
        """Handle the next batch; the number of messages it held (0: the topic is empty)."""
        messages = self.broker.take(self.topic, self.batch_size)
        if messages:
            await self.pipeline.handle(
                [
                    Delivery(
                        delivery_id=m.message_id,
                        body=_as_bytes(m.fields.get("data", b"")),
                        source_topic=self.topic,
                        attributes={k: _as_text(v) for k, v in m.fields.items() if k != "data"},
                        delivery_attempts=m.attempts,
                    )
                    for m in messages
                ]
            )
        return len(messages)

    async def run_until_idle(self) -> None:
        """Burst mode: batches until nothing waits (given-back messages included)."""
        while await self.run_batch():
            pass


def _as_bytes(value: str | bytes) -> bytes:
    return value.encode() if isinstance(value, str) else value


def _as_text(value: str | bytes) -> str:
    return value if isinstance(value, str) else value.decode("utf-8", errors="replace")
