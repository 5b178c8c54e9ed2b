"""Commands on the audit store: export, import, retention."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from bias_audit.schemas.errors import CommandError
from bias_audit.schemas.safe_text import reason_of, redact

from .common import FLAG, DataDirOpt, StoreOpt, command, say, store_for


class ExportKind(str, Enum):
    records = "records"
    interactions = "interactions"


class ExportFormat(str, Enum):
    jsonl = "jsonl"


@command
def export(
    store: StoreOpt = None,
    tenant: Annotated[Optional[str], typer.Option(metavar="TENANT", help="only this tenant")] = None,
    since: Annotated[Optional[str], typer.Option(metavar="ISO", help="only sessions at or after this time, "
                                                 "e.g. 2026-11-01T00:00:00Z")] = None,
    kind: Annotated[ExportKind, typer.Option(help="records: the bias metric records of council sessions; "
                                             "interactions: the LLM interaction audits")] = ExportKind.records,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE", help="write here instead of "
                                                   "stdout (created with mode 0600)")] = None,
    format: Annotated[ExportFormat, typer.Option("--format", "-f", help="jsonl: one record per line, the "
                                                 "interchange format")] = ExportFormat.jsonl,
    data_dir: DataDirOpt = None,
) -> None:
    """Write the stored records as JSONL (the bias metric record contract).

    llm-council-core and `bias-audit report --input` read the output. Session by session in time
    order; memory stays flat however many there are. With no --store, the data directory's
    embedded store (the one `worker` starts)."""
    from ..export import export_records, parse_since

    start = parse_since(since)
    with store_for(store, data_dir, "export reads (JSONL stores are already in the export format)") as url:
        count = export_records(url, tenant=tenant, start=start, output=output,
                               interactions=kind is ExportKind.interactions)
    say(f"exported {count} records" + (f" to {output}" if output else ""))


@command(name="import")
def import_(
    files: Annotated[list[Path], typer.Argument(metavar="FILE", help="JSONL record files or directories")],
    store: StoreOpt = None,
    data_dir: DataDirOpt = None,
) -> None:
    """Load bias metric records into a PostgreSQL store: ours (as workers and `export` write
    them) or llm-council-core's bias_metrics.jsonl.

    Idempotent: a session stored already is skipped. With no --store, the data directory's
    embedded store (started, and created when there is none)."""
    import psycopg

    from bias_audit.storage.jsonl_store import read_records
    from bias_audit.storage.postgres import import_records

    missing = [str(path) for path in files if not path.exists()]
    if missing:
        raise CommandError(f"no such file or directory: {', '.join(missing)}")
    skipped: list[str] = []
    with store_for(store, data_dir, "import writes to", create=True) as url:
        try:
            sessions, new = import_records(url, read_records(files, skipped=skipped))
        except ValueError as error:
            raise CommandError(str(error)) from None
        except psycopg.Error as error:
            raise CommandError(f"writing to the store at {redact(url)} failed: {reason_of(error)}", exit_code=1) from None
    say(f"imported {new} new sessions of {sessions} read" + (f"; skipped {len(skipped)} unreadable lines "
                                                             f"(first: {skipped[0]})" if skipped else ""))


@command
def retention(
    store: StoreOpt = None,
    anonymize_after_days: Annotated[float, typer.Option(
        metavar="DAYS", help="remove user ids, trace ids, query hashes and response text from older interaction "
        "audits")] = 180,
    aggregate_after_days: Annotated[float, typer.Option(
        metavar="DAYS", help="roll older interaction audits and council sessions up into daily aggregates, "
        "then delete them")] = 365,
    dry_run: Annotated[bool, typer.Option("--dry-run", metavar=FLAG, help="say what would change; change nothing")] = False,
    data_dir: DataDirOpt = None,
) -> None:
    """Apply the retention policy to a PostgreSQL store.

    In batches of 1,000 rows, one short transaction each; idempotent (run it daily: the
    deployment's CronJob). Prints what it did."""
    import psycopg

    from bias_audit.storage.retention import apply_retention

    if anonymize_after_days <= 0 or aggregate_after_days < anonymize_after_days:
        raise CommandError("--anonymize-after-days must be positive and --aggregate-after-days at least as large")
    with store_for(store, data_dir, "retention works on") as url:
        try:
            done = apply_retention(url, anonymize_after_days=anonymize_after_days,
                                   aggregate_after_days=aggregate_after_days, dry_run=dry_run)
        except psycopg.Error as error:
            raise CommandError(f"retention on {redact(url)} failed: {reason_of(error)}", exit_code=1) from None
    for line in done.lines(dry_run):
        print(line)
