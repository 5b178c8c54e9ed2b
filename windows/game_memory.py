"""Each judged game's verdict direction, remembered for its swapped partner: a judge's window
counts position consistency when the second game of a pair is counted, from the first game's
direction. Per judge window a Redis hash (its keys share the window's cluster slot), expiring
with the window; in memory for one process (`audit`, `serve`, tests)."""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple, Protocol

from redis.asyncio import Redis


class Game(NamedTuple):
    window_id: str  # the judge's window (consumers.verdicts.judge_window_id)
    key: str  # this game: item, candidates, repetition, game number
    partner: str  # the same with the other game number
    direction: str  # "1", "0", "-1", or "F" for a failed game


class GameMemory(Protocol):
    async def exchange(self, games: list[Game]) -> list[str | None]:
        """Remember each game's direction and answer its partner's (None when not seen), in
        order: of two games of a pair in one batch, the second finds the first."""
        ...


class RedisGameMemory:
    def __init__(self, client: Redis, ttl_s: int, prefix: str = "bias-audit") -> None:
        self.client, self.ttl_s, self.prefix = client, ttl_s, prefix

    async def exchange(self, games: list[Game]) -> list[str | None]:
        if not games:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for game in games:
                key = f"{self.prefix}:{{{game.window_id}}}:games"
                pipe.hset(key, game.key, game.direction)
                pipe.hget(key, game.partner)
                pipe.expire(key, self.ttl_s)
            replies = await pipe.execute()
        return [None if found is None else found.decode() if isinstance(found, bytes) else str(found)
                for found in replies[1::3]]


class MemoryGameMemory:
    """Bounded: the oldest games are forgotten first, as Redis forgets an idle window's."""

    def __init__(self, max_games: int | None = 200_000) -> None:
        self.max_games = max_games
        self._games: OrderedDict[tuple[str, str], str] = OrderedDict()

    async def exchange(self, games: list[Game]) -> list[str | None]:
        out = []
        for game in games:
            self._games[(game.window_id, game.key)] = game.direction
            out.append(self._games.get((game.window_id, game.partner)))
            while self.max_games is not None and len(self._games) > self.max_games:
                self._games.popitem(last=False)
        return out
