"""Writing: one transaction per batch, COPYed in; a redelivery writes nothing twice (primary key
(tenant, session, time), ON CONFLICT DO NOTHING). Both big tables are partitioned by month of
the event's time; a writer creates a month's partition the first time a batch holds one."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import psycopg

if TYPE_CHECKING:
    from bias_audit.analysis.records import SessionRecords


from .connection import OneConnection
from .rows import (
    _INTERACTION_WRITTEN,
    _SESSION_WRITTEN,
    INTERACTION_COLUMNS,
    SESSION_COLUMNS,
    as_our_record,
    interaction_row,
    session_row,
    session_rows,
)

TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (psycopg.OperationalError,)


class _CopyWriter(OneConnection):
    """One transaction per batch on one connection. A batch is COPYed straight in (binary); when
    a row of it is stored already (a redelivery, another worker's copy) that COPY fails whole and
    the batch goes through a per-connection staging table and one INSERT ... ON CONFLICT DO
    NOTHING instead: nothing is written twice. A connection that fails is dropped and the error
    raised (transient: the batch stays pending and is retried); the next batch connects again."""

    table: str
    columns: str
    types: list[str]
    key: str  # the unique key ON CONFLICT names
    time_index: int  # the row's partition key (the event's time)

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self._months: set[tuple[int, int]] = set()  # partitions known to exist, (year, month)

    def close(self) -> None:
        super().close()
        self._months.clear()  # a new connection checks the months again: retention may have dropped one

    def write(self, rows: list[tuple[Any, ...]]) -> int:
        """The rows not stored yet; returns how many that was."""
        if not rows:
            return 0
        connection = self._connected()
        staging = f"{self.table}_staging"
        try:
            self._ensure_partitions(connection, rows)
            try:
                with connection.transaction(), connection.cursor() as cursor:
                    self._copy(cursor, self.table, rows)
                    return len(rows)
            except psycopg.errors.UniqueViolation:
                with connection.transaction(), connection.cursor() as cursor:
                    cursor.execute(
                        f"CREATE TEMP TABLE IF NOT EXISTS {staging} (LIKE {self.table} INCLUDING DEFAULTS) "
                        "ON COMMIT DELETE ROWS".encode()
                    )
                    self._copy(cursor, staging, rows)
                    cursor.execute(
                        f"INSERT INTO {self.table} ({self.columns}) SELECT {self.columns} FROM {staging} "
                        f"ON CONFLICT ({self.key}) DO NOTHING".encode()
                    )
                    return cursor.rowcount
            except psycopg.errors.CheckViolation:  # "no partition": retention dropped a month we knew
                raise psycopg.OperationalError("a month's partition was dropped under this writer") from None
        except psycopg.OperationalError:
            self.close()
            raise

    def _ensure_partitions(self, connection: psycopg.Connection, rows: list[tuple[Any, ...]]) -> None:
        """Each month of the batch has its partition (one call per month new to this writer)."""
        firsts: dict[tuple[int, int], datetime] = {}
        for row in rows:
            moment = row[self.time_index].astimezone(timezone.utc)
            firsts.setdefault((moment.year, moment.month), moment)
        new = [moment for month, moment in firsts.items() if month not in self._months]
        if new:
            with connection.transaction():
                for moment in new:
                    connection.execute("SELECT bias_audit_month_partition(%s, %s)", (self.table, moment))
            self._months.update(firsts)

    def _copy(self, cursor: psycopg.Cursor, table: str, rows: list[tuple[Any, ...]]) -> None:
        with cursor.copy(f"COPY {table} ({self.columns}) FROM STDIN (FORMAT BINARY)".encode()) as copy:
            copy.set_types(self.types)
            for row in rows:
                copy.write_row(row)


class PostgresRecordStore(_CopyWriter):
    """The council consumer's record sink: one row per session (session_rows)."""

    table, columns, types, key = (
        "council_session_audit",
        SESSION_COLUMNS,
        [t for _, t in _SESSION_WRITTEN],
        "tenant_id, session_id, session_ts",
    )
    time_index = [name for name, _ in _SESSION_WRITTEN].index("session_ts")

    def append(self, records: list[dict[str, Any]]) -> int:
        """Write the batch's sessions (records, as `import` reads them); returns the number of new
        sessions stored."""
        return self.write(session_rows(records))

    def append_sessions(self, sessions: list[SessionRecords]) -> int:
        """The council consumer's write: as append, one row from each session directly."""
        return self.write([session_row(session) for session in sessions])


class PostgresInteractionStore(_CopyWriter):
    """The LLM-response consumer's sink: one llm_interaction_audit row per interaction record."""

    table, columns, types, key = (
        "llm_interaction_audit",
        INTERACTION_COLUMNS,
        [t for _, t in _INTERACTION_WRITTEN],
        "tenant_id, audit_id, log_timestamp",
    )
    time_index = [name for name, _ in _INTERACTION_WRITTEN].index("log_timestamp")

    def append(self, records: list[dict[str, Any]]) -> int:
        return self.write([interaction_row(record) for record in records])


def import_records(
    url: str, records: Iterable[dict[str, Any]], batch_sessions: int = 500, max_clock_skew_s: float = 600.0
) -> tuple[int, int]:
    """Bias metric records (ours, or llm-council-core's bias_metrics.jsonl) into the store, a
    session's consecutive records as one row; (sessions read, sessions new). A session stored
    already is skipped: importing twice adds nothing. A session dated ahead of this clock by more
    than the skew is refused, as the worker refuses such an event: it would hold the tenant's
    window in the future."""
    import time

    from bias_audit.schemas.records import BiasMetricRecord

    store = PostgresRecordStore(url)
    pending: list[dict[str, Any]] = []
    sessions = new = 0
    current: tuple[Any, Any] | None = None
    try:
        for record in records:
            record = as_our_record(record, BiasMetricRecord)
            key = (record["tenant_id"], record["session_id"])
            if key != current:
                _check_clock(record, time.time() + max_clock_skew_s)
                sessions += 1
                current = key
                if sessions % batch_sessions == 1 and pending:  # a batch ends between two sessions
                    new += store.append(pending)
                    pending = []
            pending.append(record)
        if pending:
            new += store.append(pending)
    finally:
        store.close()
    return sessions, new


def _check_clock(record: dict[str, Any], latest_s: float) -> None:
    from bias_audit.analysis.digest import timestamp_ms

    try:
        at = timestamp_ms(record["timestamp"]) / 1000
    except (ValueError, OverflowError):
        raise ValueError(
            f"session {record['session_id']!r}: timestamp {record['timestamp']!r} is not an ISO 8601 time"
        ) from None
    if at > latest_s:
        raise ValueError(
            f"session {record['session_id']!r}: timestamp {record['timestamp']} is ahead of this "
            "clock by more than the allowed skew; records carry the time the session happened"
        )
