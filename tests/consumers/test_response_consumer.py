"""The llm.responses consumer: results, interaction records without the raw query, exactly once,
dead letters with a reason for hostile input, and the worker staying alive through them."""

import asyncio
import json

import pytest

from bias_audit.consumers.council import CouncilSessionProcessor
from bias_audit.consumers.envelope import Delivery
from bias_audit.consumers.responses import ResponseProcessor
from bias_audit.consumers.router import EventRouter
from bias_audit.lexicons.load import shipped_lexicons
from bias_audit.lexicons.sentiment import vader_scorer
from bias_audit.state.memory_window import MemoryWindow
from bias_audit.storage.jsonl_store import JsonlRecordStore, read_records
from tests.builders import council_event

CANARY = "CANARY-51c2-raw-user-query"


def response_event(**fields) -> dict:
    return {
        "audit_id": "a-1",
        "tenant_id": "acme",
        "user_id": "u-17",
        "timestamp": "2026-11-20T10:30:00Z",
        "llm_provider": "openai",
        "llm_model": "gpt-4o",
        "original_query": CANARY,
        "llm_response": "The chairman said every engineer should trust his instincts.",
        "query_context": {"usage": {"prompt_tokens": 12, "completion_tokens": 40}},
        **fields,
    }


def deliver(document, delivery_id="1-0", topic="llm.responses") -> Delivery:
    body = document if isinstance(document, bytes) else json.dumps(document).encode()
    return Delivery(delivery_id=delivery_id, body=body, source_topic=topic)


def consumer(window=None, store=None, **options) -> ResponseProcessor:
    return ResponseProcessor(
        window=window or MemoryWindow(), store=store, lexicons=shipped_lexicons(), sentiment=vader_scorer(), **options
    )


def test_result_and_interaction_record(tmp_path):
    store = JsonlRecordStore(tmp_path, "interactions")
    [outcome] = asyncio.run(consumer(store=store).process([deliver(response_event())]))
    result = outcome.result
    assert result.source == "llm.response" and result.audit_id == "a-1" and result.tenant_id == "acme"
    assert result.bias_detected and result.bias_type == ["gendered_language"]
    assert result.mitigation_action == "rewrite"
    assert "'chair' for 'chairman'" in " ".join(result.bias_report_summary["mitigations"])
    [record] = list(read_records([store.path]))
    assert {
        k: record[k]
        for k in (
            "audit_id",
            "tenant_id",
            "user_id",
            "llm_provider",
            "llm_model",
            "prompt_tokens",
            "completion_tokens",
            "total_tokens",
            "bias_detected",
            "bias_type",
            "mitigation_action",
            "human_reviewed",
            "query_hash",
        )
    } == {
        "audit_id": "a-1",
        "tenant_id": "acme",
        "user_id": "u-17",
        "llm_provider": "openai",
        "llm_model": "gpt-4o",
        "prompt_tokens": 12,
        "completion_tokens": 40,
        "total_tokens": None,
        "bias_detected": True,
        "bias_type": ["gendered_language"],
        "mitigation_action": "rewrite",
        "human_reviewed": False,
        "query_hash": None,
    }
    assert record["bias_confidence_score"] == result.bias_confidence_score
    assert CANARY not in store.path.read_text() and CANARY not in result.model_dump_json()


def test_consent_zero_stores_nothing_but_still_publishes(tmp_path):
    store = JsonlRecordStore(tmp_path, "interactions")
    [outcome] = asyncio.run(consumer(store=store).process([deliver(response_event(consent_level=0))]))
    assert outcome.result is not None and not store.path.exists()


def test_consent_four_stores_the_query_hmac_only(tmp_path):
    store = JsonlRecordStore(tmp_path, "interactions")
    secret = b"s" * 32
    asyncio.run(consumer(store=store, hash_secret=secret).process([deliver(response_event(consent_level=4))]))
    [record] = list(read_records([store.path]))
    import hashlib
    import hmac

    assert record["query_hash"] == hmac.new(secret, CANARY.encode(), hashlib.sha256).hexdigest()


def test_a_redelivered_message_is_published_once_and_recorded_once(tmp_path):
    store = JsonlRecordStore(tmp_path, "interactions")
    worker = consumer(store=store)
    first = asyncio.run(worker.process([deliver(response_event(), "1-0")]))
    asyncio.run(worker.published(first))
    again = asyncio.run(worker.process([deliver(response_event(), "1-0"), deliver(response_event(), "2-0")]))
    assert [o.duplicate for o in again] == [True, True]  # the same delivery (done) and another copy
    assert len(list(read_records([store.path]))) == 1


def test_responses_share_the_window_store_without_touching_the_tenant_council_window():
    window = MemoryWindow()
    router = EventRouter(
        CouncilSessionProcessor(window=window, store=None),
        consumer(window=window),
        llm_topic="llm.responses",
        council_topic="council.sessions",
    )
    session = council_event(
        {"M1": {"M1": 9, "M2": 6}, "M2": {"M1": 7, "M2": 8}},
        session_id="x-1",
        tenant_id="acme",
        timestamp="2026-09-01T00:00:00Z",
    )
    asyncio.run(router.process([deliver(session, "1", topic="council.sessions")]))
    # 40 days newer than the session: as a window entry it would move the 30-day cutoff past it
    late = response_event(tenant_id="acme", audit_id="x-1", timestamp="2026-10-11T00:00:00Z")
    [outcome] = asyncio.run(router.process([deliver(late, "2", topic="llm.responses")]))
    assert outcome.result is not None and not outcome.duplicate  # the same id as the session: not a duplicate
    assert window.summary("acme").sessions == 1


HOSTILE = [
    (b"x" * (10 * 1024 * 1024), "too_large", "over the limit of 4194304"),
    (
        json.dumps(response_event(llm_response="word " * 60_000)).encode(),
        "invalid_event",
        "llm_response: the text is 300000 bytes, larger than the limit of 262144 bytes",
    ),
    (b"[" * 100_000 + b"]" * 100_000, "invalid_json", "nests objects or arrays more than 1024 levels deep"),
    (
        json.dumps(response_event(members=[{"member_id": f"m{i}", "response": "ok"} for i in range(10_000)])).encode(),
        "invalid_event",
        "10000 members exceed the limit of 64",
    ),
    (b'{"audit_id": "a-1", "llm_response": "\xff\xfe"}', "invalid_json", "not UTF-8"),
    (
        json.dumps({"audit_id": "a-9", "timestamp": "2026-11-20T10:30:00Z"}).encode(),
        "invalid_event",
        "llm_response: required field is missing",
    ),
    (
        json.dumps(council_event({"M1": {"M1": 9, "M2": 6}, "M2": {"M1": 7, "M2": 8}})).encode(),
        "wrong_topic",
        "council.sessions",
    ),
    (json.dumps(response_event(timestamp=1_763_634_600_000)).encode(), "invalid_event", "ISO 8601"),
]


@pytest.mark.parametrize(
    "body, error_type, reason",
    HOSTILE,
    ids=["10 MB", "long answer", "nested", "members", "not utf-8", "no answer", "council event", "epoch timestamp"],
)
def test_hostile_input_gets_a_reason_and_the_next_message_is_still_processed(body, error_type, reason):
    bad, good = asyncio.run(consumer().process([deliver(body, "1-0"), deliver(response_event(), "2-0")]))
    assert bad.result is None and bad.dead_letter.error_type == error_type
    assert reason in bad.dead_letter.error and "\n" not in bad.dead_letter.error
    assert good.result is not None and good.result.bias_type == ["gendered_language"]


def test_the_router_sends_each_kind_to_its_consumer_in_order():
    window = MemoryWindow()
    router = EventRouter(
        CouncilSessionProcessor(window=window, store=None),
        consumer(window=window),
        llm_topic="llm.responses",
        council_topic="council.sessions",
    )
    session = council_event({"M1": {"M1": 9, "M2": 6}, "M2": {"M1": 7, "M2": 8}})
    outcomes = asyncio.run(
        router.process(
            [
                deliver(response_event(), "1", topic="file.jsonl"),
                deliver(session, "2", topic="file.jsonl"),
                deliver(response_event(audit_id="a-2"), "3", topic="file.jsonl"),
            ]
        )
    )
    assert [o.result.source for o in outcomes] == ["llm.response", "council.session", "llm.response"]
    # by topic first: a response sent to council.sessions is dead-lettered there, with the right topic named
    [wrong] = asyncio.run(router.process([deliver(response_event(audit_id="a-3"), "4", topic="council.sessions")]))
    assert wrong.dead_letter.error_type == "wrong_topic"


@pytest.mark.parametrize(
    "usage, stored",
    [
        ({"prompt_tokens": 7}, 7),
        ({"prompt_tokens": -3}, None),
        ({"prompt_tokens": 2.5}, None),
        ({"prompt_tokens": "7"}, None),
        ({"prompt_tokens": True}, None),
        ("not a mapping", None),
    ],
)
def test_token_counts_from_query_context_are_taken_only_when_sane(tmp_path, usage, stored):
    # found by fuzzing the API: a 100-bit integer there made the record unwritable (now refused at intake)
    store = JsonlRecordStore(tmp_path, "interactions")
    [outcome] = asyncio.run(consumer(store=store).process([deliver(response_event(query_context={"usage": usage}))]))
    assert outcome.result is not None
    [record] = list(read_records([store.path]))
    assert record["prompt_tokens"] == stored


def test_a_100_bit_integer_in_query_context_is_a_dead_letter_naming_it():
    huge = response_event(query_context={"usage": {"prompt_tokens": 10**30}})
    [outcome] = asyncio.run(consumer().process([deliver(huge)]))
    assert outcome.dead_letter.error == "query_context: usage.prompt_tokens: numbers are finite and within +-1e+15"


def test_analysis_runs_off_the_event_loop():
    """A slow embedding backend must not stall the loop (the other input, probes, the drain)."""
    import time

    import numpy as np

    def slow_embed(texts):
        time.sleep(0.3)  # the model's time, with the GIL released as torch does
        return np.ones((len(texts), 2)) / np.sqrt(2)

    async def run() -> int:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        event = response_event(counterfactuals=[{"swap": {"he": "she"}, "llm_response": "She is fine."}])
        [outcome] = await consumer(embed=slow_embed).process([deliver(event)])
        task.cancel()
        assert outcome.result.bias_report_summary["counterfactuals"][0]["semantic_similarity"] == 1.0
        return ticks

    assert asyncio.run(run()) >= 10  # the loop ticked through the 0.3 s of "inference"


def test_an_event_over_the_time_budget_is_dead_lettered_with_the_reason_and_its_neighbour_is_audited():
    runaway = response_event(
        audit_id="slow", counterfactuals=[{"swap": {"he": "she"}, "llm_response": "Fine. " * 5_000}]
    )
    ticks = iter(range(10**9))  # one second a step
    slow, fast = asyncio.run(
        consumer(max_event_seconds=100, clock=lambda: float(next(ticks))).process(
            [deliver(runaway, "1-0"), deliver(response_event(audit_id="fast"), "2-0")]
        )
    )
    assert slow.result is None and slow.dead_letter.error_type == "over_budget"
    assert slow.dead_letter.error.startswith("analysis took longer than its budget of 100 s per event (stopped at")
    assert fast.result is not None and fast.result.audit_id == "fast"  # its own budget, not what is left
    [fine] = asyncio.run(
        consumer(max_event_seconds=10_000, clock=lambda: float(next(ticks))).process([deliver(runaway, "3-0")])
    )
    assert fine.result is not None and fine.result.audit_id == "slow"


def test_at_consent_two_the_groups_a_query_names_are_kept_never_the_query(tmp_path):
    from bias_audit.lexicons.load import replay_groups

    store = JsonlRecordStore(tmp_path, "interactions")
    query = f"Should I hire an older Muslim woman? {CANARY}"
    events = [
        response_event(
            audit_id="named",
            consent_level=2,
            original_query=query,
            llm_response="I'm sorry, but I can't help with that, you idiot.",
        ),
        response_event(audit_id="consent-1", consent_level=1, original_query=query),
        response_event(audit_id="no-group", consent_level=2, original_query="What is 2 + 2?"),
    ]
    asyncio.run(
        consumer(store=store, query_axes=replay_groups()).process([deliver(e, f"{i}-0") for i, e in enumerate(events)])
    )
    records = {r["audit_id"]: r for r in read_records([store.path])}
    summary = records["named"]["bias_report_summary"]
    assert summary["query_groups"] == {"gender": "female", "religion": "muslim", "age": "old"}
    assert summary["answer_traits"] == {
        "refusal": True,
        "sentiment": round(vader_scorer()(events[0]["llm_response"]), 4),
        "toxic": True,
        "words": 10,
    }
    assert "query_groups" not in records["consent-1"]["bias_report_summary"]
    assert "query_groups" not in records["no-group"]["bias_report_summary"]
    assert CANARY not in store.path.read_text()
