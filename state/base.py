"""The window store interface shared by the Redis and in-process implementations."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from bias_audit.analysis.digest import SessionDigest, iso_ms, timestamp_ms
from bias_audit.analysis.window import WindowUpdate


@dataclass(frozen=True, slots=True)
class WindowPolicy:
    max_sessions: int = 100
    max_days: float = 30.0
    recent_sessions: int = 20  # the last K sessions counted: live alerts are judged on them
    keep_sums: bool = False  # each update carries the window's sums (a judge's window: few fields)

    @property
    def window_ms(self) -> int:
        return int(self.max_days * 86_400_000)

    @property
    def seen_ttl_seconds(self) -> int:
        # A session id is remembered one day longer than the window can hold it: a redelivery
        # after that is outside the window anyway.
        return int(self.max_days * 86_400) + 86_400


@dataclass(frozen=True, slots=True)
class WindowItem:
    tenant_id: str
    session_id: str
    timestamp: datetime
    owner: str  # the delivery that counts it (stream entry id, Pub/Sub message id, line number)
    contribution: dict[str, int] = field(default_factory=dict)  # to the window's sums
    recent_contribution: dict[str, int] = field(default_factory=dict)  # to the recent window's (alerts)
    counted: bool = True  # False at consent 0: remember the id, store nothing
    digest: SessionDigest | None = None  # what cross-session analytics read (Redis stores its to_dict())

    @property
    def ts_ms(self) -> int:
        return timestamp_ms(self.timestamp)


def iso_from_ms(ms: int | float | None) -> str | None:
    return None if ms is None else iso_ms(ms)


# How far a delivery got, kept in its session's seen marker: a redelivery (a killed worker, a
# Pub/Sub redelivery) resumes after the last step done instead of repeating it.
RECORDED = "recorded"
PUBLISHED = "published"
STATUS_AFTER = {RECORDED: "resume_recorded", PUBLISHED: "done"}
RESUMED = ("resume", "resume_recorded")  # this delivery counted the session before; not published


def marker_value(owner: str, phase: str | None) -> str:
    return f"{owner}|{phase}" if phase else owner


class WindowStore(Protocol):
    async def add_many(self, items: list[WindowItem]) -> list[WindowUpdate]:
        """Count each session once per tenant window, atomically per session."""
        ...

    async def mark(self, items: list[WindowItem], phase: str) -> None:
        """Record that these deliveries got through `phase` (RECORDED or PUBLISHED)."""
        ...

    async def digests(self, tenant_ids: list[str]) -> dict[str, list[SessionDigest]]:
        """Each tenant's window as session digests, oldest first."""
        ...
