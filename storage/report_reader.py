"""Stream stored records into per-tenant windows, with memory bounded by the window.

DuckDB's JSON reader parses the files (in C++, on every core) into Arrow batches of typed
columns, in file order. A session's records are contiguous in a file (a worker appends a session
in one write), so a batch's sessions begin where its session_id changes. Each session is offered
to its tenant's window, which holds the newest 2N (the window, and the one before it for the
trend tests); the sessions held are reduced to their cells by analysis.record_cells a batch at a
time, and evicted sessions' cells are dropped once they outnumber the held ones, so memory follows
the window and never holds a session as Python objects.

A line the engine cannot read (torn by a crash, not JSON, a field of the wrong type) or that the
record type refuses ends the fast scan of its file: the rest of that file is checked line by line
(msgspec, as StoredCell), each bad line skipped with its number and reason, and the good ones are
read on from a cleaned copy.
"""

from __future__ import annotations

import glob
import heapq
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import msgspec
import numpy as np

from bias_audit.analysis.digest import StoredCell, timestamp_ms
from bias_audit.analysis.record_cells import RecordColumns, session_cells
from bias_audit.analysis.session_noise import REFERENCE_SPAN
from bias_audit.analysis.stats import index_type
from bias_audit.analysis.window import window_bounds
from bias_audit.analysis.window_cells import (
    MOST_SCORES,
    SUM_BLOCK,
    WindowCells,
    narrow_positions,
    number_scores,
    repeated_sessions,
    response_lengths,
)
from bias_audit.gc_tuning import collector_paused

from .jsonl_store import record_files
from .spill import Spill

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa


class _SessionHead(msgspec.Struct, gc=False):
    """Enough of a bad line to name its session."""

    session_id: str


# strict=False: numbers written as strings ("7") are read as numbers, as the engine reads them
_RECORD = msgspec.json.Decoder(StoredCell, strict=False)
_HEAD = msgspec.json.Decoder(_SessionHead, strict=False)

# The fields the report reads, as the engine's types; every other field of a line is skipped.
_TYPES = {
    "session_id": "VARCHAR",
    "timestamp": "VARCHAR",
    "tenant_id": "VARCHAR",
    "trace_id": "VARCHAR",
    "council_config_version": "VARCHAR",
    "reviewer_id": "VARCHAR",
    "model_id": "VARCHAR",
    "score_value": "DOUBLE",
    "score_scale": "VARCHAR",
    "position": "DOUBLE",  # a number: a fraction is refused below, as the record type refuses it
    "schema_version": "VARCHAR",
    "is_self_review": "BOOLEAN",
    "response_length_words": "DOUBLE",
    "response_length_chars": "DOUBLE",
    "response_fingerprint": "VARCHAR",
    "response_correct": "BOOLEAN",
    "style_similarity": "DOUBLE",
}
_REQUIRED = ("session_id", "timestamp", "reviewer_id", "model_id", "score_value")  # StoredCell's
_QUERY = (
    "SELECT * FROM read_json($path, format := 'newline_delimited', columns := {"
    + ", ".join(f"'{name}': '{kind}'" for name, kind in _TYPES.items())
    + "})"
)
BATCH_ROWS = 1 << 16  # records a batch: the engine's batches, and the cells reduced at once
# What the engine may parse ahead while the batch before is reduced here: its default (10 MiB, about
# one batch) leaves its threads waiting on this one; more than 16 MiB fills up over a long read and
# stays resident (64 MiB held about 80 MB more at a million sessions, for 5% of the read's time).
STREAM_AHEAD_MIB = 16
# Evicted sessions are dropped once they outnumber the held ones and this: a small window over a
# year of records is compacted every few thousand sessions, not on every batch.
COMPACT_AFTER = 1 << 13


class InputError(ValueError):
    """An input path that cannot be read; the message names it."""


def expand_inputs(inputs: Iterable[str]) -> list[Path]:
    """Files, directories (every *.jsonl under them) and quoted glob patterns."""
    paths: list[Path] = []
    for raw in inputs:
        path = Path(raw)
        if path.exists():
            paths.append(path)
        elif any(ch in raw for ch in "*?["):
            matches = sorted(glob.glob(raw, recursive=True))
            if not matches:
                raise InputError(f"no file matches {raw!r}")
            paths.extend(Path(m) for m in matches)
        else:
            raise InputError(f"{raw}: no such file or directory")
    files = record_files(paths)
    if not files:
        raise InputError("no .jsonl files under " + ", ".join(inputs))
    return files


@dataclass
class ReadStats:
    files: int = 0
    lines: int = 0
    records: int = 0
    sessions: int = 0
    duplicate_sessions: int = 0
    skipped_lines: int = 0
    skipped_examples: list[str] = field(default_factory=list)

    def skip(self, where: str, limit: int = 5) -> None:
        self.skipped_lines += 1
        if len(self.skipped_examples) < limit:
            self.skipped_examples.append(where)


@dataclass
class TenantWindows:
    tenant_id: str
    cells: WindowCells  # the window before, then the window
    previous_sessions: int

    @property
    def current_ids(self) -> list[str]:
        """The window's sessions' ids, oldest first."""
        return list(self.cells.session_ids[self.previous_sessions :])


@dataclass
class _TenantWindow:
    code: int  # the tenant's index in the reader
    keep: int | None  # sessions to hold; None = all
    # (ts, run), kept only when `keep` is set: runs are numbered in read order, and tuples
    # compare in C, oldest first, then read order
    heap: list[tuple[int, int]] = field(default_factory=list)
    newest_ms: int | None = None


class _TextColumn:
    """Text a row (None allowed), appended a batch at a time: its bytes end to end, each row's end
    and whether it is text, three arrays in `spill`'s files, grown by half as they fill. A row
    costs its bytes and nine more, not a Python object, and the column a few mappings whatever
    its length."""

    def __init__(self, spill: Spill) -> None:
        self.spill = spill
        self.size = 0
        self._bytes = spill.zeros(1 << 16, np.uint8)
        self._ends = spill.zeros(1 << 12, np.int64)  # each row's end in _bytes
        self._text = spill.zeros(1 << 12, np.bool_)  # the row is text, not None

    def __len__(self) -> int:
        return self.size

    def append(self, values: list[str | None]) -> None:
        import pyarrow as pa

        if not values:
            return
        array = pa.array(values, pa.large_string())
        _, offsets_buffer, data_buffer = array.buffers()
        offsets = np.frombuffer(offsets_buffer, np.int64, len(array) + 1, array.offset * 8)
        used = self._end(self.size)
        chunk = np.frombuffer(data_buffer, np.uint8)[offsets[0] : offsets[-1]] if data_buffer else np.empty(0, np.uint8)
        self._bytes = _with_room(self.spill, self._bytes, used, len(chunk))
        self._bytes[used : used + len(chunk)] = chunk
        self._ends = _with_room(self.spill, self._ends, self.size, len(values))
        self._ends[self.size : self.size + len(values)] = offsets[1:] - offsets[0] + used
        self._text = _with_room(self.spill, self._text, self.size, len(values))
        self._text[self.size : self.size + len(values)] = array.is_valid().to_numpy(zero_copy_only=False)
        self.size += len(values)

    def _end(self, row: int) -> int:
        """Where row `row` begins: the end of the one before."""
        return int(self._ends[row - 1]) if row else 0

    def at(self, row: int) -> str | None:
        if not self._text[row]:
            return None
        return bytes(self._bytes[self._end(row) : int(self._ends[row])]).decode()

    def _spans(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        stops = self._ends[rows]
        return np.where(rows > 0, self._ends[np.maximum(rows - 1, 0)], 0), stops

    def take(self, rows: np.ndarray) -> pa.Array:
        """The rows, in their order, as one Arrow array whose buffers are in `spill`'s files."""
        import pyarrow as pa

        starts, stops = self._spans(rows)
        data = _gather(self._bytes, starts, stops, self.spill)
        offsets = self.spill.zeros(len(rows) + 1, np.int64)
        np.cumsum(stops - starts, out=offsets[1:])
        text = self._text[rows]
        missing = len(rows) - int(np.count_nonzero(text))
        valid = pa.py_buffer(np.packbits(text, bitorder="little")) if missing else None
        return pa.Array.from_buffers(
            pa.large_string(), len(rows), [valid, pa.py_buffer(offsets), pa.py_buffer(data)], missing
        )

    def keep(self, rows: np.ndarray) -> None:
        """Keep the rows (indices, ascending) and drop the rest."""
        starts, stops = self._spans(rows)
        self._bytes = _gather(self._bytes, starts, stops, self.spill, room=1 << 16)
        ends = self.spill.zeros(len(rows) + (1 << 12), np.int64)
        np.cumsum(stops - starts, out=ends[: len(rows)])
        text = self.spill.zeros(len(ends), np.bool_)
        text[: len(rows)] = self._text[rows]
        self._ends, self._text, self.size = ends, text, len(rows)
        self.spill.hand_back()


class _Texts(Sequence[str]):
    """A window's session ids as Arrow holds them: sliced without a copy, a string made when asked."""

    def __init__(self, array: pa.Array) -> None:
        self._array = array

    def __len__(self) -> int:
        return len(self._array)

    @overload
    def __getitem__(self, key: int) -> str: ...
    @overload
    def __getitem__(self, key: slice) -> Sequence[str]: ...
    def __getitem__(self, key: int | slice) -> str | Sequence[str]:
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self._array))
            if step == 1:
                return _Texts(self._array.slice(start, max(0, stop - start)))
            texts: list[str] = self._array.to_pylist()[key]
            return texts
        row = key + len(self._array) if key < 0 else key
        if not 0 <= row < len(self._array):
            raise IndexError(key)
        text: str = self._array[row].as_py()
        return text


def _with_room(spill: Spill, column: np.ndarray, used: int, more: int) -> np.ndarray:
    """The column, or a copy of its first `used` rows in `spill`'s files half again as long (or as
    long as needed), with room for `more` rows after them; the copy's pages handed back."""
    if used + more <= len(column):
        return column
    grown = spill.zeros(max(used + more, len(column) * 3 // 2), column.dtype)
    grown[:used] = column[:used]
    spill.hand_back()
    return grown


def _held(spill: Spill, values: np.ndarray) -> np.ndarray:
    """A copy of `values` in `spill`'s files."""
    held = spill.zeros(len(values), values.dtype)
    held[:] = values
    return held


class _HeldSessions:
    """Which sessions the reader holds, without an object a session: each held run's key (a hash
    of its tenant and session id, sorted) beside the run. Keys are only where to look: a run found
    by its key is still checked against the tenant and id, so sessions whose keys collide are kept.
    Both columns live in `spill`'s files."""

    def __init__(self, spill: Spill) -> None:
        self.spill = spill
        self.keys = np.empty(0, dtype=np.int64)
        self.runs = np.empty(0, dtype=np.int64)

    def among(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per key, where its runs begin and end in `runs` (empty when none has it)."""
        return np.searchsorted(self.keys, keys, "left"), np.searchsorted(self.keys, keys, "right")

    def add(self, keys: np.ndarray, runs: np.ndarray) -> None:
        order = np.argsort(keys, kind="stable")
        # where the new keys go among the held ones, as np.insert places them (after equal keys)
        places = np.searchsorted(self.keys, keys[order], "right") + np.arange(len(keys))
        held = np.ones(len(self.keys) + len(keys), dtype=bool)
        held[places] = False
        self.keys = self._merged(self.keys, keys[order], places, held)
        self.runs = self._merged(self.runs, runs[order], places, held)

    def _merged(self, old: np.ndarray, new: np.ndarray, places: np.ndarray, held: np.ndarray) -> np.ndarray:
        out = self.spill.zeros(len(held), np.int64)
        out[places] = new
        out[held] = old
        self.spill.hand_back()
        return out

    def renumber(self, renumber: np.ndarray) -> None:
        """Runs renumbered (-1: dropped) after a compaction."""
        runs = renumber[self.runs]
        kept = runs >= 0
        self.keys, self.runs = _held(self.spill, self.keys[kept]), _held(self.spill, runs[kept])


def _ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The indices of the ranges starts[i]..stops[i]-1, one range after another."""
    lengths = stops - starts
    return np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))


RANGES_AT_ONCE = 1 << 16  # ranges gathered at a time: their index, not a window's cells long


def _gather(
    column: np.ndarray,
    starts: np.ndarray,
    stops: np.ndarray,
    spill: Spill,
    at_once: int = RANGES_AT_ONCE,
    room: int = 0,
) -> np.ndarray:
    """The ranges' rows of a column, one range after another, gathered `at_once` ranges at a time
    into `spill`'s files (an array of `room` rows, when more than they fill), handed back a step at
    a time."""
    out = spill.zeros(max(int((stops - starts).sum()), room), column.dtype)
    at = 0
    for first in range(0, len(starts), at_once):
        index = _ranges(starts[first : first + at_once], stops[first : first + at_once])
        out[at : at + len(index)] = column[index]
        at += len(index)
        spill.hand_back()
    return out


class _Columns:
    """Columns of one length (cells, or slots), appended a batch at a time into room reserved for
    what the files may hold: the OS gives a page only once it is written, so the reservation
    costs no memory and the columns are not copied as they fill. A `narrow` integer column starts
    a byte wide and is widened, as far as a part needs, when a part's values do not fit it; a
    column with a fill value (`fills`) holds no memory until a part holds another value."""

    def __init__(
        self,
        types: dict[str, Any],
        room: int,
        spill: Spill,
        *,
        narrow: Iterable[str] = (),
        fills: dict[str, Any] | None = None,
    ) -> None:
        self.spill = spill  # the columns live in files, read back a block at a time
        self.size = 0
        self.room = max(room, 1 << 12)
        self.types = {name: np.int8 if name in narrow else kind for name, kind in types.items()}
        self.fills = fills or {}
        # the columns held: one with a fill is absent until a part holds another value
        self.data = {
            name: self.spill.zeros(self.room, kind) for name, kind in self.types.items() if name not in self.fills
        }

    def append(self, parts: dict[str, np.ndarray]) -> int:
        """Where the parts begin."""
        at = self.size
        for name, part in parts.items():
            column = self.data.get(name)
            if column is None:
                if _only(part, self.fills[name]):
                    continue
                column = self.spill.zeros(max(self.room, at), self.types[name])
                column[:at] = self.fills[name]
            if column.dtype.kind == "i" and len(part):
                column = _wide_enough(column, part, at, self.spill.zeros)
            column = _with_room(self.spill, column, at, len(part))  # more than reserved: grown
            column[at : at + len(part)] = part
            self.data[name] = column
        self.size = at + len(next(iter(parts.values()))) if parts else at
        return at

    def take(self, starts: np.ndarray, stops: np.ndarray, *, last: bool = False) -> dict[str, np.ndarray]:
        """The ranges' rows, one range after another: views where the ranges lie end to end in
        order (a window read whole from time-ordered files), else copies; a column never held,
        its fill seen through a zero stride. `last`: nothing is taken after, so each column is
        let go as soon as it is taken."""
        contiguous = len(starts) > 0 and bool(np.array_equal(starts[1:], stops[:-1]))
        lo, hi = (int(starts[0]), int(stops[-1])) if contiguous else (0, 0)
        out = {}
        for name, kind in self.types.items():
            column = self.data.pop(name, None) if last else self.data.get(name)
            if column is None:
                out[name] = _unknown(int((stops - starts).sum()), self.fills[name], kind)
            else:
                out[name] = column[lo:hi] if contiguous else _gather(column, starts, stops, self.spill)
        return out

    def keep_rows(self, rows: np.ndarray) -> None:
        """Keep the rows (indices, ascending) and drop the rest."""
        self.size = len(rows)
        self.room = len(rows) + (1 << 12)
        self.data = {name: self._kept(column, rows) for name, column in self.data.items()}

    def _kept(self, column: np.ndarray, rows: np.ndarray) -> np.ndarray:
        kept = self.spill.zeros(self.room, column.dtype)
        kept[: self.size] = column[rows]
        return kept

    def recast(self, name: str, kind: Any, convert: Callable[[np.ndarray], np.ndarray]) -> None:
        """The column held as another type from now on, its rows so far converted."""
        self.types[name] = kind
        column = self.data.get(name)
        if column is not None:
            recast = self.spill.zeros(len(column), kind)
            recast[: self.size] = convert(column[: self.size])
            self.data[name] = recast

    def keep_only(self, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
        """Keep the ranges, in their order, and drop the rest; where each range now begins."""
        lengths = stops - starts
        self.size = int(lengths.sum())
        self.room = self.size + (1 << 12)
        self.data = {
            name: _gather(column, starts, stops, self.spill, room=self.room) for name, column in self.data.items()
        }
        begins: np.ndarray = np.cumsum(lengths) - lengths
        return begins


# the narrow columns' types here are the widest they may grow to
_CELLS = {
    "reviewer": np.int64, "model": np.int64, "position": np.int64, "score": np.int64, "own": np.bool_,
    "similarity": np.float64, "slot": np.int64,  # the slot within its session
}  # fmt: skip
_SLOTS = {"length": np.float64, "fingerprint": np.int64, "correct": np.int8}
# a byte a cell while a council's names, positions and answers fit one; a value no record of the
# files carries (llm-council-core's records carry none of these three) held as no memory at all
_NARROW_CELLS = ("reviewer", "model", "position", "score", "slot")
_CELL_FILLS = {"similarity": np.nan}
_NARROW_SLOTS = ("fingerprint",)
_SLOT_FILLS = {"fingerprint": -1, "correct": -1}
# the sessions held, one row each in read order (no object per session): their time, records,
# tenant and config (indices), where their cells and slots are, and whether they are still held
_RUNS = {
    "ts": np.int64, "records": np.int64, "tenant": np.int32, "config": np.int32,
    "cells_from": np.int64, "cells_to": np.int64, "slots_from": np.int64, "slots_to": np.int64,
    "live": np.bool_, "readable": np.bool_, "words": np.bool_,
}  # fmt: skip


def _codes(column: pa.Array, table: dict[str, int], *, empty_is_none: bool = False) -> np.ndarray:
    """Text as indices into `table` (which grows), -1 for null: one lookup per distinct value."""
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(column)
    values = encoded.dictionary.to_pylist()
    mapping = np.array(
        [-1 if empty_is_none and not value else table.setdefault(value, len(table)) for value in values] + [-1],
        dtype=np.int64,
    )
    indices = pc.fill_null(encoded.indices, -1).to_numpy()
    codes: np.ndarray = mapping[indices]  # -1 picks the last entry: null
    return codes


def _flags(column: pa.Array) -> np.ndarray:
    """A boolean column as int8: 1, 0, -1 for null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    flags: np.ndarray = pc.fill_null(pc.cast(column, pa.int8()), -1).to_numpy()
    return flags


def _numbers(column: pa.Array) -> np.ndarray:
    numbers: np.ndarray = column.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)  # null -> NaN
    return numbers


def _readable_rows(batch: pa.RecordBatch) -> int:
    """The rows before the first one the record type refuses: a required field missing, a
    position that is not a whole number."""
    bad: list[int] = [batch.num_rows]
    for name in _REQUIRED:
        column = batch.column(name)
        if column.null_count:
            bad.append(int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0]))
    position = _numbers(batch.column("position"))
    with np.errstate(invalid="ignore"):
        fractional = ~np.isnan(position) & ~(np.isfinite(position) & (position == np.floor(position)))
    if fractional.any():
        bad.append(int(np.flatnonzero(fractional)[0]))
    return min(bad)


@dataclass
class _Rows:
    """Records in read order as columns, and the sessions they are runs of."""

    starts: np.ndarray  # (runs + 1,) int
    session_ids: list[str]  # per run, from its first record
    tenants: list[str | None]
    timestamps: list[str]
    traces: list[str | None]
    configs: list[str | None]
    columns: dict[str, np.ndarray]  # RecordColumns' record columns

    @property
    def runs(self) -> int:
        return len(self.session_ids)

    def last(self) -> _Rows:
        """The last run alone (it may go on in the next batch)."""
        at = int(self.starts[-2])
        return _Rows(
            np.array([0, int(self.starts[-1]) - at]),
            self.session_ids[-1:],
            self.tenants[-1:],
            self.timestamps[-1:],
            self.traces[-1:],
            self.configs[-1:],
            {name: column[at:] for name, column in self.columns.items()},
        )

    def then(self, after: _Rows) -> _Rows:
        """This one run followed by `after`'s runs; its session goes on if `after` begins with it."""
        size = int(self.starts[-1])
        goes_on = self.session_ids[0] == after.session_ids[0]
        tail = 1 if goes_on else 0
        return _Rows(
            np.concatenate(([0], after.starts[tail:] + size)),
            self.session_ids + after.session_ids[tail:],
            self.tenants + after.tenants[tail:],
            self.timestamps + after.timestamps[tail:],
            self.traces + after.traces[tail:],
            self.configs + after.configs[tail:],
            {name: np.concatenate([column, after.columns[name]]) for name, column in self.columns.items()},
        )

    def records(self, runs: np.ndarray) -> RecordColumns:
        """The records of the runs (indices, ascending) as one batch."""
        starts, stops = self.starts[runs], self.starts[runs + 1]
        if len(runs) and int(runs[-1]) == len(runs) - 1:  # the first runs, all of them: a slice
            columns = {name: column[: int(stops[-1])] for name, column in self.columns.items()}
        else:
            index = _ranges(starts, stops)
            columns = {name: column[index] for name, column in self.columns.items()}
        lengths = stops - starts
        return RecordColumns(starts=np.concatenate(([0], np.cumsum(lengths))), **columns)


def _bytes_per_record(path: Path) -> float:
    """From the file's first 64 KB: what the progress and the reserved room are estimated with."""
    with open(path, "rb") as handle:
        sample = handle.read(1 << 16)
    return max(1.0, len(sample) / max(1, sample.count(b"\n")))


class _Progress:
    """Bytes read, estimated from the records parsed (the engine reads ahead on its own), the
    estimate never past the file's size and the rest given when the file is done."""

    def __init__(self, size: int, per_record: float, advance: Callable[[int], None] | None) -> None:
        self.advance, self.size, self.per_record, self.sent = advance, size, per_record, 0

    def rows(self, count: int) -> None:
        step = min(self.size - self.sent, int(count * self.per_record))
        if self.advance is not None and step > 0:
            self.advance(step)
            self.sent += step

    def done(self) -> None:
        if self.advance is not None and self.size > self.sent:
            self.advance(self.size - self.sent)
            self.sent = self.size


class WindowReader:
    def __init__(
        self,
        *,
        sessions: int | None,
        days: float | None,
        tenant: str | None = None,
        batch_rows: int = BATCH_ROWS,
        compact_after: int = COMPACT_AFTER,
    ) -> None:
        self.sessions = sessions
        self.days = days
        self.tenant = tenant
        self.batch_rows = batch_rows
        self.compact_after = compact_after
        self.stats = ReadStats()
        self._tenants: dict[str, _TenantWindow] = {}
        # text as indices: reviewers and models in one table (reviewer == model is a self-review)
        self._names: dict[str, int] = {}
        # a score as its fraction of the scale's place in this table, a byte a cell for a council;
        # None once more than MOST_SCORES fractions are read: each cell then holds its own
        self._fractions: dict[float, int] | None = {}
        self._scales: dict[str, int] = {}
        self._versions: dict[str, int] = {}
        self._fingerprints: dict[str, int] = {}
        self._configs: dict[str, int] = {}
        self._spill = Spill()
        self._cells = _Columns(_CELLS, 0, self._spill, narrow=_NARROW_CELLS, fills=_CELL_FILLS)
        self._slots = _Columns(_SLOTS, 0, self._spill, narrow=_NARROW_SLOTS, fills=_SLOT_FILLS)
        self._runs = _Columns(_RUNS, 0, self._spill)
        self._session_ids = _TextColumn(self._spill)  # per run
        self._traces = _TextColumn(self._spill)  # per run
        self._held = _HeldSessions(self._spill)
        self._dead = 0  # runs evicted, still in the columns

    def _window(self, tenant: str) -> _TenantWindow:
        window = self._tenants.get(tenant)
        if window is None:
            keep = None if self.sessions is None else 2 * self.sessions
            window = self._tenants[tenant] = _TenantWindow(len(self._tenants), keep)
        return window

    def read(self, files: list[Path], progress: Callable[[int], None] | None = None) -> None:
        """progress(bytes) is called as the files are read; its steps add up to their sizes."""
        import duckdb

        self.stats.files = len(files)
        sizes, per_record = [], []
        for path in files:
            try:
                sizes.append(path.stat().st_size)
                per_record.append(_bytes_per_record(path))
            except OSError as error:
                raise InputError(f"{path}: {error.strerror}") from None
        room = int(sum(size / each for size, each in zip(sizes, per_record)) * 1.1)  # every record a cell
        self._cells = _Columns(_CELLS, room, self._spill, narrow=_NARROW_CELLS, fills=_CELL_FILLS)
        self._slots = _Columns(_SLOTS, room, self._spill, narrow=_NARROW_SLOTS, fills=_SLOT_FILLS)
        with collector_paused(), duckdb.connect() as connection:
            connection.execute(f"SET streaming_buffer_size = '{STREAM_AHEAD_MIB}MiB'")
            for path, size, each in zip(files, sizes, per_record):
                self._read_file(connection, path, _Progress(size, each, progress))

    def _batches(self, connection: duckdb.DuckDBPyConnection, path: Path | str) -> Iterator[pa.RecordBatch]:
        """The file's records in order, a batch at a time; _Refused at a line the engine cannot read."""
        import duckdb

        try:
            yield from connection.sql(_QUERY, params={"path": str(path)}).to_arrow_reader(self.batch_rows)
        except (duckdb.Error, OSError) as error:  # past the first batch, Arrow's reader raises it as OSError
            raise _Refused(str(error).splitlines()[0]) from None

    def _read_file(self, connection: duckdb.DuckDBPyConnection, path: Path, meter: _Progress) -> None:
        carry: list[_Rows] = []  # the last session read, which the next batch may go on with
        read = 0
        try:
            for batch in self._batches(connection, path):
                good = _readable_rows(batch)
                self._take(batch.slice(0, good), carry, path)
                self._spill.hand_back()  # the batch's cells are in their files
                read += good
                meter.rows(good)
                if good < batch.num_rows:
                    raise _Refused(f"record {read + 1}")
        except _Refused:
            read += self._read_rest(connection, path, read, carry)
        if carry:
            self._offer(carry[0], 1, path)
        self.stats.lines += read
        meter.done()

    def _read_rest(self, connection: duckdb.DuckDBPyConnection, path: Path, done: int, carry: list[_Rows]) -> int:
        """The file after its first `done` records, line by line: each bad line skipped with its
        number and reason, the others read from a cleaned copy. How many lines were read."""
        lines = 0
        try:
            source = open(path, "rb")
        except OSError as error:
            raise InputError(f"{path}: {error.strerror}") from None
        with source, tempfile.NamedTemporaryFile(suffix=".jsonl") as clean:
            for number, line in enumerate(source, start=1):
                if not line.strip():
                    continue
                if done:
                    done -= 1
                    continue
                lines += 1
                try:
                    record = _RECORD.decode(line)
                except msgspec.DecodeError as error:
                    self.stats.skip(f"{path}:{number}: {_session_of(line)}{error}")
                    continue
                clean.write(msgspec.json.encode(record) + b"\n")
            clean.flush()
            try:
                for batch in self._batches(connection, clean.name):
                    self._take(batch, carry, path)
            except _Refused as error:  # records the record type took and the engine refuses
                raise InputError(f"{path}: {error}") from None
        return lines

    def _take(self, batch: pa.RecordBatch, carry: list[_Rows], path: Path) -> None:
        """Offer the batch's sessions, all but its last, which waits in `carry` for the next batch."""
        if not batch.num_rows:
            return
        rows = self._rows(batch)
        if carry:
            rows = carry.pop().then(rows)
        self._offer(rows, rows.runs - 1, path)
        carry.append(rows.last())

    def _rows(self, batch: pa.RecordBatch) -> _Rows:
        import pyarrow as pa
        import pyarrow.compute as pc

        session = batch.column("session_id")
        n = batch.num_rows
        change = pc.not_equal(session.slice(1), session.slice(0, n - 1)).to_numpy(zero_copy_only=False)
        starts = np.concatenate(([0], np.flatnonzero(change) + 1, [n]))
        first = pa.array(starts[:-1])

        def per_run(name: str) -> list[Any]:
            values: list[Any] = batch.column(name).take(first).to_pylist()
            return values

        return _Rows(
            starts=starts,
            session_ids=per_run("session_id"),
            tenants=per_run("tenant_id"),
            timestamps=per_run("timestamp"),
            traces=per_run("trace_id"),
            configs=per_run("council_config_version"),
            columns={
                "reviewer": _codes(batch.column("reviewer_id"), self._names),
                "model": _codes(batch.column("model_id"), self._names),
                "score": _numbers(batch.column("score_value")),
                "scale": _codes(batch.column("score_scale"), self._scales),
                "position": _numbers(batch.column("position")),
                "version": _codes(batch.column("schema_version"), self._versions),
                "self_review": _flags(batch.column("is_self_review")),
                "words": _numbers(batch.column("response_length_words")),
                "chars": _numbers(batch.column("response_length_chars")),
                "fingerprint": _codes(batch.column("response_fingerprint"), self._fingerprints, empty_is_none=True),
                "correct": _flags(batch.column("response_correct")),
                "similarity": _numbers(batch.column("style_similarity")),
            },
        )

    def _offer(self, rows: _Rows, runs: int, path: Path) -> None:
        """Offer the first `runs` sessions to their tenants' windows, and reduce the ones held."""
        stats = self.stats
        stats.sessions += runs
        first = self._runs.size  # the run the batch's first session held becomes
        taken: list[int] = []  # the rows' runs held, in order, and their times, tenant, config
        times: list[int] = []
        tenants: list[int] = []
        configs: list[int] = []
        gone: list[int] = []  # runs of this batch evicted by later ones
        named: list[tuple[str, str]] = []  # the (tenant, session id) of each run taken
        fresh: set[tuple[str, str]] = set()  # the sessions this batch holds
        keys = np.fromiter(
            (hash((tenant or "default", session)) for tenant, session in zip(rows.tenants, rows.session_ids[:runs])),
            np.int64,
            runs,
        )
        begins, ends = self._held.among(keys)
        for index in range(runs):
            tenant = rows.tenants[index] or "default"
            if self.tenant is not None and tenant != self.tenant:
                continue
            session_id = rows.session_ids[index]
            try:
                ts = timestamp_ms(rows.timestamps[index])
            except ValueError as error:
                stats.skip(f"{path}: session {session_id!r}: {error}")
                stats.skipped_lines += int(rows.starts[index + 1] - rows.starts[index]) - 1
                continue
            window = self._window(tenant)
            name = (tenant, session_id)
            if name in fresh or self._holds(window.code, session_id, begins[index], ends[index]):
                stats.duplicate_sessions += 1  # a redelivered batch appended again
                continue
            if window.newest_ms is None or ts > window.newest_ms:
                window.newest_ms = ts
            run = first + len(taken)
            held, evicted = self._hold(window, (ts, run))
            if evicted >= first:
                gone.append(evicted - first)
                fresh.remove(named[evicted - first])
            if not held:
                continue  # older than every session held
            fresh.add(name)
            named.append(name)
            config = rows.configs[index]
            configs.append(-1 if config is None else self._configs.setdefault(config, len(self._configs)))
            times.append(ts)
            tenants.append(window.code)
            taken.append(index)
        if taken:
            self._add(rows, np.array(taken), {"ts": times, "tenant": tenants, "config": configs}, gone, keys)

    def _holds(self, tenant: int, session_id: str, begin: int, end: int) -> bool:
        """Whether a run of an earlier batch, among those whose key is the session's, holds it."""
        data = self._runs.data
        for run in self._held.runs[begin:end].tolist():
            if data["live"][run] and data["tenant"][run] == tenant and self._session_ids.at(run) == session_id:
                return True
        return False

    def _add(
        self, rows: _Rows, taken: np.ndarray, columns: dict[str, list[int]], gone: list[int], keys: np.ndarray
    ) -> None:
        """The runs held (the rows' runs `taken`) as rows of the run columns, the live ones reduced."""
        held = np.ones(len(taken), dtype=bool)
        held[gone] = False
        count = len(taken)
        taken_list = taken.tolist()
        self._session_ids.append([rows.session_ids[index] for index in taken_list])
        self._traces.append([rows.traces[index] for index in taken_list])
        empty = np.zeros(count, dtype=np.int64)
        at = self._runs.append(
            {name: np.array(values, dtype=_RUNS[name]) for name, values in columns.items()}
            | {"records": (rows.starts[taken + 1] - rows.starts[taken]), "live": held}
            | {"readable": np.ones(count, dtype=bool), "words": np.ones(count, dtype=bool)}
            | {"cells_from": empty, "cells_to": empty, "slots_from": empty, "slots_to": empty}
        )
        live = at + np.flatnonzero(held)
        self._held.add(keys[taken[held]], live)
        if held.any():
            self._reduce(rows, taken[held], live)
        if self._dead > max(self._runs.size - self._dead, self.compact_after):
            self._compact()

    def _hold(self, window: _TenantWindow, entry: tuple[int, int]) -> tuple[bool, int]:
        """Whether the run of `entry` (ts, run) is among its tenant's newest, and the run evicted
        for it (-1: none); a run of an earlier batch is marked no longer live here."""
        if window.keep is None:
            return True, -1
        if len(window.heap) < window.keep:
            heapq.heappush(window.heap, entry)
            return True, -1
        if entry <= window.heap[0]:
            return False, -1
        evicted = heapq.heapreplace(window.heap, entry)[1]
        self._dead += 1
        if evicted < self._runs.size:
            self._runs.data["live"][evicted] = False
        return True, evicted

    def _reduce(self, rows: _Rows, indices: np.ndarray, runs: np.ndarray) -> None:
        """The cells and slots of the rows' runs `indices` (reader runs `runs`), appended."""
        cells = session_cells(rows.records(indices), list(self._scales), list(self._versions))
        count = len(indices)
        cell_counts = np.bincount(cells.session, minlength=count)
        slot_counts = np.bincount(cells.slot_session, minlength=count)
        slot_starts = np.cumsum(slot_counts) - slot_counts
        cell_at = self._cells.append(
            {
                "reviewer": cells.reviewer,
                "model": cells.model,
                "position": cells.position,
                "score": self._scores(cells.fraction),
                "own": cells.own,
                "similarity": cells.similarity,
                "slot": cells.slot - slot_starts[cells.session],
            }
        )
        slot_at = self._slots.append(
            {"length": cells.length, "fingerprint": cells.slot_fingerprint, "correct": cells.slot_correct}
        )
        data = self._runs.data
        data["cells_to"][runs] = np.cumsum(cell_counts) + cell_at
        data["cells_from"][runs] = data["cells_to"][runs] - cell_counts
        data["slots_to"][runs] = np.cumsum(slot_counts) + slot_at
        data["slots_from"][runs] = data["slots_to"][runs] - slot_counts
        data["words"][runs] = cells.words
        for number, why in cells.unreadable:
            data["readable"][runs[number]] = False
            self.stats.skip(f"session {self._session_ids.at(int(runs[number]))!r}: unreadable record ({why})")

    def _scores(self, fraction: np.ndarray) -> np.ndarray:
        """The cells' scores as the cells column holds them: their places in the table of
        fractions while it holds few enough to number, else the fractions themselves (the
        places held so far turned back into theirs)."""
        if self._fractions is None:
            return fraction
        codes = _numbered(fraction, self._fractions)
        if len(self._fractions) <= MOST_SCORES:
            return codes
        table = np.fromiter(self._fractions, np.float64, len(self._fractions))
        self._cells.recast("score", np.float64, lambda held: table[held])
        self._fractions = None
        return fraction

    def _compact(self) -> None:
        """Drop the evicted sessions and their cells: memory follows the sessions held."""
        data = self._runs.data
        kept = np.flatnonzero(data["live"][: self._runs.size])
        for columns, span in ((self._cells, "cells"), (self._slots, "slots")):
            lo, hi = data[f"{span}_from"][kept], data[f"{span}_to"][kept]
            begins = columns.keep_only(lo, hi)  # runs are in the order of their cells
            data[f"{span}_from"][kept] = begins
            data[f"{span}_to"][kept] = begins + (hi - lo)
        renumber = np.full(self._runs.size, -1, dtype=np.int64)
        renumber[kept] = np.arange(len(kept))
        self._runs.keep_rows(kept)
        self._session_ids.keep(kept)
        self._traces.keep(kept)
        self._held.renumber(renumber)
        for window in self._tenants.values():
            window.heap = [(ts, int(renumber[run])) for ts, run in window.heap]  # runs keep their order
        self._dead = 0

    def windows(self) -> list[TenantWindows]:
        """Per tenant, oldest first: the window (newest N sessions within D days of the newest)
        and the N sessions before it. Once: the windows are made of the reader's columns."""
        size = self._runs.size
        runs = {name: column[:size] for name, column in self._runs.data.items()}
        out = []
        tenants = sorted(self._tenants)
        for tenant in tenants:
            window = self._tenants[tenant]
            mine = np.flatnonzero((runs["tenant"] == window.code) & runs["live"])
            mine = mine[np.argsort(runs["ts"][mine], kind="stable")]  # oldest first, then read order
            first_previous, first_current = window_bounds(
                runs["ts"][mine].tolist(), window.newest_ms, self.sessions, self.days
            )
            readable = runs["readable"]
            chosen = mine[first_previous:][readable[mine[first_previous:]]]
            # a session dropped as unreadable shifts the split: count the previous ones kept
            before = int(readable[mine[first_previous:first_current]].sum())
            self.stats.records += int(runs["records"][chosen].sum())
            cells = self._window_cells(tenant, chosen, runs, last=tenant == tenants[-1])
            out.append(TenantWindows(tenant, cells, before))
        return out

    def _window_cells(self, tenant: str, chosen: np.ndarray, runs: dict[str, np.ndarray], *, last: bool) -> WindowCells:
        """The chosen runs' cells as a window's columns, names numbered in the order they first appear."""
        cells = self._cells.take(runs["cells_from"][chosen], runs["cells_to"][chosen], last=last)
        slots = self._slots.take(runs["slots_from"][chosen], runs["slots_to"][chosen], last=last)
        cell_counts = runs["cells_to"][chosen] - runs["cells_from"][chosen]
        slot_counts = runs["slots_to"][chosen] - runs["slots_from"][chosen]
        spill = self._spill  # the window's cell columns live in files, as the reader's do
        session = repeated_sessions(cell_counts, spill)
        slot_starts = (np.cumsum(slot_counts) - slot_counts).astype(index_type(int(slot_counts.sum())))
        within = cells.pop("slot")  # each cell's slot within its session
        names = list(self._names)
        reviewer, reviewers = _first_seen(cells.pop("reviewer"), spill)
        model, models = _first_seen(cells.pop("model"), spill)
        by_slot, fingerprints = _first_seen_known(slots["fingerprint"])
        every_fingerprint = list(self._fingerprints) if len(fingerprints) else []
        config, configs = _first_seen_known(runs["config"][chosen])
        every_config = list(self._configs)
        unit, units = _first_seen(runs["words"][chosen].astype(np.int32))
        changed = np.flatnonzero((config[1:] >= 0) & (config[:-1] >= 0) & (config[1:] != config[:-1])) + 1
        stored = cells.pop("score")  # places in the table of fractions, or the fractions themselves
        if self._fractions is None:
            score_values, score_code = number_scores(np.multiply(stored, REFERENCE_SPAN))
        else:
            points = np.fromiter(self._fractions, np.float64, len(self._fractions)) * REFERENCE_SPAN
            score_values, score_code = _window_scores(stored, points, spill)
        del stored
        n = len(session)
        similarity = cells.pop("similarity")
        # a column no record carries (llm-council-core's records carry none of these three) is one
        # value seen through a zero stride: a window's cells long, in no memory
        # (one held for the records of another tenant, or of sessions evicted, may be all NaN here)
        if similarity.strides != (0,) and np.isnan(similarity).all():
            similarity = _unknown(len(similarity), np.nan, np.float64)
        correct = slots["correct"]
        known_correct = not (correct < 0).all()
        # each cell's slot, a window's cells long: made only for a column that records carry
        slot = slot_starts[session] + within if known_correct or len(fingerprints) else None
        correct = correct[slot] if slot is not None and known_correct else _unknown(n, -1, np.int8)
        fingerprint = by_slot[slot] if slot is not None and len(fingerprints) else _unknown(n, -1, np.int32)
        del slot
        response_length = response_lengths(
            len(chosen), len(models), session, model, slots["length"], (slot_starts, within), space=spill
        )
        spill.hand_back()
        return WindowCells(
            session_ids=_Texts(self._session_ids.take(chosen)),
            ts_ms=_held(spill, runs["ts"][chosen]),  # a session each: in the files too
            config=_held(spill, config.astype(np.int64)),
            configs=[every_config[code] for code in configs.tolist()],
            unit=_held(spill, unit.astype(np.int64)),
            units=["words" if words else "chars" for words in units.tolist()],
            change_traces={number: self._traces.at(int(chosen[number])) for number in changed.tolist()},
            tenant_id=tenant,
            reviewers=[names[code] for code in reviewers.tolist()],
            models=[names[code] for code in models.tolist()],
            session=session,
            reviewer=reviewer,
            model=model,
            position=narrow_positions(cells.pop("position")),
            score_values=score_values,
            score_code=score_code,
            own=cells.pop("own"),
            response_length=response_length,
            similarity=similarity,
            fingerprint=fingerprint,
            correct=correct,
            fingerprints=[every_fingerprint[code] for code in fingerprints.tolist()],
            space=spill,
        )


class _Refused(Exception):
    """The engine cannot read a line, or the record type refuses a record: the message says which."""


def _session_of(line: bytes) -> str:
    """'session 'id': ' when the line names its session, else ''."""
    try:
        return f"session {_HEAD.decode(line).session_id!r}: "
    except msgspec.DecodeError:
        return ""


def _unknown(size: int, value: float, kind: Any) -> np.ndarray:
    """`size` copies of `value`, read-only, in the memory of one."""
    return np.broadcast_to(np.array(value, dtype=kind), (size,))


def _only(part: np.ndarray, fill: float) -> bool:
    """Whether every value of the part is the fill (NaN matching NaN)."""
    if isinstance(fill, float) and np.isnan(fill):
        return bool(np.isnan(part).all())
    return bool((part == fill).all())


def _wide_enough(column: np.ndarray, part: np.ndarray, at: int, empty: Callable[[int, Any], np.ndarray]) -> np.ndarray:
    """The integer column, or a wider copy of its first `at` rows in room as long (that `empty`
    makes), so that the part's values fit: 8, 16, 32 or 64 bits."""
    low, high = int(part.min()), int(part.max())
    kind = column.dtype.type
    for wider in (np.int8, np.int16, np.int32, np.int64):
        info = np.iinfo(wider)
        if np.iinfo(kind).bits <= info.bits and info.min <= low and high <= info.max:
            kind = wider
            break
    if kind == column.dtype.type:
        return column
    widened = empty(len(column), kind)
    widened[:at] = column[:at]
    return widened


def _numbered(values: np.ndarray, table: dict[float, int]) -> np.ndarray:
    """Numbers as indices into `table` (which grows): one lookup per distinct value."""
    distinct, inverse = np.unique(values, return_inverse=True)
    mapping = np.array([table.setdefault(value, len(table)) for value in distinct.tolist()], dtype=np.int64)
    codes: np.ndarray = mapping[inverse]
    return codes


def _window_scores(
    codes: np.ndarray, points: np.ndarray, spill: Spill | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """The window's (score_values, score_code), as number_scores makes them, from each cell's
    index into `points` (the reader's table): the table's scores the window uses are numbered,
    not its cells' scores; the cells' column in `spill`'s files when given."""
    used = np.zeros(len(points), dtype=bool)
    for start in range(0, len(codes), SUM_BLOCK):
        used |= np.bincount(codes[start : start + SUM_BLOCK], minlength=len(points)) > 0
        if spill is not None:
            spill.hand_back()
    distinct, place = number_scores(points[used])
    if place is None:
        return _looked_up(points, codes, spill), None  # too many to number: each cell's score
    renumber = np.zeros(len(points), dtype=place.dtype)
    renumber[used] = place
    return distinct, _looked_up(renumber, codes, spill)


def _looked_up(table: np.ndarray, codes: np.ndarray, spill: Spill | None) -> np.ndarray:
    """table[codes], a block at a time (no temporary as long): in `spill`'s files, handed back
    a block at a time, when given."""
    out = (np.empty if spill is None else spill.zeros)(len(codes), table.dtype)
    for start in range(0, len(codes), SUM_BLOCK):
        out[start : start + SUM_BLOCK] = table[codes[start : start + SUM_BLOCK]]
        if spill is not None:
            spill.hand_back()
    return out


def _first_seen_known(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """_first_seen of the codes that are not -1 (unknown), which stay -1."""
    known = codes >= 0
    out = np.full(len(codes), -1, dtype=np.int32)
    out[known], order = _first_seen(codes[known])
    return out, order


def _first_seen(codes: np.ndarray, spill: Spill | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(each code renumbered in the order the codes first appear, in the narrowest integer type
    that holds them: a byte a cell for a council's names, in `spill`'s files when given; the codes
    in that order). Each code's first place by unbuffered minimums a block at a time, not a sort of
    the window's cells."""
    size = int(codes.max()) + 1 if len(codes) else 0
    first = np.full(size, len(codes), dtype=np.int64)
    for start in range(0, len(codes), SUM_BLOCK):
        part = codes[start : start + SUM_BLOCK]
        np.minimum.at(first, part, np.arange(start, start + len(part)))
        if spill is not None:
            spill.hand_back()
    present = np.flatnonzero(first < len(codes))
    ordered = present[np.argsort(first[present])]
    kind = index_type(len(ordered), np.int8)
    renumber = np.zeros(size, dtype=kind)
    renumber[ordered] = np.arange(len(ordered), dtype=kind)
    return _looked_up(renumber, codes, spill), ordered
