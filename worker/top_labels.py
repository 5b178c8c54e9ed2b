"""Bounds on the metric labels whose values come from input (tenants, judges, bias types): a
producer sending 23,000 judge names must not make 46,000 series, a 15 MB scrape and memory never
given back. A metric keeps series for the label sets seen most often; the rest count as `other`."""

from __future__ import annotations

from collections.abc import Callable, Hashable

OTHER = "other"


class TopLabels:
    """The `limit` label sets (tuples of input values) with the most observations, estimated by
    Space-Saving over 4x as many candidates (Metwally et al. 2005): memory stays bounded however
    many distinct values arrive, and a set seen often is never pushed out by many seen once.
    `evict(key)` is called when a kept set drops out, so its series can be removed."""

    def __init__(self, limit: int, evict: Callable[[tuple], None] = lambda key: None) -> None:
        self.limit = limit
        self.capacity = 4 * limit
        self.counts: dict[tuple, int] = {}
        self.kept: set[tuple] = set()
        self._evict = evict

    def __call__(self, key: tuple[Hashable, ...]) -> bool:
        """Count one observation of `key`; whether it has a series of its own (else: other)."""
        count = self.counts.get(key)
        if count is None:
            count = 0
            if len(self.counts) >= self.capacity:  # the rarest candidate makes room; its count is inherited
                rarest = min(self.counts, key=self.counts.__getitem__)
                count = self.counts.pop(rarest)
                self._drop(rarest)
        self.counts[key] = count + 1
        if key in self.kept:
            return True
        if len(self.kept) < self.limit:
            self.kept.add(key)
            return True
        weakest = min(self.kept, key=self.counts.__getitem__)
        if self.counts[key] <= self.counts[weakest]:
            return False
        self._drop(weakest)
        self.kept.add(key)
        return True

    def _drop(self, key: tuple) -> None:
        if key in self.kept:
            self.kept.discard(key)
            self._evict(key)


def remove_series(metric, matches: Callable[[dict[str, str]], bool]) -> None:
    """Remove every series of `metric` whose labels `matches` (through its public collect())."""
    found = {tuple(sample.labels.values()) for family in metric.collect() for sample in family.samples
             if sample.labels and matches(sample.labels)}
    for values in found:
        metric.remove(*values)
