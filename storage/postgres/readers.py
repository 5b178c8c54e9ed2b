"""Reading the stored records, interactions and window digests back, in time order."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg

if TYPE_CHECKING:
    from bias_audit.analysis.digest import SessionDigest

from .rows import INTERACTION_COLUMNS, SESSION_COLUMNS, digest_of_row, interaction_record, records_of


def connect(url: str, statement_timeout_ms: int = 0) -> psycopg.Connection:
    """A connection to the store for a reader (the readers take one, so a command that reads
    several things opens one); each statement stops after statement_timeout_ms (0 = never)."""
    if statement_timeout_ms:
        return psycopg.connect(url, connect_timeout=5, options=f"-c statement_timeout={statement_timeout_ms}")
    return psycopg.connect(url, connect_timeout=5)


def read_interactions(
    connection: psycopg.Connection, *, tenant: str | None = None, since: datetime | None = None, batch: int = 1_000
) -> Iterator[dict[str, Any]]:
    """Every stored interaction record in time order (a server-side cursor on `connection`)."""
    where, parameters = _filters(tenant, since, "log_timestamp")
    with connection.cursor(name="bias_audit_interactions") as cursor:
        cursor.itersize = batch
        cursor.execute(
            f"SELECT {INTERACTION_COLUMNS} FROM llm_interaction_audit {where} "
            "ORDER BY tenant_id, log_timestamp, audit_id".encode(),
            parameters,
        )
        for row in cursor:
            yield interaction_record(row)


def _filters(tenant: str | None, since: datetime | None, time_column: str) -> tuple[str, list[Any]]:
    """A WHERE clause of our own text and its parameters."""
    conditions: list[str] = []
    parameters: list[Any] = []
    if tenant is not None:
        conditions.append("tenant_id = %s")
        parameters.append(tenant)
    if since is not None:
        conditions.append(f"{time_column} >= %s")
        parameters.append(since)
    return (f"WHERE {' AND '.join(conditions)}" if conditions else ""), parameters


def read_records(
    connection: psycopg.Connection, *, tenant: str | None = None, since: datetime | None = None, batch: int = 1_000
) -> Iterator[dict[str, Any]]:
    """Every stored bias metric record, session by session in time order (a server-side cursor on
    `connection`: memory stays flat however many there are)."""
    where, parameters = _filters(tenant, since, "session_ts")
    with connection.cursor(name="bias_audit_export") as cursor:
        cursor.itersize = batch
        query = (
            f"SELECT {SESSION_COLUMNS} FROM council_session_audit {where} ORDER BY tenant_id, session_ts, session_id"
        )
        cursor.execute(query.encode(), parameters)  # the conditions are ours; the values are parameters
        for row in cursor:
            yield from records_of(row)


def read_digests(
    connection: psycopg.Connection, *, tenant: str | None, sessions: int | None
) -> dict[str, list[SessionDigest]]:
    """Per tenant, oldest first, the session digests a report's window and the window before it
    can hold: the newest 2 x `sessions` (all when None). The report cuts them as it cuts files."""
    from bias_audit.analysis.digest import StoredCell, digest_from_records

    where = "WHERE tenant_id = %s" if tenant is not None else ""
    parameters: list[Any] = [tenant] if tenant is not None else []
    newest = "" if sessions is None else "WHERE newest_first <= %s"
    if sessions is not None:
        parameters.append(2 * sessions)
    # the digest needs neither the query's hash nor its metadata: not sent, not decoded
    columns = SESSION_COLUMNS.replace("query_hash", "NULL").replace("query_metadata", "NULL")
    query = (
        f"SELECT {columns} FROM (SELECT *, row_number() OVER (PARTITION BY tenant_id "
        f"ORDER BY session_ts DESC, session_id DESC) AS newest_first FROM council_session_audit {where}) AS s "
        f"{newest} ORDER BY tenant_id, session_ts, session_id"
    )
    out: dict[str, list[SessionDigest]] = {}
    with connection.cursor(name="bias_audit_report", binary=True) as cursor:
        cursor.itersize = 2_000
        cursor.execute(query.encode(), parameters)  # the clauses are ours; the values are parameters
        for row in cursor:
            digest = digest_of_row(row)
            if digest is None:  # repeated cells (an imported file's): the records' own rule decides
                fields = StoredCell.__struct_fields__
                cells = [StoredCell(**{name: record[name] for name in fields}) for record in records_of(row)]
                digest = digest_from_records(cells)
            out.setdefault(row[0], []).append(digest)
    return out


def every_row_as_text(connection: psycopg.Connection) -> Iterator[str]:
    """Every row of every table in the store's schema, as PostgreSQL prints it (bytea as hex):
    what a check that a value is stored nowhere reads, `pg_dump --data-only` without the binary."""
    tables = connection.execute(
        "SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) FROM pg_tables "
        "WHERE schemaname = current_schema() ORDER BY 1"
    ).fetchall()
    for (table,) in tables:
        with connection.cursor() as cursor:
            for (row,) in cursor.execute(f"SELECT t::text FROM {table} AS t".encode()):  # names from the catalog
                yield row
