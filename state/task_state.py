"""Counts behind task suggestions, and the claim that makes one suggestion per onset across
workers. Per tenant and domain, per day: audited answers and answers flagged per bias type;
a few example audit ids per type. A claim is SET NX with the cooldown as its expiry, holding the
suggestion itself (and the delivery that made it), so a retry of that delivery publishes it again.

In Redis (shared by the workers) or in memory (one process: tests, `serve`).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from redis.asyncio import Redis

from bias_audit.analysis.tasks import TaskPolicy

EXAMPLES = 5


@dataclass(frozen=True)
class Sighting:
    tenant_id: str
    domain: str
    day: int  # days since the epoch (the event's time)
    bias_types: tuple[str, ...]
    audit_id: str


@dataclass
class DomainTotals:
    total: int = 0
    flagged: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)
    first_day: int = 0
    last_day: int = 0


class TaskState(Protocol):
    async def count(self, sightings: Sequence[Sighting], today: int) -> dict[tuple[str, str], DomainTotals]: ...

    async def claim(self, tenant_id: str, domain: str, bias_type: str, document: str) -> bool: ...

    async def claimed(self, tenant_id: str, domain: str, bias_type: str) -> str | None: ...

    async def open_tasks(self, tenant_id: str, domain: str) -> dict[str, str]: ...

    async def resolve(self, tenant_id: str, domain: str, bias_type: str) -> bool: ...


class MemoryTaskState:
    def __init__(self, policy: TaskPolicy = TaskPolicy(), clock: Callable[[], float] = time.monotonic) -> None:
        self.policy, self.clock = policy, clock
        self._days: dict[tuple[str, str, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self._examples: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        self._claims: dict[tuple[str, str, str], tuple[float, str]] = {}
        self._open: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)

    async def count(self, sightings: Sequence[Sighting], today: int) -> dict[tuple[str, str], DomainTotals]:
        """Add the sightings; per (tenant, domain) sighted, the window's totals, the window being
        the last `window_days` days up to `today` (the later of now and the newest sighting)."""
        last: dict[tuple[str, str], int] = {}
        for s in sightings:
            counts = self._days[(s.tenant_id, s.domain, s.day)]
            counts["total"] += 1
            for bias_type in s.bias_types:
                counts[bias_type] += 1
                examples = self._examples[(s.tenant_id, s.domain, bias_type)]
                examples.insert(0, s.audit_id)
                del examples[EXAMPLES:]
            last[(s.tenant_id, s.domain)] = max(last.get((s.tenant_id, s.domain), today), s.day)
        out = {}
        for (tenant, domain), newest in last.items():
            totals = DomainTotals(first_day=newest - self.policy.window_days + 1, last_day=newest)
            for day in range(totals.first_day, newest + 1):
                for name, value in self._days.get((tenant, domain, day), {}).items():
                    if name == "total":
                        totals.total += value
                    else:
                        totals.flagged[name] = totals.flagged.get(name, 0) + value
            totals.examples = {t: list(self._examples[(tenant, domain, t)]) for t in totals.flagged}
            out[(tenant, domain)] = totals
        return out

    async def claim(self, tenant_id: str, domain: str, bias_type: str, document: str) -> bool:
        key = (tenant_id, domain, bias_type)
        held = self._claims.get(key)
        if held is not None and held[0] > self.clock():
            return False
        self._claims[key] = (self.clock() + self.policy.cooldown_days * 86_400, document)
        self._open[(tenant_id, domain)][bias_type] = document
        return True

    async def claimed(self, tenant_id: str, domain: str, bias_type: str) -> str | None:
        held = self._claims.get((tenant_id, domain, bias_type))
        return held[1] if held is not None and held[0] > self.clock() else None

    async def open_tasks(self, tenant_id: str, domain: str) -> dict[str, str]:
        return dict(self._open.get((tenant_id, domain), {}))

    async def resolve(self, tenant_id: str, domain: str, bias_type: str) -> bool:
        return self._open[(tenant_id, domain)].pop(bias_type, None) is not None


class RedisTaskState:
    """Day hashes `{prefix}:{tenant}:tasks:{domain}:{day}` (fields: total and each bias type),
    kept a day past the window; example lists per type; claims with the cooldown as expiry. The
    tenant is the hash tag: one tenant's keys share a cluster slot."""

    def __init__(self, client: Redis, policy: TaskPolicy = TaskPolicy(), prefix: str = "bias-audit") -> None:
        self.client, self.policy, self.prefix = client, policy, prefix

    def _base(self, tenant: str) -> str:
        return f"{self.prefix}:{{{tenant}}}"

    async def count(self, sightings: Sequence[Sighting], today: int) -> dict[tuple[str, str], DomainTotals]:
        if not sightings:
            return {}
        keep_s = (self.policy.window_days + 1) * 86_400
        last: dict[tuple[str, str], int] = {}
        async with self.client.pipeline(transaction=False) as pipe:
            for s in sightings:
                day_key = f"{self._base(s.tenant_id)}:tasks:{s.domain}:{s.day}"
                pipe.hincrby(day_key, "total", 1)
                for bias_type in s.bias_types:
                    pipe.hincrby(day_key, bias_type, 1)
                    examples = f"{self._base(s.tenant_id)}:task-examples:{s.domain}:{bias_type}"
                    pipe.lpush(examples, s.audit_id)
                    pipe.ltrim(examples, 0, EXAMPLES - 1)
                    pipe.expire(examples, keep_s)
                pipe.expire(day_key, keep_s)
                last[(s.tenant_id, s.domain)] = max(last.get((s.tenant_id, s.domain), today), s.day)
            await pipe.execute()
        groups = list(last.items())
        async with self.client.pipeline(transaction=False) as pipe:
            for (tenant, domain), newest in groups:
                for day in range(newest - self.policy.window_days + 1, newest + 1):
                    pipe.hgetall(f"{self._base(tenant)}:tasks:{domain}:{day}")
            replies = await pipe.execute()
        out: dict[tuple[str, str], DomainTotals] = {}
        for number, ((tenant, domain), newest) in enumerate(groups):
            totals = DomainTotals(first_day=newest - self.policy.window_days + 1, last_day=newest)
            for reply in replies[number * self.policy.window_days : (number + 1) * self.policy.window_days]:
                for name, value in reply.items():
                    name = name.decode() if isinstance(name, bytes) else name
                    if name == "total":
                        totals.total += int(value)
                    else:
                        totals.flagged[name] = totals.flagged.get(name, 0) + int(value)
            out[(tenant, domain)] = totals
        async with self.client.pipeline(transaction=False) as pipe:
            wanted = [(key, t) for key, totals in out.items() for t in totals.flagged]
            for (tenant, domain), bias_type in wanted:
                pipe.lrange(f"{self._base(tenant)}:task-examples:{domain}:{bias_type}", 0, EXAMPLES - 1)
            lists = await pipe.execute() if wanted else []
        for ((tenant, domain), bias_type), examples in zip(wanted, lists):
            out[(tenant, domain)].examples[bias_type] = [e.decode() if isinstance(e, bytes) else e for e in examples]
        return out

    def _claim_key(self, tenant: str, domain: str, bias_type: str) -> str:
        return f"{self._base(tenant)}:task-claim:{domain}:{bias_type}"

    def _open_key(self, tenant: str, domain: str) -> str:
        return f"{self._base(tenant)}:task-open:{domain}"

    async def claim(self, tenant_id: str, domain: str, bias_type: str, document: str) -> bool:
        if not await self.client.set(
            self._claim_key(tenant_id, domain, bias_type), document, nx=True, ex=self.policy.cooldown_days * 86_400
        ):
            return False
        open_key = self._open_key(tenant_id, domain)  # the open suggestions, until the bias recedes
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.hset(open_key, bias_type, document)
            pipe.expire(open_key, (self.policy.window_days + self.policy.cooldown_days) * 86_400)
            await pipe.execute()
        return True

    async def claimed(self, tenant_id: str, domain: str, bias_type: str) -> str | None:
        value = await self.client.get(self._claim_key(tenant_id, domain, bias_type))
        return value.decode() if isinstance(value, bytes) else value

    async def open_tasks(self, tenant_id: str, domain: str) -> dict[str, str]:
        found = await self.client.hgetall(self._open_key(tenant_id, domain))
        return {
            (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in found.items()
        }

    async def resolve(self, tenant_id: str, domain: str, bias_type: str) -> bool:
        """True for the one worker that removes it: that one publishes the resolution."""
        return bool(await self.client.hdel(self._open_key(tenant_id, domain), bias_type))
