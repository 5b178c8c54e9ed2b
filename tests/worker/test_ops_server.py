"""/healthz, /readyz and /metrics of a running Redis worker (in-process, real redis-server)."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest
import redis

from bias_audit.producers.wire import wire_fields
from bias_audit.worker.composition import redis_worker
from bias_audit.worker.samples import generate_sessions
from bias_audit.worker.settings import Settings

pytestmark = pytest.mark.redis


def metric(text: str, name: str, **labels) -> float:
    """The value of one sample in a Prometheus exposition."""
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in text.splitlines():
        if line.startswith(f"{name}{{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no sample {name}{{{wanted}}}")


async def scenario(redis_url: str, tmp_path, window_url: str, expect_processed: int):
    settings = Settings(
        broker_url=redis_url,
        redis_url=window_url,
        data_dir=tmp_path,
        ops_port=0,
        consumer_name="ops-test",
        batch_size=10,
    )
    worker = redis_worker(settings)
    ready = asyncio.Event()
    task = asyncio.create_task(worker.run(install_signal_handlers=False, ready=ready))
    await ready.wait()
    base = f"http://127.0.0.1:{worker.ops.bound_port}"
    client = redis.Redis.from_url(redis_url)
    bodies = [json.dumps(s).encode() for s in generate_sessions(20, seed=61)] + [b"not json"] * 3
    for body in bodies:
        client.xadd(
            "council.sessions", wire_fields(body, event_type="council.session", tenant_id="demo", trace_id=None)
        )
    for _ in range(200):
        if worker.processed >= expect_processed:
            break
        await asyncio.sleep(0.05)
    async with aiohttp.ClientSession() as http:
        live = await http.get(f"{base}/healthz")
        ready_reply = await http.get(f"{base}/readyz")
        metrics = await (await http.get(f"{base}/metrics")).text()
        answers = (live.status, await live.json(), ready_reply.status, await ready_reply.json(), metrics)
    worker.stopping.set()
    await task
    return answers


def test_health_and_metrics_of_a_running_worker(redis_url, tmp_path):
    live_status, live, ready_status, ready, metrics = asyncio.run(scenario(redis_url, tmp_path, redis_url, 23))
    assert live_status == 200 and live["status"] == "alive"
    assert ready_status == 200 and ready["status"] == "ready"
    labels = {"transport": "redis", "topic": "council.sessions"}
    assert metric(metrics, "bias_audit_events_consumed_total", **labels) == 23
    assert metric(metrics, "bias_audit_events_processed_total", outcome="result", **labels) == 20
    assert metric(metrics, "bias_audit_events_dead_lettered_total", reason="invalid_json", **labels) == 3
    assert metric(metrics, "bias_audit_processing_seconds_count", **labels) == 23
    assert metric(metrics, "bias_audit_window_update_seconds_count", transport="redis") >= 2


def test_readiness_fails_with_the_reason_when_the_window_redis_is_unreachable(redis_url, tmp_path):
    from bias_audit.worker.embedded_redis import free_port

    unreachable = f"redis://127.0.0.1:{free_port()}/0"
    live_status, _, ready_status, ready, _ = asyncio.run(scenario(redis_url, tmp_path, unreachable, 0))
    assert live_status == 200  # alive: the loop runs and retries
    assert ready_status == 503 and "window store Redis unreachable" in ready["detail"]
