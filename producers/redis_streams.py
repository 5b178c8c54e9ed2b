"""Results and dead letters onto Redis Streams, in the contract's plain wire format.

Each entry is field `data` = the JSON document plus plain `event_type`, `tenant_id`,
`trace_id`, `traceparent`: readable with `redis-cli XRANGE`, no framework envelope. Publishing
and acknowledging happen in one MULTI/EXEC, so a result exists exactly when its input entry
was acknowledged: a worker that dies before it leaves the entry pending for another.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from redis.asyncio import Redis

from consumers.council import Outcome
from consumers.envelope import traceparent_for


@dataclass(frozen=True, slots=True)
class OutputTopics:
    results: str = "bias.audit.stream"
    alerts: str = "bias.audit.alerts"
    deadletter: str = "bias.audit.deadletter"


def wire_fields(data: bytes | str, *, event_type: str, tenant_id: str | None, trace_id: str | None) -> dict[str, str | bytes]:
    fields: dict[str, str | bytes] = {"data": data, "event_type": event_type}
    if tenant_id:
        fields["tenant_id"] = tenant_id
    if trace_id:
        fields["trace_id"] = trace_id
        fields["traceparent"] = traceparent_for(trace_id)
    return fields


def outcome_entries(outcomes: Iterable[Outcome], topics: OutputTopics) -> list[tuple[str, dict]]:
    entries = []
    for outcome in outcomes:
        if outcome.result is not None:
            result = outcome.result
            entries.append((topics.results, wire_fields(
                result.model_dump_json(), event_type=result.event_type,
                tenant_id=result.tenant_id, trace_id=result.trace_id)))
        elif outcome.dead_letter is not None:
            letter = outcome.dead_letter
            entries.append((topics.deadletter, wire_fields(
                letter.model_dump_json(), event_type=letter.event_type,
                tenant_id=None, trace_id=letter.trace_id)))
    return entries


class RedisStreamsOutbox:
    def __init__(self, client: Redis, topics: OutputTopics = OutputTopics(), max_len: int = 1_000_000) -> None:
        self.client = client
        self.topics = topics
        self.max_len = max_len

    async def complete(self, outcomes: list[Outcome], *, stream: str, group: str) -> None:
        """Publish every result / dead letter and acknowledge every input entry, atomically."""
        async with self.client.pipeline(transaction=True) as pipe:
            for topic, fields in outcome_entries(outcomes, self.topics):
                pipe.xadd(topic, fields, maxlen=self.max_len, approximate=True)
            ids = [o.delivery.delivery_id for o in outcomes]
            if ids:
                pipe.xack(stream, group, *ids)
            await pipe.execute()
