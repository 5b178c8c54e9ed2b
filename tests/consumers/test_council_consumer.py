"""Dead letters with reasons, exactly-once outcomes, and the raw-query canary."""

import asyncio
import hashlib
import io
import json
import logging

import pytest

from bias_audit.consumers.council import CouncilSessionProcessor
from bias_audit.consumers.envelope import Delivery
from bias_audit.state.memory_window import MemoryWindow
from bias_audit.storage.jsonl_store import JsonlRecordStore, read_records
from bias_audit.worker.logging_setup import JsonFormatter
from tests.builders import council_event

CANARY = "CANARY-7f3e-raw-user-query"


def event(**fields):
    return council_event(
        {"M1": {"M1": 9, "M2": 6}, "M2": {"M1": 7, "M2": 8}, "R3": {"M1": 6, "M2": 5}}, query=CANARY, **fields
    )


def deliver(document, delivery_id="1-0", **attributes) -> Delivery:
    body = document if isinstance(document, bytes) else json.dumps(document).encode()
    return Delivery(delivery_id=delivery_id, body=body, source_topic="council.sessions", attributes=attributes)


MALFORMED = [
    (b"not json", "invalid_json", "not valid JSON"),
    (b"\xff\xfe\x00bad", "invalid_json", "not UTF-8"),
    (b"[1, 2]", "invalid_json", "must be a JSON object, not an array"),
    (
        b'{"session_id": "s", "responses": [],}',
        "invalid_json",
        "not valid JSON: trailing comma is not allowed at byte 35",
    ),
    (b"[" * 2000 + b"]" * 2000, "invalid_json", "more than 1024 levels deep"),
    (
        b'{"a": ' * 300 + b"1" + b"}" * 300,
        "invalid_event",
        "session_id: required",
    ),  # deep but JSON: the contract decides
    (
        json.dumps({**event(), "timestamp": "9999-12-31T00:00:00Z"}).encode(),
        "invalid_event",
        "timestamp: 9999-12-31T00:00:00+00:00 is",
    ),
    (json.dumps({**event(), "timestamp": "2026-11-20 10:30"}).encode(), "invalid_event", "timezone"),
    (json.dumps({**event(), "responses": event()["responses"][:1]}).encode(), "invalid_event", "at least 2 responses"),
    (
        json.dumps({k: v for k, v in event().items() if k != "session_id"}).encode(),
        "invalid_event",
        "session_id: required",
    ),
    (
        json.dumps({**event(), "reviews": [{"reviewer": "x", "scores": {"Response A": 42}}]}).encode(),
        "invalid_event",
        "outside score_scale",
    ),
    (
        json.dumps({**event(), "reviews": [{"reviewer": "x", "scores": {"Response Q": 4}}]}).encode(),
        "invalid_event",
        "unknown label",
    ),
    (
        json.dumps({"audit_id": "a1", "timestamp": "2026-11-20T10:30:00Z", "llm_response": "hi"}).encode(),
        "wrong_topic",
        "llm.responses",
    ),
    (b"x" * 5_000_000, "too_large", "over the limit"),
]


@pytest.mark.parametrize("body, error_type, reason", MALFORMED)
def test_malformed_events_become_dead_letters_with_a_reason(body, error_type, reason):
    consumer = CouncilSessionProcessor(window=MemoryWindow(), store=None)
    [outcome] = asyncio.run(consumer.process([deliver(body, trace_id="tr-9")]))
    letter = outcome.dead_letter
    assert outcome.result is None and letter is not None
    assert letter.error_type == error_type and reason in letter.error
    assert "\n" not in letter.error and letter.trace_id == "tr-9"
    assert CANARY not in letter.model_dump_json()


NON_FINITE = [  # JSON has no NaN or Infinity, and 1e400 is no double: the field is named
    (b"NaN", "reviews.0.scores.Response A"),
    (b"-Infinity", "reviews.0.scores.Response A"),
    (b"1e400", "reviews.0.scores.Response A"),
]


@pytest.mark.parametrize("number, field", NON_FINITE)
def test_numbers_json_does_not_have_are_dead_lettered_naming_the_field(number, field):
    body = json.dumps(event()).replace('"Response A": 9', '"Response A": ' + number.decode(), 1).encode()
    assert number in body
    consumer = CouncilSessionProcessor(window=MemoryWindow(), store=None)
    [outcome] = asyncio.run(consumer.process([deliver(body)]))
    assert outcome.dead_letter.error_type == "invalid_json"
    assert outcome.dead_letter.error.startswith(f"{field}: NaN, Infinity and numbers beyond")


UNPARSEABLE = [
    b"\xff\xfe" + CANARY.encode(),  # not UTF-8
    ('{"query": "%s", "session_id": "s",}' % CANARY).encode(),  # trailing comma
    ('["%s"]' % CANARY).encode(),  # a list: nothing in it can be told apart from the query
    ('{"query": "%s", "x": NaN}' % CANARY).encode(),
]


@pytest.mark.parametrize("body", UNPARSEABLE)
def test_a_body_that_is_not_a_json_object_is_dead_lettered_by_size_and_hash_only(body):
    consumer = CouncilSessionProcessor(window=MemoryWindow(), store=None)
    [outcome] = asyncio.run(consumer.process([deliver(body)]))
    letter = outcome.dead_letter
    assert letter.payload is None and letter.payload_encoding == "omitted"
    assert letter.payload_bytes == len(body) and letter.payload_sha256 == hashlib.sha256(body).hexdigest()
    assert CANARY not in letter.model_dump_json()


def test_a_json_object_keeps_its_fields_without_the_query():
    consumer = CouncilSessionProcessor(window=MemoryWindow(), store=None)
    body = json.dumps({**event(), "timestamp": "yesterday"}).encode()
    [outcome] = asyncio.run(consumer.process([deliver(body)]))
    letter = outcome.dead_letter
    assert letter.payload_encoding == "json" and letter.payload["session_id"] == "s-1"
    assert "query" not in letter.payload and CANARY not in letter.model_dump_json()


def test_a_bad_event_does_not_stop_the_good_ones_in_its_batch():
    consumer = CouncilSessionProcessor(window=MemoryWindow(), store=None)
    outcomes = asyncio.run(
        consumer.process(
            [deliver(event(session_id="a"), "1-0"), deliver(b"{", "2-0"), deliver(event(session_id="b"), "3-0")]
        )
    )
    assert [o.result is not None for o in outcomes] == [True, False, True]


def test_trace_id_from_event_then_attribute_then_traceparent_then_derived():
    consumer = CouncilSessionProcessor(window=MemoryWindow(), store=None)
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    outcomes = asyncio.run(
        consumer.process(
            [
                deliver(event(session_id="a", trace_id="from-event"), "1", trace_id="attr"),
                deliver(event(session_id="b"), "2", trace_id="attr"),
                deliver(event(session_id="c"), "3", traceparent=parent),
                deliver(event(session_id="d"), "4"),
            ]
        )
    )
    ids = [o.result.trace_id for o in outcomes]
    assert ids[:3] == ["from-event", "attr", "4bf92f3577b34da6a3ce929d0e0e4736"]
    assert len(ids[3]) == 32 and int(ids[3], 16) >= 0
    # Derived, not random: a redelivery to another worker carries the same trace id.
    elsewhere = CouncilSessionProcessor(window=MemoryWindow(), store=None)
    [again] = asyncio.run(elsewhere.process([deliver(event(session_id="d"), "4")]))
    assert again.result.trace_id == ids[3]
    [other] = asyncio.run(elsewhere.process([deliver(event(session_id="e"), "5")]))
    assert other.result.trace_id != ids[3]


def test_duplicates_publish_nothing_and_store_nothing(tmp_path):
    store = JsonlRecordStore(tmp_path, "w")
    consumer = CouncilSessionProcessor(window=MemoryWindow(), store=store)
    first = asyncio.run(consumer.process([deliver(event(), "1-0"), deliver(event(), "2-0")]))
    again = asyncio.run(consumer.process([deliver(event(), "1-0")]))  # redelivered after a failed ack
    assert first[0].result is not None and first[1].duplicate
    assert again[0].result is not None  # resumed: the result is published...
    store.close()
    assert len(list(read_records([tmp_path]))) == 6  # ...but the records are not appended twice


def test_a_redelivery_to_another_worker_resumes_after_the_last_step_done(tmp_path):
    window = MemoryWindow()  # shared, as Redis is shared between workers
    first_store = JsonlRecordStore(tmp_path, "w1")
    first_worker = CouncilSessionProcessor(window=window, store=first_store)
    second_store = JsonlRecordStore(tmp_path, "w2")
    second_worker = CouncilSessionProcessor(window=window, store=second_store)
    asyncio.run(first_worker.process([deliver(event(), "m-1")]))  # records appended, then killed
    resumed = asyncio.run(second_worker.process([deliver(event(), "m-1")]))
    assert resumed[0].result is not None  # the result was never published: publish it now
    second_store.close()
    first_store.close()
    assert len(list(read_records([tmp_path]))) == 6  # but its records were appended once, by w1
    asyncio.run(second_worker.published(resumed))
    after_publish = asyncio.run(second_worker.process([deliver(event(), "m-1")]))
    assert after_publish[0].duplicate and after_publish[0].result is None


def test_the_raw_query_reaches_no_record_result_dead_letter_or_log(tmp_path):
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.DEBUG)
    try:
        store = JsonlRecordStore(tmp_path, "w")
        consumer = CouncilSessionProcessor(
            window=MemoryWindow(), store=store, default_consent=4, hash_secret=b"0123456789abcdef0123"
        )
        bad = {**event(session_id="bad"), "timestamp": "yesterday"}
        outcomes = asyncio.run(consumer.process([deliver(event(), "1"), deliver(bad, "2")]))
        store.close()
    finally:
        logging.getLogger().removeHandler(handler)
    published = "".join(o.result.model_dump_json() if o.result else o.dead_letter.model_dump_json() for o in outcomes)
    stored = (tmp_path / "w.jsonl").read_text()
    assert stored and published and stream.getvalue()
    for text in (stored, published, stream.getvalue()):
        assert CANARY not in text
    assert json.loads(stored.splitlines()[0])["query_hash"]  # consent 4: hashed, not stored
