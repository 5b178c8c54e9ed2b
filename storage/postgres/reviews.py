"""People's reviews, what retention rolled up, and the sandbox's runs."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

# What retention kept, per tenant: the days it covers, and the totals per dimension
ROLLED_UP_SPANS = (
    "SELECT tenant_id, min(day)::text, max(day)::text, count(DISTINCT day) FROM bias_daily_aggregate "
    "{where} GROUP BY tenant_id ORDER BY tenant_id"
)


ROLLED_UP_TOTALS = (
    "SELECT tenant_id, source, model, reviewer, bias_type, sum(items)::bigint, sum(flagged)::bigint, "
    "sum(score_sum) FROM bias_daily_aggregate {where} GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5"
)


# Each reviewed item's latest review (a later one corrects an earlier one) beside what was audited
LATEST_REVIEWS = (
    "SELECT DISTINCT ON (r.tenant_id, r.audit_id) r.tenant_id, r.audit_id, r.verdicts, a.bias_score, "
    "a.llm_response, a.bias_report_summary FROM bias_review r JOIN llm_interaction_audit a "
    "USING (tenant_id, audit_id) {where} ORDER BY r.tenant_id, r.audit_id, r.reviewed_at DESC, r.id DESC"
)


def tenant_scope(tenants: list[str] | None, column: str = "tenant_id") -> tuple[str, list[Any]]:
    """(WHERE clause, values) keeping `tenants` (None: every tenant)."""
    return (f"WHERE {column} = ANY(%s)", [tenants]) if tenants is not None else ("", [])


def rolled_up_of(spans: Iterable[tuple[Any, ...]], totals: Iterable[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Per tenant, the daily aggregates retention left, summed over their days: {tenant_id,
    first_day, last_day, days, totals: [{source, model, reviewer, bias_type, items, flagged, mean}]}
    (the rows of ROLLED_UP_SPANS and ROLLED_UP_TOTALS)."""
    out = {
        name: {"tenant_id": name, "first_day": first, "last_day": last, "days": days, "totals": []}
        for name, first, last, days in spans
    }
    for name, source, model, reviewer, bias_type, items, flagged, total in totals:
        out[name]["totals"].append(
            {
                "source": source,
                "model": model,
                "reviewer": reviewer,
                "bias_type": bias_type,
                "items": items,
                "flagged": flagged,
                "mean": total / items if items else None,
            }
        )
    return list(out.values())


def reviewed_items_of(rows: Iterable[tuple[Any, ...]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(tenant, verdicts, bias_report_summary) of LATEST_REVIEWS' rows."""
    return [(tenant, verdicts, summary) for tenant, _, verdicts, _, _, summary in rows]


def read_rolled_up(connection: psycopg.Connection, *, tenants: list[str] | None) -> list[dict[str, Any]]:
    where, values = tenant_scope(tenants)
    spans = connection.execute(ROLLED_UP_SPANS.format(where=where).encode(), values).fetchall()
    totals = connection.execute(ROLLED_UP_TOTALS.format(where=where).encode(), values).fetchall()
    return rolled_up_of(spans, totals)


def _latest_reviews(connection: psycopg.Connection, tenants: list[str] | None) -> list[tuple[Any, ...]]:
    where, values = tenant_scope(tenants, "r.tenant_id")
    return connection.execute(LATEST_REVIEWS.format(where=where).encode(), values).fetchall()


def read_reviewed_items(
    connection: psycopg.Connection, *, tenants: list[str] | None
) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(tenant, verdicts, bias_report_summary) of every reviewed item, within `tenants`."""
    return reviewed_items_of(_latest_reviews(connection, tenants))


def read_review_evidence(
    connection: psycopg.Connection, *, tenants: list[str] | None
) -> list[tuple[str, str, str, float, bool, str | None, list[dict[str, Any]]]]:
    """(tenant, audit_id, bias type, evidence, confirmed, the answer's text or None once
    retention removed it, the findings) for every verdict of every reviewed item's latest
    review, the evidence being the analyzers' bias_score for that type."""
    out = []
    for tenant, audit_id, verdicts, scores, text, summary in _latest_reviews(connection, tenants):
        findings = (summary or {}).get("findings", [])
        for bias_type, verdict in (verdicts or {}).items():
            if verdict in ("confirmed", "dismissed") and isinstance((scores or {}).get(bias_type), (int, float)):
                out.append(
                    (tenant, audit_id, bias_type, float(scores[bias_type]), verdict == "confirmed", text, findings)
                )
    return out


def save_sandbox_run(
    connection: psycopg.Connection, *, tenant: str, baseline: dict[str, Any], document: dict[str, Any], worse: bool
) -> int:
    """Keep a sandbox run (committed at once); its id."""
    with connection.transaction():
        row = connection.execute(
            "INSERT INTO sandbox_run (tenant_id, baseline, worse, document) VALUES (%s, %s, %s, %s) RETURNING id",
            (tenant, Jsonb(baseline), worse, Jsonb(document)),
        ).fetchone()
    return int(row[0]) if row else 0


# What estimating precision and recall from reviews needs, per tenant: the answers flagged (per
# type and in all) and not flagged, and each reviewed answer's latest review
FLAGGED_COUNTS = (
    "SELECT tenant_id, count(*) FILTER (WHERE bias_detected), count(*) FILTER (WHERE NOT bias_detected) "
    "FROM llm_interaction_audit {where} GROUP BY tenant_id"
)
FLAGGED_TYPES = (
    "SELECT tenant_id, t.bias_key, count(*) FROM llm_interaction_audit a, "
    "jsonb_array_elements_text(a.bias_type) AS t(bias_key) {where} GROUP BY 1, 2"
)
LATEST_SAMPLE_REVIEWS = (
    "SELECT DISTINCT ON (r.tenant_id, r.audit_id) r.tenant_id, a.bias_type, r.verdicts, r.tags, "
    "r.inclusion_probability, r.answer_biased FROM bias_review r JOIN llm_interaction_audit a "
    "USING (tenant_id, audit_id) {where} ORDER BY r.tenant_id, r.audit_id, r.reviewed_at DESC, "
    "r.id DESC"
)


def read_review_quality_inputs(
    connection: psycopg.Connection, *, tenants: list[str] | None
) -> dict[str, dict[str, Any]]:
    """Per tenant with answers: {flagged: {type: n}, flagged_any, unflagged, reviews: [(bias_type,
    verdicts, tags, inclusion_probability, answer_biased)]}."""
    where, values = tenant_scope(tenants)
    out: dict[str, dict[str, Any]] = {}
    for tenant, flagged, unflagged in connection.execute(FLAGGED_COUNTS.format(where=where).encode(), values):
        out[tenant] = {"flagged": {}, "flagged_any": flagged, "unflagged": unflagged, "reviews": []}
    typed_where, typed_values = tenant_scope(tenants, "a.tenant_id")
    for tenant, bias_key, count in connection.execute(FLAGGED_TYPES.format(where=typed_where).encode(), typed_values):
        out[tenant]["flagged"][bias_key] = count
    review_where, review_values = tenant_scope(tenants, "r.tenant_id")
    for tenant, *review in connection.execute(LATEST_SAMPLE_REVIEWS.format(where=review_where).encode(), review_values):
        if tenant in out:
            out[tenant]["reviews"].append(tuple(review))
    return out


# Each reviewed answer's latest review where the person judged the whole answer (a sampled one)
LATEST_JUDGEMENTS = (
    "SELECT * FROM (SELECT DISTINCT ON (r.tenant_id, r.audit_id) r.tenant_id, r.audit_id, "
    "a.llm_response, r.answer_biased, r.tags FROM bias_review r JOIN llm_interaction_audit a "
    "USING (tenant_id, audit_id) {where} ORDER BY r.tenant_id, r.audit_id, r.reviewed_at DESC, "
    "r.id DESC) AS latest WHERE answer_biased IS NOT NULL AND llm_response IS NOT NULL"
)


def read_answer_judgements(
    connection: psycopg.Connection, *, tenants: list[str] | None
) -> list[tuple[str, str, str, bool, list[str]]]:
    """(tenant, audit_id, the answer's text, biased, the types tagged) of every answer whose latest
    review judged it whole, while retention has not removed its text."""
    where, values = tenant_scope(tenants, "r.tenant_id")
    return [
        (t, a, text, bool(biased), list(tags or []))
        for t, a, text, biased, tags in connection.execute(LATEST_JUDGEMENTS.format(where=where).encode(), values)
    ]


# answers whose query named a group (kept at consent >= 2): what the live-traffic disparity reads
GROUP_TRAITS = (
    "SELECT tenant_id, coalesce(llm_model, ''), bias_report_summary->'query_groups', "
    "bias_report_summary->'answer_traits' FROM llm_interaction_audit {where} "
    "bias_report_summary ? 'answer_traits'"
)


def read_group_traits(
    connection: psycopg.Connection, *, tenants: list[str] | None
) -> Iterator[tuple[str, str, dict[str, str], dict[str, Any]]]:
    """(tenant, model, axis -> group the query named, the answer's traits), streamed."""
    where, values = tenant_scope(tenants)
    sql = GROUP_TRAITS.format(where=f"{where} AND" if where else "WHERE")
    with connection.cursor(name="group_traits") as cursor:
        cursor.itersize = 5000
        cursor.execute(sql.encode(), values)
        for tenant, model, groups, traits in cursor:
            yield tenant, model, groups, traits
