"""Stored records -> scored cells, for a batch of sessions at once, as columns.

The one place the record rules live, run by the report's file reader on a batch of thousands of
sessions and by digest_from_records on one:
- a repeated (reviewer, model) record, left by a redelivered batch, counts once: the first;
- a model's first record gives its length, in words where the session's first record has them,
  else characters (llm-council-core's), and its first known fingerprint and correctness;
- a position is a display position only from schema 1.2.0 on (older records hold the ranking);
- without a stored is_self_review, a reviewer scoring its own id is a self-review;
- a score becomes a fraction of its record's scale; a session with an unreadable scale is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .observations import score_bounds
from .stats import present_levels

# The record schema from which `position` is the display index (llm-council-core #611): older
# records hold the ranking there, which must not be read as position.
DISPLAY_POSITION_SINCE = (1, 2, 0)
DEFAULT_SCALE = "1-10"  # what a record without score_scale was scored on


@lru_cache(maxsize=16)
def position_is_display_order(schema_version: str) -> bool:
    try:
        parts = [int(x) for x in str(schema_version).split(".")[:3]]
    except ValueError:
        return False
    parts += [0] * (3 - len(parts))
    return tuple(parts) >= DISPLAY_POSITION_SINCE


@dataclass(frozen=True)
class RecordColumns:
    """Records in read order, each session's contiguous; text as indices into the caller's tables."""

    starts: np.ndarray  # (sessions + 1,) int: where each session's records begin; the last is n
    reviewer: np.ndarray  # (n,) int: index into names
    model: np.ndarray  # (n,) int: index into names (one table for both: reviewer == model is self)
    score: np.ndarray  # (n,) float: score_value
    scale: np.ndarray  # (n,) int: index into scales; -1 none stored
    position: np.ndarray  # (n,) float: NaN none stored
    version: np.ndarray  # (n,) int: schema_version, index into versions; -1 none stored
    self_review: np.ndarray  # (n,) int8: is_self_review 1 / 0, -1 not stored
    words: np.ndarray  # (n,) float: response_length_words, NaN not stored
    chars: np.ndarray  # (n,) float: response_length_chars, NaN not stored
    fingerprint: np.ndarray  # (n,) int: index into the caller's fingerprints; -1 none (or empty)
    correct: np.ndarray  # (n,) int8: response_correct 1 / 0, -1 unknown
    similarity: np.ndarray  # (n,) float: style_similarity, NaN unknown

    @property
    def sessions(self) -> int:
        return len(self.starts) - 1


@dataclass(frozen=True)
class SessionCells:
    """The readable sessions' cells and their (session, model) slots, sessions in order."""

    unreadable: list[tuple[int, str]]  # (session, why) of the sessions left out
    words: np.ndarray  # (sessions,) bool: lengths in words, else characters
    # per cell, in record order (repeats dropped): session index, names, scored values
    session: np.ndarray
    reviewer: np.ndarray
    model: np.ndarray
    position: np.ndarray  # int: display position, -1 unknown
    fraction: np.ndarray  # float: score as a fraction of the scale
    own: np.ndarray  # bool: self-review
    similarity: np.ndarray  # float: NaN unknown
    slot: np.ndarray  # int: the cell's (session, model) slot
    # per slot: sessions in order, each session's models in the order of their first record
    slot_session: np.ndarray
    slot_model: np.ndarray
    length: np.ndarray  # float: the model's first record's length (0 unknown)
    slot_fingerprint: np.ndarray  # int: the model's first known fingerprint, -1 none
    slot_correct: np.ndarray  # int8: the model's first known correctness, -1 none


def _grouped(*keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows' order by the integer keys (the first most significant, ties in row order) and,
    along it, True where a new combination of the keys begins. The keys are packed into one
    integer where that fits in 62 bits: one stable sort instead of one per key."""
    n = len(keys[0])
    packed, room = np.zeros(n, dtype=np.int64), 1
    for key in keys:
        low = int(key.min()) if n else 0
        span = (int(key.max()) if n else 0) - low + 1
        room *= span
        if room >= 1 << 62:
            order = np.lexsort((np.arange(n), *reversed(keys)))
            change = np.zeros(max(n - 1, 0), dtype=bool)
            for key in keys:
                ordered = key[order]
                change |= ordered[1:] != ordered[:-1]
            return order, np.r_[True, change][:n]
        packed = packed * span + (key - low)
    order = np.argsort(packed, kind="stable")
    ordered = packed[order]
    return order, np.r_[True, ordered[1:] != ordered[:-1]][:n]


def _present(codes: np.ndarray) -> list[int]:
    """The distinct codes, -1 (none stored) among them."""
    distinct, _ = present_levels(codes + 1)
    return [int(code) - 1 for code in distinct]


def _bounds(codes: np.ndarray, scales: Sequence[str]) -> tuple[dict[int, tuple[float, float]], dict[int, str]]:
    """(low, high) of each scale the codes use, and why each unreadable one is."""
    bounds, why = {}, {}
    for code in _present(codes):
        try:
            bounds[code] = score_bounds(DEFAULT_SCALE if code < 0 else scales[code])
        except (TypeError, ValueError) as error:
            why[code] = f"{type(error).__name__}: {error}"
    return bounds, why


def session_cells(records: RecordColumns, scales: Sequence[str], versions: Sequence[str]) -> SessionCells:
    """The cells of every session of `records`: each rule of the module docstring, column-wise."""
    sessions, n = records.sessions, len(records.score)
    counts = np.diff(records.starts)
    session = np.repeat(np.arange(sessions), counts)

    # a scale that cannot be read leaves its session out, named with the reason
    bounds, why = _bounds(records.scale, scales)
    low = np.zeros(n)
    span = np.ones(n)
    unreadable: list[tuple[int, str]] = []
    readable = np.ones(sessions, dtype=bool)
    for code, (lo, hi) in bounds.items():
        used = records.scale == code
        low[used], span[used] = lo, hi - lo
    for code, reason in why.items():
        for index in np.unique(session[records.scale == code]).tolist():
            if readable[index]:
                readable[index] = False
                unreadable.append((index, reason))
    unreadable.sort()

    # the first record of each (session, reviewer, model), of the readable sessions
    order, opens = _grouped(session, records.reviewer, records.model)
    first = np.zeros(n, dtype=bool)
    first[order[opens]] = True  # a mark, not a sort: the kept records stay in record order
    keep = np.flatnonzero(first & readable[session])
    kept_session, model = session[keep], records.model[keep]

    # (session, model) slots, numbered in the order of their first cell
    by_slot, opens = _grouped(kept_session, model)
    group_first = by_slot[opens]  # each group's first cell: the sort keeps cell order within a group
    opening = np.zeros(len(keep), dtype=bool)
    opening[group_first] = True
    first_cell = np.flatnonzero(opening)  # slot -> its first cell
    slot = np.empty(len(keep), dtype=np.int64)
    slot[by_slot] = (np.cumsum(opening) - 1)[group_first][np.cumsum(opens) - 1]

    # the unit: words where the session's first record has them; a model's length: its first record's
    words = ~np.isnan(records.words[records.starts[:-1]])
    first_record = keep[first_cell]
    length = np.where(words[session[first_record]], records.words[first_record], records.chars[first_record])
    length = np.where(np.isnan(length), 0.0, length)

    def first_known(values: np.ndarray) -> np.ndarray:
        """Per slot, the value of its earliest cell that knows one; -1 where none does."""
        out = np.full(len(first_cell), -1, dtype=values.dtype)
        cells = np.flatnonzero(values[keep] >= 0)
        found, first = np.unique(slot[cells], return_index=True)
        out[found] = values[keep[cells[first]]]
        return out

    version = records.version[keep]
    display = np.zeros(len(versions) + 1, dtype=bool)  # the last entry: none stored ("", not display)
    for code in _present(version):
        display[code] = code >= 0 and position_is_display_order(versions[code])
    position = records.position[keep]
    known = ~np.isnan(position) & display[version]
    flag = records.self_review[keep]
    reviewer = records.reviewer[keep]
    return SessionCells(
        unreadable=unreadable,
        words=words,
        session=kept_session,
        reviewer=reviewer,
        model=model,
        position=np.where(known, np.nan_to_num(position), -1).astype(np.int64),
        fraction=(records.score[keep] - low[keep]) / span[keep],
        own=np.where(flag >= 0, flag == 1, reviewer == model),
        similarity=records.similarity[keep],
        slot=slot,
        slot_session=kept_session[first_cell],
        slot_model=model[first_cell],
        length=length,
        slot_fingerprint=first_known(records.fingerprint),
        slot_correct=first_known(records.correct),
    )
