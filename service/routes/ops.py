"""Where things are, liveness, readiness, metrics and the OpenAPI pages."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI
from fastapi.responses import PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ..state import ApiState, state_of

router = APIRouter()


@router.get("/", summary="Where things are")
async def index() -> dict[str, str]:
    return {"docs": "/docs", "openapi": "/openapi.json", "graphql": "/graphql", "review": "/review",
            "health": "/healthz", "metrics": "/metrics"}


@router.get("/healthz", summary="Liveness")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="Readiness: lexicons and models loaded")
async def readyz() -> dict[str, str]:
    return {"status": "ready"}


@router.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics")
async def metrics(state: Annotated[ApiState, Depends(state_of)]) -> PlainTextResponse:
    return PlainTextResponse(generate_latest(state.metrics.registry).decode(), media_type=CONTENT_TYPE_LATEST)


def mount_docs(app: FastAPI) -> None:
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
