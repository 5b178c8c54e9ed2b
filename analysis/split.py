"""How a computation's two independent halves are run: the interface, and in turn.

The report's callers choose: a one-shot command may run the halves at once in two processes
(bias_audit.two_processes); everything else runs them in turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

A = TypeVar("A")
B = TypeVar("B")


class Split(Protocol):
    """Runs here() and there() and returns both results; `size` is how many sessions the work
    covers, so small work is not worth a second process."""

    def __call__(self, here: Callable[[], A], there: Callable[[], B], size: int) -> tuple[A, B]: ...


def in_turn(here: Callable[[], A], there: Callable[[], B], size: int = 0) -> tuple[A, B]:
    """One after the other, in this process."""
    return here(), there()
