"""What `bias-audit worker`, `setup` and friends do once their arguments are parsed: find the
broker, start the embedded Redis (and PostgreSQL store) when none is configured, wire and run
the worker."""

from __future__ import annotations

import asyncio
import os
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
    """`bias-audit serve`: the HTTP API until interrupted. Without a JWT key it listens only on
    loopback, unless told otherwise: every tenant's data would be open to whoever reaches it."""
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
    import uvicorn

    from bias_audit.embeddings.minilm import EmbeddingsUnavailable
    from bias_audit.lexicons.load import LexiconError

    from .composition import api_app
    from .logging_setup import configure_logging

    configure_logging(settings.log_level)
    with stopping_cleanly_while_starting():
        with embedded_store(settings, say, create=True) as settings:
            try:
                # with auth off, only on loopback: a DNS-rebound name reaches no tenant's data
                application = api_app(settings, loopback_only=verifier is None and not insecure_no_auth)
            except (LexiconError, EmbeddingsUnavailable) as error:
                raise CommandError(str(error)) from None
            say(
                f"bias-audit API on http://{host}:{port} (/docs, /graphql, /review); "
                + (
                    "auth off: requests to loopback names only, every tenant open to them (set BIAS_AUDIT_JWT_SECRET "
                    "for bearer tokens)"
                    if verifier is None
                    else "auth: bearer tokens (`bias-audit token` makes one)"
                )
            )
            # a browser's open connection must not hold the stop: the requests in flight get this long
            server = uvicorn.Server(
                uvicorn.Config(
                    application,
                    host=host,
                    port=port,
                    log_level="warning",
                    access_log=False,  # ours is a JSON line per request
                    timeout_graceful_shutdown=API_STOP_GRACE_S,
                )
            )
            _serve_until_signalled(server, say)
        say("stopped")


API_STOP_GRACE_S = 5


def _serve_until_signalled(server, say: Callable[[str], None]) -> None:
    """uvicorn's server until SIGTERM / SIGINT, which end it with exit code 0 after the requests in
    flight are answered, as the worker does. uvicorn handles signals itself only on the main
    thread (and then re-raises them: exit 143), so it runs on another, and the main thread's
    handlers ask it to stop through its public `should_exit`."""
    import signal
    import threading

    failed: list[BaseException] = []

    def serve() -> None:
        try:
            asyncio.run(server.serve())
        except BaseException as error:  # re-raised on the main thread
            failed.append(error)

    def stop(signum, frame) -> None:
        if not server.should_exit:
            say(f"stopping: answering the requests in flight (at most {API_STOP_GRACE_S} s)")
        server.should_exit = True

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        thread = threading.Thread(target=serve, name="uvicorn")
        thread.start()
        while thread.is_alive():
            thread.join(0.5)  # the main thread stays free to run the signal handlers
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if failed:
        raise failed[0]
