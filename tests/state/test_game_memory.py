"""What the judges' windows remember beyond their sums, in Redis and in memory alike: a swapped
game's partner, and the content each verdict id was first claimed with."""

from __future__ import annotations

import asyncio

from bias_audit.state.game_memory import Game

# (tenant, verdict id, fingerprint) in order -> the fingerprint it conflicts with, or None
CLAIMS = [
    (("acme", "v1", "aaa"), None),  # new: claimed
    (("acme", "v1", "aaa"), None),  # a redelivery: the same content
    (("acme", "v1", "bbb"), "aaa"),  # other content under the same id
    (("beta", "v1", "bbb"), None),  # another tenant's v1 is its own
    (("acme", "v2", "bbb"), None),
    (("acme", "v2", "ccc"), "bbb"),  # in the same batch as its first claim
]
GAMES = [Game("w", "i1:g1", "i1:g2", "1"), Game("w", "i1:g2", "i1:g1", "-1"), Game("w", "i2:g1", "i2:g2", "0")]


async def follow(memory) -> tuple[list, list]:
    return await memory.claim([ids for ids, _ in CLAIMS]), await memory.exchange(GAMES)


def test_ids_are_claimed_and_partners_exchanged_alike_in_memory_and_redis(states):
    async def run():
        async with states:
            found = await follow(states.games(ttl_s=60, prefix="games-test"))
            ttl = await states.client.ttl("games-test:verdict-id:{acme}:v1") if states.client else None
            return found, ttl

    (claims, partners), ttl = asyncio.run(run())
    assert claims == [expected for _, expected in CLAIMS]
    assert partners == [None, "1", None]
    assert ttl is None or 0 < ttl <= 60  # an id is remembered as long as the window, no longer
