"""What arrives from a transport, and the dead letter that goes back when it cannot be used."""

from __future__ import annotations

import base64
import hashlib
import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TypeVar

import orjson
import pydantic_core
from pydantic import BaseModel, ValidationError

from bias_audit.schemas.json_tree import nodes
from bias_audit.schemas.limits import EventLimits
from bias_audit.schemas.results import DeadLetter

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger("bias_audit.consumer")

RAW_TEXT_FIELDS = ("query", "original_query")  # never stored, logged or forwarded
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")


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


MAX_TRACE_ID_CHARS = 128
# transport attributes (Redis fields beside `data`, Pub/Sub attributes, CloudEvents ce-*/ce_*) are
# copied into results, logs and OTLP posts: bounded and printable, as the body's fields are
MAX_ATTRIBUTES = 64
MAX_ATTRIBUTE_CHARS = 1024
MAX_ATTRIBUTE_NAME_CHARS = 256
ATTRIBUTE_LIMITS = {"ce-id": 256, "ce_id": 256, "trace_id": MAX_TRACE_ID_CHARS}


def attribute_problem(name: str, value: str) -> str | None:
    """Why a transport attribute cannot be used (one line naming it), or None."""
    shown = name[:64] if name.isprintable() else repr(name[:64])
    if len(name) > MAX_ATTRIBUTE_NAME_CHARS:
        return (
            f"attribute {shown}...: its name is {len(name):,} characters, over the limit of {MAX_ATTRIBUTE_NAME_CHARS}"
        )
    limit = ATTRIBUTE_LIMITS.get(name, MAX_ATTRIBUTE_CHARS)
    if len(value) > limit:
        return f"attribute {shown}: {len(value):,} characters, over the limit of {limit}"
    for text in (name, value):
        if "\ufffd" in text:  # what the Redis transport's decoding leaves of bytes that are not UTF-8
            return f"attribute {shown}: not valid UTF-8"
        if not text.isprintable():
            index, bad = next((i, c) for i, c in enumerate(text) if not c.isprintable())
            what = (
                "a NUL character, which no store can hold" if bad == "\x00" else f"an unprintable character ({bad!r})"
            )
            return f"attribute {shown}: {'its name ' if text is name else ''}contains {what} at {index}"
    return None


def check_attributes(attributes: dict[str, str]) -> None:
    """InvalidEvent naming the first transport attribute that cannot be used."""
    if len(attributes) > MAX_ATTRIBUTES:
        raise InvalidEvent(
            f"the message has {len(attributes)} attributes, over the limit of {MAX_ATTRIBUTES}", "invalid_attributes"
        )
    for name, value in attributes.items():
        problem = attribute_problem(name, value)
        if problem is not None:
            raise InvalidEvent(problem, "invalid_attributes")


def traceparent_ids(traceparent: str | None) -> tuple[str, str | None] | None:
    """(trace id, parent span id) of a W3C traceparent; None when it is not one, or its trace id is
    all zeros; the span None when it is all zeros."""
    match = _TRACEPARENT.match(traceparent.strip().lower()) if traceparent else None
    if not match or match.group(1) == "0" * 32:
        return None
    return match.group(1), None if match.group(2) == "0" * 16 else match.group(2)


def trace_id_from_traceparent(traceparent: str | None) -> str | None:
    ids = traceparent_ids(traceparent)
    return ids[0] if ids else None


def incoming_traceparent(attributes: dict[str, str]) -> str | None:
    """The caller's W3C traceparent: plain, or as the CloudEvents tracing extension on either
    transport (`ce-traceparent` on Pub/Sub, `ce_traceparent` on Redis)."""
    return attributes.get("traceparent") or attributes.get("ce-traceparent") or attributes.get("ce_traceparent")


def cloudevent_id(attributes: dict[str, str]) -> str | None:
    """The input's CloudEvents id, kept beside the contract's idempotency key (never instead of it)."""
    return attributes.get("ce-id") or attributes.get("ce_id")


def resolve_trace_id(event_trace_id: str | None, attributes: dict[str, str], *key: str) -> str:
    """The event's trace_id, else the transport's, else its traceparent; else derived from the
    idempotency key, so a redelivery carries the same id as the first attempt."""
    for candidate in (event_trace_id, attributes.get("trace_id")):
        if candidate and len(candidate) <= MAX_TRACE_ID_CHARS and candidate.isprintable():  # copied into every record
            return candidate
    from_parent = trace_id_from_traceparent(incoming_traceparent(attributes))
    if from_parent:
        return from_parent
    return hashlib.sha256("\x1f".join(key).encode()).hexdigest()[:32]


def traceparent_for(trace_id: str) -> str:
    """A W3C traceparent carrying our trace id (a non-hex id is hashed into one)."""
    if not re.fullmatch(r"[0-9a-f]{32}", trace_id):
        trace_id = hashlib.sha256(trace_id.encode()).hexdigest()[:32]
    span = hashlib.sha256(trace_id.encode()).hexdigest()[:16]
    return f"00-{trace_id}-{span}-01"


def describe_validation_error(error: ValidationError, shown: int = 5) -> str:
    """One readable line naming each problem (where and what), the first `shown` of them, and
    how many more there were: a sender fixes them all in one go, not one per try."""
    problems = error.errors(include_url=False, include_input=False)
    named = []
    for problem in problems[:shown]:
        location = ".".join(str(part) for part in problem["loc"])
        message = (
            "required field is missing"
            if problem["type"] == "missing"
            else problem["msg"].removeprefix("Value error, ")
        )
        named.append(f"{location}: {message}" if location else message)
    text = "; ".join(named)
    if len(problems) > shown:
        more = len(problems) - shown
        text += f" (and {more} more problem{'s' if more > 1 else ''})"
    return text


def classify(document: Any) -> str:
    """Tell council sessions, LLM responses and judge verdicts apart by their fields."""
    if isinstance(document, dict):
        if "verdict_id" in document or ("verdict" in document and "judge" in document):
            return "judge.verdict"
        if "session_id" in document or "reviews" in document:
            return "council.session"
        if "audit_id" in document or "llm_response" in document:
            return "llm.response"
    return "unknown"


def _non_finite_at(document: Any) -> tuple[Any, ...] | None:
    """Where the first NaN or infinity sits in a document pydantic's lenient reader parsed."""
    return next(
        (path for path, value in nodes(document) if isinstance(value, float) and not math.isfinite(value)), None
    )


def _nul_at(document: Any) -> tuple[Any, ...] | None:
    """Where the first NUL character sits in a string (or a key) of a parsed document."""
    for path, value in nodes(document):
        if path and isinstance(path[-1], str) and "\x00" in path[-1]:
            return (*path[:-1], path[-1].replace("\x00", "\\u0000"))
        if isinstance(value, str) and "\x00" in value:
            return path
    return None


def _located(path: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in path) or "the body"


def read_json_object(body: bytes) -> dict[str, Any]:
    """The body as a JSON object (RFC 8259: no NaN, no Infinity, no number a double cannot
    hold), or an InvalidEvent saying where it is not one, without quoting the body."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise InvalidEvent(_json_problem(body, error), "invalid_json") from None
    if not isinstance(document, dict):
        kind = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(
            type(document), "null"
        )
        raise InvalidEvent(f"message body must be a JSON object, not {kind}", "invalid_json")
    if b"\\u0000" in body:  # JSON can carry a NUL only escaped; no store can hold one
        where = _nul_at(document)
        if where is not None:
            raise InvalidEvent(
                f"{_located(where)}: contains a NUL character (\\u0000), which no store can hold", "invalid_event"
            )
    return document


def _json_problem(body: bytes, error: orjson.JSONDecodeError) -> str:
    """Why orjson refused a body, in one line naming the field or the position."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as bad:
        return f"message body is not UTF-8 (byte {bad.start}); send the event as UTF-8 JSON"
    if "depth limit" in error.msg or "recursion limit" in error.msg:
        return "message body nests objects or arrays more than 1024 levels deep"
    try:  # NaN, Infinity and 1e400 read as floats here: name the field
        lenient = pydantic_core.from_json(body, allow_inf_nan=True)
    except ValueError:
        lenient = None
    where = _non_finite_at(lenient) if lenient is not None else None
    if where is not None:
        return f"{_located(where)}: NaN, Infinity and numbers beyond a double's range are not JSON numbers"
    return f"message body is not valid JSON: {error.msg} at byte {error.pos}"


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
    document = read_json_object(body)
    try:
        return validate_event(model, document, limits)
    except InvalidEvent:
        if classify(document) != other.kind or not _valid_as(other.model, document, limits):
            raise
    raise InvalidEvent(other.reason, "wrong_topic")


def _valid_as(model: type[BaseModel], document: Any, limits: EventLimits) -> bool:
    try:
        model.model_validate(document, context={"limits": limits})
    except ValidationError:
        return False
    return True


def validate_event(model: type[M], document: Any, limits: EventLimits) -> M:
    """A parsed document as the contract's event, within the operator's limits and dated no
    further ahead of this clock than the skew allows; else an InvalidEvent with one line."""
    try:
        event = model.model_validate(document, context={"limits": limits})
    except ValidationError as error:
        raise InvalidEvent(describe_validation_error(error), "invalid_event") from None
    _check_clock(event, limits)
    return event


def _check_clock(event: BaseModel, limits: EventLimits) -> None:
    """An event dated ahead of this clock by more than the skew would hold a tenant's window
    cutoff in the future (every later real session outside it): refused, never counted."""
    timestamp = getattr(event, "timestamp", None)
    if timestamp is None:
        return
    ahead = (timestamp - datetime.now(timezone.utc)).total_seconds()
    if ahead > limits.max_clock_skew_s:
        raise InvalidEvent(
            f"timestamp: {timestamp.isoformat()} is {_duration(ahead)} ahead of this worker's clock "
            f"(at most {_duration(limits.max_clock_skew_s)} allowed); send the time the event happened",
            "invalid_event",
        )


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def parse_or_dead_letter(
    deliveries: list[Delivery], outcomes: list[Any], parse: Callable[[Delivery], M]
) -> list[tuple[int, M]]:
    """(index, event) of each delivery that parses; every other one gets its dead letter on its
    outcome, with the reason, and a log line."""
    parsed = []
    for index, delivery in enumerate(deliveries):
        try:
            check_attributes(delivery.attributes)
            parsed.append((index, parse(delivery)))
        except InvalidEvent as error:
            refuse(outcomes[index], str(error), error.error_type)
    return parsed


def refuse(outcome: Any, reason: str, error_type: str) -> None:
    """Give the outcome's delivery its dead letter, and say so in the log (never the body)."""
    delivery = outcome.delivery
    letter = outcome.dead_letter = dead_letter(delivery, reason, error_type)
    log.warning(
        "dead-lettered",
        extra={
            "trace_id": letter.trace_id,
            "reason": reason,
            "error_type": error_type,
            "delivery_id": delivery.delivery_id,
            "source_topic": delivery.source_topic,
        },
    )


def scrub_payload(body: bytes) -> tuple[Any, str]:
    """The payload in the contract's form: JSON without the raw query fields, else text (also JSON
    nested too deep to serialize again), else base64. What the operator's raw stream carries."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return base64.b64encode(body).decode("ascii"), "base64"
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        return text, "text"
    if isinstance(document, (dict, list)) and _deeper_than(document, MAX_PAYLOAD_DEPTH):
        return text, "text"
    if isinstance(document, dict):
        for name in RAW_TEXT_FIELDS:
            document.pop(name, None)
    return document, "json"


MAX_PAYLOAD_DEPTH = 64  # serializers stop near 255 levels; a dead letter must always serialize


def _deeper_than(document: Any, limit: int) -> bool:
    level = [document]
    for _ in range(limit):
        level = [
            child
            for node in level
            for child in (node.values() if isinstance(node, dict) else node if isinstance(node, list) else ())
            if isinstance(child, (dict, list))
        ]
        if not level:
            return False
    return True


def dead_letter(delivery: Delivery, error: str, error_type: str) -> DeadLetter:
    """A JSON object keeps its fields (minus the query); a body that is not one carries its size
    and SHA-256 only. The trace id is the transport's (field or traceparent): an unreadable event
    has none of its own."""
    payload, encoding = scrub_payload(delivery.body) if error_type != "too_large" else (None, "omitted")
    # only a JSON object keeps its fields: in anything else no field can be told apart from the query
    document = payload if encoding == "json" and isinstance(payload, dict) else None
    return DeadLetter(
        source_topic=delivery.source_topic,
        error=error,
        error_type=error_type,
        received_at=delivery.received_at,
        delivery_attempts=delivery.delivery_attempts,
        trace_id=_usable_trace_id(delivery.attributes),
        payload=document,
        payload_encoding="json" if document is not None else "omitted",
        payload_bytes=len(delivery.body),
        payload_sha256=hashlib.sha256(delivery.body).hexdigest(),
    )


def _usable_trace_id(attributes: dict[str, str]) -> str | None:
    """The transport's trace id when it is one a letter can carry, else its traceparent's."""
    given = attributes.get("trace_id")
    if given and attribute_problem("trace_id", given) is None:
        return given
    return trace_id_from_traceparent(incoming_traceparent(attributes))


def raw_dead_letter(delivery: Delivery, letter: DeadLetter) -> DeadLetter:
    """The letter with the body as received (contract form), for the operator's restricted raw
    stream: only when the operator turned it on, only for bodies the letter itself omits."""
    payload, encoding = scrub_payload(delivery.body)
    return letter.model_copy(update={"payload": payload, "payload_encoding": encoding})
