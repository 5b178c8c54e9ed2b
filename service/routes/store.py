"""The routes over the audit store: GraphQL at /graphql, GET /audits/{id} and the review page."""

from __future__ import annotations

import json
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends
from fastapi.responses import Response
from starlette.requests import HTTPConnection

from ..auth import READ, Principal
from ..problems import packaged_page, problem
from ..state import ApiState, principal, state_of, trace_id_of

router = APIRouter()


@router.get("/audits/{audit_id}", summary="One stored LLM interaction audit")
async def get_audit(
    audit_id: str, caller: Annotated[Principal, Depends(principal)], state: Annotated[ApiState, Depends(state_of)]
) -> Response:
    """The stored audit of one LLM interaction, within the token's tenants (another tenant's is
    404, as a missing one)."""
    if not caller.can(READ):
        return problem(
            403,
            "forbidden",
            "reading audits needs the role reviewer, auditor or admin",
            "urn:bias-audit:problem:forbidden",
        )
    from bias_audit.storage.postgres.audit_api import InvalidInput

    try:
        row = await state.audit_store.interaction(caller.scope(None), audit_id)
    except InvalidInput as error:
        return problem(400, "bad id", str(error), "urn:bias-audit:problem:invalid")
    if row is None:
        return problem(404, "not found", f"no interaction audit {audit_id!r}", "urn:bias-audit:problem:not_found")
    return Response(orjson.dumps(row, default=str), media_type="application/json")


@router.get("/review", summary="The review page", response_class=Response)
async def review_page() -> Response:
    return packaged_page("review.html")


@router.get("/review.js", include_in_schema=False)
async def review_script() -> Response:
    return packaged_page("review.js")


def graphql_router() -> APIRouter:
    """The GraphQL schema over the store, its context built per request from the app's state."""
    from strawberry.fastapi import GraphQLRouter

    from ..graphql_api import loaders, schema

    async def graphql_context(request: HTTPConnection) -> dict[str, Any]:  # a WebSocket too: then refused
        state = state_of(request)
        return {
            "principal": principal(request),
            "store": state.audit_store,
            "report": state.report,
            "judge_report": state.judge_report,
            "group_disparity": state.group_disparity,
            "trace_id": trace_id_of(request.headers),
            "reviews_counter": state.metrics.reviews,
            "report_slots": state.report_slots,
            **loaders(state.audit_store),
        }

    class Router(GraphQLRouter):
        def encode_json(self, data: object) -> bytes:
            # a page's answer is hundreds of values: orjson writes them several times faster; the
            # standard library only for what orjson refuses (an integer past 64 bits in a JSON field)
            try:
                return orjson.dumps(data)
            except TypeError:
                return json.dumps(data, separators=(",", ":")).encode()

    # no subscriptions (over WebSocket) and no queries over GET: every operation is a bounded POST
    return Router(
        schema,
        path="/graphql",
        context_getter=graphql_context,
        graphql_ide=None,
        subscription_protocols=(),
        allow_queries_via_get=False,
    )
