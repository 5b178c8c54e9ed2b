"""The audit store on PostgreSQL: one row per council session, its scored cells packed, written
in one transaction per batch; a redelivery writes nothing twice (primary key (tenant, session,
time), ON CONFLICT DO NOTHING). `records_of` rebuilds the contract's bias metric records exactly.
Both big tables are partitioned by month of the event's time; a writer creates a month's
partition the first time a batch holds one (bias_audit_month_partition, migration 0004).

Migrations are the numbered SQL files in storage/migrations, applied in order, each once, in
its own transaction, recorded in `schema_migrations` (an advisory lock makes concurrent `setup`
runs wait for each other).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from itertools import chain
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from importlib import resources
from typing import TYPE_CHECKING, Any

import orjson
import psycopg
from psycopg.types.json import Jsonb

if TYPE_CHECKING:
    from pydantic import BaseModel

    from bias_audit.analysis.records import SessionRecords

    from bias_audit.analysis.digest import SessionDigest

CELL_WIDTH = 5  # numbers per cell in SessionScores.cells (analysis.observations, not imported: it loads numpy)
# reviewer, model (indexes into members), position (-1: unknown), score, 1 for a self-review
_CELL = struct.Struct("<BBhdB")
_MIGRATION_LOCK = 0x62696173  # "bias": one `setup` migrates at a time
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (psycopg.OperationalError,)

# (column, type for binary COPY) of what we write: one list, so names and types cannot drift apart
_SESSION_WRITTEN = (
    ("tenant_id", "text"), ("session_id", "text"), ("session_ts", "timestamptz"), ("ts_text", "text"),
    ("trace_id", "text"), ("consent_level", "int2"), ("record_schema", "text"), ("score_scale", "text"),
    ("council_config_version", "text"), ("query_hash", "text"), ("query_metadata", "jsonb"), ("members", "text[]"),
    ("response_chars", "int4[]"), ("response_words", "int4[]"), ("cells", "bytea"),
    ("response_fingerprints", "bytea"), ("response_correct", "bool[]"), ("cell_similarity", "bytea"))
_NO_FINGERPRINT = bytes(8)
_NO_OFFSET = timedelta(0)
_NO_SIMILARITY = 0xFFFF
_INTERACTION_WRITTEN = (
    ("audit_id", "text"), ("tenant_id", "text"), ("user_id", "text"), ("trace_id", "text"), ("query_hash", "text"),
    ("llm_provider", "text"), ("llm_model", "text"), ("llm_response", "text"), ("prompt_tokens", "int8"),
    ("response_tokens", "int8"), ("total_tokens", "int8"), ("consent_level", "int2"), ("record_schema", "text"),
    ("log_timestamp", "timestamptz"), ("ts_text", "text"), ("bias_detected", "bool"), ("bias_type", "jsonb"),
    ("bias_score", "jsonb"), ("bias_confidence_score", "numeric"), ("mitigation_action", "jsonb"),
    ("bias_report_summary", "jsonb"), ("human_reviewed", "bool"), ("decision_id", "text"),
    ("reasoning_node_id", "text"))
SESSION_COLUMNS = ", ".join(name for name, _ in _SESSION_WRITTEN)
INTERACTION_COLUMNS = ", ".join(name for name, _ in _INTERACTION_WRITTEN)


def migrations() -> list[tuple[str, str]]:
    """(name, SQL) of every shipped migration, in order."""
    folder = resources.files("bias_audit.storage.migrations")
    return sorted((entry.name, entry.read_text()) for entry in folder.iterdir() if entry.name.endswith(".sql"))


def apply_migrations(url: str) -> list[str]:
    """Apply the migrations this database lacks; the names applied (none when up to date)."""
    applied_now = []
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("SELECT pg_advisory_lock(%s)", (_MIGRATION_LOCK,))
        try:
            connection.execute("CREATE TABLE IF NOT EXISTS schema_migrations ("
                               "name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
            done = {row[0] for row in connection.execute("SELECT name FROM schema_migrations")}
            for name, sql in migrations():
                if name in done:
                    continue
                with connection.transaction():
                    connection.execute(sql.encode())  # our own files, never input
                    connection.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (name,))
                applied_now.append(name)
            fill_taxonomy(connection)
        finally:
            connection.execute("SELECT pg_advisory_unlock(%s)", (_MIGRATION_LOCK,))
    return applied_now


def fill_taxonomy(connection: psycopg.Connection) -> None:
    """bias_taxonomy from the shipped lexicons/taxonomy.json (updated in place when it changes)."""
    types = orjson.loads(resources.files("bias_audit.lexicons").joinpath("taxonomy.json").read_bytes())["types"]
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO bias_taxonomy (bias_key, description, severity_level) VALUES (%s, %s, %s) "
            "ON CONFLICT (bias_key) DO UPDATE SET description = EXCLUDED.description, "
            "severity_level = EXCLUDED.severity_level",
            [(key, value["description"], value["severity"]) for key, value in types.items()])


def session_rows(records: Iterable[dict[str, Any]]) -> list[tuple]:
    """Records (SessionRecords.records()' dicts, in their order) grouped into one row per session."""
    sessions: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        sessions.setdefault((record["tenant_id"], record["session_id"]), []).append(record)
    return [_row(rows) for rows in sessions.values()]


def utc_text(moment: datetime) -> str:
    """A timestamp as SessionRecords writes a UTC one."""
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _timestamp(text: str) -> tuple[datetime, str | None]:
    """A record's timestamp as (the time to index, its text when it is not utc_text's form); a
    naive one (llm-council-core writes them) is UTC, as the report reads it."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment, None if utc_text(moment) == text else text


def _row(records: list[dict[str, Any]]) -> tuple:
    first = records[0]
    members: dict[str, int] = {}  # reviewers and models share one list: in a council they are the same
    for record in records:
        members.setdefault(record["reviewer_id"], len(members))
        members.setdefault(record["model_id"], len(members))
    chars, words = [-1] * len(members), [-1] * len(members)
    fingerprints: list[str | None] = [None] * len(members)
    correct: list[bool | None] = [None] * len(members)
    similarity: list[float | None] = []
    flat: list[Any] = []
    for record in records:
        model = members[record["model_id"]]
        chars[model], words[model] = record["response_length_chars"], record["response_length_words"]
        fingerprints[model] = fingerprints[model] or record.get("response_fingerprint")
        correct[model] = record.get("response_correct") if correct[model] is None else correct[model]
        similarity.append(record.get("style_similarity"))
        position = record["position"]
        flat += (members[record["reviewer_id"]], model, -1 if position is None else position, record["score_value"],
                 1 if record["is_self_review"] else 0)
    cells = struct.pack("<" + _CELL.format[1:] * len(records), *flat)
    metadata = first["query_metadata"]
    return (first["tenant_id"], first["session_id"], *_timestamp(first["timestamp"]), first["trace_id"], first["consent_level"], first["schema_version"], first["score_scale"],
            first["council_config_version"], first["query_hash"], None if metadata is None else Jsonb(metadata),
            list(members), chars, words, cells,
            b"".join(_NO_FINGERPRINT if f is None else bytes.fromhex(f) for f in fingerprints) if any(fingerprints) else None,
            correct if any(c is not None for c in correct) else None,
            _packed_similarity(similarity) if any(v is not None for v in similarity) else None)


def session_row(session: SessionRecords) -> tuple:
    """_row(session.records()), read from the session directly: no dict per reviewer x model;
    C-level maps over the cells' columns instead of a Python loop per cell."""
    event, scores, traits = session.event, session.scores, session.traits
    cells = scores.cells
    width = CELL_WIDTH
    names: list[str] = [""] * (2 * (len(cells) // width))
    names[0::2] = map(scores.reviewers.__getitem__, map(int, cells[0::width]))
    names[1::2] = map(scores.models.__getitem__, map(int, cells[1::width]))
    # _row's order: each cell's reviewer, then its model, first appearance first
    members = {name: index for index, name in enumerate(dict.fromkeys(names))}
    chars, words = [-1] * len(members), [-1] * len(members)
    fingerprints: list[str | None] = [None] * len(members)
    correct: list[bool | None] = [None] * len(members)
    for index, name in enumerate(scores.models):
        member = members.get(name)
        if member is not None:
            candidate = scores.candidates[name]
            chars[member], words[member] = candidate.chars, candidate.words
            if traits and traits.fingerprints:
                fingerprints[member] = traits.fingerprints[index]
            if traits and traits.correct:
                correct[member] = traits.correct[index]
    positions = [int(p) if p >= 0 else -1 for p in cells[3::width]]
    own = [1 if flag == 1.0 else 0 for flag in cells[4::width]]
    packed = struct.pack("<" + _CELL.format[1:] * len(own), *chain.from_iterable(zip(
        map(members.__getitem__, names[0::2]), map(members.__getitem__, names[1::2]), positions,
        cells[2::width], own)))
    metadata = session.query_metadata
    similarity = traits.similarity if traits and traits.similarity else ()
    moment = event.timestamp
    # a UTC time is written as utc_text writes it: the text is only kept for another offset
    when = (moment, None) if moment.utcoffset() == _NO_OFFSET else _timestamp(session.timestamp)
    return (event.tenant_id, event.session_id, *when, session.trace_id, session.consent,
            session.schema_version, event.score_scale, event.council_config_version, session.query_hash,
            None if metadata is None else Jsonb(metadata), list(members), chars, words, packed,
            b"".join(_NO_FINGERPRINT if f is None else bytes.fromhex(f) for f in fingerprints)
            if any(fingerprints) else None,
            correct if any(c is not None for c in correct) else None,
            _packed_similarity(list(similarity)) if any(v is not None for v in similarity) else None)


def _packed_similarity(values: list[float | None]) -> bytes:
    return struct.pack(f"<{len(values)}H", *(_NO_SIMILARITY if v is None else round(v * 10_000) for v in values))


def _unpacked_traits(fingerprints: bytes | None, similarity: bytes | None
                     ) -> tuple[list[str | None] | None, list[float | None] | None]:
    """The stored fingerprints (per member) and similarities (per cell) as the records carry them."""
    prints = None if fingerprints is None else [
        None if chunk == _NO_FINGERPRINT else chunk.hex()
        for chunk in (bytes(fingerprints[i:i + 8]) for i in range(0, len(fingerprints), 8))]
    # v / 10_000 is already the double nearest the 4-digit decimal: round(v / 10_000, 4) gives the
    # same float for every uint16 (tested), at ~5x the cost over a report's 250,000 cells
    values = None if similarity is None else [
        None if v == _NO_SIMILARITY else v / 10_000 for v in struct.unpack(f"<{len(similarity) // 2}H", similarity)]
    return prints, values


def records_of(row: tuple) -> Iterator[dict[str, Any]]:
    """The bias metric records of one stored session, exactly as SessionRecords.records() made them."""
    (tenant_id, session_id, moment, ts_text, trace_id, consent, schema, scale, config_version, query_hash, metadata,
     members, chars, words, cells, packed_prints, correct, packed_similarity) = row
    fingerprints, similarity = _unpacked_traits(packed_prints, packed_similarity)
    common = {"schema_version": schema, "session_id": session_id, "timestamp": ts_text or utc_text(moment),
              "tenant_id": tenant_id, "trace_id": trace_id, "consent_level": consent}
    for index, (reviewer, model, position, score, own) in enumerate(_CELL.iter_unpack(cells)):
        yield {
            **common,
            "reviewer_id": members[reviewer],
            "model_id": members[model],
            "position": None if position < 0 else position,
            "response_length_chars": chars[model],
            "response_length_words": words[model],
            "score_value": score,
            "score_scale": scale,
            "is_self_review": own == 1,
            "council_config_version": config_version,
            "query_hash": query_hash,
            "query_metadata": metadata,
            "style_similarity": similarity[index] if similarity else None,
            "response_fingerprint": fingerprints[model] if fingerprints else None,
            "response_correct": correct[model] if correct else None,
        }


class _CopyWriter:
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
        self.url = url
        self._connection: psycopg.Connection | None = None
        self._months: set[tuple[int, int]] = set()  # partitions known to exist, (year, month)

    def _connected(self) -> psycopg.Connection:
        if self._connection is None or self._connection.closed:
            self._connection = psycopg.connect(self.url, connect_timeout=5)
        return self._connection

    def write(self, rows: list[tuple]) -> int:
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
                    cursor.execute(f"CREATE TEMP TABLE IF NOT EXISTS {staging} (LIKE {self.table} INCLUDING DEFAULTS) "
                                   "ON COMMIT DELETE ROWS".encode())
                    self._copy(cursor, staging, rows)
                    cursor.execute(f"INSERT INTO {self.table} ({self.columns}) SELECT {self.columns} FROM {staging} "
                                   f"ON CONFLICT ({self.key}) DO NOTHING".encode())
                    return cursor.rowcount
            except psycopg.errors.CheckViolation:  # "no partition": retention dropped a month we knew
                raise psycopg.OperationalError("a month's partition was dropped under this writer") from None
        except psycopg.OperationalError:
            self.close()
            raise

    def _ensure_partitions(self, connection: psycopg.Connection, rows: list[tuple]) -> None:
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

    def _copy(self, cursor: psycopg.Cursor, table: str, rows: list[tuple]) -> None:
        with cursor.copy(f"COPY {table} ({self.columns}) FROM STDIN (FORMAT BINARY)".encode()) as copy:
            copy.set_types(self.types)
            for row in rows:
                copy.write_row(row)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self._months.clear()


class PostgresRecordStore(_CopyWriter):
    """The council consumer's record sink: one row per session (session_rows)."""

    table, columns, types, key = ("council_session_audit", SESSION_COLUMNS, [t for _, t in _SESSION_WRITTEN],
                                  "tenant_id, session_id, session_ts")
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

    table, columns, types, key = ("llm_interaction_audit", INTERACTION_COLUMNS, [t for _, t in _INTERACTION_WRITTEN],
                                  "tenant_id, audit_id, log_timestamp")
    time_index = [name for name, _ in _INTERACTION_WRITTEN].index("log_timestamp")

    def append(self, records: list[dict[str, Any]]) -> int:
        return self.write([interaction_row(record) for record in records])


def interaction_row(record: dict[str, Any]) -> tuple:
    """An interaction record (consumers.responses) as its llm_interaction_audit row."""
    return (record["audit_id"], record["tenant_id"], record["user_id"], record["trace_id"], record["query_hash"],
            record["llm_provider"], record["llm_model"], record["llm_response"], record["prompt_tokens"],
            record["completion_tokens"], record["total_tokens"], record["consent_level"], record["schema_version"],
            *_timestamp(record["timestamp"]), record["bias_detected"],
            Jsonb(record["bias_type"]), Jsonb(record["bias_score"]),
            Decimal(str(record["bias_confidence_score"])) * 100, Jsonb(record["mitigation_action"]),
            Jsonb(record["bias_report_summary"]), record["human_reviewed"],
            # records written before the decision links carry none
            record.get("decision_id"), record.get("reasoning_node_id"))


def interaction_record(row: tuple) -> dict[str, Any]:
    """A stored interaction as the record the consumer wrote (the JSONL interchange form)."""
    (audit_id, tenant_id, user_id, trace_id, query_hash_, provider, model, response, prompt_tokens, completion_tokens,
     total_tokens, consent, schema, moment, ts_text, detected, bias_type, bias_score, confidence, mitigation, summary,
     reviewed, decision_id, reasoning_node_id) = row
    return {
        "record_type": "llm_interaction_audit", "schema_version": schema, "audit_id": audit_id,
        "timestamp": ts_text or utc_text(moment), "tenant_id": tenant_id, "user_id": user_id, "trace_id": trace_id,
        "consent_level": consent, "llm_provider": provider, "llm_model": model, "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens, "total_tokens": total_tokens, "query_hash": query_hash_,
        "bias_detected": detected, "bias_type": bias_type, "bias_score": bias_score,
        "bias_confidence_score": float(confidence / 100), "mitigation_action": mitigation,
        "bias_report_summary": summary, "human_reviewed": reviewed, "llm_response": response,
        "decision_id": decision_id, "reasoning_node_id": reasoning_node_id,
    }


def read_interactions(url: str, *, tenant: str | None = None, since: datetime | None = None,
                      batch: int = 1_000) -> Iterator[dict[str, Any]]:
    """Every stored interaction record in time order (a server-side cursor)."""
    where, parameters = _filters(tenant, since, "log_timestamp")
    with psycopg.connect(url) as connection, connection.cursor(name="bias_audit_interactions") as cursor:
        cursor.itersize = batch
        cursor.execute(f"SELECT {INTERACTION_COLUMNS} FROM llm_interaction_audit {where} "
                       "ORDER BY tenant_id, log_timestamp, audit_id".encode(), parameters)
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


def read_records(url: str, *, tenant: str | None = None, since: datetime | None = None,
                 batch: int = 1_000) -> Iterator[dict[str, Any]]:
    """Every stored bias metric record, session by session in time order (a server-side cursor:
    memory stays flat however many there are)."""
    where, parameters = _filters(tenant, since, "session_ts")
    with psycopg.connect(url) as connection, connection.cursor(name="bias_audit_export") as cursor:
        cursor.itersize = batch
        query = f"SELECT {SESSION_COLUMNS} FROM council_session_audit {where} ORDER BY tenant_id, session_ts, session_id"
        cursor.execute(query.encode(), parameters)  # the conditions are ours; the values are parameters
        for row in cursor:
            yield from records_of(row)


def read_digests(url: str, *, tenant: str | None, sessions: int | None) -> dict[str, list[SessionDigest]]:
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
    query = (f"SELECT {columns} FROM (SELECT *, row_number() OVER (PARTITION BY tenant_id "
             f"ORDER BY session_ts DESC, session_id DESC) AS newest_first FROM council_session_audit {where}) AS s "
             f"{newest} ORDER BY tenant_id, session_ts, session_id")
    out: dict[str, list[SessionDigest]] = {}
    with psycopg.connect(url) as connection, connection.cursor(name="bias_audit_report", binary=True) as cursor:
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


# What retention kept, per tenant: the days it covers, and the totals per dimension
ROLLED_UP_SPANS = ("SELECT tenant_id, min(day)::text, max(day)::text, count(DISTINCT day) FROM bias_daily_aggregate "
                   "{where} GROUP BY tenant_id ORDER BY tenant_id")
ROLLED_UP_TOTALS = ("SELECT tenant_id, source, model, reviewer, bias_type, sum(items)::bigint, sum(flagged)::bigint, "
                    "sum(score_sum) FROM bias_daily_aggregate {where} GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5")
# Each reviewed item's latest review (a later one corrects an earlier one) beside what was audited
LATEST_REVIEWS = ("SELECT DISTINCT ON (r.tenant_id, r.audit_id) r.tenant_id, r.audit_id, r.verdicts, a.bias_score, "
                  "a.llm_response, a.bias_report_summary FROM bias_review r JOIN llm_interaction_audit a "
                  "USING (tenant_id, audit_id) {where} ORDER BY r.tenant_id, r.audit_id, r.reviewed_at DESC, r.id DESC")


def tenant_scope(tenants: list[str] | None, column: str = "tenant_id") -> tuple[str, list[Any]]:
    """(WHERE clause, values) keeping `tenants` (None: every tenant)."""
    return (f"WHERE {column} = ANY(%s)", [tenants]) if tenants is not None else ("", [])


def rolled_up_of(spans: Iterable[tuple], totals: Iterable[tuple]) -> list[dict[str, Any]]:
    """Per tenant, the daily aggregates retention left, summed over their days: {tenant_id,
    first_day, last_day, days, totals: [{source, model, reviewer, bias_type, items, flagged, mean}]}
    (the rows of ROLLED_UP_SPANS and ROLLED_UP_TOTALS)."""
    out = {name: {"tenant_id": name, "first_day": first, "last_day": last, "days": days, "totals": []}
           for name, first, last, days in spans}
    for name, source, model, reviewer, bias_type, items, flagged, total in totals:
        out[name]["totals"].append({"source": source, "model": model, "reviewer": reviewer, "bias_type": bias_type,
                                    "items": items, "flagged": flagged, "mean": total / items if items else None})
    return list(out.values())


def reviewed_items_of(rows: Iterable[tuple]) -> list[tuple[str, dict, dict]]:
    """(tenant, verdicts, bias_report_summary) of LATEST_REVIEWS' rows."""
    return [(tenant, verdicts, summary) for tenant, _, verdicts, _, _, summary in rows]


def read_rolled_up(url: str, *, tenants: list[str] | None) -> list[dict[str, Any]]:
    where, values = tenant_scope(tenants)
    with psycopg.connect(url) as connection:
        spans = connection.execute(ROLLED_UP_SPANS.format(where=where).encode(), values).fetchall()
        totals = connection.execute(ROLLED_UP_TOTALS.format(where=where).encode(), values).fetchall()
    return rolled_up_of(spans, totals)


def _latest_reviews(url: str, tenants: list[str] | None) -> list[tuple]:
    where, values = tenant_scope(tenants, "r.tenant_id")
    with psycopg.connect(url) as connection:
        return connection.execute(LATEST_REVIEWS.format(where=where).encode(), values).fetchall()


def read_reviewed_items(url: str, *, tenants: list[str] | None) -> list[tuple[str, dict, dict]]:
    """(tenant, verdicts, bias_report_summary) of every reviewed item, within `tenants`."""
    return reviewed_items_of(_latest_reviews(url, tenants))


def read_review_evidence(url: str, *, tenants: list[str] | None
                         ) -> list[tuple[str, str, str, float, bool, str | None, list[dict[str, Any]]]]:
    """(tenant, audit_id, bias type, evidence, confirmed, the answer's text or None once
    retention removed it, the findings) for every verdict of every reviewed item's latest
    review, the evidence being the analyzers' bias_score for that type."""
    out = []
    for tenant, audit_id, verdicts, scores, text, summary in _latest_reviews(url, tenants):
        findings = (summary or {}).get("findings", [])
        for bias_type, verdict in (verdicts or {}).items():
            if verdict in ("confirmed", "dismissed") and isinstance((scores or {}).get(bias_type), (int, float)):
                out.append((tenant, audit_id, bias_type, float(scores[bias_type]), verdict == "confirmed", text,
                            findings))
    return out


def save_sandbox_run(url: str, *, tenant: str, baseline: dict[str, Any], document: dict[str, Any], worse: bool) -> int:
    """Keep a sandbox run; its id."""
    with psycopg.connect(url) as connection:
        row = connection.execute("INSERT INTO sandbox_run (tenant_id, baseline, worse, document) VALUES "
                                 "(%s, %s, %s, %s) RETURNING id",
                                 (tenant, Jsonb(baseline), worse, Jsonb(document))).fetchone()
    return int(row[0]) if row else 0


def digest_of_row(row: tuple, _bounds: dict[str | None, tuple[float, float]] = {},
                  _display: dict[str, bool] = {}) -> SessionDigest | None:
    """A stored session's digest straight from its packed cells: what digest_from_records gives
    for its records (tested), without building them. None when a (reviewer, model) repeats.
    Column by column (zip, map): this runs for every session a report reads."""
    from bias_audit.analysis.digest import SessionDigest, position_is_display_order
    from bias_audit.analysis.observations import score_bounds

    (tenant_id, session_id, moment, _, trace_id, _, schema, scale, config_version, _, _, members, chars, words,
     cells, packed_prints, correct, packed_similarity) = row
    fingerprints, similarity = _unpacked_traits(packed_prints, packed_similarity)
    if not cells:
        return None  # no cell: the records' rule decides (it refuses such a session)
    reviewer_column, model_column, position_column, score_column, own_column = zip(*_CELL.iter_unpack(cells))
    if len(set(zip(reviewer_column, model_column))) < len(reviewer_column):
        return None
    reviewers = {member: index for index, member in enumerate(dict.fromkeys(reviewer_column))}
    models = {member: index for index, member in enumerate(dict.fromkeys(model_column))}
    # words where the records carry them, else characters (llm-council-core's), as digest_from_records
    in_words = words[model_column[0]] is not None
    lengths = words if in_words else chars
    if scale not in _bounds:  # a few scales and versions in a store: parsed once each
        _bounds[scale] = score_bounds(scale or "1-10")
    if schema not in _display:
        _display[schema] = position_is_display_order(schema)
    low, high = _bounds[scale]
    span = high - low
    return SessionDigest(
        session_id=session_id,
        tenant_id=tenant_id or "default",
        ts_ms=int(moment.timestamp() * 1000),  # the instant its text names (a naive one was stored as UTC)
        trace_id=trace_id,
        config_version=config_version,
        reviewers=tuple(members[r] for r in reviewers),
        models=tuple(members[m] for m in models),
        lengths=tuple(float(lengths[m] or 0) for m in models),
        length_unit="words" if in_words else "chars",
        cell_reviewer=tuple(map(reviewers.__getitem__, reviewer_column)),
        cell_model=tuple(map(models.__getitem__, model_column)),
        cell_position=position_column if _display[schema] else (-1,) * len(position_column),  # -1 stored for none
        cell_score=tuple([(score - low) / span for score in score_column]),
        cell_own=tuple(map(bool, own_column)),
        fingerprints=tuple(fingerprints[m] for m in models) if fingerprints else (),
        correct=tuple(correct[m] for m in models) if correct else (),
        cell_similarity=tuple(similarity) if similarity else (),
    )


# llm-council-core's records lack these; what its files mean by their absence (as the report reads them)
_REFERENCE_DEFAULTS = {"tenant_id": "default", "trace_id": None, "response_length_words": None}


def as_our_record(record: dict[str, Any], contract: type[BaseModel]) -> dict[str, Any]:
    """A bias metric record with every field of ours: llm-council-core's gain the tenant
    "default", no trace id, no word counts (the report then uses characters), the self flag it
    never stored (reviewer = model) and our defaults for anything else optional. A record
    lacking a required field or holding a value of the wrong type is refused (ValueError, one line)."""
    from pydantic import ValidationError

    complete = all(name in record for name in contract.model_fields)
    if not complete:
        record = {**_REFERENCE_DEFAULTS, "is_self_review": record.get("reviewer_id") == record.get("model_id"), **record}
    try:
        validated = contract.model_validate(record)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise ValueError(f"session {record.get('session_id')!r}: {where}: {problem['msg'].lower()}") from None
    return record if complete else validated.model_dump()


def import_records(url: str, records: Iterable[dict[str, Any]], batch_sessions: int = 500) -> tuple[int, int]:
    """Bias metric records (ours, or llm-council-core's bias_metrics.jsonl) into the store, a
    session's consecutive records as one row; (sessions read, sessions new). A session stored
    already is skipped: importing twice adds nothing."""
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


def missing_migrations(url: str) -> list[str]:
    """The shipped migrations this database has not applied (all of them on an empty one)."""
    with psycopg.connect(url, connect_timeout=5) as connection:
        exists = connection.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
        done = {row[0] for row in connection.execute("SELECT name FROM schema_migrations")} if exists and exists[0] \
            else set()
    return [name for name, _ in migrations() if name not in done]
