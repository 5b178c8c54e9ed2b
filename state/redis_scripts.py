"""Lua script calls on Redis through redis-py's public API: one call alone, several in a pipeline."""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis
from redis.commands.core import AsyncScript

Call = tuple[list[str], list[Any]]  # a script call's keys and arguments


async def run_script(client: Redis, script: AsyncScript, calls: list[Call]) -> list[Any]:
    """One EVALSHA per (keys, args), in the order given. A single call goes alone (a pipeline
    that holds a script first asks SCRIPT EXISTS, a second round trip); several (one per tenant of
    the batch) share one pipeline, which loads the script if Redis has forgotten it."""
    if len(calls) == 1:
        keys, args = calls[0]
        return [await script(keys=keys, args=args)]
    async with client.pipeline(transaction=False) as pipe:
        for keys, args in calls:
            await script(keys=keys, args=args, client=pipe)
        return list(await pipe.execute())
