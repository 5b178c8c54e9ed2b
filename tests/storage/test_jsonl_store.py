import json
import os
import stat

import pytest

from bias_audit.analysis.observations import session_scores
from bias_audit.analysis.records import query_hash, session_records
from bias_audit.schemas.events import CouncilSessionEvent
from bias_audit.schemas.records import BiasMetricRecord
from bias_audit.storage.jsonl_store import JsonlRecordStore, read_records
from tests.builders import council_event


def records_for(consent=1, secret=None, **fields):
    event = CouncilSessionEvent.model_validate(
        council_event({"M1": {"M1": 9, "M2": 6}, "M2": {"M1": 7, "M2": 8}}, query="what is my secret?", **fields)
    )
    session = session_records(event, session_scores(event), trace_id="t-1", consent=consent, secret=secret)
    return [] if session is None else session.records()


def test_one_record_per_scored_pair_with_self_reviews_marked():
    records = records_for()
    assert {(r["reviewer_id"], r["model_id"], r["is_self_review"]) for r in records} == {
        ("M1", "M1", True),
        ("M1", "M2", False),
        ("M2", "M1", False),
        ("M2", "M2", True),
    }
    for record in records:
        BiasMetricRecord.model_validate(record)  # the shape the schema promises
        assert record["query_hash"] is None and "query" not in record


def test_consent_off_stores_nothing_and_research_hashes_the_whole_query():
    assert records_for(consent=0) == []
    secret = b"0123456789abcdef-secret"
    hashed = records_for(consent=4, secret=secret)
    import hashlib
    import hmac

    assert hashed[0]["query_hash"] == hmac.new(secret, b"what is my secret?", hashlib.sha256).hexdigest()
    assert query_hash("a" * 200, secret) != query_hash("a" * 100, secret)  # not truncated to 100 chars


def test_store_is_private_append_only_and_reader_skips_a_torn_line(tmp_path):
    store = JsonlRecordStore(tmp_path / "records", "records-w1")
    store.append(records_for())
    store.append(records_for(session_id="s-2"))
    store.close()
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    with open(store.path, "ab") as handle:
        handle.write(b'{"session_id": "s-3", "revie')  # a crash mid-write
    skipped = []
    got = list(read_records([tmp_path / "records"], skipped=skipped))
    assert len(got) == 8 and {r["session_id"] for r in got} == {"s-1", "s-2"}
    assert skipped == [f"{store.path}:9"]


def test_llm_council_core_reads_our_files(tmp_path):
    persistence = pytest.importorskip("llm_council.bias_persistence")
    store = JsonlRecordStore(tmp_path, "ours")
    store.append(records_for())
    store.close()
    theirs = persistence.read_bias_records(store_path=store.path, max_sessions=10, max_days=100000)
    assert len(theirs) == 4
    first = theirs[0]
    assert first.position_is_display_order
    assert {(r.reviewer_id, r.model_id, r.score_value) for r in theirs} == {
        ("M1", "M1", 9.0),
        ("M1", "M2", 6.0),
        ("M2", "M1", 7.0),
        ("M2", "M2", 8.0),
    }


def test_we_read_llm_council_core_files(tmp_path):
    persistence = pytest.importorskip("llm_council.bias_persistence")
    path = tmp_path / "theirs.jsonl"
    written = [
        persistence.BiasMetricRecord(
            session_id="x",
            timestamp="2026-11-20T10:30:00+00:00",
            reviewer_id="a",
            model_id="b",
            position=1,
            response_length_chars=120,
            score_value=7.5,
        )
    ]
    persistence.append_bias_records(written, store_path=path)
    got = list(read_records([path]))
    assert len(got) == 1
    record = BiasMetricRecord.model_validate(got[0])
    assert (record.session_id, record.reviewer_id, record.model_id, record.position, record.score_value) == (
        "x",
        "a",
        "b",
        1,
        7.5,
    )
    assert json.loads(path.read_text())["schema_version"] == "1.2.0"
