"""The record-once step both consumers share. A delivery's records are appended once: the
RECORDED mark in the window store says so to every worker, and this process also remembers the
deliveries it appended, which covers the one case the mark cannot: the append succeeded and the
mark did not (window Redis down), and the batch is retried here."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from bias_audit.analysis.records import SessionRecords
from bias_audit.state.base import PUBLISHED, RECORDED, WindowItem, WindowStore

Row = TypeVar("Row")


class RecordSink(Protocol):
    """JSONL files or PostgreSQL: a batch's records in one write; an error leaves the batch to
    be retried (the window's RECORDED mark is only set after it)."""

    def append(self, records: list[dict[str, Any]]) -> int: ...

    def close(self) -> None: ...


class SessionSink(Protocol):
    """The council consumer's sink: as RecordSink, each session's records handed over unexpanded
    (PostgreSQL keeps one row per session and reads it from the SessionRecords directly)."""

    def append_sessions(self, sessions: list[SessionRecords]) -> int: ...

    def close(self) -> None: ...


class RecordOnce(Generic[Row]):
    """`write`: the sink's batch write (None: records are not kept)."""

    def __init__(
        self, window: WindowStore, write: Callable[[list[Row]], object] | None, remember: int = 10_000
    ) -> None:
        self.window = window
        self.write = write
        self._appended: OrderedDict[str, None] = OrderedDict()
        self._remember = remember

    def needed(self, delivery_id: str, status: str) -> bool:
        """Whether this delivery's records still have to be appended ("resume_recorded": another
        attempt appended them already)."""
        return status != "resume_recorded" and delivery_id not in self._appended

    async def append(self, batch: list[tuple[str, WindowItem, list[Row]]]) -> None:
        """(delivery id, window item, records) of the deliveries that needed it, in one write."""
        records = [record for _, _, rows in batch for record in rows]
        if records and self.write is not None:
            self.write(records)
        if batch:
            # so a redelivery, here or in another worker, does not append them again
            await self.window.mark([item for _, item, _ in batch], RECORDED)
        for delivery_id, _, _ in batch:
            self._appended[delivery_id] = None
        while len(self._appended) > self._remember:
            self._appended.popitem(last=False)

    async def published(self, items: list[WindowItem]) -> None:
        """After a transport that cannot publish and acknowledge atomically (Pub/Sub) published
        the results: a redelivery of these messages is then only acknowledged."""
        await self.window.mark(items, PUBLISHED)
