"""`bias-audit report`: read the window (stored records or the live Redis window), build the
report, render it in the asked format."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ContextManager

from bias_audit.reports.budget import UNLIMITED, Budget
from bias_audit.schemas.errors import CommandError

FORMATS = ("text", "json", "csv", "html")
PROGRESS_FROM_BYTES = 32 * 1024 * 1024  # smaller inputs finish before a bar would help
PROGRESS_FROM_SESSIONS = 10_000  # windows whose sections take a second or more


def stored_windows(
    sources: Sequence[str],
    tenant: str | None,
    sessions: int | None,
    days: float | None,
    progress: Callable[[int], ContextManager[Callable[[int], None]]] | None = None,
):
    """(windows, read stats) from record files; for large inputs `progress(total_bytes)` is
    entered around the read and its advance callback gets the bytes read."""
    from bias_audit.storage.report_reader import InputError, WindowReader, expand_inputs

    arrow_memory_from_jemalloc()
    try:
        files = expand_inputs(sources)
        reader = WindowReader(sessions=sessions, days=days, tenant=tenant)
        total = sum(f.stat().st_size for f in files)
        if progress is not None and total >= PROGRESS_FROM_BYTES:
            with progress(total) as advance:
                reader.read(files, advance)
        else:
            reader.read(files)
    except InputError as error:
        raise CommandError(str(error)) from None
    return reader.windows(), reader.stats


def arrow_memory_from_jemalloc() -> None:
    """Arrow's buffers from jemalloc, which hands the read's freed batches back to the system;
    pyarrow's default (mimalloc) keeps them for the rest of the process. A pool named in Arrow's
    own ARROW_DEFAULT_MEMORY_POOL is left as chosen, and a build without jemalloc keeps its default."""
    import pyarrow as pa

    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    except NotImplementedError:
        pass


def live_windows(url: str, prefix: str, tenant: str | None, sessions: int | None, days: float | None):
    """(windows, read stats) from the digests the workers keep in their Redis window."""
    from redis import Redis
    from redis.exceptions import RedisError

    from bias_audit.state.redis_window import read_live_windows
    from bias_audit.storage.report_reader import ReadStats

    try:
        with Redis.from_url(url, socket_connect_timeout=5) as client:
            live = read_live_windows(client, prefix, tenant)
    except RedisError as error:
        raise CommandError(f"reading the live window from {url} failed: {error}", exit_code=1) from None
    # a tenant with no digests was counted before digests were kept (an older worker)
    return _cut(live, sessions, days), ReadStats(sessions=sum(len(d) for d in live.values()))


def _cut(digests_by_tenant: dict, sessions: int | None, days: float | None) -> list:
    """Each tenant's window and the one before it, from its digests (oldest first), as the file
    reader cuts them."""
    from bias_audit.analysis.window import window_bounds
    from bias_audit.analysis.window_cells import window_cells
    from bias_audit.storage.report_reader import TenantWindows

    windows = []
    for name, digests in sorted(digests_by_tenant.items()):
        if not digests:
            continue
        first_previous, first = window_bounds([d.ts_ms for d in digests], digests[-1].ts_ms, sessions, days)
        windows.append(TenantWindows(name, window_cells(digests[first_previous:]), first - first_previous))
    return windows


@contextmanager
def _store_connection(url: str, budget: Budget = UNLIMITED) -> Iterator[Any]:
    """One connection to a PostgreSQL audit store; a driver error as the one-line reason naming
    the store (password redacted), a statement that outlived `budget` as OutOfTime."""
    import psycopg

    from bias_audit.schemas.safe_text import reason_of, redact

    try:
        with budget.connection(url) as connection:
            yield connection
    except psycopg.Error as error:
        raise CommandError(f"reading the store at {redact(url)} failed: {reason_of(error)}", exit_code=1) from None


def _windows_of(connection: Any, tenant: str | None, sessions: int | None, days: float | None):
    """(windows, read stats) from the store's digests, cut as the file reader cuts."""
    from bias_audit.storage.postgres import read_digests
    from bias_audit.storage.report_reader import ReadStats

    stored = read_digests(connection, tenant=tenant, sessions=sessions)
    return _cut(stored, sessions, days), ReadStats(
        sessions=sum(len(d) for d in stored.values()),
        records=sum(len(x.cell_score) for d in stored.values() for x in d),
    )


def store_windows(url: str, tenant: str | None, sessions: int | None, days: float | None, budget: Budget = UNLIMITED):
    """(windows, read stats) from a PostgreSQL audit store, its reads stopped by OutOfTime when
    `budget` is spent."""
    with _store_connection(url, budget) as connection:
        return _windows_of(connection, tenant, sessions, days)


def store_inputs(url: str, tenant: str | None, sessions: int | None, days: float | None):
    """(windows, read stats, the history retention rolled up, what people's reviews say about the
    detectors) from a PostgreSQL audit store, on one connection."""
    from bias_audit.analysis.detector_precision import precision_of_reviews
    from bias_audit.schemas.report import RolledUpHistory
    from bias_audit.storage.postgres import read_reviewed_items, read_rolled_up

    tenants = None if tenant is None else [tenant]
    with _store_connection(url) as connection:
        windows, stats = _windows_of(connection, tenant, sessions, days)
        rolled = read_rolled_up(connection, tenants=tenants)
        reviewed = read_reviewed_items(connection, tenants=tenants)
    return windows, stats, [RolledUpHistory.model_validate(entry) for entry in rolled], precision_of_reviews(reviewed)


def default_sources(records_dir: Path) -> list[str]:
    """The data directory's records, where the worker writes them."""
    if not any(records_dir.glob("*.jsonl")):
        raise CommandError(
            f"no input: no store in {records_dir.parent / 'postgres'} and no records in {records_dir} yet; "
            f"pass --input PATH (a records file or directory), --store URL, --data-dir DIR, or "
            f"--redis URL for the live window"
        )
    return [str(records_dir)]


def render(document, format: str, verbose: bool, width: int | None = None) -> str:
    """The document in `format`; each format's renderer is imported only when asked for."""
    if format == "json":
        exclude = None if verbose else {"tenants": {"__all__": {"length_points"}}}
        return document.model_dump_json(indent=2, exclude=exclude) + "\n"
    if format == "csv":
        from .csv_out import render_csv

        buffer = io.StringIO()
        render_csv(document, buffer)
        return buffer.getvalue()
    if format == "html":
        from .html import render_html

        return render_html(document)
    from rich.console import Console

    from .text import render_text

    buffer = io.StringIO()
    render_text(document, Console(file=buffer, width=width or 80, force_terminal=False), verbose=verbose)
    return buffer.getvalue()


def write_report(document, format: str, output: Path | None, verbose: bool) -> None:
    if output is None and format == "text":
        from rich.console import Console

        from .text import render_text

        render_text(document, Console(), verbose=verbose)
        return
    text = render(document, format, verbose)
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as error:
        raise CommandError(f"cannot write {output}: {error.strerror}", exit_code=1) from None


def stored_judges(url: str, tenant: str | None) -> list[Any]:
    """The judge report of each tenant with stored verdicts (the report's `judges` section)."""
    import psycopg

    from bias_audit.schemas.report import TenantJudges
    from bias_audit.storage.postgres.verdicts import verdict_tenants

    from .judges import judge_report_over_store

    with psycopg.connect(url, connect_timeout=5) as connection:
        tenants = verdict_tenants(connection, tenant)
    out = []
    for name in tenants:
        document = judge_report_over_store(url, name)
        if document["judges"]:
            out.append(TenantJudges(tenant_id=name, report=document))
    return out


def stored_detector_quality(url: str, tenant: str | None) -> list[Any]:
    """Per tenant with answers and reviews, precision and recall of the flags from the reviews
    (the report's `detector_quality` section)."""
    import psycopg

    from bias_audit.analysis.review_estimates import ReviewedAnswer, detector_quality_of
    from bias_audit.schemas.report import DetectorQualityEntry
    from bias_audit.storage.postgres.reviews import read_review_quality_inputs

    with psycopg.connect(url, connect_timeout=5) as connection:
        inputs = read_review_quality_inputs(connection, tenants=None if tenant is None else [tenant])
    out = []
    for name, found in sorted(inputs.items()):
        if not found["reviews"]:
            continue
        reviews = [
            ReviewedAnswer(tuple(bias_type or []), dict(verdicts or {}), tuple(tags or []), inclusion, biased)
            for bias_type, verdicts, tags, inclusion, biased in found["reviews"]
        ]
        for q in detector_quality_of(found["flagged"], found["flagged_any"], found["unflagged"], reviews):
            out.append(
                DetectorQualityEntry(
                    tenant_id=name,
                    bias_type=q.bias_type,
                    flagged=q.flagged,
                    unflagged=q.unflagged,
                    precision=q.precision.value,
                    precision_ci=q.precision.ci,
                    precision_reviews=q.precision.n,
                    recall=q.recall.value,
                    recall_ci=q.recall.ci,
                    sampled_reviews=q.recall.n,
                )
            )
    return out


def stored_group_disparity(url: str, tenant: str | None, budget: Budget = UNLIMITED) -> list[Any]:
    """Per tenant, model, axis and group named in queries: the answers' refusal, sentiment,
    toxicity and length against the model's answers for the axis' other groups (the report's
    `group_disparity` section)."""
    from dataclasses import asdict

    from bias_audit.analysis.group_disparity import METRICS, Traits, group_disparity
    from bias_audit.schemas.report import GroupDisparityEntry, TrafficGap
    from bias_audit.storage.postgres.reviews import read_group_traits

    with budget.connection(url) as connection:
        entries = group_disparity(
            (
                t,
                m,
                groups,
                Traits(
                    bool(x.get("refusal")),
                    float(x.get("sentiment") or 0.0),
                    bool(x.get("toxic")),
                    int(x.get("words") or 0),
                ),
            )
            for t, m, groups, x in read_group_traits(connection, tenants=None if tenant is None else [tenant])
        )
    return [
        GroupDisparityEntry(
            tenant_id=e.tenant_id,
            llm_model=e.llm_model,
            axis=e.axis,
            group=e.group,
            answers=e.answers,
            others=e.others,
            **{metric: TrafficGap(**asdict(e.gaps[metric])) for metric in METRICS},
        )
        for e in entries
    ]
