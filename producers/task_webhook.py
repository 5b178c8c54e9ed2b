"""Task suggestions POSTed to the operator's webhook, signed, retried, never in the stream's way.

`X-Bias-Audit-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." + body>` with
BIAS_AUDIT_TASK_WEBHOOK_SECRET (at least 32 bytes): the time is signed, so a receiver that refuses
signatures older than a few minutes cannot be fed a captured request again (docs/review-loop.md).
Sent from a background task off a bounded queue: `submit` never waits; a full queue drops the
oldest suggestion with a log line (it is on `bias.audit.tasks` either way). A failed POST (network
error, 429 or 5xx) is retried with exponential backoff up to `max_attempts`; other 4xx are not.
Redirects are not followed: a 3xx would carry the body and its signature to another host.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
from urllib.parse import urlsplit

log = logging.getLogger("bias_audit.tasks")


def signature(body: bytes, secret: bytes, at: int) -> str:
    """The header's value for `body` sent at unix time `at`."""
    return f"t={at},v1=" + hmac.new(secret, f"{at}.".encode() + body, hashlib.sha256).hexdigest()


def where(url: str) -> str:
    """Scheme, host and port only: a URL's credentials and query (a token, say) stay out of logs."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}"


class TaskWebhook:
    def __init__(
        self,
        url: str,
        secret: bytes,
        *,
        max_attempts: int = 5,
        queue_size: int = 1_000,
        first_backoff_s: float = 0.5,
        timeout_s: float = 10.0,
    ) -> None:
        self.url, self.secret = url, secret
        self.max_attempts, self.first_backoff_s, self.timeout_s = max_attempts, first_backoff_s, timeout_s
        self.queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=queue_size)
        self._sender: asyncio.Task | None = None
        self.sent = self.failed = 0

    def submit(self, body: bytes) -> None:
        if self.queue.full():
            self.queue.get_nowait()
            log.warning("task webhook queue full: the oldest suggestion was dropped (it is on bias.audit.tasks)")
        self.queue.put_nowait(body)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send_all())

    async def _send_all(self) -> None:
        import aiohttp

        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout_s)) as session:
            while not self.queue.empty():
                await self._send(session, self.queue.get_nowait())

    async def _send(self, session, body: bytes) -> None:
        import aiohttp

        for attempt in range(1, self.max_attempts + 1):
            headers = {
                "content-type": "application/json",
                "X-Bias-Audit-Signature": signature(body, self.secret, int(time.time())),
            }
            try:
                async with session.post(self.url, data=body, headers=headers, allow_redirects=False) as reply:
                    if reply.status < 300:
                        self.sent += 1
                        return
                    if reply.status != 429 and reply.status < 500:
                        break  # the receiver refuses it (or sends it elsewhere): retrying will not help
                    reason = f"HTTP {reply.status}"
            except (aiohttp.ClientError, asyncio.TimeoutError) as error:
                reason = type(error).__name__
            if attempt < self.max_attempts:
                await asyncio.sleep(self.first_backoff_s * 2 ** (attempt - 1))
                log.info("task webhook retry", extra={"attempt": attempt, "reason": reason})
        self.failed += 1
        log.warning("task webhook gave up on a suggestion", extra={"url": where(self.url)})

    async def drain(self, timeout_s: float = 5.0) -> None:
        """Give the suggestions in hand a moment to go out (a stopping worker)."""
        if self._sender is not None and not self._sender.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._sender), timeout_s)
            except asyncio.TimeoutError:
                log.warning("task webhook: stopping with suggestions unsent", extra={"left": self.queue.qsize()})
