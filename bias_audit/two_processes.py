"""Two halves of a one-shot computation at once: one in this process, one in a forked copy of it.

`bias-audit report` is CPU-bound Python, which runs one thread at a time. With two CPUs, a
forked child computes one half while this process computes the other, and sends its result
back pickled through a pipe. Fork copies memory lazily, so the child reads the parsed window
as it is, nothing sent to it. Only for a command that runs once and exits: a server (threads,
an event loop, open connections) keeps `in_turn`.

A child that fails or dies leaves its half to be computed here: a result is never lost, and an
error is raised by this process with its own traceback.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
from collections.abc import Callable
from typing import BinaryIO, TypeVar

A = TypeVar("A")
B = TypeVar("B")

_LENGTH = struct.Struct("<Q")  # the pickled result's length, first: a complete result needs no exit status


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))  # a container's or taskset's CPUs, not the host's
    except AttributeError:
        return os.cpu_count() or 1


class TwoProcesses:
    """there() in a forked child while here() runs in this process, when the work covers at
    least `min_size` sessions (a fork of a few hundred MB process costs ~5-10 ms) and two CPUs
    are usable; else in turn."""

    def __init__(self, min_size: int = 2_000) -> None:
        self.min_size = min_size
        self.enabled = hasattr(os, "fork") and usable_cpus() >= 2
        self._exiting: list[int] = []  # children that sent their result and may still be exiting

    def divides(self, size: int) -> bool:
        return self.enabled and size >= self.min_size

    def __call__(self, here: Callable[[], A], there: Callable[[], B], size: int) -> tuple[A, B]:
        if not self.divides(size):
            return here(), there()
        self.reap()
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: compute, send, exit without running the parent's exit handlers
            os.close(read_end)
            _send_and_exit(there, write_end)
        os.close(write_end)
        pipe = open(read_end, "rb", buffering=0)
        try:
            with pipe:
                mine = here()
                payload = _read_all(pipe)
        except BaseException:  # here() failed, or an interrupt came while waiting: the child is not needed
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise
        if len(payload) >= _LENGTH.size and _LENGTH.unpack_from(payload)[0] == len(payload) - _LENGTH.size:
            # complete: the child's exit (unmapping its copy, ~15 ms) is not waited for
            self._exiting.append(pid)
            try:
                return mine, pickle.loads(memoryview(payload)[_LENGTH.size:])
            except Exception:  # a result that does not unpickle here: computed again below
                pass
        else:
            os.waitpid(pid, 0)  # it failed or died: its half is computed here
        return mine, there()

    def reap(self) -> None:
        """Collect the exit of every child that has finished exiting (no zombies left behind)."""
        for pid in list(self._exiting):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self._exiting.remove(pid)


def _send_and_exit(there: Callable[[], object], fd: int) -> None:
    code = 1
    try:
        result = pickle.dumps(there(), protocol=pickle.HIGHEST_PROTOCOL)
        for part in (_LENGTH.pack(len(result)), result):  # the length first, without copying the result
            view = memoryview(part)
            while view:
                view = view[os.write(fd, view):]
        os.close(fd)  # the parent's read ends here, before this copy is unmapped
        code = 0
    finally:
        os._exit(code)  # a forked child must not unwind into the parent's code


def _read_all(pipe: BinaryIO) -> bytes:
    chunks = []
    while chunk := pipe.read(1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)
