"""One contract for every record sink the worker writes through (JSONL files, PostgreSQL), as the
windows' suite runs over memory and Redis: a batch of sessions' records comes back exactly as
built, a repeated batch is read back once, the raw query is kept nowhere, and a closed sink
writes again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from bias_audit.analysis.observations import session_scores
from bias_audit.analysis.records import SessionRecords, session_records
from bias_audit.schemas.events import CouncilSessionEvent
from bias_audit.storage.jsonl_store import JsonlRecordStore, unique_records
from bias_audit.storage.jsonl_store import read_records as read_jsonl
from bias_audit.worker.samples import generate_sessions
from tests.builders import read_all

CANARY = "CANARY-7c1d-raw-user-query"
SECRET = b"0123456789abcdef-secret"


@dataclass
class Sink:
    make: Callable[[], Any]  # a new writer on the same place
    read: Callable[[], list[dict]]  # the records as the report reads them back
    stored_text: Callable[[], str]  # everything kept, as text


@pytest.fixture(params=["jsonl", pytest.param("postgres", marks=pytest.mark.postgres)])
def sink(request, tmp_path) -> Sink:
    if request.param == "jsonl":
        folder = tmp_path / "records"
        return Sink(
            lambda: JsonlRecordStore(folder, "records-w1"),
            lambda: list(unique_records(read_jsonl([folder]))),
            lambda: "\n".join(path.read_text() for path in folder.iterdir()),
        )
    from bias_audit.storage.postgres import (
        PostgresRecordStore,
        apply_migrations,
        connect,
        every_row_as_text,
        read_records,
    )

    url = request.getfixturevalue("postgres_url")
    apply_migrations(url)

    def text() -> str:
        with connect(url) as connection:
            return "\n".join(every_row_as_text(connection))

    return Sink(lambda: PostgresRecordStore(url), lambda: read_all(read_records, url), text)


def built(count: int, seed: int, consent: int = 1) -> list[SessionRecords]:
    sessions = []
    for raw in generate_sessions(count, seed=seed):
        event = CouncilSessionEvent.model_validate({**raw, "query": CANARY})
        made = session_records(
            event, session_scores(event), trace_id=f"t-{event.session_id}", consent=consent, secret=SECRET
        )
        assert made is not None
        sessions.append(made)
    return sessions


def key(record: dict) -> tuple:
    return record["session_id"], record["reviewer_id"], record["model_id"]


def records_of(sessions: list[SessionRecords]) -> list[dict]:
    return sorted((record for s in sessions for record in s.records()), key=key)


def test_the_records_come_back_exactly_as_built(sink):
    sessions = built(6, seed=91)
    store = sink.make()
    store.append_sessions(sessions)
    store.close()
    got = sorted(sink.read(), key=key)
    assert len(got) == 6 * 25 and got == records_of(sessions)
    assert [list(r) for r in got[:1]] == [list(r) for r in records_of(sessions)[:1]]  # the contract's field order


def test_a_repeated_batch_is_read_back_once(sink):
    sessions = built(4, seed=92)
    first, second = sink.make(), sink.make()  # two workers' copies of one delivery
    first.append_sessions(sessions)
    second.append_sessions(sessions[:2])
    first.append_sessions(sessions)
    first.close()
    second.close()
    assert sorted(sink.read(), key=key) == records_of(sessions)


def test_the_raw_query_is_kept_nowhere_even_at_research_consent(sink):
    sessions = built(3, seed=93, consent=4)
    store = sink.make()
    store.append_sessions(sessions)
    store.close()
    assert all(record["query_hash"] for record in sink.read())  # research consent keeps the hash ...
    assert CANARY not in sink.stored_text()  # ... never the query


def test_a_closed_sink_writes_again(sink):
    early, late = built(2, seed=94), built(2, seed=95)
    store = sink.make()
    store.append_sessions(early)
    store.close()
    store.append_sessions(late)
    store.close()
    assert sorted(sink.read(), key=key) == records_of(early + late)
