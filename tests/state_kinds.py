"""The worker's state (windows, alert state, judge games, task suggestions) of each kind, in
process or on Redis, for one contract suite over both: what one kind does, the other must."""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis

from bias_audit.analysis.tasks import TaskPolicy
from bias_audit.state.alert_state import AlertLimits, MemoryAlertState, RedisAlertState
from bias_audit.state.game_memory import MemoryGameMemory, RedisGameMemory

KINDS = ("memory", "redis")


class States:
    """Made inside the test's event loop (`async with`): each state object of one kind. The
    memory kind hands out one object per kind of state, so two holders share it as two workers
    share one Redis."""

    def __init__(self, redis_url: str | None) -> None:
        self.redis_url = redis_url
        self.client: Redis | None = None
        self._shared: dict[str, Any] = {}

    @property
    def kind(self) -> str:
        return "memory" if self.redis_url is None else "redis"

    async def __aenter__(self) -> States:
        if self.redis_url is not None:
            self.client = Redis.from_url(self.redis_url)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.client is not None:
            await self.client.aclose()

    def games(self, ttl_s: int = 60, prefix: str = "games-test") -> Any:
        if self.client is None:
            return self._shared.setdefault("games", MemoryGameMemory())
        return RedisGameMemory(self.client, ttl_s=ttl_s, prefix=prefix)

    def tasks(self, policy: TaskPolicy, prefix: str = "tasks-test") -> Any:
        from bias_audit.state.task_state import MemoryTaskState, RedisTaskState

        if self.client is None:
            return self._shared.setdefault("tasks", MemoryTaskState(policy))
        return RedisTaskState(self.client, policy, prefix=prefix)

    def alerts(self, limits: AlertLimits = AlertLimits(), prefix: str = "alerts-test") -> Any:
        if self.client is None:
            return self._shared.setdefault("alerts", MemoryAlertState(limits))
        return RedisAlertState(self.client, limits, prefix=prefix)
