"""The first answer the API gave for each (tenant, kind, id), kept so that a repeated request (a
client's retry) gets it again, and only its own tenant's: in the process, or in Redis when several
processes answer on one port and a retry may reach another one."""

from __future__ import annotations

from collections import OrderedDict
from typing import Protocol

from redis.asyncio import Redis

from .redis_window import tenant_keys

Key = tuple[str, str, str]  # (tenant, kind, id)
DIGEST_CHARS = 64  # a sha256 in hex: the body the answer came from


class FirstAnswers(Protocol):
    async def first(self, key: Key) -> tuple[bytes, str] | None:
        """(the answer as sent, the sha256 of its request's body), or None when not kept."""
        ...

    async def put(self, key: Key, answer: bytes, digest: str = "") -> None: ...


class ResultCache:
    """In the process, bounded by count and by bytes (oldest out first)."""

    def __init__(self, size: int = 10_000, max_bytes: int = 32 * 1024 * 1024) -> None:
        self.size, self.max_bytes = size, max_bytes
        self.bytes = 0
        self._answers: OrderedDict[Key, tuple[bytes, str]] = OrderedDict()

    async def first(self, key: Key) -> tuple[bytes, str] | None:
        return self._answers.get(key)

    async def put(self, key: Key, answer: bytes, digest: str = "") -> None:
        if len(answer) > self.max_bytes:
            return
        old = self._answers.pop(key, None)
        self.bytes += len(answer) - (len(old[0]) if old is not None else 0)
        self._answers[key] = (answer, digest)
        while len(self._answers) > self.size or self.bytes > self.max_bytes:
            _, (gone, _) = self._answers.popitem(last=False)
            self.bytes -= len(gone)

    def __len__(self) -> int:
        return len(self._answers)


class RedisResultCache:
    """In Redis, for every process that points at it; each answer for `ttl_s` (retries come within
    minutes, and at 100 answers a second an hour of them would be a gigabyte). The first answer
    stays: a second writer of the same id does not replace it."""

    def __init__(self, client: Redis, prefix: str = "bias-audit", ttl_s: int = 600, max_bytes: int = 1 << 20) -> None:
        self.client, self.prefix, self.ttl_s, self.max_bytes = client, prefix, ttl_s, max_bytes

    def _key(self, key: Key) -> str:
        tenant, kind, event_id = key
        return f"{tenant_keys(self.prefix, tenant)['answer']}{kind}:{event_id}"  # in the tenant's slot

    async def first(self, key: Key) -> tuple[bytes, str] | None:
        value = await self.client.get(self._key(key))
        if not isinstance(value, bytes):  # None: not kept (the client returns bytes: no decode_responses)
            return None
        return value[DIGEST_CHARS:], value[:DIGEST_CHARS].decode().strip()

    async def put(self, key: Key, answer: bytes, digest: str = "") -> None:
        if len(answer) > self.max_bytes:
            return
        value = digest.encode().ljust(DIGEST_CHARS)[:DIGEST_CHARS] + answer
        await self.client.set(self._key(key), value, ex=self.ttl_s, nx=True)
