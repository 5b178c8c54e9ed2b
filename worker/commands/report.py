"""`bias-audit report`: the cross-session bias report."""

from __future__ import annotations

import functools
import sys
from contextlib import nullcontext
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from bias_audit.schemas.errors import CommandError
from bias_audit.schemas.safe_text import redact

from .common import FLAG, DataDirOpt, StoreOpt, command, postgres_store, progress_bar, say, settings_with, step_bar


class ReportFormat(str, Enum):
    text = "text"
    json = "json"
    csv = "csv"
    html = "html"


@command
def report(
    paths: Annotated[
        Optional[list[str]], typer.Argument(metavar="PATH", help="more record files or directories", show_default=False)
    ] = None,
    inputs: Annotated[
        Optional[list[str]],
        typer.Option(
            "--input",
            "-i",
            metavar="PATH",
            help="JSONL record file, directory (all *.jsonl: every worker's file) or "
            "quoted glob; repeatable; llm-council-core's bias_metrics.jsonl is read too. Default: the data directory's store",
        ),
    ] = None,
    format: Annotated[
        ReportFormat, typer.Option("--format", "-f", help="text (rich tables), json, csv or html")
    ] = ReportFormat.text,
    sessions: Annotated[
        Optional[int],
        typer.Option(
            metavar="N", help="window: newest N sessions per tenant, 0 = all (default BIAS_AUDIT_WINDOW_SESSIONS, 100)"
        ),
    ] = None,
    days: Annotated[
        Optional[float],
        typer.Option(
            metavar="DAYS",
            help="window: sessions within D days of the tenant's newest, 0 = no limit (default BIAS_AUDIT_WINDOW_DAYS, 30)",
        ),
    ] = None,
    tenant: Annotated[
        Optional[str], typer.Option(metavar="TENANT", help="only this tenant (default: one section per tenant)")
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            metavar=FLAG,
            help="every table: position effects, swapped "
            "pairs, timeline, trends, config changes (JSON: the chart points too)",
        ),
    ] = False,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", metavar="FILE", help="write here instead of stdout")
    ] = None,
    redis: Annotated[
        Optional[str],
        typer.Option(
            "--redis", metavar="URL", help="report the live window kept in this Redis instead of stored records"
        ),
    ] = None,
    data_dir: DataDirOpt = None,
    store: StoreOpt = None,
) -> None:
    """Cross-session bias report over stored records or the live window.

    Pooled length bias with CIs, length-controlled model scores, position effects, randomization
    balance, reviewer profiles, agreement, trends. With no input, reads what the worker
    stored in the data directory (its embedded PostgreSQL, else JSONL records). Memory follows the window (newest N sessions / D days per
    tenant), not the files."""
    run_report(
        [*(inputs or []), *(paths or [])],
        format.value,
        sessions=sessions,
        days=days,
        tenant=tenant,
        verbose=verbose,
        output=output,
        redis=redis,
        data_dir=data_dir,
        store=store,
    )


def run_report(
    sources: list[str],
    format: str,
    *,
    sessions: int | None,
    days: float | None,
    tenant: str | None,
    verbose: bool,
    output: Path | None,
    redis: str | None,
    data_dir: Path | None,
    store: str | None,
) -> None:
    """The report over record files, the live Redis window or a PostgreSQL store (with no input
    named: the data directory's store, else its records), written in `format`."""
    from bias_audit.reports.build import build_report, report_steps
    from bias_audit.reports.run import (
        PROGRESS_FROM_SESSIONS,
        default_sources,
        live_windows,
        store_inputs,
        stored_detector_quality,
        stored_group_disparity,
        stored_judges,
        stored_windows,
        write_report,
    )

    named = bool(sources or redis)
    # the settings are read when a value of theirs is needed: files named with both window
    # limits need none
    configured = functools.cache(lambda: settings_with(data_dir=data_dir, store_url=store))
    window_sessions = configured().window_sessions if sessions is None else (sessions or None)
    window_days = configured().window_days if days is None else (days or None)
    if window_sessions is not None and window_sessions < 0 or window_days is not None and window_days < 0:
        raise CommandError("--sessions and --days must be 0 (no limit) or positive")
    # where a store may be read: the one named, or with no input named the data directory's
    # (its embedded PostgreSQL, if a worker made one)
    found: Any = nullcontext(configured() if store is not None else None)
    if not named:
        from ..store_setup import embedded_store

        found = embedded_store(configured(), create=False)
    rolled_up = reviews = None  # a store keeps what retention rolled up and people's reviews
    judges: list[Any] = []  # and judge verdicts
    quality: list[Any] = []  # and the flags' precision and recall from reviews
    disparity: list[Any] = []  # and the answers to queries naming a group
    with found as settings:
        if settings is not None and settings.store_is_postgres:
            if named:
                raise CommandError("give one of --input files, --redis or --store, not several")
            url = postgres_store(settings.store_url, "report reads")
            windows, stats, rolled_up, reviews = store_inputs(url, tenant, window_sessions, window_days)
            judges = stored_judges(url, tenant)
            quality = stored_detector_quality(url, tenant)
            disparity = stored_group_disparity(url, tenant)
            sources = [redact(url)]
        elif redis:
            if sources:
                raise CommandError("give either --input files or --redis, not both")
            from ..settings import check_broker_url

            check_broker_url(redis)
            windows, stats = live_windows(redis, configured().key_prefix, tenant, window_sessions, window_days)
            sources = [redis]
        else:
            sources = sources or default_sources(settings.records_dir)  # --store DIR: its records folder
            progress = (
                (lambda total: progress_bar("reading records", total, in_bytes=True)) if sys.stderr.isatty() else None
            )
            windows, stats = stored_windows(sources, tenant, window_sessions, window_days, progress)
        large = sum(w.cells.sessions for w in windows) >= PROGRESS_FROM_SESSIONS  # the bar: a terminal's only
        with step_bar("analysing", report_steps(windows)) if large else nullcontext(None) as step:
            document = build_report(
                windows,
                stats,
                sources=sources,
                sessions=window_sessions,
                days=window_days,
                rolled_up=rolled_up,
                reviews=reviews,
                progress=step,
            )
        if judges or quality or disparity:
            from bias_audit.analysis.group_disparity import CAVEAT

            document = document.model_copy(
                update={
                    "judges": judges,
                    "detector_quality": quality,
                    "group_disparity": disparity,
                    "group_disparity_note": CAVEAT if disparity else None,
                }
            )
        write_report(document, format, output, verbose)
    if output is not None:
        say(f"wrote {output}")
