"""What `bias-audit worker`, `setup` and friends do once their arguments are parsed: find the
broker, start the embedded Redis (and PostgreSQL store) when none is configured, wire and run
the worker."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bias_audit.schemas.errors import CommandError

from .embedded_redis import EmbeddedRedis
from .settings import Settings, check_broker_url, check_pubsub_settings
from .stopping import deferred_stop, stopping_cleanly_while_starting
from .store_setup import embedded_store


def running_pointer() -> Path:
    """Where a worker with an embedded Redis leaves its URL for commands run from any directory."""
    base = os.environ.get("XDG_RUNTIME_DIR") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "bias-audit" / "embedded-redis.url"


def _answers(url: str) -> bool:
    import redis

    try:
        with redis.Redis.from_url(url, socket_connect_timeout=0.5) as client:
            return bool(client.ping())
    except (redis.RedisError, OSError):
        return False


def resolve_broker(settings: Settings) -> str:
    """The configured broker, else the Redis of a running embedded worker: the one of this data
    directory first, then the one last started from anywhere by this user."""
    if settings.broker_url:
        check_broker_url(settings.broker_url)
        return settings.broker_url
    local = settings.data_dir / "redis" / "redis.url"
    for pointer in (local, running_pointer()):
        if pointer.exists():
            url = pointer.read_text().strip()
            if url and _answers(url):
                return url
    raise CommandError(
        f"no broker: pass --broker redis://..., set BIAS_AUDIT_BROKER_URL, or start "
        f"`bias-audit worker` (its embedded Redis is found through {local} or {running_pointer()})"
    )


def run_worker(settings: Settings, say: Callable[[str], None]) -> None:
    """Run until SIGTERM / SIGINT. With no broker configured, on an embedded Redis in the data
    directory that stops with the worker."""
    from bias_audit.embeddings.minilm import EmbeddingsUnavailable
    from bias_audit.lexicons.load import LexiconError

    from .logging_setup import configure_logging

    configure_logging(settings.log_level)
    with stopping_cleanly_while_starting():
        if settings.broker_url:
            check_broker_url(settings.broker_url)
        if settings.transport == "pubsub":
            check_pubsub_settings(settings)
        with _embedded_broker(settings, say) as settings, embedded_store(settings, say, create=True) as settings:
            from bias_audit.gc_tuning import tune_gc

            from . import composition

            async def serve() -> None:
                from bias_audit.producers.otlp import evaluation_exporter

                build = composition.pubsub_worker if settings.transport == "pubsub" else composition.redis_worker
                evaluations = evaluation_exporter(settings.otlp_endpoint)  # one for every input of the process
                service = build(settings, evaluations)
                tune_gc()  # after imports and wiring: the startup heap leaves every collection
                try:
                    await service.run()
                finally:
                    if evaluations is not None:  # what is queued goes out, bounded by its timeout
                        await asyncio.to_thread(evaluations.shutdown)

            try:
                asyncio.run(serve())
            except (LexiconError, EmbeddingsUnavailable) as error:
                raise CommandError(str(error)) from None
            except Exception as error:
                if settings.transport == "pubsub":
                    from google.api_core.exceptions import NotFound

                    if isinstance(error, NotFound):
                        raise CommandError(
                            f"subscription not found ({error.message}); run `bias-audit setup "
                            f"--broker {settings.broker_url}` first",
                            exit_code=1,
                        ) from None
                raise


@contextmanager
def _embedded_broker(settings: Settings, say: Callable[[str], None]) -> Iterator[Settings]:
    """The settings as given, or with an embedded Redis as the broker for the block's duration.
    A generator, so a stop that lands anywhere after the server starts (even before the block is
    entered) runs the finally: a class's __exit__ is skipped when its __enter__ is interrupted."""
    if settings.broker_url:
        yield settings
        return
    directory = settings.data_dir / "redis"
    server = EmbeddedRedis(directory)
    pointer = running_pointer()
    try:
        with deferred_stop():  # not in the middle of starting the server or writing the pointer
            try:
                server.start()
            except RuntimeError as error:
                raise CommandError(str(error), exit_code=1) from None
            try:
                pointer.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                pointer.write_text(server.url + "\n")
            except OSError:  # only a convenience for commands run elsewhere
                pass
            say(f"embedded Redis at {server.url} (data in {directory})")
        yield settings.replaced(broker_url=server.url)
    finally:
        server.stop()
        try:
            if pointer.read_text().strip() == server.url:
                pointer.unlink()
        except OSError:
            pass


def set_up_broker(settings: Settings, url: str) -> Iterator[str]:
    """Create the input streams and groups, or the Pub/Sub topics and subscriptions: one line
    per thing, saying whether it was created or already there."""
    if url.startswith("pubsub://"):
        from .pubsub_admin import ensure_pubsub

        try:
            yield from ensure_pubsub(settings.replaced(broker_url=url))
        except Exception as error:  # google.api_core errors: unreachable, permission denied
            raise CommandError(
                f"Pub/Sub setup failed: {error.__class__.__name__}: {getattr(error, 'message', error)}", exit_code=1
            ) from None
        return
    from redis.asyncio import Redis
    from redis.exceptions import RedisError

    from .redis_worker import ensure_group

    async def create() -> list[str]:
        client = Redis.from_url(url)
        try:
            lines = []
            for stream in (settings.council_topic, settings.llm_topic, settings.verdicts_topic):
                created = await ensure_group(client, stream, settings.group)
                lines.append(f"{stream}: group {settings.group} {'created' if created else 'already exists'}")
            return lines
        finally:
            await client.aclose()

    try:
        yield from asyncio.run(create())
    except (OSError, RedisError) as error:
        raise CommandError(f"cannot reach {url}: {error}", exit_code=1) from None


def run_api(
    settings: Settings, host: str, port: int, say: Callable[[str], None], *, insecure_no_auth: bool = False
) -> None:
    """`bias-audit serve`: the HTTP API until interrupted, in `settings.serve_processes` processes
    on one socket (uvicorn's process model). Without a JWT key it listens only on loopback, unless
    told otherwise: every tenant's data would be open to whoever reaches it."""
    from .composition import token_verifier

    try:
        verifier = token_verifier(settings)
    except (ValueError, OSError) as error:
        raise CommandError(f"the JWT settings are not usable: {error}") from None
    if verifier is None and host not in ("127.0.0.1", "::1", "localhost") and not insecure_no_auth:
        raise CommandError(
            f"refusing to serve on {host} without auth: set BIAS_AUDIT_JWT_SECRET (>= 32 bytes) or "
            "BIAS_AUDIT_JWT_PUBLIC_KEY, or pass --insecure-no-auth"
        )
    from bias_audit.embeddings.minilm import EmbeddingsUnavailable
    from bias_audit.lexicons.load import LexiconError

    from .composition import api_app
    from .logging_setup import configure_logging

    configure_logging(settings.log_level)
    loopback_only = verifier is None and not insecure_no_auth  # a DNS-rebound name reaches no tenant's data
    processes = settings.serve_processes
    with stopping_cleanly_while_starting():
        with (
            embedded_store(settings, say, create=True) as settings,
            _shared_windows(settings, processes, say) as settings,
        ):
            try:  # built once here, so a bad lexicon or detector is one line, not a traceback per process
                api_app(settings, loopback_only=loopback_only)
            except (LexiconError, EmbeddingsUnavailable) as error:
                raise CommandError(str(error)) from None
            say(
                f"bias-audit API on http://{host}:{port} (/docs, /graphql, /review), {processes} "
                + ("process; " if processes == 1 else "processes; ")
                + (
                    "auth off: requests to loopback names only, every tenant open to them (set BIAS_AUDIT_JWT_SECRET "
                    "for bearer tokens)"
                    if verifier is None
                    else "auth: bearer tokens (`bias-audit token` makes one)"
                )
            )
            _serve_until_signalled(_processes_config(settings, host, port, loopback_only), say)
        say("stopped")


API_STOP_GRACE_S = 5


@contextmanager
def _shared_windows(settings: Settings, processes: int, say: Callable[[str], None]) -> Iterator[Settings]:
    """Several processes keep one window, in Redis: the configured one, else an embedded one in
    the data directory for the block's duration (not the worker's: nothing is published there)."""
    if processes == 1 or settings.redis_url:
        yield settings
        return
    directory = settings.data_dir / "serve-redis"
    server = EmbeddedRedis(directory)
    try:
        with deferred_stop():
            try:
                server.start()
            except RuntimeError as error:
                raise CommandError(str(error), exit_code=1) from None
            say(f"the {processes} processes keep their windows in an embedded Redis at {server.url}")
        yield settings.replaced(redis_url=server.url)
    finally:
        server.stop()


def _processes_config(settings: Settings, host: str, port: int, loopback_only: bool):
    """uvicorn's configuration for `serve`'s processes. Each builds its app from the environment
    (they are started afresh, not forked), so the settings this process arrived at are left there."""
    import uvicorn

    from .composition import SERVE_LOOPBACK_ONLY

    exported = {
        "BIAS_AUDIT_DATA_DIR": str(settings.data_dir),
        "BIAS_AUDIT_STORE_URL": settings.store_url,
        "BIAS_AUDIT_REDIS_URL": settings.redis_url,
        "BIAS_AUDIT_CONSENT_LEVEL": str(settings.consent_level),
        "BIAS_AUDIT_SERVE_WORKERS": str(settings.serve_processes),
        SERVE_LOOPBACK_ONLY: "1" if loopback_only else "0",
    }
    if settings.serve_processes > 1:  # each process writes its metrics here; a scrape sums them
        metrics = settings.data_dir / "serve-metrics"
        shutil.rmtree(metrics, ignore_errors=True)  # a stopped run's counts are not this run's
        metrics.mkdir(parents=True)
        exported["PROMETHEUS_MULTIPROC_DIR"] = str(metrics.resolve())
    for name, value in exported.items():
        if value is not None:
            os.environ[name] = value
    return uvicorn.Config(
        "bias_audit.worker.composition:served_app",
        factory=True,
        host=host,
        port=port,
        workers=settings.serve_processes,
        # both in C (declared dependencies): less CPU a request than asyncio's loop and h11
        loop="uvloop",
        http="httptools",
        log_config=None,  # each process sets up our JSON lines (served_app)
        log_level="warning",
        access_log=False,  # ours is a JSON line per request
        # a browser's open connection must not hold the stop: the requests in flight get this long
        timeout_graceful_shutdown=API_STOP_GRACE_S,
    )


def listening_socket(config):
    """The port's socket, which `serve`'s processes share. uvicorn makes it with protocol 0, so an
    event loop that looks at the protocol (asyncio's does) leaves Nagle on for the connections it
    accepts, and a response written in two parts waits for the client's delayed ACK; set on the
    listening socket, TCP_NODELAY is inherited by every connection it accepts, whichever loop runs."""
    from socket import IPPROTO_TCP, TCP_NODELAY

    try:
        listening = config.bind_socket()
    except SystemExit:  # uvicorn has logged why (the port is taken, say)
        raise CommandError(f"cannot listen on {config.host}:{config.port}", exit_code=1) from None
    listening.setsockopt(IPPROTO_TCP, TCP_NODELAY, 1)
    return listening


def _serve_until_signalled(config, say: Callable[[str], None]) -> None:
    """uvicorn's supervisor and its processes until SIGTERM / SIGINT, which stop them after the
    requests in flight are answered, then return (exit code 0, as the worker's). A process that
    dies is started again; one that cannot start stops the whole (an error, exit 1)."""
    import signal

    from uvicorn.supervisors import Multiprocess

    socket = listening_socket(config)
    supervisor = Multiprocess(config, sockets=[socket])
    asked: list[int] = []

    def stop(signum, frame) -> None:
        if not asked:
            say(f"stopping: answering the requests in flight (at most {API_STOP_GRACE_S} s)")
        asked.append(signum)
        supervisor.should_exit.set()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        supervisor.run()
    finally:
        socket.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if not asked:
        raise CommandError("a serve process could not start (its reason is logged above)", exit_code=1)
