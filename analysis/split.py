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
    def divides(self, size: int) -> bool:
        """Whether work over `size` sessions runs as two halves at once: a caller that would
        otherwise do it whole splits it only then (joining halves costs work of its own)."""
        ...

    def __call__(self, here: Callable[[], A], there: Callable[[], B], size: int) -> tuple[A, B]:
        """here() and there(), both results; `size` is how many sessions the work covers."""
        ...


class InTurn:
    """One after the other, in this process."""

    def divides(self, size: int) -> bool:
        return False

    def __call__(self, here: Callable[[], A], there: Callable[[], B], size: int = 0) -> tuple[A, B]:
        return here(), there()


in_turn = InTurn()
