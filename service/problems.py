"""RFC 9457 problem+json answers and the request-body helpers every route shares: a body is read
raw, bounded, and turned into a one-line reason when it is not what the route takes."""

from __future__ import annotations

from importlib import resources
from typing import Any, TypeVar

from fastapi import Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ValidationError

from bias_audit.consumers.envelope import describe_validation_error

PROBLEM = "application/problem+json"
# the pages' headers: no inline script (an injected tag cannot run), no framing by other sites
# (clickjacking); images from this origin or data: URIs (Swagger UI's icons)
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def packaged_page(name: str) -> Response:
    """A file of the package (the review page, the API docs and their scripts) with the pages' headers."""
    media = "text/javascript" if name.endswith(".js") else "text/html"
    return Response(
        resources.files("bias_audit.service").joinpath(name).read_bytes(),
        media_type=f"{media}; charset=utf-8",
        headers=PAGE_HEADERS,
    )


STATUS_FOR = {"too_large": 413, "invalid_json": 400, "invalid_event": 422, "wrong_topic": 422, "id_conflict": 409}


class Problem(BaseModel):
    """RFC 9457 problem details; `detail` is one sentence a person can act on."""

    type: str
    title: str
    status: int
    detail: str


def problem(
    status: int, title: str, detail: str, kind: str = "about:blank", headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"type": kind, "title": title, "status": status, "detail": detail},
        status_code=status,
        media_type=PROBLEM,
        headers=headers,
    )


PROBLEMS = {
    400: "the body is not a UTF-8 JSON object",
    409: "the id was used for another event",
    413: "the body is over the size limit",
    415: "the body is not sent as application/json",
    422: "the event does not follow the contract",
}
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"description": text, "content": {PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}}}}
    for status, text in PROBLEMS.items()
}


def body_schema(model: type[BaseModel]) -> dict:
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}},
        }
    }


Body = TypeVar("Body", bound=BaseModel)


async def request_model(request: Request, model: type[Body], limit: int) -> Body | Response:
    """The request's JSON body as the model, or the problem+json answer saying why not (413 over
    the limit, 422 not the model)."""
    body = await bounded_body(request, limit)
    if body is None:
        return problem(
            413, PROBLEMS[413], f"body is over the limit of {limit} bytes", "urn:bias-audit:problem:too_large"
        )
    try:
        return model.model_validate_json(body)
    except ValidationError as error:
        return problem(422, PROBLEMS[422], describe_validation_error(error), "urn:bias-audit:problem:invalid")


async def bounded_body(request: Request, limit: int) -> bytes | None:
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
