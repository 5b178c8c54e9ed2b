"""`bias-audit publish`: JSONL events onto the input streams or topics in the wire format, each a
CloudEvent in binary mode (an event without its idempotency key goes without, and is dead-lettered)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import orjson

from bias_audit.consumers.envelope import classify
from bias_audit.schemas.errors import CommandError

from .cloudevents import cloudevent_fields
from .wire import wire_fields

PUBLISH_SOURCE = "/bias-audit/publish"

CHUNK = 500  # entries per pipeline / per wait on publish futures


@dataclass(frozen=True, slots=True)
class Entry:
    topic: str
    fields: dict


def entries_for(lines: Iterable[tuple[int, bytes]], topic_for: Callable[[str], str]) -> list[Entry]:
    """Every line checked before anything is sent: a bad line publishes nothing."""
    entries = []
    for number, line in lines:
        try:
            document = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            raise CommandError(f"line {number}: not valid JSON ({error}); nothing was published") from None
        kind = classify(document)
        known = document if isinstance(document, dict) else {}
        key = next((str(known[name]) for name in ("session_id", "audit_id", "verdict_id") if known.get(name)), None)
        timestamp = known.get("timestamp")
        event = (
            cloudevent_fields(
                event_type=kind,
                key=f"{known.get('tenant_id')}\x1f{key}",
                subject=key,
                time=timestamp if isinstance(timestamp, str) else None,
                source=PUBLISH_SOURCE,
            )
            if key
            else None
        )
        fields = wire_fields(
            line, event_type=kind, tenant_id=known.get("tenant_id"), trace_id=known.get("trace_id"), cloud_event=event
        )
        entries.append(Entry(topic_for(kind), fields))
    return entries


def publish(url: str, entries: list[Entry], advance: Callable[[int], object] = lambda n: None) -> None:
    if url.startswith("pubsub://"):
        _publish_pubsub(url.removeprefix("pubsub://").strip("/"), entries, advance)
    else:
        _publish_redis(url, entries, advance)


def _publish_redis(url: str, entries: list[Entry], advance: Callable[[int], object]) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        for start in range(0, len(entries), CHUNK):
            pipe = client.pipeline(transaction=False)
            chunk = entries[start : start + CHUNK]
            for entry in chunk:
                pipe.xadd(entry.topic, entry.fields)
            pipe.execute()
            advance(len(chunk))
    except redis.ConnectionError as error:
        raise CommandError(f"cannot reach {url}: {error}", exit_code=1) from None
    finally:
        client.close()


def _publish_pubsub(project: str, entries: list[Entry], advance: Callable[[int], object]) -> None:
    from google.cloud import pubsub_v1

    from .pubsub import message_parts

    publisher = pubsub_v1.PublisherClient()
    try:
        for start in range(0, len(entries), CHUNK):
            futures = []
            for entry in entries[start : start + CHUNK]:
                data, attributes = message_parts(entry.fields)
                futures.append(publisher.publish(publisher.topic_path(project, entry.topic), data, **attributes))
            for future in futures:
                future.result(timeout=60)
            advance(len(futures))
    except Exception as error:  # google.api_core errors: NotFound topic, unreachable
        raise CommandError(
            f"publishing to Pub/Sub project {project} failed: {error.__class__.__name__}: "
            f"{getattr(error, 'message', error)} (did you run `bias-audit setup`?)",
            exit_code=1,
        ) from None
    finally:
        publisher.stop()
