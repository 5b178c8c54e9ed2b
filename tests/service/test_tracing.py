"""OpenTelemetry: with BIAS_AUDIT_OTLP_ENDPOINT set, each request is a span sent over OTLP/HTTP
(to a real HTTP receiver here), continuing the caller's traceparent; unset, nothing is traced."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from bias_audit.worker.composition import api_app
from bias_audit.worker.settings import Settings
from tests.otlp_receiver import OtlpReceiver


@pytest.mark.parametrize("suffix", ["", "/", "/v1/traces"])  # a base URL, or the traces URL as before
def test_requests_become_spans_of_the_callers_trace(tmp_path, suffix):
    receiver = OtlpReceiver()
    app = api_app(Settings(data_dir=tmp_path, consumer_name="trace", otlp_endpoint=receiver.url + suffix))
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    with TestClient(app, base_url="http://localhost") as client:
        assert client.get("/healthz", headers={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"}).status_code == 200
        assert client.get("/nowhere").status_code == 404
    spans = receiver.wait(receiver.spans, 2, timeout=10)
    receiver.close()
    assert receiver.unknown_paths == []
    by_name = {span.name: span for span in spans}
    assert set(by_name) == {"GET /healthz", "GET unmatched"}
    assert by_name["GET /healthz"].trace_id.hex() == trace_id  # the caller's trace, continued
    status = {a.key: a.value.int_value for a in by_name["GET unmatched"].attributes if a.key.endswith("status_code")}
    assert status == {"http.response.status_code": 404}


def test_no_endpoint_no_tracer(tmp_path):
    from bias_audit.service.tracing import tracer_for

    assert tracer_for(None) is None and tracer_for("") is None


def test_audits_through_the_api_become_evaluation_events_of_the_callers_span(tmp_path):
    from bias_audit.worker.samples import generate_sessions
    from tests.otlp_receiver import attributes_of

    receiver = OtlpReceiver()
    app = api_app(Settings(data_dir=tmp_path, consumer_name="trace", otlp_endpoint=receiver.url))
    caller_trace, caller_span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    session = {**generate_sessions(1, seed=93)[0], "trace_id": None}
    with TestClient(app, base_url="http://localhost") as client:
        answer = client.post(
            "/audit-session", json=session, headers={"traceparent": f"00-{caller_trace}-{caller_span}-01"}
        )
        assert answer.status_code == 200, answer.text
    result = answer.json()
    records = receiver.wait(receiver.log_records, 1 + len(result["bias_type"]), timeout=10)  # sent at shutdown
    receiver.wait(receiver.spans, 1, timeout=10)  # the request's span too, before the receiver goes
    receiver.close()
    names = sorted(attributes_of(r)["gen_ai.evaluation.name"] for r in records)
    assert names == sorted(["bias", *result["bias_type"]])
    assert {(r.trace_id.hex(), r.span_id.hex()) for r in records} == {(caller_trace, caller_span)}
    assert result["trace_id"] == caller_trace
