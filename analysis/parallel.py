"""The independent pieces of one computation (chunks of sessions, blocks of cells) on the
machine's cores.

numpy lets go of the interpreter's lock inside its loops, so threads share the work of one call
without copying its inputs, and the memory is a piece's temporaries per core. Each piece returns
its own result or writes its own part of an output, so the result is the same floats whatever
the number of cores.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Piece = TypeVar("Piece")
Result = TypeVar("Result")

# Cells a piece reads at a time: each core's temporaries, which its thread's allocator keeps for
# the next piece rather than giving back, so a piece is kept small.
PIECE_CELLS = 1 << 18

_state = threading.local()  # `inside`: this thread is running a piece
_pool: tuple[int, ThreadPoolExecutor] | None = None  # (the process that made it, the pool)
_making = threading.Lock()


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0))


def each_piece(work: Callable[[Piece], Result], pieces: Sequence[Piece]) -> list[Result]:
    """[work(piece) for piece in pieces], the pieces shared among this thread and one helper per
    other core, each taking the next piece not yet taken. A piece's own pieces run in its thread:
    pieces waiting on pieces queued behind them would stall the helpers."""
    helpers = min(cores(), len(pieces)) - 1
    if helpers < 1 or getattr(_state, "inside", False):
        return [work(piece) for piece in pieces]
    results: list[Result | None] = [None] * len(pieces)
    untaken = iter(range(len(pieces)))  # a range's iterator hands each index out once, under the lock

    def drain() -> None:
        _state.inside = True
        try:
            for at in untaken:
                results[at] = work(pieces[at])
        finally:
            _state.inside = False

    running = [_threads().submit(drain) for _ in range(helpers)]
    try:
        drain()
    finally:
        for helper in running:  # every piece done (or failed) before the caller reads the output
            helper.result()
    return results  # type: ignore[return-value]  # every entry was set


def _threads() -> ThreadPoolExecutor:
    """One pool a process: a forked child has none of its parent's threads, so it makes its own."""
    global _pool
    with _making:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(max(cores() - 1, 1), thread_name_prefix="bias-audit-piece"))
        return _pool[1]
