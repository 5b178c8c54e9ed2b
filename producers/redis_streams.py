"""Results and dead letters onto Redis Streams, in the contract's plain wire format.

Each entry is field `data` = the JSON document plus plain `event_type`, `tenant_id`,
`trace_id`, `traceparent`: readable with `redis-cli XRANGE`, no framework envelope. Publishing
and acknowledging happen in one Lua script (publish_and_ack.lua), atomic as a MULTI/EXEC, so a
result exists exactly when its input entry was acknowledged: a worker that dies before it
leaves the entry pending for another.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from msgspec import msgpack
from redis.asyncio import Redis

from bias_audit.consumers.outcome import Outcome

from .wire import OutputTopics, outcome_entries, wire_fields

__all__ = ["OutputTopics", "RedisStreamsOutbox", "outcome_entries", "wire_fields"]

_SCRIPT = files("bias_audit.producers").joinpath("publish_and_ack.lua").read_text(encoding="utf-8")


class RedisStreamsOutbox:
    def __init__(self, client: Redis, topics: OutputTopics = OutputTopics(), max_len: int = 1_000_000) -> None:
        self.client = client
        self.topics = topics
        self.max_len = max_len
        self._script = client.register_script(_SCRIPT)

    async def complete(self, outcomes: list[Outcome], *, stream: str, group: str) -> None:
        """Publish every result / dead letter and acknowledge every input entry, atomically. One
        call for the whole batch, not rounds as the window's script: a batch that failed halfway
        through its rounds would be retried whole and publish its first rounds' results twice."""
        if not outcomes:  # every entry comes from an outcome
            return
        entries = outcome_entries(outcomes, self.topics)
        streams = {topic: at for at, topic in enumerate(dict.fromkeys(topic for topic, _ in entries), 1)}
        packed = msgpack.encode(
            [[streams[topic], *(part for item in fields.items() for part in item)] for topic, fields in entries]
        )
        args: list[Any] = [self.max_len, group, packed, *(o.delivery.delivery_id for o in outcomes)]
        await self._script(keys=[*streams, stream], args=args)


def read_recent(client, stream: str, count: int) -> list[bytes]:
    """The `data` of the newest `count` entries of an output stream, oldest first."""
    entries = client.xrevrange(stream, "+", "-", count=count)
    return [fields[b"data"] for _, fields in reversed(entries) if b"data" in fields]
