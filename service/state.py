"""What the API's routes share, kept on `app.state.api`, and the caller as a dependency."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import count
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import HTTPConnection

from bias_audit.consumers.envelope import MAX_TRACE_ID_CHARS, trace_id_from_traceparent
from bias_audit.consumers.router import EventRouter

from .auth import ANONYMOUS, TOKEN_COOKIE, Principal, TokenVerifier, Unauthenticated

T = TypeVar("T")


class ApiMetrics:
    """The API's own Prometheus registry, served at /metrics."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        self.requests = Counter(
            "bias_audit_http_requests", "audit requests by kind", ["endpoint", "status"], registry=registry
        )
        self.by_route = Counter(
            "bias_audit_http_route_requests", "HTTP requests by route", ["route", "status"], registry=registry
        )
        self.reviews = Counter("bias_audit_reviews", "verdicts recorded by reviewers", ["verdict"], registry=registry)
        self.latency = Histogram(
            "bias_audit_http_seconds",
            "time to answer",
            ["endpoint"],
            registry=registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
        )

    def exposition(self) -> bytes:
        """This process's metrics; with several `serve` processes on the port, all of theirs summed
        (prometheus_client's multiprocess mode, which `serve` turns on for them), since a scrape
        reaches whichever process takes it."""
        shared = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        if not shared:
            return generate_latest(self.registry)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=shared)
        return generate_latest(registry)


class ReportSlots:
    """The reports being built: one at a time per caller (a token's subject), so one caller's burst
    cannot make everyone else's report wait, and at most `capacity` in all. A slot is held until
    the work it started has ended, even when the request that asked for it is gone: a thread
    cannot be stopped, so its slot is given back from inside it."""

    def __init__(self, capacity: int = 4, budget_s: float = 60.0) -> None:
        self.capacity = capacity
        self.budget_s = budget_s  # each report's time budget: then it stops and the answer says so
        self.busy: set[str] = set()
        self._lock = threading.Lock()

    def take(self, caller: str) -> bool:
        with self._lock:
            if caller in self.busy or len(self.busy) >= self.capacity:
                return False
            self.busy.add(caller)
            return True

    def release(self, caller: str) -> None:
        with self._lock:
            self.busy.discard(caller)

    async def run(self, caller: str, build: Callable[..., T], *args: Any) -> T:
        """build(*args, a Budget of budget_s) in a thread, in the caller's slot (taken already),
        given back when the thread ends."""
        from bias_audit.reports.budget import Budget

        def held() -> T:
            try:
                return build(*args, Budget(self.budget_s))
            finally:
                self.release(caller)

        # shielded: a cancelled request must not cancel the work before its thread starts (its slot
        # would never come back); the work's own failure is read here, or dropped with the request
        work = asyncio.ensure_future(asyncio.to_thread(held))
        work.add_done_callback(lambda done: done.cancelled() or done.exception())
        return await asyncio.shield(work)


@dataclass
class ApiState:
    consumer: EventRouter
    max_body_bytes: int
    llm_topic: str
    council_topic: str
    default_swaps: dict[str, str]
    verifier: TokenVerifier | None  # None: no auth (loopback, or --insecure-no-auth)
    audit_store: Any  # storage.postgres.audit_api's AuditStore, or None without a PostgreSQL store
    report: Any
    cache: Any
    verdicts_topic: str = "judge.verdicts"
    judge_report: Any = None  # (tenant) -> the judge report's document over the store, or None
    group_disparity: Any = None  # (tenant) -> live traffic's group disparity over the store, or None
    evaluations: Any = None  # producers.otlp's exporter of gen_ai.evaluation.result events, when configured
    metrics: ApiMetrics = field(default_factory=ApiMetrics)
    report_slots: ReportSlots = field(default_factory=ReportSlots)
    serial: Iterator[int] = field(default_factory=lambda: count(1))


def state_of(request: HTTPConnection) -> ApiState:
    state: ApiState = request.app.state.api
    return state


def principal(request: HTTPConnection) -> Principal:
    """The caller; a 401 problem when auth is on and the token is missing or does not verify."""
    verifier = state_of(request).verifier
    if verifier is None:
        return ANONYMOUS
    header = request.headers.get("authorization")
    if header is None and request.cookies.get(TOKEN_COOKIE):
        header = "Bearer " + request.cookies[TOKEN_COOKIE]
    try:
        return verifier.verify(header)
    except Unauthenticated as error:
        raise StarletteHTTPException(401, str(error), headers={"WWW-Authenticate": "Bearer"}) from None


def trace_id_of(headers) -> str | None:
    """The request's trace id: x-trace-id when it is a plain id, else W3C traceparent's (read
    as the transports read it)."""
    given = headers.get("x-trace-id")
    if given and len(given) <= MAX_TRACE_ID_CHARS and given.isprintable():
        return given
    return trace_id_from_traceparent(headers.get("traceparent"))
