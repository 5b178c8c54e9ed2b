"""OpenTelemetry: with BIAS_AUDIT_OTLP_ENDPOINT set, each request is a span sent over OTLP/HTTP
(to a real HTTP receiver here), continuing the caller's traceparent; unset, nothing is traced."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

from fastapi.testclient import TestClient
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from bias_audit.worker.composition import api_app
from bias_audit.worker.settings import Settings


class Collector(BaseHTTPRequestHandler):
    received: list[ExportTraceServiceRequest] = []

    def do_POST(self) -> None:  # noqa: N802 - the handler's name
        body = self.rfile.read(int(self.headers["content-length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        Collector.received.append(request)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_requests_become_spans_of_the_callers_trace(tmp_path):
    server = HTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_port}/v1/traces"
    app = api_app(Settings(data_dir=tmp_path, consumer_name="trace", otlp_endpoint=endpoint))
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    with TestClient(app, base_url="http://localhost") as client:
        assert client.get("/healthz", headers={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"}).status_code == 200
        assert client.get("/nowhere").status_code == 404
    deadline = time.monotonic() + 10
    spans = []
    while time.monotonic() < deadline and len(spans) < 2:
        spans = [span for request in Collector.received for resource in request.resource_spans
                 for scope in resource.scope_spans for span in scope.spans]
        time.sleep(0.1)
    server.shutdown()
    by_name = {span.name: span for span in spans}
    assert set(by_name) == {"GET /healthz", "GET unmatched"}
    assert by_name["GET /healthz"].trace_id.hex() == trace_id  # the caller's trace, continued
    status = {a.key: a.value.int_value for a in by_name["GET unmatched"].attributes if a.key.endswith("status_code")}
    assert status == {"http.response.status_code": 404}


def test_no_endpoint_no_tracer(tmp_path):
    from bias_audit.service.tracing import tracer_for

    assert tracer_for(None) is None and tracer_for("") is None
