"""The evaluation events' exporter on its own: batches posted to a real OTLP/HTTP receiver with
the collector's headers, what is queued sent at shutdown, a bounded queue, and a collector that
is away costing a count and a warning, never an exception."""

from __future__ import annotations

import time

from bias_audit.consumers.envelope import Delivery
from bias_audit.consumers.outcome import Outcome
from bias_audit.producers.otlp import EvaluationEventExporter, collector_headers
from bias_audit.schemas.results import AuditResult
from bias_audit.worker.embedded_redis import free_port
from tests.otlp_receiver import OtlpReceiver, attributes_of


def outcomes(count: int, flagged: bool = False) -> list[Outcome]:
    made = []
    for n in range(count):
        result = AuditResult(
            audit_id=f"a{n}",
            source="llm.response",
            tenant_id="acme",
            trace_id=f"{n + 1:032x}",
            timestamp="2026-11-26T08:00:00Z",
            event_timestamp="2026-11-26T08:00:00Z",
            bias_detected=flagged,
            bias_type=["gender_bias"] if flagged else [],
            bias_score={"gender_bias": 0.7} if flagged else {},
            bias_confidence_score=0.5,
            overall_bias_risk="medium" if flagged else "low",
        )
        made.append(Outcome(Delivery(delivery_id=str(n), body=b"{}", source_topic="llm.responses"), result=result))
    return made


def test_headers_are_read_as_the_sdk_reads_them():
    assert collector_headers({"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20abc,x-tenant=t1"}) == {
        "authorization": "Bearer abc",
        "x-tenant": "t1",
    }
    assert collector_headers({"OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "b=2"}) == {
        "b": "2"
    }
    assert collector_headers({}) == {}


def test_batches_reach_the_collector_and_shutdown_sends_the_rest():
    receiver = OtlpReceiver()
    exporter = EvaluationEventExporter(receiver.url, batch=50, delay_s=30, headers={"authorization": "Bearer abc"})
    exporter.emit(outcomes(60, flagged=True))  # 120 records: two full batches wake the thread early
    receiver.wait(receiver.log_records, 100, timeout=10)
    exporter.emit(outcomes(5))  # less than a batch, long before the delay: shutdown sends it
    exporter.shutdown()
    records = receiver.log_records()
    receiver.close()
    assert len(records) == 125 and exporter.exported == 125 and exporter.failed == 0
    assert {h.get("authorization") for h in receiver.headers} == {"Bearer abc"}
    assert {h.get("content-type") for h in receiver.headers} == {"application/x-protobuf"}
    first = records[0]
    assert first.event_name == "gen_ai.evaluation.result" and first.severity_number == 13
    assert first.trace_id.hex() == f"{1:032x}" and first.span_id == b"" and first.flags == 1
    assert attributes_of(first)["gen_ai.evaluation.score.value"] == 0.5
    assert {attributes_of(r)["gen_ai.evaluation.name"] for r in records} == {"bias", "gender_bias"}
    request = receiver.received("/v1/logs")[0]
    assert request.resource_logs[0].resource.attributes[0].value.string_value == "bias-audit"
    assert request.resource_logs[0].scope_logs[0].scope.name == "bias_audit.evaluation"


def test_a_full_queue_drops_the_oldest_and_an_absent_collector_only_counts():
    exporter = EvaluationEventExporter(
        f"http://127.0.0.1:{free_port()}", max_queue=10, batch=1_000, delay_s=30, timeout_s=1
    )
    exporter.emit(outcomes(30))  # 30 summaries into a queue of 10: no waiting, no error
    assert len(exporter.queue) == 10 and exporter.dropped == 20
    assert [
        dict((kv.key, kv.value.string_value) for kv in r.attributes)["bias_audit.audit_id"] for r in exporter.queue
    ][:1] == ["a20"]  # the newest ten kept
    started = time.monotonic()
    exporter.shutdown()
    assert time.monotonic() - started < 5 and exporter.failed == 10 and exporter.exported == 0
