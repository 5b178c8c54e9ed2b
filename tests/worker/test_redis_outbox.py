"""The Redis Streams outbox publishes a batch's results, alerts and dead letters and acknowledges
its input entries in one script call: every entry as the contract's wire format says, on its
stream, in order, and nothing left pending."""

from __future__ import annotations

import asyncio
import json

import pytest
from redis.asyncio import Redis

from bias_audit.consumers.council import CouncilSessionProcessor
from bias_audit.consumers.envelope import Delivery
from bias_audit.consumers.outcome import Outcome
from bias_audit.producers.redis_streams import RedisStreamsOutbox
from bias_audit.state.memory_window import MemoryWindow
from bias_audit.worker.samples import generate_sessions

pytestmark = pytest.mark.redis
STREAM, GROUP = "council.sessions", "workers"


async def pending_deliveries(client: Redis, bodies: list[bytes]) -> list[Delivery]:
    """The bodies as entries of the input stream, read by the group: pending until acknowledged."""
    await client.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    for body in bodies:
        await client.xadd(STREAM, {"data": body})
    [[_, entries]] = await client.xreadgroup(GROUP, "w1", {STREAM: ">"}, count=len(bodies))
    return [Delivery(entry_id.decode(), fields[b"data"], STREAM) for entry_id, fields in entries]


def test_results_alerts_and_dead_letters_are_published_as_the_wire_format_says_and_acknowledged(redis_url):
    sessions = generate_sessions(30, seed=3)
    bodies = [json.dumps(s).encode() for s in sessions]
    bodies[4] = b'{"session_id": "broken"'  # not JSON: a dead letter
    bodies[9] = json.dumps({**sessions[9], "responses": []}).encode()  # invalid: a dead letter

    async def run():
        client = Redis.from_url(redis_url)
        try:
            deliveries = await pending_deliveries(client, bodies)
            outcomes = await CouncilSessionProcessor(window=MemoryWindow(), store=None).process(deliveries)
            outcomes[0].alerts = []  # an empty list publishes nothing
            await RedisStreamsOutbox(client).complete(outcomes, stream=STREAM, group=GROUP)
            published = {name: await client.xrange(name) for name in ("bias.audit.stream", "bias.audit.deadletter")}
            return outcomes, published, await client.xpending(STREAM, GROUP)
        finally:
            await client.aclose()

    outcomes, published, pending = asyncio.run(run())
    results = [o.result for o in outcomes if o.result is not None]
    assert len(results) == 28 and pending["pending"] == 0
    got = [fields for _, fields in published["bias.audit.stream"]]
    assert [f[b"data"] for f in got] == [r.model_dump_json().encode() for r in results]  # in delivery order
    for fields, result in zip(got, results):
        trace = result.trace_id
        assert fields[b"event_type"] == b"bias.audit.completed" and fields[b"tenant_id"] == result.tenant_id.encode()
        assert fields[b"trace_id"] == trace.encode()
        assert fields[b"traceparent"].decode().split("-")[1] == trace  # W3C: 00-<trace id>-<parent>-<flags>
    letters = [json.loads(fields[b"data"]) for _, fields in published["bias.audit.deadletter"]]
    assert [letter["error_type"] for letter in letters] == ["invalid_json", "invalid_event"]
    assert {fields[b"event_type"] for _, fields in published["bias.audit.deadletter"]} == {b"bias.audit.deadletter"}


def test_a_batch_larger_than_one_acknowledgement_slice_is_acknowledged_whole(redis_url):
    """The script acknowledges in slices of 1,000 ids (Lua's unpack has a limit): 2,345 duplicates
    (nothing to publish, only to acknowledge) leave nothing pending."""

    async def run():
        client = Redis.from_url(redis_url)
        try:
            deliveries = await pending_deliveries(client, [b"{}"] * 2345)
            before = (await client.xpending(STREAM, GROUP))["pending"]
            await RedisStreamsOutbox(client).complete(
                [Outcome(d, duplicate=True) for d in deliveries], stream=STREAM, group=GROUP
            )
            return before, (await client.xpending(STREAM, GROUP))["pending"], await client.exists("bias.audit.stream")
        finally:
            await client.aclose()

    assert asyncio.run(run()) == (2345, 0, 0)
