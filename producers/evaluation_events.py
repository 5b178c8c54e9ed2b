"""The OpenTelemetry GenAI `gen_ai.evaluation.result` events of one audit result, as plain data:
one summary event per audited item and one per flagged bias type, parented to the caller's trace.
The OTLP export (producers/otlp.py) only carries them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bias_audit.consumers.envelope import traceparent_ids
from bias_audit.schemas.results import AuditResult

EVENT_NAME = "gen_ai.evaluation.result"
SUMMARY_NAME = "bias"  # gen_ai.evaluation.name of the summary event; a flag's is its bias type
_HEX_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")


@dataclass(frozen=True, slots=True)
class EvaluationEvent:
    attributes: dict[str, str | float | int | bool]
    flagged: bool
    trace_id: int  # 0: no trace to join
    span_id: int  # 0: the trace is known, not the span (the caller sent a trace_id only)


def parent_of(traceparent: str | None, trace_id: str | None) -> tuple[int, int]:
    """(trace id, span id) to parent the events to: the caller's traceparent when it sent one,
    else its 32-hex trace_id alone; (0, 0) when neither is a W3C id."""
    ids = traceparent_ids(traceparent)
    if ids and ids[1]:
        return int(ids[0], 16), int(ids[1], 16)
    if trace_id and _HEX_TRACE_ID.match(trace_id) and int(trace_id, 16):
        return int(trace_id, 16), 0
    return 0, 0


def _keys(result: AuditResult) -> dict[str, str | float | int | bool]:
    """What ties an event to our result, on every event: few, since each attribute costs the
    worker time in the exporter for every event."""
    keys: dict[str, str | float | int | bool] = {
        "bias_audit.audit_id": result.audit_id,
        "bias_audit.tenant_id": result.tenant_id,
    }
    if result.response_id:
        keys["gen_ai.response.id"] = result.response_id
    return keys


def evaluation_events(result: AuditResult, traceparent: str | None = None) -> list[EvaluationEvent]:
    trace_id, span_id = parent_of(traceparent, result.trace_id)
    keys = _keys(result)
    flagged = ", ".join(result.bias_type)
    summary = {
        "gen_ai.evaluation.name": SUMMARY_NAME,
        "gen_ai.evaluation.score.value": float(result.bias_confidence_score),
        "gen_ai.evaluation.score.label": "biased" if result.bias_detected else "unbiased",
        "gen_ai.evaluation.explanation": (f"{flagged} flagged" if result.bias_type else "no bias flagged")
        + f"; overall risk {result.overall_bias_risk}",
        "bias_audit.source": result.source,
        "bias_audit.overall_bias_risk": result.overall_bias_risk,
        **keys,
    }
    if not trace_id:  # the trace id is not a W3C one, so the record cannot carry it: an attribute does
        summary["bias_audit.trace_id"] = result.trace_id
    if result.cloudevent_id:
        summary["bias_audit.cloudevent_id"] = result.cloudevent_id
    events = [EvaluationEvent(summary, result.bias_detected, trace_id, span_id)]
    for bias_type in result.bias_type:
        score = result.bias_score.get(bias_type)
        attributes: dict[str, str | float | int | bool] = {
            "gen_ai.evaluation.name": bias_type,
            "gen_ai.evaluation.score.label": "flagged",
            "gen_ai.evaluation.explanation": f"{bias_type} flagged in this {result.source}"
            + (f" (score {score:.2f})" if score is not None else ""),
            **keys,
        }
        if score is not None:
            attributes["gen_ai.evaluation.score.value"] = float(score)
        events.append(EvaluationEvent(attributes, True, trace_id, span_id))
    return events
