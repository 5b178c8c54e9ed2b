"""What arrives from a transport, and the dead letter that goes back when it cannot be used."""

from __future__ import annotations

import base64
import hashlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from bias_audit.schemas.limits import EventLimits
from bias_audit.schemas.results import DeadLetter

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger("bias_audit.consumer")

RAW_TEXT_FIELDS = ("query", "original_query")  # never stored, logged or forwarded
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(slots=True)
class Delivery:
    """One message as a transport handed it over."""

    delivery_id: str  # stream entry id or Pub/Sub message id: the same on redelivery
    body: bytes
    source_topic: str
    attributes: dict[str, str] = field(default_factory=dict)
    delivery_attempts: int = 1
    received_at: str = field(default_factory=utc_now_iso)
    handle: Any = field(default=None, repr=False)  # the transport's own message (Pub/Sub: ack/nack)


class InvalidEvent(Exception):
    """The event can never be processed; the message is a sentence a person can act on."""

    def __init__(self, message: str, error_type: str) -> None:
        super().__init__(message)
        self.error_type = error_type


def trace_id_from_traceparent(traceparent: str | None) -> str | None:
    match = _TRACEPARENT.match(traceparent.strip().lower()) if traceparent else None
    if not match or match.group(1) == "0" * 32:
        return None
    return match.group(1)


def resolve_trace_id(event_trace_id: str | None, attributes: dict[str, str], *key: str) -> str:
    """The event's trace_id, else the transport's, else its traceparent; else derived from the
    idempotency key, so a redelivery carries the same id as the first attempt."""
    for candidate in (event_trace_id, attributes.get("trace_id")):
        if candidate:
            return candidate
    from_parent = trace_id_from_traceparent(attributes.get("traceparent"))
    if from_parent:
        return from_parent
    return hashlib.sha256("\x1f".join(key).encode()).hexdigest()[:32]


def traceparent_for(trace_id: str) -> str:
    """A W3C traceparent carrying our trace id (a non-hex id is hashed into one)."""
    if not re.fullmatch(r"[0-9a-f]{32}", trace_id):
        trace_id = hashlib.sha256(trace_id.encode()).hexdigest()[:32]
    span = hashlib.sha256(trace_id.encode()).hexdigest()[:16]
    return f"00-{trace_id}-{span}-01"


def describe_validation_error(error: ValidationError) -> str:
    """One readable line: where and what, plus how many more problems there were."""
    problems = error.errors(include_url=False, include_input=False)
    first = problems[0]
    location = ".".join(str(part) for part in first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "missing":
        message = "required field is missing"
    text = f"{location}: {message}" if location else message
    if len(problems) > 1:
        text += f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
    return text


def classify(document: Any) -> str:
    """Tell council sessions and LLM responses apart by their fields."""
    if isinstance(document, dict):
        if "session_id" in document or "reviews" in document:
            return "council.session"
        if "audit_id" in document or "llm_response" in document:
            return "llm.response"
    return "unknown"


def json_problem(body: bytes) -> str:
    """Why a body is not a JSON object, in one line."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"message body is not UTF-8 (byte {error.start}); send the event as UTF-8 JSON"
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        return f"message body is not valid JSON: {error}"
    return f"message body must be a JSON object, not {type(document).__name__}"


@dataclass(frozen=True, slots=True)
class Misrouted:
    """The other kind of event, and what to tell a producer who sent it here."""

    kind: str  # classify()'s name for it
    model: type[BaseModel]
    reason: str


def parse_event(model: type[M], body: bytes, limits: EventLimits, other: Misrouted) -> M:
    """The size limit, then the contract; every failure an InvalidEvent with a one-line reason.
    A valid event of the other kind is told where to go."""
    if len(body) > limits.max_event_bytes:
        raise InvalidEvent(f"event is {len(body)} bytes, over the limit of {limits.max_event_bytes}", "too_large")
    try:
        return model.model_validate_json(body, context={"limits": limits})
    except ValidationError as error:
        if error.errors(include_url=False)[0]["type"] in ("json_invalid", "json_type", "model_type"):
            raise InvalidEvent(json_problem(body), "invalid_json") from None
        if classify(orjson.loads(body)) == other.kind:
            try:
                other.model.model_validate_json(body, context={"limits": limits})
            except ValidationError:
                pass
            else:
                raise InvalidEvent(other.reason, "wrong_topic") from None
        raise InvalidEvent(describe_validation_error(error), "invalid_event") from None


def parse_or_dead_letter(deliveries: list[Delivery], outcomes: list, parse: Callable[[Delivery], M]) -> list[tuple[int, M]]:
    """(index, event) of each delivery that parses; every other one gets its dead letter on its
    outcome, with the reason, and a log line."""
    parsed = []
    for index, delivery in enumerate(deliveries):
        try:
            parsed.append((index, parse(delivery)))
        except InvalidEvent as error:
            letter = outcomes[index].dead_letter = dead_letter(delivery, str(error), error.error_type)
            log.warning("dead-lettered", extra={"trace_id": letter.trace_id, "reason": str(error),
                                                "error_type": error.error_type, "delivery_id": delivery.delivery_id,
                                                "source_topic": delivery.source_topic})
    return parsed


def scrub_payload(body: bytes) -> tuple[Any, str]:
    """The payload for a dead letter: JSON without the raw query fields, else text, else base64."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return base64.b64encode(body).decode("ascii"), "base64"
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        return text, "text"
    if isinstance(document, dict):
        for name in RAW_TEXT_FIELDS:
            document.pop(name, None)
    return document, "json"


def dead_letter(delivery: Delivery, error: str, error_type: str) -> DeadLetter:
    """The trace id is the transport's (field or traceparent): an unreadable event has none of its own."""
    payload, encoding = scrub_payload(delivery.body)
    return DeadLetter(
        source_topic=delivery.source_topic,
        error=error,
        error_type=error_type,
        received_at=delivery.received_at,
        delivery_attempts=delivery.delivery_attempts,
        trace_id=delivery.attributes.get("trace_id") or trace_id_from_traceparent(delivery.attributes.get("traceparent")),
        payload=payload,
        payload_encoding=encoding,
    )
