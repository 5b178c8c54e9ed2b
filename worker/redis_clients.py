"""The worker's asyncio Redis clients, with commands packed in C.

redis-py's synchronous connections pack commands with hiredis when it is installed; its asyncio
connections pack them in Python, ~9 us for an XADD of a result, and a batch sends several per
session (results, exactly-once markers, the window and alert scripts' long argument lists). The
clients made here swap in hiredis's packer on the class the URL's scheme chose (TCP, TLS or a
unix socket), and fall back to redis-py's own packing, with its errors, for anything hiredis
does not take (memoryviews, booleans, another encoding than strict UTF-8).
"""

from __future__ import annotations

from typing import Any

import hiredis
from redis.asyncio import Redis


class HiredisPacking:
    """Mixed in before a redis.asyncio connection class: the same bytes as its pack_command
    (tests/worker/test_redis_clients.py compares them), built in C."""

    def pack_command(self, *args: Any) -> list[Any]:
        encoder = self.encoder  # type: ignore[attr-defined]
        if encoder.encoding != "utf-8" or encoder.encoding_errors != "strict":
            return super().pack_command(*args)  # type: ignore[misc]
        command = args[0]
        # as redis-py does: a command name with a space ("CONFIG GET") is sent as two words
        if isinstance(command, str) and " " in command:
            args = (*command.encode().split(), *args[1:])
        elif isinstance(command, bytes) and b" " in command:
            args = (*command.split(), *args[1:])
        try:
            return [hiredis.pack_command(args)]
        except TypeError:  # not str, bytes, int or float: redis-py's path, and its DataError
            return super().pack_command(*args)  # type: ignore[misc]


def redis_client(url: str, **options: Any) -> Redis:
    """Redis.from_url(url, **options) whose connections pack commands with hiredis."""
    client = Redis.from_url(url, **options)
    pool = client.connection_pool
    base = pool.connection_class
    if not issubclass(base, HiredisPacking):
        pool.connection_class = type(f"Hiredis{base.__name__}", (HiredisPacking, base), {})
    return client
