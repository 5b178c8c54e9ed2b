"""A list's totalCount: the right number, read from the page index alone (no heap visit per
matching row), for every filter column the list offers."""

from __future__ import annotations

import asyncio
import json

import psycopg
import pytest

from bias_audit.consumers.envelope import Delivery
from bias_audit.consumers.responses import ResponseProcessor
from bias_audit.lexicons.load import shipped_lexicons
from bias_audit.lexicons.sentiment import vader_scorer
from bias_audit.state.memory_window import MemoryWindow
from bias_audit.storage.postgres import PostgresInteractionStore, apply_migrations, read_interactions
from bias_audit.storage.postgres.audit_api import InteractionFilter, count_query
from bias_audit.worker.response_samples import generate_responses
from tests.builders import read_all

pytestmark = pytest.mark.postgres


def _stored(url: str) -> list[dict]:
    apply_migrations(url)
    events = generate_responses(60, seed=17)
    for number, event in enumerate(events):
        event["tenant_id"] = ("acme", "globex")[number % 2]
        event["user_id"] = f"user-{number % 3}"
    store = PostgresInteractionStore(url)
    processor = ResponseProcessor(
        window=MemoryWindow(), store=store, lexicons=shipped_lexicons(), sentiment=vader_scorer()
    )
    asyncio.run(
        processor.process([Delivery(str(i), json.dumps(e).encode(), "llm.responses") for i, e in enumerate(events)])
    )
    store.close()
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("VACUUM ANALYZE llm_interaction_audit")  # the visibility map an index-only scan reads
    return read_all(read_interactions, url)


def test_every_list_filter_is_counted_right_and_from_the_index_alone(postgres_url):
    rows = _stored(postgres_url)
    some = rows[0]
    filters = [
        (InteractionFilter(), lambda r: True),
        (InteractionFilter(bias_detected=True), lambda r: r["bias_detected"]),
        (
            InteractionFilter(llm_model=some["llm_model"], human_reviewed=False),
            lambda r: r["llm_model"] == some["llm_model"] and not r["human_reviewed"],
        ),
        (InteractionFilter(user_id="user-1"), lambda r: r["user_id"] == "user-1"),
        (InteractionFilter(llm_provider=some["llm_provider"]), lambda r: r["llm_provider"] == some["llm_provider"]),
        (InteractionFilter(min_confidence=0.5), lambda r: r["bias_confidence_score"] >= 0.5),
        (InteractionFilter(decision_id="none-such"), lambda r: False),
    ]
    with psycopg.connect(postgres_url) as connection:
        # with every other way closed, a plan is an index-only scan only if the index covers the filter
        connection.execute("SET enable_seqscan = off")
        connection.execute("SET enable_bitmapscan = off")
        for found, keep in filters:
            sql, values = count_query(["acme"], found)
            expected = sum(1 for r in rows if r["tenant_id"] == "acme" and keep(r))
            assert connection.execute(sql, values).fetchone()[0] == expected, found
            plan = "\n".join(line for (line,) in connection.execute(b"EXPLAIN " + sql, values))
            assert "Index Only Scan" in plan, (found, plan)
    assert 0 < sum(r["bias_detected"] for r in rows) < len(rows)
