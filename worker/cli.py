"""`bias-audit`: worker, setup, publish, audit, demo, schemas.

Exit codes: 0 ok, 2 usage or input error (one line saying why), 1 anything else.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, Optional

import orjson
import typer
from pydantic import ValidationError
from rich.console import Console

from consumers.council import classify
from consumers.envelope import Delivery, describe_validation_error

from .settings import Settings

app = typer.Typer(
    help="Audit bias in LLM councils and LLM responses, live on Redis Streams or over a JSONL file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True)

BrokerOpt = Annotated[Optional[str], typer.Option("--broker", help="redis://HOST:PORT/DB (env BIAS_AUDIT_BROKER_URL)")]
DataDirOpt = Annotated[Optional[Path], typer.Option("--data-dir", help="records and embedded Redis (env BIAS_AUDIT_DATA_DIR)")]


def fail(message: str, code: int = 2) -> None:
    err.print(f"[red]error:[/red] {message}", highlight=False)
    raise typer.Exit(code)


def load_settings(**overrides) -> Settings:
    values = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**values)
    except ValidationError as error:
        fail(f"configuration: {describe_validation_error(error)}")


def resolve_broker(settings: Settings) -> str:
    if settings.broker_url:
        return settings.broker_url
    url_file = settings.data_dir / "redis" / "redis.url"
    if url_file.exists():
        return url_file.read_text().strip()
    fail(f"no broker: pass --broker redis://..., set BIAS_AUDIT_BROKER_URL, or start `bias-audit worker` "
         f"(its embedded Redis is found through {url_file})")


def check_redis_url(url: str) -> None:
    if not url.startswith(("redis://", "rediss://", "unix://")):
        if url.startswith("pubsub://"):
            fail("the Pub/Sub transport is not available in this version; use redis://")
        fail(f"unsupported broker URL {url!r}: use redis://HOST:PORT/DB")


@app.command()
def worker(
    broker: BrokerOpt = None,
    data_dir: DataDirOpt = None,
    consumer: Annotated[Optional[str], typer.Option(help="consumer name in the group (default host-pid)")] = None,
    consent_level: Annotated[Optional[int], typer.Option(help="default consent 0-4 (env BIAS_AUDIT_CONSENT_LEVEL)")] = None,
    window_sessions: Annotated[Optional[int], typer.Option(help="window: last N sessions per tenant")] = None,
    window_days: Annotated[Optional[float], typer.Option(help="window: last D days per tenant")] = None,
) -> None:
    """Run the stream worker. With no broker configured, starts an embedded Redis in the data directory."""
    from .composition import redis_worker
    from .embedded_redis import EmbeddedRedis
    from .logging_setup import configure_logging

    settings = load_settings(broker_url=broker, data_dir=data_dir, consumer_name=consumer,
                             consent_level=consent_level, window_sessions=window_sessions, window_days=window_days)
    configure_logging(settings.log_level)
    embedded = None
    if not settings.broker_url:
        embedded = EmbeddedRedis(settings.data_dir / "redis").start()
        settings = settings.model_copy(update={"broker_url": embedded.url})
        err.print(f"embedded Redis at {embedded.url} (data in {settings.data_dir / 'redis'})")
    check_redis_url(settings.broker_url)
    from .gc_tuning import tune_gc

    async def serve() -> None:
        service = redis_worker(settings)
        tune_gc()  # after imports and wiring: the startup heap leaves every collection
        await service.run()

    try:
        asyncio.run(serve())
    finally:
        if embedded:
            embedded.stop()


@app.command()
def setup(broker: BrokerOpt = None, data_dir: DataDirOpt = None) -> None:
    """Create the input streams and consumer groups (from the stream's start). Idempotent."""
    from redis.asyncio import Redis

    from .redis_worker import ensure_group

    settings = load_settings(broker_url=broker, data_dir=data_dir)
    url = resolve_broker(settings)
    check_redis_url(url)

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
    import redis
    from rich.progress import Progress

    from producers.redis_streams import wire_fields

    lines = list(_iter_lines(file))  # all read and checked first: a bad line publishes nothing
    settings = load_settings(broker_url=broker, data_dir=data_dir)
    url = resolve_broker(settings)
    check_redis_url(url)
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
    err.print(f"published {len(entries)} events")


@app.command()
def audit(
    file: Annotated[str, typer.Argument(help="JSONL file of events, or - for stdin")] = "-",
    window_sessions: Annotated[Optional[int], typer.Option(help="window: last N sessions per tenant")] = None,
    window_days: Annotated[Optional[float], typer.Option(help="window: last D days per tenant")] = None,
) -> None:
    """Audit JSONL events in-process (no broker) and print one result per line, in input order.

    Bad lines are reported on stderr with their line number; the exit code is then 2."""
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
                elif outcome.dead_letter is not None:
                    problems += 1
                    err.print(f"line {number}: {outcome.dead_letter.error}", highlight=False, markup=False)
                else:
                    err.print(f"line {number}: duplicate session, counted once", highlight=False, markup=False)

    asyncio.run(run())
    out.flush()
    if problems:
        raise typer.Exit(2)


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
