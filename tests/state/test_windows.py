"""The Redis window (Lua) and the in-process window give equal results, and are exact."""

import asyncio
import dataclasses
import random
from datetime import datetime, timedelta, timezone

import pytest
from redis.asyncio import Redis

from bias_audit.analysis.window import FIXED, pooled_correlation
from bias_audit.state import redis_window
from bias_audit.state.base import PUBLISHED, RECORDED, WindowItem, WindowPolicy
from bias_audit.state.memory_window import MemoryWindow
from bias_audit.state.redis_window import RedisWindow, rounds, tenant_keys

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)


def item(session, minutes, tenant="acme", owner=None, **sums):
    """sums: the window's and (fields starting "ro:") the recent window's."""
    return WindowItem(
        tenant_id=tenant,
        session_id=session,
        timestamp=T0 + timedelta(minutes=minutes),
        owner=owner or f"d-{session}",
        contribution={k: v for k, v in sums.items() if not k.startswith("ro:")},
        recent_contribution={k: v for k, v in sums.items() if k.startswith("ro:")},
    )


def random_items(seed=3, count=120):
    rng = random.Random(seed)
    items = []
    for i in range(count):
        x = rng.randint(50, 400)
        y = rng.randint(0, FIXED)
        offset = rng.choice([0, rng.randint(-FIXED, FIXED)])  # zero offsets too: Redis refuses "-0"
        sums = {
            "p:n": 1,
            "p:x": x,
            "p:y": y,
            "p:xx": x * x,
            "p:yy": y * y,
            "p:xy": x * y,
            f"r:rev{rng.randint(0, 3)}:n": 1,
            f"r:rev{rng.randint(0, 3)}:s": rng.randint(-FIXED, FIXED),
            f"ro:rev{rng.randint(0, 3)}:n": 1,
            f"ro:rev{rng.randint(0, 3)}:s": offset,
            f"ro:rev{rng.randint(0, 3)}:q": offset * offset,
        }
        # out-of-order timestamps, two tenants, some exact duplicates (same owner) and copies
        items.append(item(f"s{i}", rng.randint(0, 60 * 24 * 40), tenant=rng.choice(["acme", "beta"]), **sums))
        if rng.random() < 0.1:  # consent 0: remembered, moves the days cutoff, not counted
            items[-1] = dataclasses.replace(items[-1], contribution={}, recent_contribution={}, counted=False)
        if rng.random() < 0.15:
            items.append(items[-1])
        if rng.random() < 0.1:
            items.append(item(f"s{i}", 0, tenant=items[-1].tenant_id, owner="copy", **sums))
    return items


async def run_redis(url, items, policy, batch=16):
    client = Redis.from_url(url)
    window = RedisWindow(client, policy, prefix="t")
    updates = []
    for start in range(0, len(items), batch):  # pipelined batches, as the worker does
        updates += await window.add_many(items[start : start + batch])
    await client.aclose()
    return updates


@pytest.mark.redis
@pytest.mark.parametrize(
    "policy", [WindowPolicy(max_sessions=25, max_days=10), WindowPolicy(max_sessions=1000, max_days=3)]
)
# batches of 16: one round; of 130: a tenant's sessions in rounds of 50, and of 7
@pytest.mark.parametrize(("batch", "round_sessions"), [(16, 50), (130, 50), (130, 7)])
def test_redis_and_memory_windows_agree(redis_url, policy, batch, round_sessions, monkeypatch):
    monkeypatch.setattr(redis_window, "ROUND_SESSIONS", round_sessions)
    items = random_items()
    in_memory = asyncio.run(MemoryWindow(policy).add_many(items))
    in_redis = asyncio.run(run_redis(redis_url, items, policy, batch))
    assert [u.status for u in in_redis] == [u.status for u in in_memory]
    assert [u.summary for u in in_redis] == [u.summary for u in in_memory]
    assert [u.recent for u in in_redis] == [u.recent for u in in_memory]  # the alerts' recent window
    assert [u.counted_as for u in in_redis] == [u.counted_as for u in in_memory]  # a resumed session's order
    assert any(u.recent for u in in_memory) and any(u.counted_as for u in in_memory)
    assert {u.status for u in in_memory} == {"new", "resume", "duplicate"}


class MemoryStore:
    def __init__(self, policy: WindowPolicy) -> None:
        self.window = MemoryWindow(policy)

    def call(self, method: str, *args):
        return asyncio.run(getattr(self.window, method)(*args))

    def sums(self, tenant: str = "acme") -> dict[str, int]:
        return dict(self.window._tenants[tenant].sums)


class RedisStore:
    """The Redis window driven synchronously: one client per call (each asyncio.run its loop)."""

    def __init__(self, url: str, policy: WindowPolicy) -> None:
        self.url, self.policy = url, policy

    def call(self, method: str, *args):
        async def run():
            client = Redis.from_url(self.url)
            try:
                return await getattr(RedisWindow(client, self.policy, prefix="t"), method)(*args)
            finally:
                await client.aclose()

        return asyncio.run(run())

    def sums(self, tenant: str = "acme") -> dict[str, int]:
        import redis

        with redis.Redis.from_url(self.url) as client:
            return {k.decode(): int(v) for k, v in client.hgetall(tenant_keys("t", tenant)["sums"]).items()}


@pytest.fixture
def store(state_redis_url):
    """A window store of each kind, from a policy: one suite over both."""
    if state_redis_url is None:
        return MemoryStore
    return lambda policy: RedisStore(state_redis_url, policy)


def add(window, *items):
    return window.call("add_many", list(items))


def test_count_and_day_limits_by_hand(store):
    window = store(WindowPolicy(max_sessions=2, max_days=1))
    add(window, item("a", 0, **{"m:x:n": 1, "m:x:s": 100}))
    add(window, item("b", 10, **{"m:x:n": 1, "m:x:s": 200}))
    [third] = add(window, item("c", 20, **{"m:x:n": 1, "m:x:s": 400}))
    assert third.summary.sessions == 2  # "a" left by count
    assert third.summary.model_mean_scores == {"x": pytest.approx(1 + (600 / 2 / FIXED) * 9)}
    [late] = add(window, item("d", 60 * 24 + 15, **{"m:x:n": 1, "m:x:s": 800}))
    assert late.summary.sessions == 2  # "b" (more than a day older than "d") left by age
    assert late.summary.window_start == "2026-11-01T00:20:00Z"


def test_eviction_is_exact_down_to_zero(store):
    window = store(WindowPolicy(max_sessions=1, max_days=30))
    values = {"p:n": 1, "p:x": 3, "p:y": 123456, "p:xx": 9, "p:yy": 123456**2, "p:xy": 370368}
    add(window, item("a", 0, **values))
    add(window, item("b", 1))  # empty contribution pushes "a" out
    assert window.sums() == {}


def test_a_key_cancelled_to_zero_can_still_be_evicted(store):
    # "b" cancels "a"'s residual sum to 0 (the key is dropped); evicting "a" must leave -(-5).
    window = store(WindowPolicy(max_sessions=2, max_days=30))
    add(window, item("a", 0, **{"o:3:s": 5}))
    add(window, item("b", 1, **{"o:3:s": -5}))
    add(window, item("c", 2))
    assert window.sums() == {"o:3:s": -5}


def test_duplicates_and_resumes(store):
    window = store(WindowPolicy())
    assert add(window, item("a", 0, owner="1-0"))[0].status == "new"
    assert add(window, item("a", 0, owner="1-0"))[0].status == "resume"  # redelivery of the same entry
    [copy] = add(window, item("a", 0, owner="2-0"))
    assert copy.status == "duplicate"  # a second copy
    assert copy.summary.sessions == 1


def test_pooled_correlation_from_integer_sums_matches_numpy():
    import numpy as np

    rng = np.random.default_rng(1)
    x = rng.integers(50, 400, 300)
    y = rng.integers(0, FIXED, 300)
    sums = {
        "p:n": 300,
        "p:x": int(x.sum()),
        "p:y": int(y.sum()),
        "p:xx": int((x * x).sum()),
        "p:yy": int((y.astype(object) ** 2).sum()),
        "p:xy": int((x.astype(object) * y.astype(object)).sum()),
    }
    r, n = pooled_correlation(sums)
    assert n == 300 and r == pytest.approx(np.corrcoef(x, y)[0, 1], abs=1e-12)


def test_progress_marks(store):
    window = store(WindowPolicy(max_days=1))
    first = item("a", 0, owner="1-0")
    statuses = [add(window, first)[0].status]
    window.call("mark", [first], RECORDED)
    statuses.append(add(window, first)[0].status)
    window.call("mark", [first], PUBLISHED)
    statuses.append(add(window, first)[0].status)
    statuses.append(add(window, item("a", 0, owner="2-0"))[0].status)  # another copy
    window.call("mark", [item("never-added", 0, owner="3-0")], PUBLISHED)  # creates nothing
    statuses.append(add(window, item("never-added", 0, owner="3-0"))[0].status)
    assert statuses == ["new", "resume_recorded", "done", "duplicate", "new"]


@pytest.mark.redis
def test_progress_marks_in_redis_keep_the_ttl(redis_url):
    window = RedisStore(redis_url, WindowPolicy(max_days=1))
    first = item("a", 0, owner="1-0")
    add(window, first)
    window.call("mark", [first], PUBLISHED)
    import redis

    with redis.Redis.from_url(redis_url) as client:
        ttl = client.ttl("t:{acme}:seen:a")
    assert 86_400 < ttl <= 2 * 86_400


def with_digest(window_item: WindowItem) -> WindowItem:
    from bias_audit.analysis.digest import SessionDigest

    digest = SessionDigest.from_cells(
        ((0, 0, 0, 0.5, False),),
        session_id=window_item.session_id,
        tenant_id=window_item.tenant_id,
        ts_ms=window_item.ts_ms,
        trace_id=None,
        config_version=None,
        reviewers=("r",),
        models=("m",),
        lengths=(10.0,),
        length_unit="words",
    )
    return dataclasses.replace(window_item, digest=digest if window_item.counted else None)


@pytest.mark.redis
def test_window_digests_follow_the_window_through_additions_and_evictions(redis_url):
    """digests() after every batch, on one RedisWindow (its parsed-digest cache warm), equals the
    in-process window's, in event-time order."""
    policy = WindowPolicy(max_sessions=10, max_days=20)  # both limits bite on 40 days of sessions
    items = [with_digest(i) for i in random_items(seed=8, count=90)]

    async def run() -> list[tuple[list[str], list[str]]]:
        client = Redis.from_url(redis_url)
        in_redis, in_memory = RedisWindow(client, policy, prefix="dg"), MemoryWindow(policy)
        seen = []
        for start in range(0, len(items), 7):
            batch = items[start : start + 7]
            await in_redis.add_many(batch)
            await in_memory.add_many(batch)
            got, want = await in_redis.digests(["acme", "beta"]), await in_memory.digests(["acme", "beta"])
            for tenant in ("acme", "beta"):
                assert got[tenant] == want[tenant]
                assert [d.ts_ms for d in got[tenant]] == sorted(d.ts_ms for d in got[tenant])
                seen.append([d.session_id for d in got[tenant]])
        await client.aclose()
        return seen

    windows = asyncio.run(run())
    assert max(len(w) for w in windows) == 10 and len({tuple(w) for w in windows}) > 10  # it moved and filled


@pytest.mark.redis
@pytest.mark.parametrize("kept_tenants", [10_000, 0])  # 0: the parsed digests forgotten at every read
def test_digests_a_worker_counted_itself_equal_those_read_back_from_redis(redis_url, monkeypatch, kept_tenants):
    """Two workers' windows on one Redis: each knows the digests it counted without reading them
    back; what digests() returns must equal what a window with nothing cached reads (floats,
    fingerprints, similarities and all), through duplicates, copies and evictions."""
    monkeypatch.setattr("bias_audit.state.redis_window.PARSED_TENANTS", kept_tenants)
    policy = WindowPolicy(max_sessions=12, max_days=20)
    rng = random.Random(5)
    items = []
    for i in random_items(seed=9, count=80):
        digest = with_digest(i).digest
        if digest is not None:
            digest = dataclasses.replace(
                digest,
                cell_score=(rng.random(),),
                lengths=(rng.uniform(1, 900),),
                fingerprints=(f"{rng.getrandbits(64):016x}",),
                cell_similarity=(rng.choice([None, rng.random()]),),
                correct=(True,),
            )
        items.append(dataclasses.replace(i, digest=digest))

    async def run() -> int:
        client = Redis.from_url(redis_url)
        workers = [RedisWindow(client, policy, prefix="two"), RedisWindow(client, policy, prefix="two")]
        compared = 0
        for n, start in enumerate(range(0, len(items), 5)):
            await workers[n % 2].add_many(items[start : start + 5])
            cold = await RedisWindow(client, policy, prefix="two").digests(["acme", "beta"])
            for worker in workers:
                warm = await worker.digests(["acme", "beta"])
                assert warm == cold
                compared += sum(len(v) for v in warm.values())
        await client.aclose()
        return compared

    assert asyncio.run(run()) > 300


async def _stored_sums(url, prefix, tenant):
    client = Redis.from_url(url)
    sums = await client.hgetall(f"{prefix}:{{{tenant}}}:sums")
    recent = await client.hgetall(f"{prefix}:{{{tenant}}}:recent-sums")
    await client.aclose()
    decode = lambda flat: {k.decode(): int(v) for k, v in flat.items()}
    return decode(sums), decode(recent)


@pytest.mark.redis
def test_sums_beyond_double_precision_stay_exact(redis_url):
    """The script adds a batch's values as doubles only below 2^52; past that, exact int64."""
    big = 2**61 + 12345  # a double cannot hold it: 2**61 + 12345 would round
    values = [big, 3, -big + 7, 2**52 + 1, 2**52 - 1, -5]
    items = [item(f"s{i}", i, **{"p:yy": v, "ro:a:q": v, "m:a:n": 1}) for i, v in enumerate(values)]
    policy = WindowPolicy(max_sessions=4, max_days=30, recent_sessions=3)
    in_memory = MemoryWindow(policy)
    memory_updates = asyncio.run(in_memory.add_many(items))
    redis_updates = asyncio.run(run_redis(redis_url, items, policy))
    assert [u.recent for u in redis_updates] == [u.recent for u in memory_updates]
    sums, recent = asyncio.run(_stored_sums(redis_url, "t", "acme"))
    assert sums == {"p:yy": -big + 7 + 2**52 + 1 + 2**52 - 1 - 5, "m:a:n": 4}  # the last four
    assert recent == {"ro:a:q": 2**52 + 1 + 2**52 - 1 - 5}  # the last three


@pytest.mark.redis
def test_sums_crossing_2_to_the_52_between_batches_stay_exact(redis_url):
    """The script sums a batch's changes as doubles while they stay below 2^52 and adds them with
    HINCRBY (as exact strings past that): sums that wander across the boundary from batch to
    batch, and cancel to zero, must equal Python's integers after every batch."""
    rng = random.Random(12)
    edge = 2**52
    near = [
        lambda: edge - rng.randint(0, 3),
        lambda: edge + rng.randint(0, 3),
        lambda: edge // 3 + rng.randint(0, 3),
        lambda: -edge + rng.randint(-3, 3),
        lambda: rng.randint(-9, 9),
        lambda: 2**59 + rng.randint(0, 9),
    ]
    values = [rng.choice(near)() for _ in range(120)]
    items = [
        item(f"s{i}", i, **{"p:yy": v, "ro:a:q": -v, "m:a:n": 1, f"m:b{i % 3}:s": v}) for i, v in enumerate(values)
    ]
    policy = WindowPolicy(max_sessions=7, max_days=30, recent_sessions=5)

    async def run():
        client = Redis.from_url(redis_url)
        window, memory = RedisWindow(client, policy, prefix="edge"), MemoryWindow(policy)
        for start in range(0, len(items), 4):
            got = await window.add_many(items[start : start + 4])
            want = await memory.add_many(items[start : start + 4])
            assert [u.recent for u in got] == [u.recent for u in want]
            assert await _stored_sums(redis_url, "edge", "acme") == (
                dict(memory._tenants["acme"].sums),
                dict(memory._tenants["acme"].recent_sums),
            )
        await client.aclose()

    asyncio.run(run())


def _batches_of_both_kinds():
    """Batches the script adds as one total (every session new) and batches it adds session by
    session: a redelivery, a copy from another delivery, a session older than the window."""
    sums = lambda i: {"m:a:n": 1, "m:a:s": 1000 + i, f"r:rev{i % 3}:s": i - 7, "ro:a:q": i * i}
    return [
        [item(f"s{i}", i, **sums(i)) for i in range(5)],  # all new
        [item("s5", 5, **sums(5)), item("s1", 1, **sums(1)), item("s6", 6, **sums(6))],  # "s1" again
        [item("s7", 7, **sums(7)), item("s7", 7, owner="other", **sums(7))],  # a copy in one batch
        [item("s8", 60 * 24 * 5, **sums(8)), item("old", 0, **sums(9))],  # "old" is past the window
        [item(f"t{i}", 60 * 24 * 5 + i, **sums(i)) for i in range(10, 16)],  # all new, evicting
    ]


@pytest.mark.redis
def test_the_stored_sums_equal_the_in_process_windows_after_every_batch(redis_url):
    """Whether the script adds a batch's total once or each counted session's, the sums it
    keeps are the in-process window's after every batch."""
    policy = WindowPolicy(max_sessions=6, max_days=2, recent_sessions=4)

    async def run():
        client = Redis.from_url(redis_url)
        window, memory = RedisWindow(client, policy, prefix="kinds"), MemoryWindow(policy)
        for batch in _batches_of_both_kinds():
            got, want = await window.add_many(batch), await memory.add_many(batch)
            assert [u.status for u in got] == [u.status for u in want]
            assert await _stored_sums(redis_url, "kinds", "acme") == (
                dict(memory._tenants["acme"].sums),
                dict(memory._tenants["acme"].recent_sums),
            )
        await client.aclose()
        return [u.status for u in got]

    assert asyncio.run(run()) == ["new"] * 6


@pytest.mark.redis
def test_a_batch_whose_total_would_not_fit_int64_is_added_session_by_session(redis_url):
    """Two sessions of 2^62 + 1 in one batch of a one-session window: their total is past
    HINCRBY's int64, what the window keeps (the second) is not."""
    policy = WindowPolicy(max_sessions=1, max_days=30, recent_sessions=1)
    value = 2**62 + 1
    items = [item("a", 0, **{"p:yy": value, "ro:a:q": value}), item("b", 1, **{"p:yy": value, "ro:a:q": value})]

    async def run():
        client = Redis.from_url(redis_url)
        updates = await RedisWindow(client, policy, prefix="wide").add_many(items)
        await client.aclose()
        return updates

    assert [u.status for u in asyncio.run(run())] == ["new", "new"]
    assert asyncio.run(_stored_sums(redis_url, "wide", "acme")) == ({"p:yy": value}, {"ro:a:q": value})


@pytest.mark.redis
def test_a_contribution_stored_by_the_per_session_script_is_still_evicted(redis_url):
    """Before the batch script, contributions were hashes; a window written then still slides."""

    async def run():
        client = Redis.from_url(redis_url)
        base = "legacy:{acme}"
        await client.zadd(f"{base}:order", {"old": T0.timestamp() * 1000})
        await client.hset(f"{base}:c:old", mapping={"m:x:n": 1, "m:x:s": 700})
        await client.hset(f"{base}:sums", mapping={"m:x:n": 1, "m:x:s": 700})
        window = RedisWindow(client, WindowPolicy(max_sessions=1, max_days=30), prefix="legacy")
        update = (await window.add_many([item("new", 5, **{"m:x:n": 1, "m:x:s": 100})]))[0]
        left = await client.exists(f"{base}:c:old")
        await client.aclose()
        return update, left

    update, left = asyncio.run(run())
    assert update.summary.sessions == 1 and left == 0
    assert update.summary.model_mean_scores == {"x": pytest.approx(1 + (100 / FIXED) * 9)}
    assert asyncio.run(_stored_sums(redis_url, "legacy", "acme"))[0] == {"m:x:n": 1, "m:x:s": 100}


@pytest.mark.redis
def test_the_scripts_survive_a_flushed_script_cache(redis_url):
    """A Redis restarted (or failed over) has forgotten the scripts: a lone call (sent alone) and
    a batch of two tenants (pipelined) load them again and go on."""
    from bias_audit.state.alert_state import RedisAlertState, Transition

    async def run():
        client = Redis.from_url(redis_url)
        window, alerts = RedisWindow(client, WindowPolicy(), prefix="flush"), RedisAlertState(client, prefix="flush")
        counted = [await window.add_many([item("a1", 1, **{"m:x:n": 1})])]
        await client.script_flush()
        counted.append(await window.add_many([item("a2", 2, **{"m:x:n": 1})]))
        await client.script_flush()
        two_tenants = [item("a3", 3, **{"m:x:n": 1}), item("b1", 3, tenant="beta", **{"m:x:n": 1})]
        counted.append(await window.add_many(two_tenants))
        await client.script_flush()
        fired = await alerts.apply([Transition("acme", "k", "firing", 1, "id1")])
        await client.script_flush()
        fired += await alerts.apply([Transition("acme", "k", "ok", 2, ""), Transition("beta", "k", "firing", 1, "id2")])
        await client.aclose()
        return counted, fired

    counted, fired = asyncio.run(run())
    assert [[u.summary.sessions for u in batch] for batch in counted] == [[1], [2], [3, 1]]
    assert fired == [("fired", "id1"), ("resolved", "id1"), ("fired", "id2")]


@pytest.mark.parametrize(
    ("by_tenant", "size", "expected"),
    [
        ({"a": [0, 1, 2]}, 50, [[("a", [0, 1, 2])]]),
        ({"a": [0, 1, 2, 3, 4]}, 2, [[("a", [0, 1])], [("a", [2, 3])], [("a", [4])]]),
        # a round holds several tenants; a tenant cut by the end of a round goes on in the next
        ({"a": [0, 2], "b": [1, 3, 4], "c": [5]}, 3, [[("a", [0, 2]), ("b", [1])], [("b", [3, 4]), ("c", [5])]]),
        ({"a": [0], "b": [1]}, 1, [[("a", [0])], [("b", [1])]]),
    ],
)
def test_rounds(by_tenant, size, expected):
    assert rounds(by_tenant, size) == expected


@pytest.mark.redis
def test_a_round_that_fails_in_redis_leaves_the_pool_usable(redis_url, monkeypatch):
    """A script error in a later round raises, closes the connection its unread replies were on,
    and the client's next batch goes through."""
    monkeypatch.setattr(redis_window, "ROUND_SESSIONS", 2)

    async def run():
        client = Redis.from_url(redis_url)
        window = RedisWindow(client, WindowPolicy(), prefix="broken")
        await client.set("broken:{beta}:sums", "not a hash")  # the script's HINCRBY fails on it
        batch = [item(f"a{i}", i, **{"m:x:n": 1}) for i in range(3)] + [item("b0", 0, tenant="beta", **{"m:x:n": 1})]
        with pytest.raises(Exception, match="WRONGTYPE"):
            await window.add_many(batch)
        pool = client.connection_pool
        in_use = len(pool._in_use_connections)
        again = await window.add_many([item(f"a{i}", i, **{"m:x:n": 1}) for i in range(5)])
        await client.aclose()
        return in_use, [u.status for u in again], again[-1].summary.sessions

    in_use, statuses, sessions = asyncio.run(run())
    assert in_use == 0
    # a0, a1 (round 1) and a2 (round 2, before beta's failing call) were counted
    assert statuses == ["resume", "resume", "resume", "new", "new"] and sessions == 5


@pytest.mark.redis
def test_a_batch_whose_rounds_cannot_all_be_built_sends_none_of_them(redis_url, monkeypatch):
    """Every round's call is built before one is sent (they go in one pipeline): a digest that
    cannot be written fails the batch before Redis counts any of its sessions, so the retry
    counts them all, in order, and the client is still usable."""
    monkeypatch.setattr(redis_window, "ROUND_SESSIONS", 2)

    class Unwritable:
        def as_stored(self):
            return self

        def to_dict(self, **options):
            raise RuntimeError("cannot write this digest")

    async def run():
        client = Redis.from_url(redis_url)
        window = RedisWindow(client, WindowPolicy(), prefix="half")
        batch = [
            item("a0", 0, **{"m:x:n": 1}),
            item("a1", 1, **{"m:x:n": 1}),
            dataclasses.replace(item("a2", 2, **{"m:x:n": 1}), digest=Unwritable()),
        ]
        with pytest.raises(RuntimeError, match="cannot write"):
            await window.add_many(batch)
        again = await window.add_many([item(f"a{i}", i, **{"m:x:n": 1}) for i in range(3)])
        await client.aclose()
        return [(u.status, u.summary.sessions) for u in again]

    assert asyncio.run(run()) == [("new", 1), ("new", 2), ("new", 3)]


def test_progress_marks_of_interleaved_tenants_in_one_call(store):
    """One mark call with the tenants' items interleaved moves each marker, and only those."""
    window = store(WindowPolicy())
    batch = [
        item("a", 0, owner="1-0"),
        item("b", 0, tenant="beta", owner="2-0"),
        item("c", 1, owner="3-0"),
        item("d", 1, tenant="beta", owner="4-0"),
    ]
    add(window, *batch)
    window.call("mark", batch[:3], PUBLISHED)
    window.call("mark", batch[3:], RECORDED)
    assert [u.status for u in add(window, *batch)] == ["done", "done", "done", "resume_recorded"]


@pytest.mark.redis
def test_rounds_sent_to_a_redis_that_forgot_the_script_load_it_and_count_every_session(redis_url, monkeypatch):
    """The rounds after the first are written without asking whether Redis knows the script: a
    flushed cache answers NOSCRIPT, nothing of those calls ran, and they are sent again."""
    monkeypatch.setattr(redis_window, "ROUND_SESSIONS", 2)
    batch = [item(f"a{i}", i, **{"m:x:n": 1, "m:x:s": 10 * i}) for i in range(3)] + [
        item(f"b{i}", i, tenant="beta", **{"m:x:n": 1}) for i in range(2)
    ]

    async def run():
        client = Redis.from_url(redis_url)
        await client.script_flush()
        window = RedisWindow(client, WindowPolicy(), prefix="forgot")
        updates = await window.add_many(batch)
        await client.aclose()
        return updates

    updates = asyncio.run(run())
    memory = asyncio.run(MemoryWindow(WindowPolicy()).add_many(batch))
    assert [u.status for u in updates] == ["new"] * 5
    assert [u.summary for u in updates] == [u.summary for u in memory]
