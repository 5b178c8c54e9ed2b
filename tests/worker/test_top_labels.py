"""TopLabels keeps the label sets seen most often (Space-Saving), checked against exact counting."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from bias_audit.worker.top_labels import TopLabels


@pytest.mark.parametrize(
    "stream, limit, kept",
    [
        (["a", "b", "c"], 5, {"a", "b", "c"}),  # under the bound: every set keeps its series
        (["a"] * 5 + ["b"] * 3 + ["c", "d", "e"], 2, {"a", "b"}),  # later, rarer sets are other
        (["x", "y"] + ["a"] * 6 + ["b"] * 10, 2, {"a", "b"}),  # early ones pushed out once overtaken (ranked every 8)
    ],
)
def test_the_sets_seen_most_often_are_kept(stream, limit, kept):
    evicted = []
    top = TopLabels(limit, evicted.append)
    for value in stream:
        top((value,))
    assert {key for (key,) in top.kept} == kept
    assert {key for (key,) in evicted} == ({"x", "y"} if "x" in stream else set())


def test_heavy_hitters_survive_a_flood_of_distinct_values_and_memory_stays_bounded():
    rng = random.Random(3)
    stream = [f"heavy-{rng.randrange(4)}" for _ in range(4_000)] + [f"junk-{i}" for i in range(20_000)]
    rng.shuffle(stream)
    top = TopLabels(10)
    answers = [top((value,)) for value in stream]
    exact = Counter(stream)
    assert {f"heavy-{i}" for i in range(4)} <= {key for (key,) in top.kept}
    assert len(top.counts) <= 40 and len(top.kept) <= 10
    assert all(top.counts[(f"heavy-{i}",)] >= exact[f"heavy-{i}"] for i in range(4))  # Space-Saving never undercounts
    assert sum(answers) < len(stream)  # the flood mostly went to other
