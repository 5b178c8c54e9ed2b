"""Lua script calls on Redis: one call or a pipeline of them, and batches of calls sent in rounds
that overlap Redis's work with this process's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError, ResponseError

Call = tuple[list[str], list[Any]]  # a script call's keys and arguments
Round = TypeVar("Round")


async def run_script(client: Redis, script: AsyncScript, calls: list[Call]) -> list[Any]:
    """One EVALSHA per (keys, args), in the order given. A single call goes alone: a pipeline
    that holds a script first asks SCRIPT EXISTS, a second round trip (~0.3 ms a batch here);
    several (one per tenant of the batch) share one pipeline."""
    if len(calls) == 1:
        keys, args = calls[0]
        return [await script(keys=keys, args=args)]
    async with client.pipeline(transaction=False) as pipe:
        for keys, args in calls:
            await script(keys=keys, args=args, client=pipe)
        return list(await pipe.execute())


class SentScripts:
    """Script calls written to Redis now, their replies read later (`replies`), on a connection of
    the client's pool held in between: the worker prepares the next calls, or replays the last
    ones, while Redis runs these (it waited ~15 ms a batch of 200 for the window's script)."""

    def __init__(self, client: Redis, script: AsyncScript, calls: list[Call], connection: Any) -> None:
        self.client, self.script, self.calls, self.connection = client, script, calls, connection

    @classmethod
    async def send(cls, client: Redis, script: AsyncScript, calls: list[Call]) -> SentScripts:
        connection = await client.connection_pool.get_connection()
        sent = cls(client, script, calls, connection)
        try:
            await connection.send_packed_command(connection.pack_commands(
                [("EVALSHA", script.sha, len(keys), *keys, *args) for keys, args in calls]))
        except BaseException:
            await sent.discard()
            raise
        return sent

    async def replies(self) -> list[Any]:
        """The calls' replies in order. A call Redis did not know the script for (its cache was
        flushed: nothing of that call ran) is loaded and run again, after the others (the calls
        of one round touch different keys, one tenant's each: their order does not matter)."""
        connection, replies = self.connection, []
        try:
            for _ in self.calls:
                try:
                    replies.append(await connection.read_response())
                except ResponseError as error:  # the reply is read: the next one follows
                    replies.append(error)
        except BaseException:
            await self.discard()
            raise
        await self.client.connection_pool.release(connection)
        for index, reply in enumerate(replies):
            if isinstance(reply, NoScriptError):
                keys, args = self.calls[index]
                replies[index] = await self.script(keys=keys, args=args)  # loads it, then EVALSHA
            elif isinstance(reply, ResponseError):
                raise reply
        return replies

    async def discard(self) -> None:
        """The connection closed (with any reply unread) and given back to the pool."""
        await self.connection.disconnect()
        await self.client.connection_pool.release(self.connection)


async def script_rounds(client: Redis, script: AsyncScript, rounds: Sequence[Round],
                        build: Callable[[Round], list[Call]], finish: Callable[[Round, list[Any]], object]) -> None:
    """Each round's calls (`build`) sent once the previous round's replies are back, so Redis runs
    the rounds in order, and handed with their replies to `finish`: this process builds round
    k + 1 while Redis runs round k, and finishes round k while Redis runs round k + 1. One round
    is sent as run_script sends it."""
    if len(rounds) == 1:
        finish(rounds[0], await run_script(client, script, build(rounds[0])))
        return
    pending: tuple[Round, SentScripts] | None = None
    try:
        for round_ in rounds:
            calls = build(round_)  # while Redis runs the previous round
            previous = None
            if pending is not None:
                (waiting_round, waiting), pending = pending, None  # replies() gives its connection back, or closes it
                previous = (waiting_round, await waiting.replies())
            pending = (round_, await SentScripts.send(client, script, calls))
            if previous is not None:
                finish(*previous)  # while Redis runs this round
        assert pending is not None
        (last_round, last), pending = pending, None
        finish(last_round, await last.replies())
    finally:
        if pending is not None:  # failed while a round was in Redis: its replies go unread
            await pending[1].discard()
