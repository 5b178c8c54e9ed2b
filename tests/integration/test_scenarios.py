"""One scenario suite, run on every transport: the in-memory broker, Redis Streams and Pub/Sub.
What a transport must guarantee is written once; transport-specific behaviour (a killed worker,
an outage, scaling, the subscription's own dead-letter policy) stays in the per-transport files.

Each transport starts one set of workers (two, every input, at DEBUG) and runs every scenario on
it in turn, each a subtest with its own tenant: what the scenarios ask of a worker does not
depend on a fresh one, and starting workers is most of a scenario's time."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from bias_audit.storage.jsonl_store import read_records
from bias_audit.worker.samples import generate_sessions
from tests.integration.harness import VERDICTS, MemoryHarness, PubSubHarness, RedisHarness, cloudevent_of

WORKERS = {"workers": 2, "batch_size": 10, "window_sessions": 1000, "log_level": "DEBUG", "consume": "all"}
CANARY = "CANARY-3b7d-raw-user-query"


@pytest.fixture(
    params=[
        "memory",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("pubsub", marks=[pytest.mark.pubsub, pytest.mark.redis]),
    ]
)
def transport(request, tmp_path):
    if request.param == "memory":
        harness = MemoryHarness(tmp_path)
    elif request.param == "redis":
        harness = RedisHarness(tmp_path, request.getfixturevalue("redis_url"))
    else:
        harness = PubSubHarness(
            tmp_path, request.getfixturevalue("redis_url"), request.getfixturevalue("pubsub_project")
        )
    yield harness
    assert set(harness.stop()) <= {0}  # every worker drained and exited cleanly


def bodies(sessions: list[dict], tenant: str = "demo") -> list[bytes]:
    return [json.dumps({**s, "tenant_id": tenant}).encode() for s in sessions]


def records_of(tmp_path, sessions: list[dict]) -> dict[str, list[dict]]:
    """The scenario's own records, by the file (the worker) that holds them."""
    wanted = {s["session_id"] for s in sessions}
    return {
        path.name: [r for r in read_records([path]) if r["session_id"] in wanted]
        for path in sorted((tmp_path / "records").glob("*.jsonl"))
    }


def duplicates_are_counted_once_and_two_workers_share_the_load(transport, tmp_path):
    sessions = generate_sessions(120, seed=71)
    transport.publish_shared(bodies(sessions, "shared") + bodies(sessions[:30], "shared"))  # a quarter twice
    got = transport.results(120)
    assert sorted(r["audit_id"] for r in got) == sorted(s["session_id"] for s in sessions)  # once each
    assert max(r["window"]["sessions"] for r in got) == 120  # each counted once in the shared window
    by_file = records_of(tmp_path, sessions)
    records = [r for rows in by_file.values() for r in rows]
    per_pair = Counter((r["session_id"], r["reviewer_id"], r["model_id"]) for r in records)
    assert len(per_pair) == 120 * 25 and set(per_pair.values()) == {1}  # one record per scored pair
    assert len(by_file) == 2 and all(by_file.values())  # both workers took a share


MALFORMED = {
    b"not json": "invalid_json",
    b"\xff\xfe\x00": "invalid_json",
    b"[1, 2]": "invalid_json",
    b'{"session_id": "x", "query": "sample private question"}': "invalid_event",
    json.dumps({"audit_id": "llm-1", "timestamp": "2026-11-20T10:30:00Z", "llm_response": "x"}).encode(): "wrong_topic",
}


def malformed_events_become_dead_letters_with_reasons_and_the_worker_lives(transport, tmp_path):
    good = generate_sessions(3, seed=72)
    transport.publish(list(MALFORMED) + bodies(good, "malformed"))
    letters = transport.dead_letters(len(MALFORMED))
    got = transport.results(3)
    assert transport.alive()
    assert sorted(r["audit_id"] for r in got) == sorted(s["session_id"] for s in good)
    assert Counter(letter["error_type"] for letter in letters) == Counter(MALFORMED.values())
    assert all(
        letter["error"] and "\n" not in letter["error"] and letter["source_topic"] == "council.sessions"
        for letter in letters
    )
    # not JSON, not UTF-8, not an object: by size and hash only; the JSON objects keep their fields
    omitted = sorted(letter["payload_bytes"] for letter in letters if letter["payload_encoding"] == "omitted")
    assert omitted == sorted([len(b"not json"), len(b"\xff\xfe\x00"), len(b"[1, 2]")])
    assert all("sample private question" not in json.dumps(letter["payload"]) for letter in letters)


def results_are_plain_json_with_the_contract_fields(transport, tmp_path):
    session = {**generate_sessions(1, seed=73)[0], "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"}
    transport.publish(bodies([session]))
    [result] = transport.results(1)
    [fields] = transport.result_fields()
    assert {"event_type", "tenant_id", "trace_id", "traceparent"} <= set(fields)
    assert fields["event_type"] == result["event_type"] == "bias.audit.completed"
    assert fields["trace_id"] == result["trace_id"] == session["trace_id"]
    assert fields["tenant_id"] == result["tenant_id"] == "demo"
    assert fields["traceparent"].split("-")[1] == session["trace_id"]
    [record, *_] = [r for rows in records_of(tmp_path, [session]).values() for r in rows]
    assert record["trace_id"] == session["trace_id"]


def outputs_are_cloudevents_in_binary_mode_and_cloudevent_inputs_are_accepted(transport, tmp_path):
    plain, wrapped = generate_sessions(2, seed=75)
    caller_trace = "0af7651916cd43dd8448eb211c80319c"
    transport.publish(bodies([plain], "cloudevents"))
    transport.publish(
        bodies([{**wrapped, "trace_id": None}], "cloudevents"),
        cloud_event={
            "specversion": "1.0",
            "id": "order-42",
            "source": "//council/eu",
            "type": "dev.example.council.session",
            "traceparent": f"00-{caller_trace}-b7ad6b7169203331-01",
        },
    )
    results = {r["audit_id"]: r for r in transport.results(2)}
    fields = transport.result_fields()
    events = [cloudevent_of(f, b"{}") for f in fields]  # raises unless each is a valid CloudEvent 1.0
    by_subject = {event.get_subject(): event for event in events}
    assert set(by_subject) == {plain["session_id"], wrapped["session_id"]}
    for event in events:
        assert event.get_type() == "dev.bias-audit.audit.result.v1" and event.get_specversion() == "1.0"
        assert event.get_source() == "/bias-audit/worker" and event.get_datacontenttype() == "application/json"
    assert len({event.get_id() for event in events}) == 2
    # the contract's id stays the key; the input's ce-id rides beside it, its traceparent is the trace
    assert results[wrapped["session_id"]]["cloudevent_id"] == "order-42"
    assert results[wrapped["session_id"]]["trace_id"] == caller_trace
    assert results[plain["session_id"]]["cloudevent_id"] is None


def the_raw_query_reaches_no_log_line_and_no_dead_letter_at_debug(transport, tmp_path):
    session = {**generate_sessions(1, seed=74)[0], "tenant_id": "raw-query", "query": CANARY}
    text = json.dumps(session)
    first_score = text.index('"scores": {') + len('"scores": {')
    colon = text.index(":", first_score)
    hostile = [
        (text[: colon + 1] + " NaN" + text[text.index(",", colon) :]).encode(),  # a score JSON does not have
        text[:-1].encode() + b",}",  # a trailing comma
        b"\xff" + text.encode(),  # not UTF-8
        json.dumps([session]).encode(),  # not an object
        json.dumps({**session, "timestamp": "9999-12-31T00:00:00Z"}).encode(),  # from the future
        json.dumps({**session, "session_id": "fine"}).encode(),
    ]
    transport.publish(hostile)
    letters = transport.dead_letters(len(hostile) - 1)
    [result] = transport.results(1)
    logs = transport.logs()  # so far: the test reads them again once the workers have exited
    assert result["audit_id"] == "fine" and len(letters) == len(hostile) - 1
    assert '"level":"debug"' in logs or '"level":"info"' in logs  # it did log, below WARNING
    assert CANARY not in logs and CANARY not in json.dumps(letters) and CANARY not in json.dumps(result)
    assert sorted(letter["payload_encoding"] for letter in letters) == [
        "json",
        "omitted",
        "omitted",
        "omitted",
        "omitted",
    ]


def verdict_bodies(count: int, *, first_rate: float = 0.5, seed: int = 0) -> list[bytes]:
    """Judge verdicts, games 1 and 2 of count / 2 items, each with the raw query as a canary."""
    import random

    rng = random.Random(seed)
    out = []
    for n in range(count):
        preference = "A>B" if rng.random() < first_rate else "B>A"
        out.append(
            json.dumps(
                {
                    "verdict_id": f"v-{n}",
                    "tenant_id": "demo",
                    "timestamp": "2026-11-20T10:30:00Z",
                    "judge": {"model": "judge-model", "prompt": "pairwise-v1"},
                    "item_id": f"item-{n // 2}",
                    "game": n % 2 + 1,
                    "query": CANARY,
                    "candidates": [
                        {"model": "a", "response": "word " * (10 + n % 7)},
                        {"model": "b", "length_words": 12},
                    ],
                    "verdict": {"kind": "pairwise", "preference": preference},
                }
            ).encode()
        )
    return out


def judge_verdicts_are_audited_once_stored_without_text_and_bad_ones_dead_lettered(transport, tmp_path):
    verdicts = verdict_bodies(60, seed=75)
    bad = [b'{"verdict_id": "v-bad", "judge": {"model": "j"}}', b"not json"]
    transport.publish(verdicts + verdicts[:20] + bad, topic=VERDICTS)
    letters = transport.dead_letters(2)
    got = transport.results(60)
    assert transport.alive()
    assert sorted(r["audit_id"] for r in got) == sorted(f"v-{n}" for n in range(60))  # once each
    assert {r["source"] for r in got} == {"judge.verdict"}
    assert max(r["judge"]["window"]["verdicts"] for r in got) == 60  # counted once in the judge's window
    assert all(
        letter["error"] and "\n" not in letter["error"] and letter["source_topic"] == VERDICTS for letter in letters
    )
    rows = list(read_records([tmp_path / "verdicts"]))
    assert sorted(row["verdict_id"] for row in rows) == sorted(f"v-{n}" for n in range(60))  # stored once each
    stored = json.dumps(rows)
    assert CANARY not in stored and "word word" not in stored  # neither the query nor an answer's text
    assert rows[0]["candidates"][0]["length_words"] >= 10
    assert CANARY not in json.dumps(got) and CANARY not in transport.logs()


SCENARIOS = [
    duplicates_are_counted_once_and_two_workers_share_the_load,
    malformed_events_become_dead_letters_with_reasons_and_the_worker_lives,
    results_are_plain_json_with_the_contract_fields,
    outputs_are_cloudevents_in_binary_mode_and_cloudevent_inputs_are_accepted,
    the_raw_query_reaches_no_log_line_and_no_dead_letter_at_debug,
    judge_verdicts_are_audited_once_stored_without_text_and_bad_ones_dead_lettered,
]


def test_every_scenario_holds_on_the_transport(transport, tmp_path, subtests):
    transport.start(**WORKERS)
    for scenario in SCENARIOS:
        with subtests.test(scenario.__name__):
            transport.begin()
            scenario(transport, tmp_path)
    assert set(transport.stop()) <= {0}
    assert CANARY not in transport.logs()  # nor in what the workers logged on their way out
