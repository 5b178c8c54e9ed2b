"""Garbage-collector settings: for a long-running worker, and a pause while many live objects
are built (a batch in hand, a report's window being read).

Each session allocates ~150 container objects that live until its batch is published. With
CPython's default thresholds (700, 10, 10) that triggers thousands of young collections and
repeated full collections that walk every object the imports created (numpy, scipy, pydantic),
costing more per session than the audit itself. Freezing the startup heap takes it
out of every collection, and larger thresholds collect the (rare) reference cycles less often.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

YOUNG_THRESHOLD = 50_000  # allocations between young collections (default 700)
MIDDLE_EVERY = 20  # young collections per middle collection (default 10)
FULL_EVERY = 10  # middle collections per full collection (default 10)
OVERLAP_LIMIT = 4 * YOUNG_THRESHOLD  # young objects tolerated while batches keep overlapping
# `serve`: a request leaves its garbage in reference cycles (the GraphQL executor's context, the
# framework's request and response objects), which only a collection frees, and a collection
# pauses every request in the process for as long as it walks the young objects: collecting after
# about one request's allocations keeps that pause short, for the same work in all
SERVE_YOUNG_THRESHOLD = 5_000


def tune_gc(young_threshold: int = YOUNG_THRESHOLD) -> None:
    """Call once, after imports and wiring and before the consume (or serve) loop."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(young_threshold, MIDDLE_EVERY, FULL_EVERY)


# Batches in hand (several inputs' pipelines may overlap) and whether the collector was on.
_batches = 0
_was_enabled = False


@contextmanager
def collector_paused():
    """No automatic collection while objects that all stay alive are built: a batch's parsed
    events, records and results (~50,000 container objects for 200 sessions) live until it is
    published, a report's lines and digests until it is rendered, so a young collection in the
    middle walks every one of them and frees nothing. Nests and overlaps (several inputs'
    batches): the collector runs again when the last one ends, on a nearly empty young generation."""
    global _batches, _was_enabled
    if _batches == 0:
        _was_enabled = gc.isenabled()
        gc.disable()
    _batches += 1
    try:
        yield
    finally:
        _batches -= 1
        if _batches == 0:
            if _was_enabled:
                gc.enable()
        elif gc.get_count()[0] > OVERLAP_LIMIT:  # inputs that never stop overlapping: collect anyway
            gc.collect(1)
