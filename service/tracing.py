"""OpenTelemetry spans for the API's requests, sent over OTLP/HTTP when BIAS_AUDIT_OTLP_ENDPOINT
is set (off by default: nothing is imported or exported otherwise). A request that arrives with
a W3C `traceparent` continues that trace."""

from __future__ import annotations

from typing import Any


def tracer_for(endpoint: str | None, service_name: str = "bias-audit") -> Any:
    """A tracer exporting to `endpoint`'s /v1/traces (e.g. http://collector:4318), or None."""
    if not endpoint:
        return None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from bias_audit.producers.otlp import otlp_urls

    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    # batched in a background thread: a slow collector never holds a request
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_urls(endpoint).traces), schedule_delay_millis=500)
    )
    return provider.get_tracer("bias_audit.api")


def parent_context(headers: dict[str, str]) -> Any:
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator().extract(carrier=headers)
