"""OTLP/HTTP export: the base URL's signal paths, and the evaluation events of completed batches
as OTLP log records. Off unless BIAS_AUDIT_OTLP_ENDPOINT is set; records are queued and sent in
batches by the SDK's background thread, so a slow or down collector loses telemetry, never audits.

The OpenTelemetry logs API still lives in underscore-named modules (`opentelemetry._logs`,
`opentelemetry.sdk._logs`): the project's documented entry point while it is experimental, and
why pyproject.toml pins the SDK's version range."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bias_audit.consumers.council import Outcome
from bias_audit.consumers.envelope import incoming_traceparent

from .evaluation_events import EVENT_NAME, evaluation_events

log = logging.getLogger("bias_audit.telemetry")


@dataclass(frozen=True, slots=True)
class OtlpUrls:
    traces: str
    logs: str


def otlp_urls(endpoint: str) -> OtlpUrls:
    """Each signal's URL from a base URL, as OTEL_EXPORTER_OTLP_ENDPOINT derives them; a URL that
    already names a signal's path (…/v1/traces, …/v1/logs) is read as its base."""
    base = endpoint.rstrip("/")
    for suffix in ("/v1/traces", "/v1/logs"):
        base = base.removesuffix(suffix)
    return OtlpUrls(traces=f"{base}/v1/traces", logs=f"{base}/v1/logs")


class EvaluationEventExporter:
    """Each completed batch's results as `gen_ai.evaluation.result` log records over OTLP/HTTP."""

    def __init__(self, endpoint: str, *, service_name: str = "bias-audit", schedule_delay_ms: int = 1000,
                 max_queue_size: int = 65_536, export_timeout_s: float = 5.0) -> None:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource

        self.provider = LoggerProvider(resource=Resource.create({"service.name": service_name}))
        self.provider.add_log_record_processor(BatchLogRecordProcessor(
            OTLPLogExporter(endpoint=otlp_urls(endpoint).logs, timeout=export_timeout_s),
            schedule_delay_millis=schedule_delay_ms, max_queue_size=max_queue_size, max_export_batch_size=2048))
        self.logger = self.provider.get_logger("bias_audit.evaluation")

    def emit(self, outcomes: Iterable[Outcome]) -> None:
        from opentelemetry._logs import LogRecord, SeverityNumber
        from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

        for outcome in outcomes:
            if outcome.result is None:
                continue
            events = evaluation_events(outcome.result, incoming_traceparent(outcome.delivery.attributes))
            context = set_span_in_context(NonRecordingSpan(SpanContext(  # one parent for the item's events
                events[0].trace_id, events[0].span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))))
            for event in events:
                self.logger.emit(LogRecord(
                    context=context, event_name=EVENT_NAME, attributes=event.attributes,
                    severity_number=SeverityNumber.WARN if event.flagged else SeverityNumber.INFO,
                    severity_text="WARN" if event.flagged else "INFO"))

    def shutdown(self) -> None:
        """Send what is queued (bounded by the export timeout) and stop the export thread."""
        self.provider.shutdown()


def evaluation_exporter(endpoint: str | None) -> Any:
    return EvaluationEventExporter(endpoint) if endpoint else None
