"""The store's schema: the numbered SQL files in storage/migrations, applied in order, each
once, in its own transaction, recorded in `schema_migrations` (an advisory lock makes concurrent
`setup` runs wait for each other)."""

from __future__ import annotations

from importlib import resources

import orjson
import psycopg

_MIGRATION_LOCK = 0x62696173  # "bias": one `setup` migrates at a time


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
            connection.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
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
            [(key, value["description"], value["severity"]) for key, value in types.items()],
        )


def missing_migrations(url: str) -> list[str]:
    """The shipped migrations this database has not applied (all of them on an empty one)."""
    with psycopg.connect(url, connect_timeout=5) as connection:
        exists = connection.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
        done = (
            {row[0] for row in connection.execute("SELECT name FROM schema_migrations")}
            if exists and exists[0]
            else set()
        )
    return [name for name, _ in migrations() if name not in done]
