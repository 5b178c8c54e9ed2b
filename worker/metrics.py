"""Prometheus metrics of one worker process (its own registry: tests build several workers)."""

from __future__ import annotations

import time
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from .top_labels import OTHER, BoundedSeries

# the judge window's rates a gauge follows (the dashboard's position consistency among them)
JUDGE_RATES = ("first_position_rate", "length_preference", "position_consistency")
# From a millisecond (a window update) to half a minute: the tail matters during outages.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
# series per metric whose labels come from input (tenants, judges, bias types); the rest are `other`
MAX_INPUT_LABEL_SETS = 200


class WorkerMetrics:
    def __init__(self, transport: str, max_label_sets: int = MAX_INPUT_LABEL_SETS) -> None:
        self.registry = CollectorRegistry()
        self.transport = transport
        labels = ("transport", "topic")
        self.consumed = Counter(
            "bias_audit_events_consumed", "Messages taken from the input", labels, registry=self.registry
        )
        self.processed = Counter(
            "bias_audit_events_processed",
            "Messages completed, by outcome (result | duplicate | dead_letter)",
            (*labels, "outcome"),
            registry=self.registry,
        )
        self.failed = Counter(
            "bias_audit_events_failed",
            "Processing attempts that failed (transient: retried; error: split, retried, then dead-lettered)",
            (*labels, "kind"),
            registry=self.registry,
        )
        self.dead_lettered = Counter(
            "bias_audit_events_dead_lettered", "Dead letters by reason", (*labels, "reason"), registry=self.registry
        )
        self.processing_seconds = Histogram(
            "bias_audit_processing_seconds",
            "Time from taking a batch to acknowledging it, per message",
            labels,
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.window_update_seconds = Histogram(
            "bias_audit_window_update_seconds",
            "Window store call per batch",
            ("transport",),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.lag = Gauge(
            "bias_audit_consumer_lag",
            "Entries not yet delivered to the group (Redis: XINFO "
            "lag) or messages held unacknowledged by this worker (Pub/Sub)",
            labels,
            registry=self.registry,
        )
        self.last_completed = Gauge(
            "bias_audit_last_batch_completed_timestamp_seconds",
            "When this worker last acknowledged a batch (unix time): a stalled worker stops moving it",
            labels,
            registry=self.registry,
        )
        # what the audits found, for alerting and dashboards (deploy/prometheus, deploy/grafana)
        self.flags = Counter(
            "bias_audit_bias_flags",
            "Audit results flagged, by tenant, input and bias type",
            ("tenant", "source", "bias_type"),
            registry=self.registry,
        )
        self.alerts = Counter(
            "bias_audit_alerts",
            "Alerts published on bias.audit.alerts",
            ("tenant", "alert_type", "status", "severity"),
            registry=self.registry,
        )
        self.judge_rate = Gauge(
            "bias_audit_judge_rate",
            "A judge's rate over its window, as its last verdict's "
            "result reported it (first_position_rate, length_preference, position_consistency)",
            ("tenant", "judge", "rate"),
            registry=self.registry,
        )
        self.pending = Gauge(
            "bias_audit_consumer_pending",
            "Delivered but not acknowledged (Redis: the group's PEL; Pub/Sub: this worker's outstanding)",
            labels,
            registry=self.registry,
        )
        # the label sets from input that get series of their own: (tenant, bias type), tenant, (tenant, judge)
        self.bounded_flags = BoundedSeries(self.flags, max_label_sets)
        self.bounded_alerts = BoundedSeries(self.alerts, max_label_sets)
        self.bounded_judges = BoundedSeries(self.judge_rate, max_label_sets)

    def consumed_batch(self, topic: str, count: int) -> None:
        self.consumed.labels(self.transport, topic).inc(count)

    def completed(self, topic: str, outcomes: Iterable, started: float) -> None:
        elapsed = time.perf_counter() - started
        counts: dict[str, int] = {}
        for outcome in outcomes:
            if outcome.result is not None:
                kind = "result"
                self._findings(outcome)
            elif outcome.dead_letter is not None:
                kind = "dead_letter"
                self.dead_lettered.labels(self.transport, topic, outcome.dead_letter.error_type).inc()
            else:
                kind = "duplicate"
            counts[kind] = counts.get(kind, 0) + 1
        for kind, count in counts.items():
            self.processed.labels(self.transport, topic, kind).inc(count)
        histogram = self.processing_seconds.labels(self.transport, topic)
        for _ in range(sum(counts.values())):  # one observation per message: the batch's time
            histogram.observe(elapsed)
        self.last_completed.labels(self.transport, topic).set_to_current_time()

    def _findings(self, outcome) -> None:
        result = outcome.result
        for bias_type in result.bias_type:
            self.bounded_flags.labels(
                (result.tenant_id, bias_type),
                (result.tenant_id, result.source, bias_type),
                (OTHER, result.source, OTHER),
            ).inc()
        for alert in outcome.alerts or ():
            self.bounded_alerts.labels(
                (alert.tenant_id,),
                (alert.tenant_id, alert.alert_type, alert.status, alert.severity),
                (OTHER, alert.alert_type, alert.status, alert.severity),
            ).inc()
        judge = getattr(result, "judge", None)  # judge verdicts' results only
        if not judge:
            return
        window = judge.get("window") or {}
        key = (result.tenant_id, judge["model"])
        if self.bounded_judges.top(key):  # a judge outside the top keeps no gauge
            for rate in JUDGE_RATES:
                estimate = (window.get(rate) or {}).get("estimate")
                if estimate is not None:
                    self.bounded_judges.child(key, (result.tenant_id, judge["model"], rate)).set(estimate)

    def failure(self, topic: str, kind: str, count: int) -> None:
        self.failed.labels(self.transport, topic, kind).inc(count)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class TimedWindow:
    """A window store that reports how long each call takes (composition wraps the real one)."""

    def __init__(self, inner, metrics: WorkerMetrics) -> None:
        self.inner = inner
        self.histogram = metrics.window_update_seconds.labels(metrics.transport)

    async def add_many(self, items):
        started = time.perf_counter()
        try:
            return await self.inner.add_many(items)
        finally:
            self.histogram.observe(time.perf_counter() - started)

    async def mark(self, items, phase):
        return await self.inner.mark(items, phase)

    async def digests(self, tenant_ids):
        return await self.inner.digests(tenant_ids)
