"""Results and dead letters onto Redis Streams, in the contract's plain wire format.

Each entry is field `data` = the JSON document plus plain `event_type`, `tenant_id`,
`trace_id`, `traceparent`: readable with `redis-cli XRANGE`, no framework envelope. Publishing
and acknowledging a delivery happen in one Lua script call (publish_and_ack.lua, 50 deliveries
a call), atomic as a MULTI/EXEC, so a result exists exactly when its input entry was
acknowledged: a worker that dies before it leaves the entry pending for another.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from redis.asyncio import Redis

from bias_audit.consumers.council import Outcome
from bias_audit.redis_scripts import Call, script_rounds

from .wire import OutputTopics, outcome_entries, wire_fields

__all__ = ["OutputTopics", "RedisStreamsOutbox", "outcome_entries", "wire_fields"]

_SCRIPT = files("bias_audit.producers").joinpath("publish_and_ack.lua").read_text(encoding="utf-8")
# Deliveries per script call: Redis appends one call's entries while this process serializes the
# next call's results (script_rounds); each call is atomic for its own deliveries
ROUND_DELIVERIES = 50


class RedisStreamsOutbox:
    def __init__(self, client: Redis, topics: OutputTopics = OutputTopics(), max_len: int = 1_000_000) -> None:
        self.client = client
        self.topics = topics
        self.max_len = max_len
        self._script = client.register_script(_SCRIPT)

    async def complete(self, outcomes: list[Outcome], *, stream: str, group: str) -> None:
        """Publish every result / dead letter and acknowledge every input entry: each delivery's
        entries and its acknowledgement in one atomic call, ROUND_DELIVERIES deliveries a call."""
        if not outcomes:  # every entry comes from an outcome
            return
        parts = [outcomes[start:start + ROUND_DELIVERIES] for start in range(0, len(outcomes), ROUND_DELIVERIES)]
        await script_rounds(self.client, self._script, parts, lambda part: [self._call(part, stream, group)],
                            lambda part, replies: None)

    def _call(self, outcomes: list[Outcome], stream: str, group: str) -> Call:
        entries = outcome_entries(outcomes, self.topics)
        args: list[Any] = [self.max_len, group, len(entries)]
        for _, fields in entries:
            args.append(2 * len(fields))
            for item in fields.items():
                args += item
        args += [o.delivery.delivery_id for o in outcomes]
        return [*(topic for topic, _ in entries), stream], args


def read_recent(client, stream: str, count: int) -> list[bytes]:
    """The `data` of the newest `count` entries of an output stream, oldest first."""
    entries = client.xrevrange(stream, "+", "-", count=count)
    return [fields[b"data"] for _, fields in reversed(entries) if b"data" in fields]
