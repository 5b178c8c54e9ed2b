"""The HTTP API: POST /analyze-bias (an LLM response event -> its audit result), POST
/audit-session (a council session event -> its audit result), POST /counterfactual-prompts
(the swapped prompts a client sends beside the original), /healthz, /readyz, /metrics and the
OpenAPI document at /openapi.json.

Bodies are read raw and go through the same consumer code as the stream worker, so a request
gets exactly the reasons a dead letter would carry, as RFC 9457 problem+json. Results are kept
per id in a bounded cache: repeating a request with the same audit_id / session_id returns the
first result (an idempotency key), and the session is counted in the in-process window once.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from typing import Annotated, Any, Literal, TypeVar

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from bias_audit.analysis.orders import OrdersError, orders_document
from bias_audit.analysis.responses.counterfactual import swapped_prompts
from bias_audit.consumers.envelope import (MAX_TRACE_ID_CHARS, Delivery, describe_validation_error,
                                          trace_id_from_traceparent)
from bias_audit.consumers.responses import EventRouter
from bias_audit.schemas.events import CouncilSessionEvent, LLMResponseEvent
from bias_audit.schemas.results import AuditResult

from .auth import ANONYMOUS, READ, SEND, Principal, TokenVerifier, Unauthenticated

PROBLEM = "application/problem+json"
MAX_PROMPT_CHARS = 64 * 1024
MAX_ORDERS_BODY_BYTES = 64 * 1024  # 26 models and 100 reviewers of 256 characters, escaped
MAX_SWAP_BODY_BYTES = 4 * 1024 * 1024  # a full prompt and 1,000 swap pairs, even JSON-escaped
MAX_SWAP_ANSWER_BYTES = 1024 * 1024
STATUS_FOR = {"too_large": 413, "invalid_json": 400, "invalid_event": 422, "wrong_topic": 422}


class Problem(BaseModel):
    """RFC 9457 problem details; `detail` is one sentence a person can act on."""

    type: str
    title: str
    status: int
    detail: str


def problem(status: int, title: str, detail: str, kind: str = "about:blank",
            headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"type": kind, "title": title, "status": status, "detail": detail}, status_code=status,
                        media_type=PROBLEM, headers=headers)


PROBLEMS = {
    400: "the body is not a UTF-8 JSON object", 409: "the id was used for another event",
    413: "the body is over the size limit",
    422: "the event does not follow the contract",
}
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"description": text, "content": {PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}}}}
    for status, text in PROBLEMS.items()
}


def _body_schema(model: type[BaseModel]) -> dict:
    return {"requestBody": {"required": True, "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}}}


SwapWord = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class SwapRequest(BaseModel):
    model_config = ConfigDict(hide_input_in_errors=True)
    prompt: str = Field(max_length=MAX_PROMPT_CHARS)
    swaps: dict[SwapWord, SwapWord] | None = Field(
        default=None, max_length=1_000, description="word -> counterpart (at most 1,000 pairs of up to 64 "
        "characters); default: the shipped gender swap list")


Name = Annotated[str, StringConstraints(min_length=1, max_length=256)]


Body = TypeVar("Body", bound=BaseModel)


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


class ResultCache:
    """The first answer per (tenant, kind, id), as the JSON sent, bounded by count and by bytes
    (oldest out first): a repeated request gets it again, and only its own tenant's."""

    def __init__(self, size: int = 10_000, max_bytes: int = 32 * 1024 * 1024) -> None:
        self.size, self.max_bytes = size, max_bytes
        self.bytes = 0
        self._answers: OrderedDict[tuple[str, str, str], bytes] = OrderedDict()
        self._digests: dict[tuple[str, str, str], str] = {}  # sha256 of the body each answer came from

    def get(self, key: tuple[str, str, str]) -> bytes | None:
        return self._answers.get(key)

    def digest(self, key: tuple[str, str, str]) -> str | None:
        return self._digests.get(key)

    def put(self, key: tuple[str, str, str], answer: bytes, digest: str = "") -> None:
        if len(answer) > self.max_bytes:
            return
        old = self._answers.pop(key, None)
        self.bytes += len(answer) - (len(old) if old is not None else 0)
        self._answers[key] = answer
        self._digests[key] = digest
        while len(self._answers) > self.size or self.bytes > self.max_bytes:
            gone, answer_gone = self._answers.popitem(last=False)
            self._digests.pop(gone, None)
            self.bytes -= len(answer_gone)

    def __len__(self) -> int:
        return len(self._answers)


def create_app(consumer: EventRouter, *, max_body_bytes: int, llm_topic: str, council_topic: str,
               default_swaps: dict[str, str], verifier: TokenVerifier | None = None, audit_store: Any = None,
               report: Any = None, tracer: Any = None) -> FastAPI:
    """verifier None: no auth (loopback, or --insecure-no-auth). audit_store (storage.audit_api's
    AuditStore, a PostgreSQL store): the GraphQL API, GET /audits/{id} and the review page."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        if audit_store is not None:
            await audit_store.open()
        try:
            yield
        finally:
            if audit_store is not None:
                await audit_store.close()

    app = FastAPI(title="bias-audit", version="1.0", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Bias audits of single LLM responses and of LLM council sessions; the audit log "
                              "(GraphQL at /graphql) and its review page (/review).")

    access = logging.getLogger("bias_audit.api")
    registry = CollectorRegistry()
    requests = Counter("bias_audit_http_requests", "audit requests by kind", ["endpoint", "status"], registry=registry)
    by_route = Counter("bias_audit_http_route_requests", "HTTP requests by route", ["route", "status"],
                       registry=registry)
    reviews_counter = Counter("bias_audit_reviews", "verdicts recorded by reviewers", ["verdict"], registry=registry)
    latency = Histogram("bias_audit_http_seconds", "time to answer", ["endpoint"], registry=registry,
                        buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0))

    app.add_middleware(_AccessLog, logger=access, by_route=by_route, tracer=tracer)

    def principal_of(request: Request) -> Principal:
        """The caller; a 401 problem when auth is on and the token is missing or does not verify."""
        if verifier is None:
            return ANONYMOUS
        header = request.headers.get("authorization")
        if header is None and request.cookies.get("bias_audit_token"):  # set by the operator's proxy
            header = "Bearer " + request.cookies["bias_audit_token"]
        try:
            return verifier.verify(header)
        except Unauthenticated as error:
            raise StarletteHTTPException(401, str(error), headers={"WWW-Authenticate": "Bearer"}) from None

    cache = ResultCache()
    serial = iter(range(1, 1 << 62))

    async def audit(request: Request, topic: str, kind: str, id_field: str) -> Response:
        started = time.perf_counter()
        principal = principal_of(request)
        body = await _bounded_body(request, max_body_bytes)
        response: Response
        if not principal.can(SEND):
            response = problem(403, "forbidden", f"sending events needs the role service or admin; the token has "
                               f"{', '.join(sorted(principal.roles)) or 'none'}", "urn:bias-audit:problem:forbidden")
        elif body is None:
            response = problem(413, PROBLEMS[413], f"body is over the limit of {max_body_bytes} bytes",
                               "urn:bias-audit:problem:too_large")
        elif not principal.sees(tenant := _event_key(body, id_field)[0]):
            response = problem(403, "forbidden", f"the token may not send events for tenant {tenant!r}",
                               "urn:bias-audit:problem:forbidden")
        else:
            # the request's trace id reaches the result and the stored row, as a transport's would
            trace_id = trace_id_of(request.headers)
            response = await _answer(body, topic, kind, id_field, {"trace_id": trace_id} if trace_id else {})
        requests.labels(kind, str(response.status_code)).inc()
        latency.labels(kind).observe(time.perf_counter() - started)
        return response

    async def _answer(body: bytes, topic: str, kind: str, id_field: str, attributes: dict[str, str]) -> Response:
        delivery = Delivery(delivery_id=f"http-{next(serial)}", body=body, source_topic=topic, attributes=attributes)
        [outcome] = await consumer.process([delivery])
        if outcome.dead_letter is not None:
            letter = outcome.dead_letter
            status = STATUS_FOR.get(letter.error_type, 422)
            return problem(status, PROBLEMS.get(status, "the event cannot be audited"), letter.error,
                           f"urn:bias-audit:problem:{letter.error_type}")
        if outcome.result is not None:
            await consumer.published([outcome])
            answer = outcome.result.model_dump_json().encode()
            cache.put((outcome.result.tenant_id, kind, outcome.result.audit_id), answer, _sha256(body))
            return Response(answer, media_type="application/json")
        # a repeat of an id this tenant already had audited in this process: the first answer again
        tenant_id, event_id = _event_key(body, id_field)
        key = (tenant_id, kind, event_id or "")
        cached = cache.get(key) if event_id else None
        first_digest = cache.digest(key) if event_id else None
        if cached is not None and first_digest and first_digest != _sha256(body):
            return problem(409, "conflict", f"{id_field} {event_id!r} was audited from another body (sha256 "
                           f"{first_digest[:16]}...; this one's is {_sha256(body)[:16]}...): an id names one event, "
                           "send a new id for a new one", "urn:bias-audit:problem:conflict")
        if cached is None:
            return problem(422, PROBLEMS[422], f"{id_field} {event_id!r} was already audited and its result is no "
                           "longer cached; send a new id", "urn:bias-audit:problem:duplicate")
        return Response(cached, media_type="application/json", headers={"Idempotent-Replay": "true"})

    @app.post("/analyze-bias", response_model=AuditResult, responses=ERROR_RESPONSES,
              openapi_extra=_body_schema(LLMResponseEvent), summary="Audit one LLM response")
    async def analyze_bias(request: Request) -> Response:
        """The contract's LLM response event in; its audit result out (bias_type, bias_score,
        bias_confidence_score, mitigation_action, bias_report_summary)."""
        return await audit(request, llm_topic, "llm.response", "audit_id")

    @app.post("/audit-session", response_model=AuditResult, responses=ERROR_RESPONSES,
              openapi_extra=_body_schema(CouncilSessionEvent), summary="Audit one council session")
    async def audit_session(request: Request) -> Response:
        """The contract's council session event in; its audit result out, with this process's
        window of the tenant's sessions."""
        return await audit(request, council_topic, "council.session", "session_id")

    @app.post("/counterfactual-prompts", response_model=list[SwappedPrompt], responses=ERROR_RESPONSES,
              openapi_extra=_body_schema(SwapRequest), summary="Swapped prompts for a counterfactual test")
    async def counterfactual_prompts(request: Request) -> Response:
        """The prompt with every swappable word exchanged ("he" -> "she"), to send to the model
        beside the original; put each answer in the event's `counterfactuals` with its swap.
        Empty when no word of the prompt has a counterpart."""
        asked = await _request_model(request, SwapRequest, MAX_SWAP_BODY_BYTES)
        if isinstance(asked, Response):
            return asked
        swaps = default_swaps if asked.swaps is None else asked.swaps
        answer = orjson.dumps(swapped_prompts(asked.prompt, swaps))
        if len(answer) > MAX_SWAP_ANSWER_BYTES:
            return problem(422, PROBLEMS[422], f"the swapped prompt would be {len(answer)} bytes, over the limit of "
                           f"{MAX_SWAP_ANSWER_BYTES}; send a shorter prompt or shorter counterparts",
                           "urn:bias-audit:problem:too_large_answer")
        return Response(answer, media_type="application/json")

    @app.post("/presentation-orders", response_model=PresentationOrders, responses=ERROR_RESPONSES,
              openapi_extra=_body_schema(OrdersRequest), summary="Balanced per-reviewer presentation orders")
    async def presentation_orders(request: Request) -> Response:
        """Per-reviewer orders for the next sessions, deterministic for a seed: a Williams design
        (each model at each position, and right after each other model, equally often per cycle)
        or seeded random orders; each with the review's label_to_model for the council event."""
        asked = await _request_model(request, OrdersRequest, MAX_ORDERS_BODY_BYTES)
        if isinstance(asked, Response):
            return asked
        try:
            document = orders_document(asked.models, asked.reviewers, asked.seed, asked.design, asked.sessions)
        except OrdersError as error:
            return problem(422, PROBLEMS[422], str(error), "urn:bias-audit:problem:invalid")
        return Response(orjson.dumps(document), media_type="application/json")

    _mount_docs(app)

    @app.get("/", summary="Where things are")
    async def index() -> dict[str, str]:
        return {"docs": "/docs", "openapi": "/openapi.json", "graphql": "/graphql", "review": "/review",
                "health": "/healthz", "metrics": "/metrics"}

    if audit_store is not None:
        from strawberry.fastapi import GraphQLRouter

        from .graphql_api import loaders, schema

        async def graphql_context(request: Request) -> dict[str, Any]:
            return {"principal": principal_of(request), "store": audit_store, "report": report,
                    "trace_id": trace_id_of(request.headers), "reviews_counter": reviews_counter,
                    **loaders(audit_store)}

        app.include_router(GraphQLRouter(schema, path="/graphql", context_getter=graphql_context, graphql_ide=None))

        @app.get("/audits/{audit_id}", summary="One stored LLM interaction audit")
        async def get_audit(audit_id: str, request: Request) -> Response:
            """The stored audit of one LLM interaction, within the token's tenants (another
            tenant's is 404, as a missing one)."""
            principal = principal_of(request)
            if not principal.can(READ):
                return problem(403, "forbidden", "reading audits needs the role reviewer, auditor or admin",
                               "urn:bias-audit:problem:forbidden")
            from bias_audit.storage.audit_api import InvalidInput

            try:
                row = await audit_store.interaction(principal.scope(None), audit_id)
            except InvalidInput as error:
                return problem(400, "bad id", str(error), "urn:bias-audit:problem:invalid")
            if row is None:
                return problem(404, "not found", f"no interaction audit {audit_id!r}", "urn:bias-audit:problem:not_found")
            return Response(orjson.dumps(row, default=str), media_type="application/json")

        @app.get("/review", summary="The review page", response_class=Response)
        async def review_page() -> Response:
            from importlib import resources

            page = resources.files("bias_audit.service").joinpath("review.html").read_bytes()
            return Response(page, media_type="text/html; charset=utf-8",
                            headers={"Content-Security-Policy": "default-src 'self'; script-src 'unsafe-inline'; "
                                     "style-src 'unsafe-inline'; connect-src 'self'"})

    @app.get("/healthz", summary="Liveness")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", summary="Readiness: lexicons and models loaded")
    async def readyz() -> dict[str, str]:
        return {"status": "ready"}

    @app.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics")
    async def metrics() -> PlainTextResponse:
        return PlainTextResponse(generate_latest(registry).decode(), media_type=CONTENT_TYPE_LATEST)

    @app.exception_handler(StarletteHTTPException)
    async def http_problem(_: Request, error: StarletteHTTPException) -> JSONResponse:
        # keeps the framework's headers (405 carries Allow)
        return problem(error.status_code, str(error.detail), str(error.detail),
                       headers=dict(error.headers) if error.headers else None)

    @app.exception_handler(RequestValidationError)
    async def validation_problem(_: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0]
        return problem(422, PROBLEMS[422], f"{'.'.join(map(str, first['loc']))}: {first['msg']}")

    def openapi() -> dict:
        if app.openapi_schema is None:
            document = get_openapi(title=app.title, version=app.version, description=app.description,
                                   routes=app.routes)
            schemas = document.setdefault("components", {}).setdefault("schemas", {})
            for model in (LLMResponseEvent, CouncilSessionEvent, SwapRequest, Problem):
                schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
                schemas.update(schema.pop("$defs", {}))
                schemas[model.__name__] = schema
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def _mount_docs(app: FastAPI) -> None:
    """/docs with Swagger UI's files from the swagger-ui-bundle package, not a CDN: the page works
    offline and behind a strict proxy."""
    import swagger_ui_bundle
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.staticfiles import StaticFiles

    app.mount("/docs-assets", StaticFiles(directory=swagger_ui_bundle.swagger_ui_path), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> Response:
        return get_swagger_ui_html(openapi_url="/openapi.json", title="bias-audit API",
                                   swagger_js_url="/docs-assets/swagger-ui-bundle.js",
                                   swagger_css_url="/docs-assets/swagger-ui.css",
                                   swagger_favicon_url="/docs-assets/favicon-32x32.png")


async def _request_model(request: Request, model: type[Body], limit: int) -> Body | Response:
    """The request's JSON body as the model, or the problem+json answer saying why not (413 over
    the limit, 422 not the model)."""
    body = await _bounded_body(request, limit)
    if body is None:
        return problem(413, PROBLEMS[413], f"body is over the limit of {limit} bytes", "urn:bias-audit:problem:too_large")
    try:
        return model.model_validate_json(body)
    except ValidationError as error:
        return problem(422, PROBLEMS[422], describe_validation_error(error), "urn:bias-audit:problem:invalid")


async def _bounded_body(request: Request, limit: int) -> bytes | None:
    """The body, or None once it passes `limit` (declared or streamed): a client cannot make the
    server hold more than the limit, chunked or not."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


class _AccessLog:
    """One JSON log line per request (method, route, status, ms, trace id), the requests-by-
    route counter, and a span when tracing is on; plain ASGI: no task per request, as
    BaseHTTPMiddleware makes."""

    def __init__(self, app, *, logger: logging.Logger, by_route, tracer: Any = None) -> None:
        self.app, self.logger, self.by_route, self.tracer = app, logger, by_route, tracer

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}

        async def sending(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        span = None
        if self.tracer is not None:
            from .tracing import parent_context

            span = self.tracer.start_span(f"{scope['method']} {scope['path']}", context=parent_context(headers),
                                          attributes={"http.request.method": scope["method"]})
        try:
            await self.app(scope, receive, sending)
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            self.by_route.labels(route, str(status)).inc()
            if span is not None:
                span.update_name(f"{scope['method']} {route}")
                span.set_attribute("http.route", route)
                span.set_attribute("http.response.status_code", status)
                span.end()
            if self.logger.isEnabledFor(logging.INFO):
                self.logger.info("request", extra={"method": scope["method"], "path": route, "status": status,
                                                   "ms": round((time.perf_counter() - started) * 1000, 1),
                                                   "trace_id": trace_id_of(headers)})


def _sha256(body: bytes) -> str:
    import hashlib

    return hashlib.sha256(body).hexdigest()


def trace_id_of(headers) -> str | None:
    """The request's trace id: x-trace-id when it is a plain id, else W3C traceparent's (read
    as the transports read it)."""
    given = headers.get("x-trace-id")
    if given and len(given) <= MAX_TRACE_ID_CHARS and given.isprintable():
        return given
    return trace_id_from_traceparent(headers.get("traceparent"))


def _event_key(body: bytes, field: str) -> tuple[str, str | None]:
    """(tenant_id, id) of a body that parsed once already (it was audited before)."""
    try:
        document = orjson.loads(body)
        tenant, value = document.get("tenant_id", "default"), document.get(field)
    except (orjson.JSONDecodeError, AttributeError):
        return "default", None
    return (tenant if isinstance(tenant, str) else "default"), (value if isinstance(value, str) else None)
