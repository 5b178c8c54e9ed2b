"""/healthz (liveness; also /healthz/live), /readyz (readiness; also /healthz/ready) and /metrics (Prometheus) on the ops port.

aiohttp runs in the worker's own event loop: a probe answers only if the loop is not blocked.
"""

from __future__ import annotations

import logging
from typing import Protocol

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from .metrics import WorkerMetrics

log = logging.getLogger("bias_audit.ops")


class Probed(Protocol):
    def liveness(self) -> tuple[bool, str]: ...

    async def readiness(self) -> tuple[bool, str]: ...


def _answer(ok: bool, detail: str, status: str) -> web.Response:
    return web.json_response({"status": status if ok else "failing", "detail": detail}, status=200 if ok else 503)


def ops_app(worker: Probed, metrics: WorkerMetrics) -> web.Application:
    async def healthz(_request: web.Request) -> web.Response:
        ok, detail = worker.liveness()
        return _answer(ok, detail, "alive")

    async def readyz(_request: web.Request) -> web.Response:
        ok, detail = await worker.readiness()
        return _answer(ok, detail, "ready")

    async def metrics_page(_request: web.Request) -> web.Response:
        response = web.Response(body=metrics.exposition())
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/healthz/live", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/healthz/ready", readyz)
    app.router.add_get("/metrics", metrics_page)
    return app


class OpsServer:
    """Started and stopped by the worker; port 0 picks a free port, a negative port disables it."""

    def __init__(self, worker: Probed, metrics: WorkerMetrics, host: str, port: int) -> None:
        self.app = ops_app(worker, metrics)
        self.host = host
        self.port = port
        self.runner: web.AppRunner | None = None
        self.bound_port: int | None = None

    async def start(self) -> None:
        if self.port < 0:
            return
        self.runner = web.AppRunner(self.app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, self.host, self.port)
        try:
            await site.start()
        except OSError as error:  # the worker still works; the probes will say it is not healthy
            log.error("ops server could not listen", extra={"port": self.port, "error": str(error)})
            await self.runner.cleanup()
            self.runner = None
            return
        self.bound_port = self.runner.addresses[0][1]  # the real port when 0 was asked
        log.info(
            "ops server listening",
            extra={"host": self.host, "port": self.bound_port, "paths": ["/healthz", "/readyz", "/metrics"]},
        )

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
