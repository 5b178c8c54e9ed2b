"""In-process window with exactly the semantics of state/redis_window.lua."""

from __future__ import annotations

import heapq
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bias_audit.analysis.digest import SessionDigest
from bias_audit.analysis.window import WindowUpdate, add_into, summarize_window

if TYPE_CHECKING:
    from bias_audit.schemas.results import WindowSummary

from .base import RESUMED, STATUS_AFTER, WindowItem, WindowPolicy, iso_from_ms, marker_value


@dataclass
class _TenantWindow:
    sums: dict[str, int] = field(default_factory=dict)
    contributions: dict[str, dict[str, int]] = field(default_factory=dict)
    digests: dict[str, SessionDigest] = field(default_factory=dict)  # parsed once, when counted
    sequence: int = 0
    recent_order: deque[str] = field(default_factory=deque)  # counting order
    recent_sequences: dict[str, int] = field(default_factory=dict)  # of the sessions in recent_order
    recent_contributions: dict[str, dict[str, int]] = field(default_factory=dict)
    recent_sums: dict[str, int] = field(default_factory=dict)
    order: list[tuple[int, bytes, str]] = field(default_factory=list)  # heap, as a zset orders
    max_ts: int | None = None  # newest event seen, counted or not (the days cutoff)
    newest_in_order: int | None = None  # window end; only the oldest ever leaves, so it stays until empty


class MemoryWindow:
    """Bounded for a long-running process (`serve`): at most `max_tenants` windows (the least
    recently used one is dropped, as its Redis keys would expire when idle) and `max_seen`
    session markers (the oldest forgotten first, as Redis forgets them after their TTL). None:
    unbounded, for a finite input (`audit` of a file must find a duplicate however far back)."""

    def __init__(
        self, policy: WindowPolicy = WindowPolicy(), *, max_tenants: int | None = 1_000, max_seen: int | None = 50_000
    ) -> None:
        self.policy = policy
        self.max_tenants, self.max_seen = max_tenants, max_seen
        self._tenants: OrderedDict[str, _TenantWindow] = OrderedDict()
        self._seen: OrderedDict[tuple[str, str], str] = OrderedDict()

    def _evict_oldest(self, tenant: _TenantWindow) -> None:
        _, _, session_id = heapq.heappop(tenant.order)
        if not tenant.order:
            tenant.newest_in_order = None
        tenant.digests.pop(session_id, None)
        # an earlier session may have cancelled a key to zero (and removed it): it restarts from 0,
        # as HINCRBY on a missing field does
        add_into(tenant.sums, tenant.contributions.pop(session_id), -1)

    def add(self, item: WindowItem) -> WindowUpdate:
        tenant = self._tenant(item.tenant_id)
        seen_key = (item.tenant_id, item.session_id)
        marker = self._seen.get(seen_key)
        sequence = counted_as = 0
        if marker is not None:
            status = self._status(marker, item.owner)
            if status in RESUMED:
                counted_as = tenant.recent_sequences.get(item.session_id, 0)
        else:
            status = "new"
            self._seen[seen_key] = item.owner
            while self.max_seen is not None and len(self._seen) > self.max_seen:
                self._seen.popitem(last=False)
            ts = item.ts_ms
            if tenant.max_ts is None or ts > tenant.max_ts:
                tenant.max_ts = ts
            cutoff = tenant.max_ts - self.policy.window_ms
            if item.counted and ts >= cutoff:
                heapq.heappush(tenant.order, (ts, item.session_id.encode(), item.session_id))
                if tenant.newest_in_order is None or ts > tenant.newest_in_order:
                    tenant.newest_in_order = ts
                tenant.contributions[item.session_id] = item.contribution
                add_into(tenant.recent_sums, item.recent_contribution, 1)
                tenant.recent_contributions[item.session_id] = item.recent_contribution
                tenant.recent_order.append(item.session_id)
                tenant.sequence += 1
                sequence = tenant.recent_sequences[item.session_id] = tenant.sequence
                while len(tenant.recent_order) > self.policy.recent_sessions:
                    left = tenant.recent_order.popleft()
                    add_into(tenant.recent_sums, tenant.recent_contributions.pop(left), -1)
                    tenant.recent_sequences.pop(left, None)
                if item.digest is not None:
                    tenant.digests[item.session_id] = item.digest
                add_into(tenant.sums, item.contribution, 1)
            while tenant.order and tenant.order[0][0] < cutoff:
                self._evict_oldest(tenant)
            while len(tenant.order) > self.policy.max_sessions:
                self._evict_oldest(tenant)
        return WindowUpdate(
            status=status,
            summary=self.summary(item.tenant_id),
            sequence=sequence,
            recent=dict(tenant.recent_sums),
            counted_as=counted_as,
            sums=dict(tenant.sums) if self.policy.keep_sums else {},
        )

    def _tenant(self, tenant_id: str) -> _TenantWindow:
        tenant = self._tenants.get(tenant_id)
        if tenant is None:
            tenant = self._tenants[tenant_id] = _TenantWindow()
            while self.max_tenants is not None and len(self._tenants) > self.max_tenants:
                self._tenants.popitem(last=False)
        else:
            self._tenants.move_to_end(tenant_id)
        return tenant

    @property
    def sizes(self) -> tuple[int, int]:
        """(windows, session markers) held: what the bounds bound."""
        return len(self._tenants), len(self._seen)

    @staticmethod
    def _status(marker: str, owner: str) -> str:
        if marker == owner:
            return "resume"
        for phase, status in STATUS_AFTER.items():
            if marker == marker_value(owner, phase):
                return status
        return "duplicate"

    async def mark(self, items: list[WindowItem], phase: str) -> None:
        for item in items:
            key = (item.tenant_id, item.session_id)
            if key in self._seen:  # like SET XX: never creates a marker
                self._seen[key] = marker_value(item.owner, phase)

    def summary(self, tenant_id: str) -> WindowSummary:
        tenant = self._tenants.get(tenant_id) or _TenantWindow()
        return summarize_window(
            tenant.sums,
            tenant_id=tenant_id,
            sessions=len(tenant.order),
            window_start=iso_from_ms(tenant.order[0][0]) if tenant.order else None,
            window_end=iso_from_ms(tenant.newest_in_order),
        )

    async def digests(self, tenant_ids: list[str]) -> dict[str, list[SessionDigest]]:
        out = {}
        for tenant_id in tenant_ids:
            tenant = self._tenants.get(tenant_id) or _TenantWindow()
            stored = tenant.digests
            out[tenant_id] = [stored[sid] for _, _, sid in sorted(tenant.order) if sid in stored]
        return out

    async def add_many(self, items: list[WindowItem]) -> list[WindowUpdate]:
        return [self.add(item) for item in items]
