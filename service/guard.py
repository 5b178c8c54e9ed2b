"""What the API refuses before any route runs: a Host that is not loopback when auth is off (DNS
rebinding), a POST that is not JSON (a cross-site form or `text/plain` post needs no preflight),
a cookie-authenticated POST from another site (CSRF), and bodies over the limit of routes that
read them whole themselves (GraphQL). Plain ASGI, so a refusal costs no route work.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from starlette.requests import ClientDisconnect, Request

from .auth import TOKEN_COOKIE
from .problems import bounded_body, problem

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def host_name(value: str | None) -> str | None:
    """The name in a Host header or an Origin, without port or brackets, lower case."""
    if not value:
        return None
    try:
        return urlsplit(value if "//" in value else "//" + value).hostname
    except ValueError:
        return None


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _cookie_authenticated(headers: Mapping[str, str]) -> bool:
    return "authorization" not in headers and f"{TOKEN_COOKIE}=" in headers.get("cookie", "")


def _same_site(headers: Mapping[str, str]) -> bool:
    if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return False
    origin = headers.get("origin")
    if origin is None:
        return True  # browsers send Origin on every cross-site POST; a non-browser client has no cookie jar to abuse
    return urlsplit(origin).netloc.lower() == headers.get("host", "").lower()


class RequestGuard:
    def __init__(self, app, *, loopback_only: bool, post_paths: frozenset[str], body_limits: Mapping[str, int]) -> None:
        self.app, self.loopback_only, self.body_limits = app, loopback_only, dict(body_limits)
        self.post_paths = post_paths  # the routes that take a POST (others answer 405 as before)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if self.loopback_only and host_name(headers.get("host")) not in LOOPBACK_NAMES:
            await self._refuse(
                scope,
                receive,
                send,
                421,
                "misdirected request",
                f"with auth off the API answers only requests addressed to localhost, 127.0.0.1 or "
                f"[::1], not {headers.get('host', '(no Host)')!r}; set BIAS_AUDIT_JWT_SECRET to "
                "serve other names",
                "wrong_host",
            )
            return
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in self.post_paths:
            await self.app(scope, receive, send)
            return
        if not _is_json(headers.get("content-type", "")):
            await self._refuse(
                scope,
                receive,
                send,
                415,
                "the body is not sent as application/json",
                "send the body as JSON with Content-Type: application/json",
                "unsupported_media_type",
            )
            return
        if _cookie_authenticated(headers) and not _same_site(headers):
            await self._refuse(
                scope,
                receive,
                send,
                403,
                "forbidden",
                "a request signed in by cookie must come from this site's own pages; other clients "
                "send Authorization: Bearer <JWT>",
                "cross_site",
            )
            return
        limit = self.body_limits.get(scope["path"])
        if limit is None:
            await self.app(scope, receive, send)
            return
        try:
            whole = await bounded_body(Request(scope, receive), limit)
        except ClientDisconnect:
            return
        if whole is None:
            await self._refuse(
                scope,
                receive,
                send,
                413,
                "the body is over the size limit",
                f"body is over the limit of {limit} bytes",
                "too_large",
            )
            return
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": whole, "more_body": False}

        await self.app(scope, replay, send)

    @staticmethod
    async def _refuse(scope, receive, send, status: int, title: str, detail: str, kind: str) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": detail[:120]})
            return
        await problem(status, title, detail, f"urn:bias-audit:problem:{kind}")(scope, receive, send)
