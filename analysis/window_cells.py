"""A window of session digests as columns of cells, plus the per-session quantities every
cross-session metric starts from (median-referenced reviewer offsets, length points).

Scores are in points of a 1-10 scale (fraction of the session's scale x 9), so sessions on
different scales pool.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from typing import Any

import numpy as np

from .column_space import IN_MEMORY, ColumnSpace
from .digest import SessionDigest
from .parallel import PIECE_CELLS, each_piece
from .reviewer_offset import offsets_from_effects, reviewer_effects
from .session_noise import REFERENCE_SPAN
from .stats import index_type, present_levels, sorted_span

SUM_BLOCK = 1 << 20  # cells a blockwise sum reads at a time
SessionBlock = tuple[slice, int, int]  # (a range of cells, its first session, its last session + 1)
PeerWeights = Callable[[slice, np.ndarray], np.ndarray]  # (a block's cells, its peer mask) -> weights
# some of a window's cells: indices, a mask or a range (named here: in the class, `slice` is its method)
CellRows = np.ndarray | slice
CellRange = slice


@dataclass(frozen=True)
class WindowCells:
    # per session, oldest first (no per-session object: a year of sessions stays columns)
    session_ids: Sequence[str]
    ts_ms: np.ndarray  # (sessions,) int: the session's time, ms since the epoch
    config: np.ndarray  # (sessions,) int: council_config_version, index into configs; -1 unknown
    configs: list[str]
    unit: np.ndarray  # (sessions,) int: the length unit, index into units
    units: list[str]
    change_traces: dict[int, str | None]  # session -> its trace id, where the config differs from the one before
    tenant_id: str
    # per cell
    reviewers: list[str]
    models: list[str]
    session: np.ndarray  # (n,) int: index of the session, 32 bits while the sessions fit
    # the next three in the narrowest integer type that holds them (a byte, for a council): keys
    # made of them widen first
    reviewer: np.ndarray  # (n,) int: index into reviewers
    model: np.ndarray  # (n,) int: index into models
    position: np.ndarray  # (n,) int: display position, -1 unknown
    # scores in points of a 1-10 span (0..9), read through `scores`: a council scores on a small
    # scale, so each cell holds its score's place among the window's distinct scores (a byte);
    # with too many distinct scores to number, score_values holds each cell's and score_code is None
    score_values: np.ndarray
    score_code: np.ndarray | None
    own: np.ndarray  # (n,) bool: self-review
    # per response: (sessions * models,) float, `group`'s numbering (session x model): the
    # response's length, 0 where the session has none; its cells read it through `length_of`
    response_length: np.ndarray
    similarity: np.ndarray  # (n,) float: to the reviewer's own answer, NaN unknown
    fingerprint: np.ndarray  # (n,) int: the scored answer's content, index into fingerprints; -1 unknown
    correct: np.ndarray  # (n,) int8: the scored answer is correct 1, wrong 0, unknown -1
    fingerprints: list[str]
    # where the columns and the quantities kept a window's responses long live: the report
    # reader's files, whose pages are handed back between blocks and sections, or memory
    space: ColumnSpace = IN_MEMORY

    def hand_back(self) -> None:
        """The pages of the columns read so far handed back (their data stays): between blocks."""
        self.space.hand_back()

    @property
    def sessions(self) -> int:
        return len(self.session_ids)

    @property
    def length_units(self) -> set[str]:
        """The length units the sessions use."""
        return {self.units[i] for i in np.unique(self.unit).tolist()}

    def config_version(self, session: int) -> str | None:
        index = int(self.config[session])
        return None if index < 0 else self.configs[index]

    @property
    def peer(self) -> np.ndarray:
        return ~self.own

    def scores(self, rows: CellRows | None = None) -> np.ndarray:
        """The scores of `rows` (indices, a mask or a slice; every cell's by default)."""
        if self.score_code is None:
            return self.score_values if rows is None else self.score_values[rows]
        chosen: np.ndarray = self.score_values[self.score_code if rows is None else self.score_code[rows]]
        return chosen

    def length_of(self, rows: CellRows) -> np.ndarray:
        """The scored response's length of each cell of `rows` (indices, a mask or a slice): a
        response's cells share its length, so the window keeps one a response, not one a cell."""
        length: np.ndarray = self.response_length[self.group(rows)]
        return length

    def slice(self, start: int, stop: int) -> WindowCells:
        """The sessions start..stop-1 (names keep their indices; some may have no cells)."""
        start, stop, _ = slice(start, stop).indices(self.sessions)
        return self._cells((self.session >= start) & (self.session < stop), start, max(start, stop))

    def peer_scores_without(self, index: int) -> WindowCells:
        """The window with the scores reviewer `index` gave counted out of the peer scores, as if
        each were a self-review: what a section that reads peer scores alone (the length tests)
        finds without that reviewer, for one boolean column instead of a copy of the window. Not
        for a section that reads self-reviews."""
        own = self.space.zeros(len(self.own), np.bool_)
        for part in self.cell_blocks():
            np.logical_or(self.own[part], self.reviewer[part] == index, out=own[part])
        return dataclasses.replace(self, own=own)

    def _cells(self, keep: np.ndarray, start: int, stop: int) -> WindowCells:
        """The cells `keep` selects, over the sessions start..stop-1."""
        size = int(np.count_nonzero(keep))

        def kept(column: np.ndarray) -> np.ndarray:
            # a column no record carries is one value through a zero stride: it stays so, not a
            # window's cells long copy of that value
            if column.strides == (0,) and len(column):
                one: np.ndarray = np.broadcast_to(column[:1], (size,))
                return one
            cut: np.ndarray = column[keep]
            return cut

        return WindowCells(
            session_ids=self.session_ids[start:stop],
            ts_ms=self.ts_ms[start:stop],
            config=self.config[start:stop],
            configs=self.configs,
            unit=self.unit[start:stop],
            units=self.units,
            change_traces={at - start: trace for at, trace in self.change_traces.items() if start < at < stop},
            tenant_id=self.tenant_id,
            reviewers=self.reviewers,
            models=self.models,
            session=self.session[keep] - start,
            reviewer=self.reviewer[keep],
            model=self.model[keep],
            position=self.position[keep],
            score_values=self.score_values if self.score_code is not None else self.score_values[keep],
            score_code=None if self.score_code is None else self.score_code[keep],
            own=self.own[keep],
            response_length=self.response_length[start * len(self.models) : stop * len(self.models)],
            similarity=kept(self.similarity),
            fingerprint=kept(self.fingerprint),
            correct=kept(self.correct),
            fingerprints=self.fingerprints,
            space=self.space,
        )

    def session_blocks(self, cells: int = SUM_BLOCK) -> Iterator[SessionBlock]:
        """(a range of cells, its first session, its last session + 1): runs of whole sessions of
        about `cells` cells each, for sums over sessions whose temporaries should stay a block
        long. One range when the cells are not in session order."""
        n = len(self.session)
        if n <= cells or not self.in_session_order:
            yield slice(0, n), 0, self.sessions
            return
        start = 0
        while start < n:
            stop = n if start + cells >= n else int(np.searchsorted(self.session, self.session[start + cells]))
            if stop <= start:  # one session longer than a block: the block is that session
                stop = int(np.searchsorted(self.session, self.session[start], side="right"))
            first = int(self.session[start])
            yield slice(start, stop), first, (self.sessions if stop == n else int(self.session[stop]))
            self.hand_back()  # the block's pages: the next block's take their place
            start = stop

    def cell_blocks(self, cells: int = SUM_BLOCK) -> Iterator[CellRange]:
        """Ranges of about `cells` cells (a session may be cut), for a pass that reads each cell
        alone; the pages read are handed back after each."""
        for start in range(0, len(self.session), cells):
            yield slice(start, start + cells)
            self.hand_back()

    @cached_property
    def in_session_order(self) -> bool:
        """Whether the cells come session by session (as windows are built), which blockwise
        sums and the per-session fits' bisection rely on."""
        session = self.session
        for part in self.cell_blocks():
            later = session[part.start + 1 : part.stop + 1]  # each cell's next, across the block's end
            if np.any(later < session[part.start : part.start + len(later)]):
                return False
        return True

    def level_counts(self, column: np.ndarray, size: int) -> np.ndarray:
        """How often each of 0..size-1 occurs in a column of the cells (non-negative integers
        below `size`), a block at a time: no 64-bit copy."""
        counts = np.zeros(size, dtype=np.int64)
        for part in self.cell_blocks():
            counts += np.bincount(column[part], minlength=size)
        return counts

    @cached_property
    def active_reviewers(self) -> list[str]:
        present = self.level_counts(self.reviewer, len(self.reviewers)) > 0
        return [name for name, here in zip(self.reviewers, present) if here]

    @cached_property
    def active_models(self) -> list[str]:
        present = self.level_counts(self.model, len(self.models)) > 0
        return [name for name, here in zip(self.models, present) if here]

    def group(self, rows: CellRows | None = None) -> np.ndarray:
        """(session, model) group of each cell of `rows` (indices, a mask or a slice; all cells by
        default): 32-bit while the keys fit. Made when asked, a block at a time where a section
        walks blocks, not kept a window's cells long."""
        keys = index_type(self.sessions * max(len(self.models), 1))
        session, model = (self.session, self.model) if rows is None else (self.session[rows], self.model[rows])
        group: np.ndarray = session.astype(keys)
        group *= len(self.models)
        group += model
        return group

    def reviewer_key(self, rows: np.ndarray | None = None) -> np.ndarray:
        """(session, reviewer) key of each cell of `rows` (indices; all cells by default), as
        `group` is the (session, model) one: made when asked, as few sections read it."""
        keys = index_type(self.sessions * max(len(self.reviewers), 1))
        session, reviewer = (self.session, self.reviewer) if rows is None else (self.session[rows], self.reviewer[rows])
        key: np.ndarray = session.astype(keys)
        key *= len(self.reviewers)
        key += reviewer
        return key

    @cached_property
    def peer_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """(count, sum) of the peer scores of each (session, model) group (`group`'s numbering); the
        count in the narrowest integer that holds the most cells a session has."""
        count, total = self._sums_by_response(None, lambda rows, peer: self.scores(rows)[peer])
        return count, total

    def peer_square_sums(self, block: int = SUM_BLOCK) -> np.ndarray:
        """The sum of the squared peer scores of each (session, model) group: one section reads
        it, so it is not kept."""
        [squares] = self._sums_by_response(lambda rows, peer: np.square(self.scores(rows)[peer]), block=block)
        return squares

    def _sums_by_response(self, *weights: PeerWeights | None, block: int = PIECE_CELLS) -> list[np.ndarray]:
        """Per (session, model) group, for each of `weights`, the sum of `weights(rows, peer)` over
        its peer cells (their count, as integers, with None), a block of whole sessions at a time:
        a group's cells are in one block, so each sum is the same floats as one pass, and the
        temporaries stay a block long. One walk over the blocks for all of them."""
        n_models = len(self.models)
        counted: type[np.number] = np.float64
        if None in weights:  # a count is at most the cells of its session
            counted = index_type(int(self.level_counts(self.session, self.sessions).max(initial=0)), np.int8)
        out = [
            self.space.zeros(self.sessions * n_models, counted if weight is None else np.float64) for weight in weights
        ]

        def add(part: SessionBlock) -> None:
            rows, first, stop = part
            span, low = (stop - first) * n_models, first * n_models
            peer = ~self.own[rows]
            keys = self.group(rows)[peer] - low
            for sums, weight in zip(out, weights):
                sums[low : low + span] = np.bincount(
                    keys, weights=None if weight is None else weight(rows, peer), minlength=span
                )
            self.hand_back()

        each_piece(add, list(self.session_blocks(block)))  # each block writes its own sessions' sums
        return out

    def loo_difference(self, asked: np.ndarray) -> np.ndarray:
        """Each cell of `asked` (indices), if a peer score: its score minus the mean of the other
        peers' scores of the same response (NaN for self-reviews and responses with one peer
        score). Made for the cells asked, one reviewer's at a time, not a window's cells long; its
        temporaries, a block long."""
        count, total = self.peer_sums
        out = np.empty(len(asked))
        for start in range(0, len(asked), SUM_BLOCK):
            part = slice(start, start + SUM_BLOCK)
            rows = asked[part]
            g, score = self.group(rows), self.scores(rows)
            others = count[g] - 1.0
            with np.errstate(invalid="ignore", divide="ignore"):
                diff = score - (total[g] - score) / others
            out[part] = np.where(~self.own[rows] & (others >= 1.0), diff, np.nan)
        return out

    def per_session_reviewer_mean(self, values: np.ndarray) -> np.ndarray:
        """(sessions, reviewers) mean of the defined values of each reviewer in each session, a
        block of whole sessions at a time (the same sums)."""
        n_reviewers = len(self.reviewers)
        total, count = np.zeros(self.sessions * n_reviewers), np.zeros(self.sessions * n_reviewers, dtype=np.int64)
        for rows, first, stop in self.session_blocks():
            span = (stop - first) * n_reviewers
            here = values[rows]
            defined = ~np.isnan(here)
            key = (self.session[rows][defined].astype(np.int64) - first) * n_reviewers + self.reviewer[rows][defined]
            at = slice(first * n_reviewers, first * n_reviewers + span)
            total[at] += np.bincount(key, weights=here[defined], minlength=span)
            count[at] += np.bincount(key, minlength=span)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = total / count
        return np.where(count > 0, mean, np.nan).reshape(self.sessions, n_reviewers)

    def let_go(self, *quantities: str) -> None:
        """Drop kept quantities (peer sums, session offsets, length points, ...: a window's
        responses long each) once the sections that read them are done; asked again, they are
        made again."""
        for name in quantities:
            if not isinstance(getattr(type(self), name, None), cached_property):
                raise ValueError(f"{name} is not a quantity the window keeps")
            vars(self).pop(name, None)

    @cached_property
    def session_offsets(self) -> np.ndarray:
        """(sessions, reviewers) offset of each reviewer in each session against the median of
        the other reviewers, as the per-session audit computes it (analysis.reviewer_offset)."""
        return offsets_from_effects(_session_effects(self), self.hand_back)

    @cached_property
    def length_points(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(session, length, offset-adjusted mean peer score) per scored response: the
        reviewer's offset in that session is removed first (undefined offsets count as 0).
        The adjusted scores are summed as the peer sums are, a block of whole sessions at a time."""
        offsets = self.session_offsets

        def adjusted(rows: slice, peer: np.ndarray) -> np.ndarray:
            offset: np.ndarray = np.nan_to_num(offsets[self.session[rows], self.reviewer[rows]], nan=0.0)
            np.subtract(self.scores(rows), offset, out=offset)
            chosen: np.ndarray = offset[peer]
            return chosen

        count, _ = self.peer_sums
        session, length = self.response_lengths
        [total] = self._sums_by_response(adjusted)
        scored = _scored(count)
        mean: np.ndarray = total[scored]  # every response scored: total itself, divided in place
        mean /= count[scored]
        return session, length, mean

    @cached_property
    def response_lengths(self) -> tuple[np.ndarray, np.ndarray]:
        """(session, length) per scored response (one with a peer score): the length points'
        first two columns (the same arrays), without the per-session fits their third needs."""
        count, _ = self.peer_sums
        scored = _scored(count)
        if isinstance(scored, slice):
            session = self._response_sessions()
            length = self.response_length.view()  # the window's column itself: not to be written
            length.flags.writeable = False
            return session, length
        session = (scored // len(self.models)).astype(index_type(self.sessions))
        return session, self.response_length[scored]

    def _response_sessions(self) -> np.ndarray:
        """Each response's session (`group`'s numbering), in the window's space."""
        return repeated_sessions(np.broadcast_to(len(self.models), (self.sessions,)), self.space)

    @cached_property
    def session_mean_score(self) -> np.ndarray:
        """(sessions,) mean peer score, points above the bottom of the scale."""
        return self.session_means()

    def session_means(self, block: int = SUM_BLOCK) -> np.ndarray:
        """session_mean_score, summed a block of whole sessions at a time (the same sums), its
        temporaries a block long."""
        total, count = np.zeros(self.sessions), np.zeros(self.sessions, dtype=np.int64)
        for rows, first, stop in self.session_blocks(block):
            peer = ~self.own[rows]
            session = self.session[rows][peer] - first
            total[first:stop] = np.bincount(session, weights=self.scores(rows)[peer], minlength=stop - first)
            count[first:stop] = np.bincount(session, minlength=stop - first)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, total / count, np.nan)


SESSIONS_AT_ONCE = 1 << 16  # sessions whose rows repeated_sessions makes at a time


def repeated_sessions(
    counts: np.ndarray, space: ColumnSpace = IN_MEMORY, at_once: int = SESSIONS_AT_ONCE
) -> np.ndarray:
    """Each row's session (its index), session i having counts[i] rows, in `space`, made
    `at_once` sessions at a time and their pages handed back after each."""
    kind = index_type(len(counts))
    out = space.zeros(int(counts.sum()), kind)
    at = 0
    for first in range(0, len(counts), at_once):
        here = counts[first : first + at_once]
        rows = int(here.sum())
        out[at : at + rows] = np.repeat(np.arange(first, first + len(here), dtype=kind), here)
        at += rows
        space.hand_back()
    return out


def window_cells(digests: Sequence[SessionDigest]) -> WindowCells:
    """Columns of every cell of the window's digests (oldest first)."""
    builder = WindowCellsBuilder(len(digests), sum(len(d.cell_reviewer) for d in digests))
    builder.add(digests)
    return builder.build()


_SESSION_COLUMNS = {"ts_ms": np.int64, "config": np.int64, "unit": np.int64}
_CELL_COLUMNS = {
    "session": np.int64, "reviewer": np.int32, "model": np.int32, "position": np.int32, "score": np.float64,
    "own": np.bool_, "length": np.float64, "similarity": np.float64, "fingerprint": np.int32, "correct": np.int8,
}  # fmt: skip


class WindowCellsBuilder:
    """A window's columns built from its digests a batch at a time (oldest first), so no more than
    a batch of digests is held: names are mapped to window-wide indices once per session, and each
    cell column is read in one C-level pass (no per-cell Python).

    The columns are allocated once, at the sizes the caller expects (`sessions`, `cells`: upper
    bounds, as a file's lines bound its records' cells), and each batch is copied into them: a
    batch's parts would otherwise be freed in the middle of the allocator's heap once joined,
    and the process would keep that memory, as much again as the window."""

    def __init__(self, sessions: int, cells: int) -> None:
        self.columns = {name: np.empty(sessions, dtype) for name, dtype in _SESSION_COLUMNS.items()}
        self.columns |= {name: np.empty(cells, dtype) for name, dtype in _CELL_COLUMNS.items()}
        self.cells = 0
        self.reviewer_index: dict[str, int] = {}
        self.model_index: dict[str, int] = {}
        self.fingerprint_index: dict[str, int] = {}
        self.config_index: dict[str, int] = {}
        self.unit_index: dict[str, int] = {}
        self.session_ids: list[str] = []
        self.change_traces: dict[int, str | None] = {}
        self.tenant_id: str | None = None
        self.last_config: str | None = None

    def add(self, digests: Sequence[SessionDigest]) -> None:
        first = len(self.session_ids)
        reviewer_map: list[int] = []  # per session, its reviewers' window indices, concatenated
        model_map: list[int] = []
        lengths: list[float] = []
        counts: list[int] = []
        content: list[int] = []  # per session and model: the answer's fingerprint index, -1 unknown
        correct: list[int] = []  # per session and model: 1, 0, -1 unknown
        similarity: list[float] = []
        configs: list[int] = []
        units: list[int] = []
        for number, digest in enumerate(digests, start=first):
            if self.tenant_id is None:
                self.tenant_id = digest.tenant_id
            self.session_ids.append(digest.session_id)
            version = digest.config_version
            if number and version is not None and self.last_config is not None and version != self.last_config:
                self.change_traces[number] = digest.trace_id
            self.last_config = version
            configs.append(-1 if version is None else self.config_index.setdefault(version, len(self.config_index)))
            units.append(self.unit_index.setdefault(digest.length_unit, len(self.unit_index)))
            models = len(digest.models)
            content.extend(
                [
                    -1 if f is None else self.fingerprint_index.setdefault(f, len(self.fingerprint_index))
                    for f in digest.fingerprints
                ]
                if digest.fingerprints
                else [-1] * models
            )
            correct.extend([-1 if c is None else int(c) for c in digest.correct] if digest.correct else [-1] * models)
            similarity.extend(
                [np.nan if v is None else v for v in digest.cell_similarity]
                if digest.cell_similarity
                else [np.nan] * len(digest.cell_reviewer)
            )
            reviewer_map.extend(
                self.reviewer_index.setdefault(name, len(self.reviewer_index)) for name in digest.reviewers
            )
            model_map.extend(self.model_index.setdefault(name, len(self.model_index)) for name in digest.models)
            lengths.extend(digest.lengths)
            counts.append(len(digest.cell_reviewer))
        total = sum(counts)

        def column(name: str, dtype: type) -> np.ndarray:
            return np.fromiter(chain.from_iterable(getattr(d, name) for d in digests), dtype, count=total)

        session = np.repeat(np.arange(len(digests)), counts)
        reviewer_start = np.cumsum([0, *(len(d.reviewers) for d in digests)])[:-1]
        model_start = np.cumsum([0, *(len(d.models) for d in digests)])[:-1]
        local_reviewer = column("cell_reviewer", np.int64)
        local_model = column("cell_model", np.int64)
        model_slot = model_start[session] + local_model
        parts = {
            "ts_ms": np.fromiter((d.ts_ms for d in digests), np.int64, count=len(digests)),
            "config": np.asarray(configs, dtype=np.int64),
            "unit": np.asarray(units, dtype=np.int64),
            "session": session + first,
            "reviewer": np.asarray(reviewer_map, dtype=np.int64)[reviewer_start[session] + local_reviewer],
            "model": np.asarray(model_map, dtype=np.int64)[model_slot],
            "position": column("cell_position", np.int64),
            "score": column("cell_score", np.float64) * REFERENCE_SPAN,
            "own": column("cell_own", np.bool_),
            "length": np.asarray(lengths, dtype=np.float64)[model_slot],
            "similarity": np.asarray(similarity, dtype=np.float64),
            "fingerprint": np.asarray(content, dtype=np.int64)[model_slot],
            "correct": np.asarray(correct, dtype=np.int8)[model_slot],
        }
        for name, part in parts.items():
            self._put(name, first if name in _SESSION_COLUMNS else self.cells, part)
        self.cells += total

    def _put(self, name: str, at: int, part: np.ndarray) -> None:
        column = self.columns[name]
        if at + len(part) > len(column):  # more than the caller expected: grow, as a list would
            grown = np.empty(max(at + len(part), 2 * len(column)), column.dtype)
            grown[:at] = column[:at]
            column = self.columns[name] = grown
        column[at : at + len(part)] = part

    def build(self) -> WindowCells:
        sessions = len(self.session_ids)
        columns: dict[str, Any] = {
            name: column[: sessions if name in _SESSION_COLUMNS else self.cells]
            for name, column in self.columns.items()
        }
        session, models = columns["session"], len(self.model_index)
        response_length = response_lengths(sessions, models, session, columns["model"], columns.pop("length"))
        columns["session"] = session.astype(index_type(sessions))
        # names and positions in the narrowest type that holds them: a byte a cell for a council
        for name, levels in (("reviewer", len(self.reviewer_index)), ("model", models)):
            columns[name] = columns[name].astype(index_type(levels, np.int8))
        columns["position"] = narrow_positions(columns["position"])
        score_values, score_code = number_scores(columns.pop("score"))
        return WindowCells(
            session_ids=self.session_ids,
            configs=list(self.config_index),
            units=list(self.unit_index),
            change_traces=self.change_traces,
            tenant_id=self.tenant_id or "default",
            reviewers=list(self.reviewer_index),
            models=list(self.model_index),
            fingerprints=list(self.fingerprint_index),
            response_length=response_length,
            score_values=score_values,
            score_code=score_code,
            **columns,
        )


def response_lengths(
    sessions: int,
    models: int,
    session: np.ndarray,
    model: np.ndarray,
    length: np.ndarray,
    slots: tuple[np.ndarray, np.ndarray] | None = None,
    block: int = SUM_BLOCK,
    space: ColumnSpace = IN_MEMORY,
) -> np.ndarray:
    """Each (session, model) response's length in WindowCells' numbering (`response_length`), from
    its cells: `length` a cell's, or with `slots` a slot's (a session's slot is one model's answer),
    `slots` being each session's first slot and each cell's slot within its session; a block of
    cells at a time, so the keys and the cells' slots stay a block long; the lengths in `space`,
    its pages handed back after each block."""
    out = space.zeros(sessions * models, np.float64)
    for start in range(0, len(session), block):
        part = slice(start, start + block)
        if slots is None:
            here = length[part]
        else:
            first, within = slots
            slot = first[session[part]].astype(np.int64)
            slot += within[part]
            here = length[slot]
        out[session[part].astype(np.int64) * models + model[part]] = here
        space.hand_back()
    return out


def narrow_positions(position: np.ndarray) -> np.ndarray:
    """Display positions (-1 unknown) in the narrowest integer type that holds them: a council
    shows a few answers, so a byte a cell."""
    narrow: np.ndarray = position.astype(
        index_type(int(position.max()) + 1 if len(position) else 0, np.int8), copy=False
    )  # already as narrow (the reader's column): not copied
    return narrow


MOST_SCORES = 1 << 15  # distinct scores a window numbers; past them, each cell holds its own


def _scored(count: np.ndarray) -> slice | np.ndarray:
    """The responses with a peer score (indices), or all of them as a slice: a council whose
    every answer is reviewed needs no index the responses long."""
    return slice(None) if count.all() else np.flatnonzero(count)


def number_scores(score: np.ndarray, block: int = SUM_BLOCK) -> tuple[np.ndarray, np.ndarray | None]:
    """(the distinct scores ascending, each cell's place among them in the narrowest type), read a
    block of cells at a time; (the scores, None) when there are more than MOST_SCORES of them."""
    distinct = np.zeros(0)
    for start in range(0, len(score), block):
        part = score[start : start + block]
        place = np.minimum(np.searchsorted(distinct, part), max(len(distinct) - 1, 0))
        missing = part if not len(distinct) else part[distinct[place] != part]
        if len(missing):
            distinct = np.union1d(distinct, missing)
            if len(distinct) > MOST_SCORES:
                return score, None
    code = np.empty(len(score), dtype=index_type(len(distinct), np.int8))
    for start in range(0, len(score), block):
        code[start : start + block] = np.searchsorted(distinct, score[start : start + block])
    return distinct, code


SESSIONS_PER_FIT = 2048  # sessions fitted together: bounds the padded arrays' memory


def _local_index(session: np.ndarray, index: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(each cell's index among its session's distinct values, the distinct (session, value)
    keys in order): a window's names numbered again within each session."""
    keys, inverse = present_levels(session * width + index)
    first = np.searchsorted(keys, (keys // width) * width)
    return inverse - first[inverse], keys


def _session_effects(cells: WindowCells) -> np.ndarray:
    """(sessions, reviewers) effects of each session's two-way fit on its peer scores of
    responses with two or more of them; NaN where a reviewer has none. A chunk of sessions at a
    time, each chunk's cells found by bisection (cells are in session order) and chosen there, so
    the work and the temporaries follow the chunk."""
    sessions, reviewers, models = cells.sessions, len(cells.reviewers), len(cells.models)
    out = cells.space.zeros(sessions * reviewers, np.float64).reshape(sessions, reviewers)
    step = max(SUM_BLOCK // max(reviewers, 1), 1)
    for start in range(0, sessions, step):
        out[start : start + step] = np.nan
        cells.hand_back()
    count, _ = cells.peer_sums
    # a score's code where the window numbers its scores, else the score itself: read a chunk at a time
    coded = cells.score_code is not None
    session, reviewer, model, score, own = (
        cells.session,
        cells.reviewer,
        cells.model,
        cells.score_code if cells.score_code is not None else cells.score_values,
        cells.own,
    )
    if not cells.in_session_order:
        order = np.argsort(session, kind="stable")
        session, reviewer, model, score, own = session[order], reviewer[order], model[order], score[order], own[order]

    def fit(start: int) -> None:
        stop = min(start + SESSIONS_PER_FIT, sessions)
        lo, hi = sorted_span(session, start, stop)
        group = session[lo:hi].astype(np.int64) * models + model[lo:hi]  # (session, model), the chunk's
        used = ~own[lo:hi] & (count[group] >= 2.0)
        if not used.any():
            return
        here = session[lo:hi][used].astype(np.int64) - start
        local_reviewer, reviewer_keys = _local_index(here, reviewer[lo:hi][used], reviewers)
        local_model, _ = _local_index(here, model[lo:hi][used], models)
        shape = (stop - start, int(local_reviewer.max()) + 1, int(local_model.max()) + 1)
        grid = np.zeros(shape)
        scored = np.zeros(shape, dtype=bool)
        chosen = score[lo:hi][used]
        grid[here, local_reviewer, local_model] = cells.score_values[chosen] if coded else chosen
        scored[here, local_reviewer, local_model] = True
        effects = reviewer_effects(grid, scored)
        key_session = reviewer_keys // reviewers
        position = np.arange(len(reviewer_keys)) - np.searchsorted(reviewer_keys, key_session * reviewers)
        out[start + key_session, reviewer_keys % reviewers] = effects[key_session, position]
        cells.hand_back()

    each_piece(fit, range(0, sessions, SESSIONS_PER_FIT))  # each chunk writes its own sessions' rows
    return out
