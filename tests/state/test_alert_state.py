"""Alert state: the Redis script and the in-process store follow the same rules."""

from __future__ import annotations

import asyncio

import pytest
from redis.asyncio import Redis

from bias_audit.state.alert_state import AlertLimits, MemoryAlertState, RedisAlertState, Transition

# (wanted state, sequence) -> what happens, under a 0 s cooldown and 2 firings a minute
SCRIPT = [
    (("ok", 1), None),  # already ok
    (("firing", 3), ("fired", "a3")),
    (("ok", 2), None),  # an older session's view: ignored
    (("firing", 4), None),  # still firing: no second alert
    (("ok", 5), ("resolved", "a3")),  # resolved carries the firing's id
    (("firing", 6), ("fired", "a6")),
    (("ok", 7), ("resolved", "a6")),
    (("firing", 8), None),  # the third firing this minute: rate-limited, state unchanged
    (("ok", 9), None),
]


def transitions(key="reviewer_calibration:r1"):
    return [Transition("acme", key, wanted, sequence, f"a{sequence}") for (wanted, sequence), _ in SCRIPT]


def expected():
    return [outcome for _, outcome in SCRIPT]


LIMITS = AlertLimits(cooldown_s=0, max_per_minute=2)


def test_memory_state_follows_the_rules():
    state = MemoryAlertState(LIMITS, clock=lambda: 1000.0)
    assert [asyncio.run(state.apply([t]))[0] for t in transitions()] == expected()


@pytest.mark.redis
def test_redis_state_follows_the_same_rules(redis_url):
    async def run():
        client = Redis.from_url(redis_url)
        try:
            state = RedisAlertState(client, LIMITS, prefix="alert-test")
            return [(await state.apply([t]))[0] for t in transitions()]
        finally:
            await client.aclose()

    assert asyncio.run(run()) == expected()


@pytest.mark.redis
def test_redis_state_applies_a_batch_in_order_as_one_at_a_time(redis_url):
    """One script call per tenant: two tenants' and two keys' transitions interleaved in one
    batch give each its own answers, in the batch's order (the minute's firing limit is per tenant)."""
    interleaved = [
        (tenant, t) for pair in zip(transitions("k1"), transitions("k2")) for t in pair for tenant in ("acme", "beta")
    ]
    batch = [
        Transition(tenant, t.key, t.wanted, t.sequence, f"{tenant}-{t.key}-{t.sequence}") for tenant, t in interleaved
    ]

    async def run():
        client = Redis.from_url(redis_url)
        try:
            return await RedisAlertState(
                client, AlertLimits(cooldown_s=0, max_per_minute=4), prefix="alert-batch"
            ).apply(batch)
        finally:
            await client.aclose()

    memory = asyncio.run(
        MemoryAlertState(AlertLimits(cooldown_s=0, max_per_minute=4), clock=lambda: 1000.0).apply(batch)
    )
    assert asyncio.run(run()) == memory
    fired = [t for t, change in zip(batch, memory) if change and change[0] == "fired"]
    assert len(fired) == 8  # 4 per tenant: the limit, reached across both keys


def test_cooldown_keeps_a_cleared_alert_quiet():
    now = [0.0]
    state = MemoryAlertState(AlertLimits(cooldown_s=300, max_per_minute=30), clock=lambda: now[0])
    apply = lambda wanted, seq: asyncio.run(state.apply([Transition("t", "k", wanted, seq, f"a{seq}")]))[0]
    assert apply("firing", 1) == ("fired", "a1")
    assert apply("ok", 2) == ("resolved", "a1")
    now[0] = 100.0
    assert apply("firing", 3) is None  # within the cooldown
    now[0] = 400.0
    assert apply("firing", 4) == ("fired", "a4")


@pytest.mark.redis
def test_a_batch_in_one_call_equals_its_transitions_one_call_each(redis_url):
    """The script reads each key's state once and writes it back once per call: the answers, the
    stored states and their TTLs must be those of applying each transition in its own call.
    Random wanted states, some sequences older than the key's last, a cooldown that holds."""
    import random

    rng = random.Random(4)
    batch = []
    for n in range(300):
        sequence = n - rng.choice([0, 0, 0, 5])  # some come late: an older session's view
        batch.append(
            Transition(
                rng.choice(["acme", "beta"]),
                rng.choice(["k1", "k2", "k3"]),
                rng.choice(["firing", "ok", "ok"]),
                sequence,
                f"id-{n}",
            )
        )
    limits = AlertLimits(cooldown_s=3600, max_per_minute=1000)

    async def run(prefix: str, together: bool):
        client = Redis.from_url(redis_url)
        try:
            state = RedisAlertState(client, limits, prefix=prefix)
            answers = await state.apply(batch) if together else [(await state.apply([t]))[0] for t in batch]
            stored = {}
            for key in sorted(await client.keys(f"{prefix}:*:alert:*")):
                stored[key.decode().removeprefix(prefix)] = (
                    {k: v for k, v in (await client.hgetall(key)).items() if k != b"resolved_ms"},
                    await client.ttl(key) > 0,
                    await client.hexists(key, "resolved_ms"),
                )
            return answers, stored
        finally:
            await client.aclose()

    together, one_by_one = asyncio.run(run("together", True)), asyncio.run(run("alone", False))
    assert together == one_by_one
    answers = together[0]
    assert {a[0] for a in answers if a} == {"fired", "resolved"} and answers.count(None) > 100
    assert len(together[1]) == 6


def test_decided_alerts_are_recalled_by_session_and_expire_in_redis(states):
    decided = [("acme", "s1", b'[{"alert_id": "a1"}]'), ("beta", "s1", b"[]"), ("acme", "s2", b'[{"alert_id": "a2"}]')]
    asked = [("acme", "s2"), ("acme", "s3"), ("beta", "s1"), ("acme", "s1")]

    async def run():
        async with states:
            state = states.alerts(AlertLimits(decided_ttl_s=600), prefix="decided")
            await state.remember(decided)
            found = await state.recall(asked)
            return found, await states.client.ttl("decided:{acme}:alerts-of:s1") if states.client else None

    found, ttl = asyncio.run(run())
    assert found == [b'[{"alert_id": "a2"}]', None, b"[]", b'[{"alert_id": "a1"}]']
    assert ttl is None or 590 <= ttl <= 600


def test_the_memory_store_keeps_the_newest_decided_sessions_only():
    state = MemoryAlertState()
    state.MAX_DECIDED = 3
    asyncio.run(state.remember([("t", f"s{n}", b"[]") for n in range(5)]))
    assert asyncio.run(state.recall([("t", f"s{n}") for n in range(5)])) == [None, None, b"[]", b"[]", b"[]"]
