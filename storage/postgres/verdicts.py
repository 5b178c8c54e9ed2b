"""Judge verdicts in PostgreSQL: written by COPY into a staging table and one INSERT ... ON
CONFLICT DO NOTHING per batch (a verdict stored already is skipped), a batch per transaction for
the worker and one transaction for a whole import; read back as events."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

import orjson
import psycopg
from psycopg.types.json import Jsonb

from .connection import OneConnection

COLUMNS = "tenant_id, verdict_id, verdict_ts, judge_model, judge_prompt, item_id, trace_id, consent_level, event"


def verdict_row(event: dict[str, Any], consent: int) -> tuple[Any, ...]:
    """A validated verdict event (texts already dropped) as its row."""
    judge = event["judge"]
    stamp = event["timestamp"]
    return (
        event["tenant_id"],
        event["verdict_id"],
        datetime.fromisoformat(stamp.replace("Z", "+00:00")) if isinstance(stamp, str) else stamp,
        judge["model"],
        judge.get("prompt"),
        event["item_id"],
        event.get("trace_id"),
        consent,
        Jsonb(event, dumps=lambda value: orjson.dumps(value).decode()),
    )


class PostgresVerdictStore(OneConnection):
    """The verdict consumer's sink and `import`'s writer."""

    def append(self, events: list[dict[str, Any]]) -> int:
        """Store the verdicts not stored yet; how many were new."""
        if not events:
            return 0
        connection = self._connected()
        try:
            with connection.transaction(), connection.cursor() as cursor:
                return _insert_new(cursor, events)
        except psycopg.OperationalError:
            self.close()
            raise


def _consent(event: dict[str, Any]) -> int:
    return int(event["consent_level"]) if event.get("consent_level") is not None else 1


def _insert_new(cursor: psycopg.Cursor, events: list[dict[str, Any]]) -> int:
    """One batch through the staging table; how many verdicts were new."""
    cursor.execute(
        "CREATE TEMP TABLE IF NOT EXISTS judge_verdicts_staging "
        "(LIKE judge_verdicts INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
    )
    with cursor.copy(f"COPY judge_verdicts_staging ({COLUMNS}) FROM STDIN".encode()) as copy:
        for event in events:
            copy.write_row(verdict_row(event, _consent(event)))
    cursor.execute(
        f"INSERT INTO judge_verdicts ({COLUMNS}) SELECT {COLUMNS} FROM judge_verdicts_staging "
        "ON CONFLICT (tenant_id, verdict_id) DO NOTHING".encode()
    )
    new = cursor.rowcount
    cursor.execute("TRUNCATE judge_verdicts_staging")  # the next batch of the same transaction starts empty
    return new


class PostgresReviewSample(OneConnection):
    """The answers of the verdicts sampled for blind review (judge_review_item)."""

    def keep(self, rows: list[tuple[str, str, str, list[str], list[str], str | None, datetime]]) -> None:
        """(tenant, verdict id, item id, models, answers, question, time) each; a row kept already is
        skipped."""
        if not rows:
            return
        connection = self._connected()
        try:
            with connection.transaction(), connection.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO judge_review_item (tenant_id, verdict_id, item_id, models, answers, "
                    "question, verdict_ts) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    rows,
                )
        except psycopg.OperationalError:
            self.close()
            raise


def import_verdicts(url: str, events: Iterable[dict[str, Any]], batch: int = 2_000) -> tuple[int, int]:
    """Verdict events into the store in batches of one transaction; (read, new). Importing twice
    adds nothing; an error while reading the events (a bad row) stores none of them."""
    read = new = 0
    pending: list[dict[str, Any]] = []
    with psycopg.connect(url, connect_timeout=5) as connection, connection.transaction(), connection.cursor() as cursor:
        for event in events:
            read += 1
            pending.append(event)
            if len(pending) >= batch:
                new += _insert_new(cursor, pending)
                pending = []
        if pending:
            new += _insert_new(cursor, pending)
    return read, new


def read_verdicts(
    connection: psycopg.Connection,
    *,
    tenant: str | None = None,
    judge: str | None = None,
    since: datetime | None = None,
    batch: int = 5_000,
) -> Iterator[dict[str, Any]]:
    """Stored verdict events in time order (a server-side cursor: memory stays flat), with the
    people's blind verdicts of the review page (each person's first) added to their `human`."""
    conditions, parameters = [], []
    for column, value in (("v.tenant_id = %s", tenant), ("v.judge_model = %s", judge), ("v.verdict_ts >= %s", since)):
        if value is not None:
            conditions.append(column)
            parameters.append(value)
    where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    # a person's first verdict on an item counts: it was given blind, a later change may not have been
    query = (
        "SELECT v.event, (SELECT coalesce(jsonb_agg(jsonb_build_object('annotator', h.reviewer, 'preference', "
        "h.preference) ORDER BY h.id), '[]'::jsonb) FROM (SELECT DISTINCT ON (reviewer) reviewer, preference, id "
        "FROM judge_human_verdict WHERE tenant_id = v.tenant_id AND verdict_id = v.verdict_id "
        f"ORDER BY reviewer, id) h) FROM judge_verdicts v {where} ORDER BY v.tenant_id, v.verdict_ts, "
        "v.verdict_id"
    )
    with connection.cursor(name="bias_audit_verdicts") as cursor:
        cursor.itersize = batch
        cursor.execute(query.encode(), parameters)
        for event, people in cursor:
            if people:
                event = {**event, "human": [*(event.get("human") or []), *people]}
            yield event


def verdict_tenants(connection: psycopg.Connection, tenant: str | None = None) -> list[str]:
    """The tenants with stored verdicts (just `tenant`, when it has some)."""
    if tenant is not None:
        found = connection.execute("SELECT 1 FROM judge_verdicts WHERE tenant_id = %s LIMIT 1", (tenant,)).fetchone()
        return [tenant] if found else []
    return [
        row[0]
        for row in connection.execute(
            "WITH RECURSIVE t AS (SELECT min(tenant_id) AS id FROM judge_verdicts UNION ALL "
            "SELECT (SELECT min(tenant_id) FROM judge_verdicts WHERE tenant_id > t.id) FROM t WHERE t.id IS NOT NULL) "
            "SELECT id FROM t WHERE id IS NOT NULL"
        )
    ]
