"""What the judges' windows remember about verdicts beyond their sums. Each judged game's verdict
direction, for its swapped partner: a judge's window counts position consistency when the second
game of a pair is counted, from the first game's direction (per judge window a Redis hash, its
keys sharing the window's cluster slot, expiring with the window). And each verdict id's content
fingerprint per tenant: an id sent again with other content (under another judge, say) is told
apart from a redelivery (a key per id, expiring with the window). In memory for one process
(`audit`, `serve`, tests)."""

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

    async def claim(self, ids: list[tuple[str, str, str]]) -> list[str | None]:
        """For each (tenant, verdict id, content fingerprint), in order: None when the id is new
        (now claimed) or was claimed with this fingerprint; else the fingerprint it was claimed
        with first."""
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
        return [
            None if found is None else found.decode() if isinstance(found, bytes) else str(found)
            for found in replies[1::3]
        ]

    async def claim(self, ids: list[tuple[str, str, str]]) -> list[str | None]:
        if not ids:
            return []
        async with self.client.pipeline(transaction=False) as pipe:
            for tenant, verdict_id, fingerprint in ids:
                key = f"{self.prefix}:verdict-id:{{{tenant}}}:{verdict_id}"
                pipe.set(key, fingerprint, nx=True, ex=self.ttl_s)
                pipe.get(key)
            replies = await pipe.execute()
        first = [found.decode() if isinstance(found, bytes) else str(found) for found in replies[1::2]]
        return [None if claimed == fingerprint else claimed for claimed, (_, _, fingerprint) in zip(first, ids)]


class MemoryGameMemory:
    """Bounded: the oldest games are forgotten first, as Redis forgets an idle window's."""

    def __init__(self, max_games: int | None = 200_000) -> None:
        self.max_games = max_games
        self._games: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._ids: OrderedDict[tuple[str, str], str] = OrderedDict()

    async def exchange(self, games: list[Game]) -> list[str | None]:
        out = []
        for game in games:
            self._games[(game.window_id, game.key)] = game.direction
            out.append(self._games.get((game.window_id, game.partner)))
            while self.max_games is not None and len(self._games) > self.max_games:
                self._games.popitem(last=False)
        return out

    async def claim(self, ids: list[tuple[str, str, str]]) -> list[str | None]:
        out = []
        for tenant, verdict_id, fingerprint in ids:
            claimed = self._ids.setdefault((tenant, verdict_id), fingerprint)
            out.append(None if claimed == fingerprint else claimed)
            while self.max_games is not None and len(self._ids) > self.max_games:
                self._ids.popitem(last=False)
        return out
