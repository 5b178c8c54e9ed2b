"""How a worker stops while it is still starting: SIGTERM unwinds like a normal stop (embedded
servers stopped, pointer files removed, exit 0), and not in the middle of starting a server."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def stopping_cleanly_while_starting() -> Iterator[None]:
    """SIGTERM before the worker's own handlers are in place (it is still starting its embedded
    servers or loading lexicons) unwinds like a normal stop: the embedded Redis and PostgreSQL
    are stopped and their pointer files removed, and the exit code is 0, not a kill's 143.

    The stop is raised wherever the main thread is; a library that wraps what its callbacks
    raise (pydantic's serializers do) turns it into an error of its own, read here as the stop."""
    asked = False

    def stop(signum: int, frame: object) -> None:
        nonlocal asked
        asked = True
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    try:
        yield
    except Exception:
        if asked:
            raise SystemExit(0) from None
        raise


class deferred_stop:
    """SIGTERM inside the block is held until the block ends: a server being started finishes
    starting (and its pointer file is written), then the stop proceeds (SystemExit 0) into the
    caller's finally, which stops it. Raised in the middle of a start, the stop would leave a
    running server nobody holds a handle to."""

    def __init__(self) -> None:
        self.held = False

    def __enter__(self) -> deferred_stop:
        def hold(signum: int, frame: object) -> None:
            self.held = True

        # signals reach the main thread only; elsewhere (a test's thread) there is nothing to hold
        self.installed = threading.current_thread() is threading.main_thread()
        if self.installed:
            self.previous = signal.signal(signal.SIGTERM, hold)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.installed:  # a handler not set from Python reads as None: the default then
            signal.signal(signal.SIGTERM, signal.SIG_DFL if self.previous is None else self.previous)
        if self.held and exc[0] is None:
            raise SystemExit(0)
