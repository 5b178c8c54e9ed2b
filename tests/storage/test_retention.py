"""Retention on a real PostgreSQL with back-dated rows: anonymized after 180 days, rolled up into
daily aggregates and deleted after a year, idempotent, and a dry run changes nothing."""

from __future__ import annotations

import asyncio
import json
import subprocess
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from bias_audit.consumers.council import CouncilSessionProcessor
from bias_audit.consumers.envelope import Delivery
from bias_audit.consumers.responses import ResponseProcessor
from bias_audit.lexicons.load import shipped_lexicons
from bias_audit.lexicons.sentiment import vader_scorer
from bias_audit.state.memory_window import MemoryWindow
from bias_audit.storage.postgres import (
    PostgresInteractionStore,
    PostgresRecordStore,
    apply_migrations,
    read_interactions,
    read_records,
)
from bias_audit.worker.response_samples import generate_responses
from bias_audit.worker.samples import generate_sessions
from tests.builders import read_all
from tests.services import run_cli

pytestmark = pytest.mark.postgres


def now() -> datetime:
    """Noon today, when a test runs (never at import)."""
    return datetime.now(timezone.utc).replace(hour=12, minute=0, second=0, microsecond=0)


def store_interactions(url: str, days_ago: int, count: int, seed: int) -> list[dict]:
    events = generate_responses(count, seed=seed, start=now() - timedelta(days=days_ago))
    for index, event in enumerate(events):
        event["audit_id"] = f"{days_ago}-{index}"
    processor = ResponseProcessor(
        window=MemoryWindow(),
        store=PostgresInteractionStore(url),
        lexicons=shipped_lexicons(),
        sentiment=vader_scorer(),
    )
    asyncio.run(
        processor.process(
            [Delivery(f"{days_ago}-{i}", json.dumps(e).encode(), "llm.responses") for i, e in enumerate(events)]
        )
    )
    return events


def store_sessions(url: str, days_ago: int, count: int, seed: int) -> list[dict]:
    sessions = generate_sessions(count, seed=seed, start=now() - timedelta(days=days_ago))
    processor = CouncilSessionProcessor(window=MemoryWindow(), store=PostgresRecordStore(url))
    asyncio.run(
        processor.process(
            [Delivery(f"{days_ago}-{i}", json.dumps(s).encode(), "council.sessions") for i, s in enumerate(sessions)]
        )
    )
    return sessions


def partitions(url: str) -> set[str]:
    with psycopg.connect(url) as connection:
        return {
            name
            for (name,) in connection.execute(
                "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent IN "
                "('council_session_audit'::regclass, 'llm_interaction_audit'::regclass)"
            )
        }


def retention(url: str, *args: str) -> subprocess.CompletedProcess:
    return run_cli("retention", "--store", url, *args)


def test_retention_anonymizes_then_rolls_up_and_deletes_and_is_idempotent(postgres_url):
    apply_migrations(postgres_url)
    recent = store_interactions(postgres_url, 10, 5, seed=1)
    middle = store_interactions(postgres_url, 200, 6, seed=2)
    old = store_interactions(postgres_url, 400, 7, seed=3)
    store_sessions(postgres_url, 10, 3, seed=4)
    old_sessions = store_sessions(postgres_url, 400, 4, seed=5)
    expected_scores = sum(score for s in old_sessions for review in s["reviews"] for score in review["scores"].values())

    before = [r for r in read_all(read_interactions, postgres_url) if r["audit_id"].startswith("400-")]
    expected_interactions: dict[tuple, list] = {}
    for record in before:  # per (day, model, bias type): interactions, flagged, confidence sum
        day = datetime.fromisoformat(record["timestamp"]).date()
        for bias_type in record["bias_type"] or [""]:
            entry = expected_interactions.setdefault((str(day), record["llm_model"], bias_type), [0, 0, 0.0])
            entry[0] += 1
            entry[1] += 1 if record["bias_detected"] and bias_type else 0
            entry[2] += record["bias_confidence_score"]

    month = (now() - timedelta(days=400)).strftime("%Ym%m")  # the old rows' month, wholly past a year
    old_months = f"council_session_audit_{month}, llm_interaction_audit_{month}"
    assert partitions(postgres_url) >= {f"council_session_audit_{month}", f"llm_interaction_audit_{month}"}
    with psycopg.connect(postgres_url) as connection:  # answers kept for blind review: two old, one recent
        for verdict, days in (("old-1", 200), ("old-2", 400), ("new", 10)):
            connection.execute(
                "INSERT INTO judge_review_item VALUES ('demo', %s, 'i', ARRAY['a','b'], "
                "ARRAY['first answer','second answer'], %s)",
                (verdict, now() - timedelta(days=days)),
            )
    dry = retention(postgres_url, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines() == [
        "anonymize interaction audits: 13 (would)",
        "remove judge verdicts' answers and questions kept for review: 2 (would)",
        "anonymize judge verdicts: 0 (would)",
        "roll up and delete interaction audits: 7 (would)",
        "roll up and delete council sessions: 4 (would)",
        "roll up and delete judge verdicts: 0 (would)",
        f"drop monthly partitions: {old_months} (would)",
    ]
    assert len(list(read_all(read_interactions, postgres_url))) == 18  # the dry run changed nothing

    done = retention(postgres_url)
    assert done.stdout.splitlines() == [
        "anonymize interaction audits: 13 (did)",
        "remove judge verdicts' answers and questions kept for review: 2 (did)",
        "anonymize judge verdicts: 0 (did)",
        "roll up and delete interaction audits: 7 (did)",
        "roll up and delete council sessions: 4 (did)",
        "roll up and delete judge verdicts: 0 (did)",
        f"drop monthly partitions: {old_months} (did)",
    ]
    assert not any(month in name for name in partitions(postgres_url))
    recent_month, middle_month = ((now() - timedelta(days=days)).strftime("%Ym%m") for days in (10, 200))
    assert partitions(postgres_url) == {
        f"council_session_audit_{recent_month}",
        f"llm_interaction_audit_{recent_month}",
        f"llm_interaction_audit_{middle_month}",
    }
    left = {r["audit_id"]: r for r in read_all(read_interactions, postgres_url)}
    assert sorted(left) == sorted(e["audit_id"] for e in recent + middle)
    for event in middle:  # anonymized: what the statistics need stays
        row = left[event["audit_id"]]
        assert row["user_id"] is None and row["trace_id"] is None and row["llm_response"] is None
        assert row["bias_score"] is not None and row["llm_model"] == event["llm_model"]
    for event in recent:
        assert left[event["audit_id"]]["llm_response"] == event["llm_response"]
    assert len({r["session_id"] for r in read_all(read_records, postgres_url)}) == 3
    with psycopg.connect(postgres_url) as connection:
        council = connection.execute(
            "SELECT sum(items), sum(score_sum) FROM bias_daily_aggregate WHERE source = 'council'"
        ).fetchone()
        interactions = connection.execute(
            "SELECT day::text, model, bias_type, items, flagged, score_sum FROM "
            "bias_daily_aggregate WHERE source = 'interaction'"
        ).fetchall()
    assert council[0] == 4 * 25 and council[1] == pytest.approx(expected_scores)
    assert {(d, m, b): [i, f, pytest.approx(c)] for d, m, b, i, f, c in interactions} == expected_interactions
    assert len(before) == len(old) == 7

    report = run_cli("report", "--store", postgres_url, "--format", "json")
    assert report.returncode == 0, report.stderr
    [history] = json.loads(report.stdout)["rolled_up"]  # the deleted year's counts, beside the window
    old_day = str((now() - timedelta(days=400)).date())
    assert (history["tenant_id"], history["first_day"], history["last_day"]) == ("demo", old_day, old_day)
    cells = [t for t in history["totals"] if t["source"] == "council"]
    assert sum(t["items"] for t in cells) == 4 * 25
    assert sum(t["mean"] * t["items"] for t in cells) == pytest.approx(expected_scores)
    assert {(t["bias_type"], t["items"]) for t in history["totals"] if t["source"] == "interaction"} == {
        (b, sum(v[0] for (_, _, bt), v in expected_interactions.items() if bt == b))
        for (_, _, b) in expected_interactions
    }
    text = run_cli("report", "--store", postgres_url, env={"COLUMNS": "120"})
    assert f"demo: rolled up by retention, {old_day} to {old_day} (1 day)" in text.stdout
    csv_out = run_cli("report", "--store", postgres_url, "--format", "csv")
    rolled = [line.split(",") for line in csv_out.stdout.splitlines() if ",rolled_up_council_mean," in line]
    assert sum(int(row[9]) for row in rolled) == 4 * 25 and {row[0] for row in rolled} == {"demo"}

    again = retention(postgres_url)
    with psycopg.connect(postgres_url) as connection:
        assert connection.execute("SELECT verdict_id FROM judge_review_item").fetchall() == [("new",)]
    assert again.stdout.splitlines() == [
        "anonymize interaction audits: 0 (did)",
        "remove judge verdicts' answers and questions kept for review: 0 (did)",
        "anonymize judge verdicts: 0 (did)",
        "roll up and delete interaction audits: 0 (did)",
        "roll up and delete council sessions: 0 (did)",
        "roll up and delete judge verdicts: 0 (did)",
        "drop monthly partitions: none (did)",
    ]
    with psycopg.connect(postgres_url) as connection:
        assert (
            connection.execute("SELECT sum(items) FROM bias_daily_aggregate WHERE source = 'council'").fetchone()[0]
            == 4 * 25
        )  # nothing counted twice


def test_retention_refuses_ages_in_the_wrong_order(postgres_url):
    apply_migrations(postgres_url)
    refused = retention(postgres_url, "--anonymize-after-days", "400", "--aggregate-after-days", "365")
    assert refused.returncode == 2 and refused.stderr.startswith("error: --anonymize-after-days must be positive")


def test_judge_verdicts_are_anonymized_then_rolled_up_per_judge_and_day(postgres_url):
    from bias_audit.storage.postgres.retention import apply_retention
    from bias_audit.storage.postgres.verdicts import import_verdicts

    apply_migrations(postgres_url)

    def verdict(n: int, days: int, preference: str | None, lengths=(10, 30)) -> dict:
        when = (now() - timedelta(days=days)).isoformat().replace("+00:00", "Z")
        return {
            "verdict_id": f"v{days}-{n}",
            "tenant_id": "evals",
            "timestamp": when,
            "trace_id": f"trace-{n}",
            "judge": {"model": "judge-x", "prompt": "p1"},
            "item_id": f"i{n}",
            "game": 1,
            "candidates": [{"model": "a", "length_words": lengths[0]}, {"model": "b", "length_words": lengths[1]}],
            "verdict": {"kind": "failed"} if preference is None else {"kind": "pairwise", "preference": preference},
        }

    old = [verdict(0, 400, "A>B"), verdict(1, 400, "B>A"), verdict(2, 400, "A>B", (20, 20)), verdict(3, 400, None)]
    middle = [verdict(4, 200, "A>B")]
    recent = [verdict(5, 10, "A>B")]
    assert import_verdicts(postgres_url, old + middle + recent) == (6, 6)
    with psycopg.connect(postgres_url) as connection:
        connection.execute(
            "INSERT INTO judge_human_verdict (tenant_id, verdict_id, reviewer, preference, shown_swapped) "
            "VALUES ('evals', 'v400-0', 'rita', 'A>B', false), ('evals', 'v10-5', 'rita', 'B>A', true)"
        )
    report = apply_retention(postgres_url, anonymize_after_days=180, aggregate_after_days=365)
    assert (report.anonymized_verdicts, report.aggregated_verdicts) == (5, 4)
    with psycopg.connect(postgres_url) as connection:
        left = dict(connection.execute("SELECT verdict_id, trace_id FROM judge_verdicts").fetchall())
        events = [row[0] for row in connection.execute("SELECT event FROM judge_verdicts ORDER BY verdict_id")]
        totals = {
            row[0]: row[1:]
            for row in connection.execute(
                "SELECT bias_type, items, flagged, score_sum, model, reviewer FROM bias_daily_aggregate WHERE source = 'judge'"
            )
        }
        people = connection.execute("SELECT verdict_id FROM judge_human_verdict").fetchall()
    assert left == {"v200-4": None, "v10-5": "trace-5"}  # anonymized after 180 days, deleted after 365
    assert "trace_id" not in events[1] and events[0]["trace_id"] == "trace-5"
    # the 4 old verdicts: 1 failed; 3 decisive, 2 for the first shown; 2 length-eligible (10 vs 30), 1 for the longer
    assert totals == {
        "": (4, 1, 1.0, "judge-x", "p1"),
        "first_position": (3, 2, 2.0, "judge-x", "p1"),
        "longer_answer": (2, 1, 1.0, "judge-x", "p1"),
    }
    assert people == [("v10-5",)]  # people's verdicts on deleted verdicts go with them
    shown = run_cli("report", "--store", postgres_url, "--format", "json")
    assert shown.returncode == 0, shown.stderr
    [history] = json.loads(shown.stdout)["rolled_up"]
    assert sorted((t["source"], t["bias_type"], t["items"], t["mean"]) for t in history["totals"]) == [
        ("judge", "", 4, 0.25),
        ("judge", "first_position", 3, pytest.approx(2 / 3)),
        ("judge", "longer_answer", 2, 0.5),
    ]
