"""Balanced presentation orders for a council's reviewers (ADR-017's open items).

A Williams design is a Latin square (every model at every position once per cycle of rows) whose
rows also let every model follow every other model equally often (first-order carryover balance):
for n models, n rows when n is even, 2n (each row and its reverse) when n is odd. Reviewer r in
session s takes row (r + s) mod rows: the reviewers of a session take consecutive rows, and each
reviewer moves on one row a session, so within every reviewer each model takes each position
equally often over a cycle of sessions and its own answer is not pinned to one position (moving
on by the number of reviewers instead repeats the same rows whenever that number is a multiple
of the cycle: position confounded with reviewer-model affinity and with self-preference). The seed shuffles which model plays which symbol and where
the cycle starts: deterministic for a seed, unpredictable without it. "random" gives each reviewer
an independent seeded permutation (balanced only on average).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Design = Literal["williams", "random"]
DESIGNS: tuple[Design, ...] = ("williams", "random")
MAX_MODELS = 26  # labels "Response A" .. "Response Z"
MAX_SESSIONS = 10_000


class OrdersError(ValueError):
    """Bad orders request; the message is the one-line reason."""


def williams_rows(n: int) -> list[list[int]]:
    """The rows of a Williams design for n symbols 0..n-1."""
    if n < 1:
        return []
    first = [0]
    low, high = 1, n - 1
    while len(first) < n:  # 0, 1, n-1, 2, n-2, ...
        first.append(low)
        low += 1
        if len(first) < n:
            first.append(high)
            high -= 1
    rows = [[(symbol + shift) % n for symbol in first] for shift in range(n)]
    return rows if n % 2 == 0 else rows + [row[::-1] for row in rows]


@dataclass(frozen=True, slots=True)
class ReviewerOrder:
    session: int
    reviewer: str
    order: tuple[str, ...]  # display position -> model

    def label_to_model(self) -> dict[str, dict[str, object]]:
        """The event contract's per-review labels for this order."""
        return {f"Response {chr(65 + i)}": {"model": model, "display_index": i} for i, model in enumerate(self.order)}


def _checked(models: Sequence[str], reviewers: Sequence[str], sessions: int, design: str) -> None:
    if design not in DESIGNS:
        raise OrdersError(f"design must be one of {', '.join(DESIGNS)}, not {design!r}")
    if len(models) < 2:
        raise OrdersError("give at least two models to order")
    if len(models) > MAX_MODELS:
        raise OrdersError(f"at most {MAX_MODELS} models (labels Response A..Z), got {len(models)}")
    if not reviewers:
        raise OrdersError("give at least one reviewer")
    for kind, names in (("model", models), ("reviewer", reviewers)):
        seen: set[str] = set()
        for name in names:
            if not name or not name.strip():
                raise OrdersError(f"a {kind} name is empty")
            if name in seen:
                raise OrdersError(f"{kind} {name!r} is listed twice")
            seen.add(name)
    if not 1 <= sessions <= MAX_SESSIONS:
        raise OrdersError(f"sessions must be 1..{MAX_SESSIONS}, got {sessions}")


def presentation_orders(
    models: Sequence[str], reviewers: Sequence[str], seed: int, design: str = "williams", sessions: int = 1
) -> list[ReviewerOrder]:
    """Each reviewer's order in each session, session-major."""
    _checked(models, reviewers, sessions, design)
    rng = random.Random(f"bias-audit orders {seed}")
    out = []
    if design == "random":
        for session in range(sessions):
            for reviewer in reviewers:
                order = list(models)
                random.Random(f"bias-audit orders {seed} {session} {reviewer}").shuffle(order)
                out.append(ReviewerOrder(session, reviewer, tuple(order)))
        return out
    symbols = list(models)
    rng.shuffle(symbols)  # which model plays which symbol
    rows = williams_rows(len(models))
    start = rng.randrange(len(rows))
    for session in range(sessions):
        for index, reviewer in enumerate(reviewers):
            row = rows[(start + session + index) % len(rows)]
            out.append(ReviewerOrder(session, reviewer, tuple(symbols[s] for s in row)))
    return out


def cycle_length(models: int, design: str) -> int | None:
    """Sessions per exactly balanced cycle of each reviewer (None for random orders)."""
    return len(williams_rows(models)) if design == "williams" else None


def orders_document(
    models: Sequence[str], reviewers: Sequence[str], seed: int, design: str = "williams", sessions: int = 1
) -> dict[str, object]:
    """What `bias-audit orders --format json` and POST /presentation-orders answer."""
    planned = presentation_orders(models, reviewers, seed, design, sessions)
    return {
        "design": design,
        "seed": seed,
        "sessions": sessions,
        "cycle": cycle_length(len(models), design),
        "orders": [
            {"session": o.session, "reviewer": o.reviewer, "order": list(o.order), "label_to_model": o.label_to_model()}
            for o in planned
        ],
    }
