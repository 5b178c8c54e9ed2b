"""The design document's retention policy on the PostgreSQL store, in batches (short locks),
idempotent, each batch one transaction:

- after `anonymize_after_days`: user ids, trace ids, query hashes, query context and the
  response text are removed from interaction audits (what stays is what the statistics need);
- after `aggregate_after_days`: interaction audits and council sessions are rolled up into
  `bias_daily_aggregate` (per tenant, day, model, reviewer, bias type) and deleted, in the same
  transaction, so a day is never counted twice or lost (judge verdicts too: per judge and day,
  verdicts and failed ones, decisive ones for the first shown, length-eligible ones for the
  longer answer); then the monthly partitions wholly
  older than that age, empty by now, are dropped (their files and index pages go with them).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg

from bias_audit.analysis.judge_games import game_from_event
from bias_audit.analysis.judge_window import (
    FAILED,
    FIRST_DECIDED,
    FIRST_WON,
    LENGTH_DECIDED,
    LONGER_WON,
    N,
    verdict_contribution,
)

from .rows import SESSION_COLUMNS, records_of

_PARTITIONED = {"council_session_audit": "session_ts", "llm_interaction_audit": "log_timestamp"}

_ANONYMIZED = (
    "user_id IS NULL AND trace_id IS NULL AND query_hash IS NULL AND query_context IS NULL AND llm_response IS NULL"
)
_UPSERT = (
    "INSERT INTO bias_daily_aggregate (tenant_id, day, source, model, reviewer, bias_type, items, flagged, "
    "score_sum) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (tenant_id, day, source, model, "
    "reviewer, bias_type) DO UPDATE SET items = bias_daily_aggregate.items + EXCLUDED.items, "
    "flagged = bias_daily_aggregate.flagged + EXCLUDED.flagged, "
    "score_sum = bias_daily_aggregate.score_sum + EXCLUDED.score_sum"
)


@dataclass
class RetentionReport:
    anonymized: int = 0  # interaction audits
    review_answers: int = 0  # judge verdicts' answers kept for blind review
    anonymized_verdicts: int = 0
    aggregated_interactions: int = 0
    aggregated_sessions: int = 0
    aggregated_verdicts: int = 0
    dropped_partitions: list[str] = field(default_factory=list)

    def lines(self, dry_run: bool) -> list[str]:
        verb = "would" if dry_run else "did"
        dropped = ", ".join(self.dropped_partitions) or "none"
        return [
            f"anonymize interaction audits: {self.anonymized} ({verb})",
            f"remove judge verdicts' answers and questions kept for review: {self.review_answers} ({verb})",
            f"anonymize judge verdicts: {self.anonymized_verdicts} ({verb})",
            f"roll up and delete interaction audits: {self.aggregated_interactions} ({verb})",
            f"roll up and delete council sessions: {self.aggregated_sessions} ({verb})",
            f"roll up and delete judge verdicts: {self.aggregated_verdicts} ({verb})",
            f"drop monthly partitions: {dropped} ({verb})",
        ]


def apply_retention(
    url: str,
    *,
    anonymize_after_days: float = 180,
    aggregate_after_days: float = 365,
    dry_run: bool = False,
    batch: int = 1_000,
    now: datetime | None = None,
) -> RetentionReport:
    now = now or datetime.now(timezone.utc)
    anonymize_before = now - timedelta(days=anonymize_after_days)
    aggregate_before = now - timedelta(days=aggregate_after_days)
    report = RetentionReport()
    with psycopg.connect(url, autocommit=True) as connection:
        if dry_run:
            report.anonymized = _count(
                connection, "llm_interaction_audit", f"log_timestamp < %s AND NOT ({_ANONYMIZED})", anonymize_before
            )
            report.review_answers = _count(connection, "judge_review_item", "verdict_ts < %s", anonymize_before)
            report.anonymized_verdicts = _count(
                connection, "judge_verdicts", "verdict_ts < %s AND trace_id IS NOT NULL", anonymize_before
            )
            report.aggregated_verdicts = _count(connection, "judge_verdicts", "verdict_ts < %s", aggregate_before)
            report.aggregated_interactions = _count(
                connection, "llm_interaction_audit", "log_timestamp < %s", aggregate_before
            )
            report.aggregated_sessions = _count(
                connection, "council_session_audit", "session_ts < %s", aggregate_before
            )
            report.dropped_partitions = _partitions_before(connection, aggregate_before)
            return report
        while changed := _anonymize_batch(connection, anonymize_before, batch):
            report.anonymized += changed
        while removed := _remove_review_answers(connection, anonymize_before, batch):
            report.review_answers += removed
        while changed := _anonymize_verdicts(connection, anonymize_before, batch):
            report.anonymized_verdicts += changed
        while rolled := _roll_up_interactions(connection, aggregate_before, batch):
            report.aggregated_interactions += rolled
        while rolled := _roll_up_sessions(connection, aggregate_before, batch):
            report.aggregated_sessions += rolled
        while rolled := _roll_up_verdicts(connection, aggregate_before, batch):
            report.aggregated_verdicts += rolled
        for partition in _partitions_before(connection, aggregate_before):
            # as the tables' owner (a SECURITY DEFINER function): a month a late writer put rows
            # in after the roll-up is kept
            dropped = connection.execute("SELECT bias_audit_drop_month(%s)", (partition,)).fetchone()
            if dropped and dropped[0]:
                report.dropped_partitions.append(partition)
    return report


def _partitions_before(connection: psycopg.Connection, before: datetime) -> list[str]:
    """The monthly partitions whose every row would be older than `before` (their upper bound,
    from the catalog, at or before it), oldest first."""
    found = []
    for parent in _PARTITIONED:
        rows = connection.execute(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = %s::regclass",
            (parent,),
        ).fetchall()
        for name, bound in rows:  # FOR VALUES FROM ('2025-01-01 00:00:00+00') TO ('2025-02-01 00:00:00+00')
            upper = datetime.fromisoformat(bound.rsplit("TO ('", 1)[1].rstrip("')"))
            if upper <= before:
                found.append((upper, name))
    return [name for _, name in sorted(found)]


def _count(connection: psycopg.Connection, table: str, condition: str, before: datetime) -> int:
    row = connection.execute(f"SELECT count(*) FROM {table} WHERE {condition}".encode(), (before,)).fetchone()
    return int(row[0]) if row else 0


def _anonymize_batch(connection: psycopg.Connection, before: datetime, batch: int) -> int:
    with connection.transaction():
        cursor = connection.execute(
            "UPDATE llm_interaction_audit SET user_id = NULL, trace_id = NULL, query_hash = NULL, query_context = NULL, "
            "llm_response = NULL WHERE id IN (SELECT id FROM llm_interaction_audit WHERE log_timestamp < %s AND NOT "
            f"({_ANONYMIZED}) ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED)".encode(),
            (before, batch),
        )
        return cursor.rowcount


def _remove_review_answers(connection: psycopg.Connection, before: datetime, batch: int) -> int:
    with connection.transaction():
        cursor = connection.execute(
            "DELETE FROM judge_review_item WHERE (tenant_id, verdict_id) IN (SELECT tenant_id, verdict_id FROM "
            "judge_review_item WHERE verdict_ts < %s LIMIT %s FOR UPDATE SKIP LOCKED)",
            (before, batch),
        )
        return cursor.rowcount


def _anonymize_verdicts(connection: psycopg.Connection, before: datetime, batch: int) -> int:
    with connection.transaction():
        cursor = connection.execute(
            "UPDATE judge_verdicts SET trace_id = NULL, event = event - 'trace_id' WHERE (tenant_id, verdict_id) IN "
            "(SELECT tenant_id, verdict_id FROM judge_verdicts WHERE verdict_ts < %s AND trace_id IS NOT NULL "
            "LIMIT %s FOR UPDATE SKIP LOCKED)",
            (before, batch),
        )
        return cursor.rowcount


# a judge's daily counts: bias_type -> (what is counted, what of it is flagged), from its verdicts' sums
_JUDGE_TOTALS = {
    "": (N, FAILED),
    "first_position": (FIRST_DECIDED, FIRST_WON),
    "longer_answer": (LENGTH_DECIDED, LONGER_WON),
}


def _roll_up_verdicts(connection: psycopg.Connection, before: datetime, batch: int) -> int:
    """Judge verdicts into daily counts per judge (model, and prompt as the reviewer column):
    verdicts and failed ones, decisive ones and those for the first shown, length-eligible ones
    and those for the longer answer (score_sum = the flagged count: the mean is the rate); then
    deleted, with people's verdicts on them."""
    with connection.transaction():
        rows = connection.execute(
            "DELETE FROM judge_verdicts WHERE (tenant_id, verdict_id) IN (SELECT tenant_id, verdict_id FROM "
            "judge_verdicts WHERE verdict_ts < %s LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING tenant_id, verdict_id, "
            "verdict_ts, judge_model, judge_prompt, event",
            (before, batch),
        ).fetchall()
        totals: dict[tuple[Any, ...], list[Any]] = defaultdict(lambda: [0, 0, 0.0])
        for tenant, _, moment, model, prompt, event in rows:
            day = moment.astimezone(timezone.utc).date()
            sums = verdict_contribution(game_from_event(event))
            for bias_type, (counted, flagged) in _JUDGE_TOTALS.items():
                if sums.get(counted):
                    entry = totals[(tenant, day, "judge", model, prompt or "", bias_type)]
                    entry[0] += sums[counted]
                    entry[1] += sums.get(flagged, 0)
                    entry[2] += sums.get(flagged, 0)
        _upsert(connection, totals)
        if rows:
            with connection.cursor() as cursor:
                cursor.executemany(
                    "DELETE FROM judge_human_verdict WHERE tenant_id = %s AND verdict_id = %s",
                    [(tenant, verdict) for tenant, verdict, *_ in rows],
                )
        return len(rows)


def _roll_up_interactions(connection: psycopg.Connection, before: datetime, batch: int) -> int:
    with connection.transaction():
        rows = connection.execute(
            "DELETE FROM llm_interaction_audit WHERE id IN (SELECT id FROM llm_interaction_audit WHERE log_timestamp < %s "
            "ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING tenant_id, log_timestamp, coalesce(llm_model, ''), "
            "bias_type, bias_detected, bias_confidence_score",
            (before, batch),
        ).fetchall()
        totals: dict[tuple[Any, ...], list[float]] = defaultdict(lambda: [0, 0, 0.0])
        for tenant, moment, model, bias_types, detected, confidence in rows:
            day = moment.astimezone(timezone.utc).date()
            for bias_type in bias_types or [""]:
                entry = totals[(tenant, day, "interaction", model, "", bias_type)]
                entry[0] += 1
                entry[1] += 1 if detected and bias_type else 0
                entry[2] += float(confidence) / 100
        _upsert(connection, totals)
        return len(rows)


def _roll_up_sessions(connection: psycopg.Connection, before: datetime, batch: int) -> int:
    with connection.transaction():
        rows = connection.execute(
            f"DELETE FROM council_session_audit WHERE (tenant_id, session_id) IN (SELECT tenant_id, session_id FROM "
            f"council_session_audit WHERE session_ts < %s LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING {SESSION_COLUMNS}".encode(),
            (before, batch),
        ).fetchall()
        totals: dict[tuple[Any, ...], list[float]] = defaultdict(lambda: [0, 0, 0.0])
        for row in rows:
            day = row[2].astimezone(timezone.utc).date()
            for record in records_of(row):
                entry = totals[(record["tenant_id"], day, "council", record["model_id"], record["reviewer_id"], "")]
                entry[0] += 1
                entry[1] += 1 if record["is_self_review"] else 0
                entry[2] += record["score_value"]
        _upsert(connection, totals)
        return len(rows)


def _upsert(connection: psycopg.Connection, totals: dict[tuple[Any, ...], list[Any]]) -> None:
    if totals:
        with connection.cursor() as cursor:
            cursor.executemany(
                _UPSERT, [(*key, int(items), int(flagged), total) for key, (items, flagged, total) in totals.items()]
            )
