"""The worker's Redis clients pack commands with hiredis: the same bytes as redis-py's own packing,
its errors where hiredis takes nothing, and the URL scheme's connection class kept."""

from __future__ import annotations

import asyncio

import pytest
from redis.asyncio.connection import Connection, SSLConnection, UnixDomainSocketConnection
from redis.exceptions import DataError

from bias_audit.worker.redis_clients import HiredisPacking, redis_client


class _Packing(HiredisPacking, Connection):
    pass


def _bytes(chunks: list) -> bytes:
    return b"".join(bytes(chunk) for chunk in chunks)


COMMANDS = [
    ("SET", "k", "v"),
    ("CONFIG GET", "maxmemory"),  # a two-word command name: sent as two words
    (b"CLIENT SETNAME", "worker-1"),
    ("XADD", "bias.audit.stream", "MAXLEN", "~", 100_000, "*", "data", b"\x00\xff{\"a\": 1}", "n", 1.5),
    ("SET", "k", "h\u00e9llo \u2713 \U0001d11e"),  # UTF-8
    ("ZADD", "order", 1_790_000_000_000, "s1", -0.0, "s2", 1e-7, "s3", 1e16, "s4", 0.1, "s5"),
    ("SET", "big", 2**70, "neg", -(2**63), "huge", 1e300, "tiny", 5e-324),
    ("EVALSHA", "a" * 40, 3, "k1", "k2", "k3", *(str(i) for i in range(2_000))),
    ("PING",),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: str(c[0]))
def test_commands_pack_to_redis_pys_bytes(command):
    assert _bytes(_Packing().pack_command(*command)) == _bytes(Connection().pack_command(*command))


def test_what_hiredis_does_not_take_goes_through_redis_pys_packing():
    view = memoryview(b"value")
    assert _bytes(_Packing().pack_command("SET", "k", view)) == _bytes(Connection().pack_command("SET", "k", view))
    with pytest.raises(DataError, match="bool"):
        _Packing().pack_command("SET", "k", True)
    latin = dict(encoding="latin-1")
    assert (_bytes(_Packing(**latin).pack_command("SET", "k", "caf\u00e9"))
            == _bytes(Connection(**latin).pack_command("SET", "k", "caf\u00e9")) == b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\ncaf\xe9\r\n")


def test_pipelines_pack_the_same_bytes():
    commands = [command for command in COMMANDS if command[0] != "PING"]
    assert _bytes(_Packing().pack_commands(commands)) == _bytes(Connection().pack_commands(commands))


@pytest.mark.parametrize("url, base", [
    ("redis://localhost:6379/0", Connection),
    ("rediss://localhost:6380/0", SSLConnection),
    ("unix:///run/redis.sock?db=1", UnixDomainSocketConnection),
])
def test_the_scheme_chooses_the_connection_class_as_before(url, base):
    connection_class = redis_client(url).connection_pool.connection_class
    assert issubclass(connection_class, HiredisPacking) and issubclass(connection_class, base)


@pytest.mark.redis
def test_a_real_redis_reads_back_what_was_packed(redis_url):
    async def round_trip() -> list:
        client = redis_client(redis_url)
        try:
            async with client.pipeline(transaction=True) as pipe:
                pipe.set("packing:text", "h\u00e9llo \u2713")
                pipe.zadd("packing:order", {"a": 1.5, "b": 1e16})
                pipe.xadd("packing:stream", {"data": b"\x00\xff", "n": 7})
                pipe.get("packing:text")
                pipe.zrange("packing:order", 0, -1, withscores=True)
                pipe.xrange("packing:stream")
                return await pipe.execute()
        finally:
            await client.aclose()

    replies = asyncio.run(round_trip())
    assert replies[3] == "h\u00e9llo \u2713".encode()
    assert replies[4] == [(b"a", 1.5), (b"b", 1e16)]
    assert replies[5][0][1] == {b"data": b"\x00\xff", b"n": b"7"}
