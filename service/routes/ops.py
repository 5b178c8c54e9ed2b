"""Where things are, liveness, readiness, metrics and the OpenAPI pages."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI
from fastapi.responses import PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from ..problems import packaged_page
from ..state import ApiState, state_of

router = APIRouter()


@router.get("/", summary="Where things are")
async def index() -> dict[str, str]:
    return {
        "docs": "/docs",
        "openapi": "/openapi.json",
        "graphql": "/graphql",
        "review": "/review",
        "health": "/healthz",
        "metrics": "/metrics",
    }


@router.get("/favicon.ico", include_in_schema=False, status_code=204)
async def favicon() -> Response:
    """Browsers ask for it on every page: no icon, and no 404 in the log."""
    return Response(status_code=204)


@router.get("/healthz", summary="Liveness")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="Readiness: lexicons and models loaded")
async def readyz() -> dict[str, str]:
    return {"status": "ready"}


@router.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics")
async def metrics(state: Annotated[ApiState, Depends(state_of)]) -> PlainTextResponse:
    return PlainTextResponse(state.metrics.exposition().decode(), media_type=CONTENT_TYPE_LATEST)


def mount_docs(app: FastAPI) -> None:
    """/docs with Swagger UI's files from the fastapi-swagger package, not a CDN: the page works
    offline and behind a strict proxy; the review page's headers (CSP, no framing)."""
    from fastapi.staticfiles import StaticFiles

    app.mount("/docs-assets", StaticFiles(packages=[("fastapi_swagger", "resources")]), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> Response:
        return packaged_page("docs.html")

    @app.get("/docs.js", include_in_schema=False)
    async def docs_script() -> Response:
        return packaged_page("docs.js")
