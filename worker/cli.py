"""`bias-audit`: the command line. Each command parses its arguments and calls one function of
the package it belongs to; everything beyond typer is imported inside the command that runs, so
`--help` and argument errors answer at once (tests/worker/test_cli_help.py keeps it so).

Exit codes: 0 ok, 2 usage or input error (one line saying why), 1 anything else.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, NoReturn, Optional

import typer
from typer.core import TyperCommand, TyperGroup

from bias_audit import __version__
from bias_audit.errors import CommandError
from bias_audit.safe_text import one_line, reason_of, redact

# The analysis multiplies small matrices (a council's members, a window's models): OpenBLAS's thread
# pool only costs its start-up (~40 ms of a report) and spinning cores the worker's event loop and
# the other workers need (bench/RESULTS.md, issue 13). Set the variable to use more.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


class _NoFlagTypes:
    """Typer 0.29 shows a type tag beside every parameter (`--help <bool>`, `PATH <list[str]>`):
    a flag takes no value, and a parameter with a metavar says what it takes already."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            option.metavar = ""
        return option

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if param.param_type_name == "argument" and param.metavar is not None:
                param.display_type_rich = lambda ctx: None
        return params


class _Command(_NoFlagTypes, TyperCommand):
    pass


class _Group(_NoFlagTypes, TyperGroup):
    pass


app = typer.Typer(
    cls=_Group,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    rich_markup_mode="markdown",  # docstring paragraphs reflow to the terminal's width
)
FLAG = ""  # metavar of a flag: nothing to type after it


def _say(message: str) -> None:
    """One line on stderr, never wrapped, never read as markup or terminal codes, and never
    showing a password (messages quote ids from events and URLs from flags)."""
    sys.stderr.write(one_line(redact(message)) + "\n")
    sys.stderr.flush()


def _version(value: bool) -> None:
    if value:
        print(f"bias-audit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", "-V", metavar=FLAG, is_eager=True, callback=_version,
                                                help="print the version and exit")] = False) -> None:
    """Audit bias in LLM councils and LLM responses, live on Redis Streams or Google Pub/Sub, or over a
    JSONL file.

    Start with `bias-audit demo`; README.md has a quickstart. Every command has `-h`."""


BrokerOpt = Annotated[Optional[str], typer.Option(
    "--broker", metavar="URL",
    help="redis://HOST:PORT/DB or pubsub://PROJECT (honours PUBSUB_EMULATOR_HOST); env BIAS_AUDIT_BROKER_URL")]
RedisOpt = Annotated[Optional[str], typer.Option(
    "--redis", metavar="URL",
    help="Redis for the windows (required with pubsub://; default: the broker's Redis); env BIAS_AUDIT_REDIS_URL")]
StoreOpt = Annotated[Optional[str], typer.Option(
    "--store", metavar="URL|DIR", help="the audit store: postgresql://... (libpq URL, unix sockets too) or a "
    "directory of JSONL records (default: the embedded PostgreSQL in DATA_DIR/postgres); env BIAS_AUDIT_STORE_URL")]
DataDirOpt = Annotated[Optional[Path], typer.Option(
    "--data-dir", metavar="DIR", help="the embedded Redis and PostgreSQL (default .bias-audit); env BIAS_AUDIT_DATA_DIR")]
WindowSessionsOpt = Annotated[Optional[int], typer.Option(
    metavar="N", help="window: last N sessions per tenant (default 100); env BIAS_AUDIT_WINDOW_SESSIONS")]
WindowDaysOpt = Annotated[Optional[float], typer.Option(
    metavar="DAYS", help="window: last D days per tenant (default 30); env BIAS_AUDIT_WINDOW_DAYS")]
ConsentOpt = Annotated[Optional[int], typer.Option(
    metavar="0-4", help="default consent level when an event has none (default 1); env BIAS_AUDIT_CONSENT_LEVEL")]


def _settings(**overrides: Any):
    from .settings import settings_from

    return settings_from(**overrides)


def _command(function=None, *, name: str | None = None):
    """A command whose CommandError becomes one line on stderr and its exit code; `name` when
    the command's name is a Python keyword (`import`)."""

    def register(function):
        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> None:
            try:
                function(*args, **kwargs)
            except CommandError as error:
                _fail(error.message, error.exit_code)

        return app.command(name, cls=_Command)(run)

    return register(function) if function is not None else register


def _fail(message: str, code: int = 2) -> NoReturn:
    _say(f"error: {message}")
    raise typer.Exit(code)


def _progress(label: str, total: int, in_bytes: bool = False):
    """A transient progress bar on stderr; yields the advance callback."""
    from contextlib import contextmanager

    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    @contextmanager
    def bar() -> Iterator[Any]:
        done = DownloadColumn() if in_bytes else MofNCompleteColumn()
        with Progress(label, BarColumn(), done, TimeRemainingColumn(),
                      console=Console(stderr=True), transient=True) as progress:
            task = progress.add_task(label, total=total)
            yield lambda n: progress.advance(task, n)

    return bar()


def _lines(source: str) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of non-blank lines, streamed from a file or stdin."""
    if source == "-":
        handle = sys.stdin.buffer
    else:
        path = Path(source)
        if not path.is_file():
            raise CommandError(f"{source}: no such file")
        handle = open(path, "rb")
    with handle:
        for number, line in enumerate(handle, 1):
            line = line.rstrip(b"\r\n")
            if line.strip():
                yield number, line


@_command
def worker(
    broker: BrokerOpt = None,
    redis: RedisOpt = None,
    data_dir: DataDirOpt = None,
    consumer: Annotated[Optional[str], typer.Option(metavar="NAME", help="consumer name in the group (default host-pid)")] = None,
    consent_level: ConsentOpt = None,
    window_sessions: WindowSessionsOpt = None,
    window_days: WindowDaysOpt = None,
    ops_port: Annotated[Optional[int], typer.Option(metavar="PORT", help="/healthz /readyz /metrics port (default 9464; 0 any, -1 off)")] = None,
    consume: Annotated[Optional[str], typer.Option(
        metavar="all|council|responses",
        help="all (default): council sessions and LLM responses; council: council.sessions only; responses: "
             "llm.responses only (one per deployment scales each on its own backlog). Env BIAS_AUDIT_CONSUME")] = None,
    store: StoreOpt = None,
) -> None:
    """Run the stream worker on Redis Streams or Pub/Sub.

    With no broker configured, starts an embedded Redis in the data directory; with no store, an
    embedded PostgreSQL there. SIGTERM drains the batch in hand, then exits."""
    from .run import run_worker

    run_worker(_settings(broker_url=broker, redis_url=redis, data_dir=data_dir, consumer_name=consumer,
                         consent_level=consent_level, window_sessions=window_sessions, window_days=window_days,
                         ops_port=ops_port, consume=consume, store_url=store), say=_say)


@_command
def serve(
    host: Annotated[str, typer.Option(metavar="HOST", help="listen address")] = "127.0.0.1",
    port: Annotated[int, typer.Option(metavar="PORT", help="listen port")] = 8080,
    data_dir: DataDirOpt = None,
    consent_level: ConsentOpt = None,
    store: StoreOpt = None,
    insecure_no_auth: Annotated[bool, typer.Option(
        "--insecure-no-auth", metavar=FLAG, help="listen on a non-loopback address without BIAS_AUDIT_JWT_SECRET "
        "or BIAS_AUDIT_JWT_PUBLIC_KEY: anyone who reaches it reads and writes every tenant")] = False,
) -> None:
    """Serve the HTTP API (analyze-bias, audit-session, counterfactual-prompts, GraphQL, review page).

    POST /analyze-bias (an LLM response event), POST /audit-session (a council session event),
    /healthz, /readyz, /metrics; the OpenAPI document at /openapi.json and its pages at /docs.
    Errors are problem+json with a one-line reason."""
    from .run import run_api

    run_api(_settings(data_dir=data_dir, consent_level=consent_level, store_url=store), host, port, say=_say,
            insecure_no_auth=insecure_no_auth)


@_command
def setup(broker: BrokerOpt = None, data_dir: DataDirOpt = None, store: StoreOpt = None) -> None:
    """Create the input streams and groups, or the Pub/Sub topics and subscriptions; with a
    PostgreSQL store, apply its migrations.

    Redis: consumer groups from the stream's start. Pub/Sub: with the dead-letter and retry
    policies. PostgreSQL: each migration once, in order. Idempotent."""
    from .run import resolve_broker, set_up_broker
    from .store_setup import set_up_store

    settings = _settings(broker_url=broker, data_dir=data_dir, store_url=store)
    if settings.store_is_postgres:
        for line in set_up_store(settings.store_url or ""):
            print(line)
        if broker is None and not settings.broker_url:
            return  # `setup --store URL` alone: the database only
    for line in set_up_broker(settings, resolve_broker(settings)):
        print(line)


@_command
def publish(
    file: Annotated[str, typer.Argument(metavar="FILE", help="JSONL file of events, or - for stdin")],
    broker: BrokerOpt = None,
    data_dir: DataDirOpt = None,
    topic: Annotated[Optional[str], typer.Option(metavar="NAME", help="stream or topic (default: by event kind)")] = None,
) -> None:
    """Publish JSONL events onto the input streams or topics.

    In the contract's wire format (field `data` = the JSON document), each event to its kind's
    input. Without --broker, finds a running embedded worker's Redis."""
    from bias_audit.producers.publish import entries_for, publish as send

    from .run import resolve_broker

    settings = _settings(broker_url=broker, data_dir=data_dir)
    entries = entries_for(_lines(file), lambda kind: topic or (
        settings.llm_topic if kind == "llm.response" else settings.council_topic))
    url = resolve_broker(settings)
    with _progress("publishing", len(entries)) as advance:
        send(url, entries, advance)
    _say(f"published {len(entries)} events to {url}")


class OutputKind(str, Enum):
    results = "results"
    alerts = "alerts"
    tasks = "tasks"
    deadletters = "deadletters"


@_command
def results(
    kind: Annotated[OutputKind, typer.Argument(help="which output stream to show")] = OutputKind.results,
    broker: BrokerOpt = None,
    data_dir: DataDirOpt = None,
    count: Annotated[int, typer.Option("--count", "-n", metavar="N", min=1, help="how many, newest last")] = 20,
) -> None:
    """Show the newest audit results, alerts, task suggestions or dead letters.

    JSON lines from the Redis output streams, newest last. Without --broker, reads a running
    embedded worker's Redis."""
    import redis as redis_client

    from bias_audit.producers.redis_streams import read_recent

    from .run import resolve_broker

    settings = _settings(broker_url=broker, data_dir=data_dir)
    url = resolve_broker(settings)
    if url.startswith("pubsub://"):
        raise CommandError("results reads Redis streams; on Pub/Sub attach a subscription to "
                           f"{settings.result_topic}, {settings.alerts_topic}, {settings.tasks_topic} or "
                           f"{settings.deadletter_topic}")
    stream = {"results": settings.result_topic, "alerts": settings.alerts_topic, "tasks": settings.tasks_topic,
              "deadletters": settings.deadletter_topic}[kind.value]
    try:
        with redis_client.Redis.from_url(url, socket_connect_timeout=5) as client:
            documents = read_recent(client, stream, count)
    except redis_client.RedisError as error:
        raise CommandError(f"cannot read {stream} from {url}: {error}", exit_code=1) from None
    for data in documents:
        sys.stdout.write(data.decode("utf-8", errors="replace") + "\n")
    _say(f"{len(documents)} from {stream} on {url}")


@_command
def audit(
    file: Annotated[str, typer.Argument(metavar="FILE", help="JSONL file of events, or - for stdin")] = "-",
    window_sessions: WindowSessionsOpt = None,
    window_days: WindowDaysOpt = None,
    store: StoreOpt = None,
) -> None:
    """Audit JSONL events in-process, no broker: one JSON line out per line in.

    In input order: the audit result; for a bad line its dead letter (event_type
    bias.audit.deadletter); for a repeated event a bias.audit.duplicate notice. Alerts and bad
    lines are also named on stderr with their line number; with bad lines the exit code is 2.
    Records are written only with --store (a PostgreSQL URL or a directory)."""
    from .audit_file import audit_lines
    from .logging_setup import configure_logging

    settings = _settings(window_sessions=window_sessions, window_days=window_days, store_url=store)
    configure_logging("ERROR")  # bad lines are reported below, one line each
    if audit_lines(_lines(file), settings, file, sys.stdout, _say):
        raise typer.Exit(2)


def _postgres_store(store: str | None, needs: str) -> str:
    """The PostgreSQL store's URL for a command that `needs` one, its migrations checked."""
    from .store_setup import require_store_schema

    settings = _settings(store_url=store)
    if not settings.store_is_postgres:
        raise CommandError(f"{needs} a PostgreSQL store: pass --store postgresql://... or set BIAS_AUDIT_STORE_URL")
    url = settings.store_url or ""
    require_store_schema(url)
    return url


@contextmanager
def _store_url(store: str | None, data_dir: Path | None, needs: str, *, create: bool = False) -> Iterator[str]:
    """--store / BIAS_AUDIT_STORE_URL, else the data directory's embedded store (the one
    `worker` starts), held for the block; create: start one when there is none yet."""
    from .store_setup import embedded_store

    with embedded_store(_settings(store_url=store, data_dir=data_dir), create=create) as settings:
        yield _postgres_store(settings.store_url, needs)


class ExportKind(str, Enum):
    records = "records"
    interactions = "interactions"


@_command
def export(
    store: StoreOpt = None,
    tenant: Annotated[Optional[str], typer.Option(metavar="TENANT", help="only this tenant")] = None,
    since: Annotated[Optional[str], typer.Option(metavar="ISO", help="only sessions at or after this time, "
                                                 "e.g. 2026-11-01T00:00:00Z")] = None,
    kind: Annotated[ExportKind, typer.Option(help="records: the bias metric records of council sessions; "
                                             "interactions: the LLM interaction audits")] = ExportKind.records,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE", help="write here instead of stdout")] = None,
    data_dir: DataDirOpt = None,
) -> None:
    """Write the stored records as JSONL (the bias metric record contract).

    llm-council-core and `bias-audit report --input` read the output. Session by session in time
    order; memory stays flat however many there are. With no --store, the data directory's
    embedded store (the one `worker` starts)."""
    from .export import export_records, parse_since

    start = parse_since(since)
    with _store_url(store, data_dir, "export reads (JSONL stores are already in the export format)") as url:
        count = export_records(url, tenant=tenant, start=start, output=output,
                               interactions=kind is ExportKind.interactions)
    _say(f"exported {count} records" + (f" to {output}" if output else ""))


@_command(name="import")
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
    from bias_audit.storage.postgres_store import import_records

    missing = [str(path) for path in files if not path.exists()]
    if missing:
        raise CommandError(f"no such file or directory: {', '.join(missing)}")
    skipped: list[str] = []
    with _store_url(store, data_dir, "import writes to", create=True) as url:
        try:
            sessions, new = import_records(url, read_records(files, skipped=skipped))
        except ValueError as error:
            raise CommandError(str(error)) from None
        except psycopg.Error as error:
            raise CommandError(f"writing to the store at {redact(url)} failed: {reason_of(error)}", exit_code=1) from None
    _say(f"imported {new} new sessions of {sessions} read" + (f"; skipped {len(skipped)} unreadable lines "
                                                             f"(first: {skipped[0]})" if skipped else ""))


@_command
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
    with _store_url(store, data_dir, "retention works on") as url:
        try:
            done = apply_retention(url, anonymize_after_days=anonymize_after_days,
                                   aggregate_after_days=aggregate_after_days, dry_run=dry_run)
        except psycopg.Error as error:
            raise CommandError(f"retention on {redact(url)} failed: {reason_of(error)}", exit_code=1) from None
    for line in done.lines(dry_run):
        print(line)


class ReportFormat(str, Enum):
    text = "text"
    json = "json"
    csv = "csv"
    html = "html"


@_command
def report(
    paths: Annotated[Optional[list[str]], typer.Argument(metavar="PATH", help="more record files or directories",
                                                         show_default=False)] = None,
    inputs: Annotated[Optional[list[str]], typer.Option(
        "--input", "-i", metavar="PATH", help="JSONL record file, directory (all *.jsonl: every worker's file) or "
        "quoted glob; repeatable; llm-council-core's bias_metrics.jsonl is read too. Default: the data directory's store")] = None,
    format: Annotated[ReportFormat, typer.Option("--format", "-f", help="text (rich tables), json, csv or html")] = ReportFormat.text,
    sessions: Annotated[Optional[int], typer.Option(
        metavar="N", help="window: newest N sessions per tenant, 0 = all (default BIAS_AUDIT_WINDOW_SESSIONS, 100)")] = None,
    days: Annotated[Optional[float], typer.Option(
        metavar="DAYS",
        help="window: sessions within D days of the tenant's newest, 0 = no limit (default BIAS_AUDIT_WINDOW_DAYS, 30)")] = None,
    tenant: Annotated[Optional[str], typer.Option(metavar="TENANT", help="only this tenant (default: one section per tenant)")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", metavar=FLAG, help="every table: position effects, swapped "
                                          "pairs, timeline, trends, config changes (JSON: the chart points too)")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE", help="write here instead of stdout")] = None,
    redis: Annotated[Optional[str], typer.Option(
        "--redis", metavar="URL", help="report the live window kept in this Redis instead of stored records")] = None,
    data_dir: DataDirOpt = None,
    store: StoreOpt = None,
) -> None:
    """Cross-session bias report over stored records or the live window.

    Pooled length bias with CIs, length-controlled model scores, position effects, randomization
    balance, reviewer profiles, agreement, trends. With no input, reads what the worker
    stored in the data directory (its embedded PostgreSQL, else JSONL records). Memory follows the window (newest N sessions / D days per
    tenant), not the files."""
    from bias_audit.reports.build import build_report
    from bias_audit.reports.run import (default_sources, live_windows, store_reviews, store_rolled_up, store_windows,
                                       stored_windows, write_report)
    from bias_audit.storage.report_reader import collector_paused
    from bias_audit.two_processes import TwoProcesses

    split = TwoProcesses()  # a one-shot command: with two CPUs, halves of the work at once

    sources = [*(inputs or []), *(paths or [])]
    named = bool(sources or redis)
    # the settings are read when a value of theirs is needed (pydantic-settings' import is ~45 ms):
    # files named with both window limits need none
    configured = functools.cache(lambda: _settings(data_dir=data_dir, store_url=store))
    window_sessions = configured().window_sessions if sessions is None else (sessions or None)
    window_days = configured().window_days if days is None else (days or None)
    if window_sessions is not None and window_sessions < 0 or window_days is not None and window_days < 0:
        raise CommandError("--sessions and --days must be 0 (no limit) or positive")
    # where a store may be read: the one named, or with no input named the data directory's
    # (its embedded PostgreSQL, if a worker made one)
    found: Any = nullcontext(configured() if store is not None else None)
    if not named:
        from .store_setup import embedded_store

        found = embedded_store(configured(), create=False)
    rolled_up = reviews = None  # a store keeps what retention rolled up and people's reviews
    with collector_paused(kept=True), found as settings:  # a one-shot run whose objects all live to its end
        if settings is not None and settings.store_is_postgres:
            if named:
                raise CommandError("give one of --input files, --redis or --store, not several")
            url = _postgres_store(settings.store_url, "report reads")
            windows, stats = store_windows(url, tenant, window_sessions, window_days)
            rolled_up = store_rolled_up(url, tenant)
            reviews = store_reviews(url, tenant)
            sources = [redact(url)]
        elif redis:
            if sources:
                raise CommandError("give either --input files or --redis, not both")
            from .settings import check_broker_url

            check_broker_url(redis)
            windows, stats = live_windows(redis, configured().key_prefix, tenant, window_sessions, window_days)
            sources = [redis]
        else:
            sources = sources or default_sources(settings.records_dir)  # --store DIR: its records folder
            progress = (lambda total: _progress("reading records", total, in_bytes=True)) if sys.stderr.isatty() else None
            windows, stats = stored_windows(sources, tenant, window_sessions, window_days, progress, split)
        document = build_report(windows, stats, sources=sources, sessions=window_sessions, days=window_days,
                                rolled_up=rolled_up, reviews=reviews, split=split)
        write_report(document, format.value, output, verbose)
    if output is not None:
        _say(f"wrote {output}")
    _SKIP_TEARDOWN["on"] = True
    _SKIP_TEARDOWN["kept"] = (windows, document)  # freed by the exit, not one object at a time (~30 ms)


@_command
def calibrate(
    store: StoreOpt = None,
    tenant: Annotated[Optional[str], typer.Option(metavar="TENANT", help="only this tenant's reviews")] = None,
    min_reviews: Annotated[int, typer.Option(metavar="N", help="reviews a bias type needs before it is calibrated")] = 30,
    output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE", help="the calibration file to write")] = Path(
        "calibration.json"),
    data_dir: DataDirOpt = None,
) -> None:
    """Fit, per bias type, the probability that a reviewer confirms a flag from the analyzers'
    evidence (isotonic regression on the store's reviews).

    Prints the Brier score and reliability before and after on held-out reviews (one item in
    four), writes a versioned calibration file; point BIAS_AUDIT_CALIBRATION_FILE at it and
    bias_confidence_score means that probability (results carry calibration_version)."""
    import orjson

    from bias_audit.analysis.calibration import Reviewed, fit_calibration
    from bias_audit.storage.postgres_store import read_review_evidence

    if min_reviews < 2:
        raise CommandError("--min-reviews must be at least 2")
    with _store_url(store, data_dir, "calibrate reads reviews from") as url:
        rows = read_review_evidence(url, tenants=None if tenant is None else [tenant])
    if not rows:
        raise CommandError("no reviews with verdicts in the store yet: review flagged items first (/review)")
    calibration, report = fit_calibration([Reviewed(f"{t}/{a}", b, e, c) for t, a, b, e, c, *_ in rows], min_reviews)
    rows_out = []
    for entry in report:
        bins = "; ".join(f"{r['bin']}: {r['n']}, {r['predicted']:.2f} -> {r['observed']:.2f}"
                         for r in entry.get("reliability_after", []))
        rows_out.append((entry["bias_type"], str(entry["reviews"]),
                         "yes" if entry["calibrated"] else f"no (< {min_reviews})",
                         str(entry.get("brier_before", "-")), str(entry.get("brier_after", "-")), bins or "-"))
    _print_table(f"calibration {calibration.version}: held-out reviews (one item in four)",
                 ("bias type", "reviews", "calibrated", "Brier before", "Brier after",
                  "reliability after (bin: n, predicted -> observed)"), rows_out)
    output.write_bytes(orjson.dumps({**calibration.to_document(), "report": report}, option=orjson.OPT_INDENT_2))
    _say(f"wrote {output}: {len(calibration.types)} bias types calibrated; set BIAS_AUDIT_CALIBRATION_FILE={output}")


def _print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A command's summary table on stdout (wide: the reliability bins run long)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    Console(width=160).print(table)


class LearnFeatures(str, Enum):
    auto = "auto"
    minilm = "minilm"
    ngrams = "ngrams"


@_command
def learn(
    store: StoreOpt = None,
    tenant: Annotated[Optional[str], typer.Option(metavar="TENANT", help="train on this tenant's reviews (and apply "
                                                  "to its answers only); default: every tenant's")] = None,
    min_reviews: Annotated[int, typer.Option(metavar="N", help="reviews a bias type needs (5 of each verdict)")] = 40,
    features: Annotated[LearnFeatures, typer.Option(
        help="minilm: sentence embeddings (the embedding extra); ngrams: character n-grams; auto: minilm when "
             "the extra is installed")] = LearnFeatures.auto,
    output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE", help="the model file to write")] = Path(
        "learned.json"),
    data_dir: DataDirOpt = None,
) -> None:
    """Train a detector on the tenant's own reviews: per bias type, the answers people
    confirmed against those they dismissed (character n-gram TF-IDF + logistic regression).

    Prints cross-validated AUC and recall at 10% false positives beside the lexicon detectors'
    on the same folds, and keeps a type's model only when it beats them. Point
    BIAS_AUDIT_LEARNED_DETECTOR_FILE at the file: adopted types' confidence becomes the model's
    probability that a reviewer confirms (results carry its version)."""
    import orjson

    try:
        from bias_audit.analysis.learned_detector import LabeledAnswer, claims_of, train
        import sklearn  # noqa: F401  # the `learn` extra
    except ImportError:
        raise CommandError("learning needs scikit-learn: pip install 'bias-audit[learn]'") from None
    from bias_audit.storage.postgres_store import read_review_evidence

    if min_reviews < 10:
        raise CommandError("--min-reviews must be at least 10")
    with _store_url(store, data_dir, "learn reads reviews from") as url:
        rows = read_review_evidence(url, tenants=None if tenant is None else [tenant])
    # the claim each reviewer judged: the sentences the type's findings point at
    answers = [LabeledAnswer(b, claims_of(text, findings, b), e, c) for _, _, b, e, c, text, findings in rows if text]
    if not answers:
        raise CommandError("no reviewed answers with their text in the store (review flagged items first; "
                           "retention removes the text after its anonymization age)")
    embed = None
    if features is not LearnFeatures.ngrams:
        try:
            from bias_audit.embeddings.minilm import minilm_embedder

            embed = minilm_embedder()
        except Exception as error:  # ImportError, EmbeddingsUnavailable: the extra is absent or broken
            if features is LearnFeatures.minilm:
                raise CommandError(f"--features minilm needs the embedding extra: {error}") from None
    detector, report = train(answers, min_reviews=min_reviews, tenant_id=tenant, embed=embed)
    _print_table(f"learned detector {detector.version}: {'tenant ' + tenant if tenant else 'every tenant'}, "
                 "cross-validated",
                 ("bias type", "reviews", "AUC learned / lexicons", "recall at 10% FP learned / lexicons", "adopted"),
                 [(entry["bias_type"], str(entry["reviews"]),
                   f"{entry['auc']:.3f} / {entry['auc_lexicon']:.3f}" if "auc" in entry else "-",
                   f"{entry['recall_at_10_fpr']:.0%} / {entry['recall_at_10_fpr_lexicon']:.0%}" if "auc" in entry
                   else "-", "yes" if entry["adopted"] else f"no{': ' + entry['reason'] if 'reason' in entry else ''}")
                  for entry in report])
    output.write_bytes(orjson.dumps({**detector.to_document(), "report": report}))
    _say(f"wrote {output}: {len(detector.types)} bias types adopted; set BIAS_AUDIT_LEARNED_DETECTOR_FILE={output}")


class SandboxFormat(str, Enum):
    text = "text"
    json = "json"
    html = "html"


@_command
def sandbox(
    candidate: Annotated[Path, typer.Option(metavar="FILE", help="the candidate's answers: llm.responses events (JSONL)")],
    baseline: Annotated[Optional[Path], typer.Option(metavar="FILE", help="the baseline's answers: llm.responses "
                                                     "events (JSONL); or use --store")] = None,
    store: StoreOpt = None,
    tenant: Annotated[Optional[str], typer.Option(metavar="TENANT", help="with --store: the baseline's tenant")] = None,
    model: Annotated[Optional[str], typer.Option(metavar="MODEL", help="with --store: only this llm_model")] = None,
    since: Annotated[Optional[str], typer.Option(metavar="ISO", help="with --store: answers at or after this time")] = None,
    until: Annotated[Optional[str], typer.Option(metavar="ISO", help="with --store: answers before this time")] = None,
    format: Annotated[SandboxFormat, typer.Option("--format", "-f", help="text, json or html")] = SandboxFormat.text,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE", help="write here instead of stdout")] = None,
) -> None:
    """Compare a candidate model or prompt with a baseline before it ships.

    Per bias type: the flagged rate on each side, the difference with its 95% CI, a test (paired
    McNemar when the answers pair by audit_id or query_hash, else Fisher's exact) and a verdict
    after Holm's correction. Exit 3 when a type is worse (a CI gate), 0 otherwise, 2 on bad input."""
    from bias_audit.storage.postgres_store import save_sandbox_run

    from .export import parse_since
    from .logging_setup import configure_logging
    from .sandbox import audited_file, sandbox_document, stored_answers, worse, write

    configure_logging("ERROR")  # a bad line is the command's one-line error, not a log record
    if (baseline is None) == (store is None and not os.environ.get("BIAS_AUDIT_STORE_URL")):
        raise CommandError("give the baseline as --baseline FILE or --store URL --tenant T, one of them")
    settings = _settings()
    if baseline is not None:
        document = sandbox_document(audited_file(baseline, settings, "baseline"),
                                    audited_file(candidate, settings, "candidate"))
    else:
        if tenant is None:
            raise CommandError("--store needs --tenant: the baseline is one tenant's answers")
        with _store_url(store, None, "the sandbox's baseline reads") as url:
            base = stored_answers(url, tenant=tenant, model=model, since=parse_since(since), until=parse_since(until, "--until"))
            document = sandbox_document(base, audited_file(candidate, settings, "candidate"))
            # kept beside the history it was measured against: readable in GraphQL (sandboxRuns)
            document["run_id"] = save_sandbox_run(url, tenant=tenant, document=document, worse=worse(document),
                                                  baseline={"model": model, "since": since, "until": until})
    if output is None:
        write(document, format.value, sys.stdout)
    else:
        with open(output, "w", encoding="utf-8") as handle:
            write(document, format.value, handle)
        _say(f"wrote {output}")
    if worse(document):
        raise typer.Exit(3)


class OrdersDesign(str, Enum):
    williams = "williams"
    random = "random"


class OrdersFormat(str, Enum):
    text = "text"
    json = "json"


def _names(values: list[str] | None) -> list[str]:
    """Repeated options and comma-separated lists both: --models a,b --models c."""
    return [name.strip() for value in values or [] for name in value.split(",") if name.strip()]


@_command
def orders(
    models: Annotated[list[str], typer.Option("--models", "-m", metavar="M1,M2,...",
                                              help="the candidates to order (comma-separated or repeated)")],
    reviewers: Annotated[list[str], typer.Option("--reviewers", "-r", metavar="R1,R2,...",
                                                 help="the reviewers, each getting its own order")],
    seed: Annotated[int, typer.Option(metavar="S", help="the same seed gives the same orders")],
    design: Annotated[OrdersDesign, typer.Option(help="williams: balanced Latin square (each model at each "
                                                 "position and after each other model equally); random")] = OrdersDesign.williams,
    sessions: Annotated[int, typer.Option(metavar="N", help="sessions to plan, 1-10000")] = 1,
    format: Annotated[OrdersFormat, typer.Option("--format", "-f", help="text or json")] = OrdersFormat.text,
) -> None:
    """Per-reviewer presentation orders, deterministic for a seed.

    Williams design: reviewers take consecutive rows of a balanced Latin square, session after
    session, so every model is shown at every position, and right after every other model, equally
    often per cycle of rows (n rows for n models when n is even, 2n when odd). JSON carries each
    review's label_to_model, ready for the council event. The report's randomization check
    recognises the design."""
    import json

    from bias_audit.analysis.orders import OrdersError, orders_document

    try:
        document = orders_document(_names(models), _names(reviewers), seed, design.value, sessions)
    except OrdersError as error:
        raise CommandError(str(error)) from None
    if format is OrdersFormat.json:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    for o in document["orders"]:  # type: ignore[attr-defined]
        sys.stdout.write(f"session {o['session']}  {o['reviewer']}: {' > '.join(o['order'])}\n")


@_command
def demo(
    input: Annotated[Optional[Path], typer.Option(
        "--input", "-i", metavar="FILE", help="JSONL council sessions (default: the shipped samples)")] = None,
) -> None:
    """End-to-end run on an embedded Redis and PostgreSQL over samples with known biases.

    Shipped council sessions and LLM responses with injected biases go through a real worker;
    exits 1 if one is missed or a bystander is flagged."""
    from .demo import run_demo

    raise typer.Exit(run_demo(input))


@_command
def schemas(
    check: Annotated[bool, typer.Option("--check", metavar=FLAG, help="exit 1 if the committed schemas drifted")] = False,
    out: Annotated[Optional[Path], typer.Option(metavar="DIR", help="directory (default: the package's schemas/json)")] = None,
) -> None:
    """Write the contract's JSON Schemas and AsyncAPI document, or check them."""
    from bias_audit.schemas.export import SCHEMA_DIR, drifted_schemas, write_schemas

    directory = out or SCHEMA_DIR
    if check:
        drifted = drifted_schemas(directory)
        if drifted:
            raise CommandError(f"drifted from the models: {', '.join(drifted)}; run `bias-audit schemas`", exit_code=1)
        print("schemas up to date")
        return
    for path in write_schemas(directory):
        print(path)


# Set during one main() call by a one-shot command whose objects live to its end (a report's
# windows: ~400 MB at 10,000 sessions): the script then exits without freeing them one by one,
# ~0.2 s of such a run. A report run in-process (typer's CliRunner) sets it outside main: main
# clears it first, so only its own command decides.
_SKIP_TEARDOWN: dict[str, Any] = {"on": False}


def _exit(code: int) -> NoReturn:
    if _SKIP_TEARDOWN["on"]:
        import atexit

        atexit._run_exitfuncs()  # what a normal exit runs first (logging's final flush among them)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def main(argv: list[str] | None = None) -> NoReturn:
    """The `bias-audit` script: usage errors as one line naming the fix, not a boxed panel."""
    _SKIP_TEARDOWN.update(on=False, kept=None)
    try:
        code = app(args=argv, prog_name="bias-audit", standalone_mode=False)
    except typer.Abort:
        _say("aborted")
        code = 130
    except typer.TyperException as error:  # click's usage errors
        context = getattr(error, "ctx", None)
        if type(error).__name__ == "NoArgsIsHelpError":  # bare `bias-audit`: its help
            sys.stdout.write(error.format_message() + "\n")
            code = 0
        else:
            hint = f" (see `{context.command_path} --help`)" if context is not None else ""
            _say(f"error: {error.format_message()}{hint}")
            code = getattr(error, "exit_code", 2)
    except Exception as error:  # a bug or an unforeseen failure: one line; the traceback on request
        if os.environ.get("BIAS_AUDIT_DEBUG"):
            raise
        _say(f"error: {type(error).__name__}: {error} (set BIAS_AUDIT_DEBUG=1 for the traceback)")
        code = 1
    _exit(code if isinstance(code, int) else 0)
