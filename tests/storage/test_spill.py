"""The report reader's spill: arrays in temporary files whose pages go back to the OS on request
and come back, unchanged, when read."""

from __future__ import annotations

import gc
import string

import numpy as np
import pytest

from bias_audit.storage.report_reader import _HeldSessions, _TextColumn
from bias_audit.storage.spill import Spill

MB = 1 << 20


def resident_mb() -> float:
    with open("/proc/self/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("Rss:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no Rss line")


@pytest.mark.parametrize("kind", [np.int8, np.int32, np.float64, np.bool_])
def test_an_array_starts_as_zeros_of_its_type_and_keeps_what_is_written_past_a_hand_back(tmp_path, kind):
    spill = Spill(str(tmp_path))
    array = spill.zeros(100_000, kind)
    assert array.dtype == np.dtype(kind) and array.shape == (100_000,) and not array.any()
    values = (np.arange(100_000) % 7).astype(kind)
    array[:] = values
    spill.hand_back()
    assert np.array_equal(array, values)
    array[5] = 1
    spill.hand_back()
    assert array[5] == 1 and np.array_equal(array[6:], values[6:])


def test_no_room_is_an_ordinary_empty_array(tmp_path):
    array = Spill(str(tmp_path)).zeros(0, np.float64)
    assert array.shape == (0,) and array.dtype == np.float64


def test_handing_back_takes_the_written_pages_out_of_resident_memory(tmp_path):
    spill = Spill(str(tmp_path))
    array = spill.zeros(96 * MB, np.uint8)
    before = resident_mb()
    array[:] = 3
    written = resident_mb()
    spill.hand_back()
    handed = resident_mb()
    assert written - before > 80  # the pages written are the process's until handed back
    assert written - handed > 80
    assert int(array[::4096].sum()) == 3 * (96 * MB // 4096)  # read again from the file


def mapped_files(directory) -> int:
    with open("/proc/self/maps") as maps:
        return sum(str(directory) in line for line in maps)


def test_an_array_let_go_leaves_no_mapping(tmp_path):
    spill = Spill(str(tmp_path))
    array = spill.zeros(1000, np.int64)
    view = array[10:20]
    assert mapped_files(tmp_path) == 1
    del array
    gc.collect()
    assert mapped_files(tmp_path) == 1  # a view keeps its file
    del view
    gc.collect()
    assert mapped_files(tmp_path) == 0


def test_a_text_column_grown_over_many_batches_reads_back_each_row(tmp_path):
    """Rows of any length (none, multi-byte characters, None) across enough batches to grow each
    of its arrays, read one at a time, taken in any order, and kept after a compaction."""
    rng = np.random.default_rng(3)
    alphabet = string.ascii_letters + "éß漢字"
    column = _TextColumn(Spill(str(tmp_path)))
    expected: list[str | None] = []
    for _ in range(40):
        batch: list[str | None] = [
            None if rng.random() < 0.1 else "".join(rng.choice(list(alphabet), int(rng.integers(0, 60))))
            for _ in range(int(rng.integers(1, 400)))
        ]
        column.append(batch)
        expected.extend(batch)
    column.append([])
    assert len(column) == len(expected) > 4096
    assert [column.at(row) for row in range(len(expected))] == expected
    rows = rng.permutation(len(expected))[:3000]
    assert column.take(rows).to_pylist() == [expected[row] for row in rows.tolist()]
    kept = np.flatnonzero(rng.random(len(expected)) < 0.3)
    column.keep(kept)
    expected = [expected[row] for row in kept.tolist()]
    column.append(["after", None, ""])
    expected += ["after", None, ""]
    assert [column.at(row) for row in range(len(expected))] == expected
    assert column.take(np.arange(len(expected))).to_pylist() == expected


def test_held_session_keys_are_placed_as_an_insert_would_place_them(tmp_path):
    """Keys added a batch at a time, equal keys among them and among those held: the same order
    of keys and runs as np.insert at each key's right-hand place (the oracle)."""
    rng = np.random.default_rng(8)
    held = _HeldSessions(Spill(str(tmp_path)))
    keys = np.empty(0, np.int64)
    runs = np.empty(0, np.int64)
    run = 0
    for size in (5, 1, 0, 40, 17):
        new = rng.integers(0, 30, size).astype(np.int64)
        numbers = np.arange(run, run + size, dtype=np.int64)
        run += size
        held.add(new, numbers)
        order = np.argsort(new, kind="stable")
        at = np.searchsorted(keys, new[order], "right")
        keys, runs = np.insert(keys, at, new[order]), np.insert(runs, at, numbers[order])
        assert held.keys.tolist() == keys.tolist() and held.runs.tolist() == runs.tolist()
