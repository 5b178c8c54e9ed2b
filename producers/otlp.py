"""OTLP/HTTP export: the base URL's signal paths, and the evaluation events of completed batches
as OTLP log records. Off unless BIAS_AUDIT_OTLP_ENDPOINT is set.

The records are built straight as the official opentelemetry-proto messages and posted in
batches by one background thread, without the SDK's per-record logs pipeline (docs/dependencies.md
says why; bench/telemetry.py measures it). A full queue drops the oldest records and a down or
slow collector loses telemetry, never audits: nothing here waits on the network in the worker's
loop. Collector headers come from OTEL_EXPORTER_OTLP_LOGS_HEADERS / OTEL_EXPORTER_OTLP_HEADERS, as
the SDK's exporters read them."""

from __future__ import annotations

import logging
import os
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.util.re import parse_env_headers

from bias_audit.consumers.envelope import incoming_traceparent
from bias_audit.consumers.outcome import Outcome

from .evaluation_events import EVENT_NAME, evaluation_events

log = logging.getLogger("bias_audit.telemetry")

SEVERITY_INFO, SEVERITY_WARN = 9, 13  # OTLP SeverityNumber: INFO, WARN
# attributes whose values name one item: built per item, not kept
PER_ITEM = frozenset({"bias_audit.audit_id", "bias_audit.trace_id", "bias_audit.cloudevent_id", "gen_ai.response.id"})


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


def _value(value: str | float | int | bool) -> Any:
    if isinstance(value, bool):  # before int: a bool is an int
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=value)


def collector_headers(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The collector's headers (e.g. authorization) as the SDK's exporters read them."""
    text = environ.get("OTEL_EXPORTER_OTLP_LOGS_HEADERS") or environ.get("OTEL_EXPORTER_OTLP_HEADERS") or ""
    return dict(parse_env_headers(text, liberal=True))


class EvaluationEventExporter:
    """Each completed batch's results as `gen_ai.evaluation.result` log records over OTLP/HTTP."""

    def __init__(
        self,
        endpoint: str,
        *,
        service_name: str = "bias-audit",
        max_queue: int = 100_000,
        batch: int = 2_000,
        delay_s: float = 1.0,
        timeout_s: float = 5.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        from bias_audit import __version__

        self.url = otlp_urls(endpoint).logs
        self.headers = {
            "Content-Type": "application/x-protobuf",
            **(collector_headers() if headers is None else headers),
        }
        self.resource = Resource(attributes=[KeyValue(key="service.name", value=_value(service_name))])
        self.scope = InstrumentationScope(name="bias_audit.evaluation", version=__version__)
        self.batch, self.delay_s, self.timeout_s = batch, delay_s, timeout_s
        self._attributes: dict[tuple[str, Any], Any] = {}
        self.queue: deque[Any] = deque(maxlen=max_queue)  # full: the oldest go, never the worker's time
        self.exported = self.failed = self.dropped = 0  # sent; lost to the collector; pushed out of a full queue
        self._wake = threading.Event()
        self._stopping = False
        self._last_warning = 0.0
        self._thread = threading.Thread(target=self._run, name="otlp-evaluation-events", daemon=True)
        self._thread.start()

    def emit(self, outcomes: Iterable[Outcome]) -> None:
        """Queue the outcomes' events; never blocks on the network, never raises (telemetry that
        fails is lost, the audits are not)."""
        try:
            self._emit(outcomes)
        except Exception as error:
            log.warning("evaluation events not built", extra={"error": repr(error)})

    def _emit(self, outcomes: Iterable[Outcome]) -> None:
        now = time.time_ns()
        for outcome in outcomes:
            if outcome.result is None:
                continue
            item: dict[tuple[str, Any], Any] = {}  # the item's own ids, shared by its events
            for event in evaluation_events(outcome.result, incoming_traceparent(outcome.delivery.attributes)):
                if len(self.queue) == self.queue.maxlen:
                    self.dropped += 1
                self.queue.append(
                    LogRecord(
                        time_unix_nano=now,
                        observed_time_unix_nano=now,
                        event_name=EVENT_NAME,
                        severity_number=SEVERITY_WARN if event.flagged else SEVERITY_INFO,  # type: ignore[arg-type]
                        severity_text="WARN" if event.flagged else "INFO",
                        trace_id=event.trace_id.to_bytes(16, "big") if event.trace_id else b"",
                        span_id=event.span_id.to_bytes(8, "big") if event.span_id else b"",
                        flags=1 if event.trace_id else 0,  # sampled, as the caller's trace is
                        attributes=[self._attribute(key, value, item) for key, value in event.attributes.items()],
                    )
                )
        if len(self.queue) >= self.batch:
            self._wake.set()

    def _attribute(self, key: str, value: str | float | int | bool, item: dict[tuple[str, Any], Any]) -> Any:
        """The KeyValue message of one attribute. Most values repeat (names, labels, tenants,
        explanations): their messages are built once and copied, which costs a third as much."""
        memo = item if key in PER_ITEM else self._attributes
        found = memo.get((key, value))
        if found is None:
            if len(self._attributes) >= 50_000:
                self._attributes.clear()
            found = memo[(key, value)] = KeyValue(key=key, value=_value(value))
        return found

    def _run(self) -> None:
        while True:
            self._wake.wait(self.delay_s)  # every delay, or sooner when a batch is full
            self._wake.clear()
            stopping = self._stopping
            while self.queue:
                sent = self._post([self.queue.popleft() for _ in range(min(self.batch, len(self.queue)))])
                if not sent and stopping:  # the collector is away: what is left is lost, now
                    self.failed += len(self.queue)
                    self.queue.clear()
            if stopping:
                return

    def _post(self, records: list[Any]) -> bool:
        body = ExportLogsServiceRequest(
            resource_logs=[
                ResourceLogs(resource=self.resource, scope_logs=[ScopeLogs(scope=self.scope, log_records=records)])
            ]
        ).SerializeToString()
        request = urllib.request.Request(self.url, data=body, headers=self.headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                response.read()
            self.exported += len(records)
            return True
        except (urllib.error.URLError, OSError, ValueError) as error:
            self.failed += len(records)
            if time.monotonic() - self._last_warning > 60:  # one line a minute while the collector is away
                self._last_warning = time.monotonic()
                log.warning(
                    "evaluation events not exported; they are dropped",
                    extra={
                        "url": self.url,
                        "error": str(getattr(error, "reason", error)),
                        "dropped_so_far": self.failed,
                    },
                )
            return False

    def shutdown(self) -> None:
        """Send what is queued (each post bounded by the timeout) and stop the thread."""
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout=self.timeout_s * 3)


def evaluation_exporter(endpoint: str | None) -> EvaluationEventExporter | None:
    return EvaluationEventExporter(endpoint) if endpoint else None
