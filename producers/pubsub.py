"""Results and dead letters onto Google Cloud Pub/Sub in the contract's wire format.

`data` = the JSON document; attributes event_type, tenant_id, trace_id, traceparent and the
CloudEvents binding's ce-id, ce-source, ce-specversion, ce-type, ce-time, ce-subject. The
client batches publishes (settings: pubsub_publish_batch / pubsub_publish_latency_s); we wait
for every publish of a batch before its input messages are acknowledged.
"""

from __future__ import annotations

import asyncio

from bias_audit.consumers.outcome import Outcome

from .cloudevents import pubsub_attribute_name
from .wire import OutputTopics, outcome_entries, wire_fields


def message_parts(fields: dict) -> tuple[bytes, dict[str, str]]:
    """(data, attributes) from our wire fields; `ce_*` fields become the binding's `ce-*` attributes."""
    data = fields["data"]
    data = data.encode() if isinstance(data, str) else bytes(data)
    attributes = {
        pubsub_attribute_name(key): value if isinstance(value, str) else value.decode()
        for key, value in fields.items()
        if key != "data"
    }
    return data, attributes


class PubSubOutbox:
    def __init__(self, publisher, project: str, topics: OutputTopics = OutputTopics()) -> None:
        self.publisher = publisher
        self.project = project
        self.topics = topics
        self._paths: dict[str, str] = {}

    def path(self, topic: str) -> str:
        if topic not in self._paths:
            self._paths[topic] = self.publisher.topic_path(self.project, topic)
        return self._paths[topic]

    async def publish(self, outcomes: list[Outcome]) -> None:
        """Publish every result / dead letter; returns when Pub/Sub has accepted them all."""
        futures = []
        for topic, fields in outcome_entries(outcomes, self.topics):
            data, attributes = message_parts(fields)
            futures.append(asyncio.wrap_future(self.publisher.publish(self.path(topic), data, **attributes)))
        if futures:
            await asyncio.gather(*futures)

    def stop(self) -> None:
        """Flush batched publishes (blocking; call from a thread)."""
        self.publisher.stop()


__all__ = ["PubSubOutbox", "message_parts", "wire_fields"]
