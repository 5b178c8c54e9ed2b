"""Which records become cells and slots, in which order: session_cells against a loop over the
records, with name codes small (packed into one sort key) and far apart (sorted key by key)."""

from __future__ import annotations

import numpy as np
import pytest

from bias_audit.analysis.record_cells import RecordColumns, session_cells


def records(rng: np.random.Generator, sessions: int, spread: int) -> RecordColumns:
    lengths = rng.integers(1, 12, sessions)
    n = int(lengths.sum())
    names = rng.integers(0, 4, 2 * n) * spread  # repeats of a (reviewer, model) pair are common
    return RecordColumns(
        starts=np.concatenate(([0], np.cumsum(lengths))),
        reviewer=names[:n],
        model=names[n:],
        score=rng.integers(1, 11, n).astype(float),
        scale=np.zeros(n, dtype=np.int64),
        position=rng.integers(0, 4, n).astype(float),
        version=np.zeros(n, dtype=np.int64),
        self_review=np.full(n, -1, dtype=np.int8),
        words=np.full(n, 10.0),
        chars=np.full(n, np.nan),
        fingerprint=np.full(n, -1),
        correct=np.full(n, -1, dtype=np.int8),
        similarity=np.full(n, np.nan),
    )


@pytest.mark.parametrize("spread", [1, 1 << 40], ids=["codes packed", "codes too far apart to pack"])
def test_the_first_record_of_each_pair_is_a_cell_and_slots_follow_first_appearance(spread):
    rng = np.random.default_rng(3)
    columns = records(rng, 40, spread)
    cells, slots, kept = [], {}, []
    for session in range(40):
        seen = set()
        for row in range(columns.starts[session], columns.starts[session + 1]):
            pair = (int(columns.reviewer[row]), int(columns.model[row]))
            if pair in seen:
                continue
            seen.add(pair)
            kept.append(row)
            slot = slots.setdefault((session, pair[1]), len(slots))
            cells.append((session, *pair, slot))
    out = session_cells(columns, ["1-10"], ["1.2.0"])
    assert list(zip(out.session.tolist(), out.reviewer.tolist(), out.model.tolist(), out.slot.tolist())) == cells
    assert list(zip(out.slot_session.tolist(), out.slot_model.tolist())) == list(slots)
    assert out.position.tolist() == columns.position[kept].astype(int).tolist()
    assert len(kept) < len(columns.score)  # repeats were dropped
