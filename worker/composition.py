"""The one composition root: settings in, wired components out."""

from __future__ import annotations

import os
import re
from functools import cache, partial
from pathlib import Path
from typing import Any

import orjson
from redis.asyncio import Redis

from bias_audit.consumers.council import CouncilSessionProcessor
from bias_audit.consumers.exactly_once import RecordSink
from bias_audit.consumers.responses import ResponseProcessor
from bias_audit.consumers.router import EventRouter
from bias_audit.producers.redis_streams import OutputTopics, RedisStreamsOutbox
from bias_audit.reports.budget import UNLIMITED, Budget
from bias_audit.state.alert_state import MemoryAlertState, RedisAlertState
from bias_audit.state.base import WindowStore
from bias_audit.state.memory_window import MemoryWindow
from bias_audit.state.redis_window import RedisWindow
from bias_audit.storage.jsonl_store import JsonlRecordStore

from .metrics import TimedWindow, WorkerMetrics
from .settings import Settings


def _required(value: str | None, what: str) -> str:
    if not value:  # worker.run checks the settings first; this names a wiring mistake
        raise ValueError(f"the worker needs {what}")
    return value


def record_store(settings: Settings) -> RecordSink:
    """PostgreSQL when the store is a postgresql:// URL; else JSONL, one file per worker process
    (scaled-out workers never interleave lines)."""
    from bias_audit.storage.postgres import PostgresRecordStore

    return _sink(settings, PostgresRecordStore, settings.records_dir, "records")


def council_processor(settings: Settings, window: WindowStore, store, alert_state=None) -> CouncilSessionProcessor:
    return CouncilSessionProcessor(
        window=window,
        store=store,
        default_consent=settings.consent_level,
        hash_secret=settings.secret_bytes,
        limits=settings.limits,
        audit_config=settings.audit_config,
        max_stored_ratio=settings.max_stored_ratio,
        alert_state=alert_state if settings.alerts_enabled else None,
        alert_policy=settings.alert_policy,
        window_policy=settings.window_policy,
        embed=_embedder() if settings.embeddings else None,
    )


def _embedder():
    from bias_audit.embeddings.minilm import minilm_embedder  # the optional extra; a clear error if absent

    return minilm_embedder()


def _embedder_when_used():
    """An embedder that loads MiniLM on its first call."""
    model = cache(_embedder)
    return lambda texts: model()(texts)


def response_lexicons(settings: Settings):
    """The shipped lexicons, or the operator's rules and axes where set."""
    from bias_audit.lexicons.load import load_lexicons, shipped_lexicons

    custom = settings.rules_file or settings.axes_file
    return load_lexicons(settings.rules_file, settings.axes_file) if custom else shipped_lexicons()


def response_processor(settings: Settings, window: WindowStore, store, tasks=None) -> ResponseProcessor:
    from bias_audit.lexicons.load import replay_groups
    from bias_audit.lexicons.sentiment import vader_scorer

    embed = _embedder() if settings.embeddings else None
    lexicons = response_lexicons(settings)
    learned = None
    learned_embed = None
    if settings.learned_detector_file is not None:
        from .detector_file import DetectorFile

        learned = DetectorFile(settings.learned_detector_file, load_learned)
        # now when the detector needs MiniLM (a missing extra stops the start), else at first need:
        # a replacement file may be a MiniLM one
        learned_embed = embed or (_embedder() if learned().needs_embeddings else _embedder_when_used())
    return ResponseProcessor(
        window=window,
        store=store,
        lexicons=lexicons,
        sentiment=vader_scorer(),
        embed=embed,
        config=settings.response_analysis,
        default_consent=settings.consent_level,
        hash_secret=settings.secret_bytes,
        limits=settings.limits,
        max_event_seconds=settings.max_event_seconds,
        calibration=load_calibration(settings.calibration_file),
        learned=learned,
        learned_embed=learned_embed,
        tasks=tasks,
        task_policy=settings.task_policy,
        task_webhook=task_webhook(settings) if tasks else None,
        severity=lexicons.severity,
        query_axes=replay_groups(),
    )


def load_learned(path):
    """The learned detector's file, or None without one; an unusable file is a one-line error."""
    if path is None:
        return None
    from bias_audit.schemas.errors import CommandError

    try:
        import sklearn  # noqa: F401  # the `learn` extra applies the model

        from bias_audit.analysis.learned_detector import LearnedDetector

        return LearnedDetector.from_document(orjson.loads(Path(path).read_bytes()))
    except ImportError:
        raise CommandError(
            "BIAS_AUDIT_LEARNED_DETECTOR_FILE needs scikit-learn (the `learn` extra): "
            "`pip install scikit-learn`, or in a checkout `pip install -e '.[learn]'`"
        ) from None
    except (OSError, ValueError) as error:
        raise CommandError(f"learned detector file {path}: {_one_line(error)}") from None


def task_webhook(settings: Settings):
    """The signed POST of each task suggestion, when BIAS_AUDIT_TASK_WEBHOOK_URL is set."""
    if not settings.task_webhook_url:
        return None
    from bias_audit.producers.task_webhook import TaskWebhook

    assert settings.task_webhook_secret is not None  # the settings refuse a webhook without one
    return TaskWebhook(settings.task_webhook_url, settings.task_webhook_secret.get_secret_value().encode())


def load_calibration(path):
    """The calibration file's map, or None without one; an unreadable file is a one-line error."""
    if path is None:
        return None
    from bias_audit.analysis.calibration import Calibration
    from bias_audit.schemas.errors import CommandError

    try:
        return Calibration.from_document(orjson.loads(Path(path).read_bytes()))
    except (OSError, ValueError) as error:
        raise CommandError(f"calibration file {path}: {_one_line(error)}") from None


def _one_line(error: Exception) -> str:
    from pydantic import ValidationError

    from bias_audit.consumers.envelope import describe_validation_error

    if isinstance(error, ValidationError):
        return describe_validation_error(error)
    if isinstance(error, orjson.JSONDecodeError):
        return f"not valid JSON ({error})"
    return str(error)


def event_processor(
    settings: Settings,
    window: WindowStore,
    alert_state=None,
    *,
    council_store,
    response_store,
    tasks=None,
    verdicts=None,
) -> EventRouter:
    """The three kinds of event behind one processor: council sessions, LLM responses and (given
    their processor) judge verdicts."""
    return EventRouter(
        council_processor(settings, window, council_store, alert_state),
        response_processor(settings, window, response_store, tasks),
        verdicts,
        llm_topic=settings.llm_topic,
        council_topic=settings.council_topic,
        verdicts_topic=settings.verdicts_topic,
    )


def verdict_processor(settings: Settings, window: WindowStore, store, alert_state=None, games=None):
    """Judge verdicts: `window` keeps a window per judge with the judge policy (its sums kept); a
    PostgreSQL store also keeps a sample's answers for blind review."""
    from bias_audit.consumers.verdicts import VerdictProcessor

    review = None
    if settings.store_is_postgres and store is not None and settings.judge_review_sample > 0:
        from bias_audit.storage.postgres.verdicts import PostgresReviewSample

        review = PostgresReviewSample(settings.store_url or "")
    return VerdictProcessor(
        window=window,
        store=store,
        default_consent=settings.consent_level,
        hash_secret=settings.secret_bytes,
        limits=settings.limits,
        alert_state=alert_state if settings.alerts_enabled else None,
        review=review,
        review_sample=settings.judge_review_sample,
        games=games,
    )


def verdict_store(settings: Settings) -> RecordSink:
    """judge_verdicts when the store is PostgreSQL; else JSONL in DATA_DIR/verdicts."""
    from bias_audit.storage.postgres.verdicts import PostgresVerdictStore

    return _sink(settings, PostgresVerdictStore, settings.verdicts_dir, "verdicts")


def _sink(settings: Settings, postgres: Any, folder: Path, kind: str) -> RecordSink:
    """The PostgreSQL writer (its migrations checked), else JSONL, one file per worker process."""
    if settings.store_is_postgres:
        from .store_setup import require_store_schema

        require_store_schema(settings.store_url or "")
        return postgres(settings.store_url or "")
    return JsonlRecordStore(folder, f"{kind}-" + re.sub(r"[^A-Za-z0-9._-]", "_", settings.consumer_name))


def shared_window_processor(
    settings: Settings, window_client: Redis, metrics: WorkerMetrics, *, verdicts: bool, tasks: bool = True
):
    """The pipeline with its windows, alerts and exactly-once markers in Redis: one window for every
    process that points at that Redis (scaled-out workers, `serve`'s processes). tasks: count what
    task suggestions are made from (the workers do; `serve` answers without them, as in memory)."""
    window = TimedWindow(RedisWindow(window_client, settings.window_policy, prefix=settings.key_prefix), metrics)
    alerts = RedisAlertState(window_client, settings.alert_limits, prefix=settings.key_prefix)
    return event_processor(
        settings,
        window,
        alerts,
        council_store=record_store(settings),
        response_store=interaction_store(settings),
        tasks=task_state(settings, window_client) if tasks else None,
        verdicts=_redis_verdicts(settings, window_client, alerts, metrics) if verdicts else None,
    )


def _redis_verdicts(settings: Settings, window_client: Redis, alerts, metrics):
    from bias_audit.state.game_memory import RedisGameMemory

    policy = settings.judge_window_policy
    window = TimedWindow(RedisWindow(window_client, policy, prefix=settings.key_prefix), metrics)
    games = RedisGameMemory(window_client, policy.seen_ttl_seconds, prefix=settings.key_prefix)
    return verdict_processor(settings, window, verdict_store(settings), alerts, games)


def task_state(settings: Settings, window_client: Redis):
    """The counts behind task suggestions, shared by the workers in the windows' Redis."""
    from bias_audit.state.task_state import RedisTaskState

    return RedisTaskState(window_client, settings.task_policy, prefix=settings.key_prefix)


def interaction_store(settings: Settings) -> RecordSink:
    """llm_interaction_audit when the store is PostgreSQL; else JSONL in DATA_DIR/interactions."""
    from bias_audit.storage.postgres import PostgresInteractionStore

    return _sink(settings, PostgresInteractionStore, settings.interactions_dir, "interactions")


def output_topics(settings: Settings) -> OutputTopics:
    return OutputTopics(
        results=settings.result_topic,
        alerts=settings.alerts_topic,
        deadletter=settings.deadletter_topic,
        raw_deadletter=settings.raw_deadletter_topic,
        tasks=settings.tasks_topic,
    )


def in_process_processor(
    settings: Settings, store=None, interactions=None, *, long_running: bool = False, verdicts=None
) -> EventRouter:
    """`bias-audit audit` (a finite file: the window remembers every session) and `serve`
    (long_running: the window is bounded); same pipeline, window in memory, no broker."""

    def window(policy):
        return MemoryWindow(policy) if long_running else MemoryWindow(policy, max_tenants=None, max_seen=None)

    alerts = MemoryAlertState(settings.alert_limits)
    return event_processor(
        settings,
        window(settings.window_policy),
        alerts,
        council_store=store,
        response_store=interactions,
        verdicts=verdict_processor(settings, window(settings.judge_window_policy), verdicts, alerts),
    )


def _worker_limits(settings: Settings) -> dict[str, Any]:
    """What every worker takes from the settings beside its transport's own."""
    return dict(
        max_deliveries=settings.max_deliveries,
        retry_max_backoff_s=settings.retry_max_backoff_s,
        shutdown_grace_s=settings.shutdown_grace_s,
        liveness_stall_s=settings.liveness_stall_s,
        ops_host=settings.ops_host,
        ops_port=settings.ops_port,
    )


def redis_worker(settings: Settings, evaluations=None):
    from .multi_input import MultiInputWorker
    from .redis_worker import RedisStreamsWorker

    metrics = WorkerMetrics("redis")
    broker_url = _required(settings.broker_url, "a redis:// broker URL")
    client = Redis.from_url(broker_url)
    window_client = Redis.from_url(settings.redis_url) if settings.redis_url else client
    processor = shared_window_processor(
        settings, window_client, metrics, verdicts=settings.verdicts_topic in settings.consumed_topics
    )
    outbox = RedisStreamsOutbox(client, output_topics(settings), max_len=settings.result_max_len)
    limits = _worker_limits(settings)
    workers = [
        RedisStreamsWorker(
            client=client,
            processor=processor,
            outbox=outbox,
            broker_url=broker_url,
            stream=topic,
            group=settings.group,
            consumer_name=settings.consumer_name,
            batch_size=settings.batch_size,
            poll_ms=settings.poll_ms,
            claim_idle_ms=settings.claim_idle_ms,
            reclaim_interval_s=settings.reclaim_interval_s,
            **limits,
            metrics=metrics,
            evaluations=evaluations,
            window_client=window_client,
        )
        for topic in settings.consumed_topics
    ]
    return (
        workers[0]
        if len(workers) == 1
        else MultiInputWorker(workers, metrics, ops_host=settings.ops_host, ops_port=settings.ops_port)
    )


def pubsub_worker(settings: Settings, evaluations=None):
    """Pub/Sub carries the messages; the windows (and exactly-once markers) live in Redis."""
    from bias_audit.producers.pubsub import PubSubOutbox

    from .multi_input import MultiInputWorker
    from .pubsub_worker import PubSubWorker, pubsub_clients

    metrics = WorkerMetrics("pubsub")
    window_client = Redis.from_url(_required(settings.redis_url, "a Redis URL for the windows"))
    processor = shared_window_processor(
        settings, window_client, metrics, verdicts=settings.verdicts_topic in settings.consumed_topics
    )
    workers = []
    limits = _worker_limits(settings)
    for topic in settings.consumed_topics:
        # each input drains and closes its own clients
        subscriber, publisher = pubsub_clients(
            publish_batch=settings.pubsub_publish_batch, publish_latency_s=settings.pubsub_publish_latency_s
        )
        outbox = PubSubOutbox(publisher, settings.pubsub_project, output_topics(settings))
        workers.append(
            PubSubWorker(
                subscriber=subscriber,
                topic=topic,
                processor=processor,
                outbox=outbox,
                subscription=subscriber.subscription_path(settings.pubsub_project, settings.subscription_for(topic)),
                consumer_name=settings.consumer_name,
                batch_size=settings.batch_size,
                max_outstanding=settings.pubsub_max_outstanding,
                max_outstanding_bytes=settings.pubsub_max_outstanding_bytes,
                lease_extension_s=settings.pubsub_lease_extension_s,
                max_lease_s=settings.pubsub_max_lease_s,
                **limits,
                metrics=metrics,
                evaluations=evaluations,
                window_client=window_client,
            )
        )
    return (
        workers[0]
        if len(workers) == 1
        else MultiInputWorker(workers, metrics, ops_host=settings.ops_host, ops_port=settings.ops_port)
    )


SERVE_LOOPBACK_ONLY = "BIAS_AUDIT_SERVE_LOOPBACK_ONLY"  # serve's word to its processes: Host names allowed


def served_app():
    """One `serve` process's app: uvicorn's factory, run in each process `serve` starts, with the
    settings `serve` left in the environment."""
    from bias_audit.gc_tuning import SERVE_YOUNG_THRESHOLD, tune_gc

    from .logging_setup import configure_logging

    settings = Settings()
    configure_logging(settings.log_level)
    app = api_app(settings, loopback_only=os.environ.get(SERVE_LOOPBACK_ONLY) == "1")
    tune_gc(SERVE_YOUNG_THRESHOLD)  # the startup heap leaves every collection, as in a worker
    return app


def api_app(settings: Settings, *, loopback_only: bool | None = None):
    """`bias-audit serve`: the HTTP API over the in-process consumers, appending records and
    interaction records like a worker does. Windows in memory; in Redis when a Redis URL is set
    (`serve`'s processes share one)."""
    from bias_audit.lexicons.load import shipped_lexicons
    from bias_audit.producers.otlp import evaluation_exporter
    from bias_audit.service.app import create_app
    from bias_audit.service.tracing import tracer_for  # OpenTelemetry itself only when an endpoint is set

    first_answers = None
    if settings.redis_url:
        from bias_audit.state.result_cache import RedisResultCache

        client = Redis.from_url(settings.redis_url)
        processor = shared_window_processor(settings, client, WorkerMetrics("http"), verdicts=True, tasks=False)
        first_answers = RedisResultCache(client, prefix=settings.key_prefix)  # a retry may reach another process
    else:
        processor = in_process_processor(
            settings,
            record_store(settings),
            interaction_store(settings),
            long_running=True,
            verdicts=verdict_store(settings),
        )
    audit_store = report = judges = disparity = None
    if settings.store_is_postgres:  # the audit log's API reads the PostgreSQL store
        from bias_audit.storage.postgres.audit_api import AuditStore

        url = settings.store_url or ""
        audit_store = AuditStore(
            url, review_sample=settings.review_sample_unflagged, max_connections=settings.api_connections_per_process
        )
        report = partial(tenant_report_json, url)
        judges = partial(judge_report_json, url)
        disparity = partial(group_disparity_json, url)
    verifier = token_verifier(settings)
    return create_app(
        processor,
        max_body_bytes=settings.max_event_bytes,
        llm_topic=settings.llm_topic,
        council_topic=settings.council_topic,
        default_swaps=shipped_lexicons().swaps,
        verifier=verifier,
        audit_store=audit_store,
        report=report,
        tracer=tracer_for(settings.otlp_endpoint),
        loopback_only=verifier is None if loopback_only is None else loopback_only,
        verdicts_topic=settings.verdicts_topic,
        judge_report=judges,
        group_disparity=disparity,
        evaluations=evaluation_exporter(settings.otlp_endpoint),
        report_budget_s=settings.report_budget_s,
        first_answers=first_answers,
    )


def token_verifier(settings: Settings):
    """The API's bearer-token check, or None when neither a JWT secret nor a public key is set."""
    from bias_audit.service.auth import TokenVerifier

    secret = settings.jwt_secret.get_secret_value() if settings.jwt_secret else None
    if secret is None and settings.jwt_public_key is None:
        return None
    return TokenVerifier(
        secret=secret, public_key=settings.jwt_public_key, audience=settings.jwt_audience, issuer=settings.jwt_issuer
    )


def tenant_report_json(
    url: str, tenant: str, sessions: int, days: float | None, budget: Budget = UNLIMITED
) -> dict | None:
    """One tenant's section of the cross-session report over the store (None: no sessions),
    stopped by OutOfTime when `budget` is spent."""
    from bias_audit.reports.build import build_report
    from bias_audit.reports.run import store_windows

    windows, stats = store_windows(url, tenant, sessions, days, budget)
    budget.check()
    document = build_report(windows, stats, sources=[], sessions=sessions, days=days)
    return document.tenants[0].model_dump(mode="json") if document.tenants else None


def group_disparity_json(url: str, tenant: str, budget: Budget = UNLIMITED) -> dict | None:
    """One tenant's group disparity over live traffic (None: no answer to a query naming a group)."""
    from bias_audit.analysis.group_disparity import CAVEAT
    from bias_audit.reports.run import stored_group_disparity

    entries = stored_group_disparity(url, tenant, budget)
    return {"note": CAVEAT, "groups": [e.model_dump(mode="json") for e in entries]} if entries else None


def judge_report_json(url: str, tenant: str, budget: Budget = UNLIMITED) -> dict | None:
    """One tenant's judge report over the stored verdicts (None: the tenant has none), stopped by
    OutOfTime when `budget` is spent."""
    from bias_audit.reports.judges import judge_report_over_store

    document = judge_report_over_store(url, tenant, budget)
    return document if document["judges"] else None
