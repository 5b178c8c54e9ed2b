"""Bounds on the metric labels whose values come from input (tenants, judges, bias types): a
producer sending 23,000 judge names must not make 46,000 series, a 15 MB scrape and memory never
given back. A metric keeps series for the label sets seen most often; the rest count as `other`."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable
from typing import Any

OTHER = "other"


class TopLabels:
    """The `limit` label sets (tuples of input values) with the most observations, estimated by
    Space-Saving over 4x as many candidates (Metwally et al. 2005): memory stays bounded however
    many distinct values arrive, and a set seen often is never pushed out by many seen once.
    Candidates sit in buckets by count, so the rarest is found in O(1); the kept sets are ranked
    again every `capacity` observations. `evict(key)` is called when a kept set drops out."""

    def __init__(self, limit: int, evict: Callable[[tuple], None] = lambda key: None) -> None:
        self.limit = limit
        self.capacity = 4 * limit
        self.counts: dict[tuple, int] = {}
        self._buckets: dict[int, dict[tuple, None]] = {}  # count -> its candidates, oldest first
        self._low = 1  # no candidate's count is below this
        self.kept: set[tuple] = set()
        self._evict = evict
        self._until_ranking = self.capacity

    def __call__(self, key: tuple[Hashable, ...]) -> bool:
        """Count one observation of `key`; whether it has a series of its own (else: other)."""
        count = self.counts.get(key)
        if count is None:
            count = 0
            if len(self.counts) >= self.capacity:  # the rarest candidate makes room; its count is inherited
                rarest = self._rarest()
                count = self._take(rarest)
                self._drop(rarest)
        else:
            self._take(key)
        self._put(key, count + 1)
        self._until_ranking -= 1
        if self._until_ranking <= 0:
            self._rank()
        if key not in self.kept and len(self.kept) < self.limit:
            self.kept.add(key)
        return key in self.kept

    def _put(self, key: tuple, count: int) -> None:
        self.counts[key] = count
        self._buckets.setdefault(count, {})[key] = None
        self._low = min(self._low, count)

    def _take(self, key: tuple) -> int:
        count = self.counts.pop(key)
        bucket = self._buckets[count]
        del bucket[key]
        if not bucket:
            del self._buckets[count]
        return count

    def _rarest(self) -> tuple:
        while self._low not in self._buckets:  # the lowest count only grows between insertions below it
            self._low += 1
        return next(iter(self._buckets[self._low]))

    def _rank(self) -> None:
        """Keep the `limit` most counted candidates; a kept set now outside them loses its series."""
        self._until_ranking = self.capacity
        top = set(heapq.nlargest(self.limit, self.counts, key=self.counts.__getitem__))
        for key in self.kept - top:
            self._drop(key)
        self.kept = top

    def _drop(self, key: tuple) -> None:
        if key in self.kept:
            self.kept.discard(key)
            self._evict(key)


class BoundedSeries:
    """A metric whose labels partly come from input: the label sets TopLabels keeps get series of
    their own, the rest one `other` series (or none, for a gauge, where an `other` means nothing)."""

    def __init__(self, metric: Any, limit: int) -> None:
        self.metric = metric
        self.top = TopLabels(limit, self._remove)
        self._series: dict[tuple, set[tuple[str, ...]]] = {}

    def labels(self, key: tuple, values: tuple[str, ...], other: tuple[str, ...]) -> Any:
        """One observation of `key`: the child for `values` when it is kept, else for `other`."""
        return self.child(key, values) if self.top(key) else self.metric.labels(*other)

    def child(self, key: tuple, values: tuple[str, ...]) -> Any:
        """The child for `values` of a key `top` keeps (a gauge asks `top` itself: it has no other)."""
        self._series.setdefault(key, set()).add(values)
        return self.metric.labels(*values)

    def _remove(self, key: tuple) -> None:
        for values in self._series.pop(key, ()):
            self.metric.remove(*values)
