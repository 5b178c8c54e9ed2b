"""One event must not make the worker write much more than its own size: every reviewer x
model record repeats the session's fields, so a small event with many cells and long ids was
a lever (a 125 KB request wrote 206 MB). The worst events we can build store <= 10x their size
(records, result and window digest together), or are refused with the reason."""

from __future__ import annotations

import asyncio
import json

import orjson
import pytest

from bias_audit.analysis.records import stored_bytes_bound
from bias_audit.consumers.council import CouncilSessionProcessor
from bias_audit.consumers.envelope import Delivery
from bias_audit.schemas.events import CouncilSessionEvent
from bias_audit.state.memory_window import MemoryWindow
from bias_audit.storage.jsonl_store import JsonlRecordStore


def council(
    models: int, reviewers: int, *, id_chars: int, answer: str = "", metadata: bool = False, letters: str = "m"
) -> dict:
    """`models` answers, each scored by `reviewers` reviewers; ids padded to `id_chars`."""
    pad = lambda name: (name + letters * id_chars)[:id_chars]
    names = [pad(f"{i}-") for i in range(models)]
    labels = {f"L{i}": {"model": name, "display_index": i} for i, name in enumerate(names)}
    event = {
        "session_id": pad("s-"),
        "tenant_id": ("t-" + "m" * id_chars)[:128],
        "timestamp": "2026-11-20T10:30:00Z",
        "score_scale": "1-10",
        "responses": [{"model": name, "response": answer} for name in names],
        "label_to_model": labels,
        "reviews": [{"reviewer": pad(f"r{j}-"), "scores": {label: 5 for label in labels}} for j in range(reviewers)],
    }
    if metadata:
        event["council_config_version"] = "v" * 64
        event["query_metadata"] = {f"k{i:02d}" + "k" * 29: "x" * 64 for i in range(8)}
    return event


def stored_by(event: dict, tmp_path) -> tuple[int, int, object]:
    """(body bytes, bytes written: records + result + window digest, the outcome)."""
    body = json.dumps(event, separators=(",", ":")).encode()
    store = JsonlRecordStore(tmp_path, "records")
    [outcome] = asyncio.run(
        CouncilSessionProcessor(window=MemoryWindow(), store=store).process(
            [Delivery(delivery_id="1-0", body=body, source_topic="council.sessions")]
        )
    )
    store.close()
    written = store.path.stat().st_size if store.path.exists() else 0
    if outcome.result is not None:
        written += len(outcome.result.model_dump_json())
        written += len(orjson.dumps(outcome.window_item.digest.to_dict()))
    return len(body), written, outcome


WORST = {
    "64 reviewers x 32 models, long ids": council(32, 64, id_chars=256),
    "64 x 32, long ids and full metadata": council(32, 64, id_chars=256, metadata=True),
    "64 x 32, short ids": council(32, 64, id_chars=3),
    "64 x 32, ids that JSON escapes": council(32, 64, id_chars=200, letters='"'),
    "2 x 64, long ids and full metadata": council(2, 64, id_chars=256, metadata=True),
    "32 x 2, long ids and full metadata": council(32, 2, id_chars=256, metadata=True),
}


@pytest.mark.parametrize("name", WORST)
def test_the_worst_events_store_at_most_ten_times_their_size_or_are_refused_saying_why(name, tmp_path):
    size, written, outcome = stored_by(WORST[name], tmp_path)
    assert written <= 10 * size, f"{name}: {written} bytes stored for a {size}-byte event"
    if outcome.result is None:
        letter = outcome.dead_letter
        assert letter.error_type == "too_large" and "more than 10x the event's" in letter.error
        assert written == 0


def test_an_ordinary_council_with_real_answers_and_full_metadata_is_stored(tmp_path):
    event = council(5, 5, id_chars=12, answer="A considered answer of some length. " * 30, metadata=True)
    size, written, outcome = stored_by(event, tmp_path)
    assert outcome.result is not None and 0 < written <= 10 * size


@pytest.mark.parametrize("name", WORST)
def test_the_bound_is_an_upper_bound_of_what_the_records_take(name, tmp_path):
    event = WORST[name]
    body = json.dumps(event).encode()
    store = JsonlRecordStore(tmp_path, "records")
    processor = CouncilSessionProcessor(window=MemoryWindow(), store=store, max_stored_ratio=1e9)
    asyncio.run(processor.process([Delivery(delivery_id="1-0", body=body, source_topic="council.sessions")]))
    store.close()
    actual = store.path.stat().st_size
    [record] = [json.loads(line) for line in store.path.read_text().splitlines()[:1]]
    records, bound = stored_bytes_bound(CouncilSessionEvent.model_validate(event), record["trace_id"])
    assert records == len(store.path.read_text().splitlines())
    assert actual <= bound <= 1.25 * actual


@pytest.mark.parametrize(
    "field, value, reason",
    [
        ("council_config_version", "v" * 65, "council_config_version: String should have at most 64 characters"),
        ("query_metadata", {"a": {"b": 1}}, "query_metadata: a: must be text, a number, true/false or null, not"),
        ("query_metadata", {f"k{i}": 1 for i in range(9)}, "has 9 keys, more than the limit of 8"),
        ("query_metadata", {"category": "c" * 65}, "query_metadata: category: is 65 characters, more than the limit"),
        ("score_scale", "1-10" + " " * 40, "score_scale: String should have at most 32 characters"),
    ],
)
def test_fields_copied_into_every_record_are_bounded(field, value, reason, tmp_path):
    event = {**council(2, 2, id_chars=4), field: value}
    _, written, outcome = stored_by(event, tmp_path)
    assert outcome.dead_letter is not None and written == 0
    assert reason in outcome.dead_letter.error


@pytest.mark.parametrize("name", WORST)
def test_the_quick_check_refuses_exactly_what_the_exact_bound_refuses(name):
    from bias_audit.analysis.records import stored_bytes_over

    event = CouncilSessionEvent.model_validate(WORST[name])
    records, exact = stored_bytes_bound(event, "t" * 32)
    for limit in (exact - 1, exact, exact + 1, exact * 3, exact // 3):
        expected = (records, exact) if exact > limit else None
        assert stored_bytes_over(event, "t" * 32, limit) == expected
