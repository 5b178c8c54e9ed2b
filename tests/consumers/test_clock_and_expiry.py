"""A session dated in the future is refused and never moves a tenant's window (in-process and
Redis); an idle tenant's Redis keys expire with its session markers."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta, timezone

import pytest
import redis
from redis.asyncio import Redis

from bias_audit.consumers.council import CouncilSessionProcessor
from bias_audit.consumers.envelope import Delivery
from bias_audit.schemas.limits import EventLimits
from bias_audit.state.base import WindowPolicy
from bias_audit.state.memory_window import MemoryWindow
from bias_audit.state.redis_window import RedisWindow
from tests.builders import council_event


def now() -> datetime:
    """The clock when a test runs (never when the module was imported: a long suite outlives the skew)."""
    return datetime.now(timezone.utc)


def session(session_id: str, at: datetime) -> Delivery:
    event = council_event(
        {"M1": {"M1": 9, "M2": 6}, "M2": {"M1": 7, "M2": 8}},
        session_id=session_id,
        tenant_id="acme",
        timestamp=at.isoformat().replace("+00:00", "Z"),
    )
    return Delivery(delivery_id=session_id, body=json.dumps(event).encode(), source_topic="council.sessions")


async def run(window, deliveries: list[Delivery], limits: EventLimits = EventLimits()):
    processor = CouncilSessionProcessor(window=window, store=None, limits=limits)
    return [await processor.process([delivery]) for delivery in deliveries]


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def window_of(request):
    """A factory of a window store of each kind (one async client per test run)."""
    if request.param == "memory":
        return lambda: MemoryWindow()
    url = request.getfixturevalue("redis_url")
    return lambda: RedisWindow(Redis.from_url(url), WindowPolicy(), prefix="clock")


# How far ahead of the clock when the test runs (not when the module was imported: in a long
# suite, "11 minutes ahead" at import is within the 10 minutes' skew by the time it runs).
FUTURE = [
    (None, "9999-12-31T00:00:00+00:00 is 2912"),
    (timedelta(hours=3), "is 3 h ahead of this worker's clock (at most 10 min allowed)"),
    (timedelta(minutes=11), "ahead of this worker's clock (at most 10 min allowed)"),
]


@pytest.mark.parametrize("ahead, reason", FUTURE)
def test_a_future_session_is_refused_and_later_real_sessions_still_count(window_of, ahead, reason):
    at = datetime(9999, 12, 31, tzinfo=timezone.utc) if ahead is None else datetime.now(timezone.utc) + ahead
    window = window_of()
    earlier = [session(f"s{i}", now() - timedelta(hours=5 - i)) for i in range(3)]
    outcomes = asyncio.run(run(window, [*earlier, session("future", at), session("later", now())]))
    [[future], [later]] = outcomes[3:]
    assert future.result is None and future.dead_letter.error_type == "invalid_event"
    assert future.dead_letter.error.startswith("timestamp: ") and reason in future.dead_letter.error
    assert later.result is not None and later.result.window.sessions == 5 - 1  # 3 earlier + this one


def test_a_session_within_the_skew_counts(window_of):
    [[ahead]] = asyncio.run(run(window_of(), [session("soon", now() + timedelta(minutes=5))]))
    assert ahead.result is not None and ahead.result.window.sessions == 1


def test_the_skew_is_the_operators(window_of):
    [[ahead]] = asyncio.run(
        run(window_of(), [session("soon", now() + timedelta(minutes=5))], EventLimits(max_clock_skew_s=60))
    )
    assert ahead.dead_letter is not None and "(at most 1 min allowed)" in ahead.dead_letter.error


@pytest.mark.redis
def test_an_idle_tenants_window_keys_expire_with_its_markers(redis_url):
    window = RedisWindow(Redis.from_url(redis_url), WindowPolicy(max_days=2), prefix="ttl")
    asyncio.run(run(window, [session(f"s{i}", now() - timedelta(minutes=i)) for i in range(3)]))
    with redis.Redis.from_url(redis_url) as client:
        keys = list(client.scan_iter(match="ttl:*"))
        ttls = {key.decode(): client.ttl(key) for key in keys}
    expected = WindowPolicy(max_days=2).seen_ttl_seconds
    assert len(ttls) >= 10  # sums, order, newest, digests, sequence, recent..., contributions, markers
    assert all(expected - 5 <= ttl <= expected for ttl in ttls.values()), ttls


@pytest.mark.redis
def test_window_keys_are_renewed_together_once_their_ttl_runs_down(redis_url):
    # written by a version without TTLs, or renewed over a day ago: the next session renews them all
    window = RedisWindow(Redis.from_url(redis_url), WindowPolicy(max_days=2), prefix="renew")
    asyncio.run(run(window, [session(f"s{i}", now() - timedelta(minutes=i)) for i in range(3)]))
    expected = WindowPolicy(max_days=2).seen_ttl_seconds
    with redis.Redis.from_url(redis_url) as client:
        window_keys = [key for key in client.scan_iter(match="renew:*") if b":seen:" not in key]
        for key in window_keys:
            client.persist(key)
        client.expire(window_keys[0], 60)
    window = RedisWindow(Redis.from_url(redis_url), WindowPolicy(max_days=2), prefix="renew")
    asyncio.run(run(window, [session("s-next", now())]))
    with redis.Redis.from_url(redis_url) as client:
        ttls = {key: client.ttl(key) for key in client.scan_iter(match="renew:*")}
    assert len(ttls) > len(window_keys) and all(expected - 5 <= ttl <= expected for ttl in ttls.values()), ttls
