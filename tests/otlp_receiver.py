"""A minimal OTLP/HTTP receiver for tests and benches: it answers every POST as a collector would
and keeps the request bodies, decoded by the official opentelemetry-proto messages when read
(so receiving costs the machine little while a bench runs)."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

MESSAGES = {"/v1/traces": ExportTraceServiceRequest, "/v1/logs": ExportLogsServiceRequest}


class OtlpReceiver:
    def __init__(self) -> None:
        self.bodies: dict[str, list[bytes]] = {path: [] for path in MESSAGES}
        self.unknown_paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                receiver.headers.append({k.lower(): v for k, v in self.headers.items()})  # names are case-insensitive
                message = MESSAGES.get(self.path)
                if message is None:
                    receiver.unknown_paths.append(self.path)
                    self.send_response(404)
                else:
                    receiver.bodies[self.path].append(body)
                    self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def received(self, path: str) -> list[Any]:
        decoded = []
        for body in list(self.bodies[path]):
            request = MESSAGES[path]()
            request.ParseFromString(body)
            decoded.append(request)
        return decoded

    def spans(self) -> list[Any]:
        return [
            span
            for request in self.received("/v1/traces")
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]

    def log_records(self) -> list[Any]:
        return [
            record
            for request in self.received("/v1/logs")
            for resource in request.resource_logs
            for scope in resource.scope_logs
            for record in scope.log_records
        ]

    def wait(self, what, count: int, timeout: float = 30.0) -> list[Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = what()
            if len(got) >= count:
                return got
            time.sleep(0.1)
        raise AssertionError(f"the receiver got {len(what())} of {count}")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def attributes_of(record: Any) -> dict[str, Any]:
    """An OTLP record's attributes as plain values."""
    values = {}
    for attribute in record.attributes:
        value = attribute.value
        values[attribute.key] = getattr(value, value.WhichOneof("value"))
    return values
