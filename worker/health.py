"""Liveness and readiness checks the ops server asks the running worker for."""

from __future__ import annotations

import asyncio
import time


def unread(waiting_since: float | None, last_read: float, limit_s: float, now: float) -> tuple[bool, str]:
    """Alive unless entries wait for the group and no batch has been read for longer than
    `limit_s` (the read loop no longer reads): a read before the wait began counts from the wait.
    `waiting_since`: when entries were first seen waiting (None: none wait); `last_read`: when
    the batch handler last ran."""
    if waiting_since is not None and now - max(waiting_since, last_read) > limit_s:
        quiet = now - max(waiting_since, last_read)
        return False, f"entries wait and no batch was read for {quiet:.0f}s (limit {limit_s:.0f}s)"
    return True, "consuming"


def stalled(pipeline, limit_s: float) -> tuple[bool, str]:
    """Alive unless one batch has been in hand longer than `limit_s` (a wedged loop)."""
    since = pipeline.busy_since
    if since is not None and time.monotonic() - since > limit_s:
        return False, f"one batch has been in hand for {time.monotonic() - since:.0f}s (limit {limit_s:.0f}s)"
    return True, "consuming"


async def redis_reachable(clients: dict, timeout_s: float = 2.0) -> tuple[bool, str]:
    problems = []
    for name, client in clients.items():
        try:
            await asyncio.wait_for(client.ping(), timeout_s)
        except Exception as error:  # any failure means not ready; the reason is reported
            problems.append(f"{name} Redis unreachable: {error.__class__.__name__}: {error}")
    return (not problems), "; ".join(problems) or "broker and window store reachable"
