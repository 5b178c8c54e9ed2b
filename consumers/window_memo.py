"""Per-session values a worker derives from its tenants' windows, each computed once.

The consumer needs, every batch, a value per session of the window it arrives to (the two-way
fit's noise, the anomaly level): a function of that session alone. Recomputing the window's
sessions every batch was most of a small batch's time; here the sessions this worker audits
give theirs (`remember`), the others are computed together when first asked for, and a tenant
keeps only the sessions it was last asked for, so memory follows the windows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Generic, TypeVar

from bias_audit.analysis.digest import SessionDigest

T = TypeVar("T")
MAX_TENANTS = 10_000  # past this many tenants, all are forgotten (those gone quiet among them)


class WindowMemo(Generic[T]):
    def __init__(self, compute: Callable[[list[SessionDigest]], list[T]], max_tenants: int = MAX_TENANTS) -> None:
        self.compute = compute  # the values of the given sessions, in their order
        self.max_tenants = max_tenants
        self._by_tenant: dict[str, dict[str, T]] = {}

    def remember(self, tenant: str, values: Mapping[str, T]) -> None:
        """Values known without computing (session id -> value), replacing any remembered."""
        self._by_tenant.setdefault(tenant, {}).update(values)

    def values(self, tenant: str, digests: Sequence[SessionDigest]) -> list[T]:
        """The sessions' values, in their order; afterwards only these are kept for the tenant."""
        if len(self._by_tenant) > self.max_tenants:
            self._by_tenant.clear()
        known = self._by_tenant.get(tenant, {})
        missing = [d for d in digests if d.session_id not in known]
        if missing:
            known = {**known, **dict(zip((d.session_id for d in missing), self.compute(missing)))}
        kept = self._by_tenant[tenant] = {d.session_id: known[d.session_id] for d in digests}
        return list(kept.values())
