"""A report's time budget: a thread cannot be stopped from outside, so the report's steps ask the
budget between them and stop themselves; the store's queries get what is left as their timeout."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


class OutOfTime(Exception):
    """The report stopped at its time budget; the message says which budget."""


@dataclass(frozen=True)
class Budget:
    seconds: float = math.inf
    started: float = field(default_factory=time.monotonic)

    def remaining(self) -> float:
        return self.seconds - (time.monotonic() - self.started)

    def check(self) -> None:
        """Stop here when the budget is spent."""
        if self.remaining() <= 0:
            raise self.spent()

    def spent(self) -> OutOfTime:
        return OutOfTime(
            f"the report stopped at its time budget of {self.seconds:g} s; ask for fewer sessions or "
            "days, or build it with the CLI (`bias-audit report` / `judges`), which has none"
        )

    def statement_timeout_ms(self) -> int:
        """What is left, as PostgreSQL's statement_timeout (0 = none; at least 1 ms once started)."""
        if math.isinf(self.seconds):
            return 0
        return max(1, int(self.remaining() * 1000))

    @contextmanager
    def connection(self, url: str) -> Iterator[Any]:
        """A connection to the store whose statements stop at what is left of the budget; one
        that does raises OutOfTime."""
        import psycopg

        from bias_audit.storage.postgres import connect

        try:
            with connect(url, self.statement_timeout_ms()) as connection:
                yield connection
        except psycopg.errors.QueryCanceled:
            raise self.spent() from None


UNLIMITED = Budget()
