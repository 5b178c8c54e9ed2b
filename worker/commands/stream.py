"""Commands that run or feed the stream: worker, serve, setup, publish, results, audit."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated, Optional

import typer

from bias_audit.schemas.errors import CommandError

from .common import (
    FLAG,
    BrokerOpt,
    ConsentOpt,
    DataDirOpt,
    RedisOpt,
    StoreOpt,
    WindowDaysOpt,
    WindowSessionsOpt,
    command,
    event_lines,
    progress_bar,
    say,
    settings_with,
)


@command
def worker(
    broker: BrokerOpt = None,
    redis: RedisOpt = None,
    data_dir: DataDirOpt = None,
    consumer: Annotated[
        Optional[str], typer.Option(metavar="NAME", help="consumer name in the group (default host-pid)")
    ] = None,
    consent_level: ConsentOpt = None,
    window_sessions: WindowSessionsOpt = None,
    window_days: WindowDaysOpt = None,
    ops_port: Annotated[
        Optional[int], typer.Option(metavar="PORT", help="/healthz /readyz /metrics port (default 9464; 0 any, -1 off)")
    ] = None,
    consume: Annotated[
        Optional[str],
        typer.Option(
            metavar="all|council|responses|judges",
            help="all (default): council sessions, LLM responses and judge verdicts; council: council.sessions only; "
            "responses: llm.responses only; judges: judge.verdicts only (one per deployment scales each on its own "
            "backlog). Env BIAS_AUDIT_CONSUME",
        ),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Run the stream worker on Redis Streams or Pub/Sub.

    With no broker configured, starts an embedded Redis in the data directory; with no store, an
    embedded PostgreSQL there. SIGTERM drains the batch in hand, then exits."""
    from ..run import run_worker

    run_worker(
        settings_with(
            broker_url=broker,
            redis_url=redis,
            data_dir=data_dir,
            consumer_name=consumer,
            consent_level=consent_level,
            window_sessions=window_sessions,
            window_days=window_days,
            ops_port=ops_port,
            consume=consume,
            store_url=store,
        ),
        say=say,
    )


@command
def serve(
    host: Annotated[str, typer.Option(metavar="HOST", help="listen address")] = "127.0.0.1",
    port: Annotated[int, typer.Option(metavar="PORT", help="listen port")] = 8080,
    data_dir: DataDirOpt = None,
    consent_level: ConsentOpt = None,
    store: StoreOpt = None,
    workers: Annotated[
        Optional[int],
        typer.Option(
            "--workers",
            metavar="N",
            min=1,
            max=64,
            help="processes answering requests on the port (default: one per core; BIAS_AUDIT_SERVE_WORKERS); "
            "with more than one their windows are kept in Redis: BIAS_AUDIT_REDIS_URL, else an embedded one",
        ),
    ] = None,
    insecure_no_auth: Annotated[
        bool,
        typer.Option(
            "--insecure-no-auth",
            metavar=FLAG,
            help="listen on a non-loopback address without BIAS_AUDIT_JWT_SECRET "
            "or BIAS_AUDIT_JWT_PUBLIC_KEY: anyone who reaches it reads and writes every tenant",
        ),
    ] = False,
) -> None:
    """Serve the HTTP API (analyze-bias, audit-session, counterfactual-prompts, GraphQL, review page).

    POST /analyze-bias (an LLM response event), POST /audit-session (a council session event),
    /healthz, /readyz, /metrics; the OpenAPI document at /openapi.json and its pages at /docs.
    Errors are problem+json with a one-line reason."""
    from ..run import run_api

    run_api(
        settings_with(data_dir=data_dir, consent_level=consent_level, store_url=store, serve_workers=workers),
        host,
        port,
        say=say,
        insecure_no_auth=insecure_no_auth,
    )


@command
def setup(broker: BrokerOpt = None, data_dir: DataDirOpt = None, store: StoreOpt = None) -> None:
    """Create the input streams and groups, or the Pub/Sub topics and subscriptions; with a
    PostgreSQL store, apply its migrations.

    Redis: consumer groups from the stream's start. Pub/Sub: with the dead-letter and retry
    policies. PostgreSQL: each migration once, in order. Idempotent."""
    from ..run import resolve_broker, set_up_broker
    from ..store_setup import set_up_store

    settings = settings_with(broker_url=broker, data_dir=data_dir, store_url=store)
    if settings.store_is_postgres:
        for line in set_up_store(settings.store_url or ""):
            print(line)
        if broker is None and not settings.broker_url:
            return  # `setup --store URL` alone: the database only
    for line in set_up_broker(settings, resolve_broker(settings)):
        print(line)


@command
def publish(
    file: Annotated[str, typer.Argument(metavar="FILE", help="JSONL file of events, or - for stdin")],
    broker: BrokerOpt = None,
    data_dir: DataDirOpt = None,
    topic: Annotated[
        Optional[str], typer.Option(metavar="NAME", help="stream or topic (default: by event kind)")
    ] = None,
) -> None:
    """Publish JSONL events onto the input streams or topics.

    In the contract's wire format (field `data` = the JSON document), each event to its kind's
    input. Without --broker, finds a running embedded worker's Redis."""
    from bias_audit.producers.publish import entries_for
    from bias_audit.producers.publish import publish as send

    from ..run import resolve_broker

    settings = settings_with(broker_url=broker, data_dir=data_dir)
    by_kind = {"llm.response": settings.llm_topic, "judge.verdict": settings.verdicts_topic}
    entries = entries_for(event_lines(file), lambda kind: topic or by_kind.get(kind, settings.council_topic))
    url = resolve_broker(settings)
    with progress_bar("publishing", len(entries)) as advance:
        send(url, entries, advance)
    say(f"published {len(entries)} events to {url}")


class OutputKind(str, Enum):
    results = "results"
    alerts = "alerts"
    tasks = "tasks"
    deadletters = "deadletters"


@command
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

    from ..run import resolve_broker

    settings = settings_with(broker_url=broker, data_dir=data_dir)
    url = resolve_broker(settings)
    if url.startswith("pubsub://"):
        raise CommandError(
            "results reads Redis streams; on Pub/Sub attach a subscription to "
            f"{settings.result_topic}, {settings.alerts_topic}, {settings.tasks_topic} or "
            f"{settings.deadletter_topic}"
        )
    stream = {
        "results": settings.result_topic,
        "alerts": settings.alerts_topic,
        "tasks": settings.tasks_topic,
        "deadletters": settings.deadletter_topic,
    }[kind.value]
    try:
        with redis_client.Redis.from_url(url, socket_connect_timeout=5) as client:
            documents = read_recent(client, stream, count)
    except redis_client.RedisError as error:
        raise CommandError(f"cannot read {stream} from {url}: {error}", exit_code=1) from None
    for data in documents:
        sys.stdout.write(data.decode("utf-8", errors="replace") + "\n")
    say(f"{len(documents)} from {stream} on {url}")


@command
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
    from ..audit_file import audit_lines
    from ..logging_setup import configure_logging

    settings = settings_with(window_sessions=window_sessions, window_days=window_days, store_url=store)
    configure_logging("ERROR")  # bad lines are reported below, one line each
    if audit_lines(event_lines(file), settings, file, sys.stdout, say):
        raise typer.Exit(2)
