"""The HTTP API (`bias-audit serve`), assembled from its routers (service/routes/): the audit
endpoints, the store's GraphQL API and review page, and the operational ones. What the routes
share lives on `app.state.api` (service/state.py); the caller is a dependency.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException

from bias_audit.consumers.router import EventRouter
from bias_audit.schemas.events import CouncilSessionEvent, LLMResponseEvent
from bias_audit.state.result_cache import FirstAnswers, ResultCache

from .auth import TokenVerifier
from .guard import RequestGuard
from .problems import PROBLEMS, Problem, problem
from .routes import events, ops
from .routes.events import SwapRequest
from .state import ApiState, ReportSlots, trace_id_of


def create_app(
    consumer: EventRouter,
    *,
    max_body_bytes: int,
    llm_topic: str,
    council_topic: str,
    default_swaps: dict[str, str],
    verifier: TokenVerifier | None = None,
    audit_store: Any = None,
    report: Any = None,
    tracer: Any = None,
    loopback_only: bool = False,
    verdicts_topic: str = "judge.verdicts",
    judge_report: Any = None,
    evaluations: Any = None,
    report_budget_s: float = 60.0,
    group_disparity: Any = None,
    first_answers: FirstAnswers | None = None,
) -> FastAPI:
    """verifier None: no auth (loopback, or --insecure-no-auth). audit_store (storage.postgres.audit_api's
    AuditStore, a PostgreSQL store): the GraphQL API, GET /audits/{id} and the review page.
    loopback_only: answer only requests addressed to a loopback name (auth off on loopback)."""

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        if audit_store is not None:
            await audit_store.open()
        try:
            yield
        finally:
            if audit_store is not None:
                await audit_store.close()
            if evaluations is not None:  # what is queued goes out, bounded by its timeout
                await asyncio.to_thread(evaluations.shutdown)

    app = FastAPI(
        title="bias-audit",
        version="1.0",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        description="Bias audits of single LLM responses and of LLM council sessions; the audit log "
        "(GraphQL at /graphql) and its review page (/review).",
    )
    state = ApiState(
        consumer=consumer,
        max_body_bytes=max_body_bytes,
        llm_topic=llm_topic,
        council_topic=council_topic,
        default_swaps=default_swaps,
        verifier=verifier,
        audit_store=audit_store,
        report=report,
        cache=ResultCache() if first_answers is None else first_answers,
        verdicts_topic=verdicts_topic,
        judge_report=judge_report,
        group_disparity=group_disparity,
        evaluations=evaluations,
        report_slots=ReportSlots(budget_s=report_budget_s),
    )
    app.state.api = state
    routers = [events.router]
    ops.mount_docs(app)
    if audit_store is not None:
        from .routes import store

        routers += [store.graphql_router(), store.router]
    routers.append(ops.router)
    for router in routers:
        app.include_router(router)
    posts = frozenset(
        route.path
        for router in routers
        for route in router.routes
        if isinstance(route, APIRoute) and "POST" in (route.methods or ())
    )
    app.add_middleware(
        RequestGuard, loopback_only=loopback_only, post_paths=posts, body_limits={"/graphql": max_body_bytes}
    )
    # added last, so outermost: a request the guard refuses is logged and counted too
    app.add_middleware(
        _AccessLog, logger=logging.getLogger("bias_audit.api"), by_route=state.metrics.by_route, tracer=tracer
    )
    app.add_exception_handler(StarletteHTTPException, _http_problem)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _validation_problem)  # type: ignore[arg-type]
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


KIND_OF_STATUS = {401: "unauthenticated", 403: "forbidden", 404: "not_found", 405: "method_not_allowed"}


async def _http_problem(_: Request, error: StarletteHTTPException) -> JSONResponse:
    # keeps the framework's headers (405 carries Allow)
    kind = KIND_OF_STATUS.get(error.status_code)
    return problem(
        error.status_code,
        str(error.detail),
        str(error.detail),
        f"urn:bias-audit:problem:{kind}" if kind else "about:blank",
        headers=dict(error.headers) if error.headers else None,
    )


async def _validation_problem(_: Request, error: RequestValidationError) -> JSONResponse:
    first = error.errors()[0]
    return problem(422, PROBLEMS[422], f"{'.'.join(map(str, first['loc']))}: {first['msg']}")


def _openapi(app: FastAPI) -> dict:
    """The generated document, with the contract's event models as the request bodies' schemas."""
    if app.openapi_schema is None:
        document = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        for model in (LLMResponseEvent, CouncilSessionEvent, SwapRequest, Problem):
            schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
            schemas.update(schema.pop("$defs", {}))
            schemas[model.__name__] = schema
        app.openapi_schema = document
    return app.openapi_schema


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

            span = self.tracer.start_span(
                f"{scope['method']} {scope['path']}",
                context=parent_context(headers),
                attributes={"http.request.method": scope["method"]},
            )
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
                self.logger.info(
                    "request",
                    extra={
                        "method": scope["method"],
                        "path": route,
                        "status": status,
                        "ms": round((time.perf_counter() - started) * 1000, 1),
                        "trace_id": trace_id_of(headers),
                    },
                )
