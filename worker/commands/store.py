"""Commands on the audit store: export, import, retention."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from bias_audit.schemas.errors import CommandError
from bias_audit.schemas.safe_text import plural, reason_of, redact, size_text

from .common import FLAG, DataDirOpt, StoreOpt, command, progress_bar, say, settings_with, store_for


class ExportKind(str, Enum):
    records = "records"
    interactions = "interactions"
    verdicts = "verdicts"


class ExportFormat(str, Enum):
    jsonl = "jsonl"
    parquet = "parquet"


@command
def export(
    store: StoreOpt = None,
    tenant: Annotated[Optional[str], typer.Option(metavar="TENANT", help="only this tenant")] = None,
    since: Annotated[
        Optional[str],
        typer.Option(metavar="ISO", help="only sessions at or after this time, e.g. 2026-11-01T00:00:00Z"),
    ] = None,
    kind: Annotated[
        ExportKind,
        typer.Option(
            help="records: the bias metric records of council sessions; "
            "interactions: the LLM interaction audits; verdicts: the judge "
            "verdicts (without queries or answers)"
        ),
    ] = ExportKind.records,
    output: Annotated[
        Optional[Path],
        typer.Option(
            "--output",
            "-o",
            metavar="PATH",
            help="jsonl: write this file instead of stdout (mode 0600); parquet: the new or empty folder to write",
        ),
    ] = None,
    format: Annotated[
        ExportFormat,
        typer.Option(
            "--format",
            "-f",
            help="jsonl: one record per line, the "
            "interchange format; parquet: typed columns, a folder per UTC day, "
            "for BigQuery, ClickHouse or DuckDB (docs/parquet.md)",
        ),
    ] = ExportFormat.jsonl,
    data_dir: DataDirOpt = None,
) -> None:
    """Write the stored records as JSONL (the bias metric record contract) or as Parquet.

    llm-council-core and `bias-audit report --input` read the JSONL. Parquet goes to a folder,
    `day=YYYY-MM-DD/part-00000.parquet`, that warehouses load as it is. Session by session in
    time order; memory stays flat however many there are. With no --store, the data
    directory's embedded store (the one `worker` starts)."""
    from ..export import export_parquet, export_records, parquet_folder, parse_since

    start = parse_since(since)
    folder = parquet_folder(output) if format is ExportFormat.parquet else None
    with (
        store_for(store, data_dir, "export reads (JSONL stores are already in the export format)") as url,
        progress_bar(f"exporting {kind.value}", None) as advance,
    ):
        if folder is not None:
            written = export_parquet(url, tenant=tenant, start=start, output=folder, kind=kind.value, advance=advance)
            say(
                f"exported {written.rows} {kind.value} to {plural(len(written.files), 'Parquet file')} "
                f"({size_text(written.bytes)}) under {folder}"
            )
            return
        count = export_records(url, tenant=tenant, start=start, output=output, kind=kind.value, advance=advance)
    say(f"exported {count} {kind.value}" + (f" to {output}" if output else ""))


class ImportSource(str, Enum):
    auto = "auto"
    records = "records"
    events = "events"
    judgebench = "judgebench"
    alpaca_eval = "alpaca_eval"
    mt_bench = "mt_bench"
    lmc = "lmc"


@command(name="import")
def import_(
    files: Annotated[
        list[Path], typer.Argument(metavar="FILE", help="JSONL record files, judge files, or directories")
    ],
    store: StoreOpt = None,
    source: Annotated[
        ImportSource,
        typer.Option(
            "--source",
            "-s",
            help="auto (by each file's fields), records (bias metric records), or judge verdicts: "
            "events (judge.verdicts JSONL), judgebench, alpaca_eval, mt_bench, lmc",
        ),
    ] = ImportSource.auto,
    tenant: Annotated[
        str, typer.Option(metavar="TENANT", help="the tenant judge files are imported into (events name their own)")
    ] = "default",
    answers: Annotated[
        Optional[Path],
        typer.Option(
            "--answers", metavar="DIR", help="MT-Bench: FastChat's model_answer/ folder, for the answers' lengths"
        ),
    ] = None,
    data_dir: DataDirOpt = None,
) -> None:
    """Load records or judge verdicts into a PostgreSQL store.

    Bias metric records: ours (as workers and `export` write them) or llm-council-core's
    bias_metrics.jsonl. Judge verdicts: our events or the field's judge files (JudgeBench,
    AlpacaEval, MT-Bench, the Language Model Council), without their texts. Idempotent: a session
    or verdict stored already is skipped. With no --store, the data directory's embedded store
    (started, and created when there is none)."""
    import psycopg

    missing = [str(path) for path in files if not path.exists()]
    if missing:
        raise CommandError(f"no such file or directory: {', '.join(missing)}")
    judged, records = _split_sources(files, source.value)
    with store_for(store, data_dir, "import writes to", create=True) as url:
        try:
            if judged:
                from bias_audit.importers.sources import read_verdicts
                from bias_audit.storage.postgres.verdicts import import_verdicts

                kind = "auto" if source is ImportSource.auto else source.value
                verdicts = read_verdicts(
                    [str(p) for p in judged],
                    kind,
                    tenant=tenant,
                    answers=str(answers) if answers else None,
                    limits=settings_with(data_dir=data_dir).limits,
                )
                read, new = import_verdicts(url, verdicts)
                repeated = f" ({verdicts.duplicates} read twice, counted once)" if verdicts.duplicates else ""
                say(f"imported {new} new judge verdicts of {read} read{repeated}")
            if records:
                _import_records(url, records)
        except ValueError as error:
            raise CommandError(str(error)) from None
        except psycopg.Error as error:
            raise CommandError(
                f"writing to the store at {redact(url)} failed: {reason_of(error)}", exit_code=1
            ) from None


def _split_sources(files: list[Path], source: str) -> tuple[list[Path], list[Path]]:
    """(judge files, record files): by --source, or with auto by each file's first entry."""
    if source == "records":
        return [], files
    if source != "auto":
        return files, []
    from bias_audit.importers.common import SourceError
    from bias_audit.importers.sources import detect, expand

    judged: list[Path] = []
    records: list[Path] = []
    for path in expand([str(f) for f in files]):
        try:
            kind = detect(path)
        except SourceError:
            kind = "records"
        if kind != "empty":
            (records if kind == "records" else judged).append(path)
    return judged, records


def _import_records(url: str, files: list[Path]) -> None:
    from bias_audit.storage.jsonl_store import read_records
    from bias_audit.storage.postgres import import_records

    skipped: list[str] = []
    sessions, new = import_records(url, read_records(files, skipped=skipped))
    say(
        f"imported {new} new sessions of {sessions} read"
        + (f"; skipped {len(skipped)} unreadable lines (first: {skipped[0]})" if skipped else "")
    )


@command
def retention(
    store: StoreOpt = None,
    anonymize_after_days: Annotated[
        float,
        typer.Option(
            metavar="DAYS",
            help="remove user ids, trace ids, query hashes and response text from older interaction audits",
        ),
    ] = 180,
    aggregate_after_days: Annotated[
        float,
        typer.Option(
            metavar="DAYS",
            help="roll older interaction audits and council sessions up into daily aggregates, then delete them",
        ),
    ] = 365,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", metavar=FLAG, help="say what would change; change nothing")
    ] = False,
    data_dir: DataDirOpt = None,
) -> None:
    """Apply the retention policy to a PostgreSQL store.

    In batches of 1,000 rows, one short transaction each; idempotent (run it daily: the
    deployment's CronJob). Prints what it did."""
    import psycopg

    from bias_audit.storage.postgres.retention import apply_retention

    if anonymize_after_days <= 0 or aggregate_after_days < anonymize_after_days:
        raise CommandError("--anonymize-after-days must be positive and --aggregate-after-days at least as large")
    with store_for(store, data_dir, "retention works on") as url:
        try:
            done = apply_retention(
                url,
                anonymize_after_days=anonymize_after_days,
                aggregate_after_days=aggregate_after_days,
                dry_run=dry_run,
            )
        except psycopg.Error as error:
            raise CommandError(f"retention on {redact(url)} failed: {reason_of(error)}", exit_code=1) from None
    for line in done.lines(dry_run):
        print(line)
