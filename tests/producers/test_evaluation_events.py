"""gen_ai.evaluation.result events of an audit result: one summary, one per flagged type, with the
GenAI conventions' attribute names and the caller's trace; and the OTLP signal URLs."""

from __future__ import annotations

import pytest

from bias_audit.producers.evaluation_events import evaluation_events, parent_of
from bias_audit.producers.otlp import otlp_urls
from bias_audit.schemas.results import AuditResult

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"


def result(**changes) -> AuditResult:
    fields = dict(
        audit_id="s-1",
        source="council.session",
        tenant_id="acme",
        trace_id=TRACE,
        timestamp="2026-11-26T08:00:00Z",
        event_timestamp="2026-11-26T07:59:00Z",
        bias_detected=True,
        bias_type=["length_bias", "position_bias"],
        bias_score={"length_bias": 0.62, "position_bias": None},
        bias_confidence_score=0.9,
        overall_bias_risk="high",
    )
    return AuditResult(**{**fields, **changes})


@pytest.mark.parametrize(
    ("traceparent", "trace_id", "expected"),
    [
        (f"00-{TRACE}-{SPAN}-01", "other", (int(TRACE, 16), int(SPAN, 16))),  # the caller's span
        (None, TRACE, (int(TRACE, 16), 0)),  # a trace id alone: the trace, no span
        (None, "not-a-w3c-id", (0, 0)),
        (f"00-{'0' * 32}-{SPAN}-01", TRACE, (int(TRACE, 16), 0)),  # an all-zero traceparent is none
        ("garbage", None, (0, 0)),
    ],
)
def test_events_are_parented_to_the_callers_trace(traceparent, trace_id, expected):
    assert parent_of(traceparent, trace_id) == expected


def test_a_flagged_result_gives_a_summary_and_one_event_per_type():
    summary, length, position = evaluation_events(result(response_id="chatcmpl-9"), f"00-{TRACE}-{SPAN}-01")
    assert summary.attributes == {
        "gen_ai.evaluation.name": "bias",
        "gen_ai.evaluation.score.value": 0.9,
        "gen_ai.evaluation.score.label": "biased",
        "gen_ai.evaluation.explanation": "length_bias, position_bias flagged; overall risk high",
        "gen_ai.response.id": "chatcmpl-9",
        "bias_audit.audit_id": "s-1",
        "bias_audit.source": "council.session",
        "bias_audit.tenant_id": "acme",
        "bias_audit.overall_bias_risk": "high",
    }
    assert length.attributes == {
        "gen_ai.evaluation.name": "length_bias",
        "gen_ai.evaluation.score.value": 0.62,
        "gen_ai.evaluation.score.label": "flagged",
        "gen_ai.evaluation.explanation": "length_bias flagged in this council.session (score 0.62)",
        "gen_ai.response.id": "chatcmpl-9",
        "bias_audit.audit_id": "s-1",
        "bias_audit.tenant_id": "acme",
    }
    assert "gen_ai.evaluation.score.value" not in position.attributes  # no score: none invented
    assert {e.span_id for e in (summary, length, position)} == {int(SPAN, 16)}
    assert summary.flagged and length.flagged


def test_an_unflagged_result_gives_the_summary_only():
    [summary] = evaluation_events(
        result(
            bias_detected=False,
            bias_type=[],
            bias_confidence_score=0.1,
            overall_bias_risk="low",
            cloudevent_id="order-42",
        )
    )
    assert summary.attributes["gen_ai.evaluation.score.label"] == "unbiased"
    assert summary.attributes["gen_ai.evaluation.explanation"] == "no bias flagged; overall risk low"
    assert summary.attributes["bias_audit.cloudevent_id"] == "order-42"
    assert "gen_ai.response.id" not in summary.attributes and not summary.flagged
    assert "bias_audit.trace_id" not in summary.attributes  # the record carries the W3C trace id itself
    [other] = evaluation_events(result(bias_detected=False, bias_type=[], trace_id="order-7-trace"))
    assert other.attributes["bias_audit.trace_id"] == "order-7-trace" and other.trace_id == 0


@pytest.mark.parametrize(
    ("endpoint", "traces", "logs"),
    [
        ("http://c:4318", "http://c:4318/v1/traces", "http://c:4318/v1/logs"),
        ("http://c:4318/", "http://c:4318/v1/traces", "http://c:4318/v1/logs"),
        ("http://c:4318/v1/traces", "http://c:4318/v1/traces", "http://c:4318/v1/logs"),  # the old setting's form
        ("https://o.example/otlp/v1/logs", "https://o.example/otlp/v1/traces", "https://o.example/otlp/v1/logs"),
        ("https://o.example/otlp", "https://o.example/otlp/v1/traces", "https://o.example/otlp/v1/logs"),
    ],
)
def test_signal_urls_derive_from_the_base_as_the_otlp_exporter_does(endpoint, traces, logs):
    urls = otlp_urls(endpoint)
    assert (urls.traces, urls.logs) == (traces, logs)
