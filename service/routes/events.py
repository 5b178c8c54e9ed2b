"""The routes that audit events and help councils send them: POST /analyze-bias, /audit-session,
/counterfactual-prompts and /presentation-orders.

Bodies are read raw and go through the same consumer code as the stream worker, so a request
gets exactly the reasons a dead letter would carry. Results are kept per id in a bounded cache:
repeating a request with the same audit_id / session_id returns the first result (an
idempotency key), and the session is counted in the in-process window once.
"""

from __future__ import annotations

import hashlib
import time
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from bias_audit.analysis.orders import OrdersError, orders_document
from bias_audit.analysis.responses.counterfactual import swapped_prompts
from bias_audit.consumers.envelope import Delivery, traceparent_ids
from bias_audit.schemas.events import CouncilSessionEvent, LLMResponseEvent
from bias_audit.schemas.judges import JudgeVerdictEvent
from bias_audit.schemas.results import AuditResult

from ..auth import SEND, Principal
from ..problems import ERROR_RESPONSES, PROBLEMS, STATUS_FOR, body_schema, bounded_body, problem, request_model
from ..state import ApiState, principal, state_of, trace_id_of

MAX_PROMPT_CHARS = 64 * 1024
MAX_ORDERS_BODY_BYTES = 64 * 1024  # 26 models and 100 reviewers of 256 characters, escaped
MAX_SWAP_BODY_BYTES = 4 * 1024 * 1024  # a full prompt and 1,000 swap pairs, even JSON-escaped
MAX_SWAP_ANSWER_BYTES = 1024 * 1024

router = APIRouter()


SwapWord = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class SwapRequest(BaseModel):
    model_config = ConfigDict(hide_input_in_errors=True)
    prompt: str = Field(max_length=MAX_PROMPT_CHARS)
    swaps: dict[SwapWord, SwapWord] | None = Field(
        default=None,
        max_length=1_000,
        description="word -> counterpart (at most 1,000 pairs of up to 64 "
        "characters); default: the shipped gender swap list",
    )


Name = Annotated[str, StringConstraints(min_length=1, max_length=256)]


class OrdersRequest(BaseModel):
    model_config = ConfigDict(hide_input_in_errors=True, extra="forbid")
    models: list[Name] = Field(min_length=2, max_length=26, description="the candidates to order")
    reviewers: list[Name] = Field(min_length=1, max_length=100, description="each gets its own order")
    seed: int = Field(description="the same seed gives the same orders")
    design: Literal["williams", "random"] = "williams"
    sessions: int = Field(default=1, ge=1, le=10_000)


class ReviewerOrderOut(BaseModel):
    session: int
    reviewer: str
    order: list[str]
    label_to_model: dict[str, dict[str, Any]]


class PresentationOrders(BaseModel):
    design: str
    seed: int
    sessions: int
    cycle: int | None = Field(description="reviews per exactly balanced cycle (williams)")
    orders: list[ReviewerOrderOut]


class SwappedPrompt(BaseModel):
    swap: dict[str, str]
    prompt: str


async def _audit(
    request: Request, caller: Principal, state: ApiState, topic: str, kind: str, id_field: str
) -> Response:
    started = time.perf_counter()
    body = await bounded_body(request, state.max_body_bytes)
    response: Response
    if not caller.can(SEND):
        response = problem(
            403,
            "forbidden",
            f"sending events needs the role service or admin; the token has "
            f"{', '.join(sorted(caller.roles)) or 'none'}",
            "urn:bias-audit:problem:forbidden",
        )
    elif body is None:
        response = problem(
            413,
            PROBLEMS[413],
            f"body is over the limit of {state.max_body_bytes} bytes",
            "urn:bias-audit:problem:too_large",
        )
    elif (tenant := _event_key(body, id_field)[0]) is not None and not caller.sees(tenant):
        response = problem(
            403, "forbidden", f"the token may not send events for tenant {tenant!r}", "urn:bias-audit:problem:forbidden"
        )
    else:
        # the request's trace id reaches the result and the stored row, as a transport's would
        # a traceparent that is not one is dropped here, as a transport's attribute would be refused
        trace_id, traceparent = trace_id_of(request.headers), request.headers.get("traceparent")
        traceparent = traceparent if traceparent_ids(traceparent) else None
        attributes = {name: value for name, value in (("trace_id", trace_id), ("traceparent", traceparent)) if value}
        response = await _answer(state, body, topic, kind, id_field, attributes)
    state.metrics.requests.labels(kind, str(response.status_code)).inc()
    state.metrics.latency.labels(kind).observe(time.perf_counter() - started)
    return response


async def _answer(
    state: ApiState, body: bytes, topic: str, kind: str, id_field: str, attributes: dict[str, str]
) -> Response:
    delivery = Delivery(delivery_id=f"http-{next(state.serial)}", body=body, source_topic=topic, attributes=attributes)
    [outcome] = await state.consumer.process([delivery])
    if outcome.dead_letter is not None:
        letter = outcome.dead_letter
        status = STATUS_FOR.get(letter.error_type, 422)
        return problem(
            status,
            PROBLEMS.get(status, "the event cannot be audited"),
            letter.error,
            f"urn:bias-audit:problem:{letter.error_type}",
        )
    cache = state.cache
    if outcome.result is not None:
        await state.consumer.published([outcome])
        if state.evaluations is not None:
            state.evaluations.emit([outcome])
        answer = outcome.result.model_dump_json().encode()
        await cache.put((outcome.result.tenant_id, kind, outcome.result.audit_id), answer, _sha256(body))
        return Response(answer, media_type="application/json")
    # a repeat of an id this tenant already had audited: the first answer again
    tenant_id, event_id = _event_key(body, id_field)  # a body audited once already: an object
    first = await cache.first((tenant_id or "default", kind, event_id)) if event_id else None
    cached, first_digest = first if first is not None else (None, None)
    if cached is not None and first_digest and first_digest != _sha256(body):
        return problem(
            409,
            "conflict",
            f"{id_field} {event_id!r} was audited from another body (sha256 "
            f"{first_digest[:16]}...; this one's is {_sha256(body)[:16]}...): an id names one event, "
            "send a new id for a new one",
            "urn:bias-audit:problem:conflict",
        )
    if cached is None:
        return problem(
            422,
            PROBLEMS[422],
            f"{id_field} {event_id!r} was already audited and its result is no longer cached; send a new id",
            "urn:bias-audit:problem:duplicate",
        )
    return Response(cached, media_type="application/json", headers={"Idempotent-Replay": "true"})


Caller = Annotated[Principal, Depends(principal)]
State = Annotated[ApiState, Depends(state_of)]


@router.post(
    "/analyze-bias",
    response_model=AuditResult,
    responses=ERROR_RESPONSES,
    openapi_extra=body_schema(LLMResponseEvent),
    summary="Audit one LLM response",
)
async def analyze_bias(request: Request, caller: Caller, state: State) -> Response:
    """The contract's LLM response event in; its audit result out (bias_type, bias_score,
    bias_confidence_score, mitigation_action, bias_report_summary)."""
    return await _audit(request, caller, state, state.llm_topic, "llm.response", "audit_id")


@router.post(
    "/audit-session",
    response_model=AuditResult,
    responses=ERROR_RESPONSES,
    openapi_extra=body_schema(CouncilSessionEvent),
    summary="Audit one council session",
)
async def audit_session(request: Request, caller: Caller, state: State) -> Response:
    """The contract's council session event in; its audit result out, with this process's
    window of the tenant's sessions."""
    return await _audit(request, caller, state, state.council_topic, "council.session", "session_id")


@router.post(
    "/audit-verdict",
    response_model=AuditResult,
    responses=ERROR_RESPONSES,
    openapi_extra=body_schema(JudgeVerdictEvent),
    summary="Audit one LLM judge's verdict",
)
async def audit_verdict(request: Request, caller: Caller, state: State) -> Response:
    """The contract's judge verdict event in; its audit result out, with this process's window of
    the judge's verdicts (first-position rate and length preference with their CIs)."""
    return await _audit(request, caller, state, state.verdicts_topic, "judge.verdict", "verdict_id")


@router.post(
    "/counterfactual-prompts",
    response_model=list[SwappedPrompt],
    responses=ERROR_RESPONSES,
    openapi_extra=body_schema(SwapRequest),
    summary="Swapped prompts for a counterfactual test",
)
async def counterfactual_prompts(request: Request, state: State) -> Response:
    """The prompt with every swappable word exchanged ("he" -> "she"), to send to the model
    beside the original; put each answer in the event's `counterfactuals` with its swap.
    Empty when no word of the prompt has a counterpart."""
    asked = await request_model(request, SwapRequest, MAX_SWAP_BODY_BYTES)
    if isinstance(asked, Response):
        return asked
    swaps = state.default_swaps if asked.swaps is None else asked.swaps
    answer = orjson.dumps(swapped_prompts(asked.prompt, swaps))
    if len(answer) > MAX_SWAP_ANSWER_BYTES:
        return problem(
            422,
            PROBLEMS[422],
            f"the swapped prompt would be {len(answer)} bytes, over the limit of "
            f"{MAX_SWAP_ANSWER_BYTES}; send a shorter prompt or shorter counterparts",
            "urn:bias-audit:problem:too_large_answer",
        )
    return Response(answer, media_type="application/json")


@router.post(
    "/presentation-orders",
    response_model=PresentationOrders,
    responses=ERROR_RESPONSES,
    openapi_extra=body_schema(OrdersRequest),
    summary="Balanced per-reviewer presentation orders",
)
async def presentation_orders(request: Request) -> Response:
    """Per-reviewer orders for the next sessions, deterministic for a seed: a Williams design
    (each model at each position, and right after each other model, equally often per cycle)
    or seeded random orders; each with the review's label_to_model for the council event."""
    asked = await request_model(request, OrdersRequest, MAX_ORDERS_BODY_BYTES)
    if isinstance(asked, Response):
        return asked
    try:
        document = orders_document(asked.models, asked.reviewers, asked.seed, asked.design, asked.sessions)
    except OrdersError as error:
        return problem(422, PROBLEMS[422], str(error), "urn:bias-audit:problem:invalid")
    return Response(orjson.dumps(document), media_type="application/json")


def _sha256(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def _event_key(body: bytes, field: str) -> tuple[str | None, str | None]:
    """(tenant_id, id) a body claims; the tenant None when the body is not a JSON object with a
    string tenant (the audit then answers 400 or 422 for the body itself, never 403 for a tenant
    it did not name)."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None, None
    if not isinstance(document, dict):
        return None, None
    tenant, value = document.get("tenant_id", "default"), document.get(field)
    return (tenant if isinstance(tenant, str) else None), (value if isinstance(value, str) else None)
