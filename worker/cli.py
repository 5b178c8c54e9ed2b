"""`bias-audit`: worker, setup, publish, audit, report, demo, schemas.

Exit codes: 0 ok, 2 usage or input error (one line saying why), 1 anything else.
"""

from __future__ import annotations

import asyncio
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import orjson
import typer
from pydantic import ValidationError
from rich.console import Console


from .settings import Settings

app = typer.Typer(
    help="Audit bias in LLM councils and LLM responses, live on Redis Streams or Google Pub/Sub, or over a JSONL file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True)

BrokerOpt = Annotated[Optional[str], typer.Option(
    "--broker", help="redis://HOST:PORT/DB or pubsub://PROJECT (honours PUBSUB_EMULATOR_HOST); env BIAS_AUDIT_BROKER_URL")]
RedisOpt = Annotated[Optional[str], typer.Option(
    "--redis", help="Redis for the windows (required with pubsub://; default: the broker's Redis); env BIAS_AUDIT_REDIS_URL")]
DataDirOpt = Annotated[Optional[Path], typer.Option("--data-dir", help="records and embedded Redis (env BIAS_AUDIT_DATA_DIR)")]


def fail(message: str, code: int = 2) -> None:
    err.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)  # one line, never wrapped
    raise typer.Exit(code)


def load_settings(**overrides) -> Settings:
    values = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**values)
    except ValidationError as error:
        from consumers.envelope import describe_validation_error

        fail(f"configuration: {describe_validation_error(error)}")


def resolve_broker(settings: Settings) -> str:
    if settings.broker_url:
        return settings.broker_url
    url_file = settings.data_dir / "redis" / "redis.url"
    if url_file.exists():
        return url_file.read_text().strip()
    fail(f"no broker: pass --broker redis://..., set BIAS_AUDIT_BROKER_URL, or start `bias-audit worker` "
         f"(its embedded Redis is found through {url_file})")


def check_broker_url(url: str) -> None:
    if url.startswith("pubsub://"):
        if not url.removeprefix("pubsub://").strip("/"):
            fail("pubsub:// needs a project: pubsub://PROJECT")
        return
    if not url.startswith(("redis://", "rediss://", "unix://")):
        fail(f"unsupported broker URL {url!r}: use redis://HOST:PORT/DB or pubsub://PROJECT")


def check_pubsub_settings(settings: Settings) -> None:
    if not settings.redis_url:
        fail("pubsub:// keeps its windows and exactly-once markers in Redis: pass --redis redis://... "
             "or set BIAS_AUDIT_REDIS_URL (shared by all workers)")
    if not settings.redis_url.startswith(("redis://", "rediss://", "unix://")):
        fail(f"unsupported Redis URL {settings.redis_url!r}: use redis://HOST:PORT/DB")


@app.command()
def worker(
    broker: BrokerOpt = None,
    redis: RedisOpt = None,
    data_dir: DataDirOpt = None,
    consumer: Annotated[Optional[str], typer.Option(help="consumer name in the group (default host-pid)")] = None,
    consent_level: Annotated[Optional[int], typer.Option(help="default consent 0-4 (env BIAS_AUDIT_CONSENT_LEVEL)")] = None,
    window_sessions: Annotated[Optional[int], typer.Option(help="window: last N sessions per tenant")] = None,
    window_days: Annotated[Optional[float], typer.Option(help="window: last D days per tenant")] = None,
    ops_port: Annotated[Optional[int], typer.Option(help="/healthz /readyz /metrics port (default 9464; 0 any, -1 off)")] = None,
    consume: Annotated[Optional[str], typer.Option(
        help="all (default): council sessions and LLM responses; council: council.sessions only; responses: "
             "llm.responses only (one per deployment scales each on its own backlog). Env BIAS_AUDIT_CONSUME")] = None,
) -> None:
    """Run the stream worker on Redis Streams or Pub/Sub. With no broker configured, starts an
    embedded Redis in the data directory. SIGTERM drains the batch in hand, then exits."""
    from .logging_setup import configure_logging

    settings = load_settings(broker_url=broker, redis_url=redis, data_dir=data_dir, consumer_name=consumer,
                             consent_level=consent_level, window_sessions=window_sessions, window_days=window_days,
                             ops_port=ops_port, consume=consume)
    configure_logging(settings.log_level)
    if settings.broker_url:
        check_broker_url(settings.broker_url)
    if settings.transport == "pubsub":
        check_pubsub_settings(settings)
    embedded = None
    if not settings.broker_url:
        from .embedded_redis import EmbeddedRedis

        embedded = EmbeddedRedis(settings.data_dir / "redis").start()
        settings = settings.model_copy(update={"broker_url": embedded.url})
        err.print(f"embedded Redis at {embedded.url} (data in {settings.data_dir / 'redis'})")
    from . import composition
    from .gc_tuning import tune_gc

    async def serve() -> None:
        build = composition.pubsub_worker if settings.transport == "pubsub" else composition.redis_worker
        service = build(settings)
        tune_gc()  # after imports and wiring: the startup heap leaves every collection
        await service.run()

    from embeddings.minilm import EmbeddingsUnavailable
    from lexicons.load import LexiconError

    try:
        asyncio.run(serve())
    except (LexiconError, EmbeddingsUnavailable) as error:
        fail(str(error))
    except Exception as error:
        if settings.transport == "pubsub":
            from google.api_core.exceptions import NotFound

            if isinstance(error, NotFound):
                fail(f"subscription not found ({error.message}); "
                     f"run `bias-audit setup --broker {settings.broker_url}` first", code=1)
        raise
    finally:
        if embedded:
            embedded.stop()


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="listen address")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="listen port")] = 8080,
    data_dir: DataDirOpt = None,
    consent_level: Annotated[Optional[int], typer.Option(help="default consent 0-4 (env BIAS_AUDIT_CONSENT_LEVEL)")] = None,
) -> None:
    """Serve the HTTP API: POST /analyze-bias (an LLM response event), POST /audit-session (a
    council session event), /healthz, /readyz, /metrics; the OpenAPI document at /openapi.json
    and its pages at /docs. Errors are problem+json with a one-line reason."""
    import uvicorn

    from embeddings.minilm import EmbeddingsUnavailable
    from lexicons.load import LexiconError

    from .composition import api_app
    from .logging_setup import configure_logging

    settings = load_settings(data_dir=data_dir, consent_level=consent_level)
    configure_logging(settings.log_level)
    try:
        application = api_app(settings)
    except (LexiconError, EmbeddingsUnavailable) as error:
        fail(str(error))
    err.print(f"bias-audit API on http://{host}:{port} (OpenAPI at /openapi.json)")
    uvicorn.run(application, host=host, port=port, log_level="warning")


@app.command()
def setup(broker: BrokerOpt = None, data_dir: DataDirOpt = None) -> None:
    """Create the input streams and consumer groups (from the stream's start), or the Pub/Sub
    topics and subscriptions (with the dead-letter and retry policies). Idempotent."""
    settings = load_settings(broker_url=broker, data_dir=data_dir)
    url = resolve_broker(settings)
    check_broker_url(url)
    if url.startswith("pubsub://"):
        from .pubsub_admin import ensure_pubsub

        try:
            for line in ensure_pubsub(settings.model_copy(update={"broker_url": url})):
                print(line)
        except Exception as error:  # google.api_core errors: unreachable, permission denied
            fail(f"Pub/Sub setup failed: {error.__class__.__name__}: {getattr(error, 'message', error)}", code=1)
        return

    from redis.asyncio import Redis

    from .redis_worker import ensure_group

    async def run() -> None:
        client = Redis.from_url(url)
        try:
            for stream in (settings.input_topic, settings.llm_topic):
                created = await ensure_group(client, stream, settings.group)
                print(f"{stream}: group {settings.group} {'created' if created else 'already exists'}")
        finally:
            await client.aclose()

    try:
        asyncio.run(run())
    except OSError as error:
        fail(f"cannot reach {url}: {error}", code=1)


def _iter_lines(source: str):
    """(line number, bytes) of non-blank lines, streamed from a file or stdin."""
    if source == "-":
        handle = sys.stdin.buffer
    else:
        path = Path(source)
        if not path.is_file():
            fail(f"{source}: no such file")
        handle = open(path, "rb")
    with handle:
        for number, line in enumerate(handle, 1):
            line = line.rstrip(b"\r\n")
            if line.strip():
                yield number, line


def _chunks(lines, size: int = 500):
    chunk = []
    for item in lines:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


@app.command()
def publish(
    file: Annotated[str, typer.Argument(help="JSONL file of events, or - for stdin")],
    broker: BrokerOpt = None,
    data_dir: DataDirOpt = None,
    topic: Annotated[Optional[str], typer.Option(help="stream name (default: by event kind)")] = None,
) -> None:
    """Publish JSONL events in the contract's wire format (field `data` = the JSON document)."""
    from producers.wire import wire_fields

    from consumers.envelope import classify

    lines = list(_iter_lines(file))  # all read and checked first: a bad line publishes nothing
    settings = load_settings(broker_url=broker, data_dir=data_dir)
    url = resolve_broker(settings)
    check_broker_url(url)
    entries = []
    for number, line in lines:
        try:
            document = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            fail(f"line {number}: not valid JSON ({error}); nothing was published")
        kind = classify(document)
        stream = topic or (settings.llm_topic if kind == "llm.response" else settings.input_topic)
        fields = wire_fields(line, event_type=kind, tenant_id=document.get("tenant_id") if isinstance(document, dict) else None,
                             trace_id=document.get("trace_id") if isinstance(document, dict) else None)
        entries.append((stream, fields))
    if url.startswith("pubsub://"):
        _publish_pubsub(url.removeprefix("pubsub://").strip("/"), entries)
    else:
        _publish_redis(url, entries)
    err.print(f"published {len(entries)} events")


def _publish_redis(url: str, entries: list) -> None:
    import redis
    from rich.progress import Progress

    client = redis.Redis.from_url(url)
    try:
        with Progress(console=err, transient=True) as progress:
            task = progress.add_task("publishing", total=len(entries))
            for start in range(0, len(entries), 500):
                pipe = client.pipeline(transaction=False)
                for stream, fields in entries[start:start + 500]:
                    pipe.xadd(stream, fields)
                pipe.execute()
                progress.update(task, advance=len(entries[start:start + 500]))
    except redis.ConnectionError as error:
        fail(f"cannot reach {url}: {error}", code=1)


def _publish_pubsub(project: str, entries: list) -> None:
    from google.cloud import pubsub_v1
    from rich.progress import Progress

    from producers.pubsub import message_parts

    publisher = pubsub_v1.PublisherClient()
    try:
        with Progress(console=err, transient=True) as progress:
            task = progress.add_task("publishing", total=len(entries))
            for start in range(0, len(entries), 500):
                futures = []
                for topic, fields in entries[start:start + 500]:
                    data, attributes = message_parts(fields)
                    futures.append(publisher.publish(publisher.topic_path(project, topic), data, **attributes))
                for future in futures:
                    future.result(timeout=60)
                progress.update(task, advance=len(futures))
    except Exception as error:  # google.api_core errors: NotFound topic, unreachable
        fail(f"publishing to Pub/Sub project {project} failed: {error.__class__.__name__}: "
             f"{getattr(error, 'message', error)} (did you run `bias-audit setup`?)", code=1)
    finally:
        publisher.stop()


@app.command()
def audit(
    file: Annotated[str, typer.Argument(help="JSONL file of events, or - for stdin")] = "-",
    window_sessions: Annotated[Optional[int], typer.Option(help="window: last N sessions per tenant")] = None,
    window_days: Annotated[Optional[float], typer.Option(help="window: last D days per tenant")] = None,
) -> None:
    """Audit JSONL events in-process (no broker) and print one result per line, in input order.

    Alerts (firing / resolved) and bad lines are reported on stderr with their line number;
    with bad lines the exit code is 2."""
    from consumers.envelope import Delivery

    from .composition import in_process_consumer
    from .logging_setup import configure_logging

    settings = load_settings(window_sessions=window_sessions, window_days=window_days)
    configure_logging("ERROR")  # bad lines are reported below, one line each
    consumer = in_process_consumer(settings)
    problems = 0
    out = sys.stdout

    async def run() -> None:
        nonlocal problems
        for chunk in _chunks(_iter_lines(file)):  # memory bounded by the chunk, not the file
            deliveries = [Delivery(delivery_id=f"line-{n}", body=line, source_topic=file) for n, line in chunk]
            for (number, _), outcome in zip(chunk, await consumer.process(deliveries)):
                if outcome.result is not None:
                    out.write(outcome.result.model_dump_json() + "\n")
                    for alert in outcome.alerts or ():
                        err.print(f"line {number}: alert {alert.status}: {alert.alert_type}: {alert.message}",
                                  highlight=False, markup=False, soft_wrap=True)
                elif outcome.dead_letter is not None:
                    problems += 1
                    err.print(f"line {number}: {outcome.dead_letter.error}", highlight=False, markup=False)
                else:
                    err.print(f"line {number}: duplicate session, counted once", highlight=False, markup=False)

    asyncio.run(run())
    out.flush()
    if problems:
        raise typer.Exit(2)


class ReportFormat(str, Enum):
    text = "text"
    json = "json"
    csv = "csv"
    html = "html"


PROGRESS_FROM_BYTES = 32 * 1024 * 1024  # smaller inputs finish before a bar would help


@app.command()
def report(
    paths: Annotated[Optional[list[str]], typer.Argument(help="more record files or directories", show_default=False)] = None,
    inputs: Annotated[Optional[list[str]], typer.Option(
        "--input", "-i", help="JSONL record file, directory (all *.jsonl: every worker's file) or quoted glob; "
        "repeatable; llm-council-core's bias_metrics.jsonl is read too")] = None,
    format: Annotated[ReportFormat, typer.Option("--format", "-f", help="text (rich tables), json, csv or html")] = ReportFormat.text,
    sessions: Annotated[Optional[int], typer.Option(
        help="window: newest N sessions per tenant, 0 = all (default BIAS_AUDIT_WINDOW_SESSIONS, 100)")] = None,
    days: Annotated[Optional[float], typer.Option(
        help="window: sessions within D days of the tenant's newest, 0 = no limit (default BIAS_AUDIT_WINDOW_DAYS, 30)")] = None,
    tenant: Annotated[Optional[str], typer.Option(help="only this tenant (default: one section per tenant)")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="every table: position effects, swapped pairs, "
                                          "timeline, trends, config changes (JSON: the chart points too)")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="write here instead of stdout")] = None,
    redis: Annotated[Optional[str], typer.Option(
        "--redis", help="report the live window kept in this Redis instead of stored records")] = None,
) -> None:
    """Cross-session bias report: pooled length bias with CIs, length-controlled model scores,
    position effects, randomization balance, reviewer profiles, agreement, trends.

    Reads the window (newest N sessions / D days per tenant) while streaming the files, so
    memory follows the window, not the files."""
    from storage.report_reader import collector_paused

    settings = load_settings()
    window_sessions = settings.window_sessions if sessions is None else (sessions or None)
    window_days = settings.window_days if days is None else (days or None)
    if window_sessions is not None and window_sessions < 0 or window_days is not None and window_days < 0:
        fail("--sessions and --days must be 0 (no limit) or positive")
    sources = [*(inputs or []), *(paths or [])]
    with collector_paused():  # a one-shot run whose objects all live to its end
        _report(sources, redis, tenant, window_sessions, window_days, format, output, verbose, settings.key_prefix)


def _report(sources: list[str], redis: str | None, tenant: str | None, window_sessions: int | None,
            window_days: float | None, format: ReportFormat, output: Path | None, verbose: bool, key_prefix: str) -> None:
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    from reports.build import build_report
    from storage.report_reader import InputError, WindowReader, expand_inputs

    if redis:
        if sources:
            fail("give either --input files or --redis, not both")
        windows, stats = _live_windows(redis, key_prefix, tenant, window_sessions, window_days)
        sources = [redis]
    else:
        if not sources:
            fail("no input: pass --input PATH (a records file or directory), or --redis URL for the live window")
        try:
            files = expand_inputs(sources)
            reader = WindowReader(sessions=window_sessions, days=window_days, tenant=tenant)
            total = sum(f.stat().st_size for f in files)
            if total >= PROGRESS_FROM_BYTES:
                with Progress("reading records", BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                              console=err, transient=True) as progress:
                    task = progress.add_task("read", total=total)
                    reader.read(files, lambda n: progress.advance(task, n))
            else:
                reader.read(files)
        except InputError as error:
            fail(str(error))
        windows, stats = reader.windows(), reader.stats
    document = build_report(windows, stats, sources=sources, sessions=window_sessions, days=window_days)
    _write_report(document, format, output, verbose)


def _live_windows(url: str, prefix: str, tenant: str | None, sessions: int | None, days: float | None):
    from redis import Redis
    from redis.exceptions import RedisError

    from analysis.window_cells import window_cells
    from storage.report_reader import ReadStats, TenantWindows, window_bounds
    from windows.redis_window import read_live_windows

    check_broker_url(url)
    try:
        client = Redis.from_url(url, socket_connect_timeout=5)
        live = read_live_windows(client, prefix, tenant)
    except RedisError as error:
        fail(f"reading the live window from {url} failed: {error}", code=1)
    stats = ReadStats(sessions=sum(len(d) for d in live.values()))
    windows = []
    for name, digests in sorted(live.items()):
        if not digests:  # counted before digests were kept (an older worker)
            continue
        first_previous, first = window_bounds([d.ts_ms for d in digests], digests[-1].ts_ms, sessions, days)
        windows.append(TenantWindows(name, window_cells(digests[first_previous:]), first - first_previous))
    return windows, stats


def _write_report(document, format: ReportFormat, output: Path | None, verbose: bool) -> None:
    import io

    from reports.csv_out import render_csv
    from reports.html import render_html
    from reports.text import render_text

    if format is ReportFormat.json:
        exclude = None if verbose else {"tenants": {"__all__": {"length_points"}}}
        text = document.model_dump_json(indent=2, exclude=exclude) + "\n"
    elif format is ReportFormat.csv:
        buffer = io.StringIO()
        render_csv(document, buffer)
        text = buffer.getvalue()
    elif format is ReportFormat.html:
        text = render_html(document)
    else:
        if output is None:
            render_text(document, Console(), verbose=verbose)
            return
        buffer = io.StringIO()
        render_text(document, Console(file=buffer, width=80, force_terminal=False), verbose=verbose)
        text = buffer.getvalue()
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as error:
        fail(f"cannot write {output}: {error.strerror}", code=1)
    err.print(f"wrote {output}", highlight=False)


@app.command()
def demo(
    sessions: Annotated[Optional[Path], typer.Option(help="JSONL sessions (default: the shipped samples)")] = None,
) -> None:
    """End-to-end run on an embedded Redis with shipped sample sessions that carry known biases."""
    from .demo import run_demo

    raise typer.Exit(run_demo(sessions))


@app.command()
def schemas(
    check: Annotated[bool, typer.Option("--check", help="exit 1 if the committed schemas drifted")] = False,
    out: Annotated[Optional[Path], typer.Option(help="directory (default: the package's schemas/json)")] = None,
) -> None:
    """Write the contract's JSON Schemas (or check the committed ones)."""
    from schemas.export import SCHEMA_DIR, drifted_schemas, write_schemas

    directory = out or SCHEMA_DIR
    if check:
        drifted = drifted_schemas(directory)
        if drifted:
            err.print(f"drifted from the models: {', '.join(drifted)}; run `bias-audit schemas`")
            raise typer.Exit(1)
        print("schemas up to date")
        return
    for path in write_schemas(directory):
        print(path)


if __name__ == "__main__":  # python -m worker.cli
    app()
