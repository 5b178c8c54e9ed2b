"""The audit store's part of the commands: its migrations applied or checked, and the embedded
PostgreSQL of the data directory started or joined. Apart from worker/run.py so the commands
that read the store (`report`, `export`) do not import the broker clients."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from bias_audit.schemas.errors import CommandError

from .settings import Settings
from .stopping import deferred_stop


@contextmanager
def embedded_store(settings: Settings, say: Callable[[str], None] | None = None, *, create: bool) -> Iterator[Settings]:
    """The settings as given, or with the data directory's embedded PostgreSQL as the store for
    the block's duration. create: start one (`worker`, `serve`); else only join one a worker
    made before (`report`, `export`), leaving the settings as they are when there is none."""
    from bias_audit.storage.embedded_postgres import EmbeddedPostgres, has_embedded_store

    directory = settings.data_dir / "postgres"
    if settings.store_url or not (create or has_embedded_store(directory)):
        yield settings
        return
    server = EmbeddedPostgres(directory)
    try:
        # a stop asked for while the server starts waits for it to be up, then stops it
        with deferred_stop():
            try:
                server.start()
            except Exception as error:  # the wheel raises bare subprocess and assertion errors
                from bias_audit.schemas.safe_text import reason_of

                raise CommandError(
                    f"the embedded PostgreSQL in {directory} did not start: {reason_of(error)} "
                    f"(see {directory / 'pgdata' / 'log'})",
                    exit_code=1,
                ) from None
            for line in set_up_store(server.url):
                if say is not None and "applied" in line:
                    say(line)
            if say is not None:
                say(f"embedded PostgreSQL store at {server.url} (data in {directory})")
        yield settings.replaced(store_url=server.url)
    finally:
        server.stop()


_SCHEMA_CHECKED: set[str] = set()  # stores found migrated by this process: one check, not one per sink


def require_store_schema(url: str) -> None:
    """A CommandError naming the fix when the store is unreachable or not migrated: a worker
    must not start and then dead-letter every event for want of a table."""
    if url in _SCHEMA_CHECKED:
        return
    import psycopg

    from bias_audit.schemas.safe_text import reason_of, redact
    from bias_audit.storage.postgres import missing_migrations

    try:
        missing = missing_migrations(url)
    except psycopg.Error as error:
        raise CommandError(f"cannot reach the store at {redact(url)}: {reason_of(error)}", exit_code=1) from None
    if missing:
        raise CommandError(
            f"the store at {redact(url)} lacks migrations {', '.join(missing)}: run "
            f"`bias-audit setup --store URL` first"
        )
    _SCHEMA_CHECKED.add(url)


def set_up_store(url: str) -> Iterator[str]:
    """Apply the PostgreSQL store's migrations and grant the deployment's roles their privileges
    (run with the owner's URL): a line saying what was done, and one per thing that could not be."""
    import psycopg

    from bias_audit.schemas.safe_text import reason_of, redact
    from bias_audit.storage.postgres import apply_migrations
    from bias_audit.storage.postgres.roles import GRANTS, grant_roles

    try:
        applied = apply_migrations(url)
        with psycopg.connect(url, autocommit=True) as connection:
            problems = grant_roles(connection)
    except psycopg.Error as error:
        raise CommandError(f"cannot set up the store at {redact(url)}: {reason_of(error)}", exit_code=1) from None
    yield (f"store {redact(url)}: applied {', '.join(applied)}" if applied else f"store {redact(url)}: up to date")
    yield from problems or [f"roles {', '.join(GRANTS)}: granted (make login roles members of them)"]
