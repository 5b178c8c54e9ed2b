"""The batch pipeline's failure paths, on the in-memory transport: a message that breaks its
batch is split out, retried on redelivery and dead-lettered after max_deliveries with the reason;
a transient failure holds the batch and retries it; its neighbours are processed once."""

from __future__ import annotations

import asyncio
import json

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from bias_audit.consumers.council import CouncilSessionProcessor
from bias_audit.consumers.envelope import Delivery
from bias_audit.consumers.outcome import Outcome
from bias_audit.producers.wire import wire_fields
from bias_audit.state.memory_window import MemoryWindow
from bias_audit.worker.memory_worker import MemoryBroker, MemoryWorker
from bias_audit.worker.samples import generate_sessions

RESULTS, DEAD, INPUT = "bias.audit.stream", "bias.audit.deadletter", "council.sessions"


class Breaks:
    """A processor that fails (as a bug would) on any batch holding a body with `poison`, and
    raises a transient error on its first `transient` calls."""

    def __init__(self, poison: bytes = b"", transient: int = 0) -> None:
        self.inner = CouncilSessionProcessor(window=MemoryWindow(), store=None)
        self.poison, self.transient = poison, transient
        self.batches: list[int] = []

    async def process(self, deliveries: list[Delivery]) -> list[Outcome]:
        self.batches.append(len(deliveries))
        if self.transient:
            self.transient -= 1
            raise RedisConnectionError("window store away")
        if self.poison and any(self.poison in d.body for d in deliveries):
            raise ZeroDivisionError("a bug")
        return await self.inner.process(deliveries)

    async def published(self, outcomes: list[Outcome]) -> None:
        await self.inner.published(outcomes)


def send(broker: MemoryBroker, sessions: list[dict]) -> None:
    for session in sessions:
        broker.send(
            INPUT, wire_fields(json.dumps(session), event_type="council.session", tenant_id="demo", trace_id=None)
        )


def test_a_message_that_breaks_its_batch_is_split_out_and_dead_lettered_after_max_deliveries(caplog):
    broker = MemoryBroker()
    sessions = generate_sessions(10, seed=61)
    sessions[3]["council_config_version"] = "POISON"
    send(broker, sessions)
    processor = Breaks(poison=b"POISON")
    worker = MemoryWorker(broker, processor, batch_size=10, max_deliveries=3)
    asyncio.run(worker.run_until_idle())
    results = broker.documents(RESULTS)
    assert sorted(r["audit_id"] for r in results) == sorted(s["session_id"] for i, s in enumerate(sessions) if i != 3)
    [letter] = broker.documents(DEAD)
    assert letter["error_type"] == "processing_failed" and letter["delivery_attempts"] == 3
    assert "3 times" in letter["error"] and "\n" not in letter["error"]  # how often, in one line
    assert letter["payload"]["session_id"] == sessions[3]["session_id"] and "query" not in letter["payload"]
    # the batch of 10, then each alone (split), then the poison twice more alone (redeliveries)
    assert processor.batches == [10, *[1] * 10, 1, 1]
    assert broker.unacknowledged == {} and not any(broker.waiting.values())
    assert "batch failed; processing its messages one by one" in caplog.text


def test_a_transient_failure_holds_the_batch_and_retries_it_without_repeats():
    broker = MemoryBroker()
    sessions = generate_sessions(6, seed=62)
    send(broker, sessions)
    processor = Breaks(transient=2)
    worker = MemoryWorker(broker, processor, batch_size=6)
    asyncio.run(worker.run_until_idle())
    assert processor.batches == [6, 6, 6]  # held and retried whole: never split, never redelivered
    assert len(worker.transport.held) == 12
    results = broker.documents(RESULTS)
    assert [r["audit_id"] for r in results] == [s["session_id"] for s in sessions]
    assert broker.documents(DEAD) == []


def test_a_transient_failure_while_stopping_gives_the_batch_back():
    broker = MemoryBroker()
    send(broker, generate_sessions(4, seed=63))
    worker = MemoryWorker(broker, Breaks(transient=1), batch_size=4)
    worker.stopping.set()
    assert asyncio.run(worker.run_batch()) == 4
    assert broker.documents(RESULTS) == []
    waiting = list(broker.waiting[INPUT])
    assert len(waiting) == 4 and {m.attempts for m in waiting} == {2}  # back, for another worker


@pytest.mark.parametrize("batch_size", [1, 3, 100])
def test_results_are_the_same_whatever_the_batch_size(batch_size):
    broker = MemoryBroker()
    sessions = generate_sessions(12, seed=64)
    send(broker, sessions)
    asyncio.run(
        MemoryWorker(
            broker, CouncilSessionProcessor(window=MemoryWindow(), store=None), batch_size=batch_size
        ).run_until_idle()
    )
    results = broker.documents(RESULTS)
    assert [r["audit_id"] for r in results] == [s["session_id"] for s in sessions]
    assert results[-1]["window"]["sessions"] == 12
