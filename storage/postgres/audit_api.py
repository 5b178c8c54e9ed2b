"""What the audit API reads and writes in the PostgreSQL store, always within the tenants a
caller may see (a list; None only when auth is off). Async, on a small connection pool.

Pages are keyset pages over (log_timestamp, id) - newest first - so a page never overlaps the
next however many rows arrive meanwhile; `offset` is kept for the design document's schema.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec
import psycopg
from psycopg.rows import dict_row, tuple_row
from psycopg.types.json import Jsonb, set_json_loads
from psycopg_pool import AsyncConnectionPool

from .reviews import LATEST_REVIEWS, ROLLED_UP_SPANS, ROLLED_UP_TOTALS, reviewed_items_of, rolled_up_of, tenant_scope


class InvalidInput(ValueError):
    """A caller's value the database refuses (a NUL character, an out-of-range number)."""


class LeaseRefused(Exception):
    """A lease not given or a review not taken: another reviewer holds the item, or this one has
    held it too long; the message says which."""


LEASE_SECONDS = 120  # an opened item is held this long (renewed by opening it again)
MAX_HOLD_SECONDS = 30 * 60  # renewals end here: an item left open (or reopened by a script) goes back to the queue
INTERACTION_COLUMNS = (
    "id",
    "audit_id",
    "tenant_id",
    "user_id",
    "trace_id",
    "query_context",
    "llm_provider",
    "llm_model",
    "llm_response",
    "prompt_tokens",
    "response_tokens",
    "total_tokens",
    "status",
    "error_message",
    "log_timestamp",
    "bias_detected",
    "bias_type",
    "bias_score",
    "bias_confidence_score",
    "mitigation_action",
    "bias_report_summary",
    "human_reviewed",
    "human_bias_tag",
    "review_notes",
    "created_at",
    "decision_id",
    "reasoning_node_id",
)  # what the API reads of an interaction (never query_hash)
KEY_COLUMNS = ("id", "audit_id", "tenant_id", "log_timestamp")  # a row's identity and its page cursor
_COLUMNS = ", ".join(INTERACTION_COLUMNS)


def _selected(columns: Collection[str] | None) -> str:
    """The SELECT list of `columns` (all when None) and the key columns: a page reads only what its
    query asks for, not each row's answer text and JSON documents."""
    if columns is None:
        return _COLUMNS
    unknown = set(columns) - set(INTERACTION_COLUMNS)
    if unknown:
        raise ValueError(f"not interaction columns: {', '.join(sorted(unknown))}")
    return ", ".join(c for c in INTERACTION_COLUMNS if c in KEY_COLUMNS or c in columns)


@dataclass
class InteractionFilter:
    tenant_id: str | None = None
    user_id: str | None = None
    llm_provider: str | None = None
    llm_model: str | None = None
    min_confidence: float | None = None  # the design's sensitivityScore: confidence at least this (0-1)
    bias_detected: bool | None = None
    human_reviewed: bool | None = None
    bias_type: str | None = None
    decision_id: str | None = None
    start: datetime | None = None
    end: datetime | None = None


@dataclass
class Page:
    rows: list[dict[str, Any]]
    total: int
    next_cursor: str | None
    extra: dict[str, Any] = field(default_factory=dict)


def encode_cursor(moment: datetime, row_id: int) -> str:
    return base64.urlsafe_b64encode(f"{moment.isoformat()}|{row_id}".encode()).decode()


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    """(log_timestamp, id) of a cursor; ValueError for one we did not make."""
    try:
        moment, row_id = base64.urlsafe_b64decode(cursor.encode()).decode().split("|")
        return datetime.fromisoformat(moment), int(row_id)
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"not a cursor of this API: {cursor[:40]!r}") from error


def _tenants(tenants: list[str] | None) -> tuple[list[str], list[Any]]:
    """The caller's tenant scope as a WHERE clause (none when auth is off). One tenant is an
    equality: the (tenant, time, id) index then gives a page's order."""
    if tenants is None:
        return [], []
    if len(tenants) == 1:
        return ["tenant_id = %s"], [tenants[0]]
    return ["tenant_id = ANY(%s)"], [tenants]


def _where_clause(clauses: list[str]) -> str:
    return f"WHERE {' AND '.join(clauses)}" if clauses else ""


def _where(tenants: list[str] | None, found: InteractionFilter) -> tuple[list[str], list[Any]]:
    clauses, values = _tenants(tenants)
    for column, value in (
        ("user_id", found.user_id),
        ("llm_provider", found.llm_provider),
        ("decision_id", found.decision_id),
        ("llm_model", found.llm_model),
        ("bias_detected", found.bias_detected),
        ("human_reviewed", found.human_reviewed),
    ):
        if value is not None:
            clauses.append(f"{column} = %s")
            values.append(value)
    if found.min_confidence is not None:
        clauses.append("bias_confidence_score >= %s")
        values.append(round(found.min_confidence * 100, 2))
    if found.bias_type is not None:
        clauses.append("bias_type @> %s")  # the GIN index
        values.append(Jsonb([found.bias_type]))
    if found.start is not None:
        clauses.append("log_timestamp >= %s")
        values.append(found.start)
    if found.end is not None:
        clauses.append("log_timestamp < %s")
        values.append(found.end)
    return clauses, values


# the queue's order, as the review-order index (migration 0016) holds it
_QUEUE_ORDER = "md5(a.tenant_id || '#' || a.audit_id)"


def _review_scope(tenants: list[str] | None) -> tuple[str, list[Any]]:
    """A CTE `scope(tenant)`: the caller's tenants, or with no scope (auth off) every tenant with
    an unreviewed item, found by stepping through the review-order index a tenant at a time."""
    if tenants is not None:
        return "WITH scope(tenant) AS (SELECT unnest(%s::text[]))", [tenants]
    return (
        "WITH RECURSIVE scope(tenant) AS ("
        "(SELECT tenant_id FROM llm_interaction_audit WHERE NOT human_reviewed ORDER BY tenant_id LIMIT 1) "
        "UNION ALL SELECT (SELECT a.tenant_id FROM llm_interaction_audit a WHERE NOT a.human_reviewed "
        "AND a.tenant_id > scope.tenant ORDER BY a.tenant_id LIMIT 1) FROM scope WHERE scope.tenant IS NOT NULL)",
        [],
    )


def count_query(tenants: list[str] | None, found: InteractionFilter) -> tuple[bytes, list[Any]]:
    """(SQL, values) counting the interactions the filter keeps (a list's totalCount)."""
    clauses, values = _where(tenants, found)
    return f"SELECT count(*) AS n FROM llm_interaction_audit {_where_clause(clauses)}".encode(), values


def as_audit(row: dict[str, Any]) -> dict[str, Any]:
    row = dict(row)
    row.pop("total_count", None)  # a counted page's rows carry its total
    row.pop("queue_order", None)  # a review-queue page's rows, the order they were merged in
    if "bias_confidence_score" in row:  # stored in percent; divided exactly
        row["bias_confidence_score"] = float(row["bias_confidence_score"] / 100)
    return row


async def _configure(connection: psycopg.AsyncConnection) -> None:
    # a page's rows carry four JSON columns each: msgspec decodes them several times faster than json
    set_json_loads(msgspec.json.decode, connection)


class AuditStore:
    def __init__(self, url: str, *, max_connections: int = 10, review_sample: float = 0.02) -> None:
        # 10: the API's queries are short; more would only queue inside PostgreSQL
        self.url, self.max_connections = url, max_connections
        self.review_sample = review_sample  # the share of unflagged answers the review queue serves
        self.pool: AsyncConnectionPool | None = None
        self._opening = asyncio.Lock()

    async def open(self) -> AsyncConnectionPool:
        """The pool, opened (again after a close: an app's lifespan may run more than once)."""
        async with self._opening:
            if self.pool is None or self.pool.closed:
                self.pool = AsyncConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=self.max_connections,
                    open=False,
                    kwargs={"autocommit": True, "row_factory": dict_row},
                    configure=_configure,
                )
                await self.pool.open(wait=True, timeout=30)
            return self.pool

    async def close(self) -> None:
        if self.pool is not None:
            await self.pool.close()

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[Any]:
        pool = self.pool if self.pool is not None and not self.pool.closed else await self.open()
        async with pool.connection() as connection:
            try:
                yield connection
            except psycopg.DataError as error:  # a value PostgreSQL cannot hold: the caller's to fix
                raise InvalidInput(f"a value cannot be stored or searched for: {str(error).splitlines()[0]}") from None

    async def interaction(self, tenants: list[str] | None, audit_id: str) -> dict[str, Any] | None:
        clauses, values = _where(tenants, InteractionFilter())
        clauses.append("audit_id = %s")
        values.append(audit_id)
        async with self._connection() as connection:
            cursor = await connection.execute(
                f"SELECT {_COLUMNS} FROM llm_interaction_audit WHERE {' AND '.join(clauses)} "
                "ORDER BY log_timestamp DESC LIMIT 1".encode(),
                values,
            )
            row = await cursor.fetchone()
        return as_audit(row) if row else None

    async def interactions(
        self,
        tenants: list[str] | None,
        found: InteractionFilter,
        *,
        limit: int,
        offset: int = 0,
        after: str | None = None,
        count: bool = False,
        columns: Collection[str] | None = None,
    ) -> Page:
        """A page of the interactions `found` keeps, newest first; `columns` (default all) and the
        key columns of each row; the total only when `count`."""
        clauses, values = _where(tenants, found)
        page_clauses, page_values = list(clauses), list(values)
        if after is not None:
            moment, row_id = decode_cursor(after)
            page_clauses.append("(log_timestamp, id) < (%s, %s)")
            page_values += [moment, row_id]
        sql = (
            f"SELECT {_selected(columns)} FROM llm_interaction_audit {_where_clause(page_clauses)} "
            "ORDER BY log_timestamp DESC, id DESC LIMIT %s OFFSET %s"
        )
        page_values += [limit + 1, offset]
        if count:  # one round trip: the count's one row joined to the page (an empty page keeps its total)
            counted, count_values = count_query(tenants, found)
            sql = (
                f"SELECT total.n AS total_count, page.* FROM ({counted.decode()}) total LEFT JOIN ({sql}) page "
                "ON true ORDER BY page.log_timestamp DESC, page.id DESC"
            )
            page_values = [*count_values, *page_values]
        async with self._connection() as connection:
            rows = await (await connection.execute(sql.encode(), page_values)).fetchall()
        total = -1
        if count:
            total = int(rows[0]["total_count"])
            rows = [] if rows[0]["id"] is None else rows
        more = len(rows) > limit
        rows = rows[:limit]
        cursor_out = encode_cursor(rows[-1]["log_timestamp"], rows[-1]["id"]) if more and rows else None
        return Page([as_audit(r) for r in rows], total, cursor_out)

    async def review_queue(
        self,
        tenants: list[str] | None,
        found: InteractionFilter,
        *,
        limit: int,
        holder: str,
        columns: Collection[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Unreviewed items, flagged ones and the uniform sample of unflagged ones, in an order
        fixed by a hash of their key (random, so the reviewed ones are a uniform sample and the
        estimates from them unbiased), leaving out the ones another person holds a lease on.
        Each tenant's items are read in that order from its index, up to the page, then merged."""
        clauses, values = _where(None, found)  # the scope is the tenants the page is merged from
        clauses += [
            "(bias_detected OR review_sample_key(tenant_id, audit_id) < %s)",
            "NOT human_reviewed",
            "NOT EXISTS (SELECT 1 FROM review_lease l WHERE l.tenant_id = a.tenant_id AND "
            "l.audit_id = a.audit_id AND l.holder <> %s AND l.expires_at > now())",
        ]
        values += [self.review_sample, holder]
        scope, scope_values = _review_scope(tenants)
        async with self._connection() as connection:
            cursor = await connection.execute(
                f"{scope} SELECT page.* FROM scope CROSS JOIN LATERAL (SELECT {_selected(columns)}, {_QUEUE_ORDER} "
                f"AS queue_order FROM llm_interaction_audit a WHERE a.tenant_id = scope.tenant AND "
                f"{' AND '.join(clauses)} ORDER BY {_QUEUE_ORDER} LIMIT %s) page "
                "ORDER BY page.queue_order LIMIT %s".encode(),
                [*scope_values, *values, limit, limit],
            )
            return [as_audit(r) for r in await cursor.fetchall()]

    async def lease(self, tenant_id: str, audit_id: str, holder: str) -> tuple[bool, str]:
        """Take (or renew) the item's lease; (taken, holder): another holder's live lease wins. A
        reviewer holds one item at a time (opening one lets go of the one before, so no one can
        hold the queue), and renews it for at most MAX_HOLD_SECONDS from when it took it."""
        async with self._connection() as connection:
            mine = await (
                await connection.execute(
                    "SELECT extract(epoch FROM now() - taken_at) AS held_s FROM review_lease WHERE tenant_id = %s "
                    "AND audit_id = %s AND holder = %s AND expires_at > now()",
                    (tenant_id, audit_id, holder),
                )
            ).fetchone()
            if mine is not None and mine["held_s"] >= MAX_HOLD_SECONDS:
                raise LeaseRefused(
                    f"you have held this item for {int(mine['held_s']) // 60} min (at most "
                    f"{MAX_HOLD_SECONDS // 60}); it goes back to the queue when its lease ends"
                )
            # a renewal keeps taken_at; a new holder (or a lapsed lease) starts it again
            cursor = await connection.execute(
                "INSERT INTO review_lease (tenant_id, audit_id, holder, expires_at) VALUES (%s, %s, %s, "
                "now() + make_interval(secs => %s)) ON CONFLICT (tenant_id, audit_id) DO UPDATE SET "
                "holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at, taken_at = CASE WHEN "
                "review_lease.holder = EXCLUDED.holder AND review_lease.expires_at > now() THEN review_lease.taken_at "
                "ELSE now() END WHERE review_lease.holder = EXCLUDED.holder OR review_lease.expires_at <= now() "
                "RETURNING holder",
                (tenant_id, audit_id, holder, LEASE_SECONDS),
            )
            if await cursor.fetchone():
                await connection.execute(
                    "DELETE FROM review_lease WHERE holder = %s AND (tenant_id, audit_id) <> (%s, %s)",
                    (holder, tenant_id, audit_id),
                )
                return True, holder
            current = await connection.execute(
                "SELECT holder FROM review_lease WHERE tenant_id = %s AND audit_id = %s", (tenant_id, audit_id)
            )
            row = await current.fetchone()
            return False, row["holder"] if row else ""

    async def record_review(
        self,
        tenant_id: str,
        audit_id: str,
        *,
        reviewer: str,
        verdicts: dict[str, str],
        tags: list[str],
        notes: str | None,
        reviewed: bool,
        trace_id: str | None,
        answer_biased: bool | None = None,
    ) -> dict[str, Any]:
        """A review row of its own, and the audit row's latest state, in one transaction; the
        reviewer's lease ends. The audit row is locked first: concurrent reviews of an item take
        turns, so its state is always its newest review's (stamped after the lock). An item
        another reviewer holds a live lease on is refused (LeaseRefused)."""
        async with self._connection() as connection, connection.transaction():
            await connection.execute(
                "SELECT 1 FROM llm_interaction_audit WHERE tenant_id = %s AND audit_id = %s FOR UPDATE",
                (tenant_id, audit_id),
            )
            held = await (
                await connection.execute(
                    "SELECT holder, ceil(extract(epoch FROM expires_at - now()))::int AS left_s FROM review_lease "
                    "WHERE tenant_id = %s AND audit_id = %s AND holder <> %s AND expires_at > now()",
                    (tenant_id, audit_id, reviewer),
                )
            ).fetchone()
            if held is not None:
                raise LeaseRefused(
                    f"{held['holder']} is reviewing this item (their lease ends in {held['left_s']} s); "
                    "open another one"
                )
            # the inclusion probability the queue served it with: 1 flagged, the share when in the sample
            await connection.execute(
                "INSERT INTO bias_review (tenant_id, audit_id, reviewer, verdicts, tags, notes, trace_id, reviewed_at, "
                "inclusion_probability, answer_biased) SELECT %s, %s, %s, %s, %s, %s, %s, clock_timestamp(), "
                "CASE WHEN a.bias_detected THEN 1.0 WHEN review_sample_key(a.tenant_id, a.audit_id) < %s THEN %s END, "
                "%s FROM llm_interaction_audit a WHERE a.tenant_id = %s AND a.audit_id = %s",
                (
                    tenant_id,
                    audit_id,
                    reviewer,
                    Jsonb(verdicts),
                    Jsonb(tags),
                    notes,
                    trace_id,
                    self.review_sample,
                    self.review_sample,
                    answer_biased,
                    tenant_id,
                    audit_id,
                ),
            )
            cursor = await connection.execute(
                f"UPDATE llm_interaction_audit SET human_reviewed = %s, human_bias_tag = %s, review_notes = %s "
                f"WHERE tenant_id = %s AND audit_id = %s RETURNING {_COLUMNS}".encode(),
                (reviewed, Jsonb({"tags": tags, "verdicts": verdicts}), notes, tenant_id, audit_id),
            )
            row = await cursor.fetchone()
            await connection.execute(
                "DELETE FROM review_lease WHERE tenant_id = %s AND audit_id = %s AND holder = %s",
                (tenant_id, audit_id, reviewer),
            )
        return as_audit(row)

    async def serve_judge_item(
        self, tenants: list[str] | None, reviewer: str, review_id: str, shown_swapped: bool
    ) -> dict[str, Any] | None:
        """A verdict sampled for blind review that this reviewer has not judged yet, drawn at
        random and recorded as served to them under `review_id`, its answers in the order given."""
        clauses, values = _tenants(tenants)
        clauses = [f"r.{clause}" for clause in clauses]
        clauses.append(
            "NOT EXISTS (SELECT 1 FROM judge_human_verdict h WHERE h.tenant_id = r.tenant_id "
            "AND h.verdict_id = r.verdict_id AND h.reviewer = %s)"
        )
        values.append(reviewer)
        async with self._connection() as connection, connection.transaction():
            row = await (
                await connection.execute(
                    "SELECT r.tenant_id, r.verdict_id, r.answers, r.question, (SELECT count(*) FROM judge_review_item q "
                    "WHERE q.tenant_id = r.tenant_id) AS sampled FROM judge_review_item r "
                    f"{_where_clause(clauses)} ORDER BY random() LIMIT 1".encode(),
                    values,
                )
            ).fetchone()
            if row is None:
                return None
            await connection.execute(
                "INSERT INTO judge_review_served (review_id, tenant_id, verdict_id, reviewer, shown_swapped, served_at) "
                "VALUES (%s, %s, %s, %s, %s, clock_timestamp())",
                (review_id, row["tenant_id"], row["verdict_id"], reviewer, shown_swapped),
            )
        answers = list(row["answers"])
        return {
            "review_id": review_id,
            "tenant_id": row["tenant_id"],
            "sampled": int(row["sampled"]),
            "question": row["question"],
            "answers": answers[::-1] if shown_swapped else answers,
        }

    async def record_judge_verdict(
        self, tenants: list[str] | None, review_id: str, *, reviewer: str, flip: dict[str, str], preference: str
    ) -> bool | None:
        """A person's verdict on an item served to them (`preference` over the answers as shown,
        stored in the judge's positions through `flip`): a new row each time, so a change keeps the
        history. Whether it counts (their first on the item); None when `review_id` was not served
        to this reviewer in these tenants."""
        clauses, values = _tenants(tenants)
        clauses = [f"s.{clause}" for clause in clauses] + ["s.review_id = %s", "s.reviewer = %s"]
        async with self._connection() as connection, connection.transaction():
            served = await (
                await connection.execute(
                    "SELECT s.tenant_id, s.verdict_id, s.shown_swapped, EXISTS (SELECT 1 FROM judge_human_verdict h "
                    "WHERE h.tenant_id = s.tenant_id AND h.verdict_id = s.verdict_id AND h.reviewer = s.reviewer) AS judged "
                    f"FROM judge_review_served s {_where_clause(clauses)}".encode(),
                    [*values, review_id, reviewer],
                )
            ).fetchone()
            if served is None:
                return None
            await connection.execute(
                "INSERT INTO judge_human_verdict (tenant_id, verdict_id, reviewer, preference, shown_swapped, "
                "review_id, reviewed_at) VALUES (%s, %s, %s, %s, %s, %s, clock_timestamp())",
                (
                    served["tenant_id"],
                    served["verdict_id"],
                    reviewer,
                    flip[preference] if served["shown_swapped"] else preference,
                    served["shown_swapped"],
                    review_id,
                ),
            )
        return not served["judged"]

    async def judge_items_open_to(self, tenant_id: str, reviewer: str) -> set[str]:
        """The items sampled for blind review that this reviewer has not judged yet: while one is
        open to them, the judge's verdict on it (and other people's) is not theirs to see."""
        async with self._connection() as connection:
            rows = await (
                await connection.execute(
                    "SELECT DISTINCT r.item_id FROM judge_review_item r WHERE r.tenant_id = %s AND NOT EXISTS (SELECT 1 "
                    "FROM judge_human_verdict h WHERE h.tenant_id = r.tenant_id AND h.verdict_id = r.verdict_id "
                    "AND h.reviewer = %s)",
                    (tenant_id, reviewer),
                )
            ).fetchall()
        return {row["item_id"] for row in rows}

    async def update_bias(self, tenant_id: str, audit_id: str, changes: dict[str, Any]) -> dict[str, Any]:
        columns = {
            "bias_detected": None,
            "bias_type": Jsonb,
            "bias_score": Jsonb,
            "mitigation_action": Jsonb,
            "bias_confidence_score": lambda v: round(v * 100, 2),
        }
        sets, values = [], []
        for name, convert in columns.items():
            if changes.get(name) is not None:
                sets.append(f"{name} = %s")
                values.append(convert(changes[name]) if convert else changes[name])
        async with self._connection() as connection:
            cursor = await connection.execute(
                f"UPDATE llm_interaction_audit SET {', '.join(sets) or 'status = status'} "
                f"WHERE tenant_id = %s AND audit_id = %s RETURNING {_COLUMNS}".encode(),
                [*values, tenant_id, audit_id],
            )
            return as_audit(await cursor.fetchone())

    async def reviews(self, keys: list[tuple[str, str]]) -> list[list[dict[str, Any]]]:
        """Each item's reviews, oldest first: one query for many items (the GraphQL DataLoader)."""
        async with self._connection() as connection:
            cursor = await connection.execute(
                "SELECT r.* FROM bias_review r JOIN unnest(%s::text[], %s::text[]) AS k(tenant_id, audit_id) "
                "USING (tenant_id, audit_id) ORDER BY r.reviewed_at, r.id",
                ([k[0] for k in keys], [k[1] for k in keys]),
            )
            rows = await cursor.fetchall()
        found: dict[tuple[str, str], list[dict[str, Any]]] = {key: [] for key in keys}
        for row in rows:
            found[(row["tenant_id"], row["audit_id"])].append(row)
        return [found[key] for key in keys]

    async def latest_verdicts(self, tenants: list[str] | None) -> list[dict[str, Any]]:
        """Each reviewer's latest review of each item (a reviewer who changed their mind counts
        once, as they decided last): tenant, audit_id, reviewer, verdicts."""
        clauses, values = _tenants(tenants)
        async with self._connection() as connection:
            cursor = await connection.execute(
                f"SELECT DISTINCT ON (tenant_id, audit_id, reviewer) tenant_id, audit_id, reviewer, verdicts "
                f"FROM bias_review {_where_clause(clauses)} ORDER BY tenant_id, audit_id, reviewer, reviewed_at DESC, id DESC".encode(),
                values,
            )
            return list(await cursor.fetchall())

    async def sandbox_runs(self, tenants: list[str] | None, *, limit: int) -> list[dict[str, Any]]:
        clauses, values = _tenants(tenants)
        async with self._connection() as connection:
            cursor = await connection.execute(
                f"SELECT * FROM sandbox_run {_where_clause(clauses)} ORDER BY created_at DESC, id DESC LIMIT %s".encode(),
                [*values, limit],
            )
            return list(await cursor.fetchall())

    async def _tuples(
        self, template: str, tenants: list[str] | None, column: str = "tenant_id"
    ) -> list[tuple[Any, ...]]:
        """A shared query of storage.postgres (rows as tuples) within `tenants`, on the pool."""
        where, values = tenant_scope(tenants, column)
        async with self._connection() as connection, connection.cursor(row_factory=tuple_row) as cursor:
            await cursor.execute(template.format(where=where).encode(), values)
            return list(await cursor.fetchall())

    async def rolled_up(self, tenants: list[str] | None) -> list[dict[str, Any]]:
        return rolled_up_of(await self._tuples(ROLLED_UP_SPANS, tenants), await self._tuples(ROLLED_UP_TOTALS, tenants))

    async def reviewed_items(self, tenants: list[str] | None) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        return reviewed_items_of(await self._tuples(LATEST_REVIEWS, tenants, "r.tenant_id"))

    async def taxonomy(self, keys: list[str] | None = None) -> list[dict[str, Any]]:
        async with self._connection() as connection:
            if keys is None:
                cursor = await connection.execute("SELECT * FROM bias_taxonomy ORDER BY bias_key")
            else:
                cursor = await connection.execute("SELECT * FROM bias_taxonomy WHERE bias_key = ANY(%s)", (keys,))
            return list(await cursor.fetchall())

    async def sessions(
        self, tenants: list[str] | None, *, start: datetime | None, end: datetime | None, limit: int, offset: int
    ) -> list[dict[str, Any]]:
        clauses, values = _tenants(tenants)
        if start is not None:
            clauses.append("session_ts >= %s")
            values.append(start)
        if end is not None:
            clauses.append("session_ts < %s")
            values.append(end)
        async with self._connection() as connection:
            cursor = await connection.execute(
                f"SELECT tenant_id, session_id, session_ts, trace_id, consent_level, council_config_version, members, "
                f"length(cells) / 13 AS scores FROM council_session_audit {_where_clause(clauses)} ORDER BY session_ts DESC, session_id "
                "LIMIT %s OFFSET %s".encode(),
                [*values, limit, offset],
            )
            return list(await cursor.fetchall())
