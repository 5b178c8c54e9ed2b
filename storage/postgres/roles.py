"""The database roles the deployment logs in as, each with only what its work needs: workers and
`serve` write and review (`bias_audit_writer`), retention anonymizes, rolls up and drops months
(`bias_audit_retention`). Neither owns a table, so neither can drop one, alter one, or read past
what it was granted; the two owner's jobs they need (a new month's partition, dropping an empty
one) are SECURITY DEFINER functions (migration 0009). The roles cannot log in: an operator makes
login roles members of them (docs/store.md). `setup` grants anew each run, so a table a new
migration adds is granted too."""

from __future__ import annotations

import psycopg
from psycopg import sql

WRITER, RETENTION = "bias_audit_writer", "bias_audit_retention"

GRANTS: dict[str, list[tuple[str, str]]] = {
    WRITER: [
        ("SELECT, INSERT", "council_session_audit"),
        ("SELECT, INSERT, UPDATE", "llm_interaction_audit"),  # `serve` updates the bias and review columns
        ("SELECT, INSERT", "bias_review"),
        ("SELECT, INSERT, UPDATE, DELETE", "review_lease"),
        ("SELECT, INSERT", "sandbox_run"),
        ("SELECT", "bias_taxonomy"),
        ("SELECT", "bias_daily_aggregate"),  # the report's rolled-up history
        ("SELECT", "schema_migrations"),  # a worker checks the store is migrated before it starts
        ("SELECT, INSERT", "judge_verdicts"),
        ("SELECT, INSERT", "judge_human_verdict"),
        ("SELECT, INSERT", "judge_review_item"),
        ("SELECT, INSERT", "judge_review_served"),
    ],
    RETENTION: [
        ("SELECT, UPDATE, DELETE", "llm_interaction_audit"),
        ("SELECT, UPDATE, DELETE", "council_session_audit"),  # UPDATE: the batches lock their rows (FOR UPDATE)
        ("SELECT, INSERT, UPDATE", "bias_daily_aggregate"),
        ("SELECT", "schema_migrations"),
        ("SELECT, UPDATE, DELETE", "judge_verdicts"),  # UPDATE: anonymizing; its batches lock their rows
        ("SELECT, DELETE", "judge_human_verdict"),
        ("SELECT, UPDATE, DELETE", "judge_review_item"),  # UPDATE: its batches lock their rows (FOR UPDATE)
        ("SELECT, DELETE", "judge_review_served"),
    ],
}
FUNCTIONS = {WRITER: "bias_audit_month_partition(text, timestamptz)", RETENTION: "bias_audit_drop_month(text)"}


def grant_roles(connection: psycopg.Connection) -> list[str]:
    """Create the two roles when missing and grant them their privileges; what could not be done
    (an owner without CREATEROLE, say), one line each."""
    problems = []
    found = connection.execute("SELECT current_schema()").fetchone()
    schema = sql.Identifier(found[0] if found else "public")
    for role, grants in GRANTS.items():
        name = sql.Identifier(role)
        try:
            with connection.transaction():
                if connection.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
                    connection.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(name))
                connection.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(schema, name))
                for privileges, table in grants:
                    connection.execute(
                        sql.SQL("GRANT {} ON {} TO {}").format(sql.SQL(privileges), sql.Identifier(table), name)
                    )  # our constants, never input
                connection.execute(
                    sql.SQL("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {} TO {}").format(schema, name)
                )
                connection.execute(sql.SQL(f"GRANT EXECUTE ON FUNCTION {FUNCTIONS[role]} TO {{}}").format(name))
        except psycopg.errors.InsufficientPrivilege as error:
            problems.append(
                f"role {role}: {str(error).strip().splitlines()[0]} (create it as a superuser, then run setup again)"
            )
    return problems
