"""A session reduced to what cross-session analytics read: its scored cells.

Built the same way from a live event (SessionScores) and from stored records, and kept in the
Redis window as a compact dict, so a report from records, a report from the live window and
the worker's alerts all compute from equal inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

import msgspec
import numpy as np

from .observations import SessionScores
from .record_cells import RecordColumns, session_cells
from .response_traits import ResponseTraits

STORED_DIGITS = 9  # a stored digest's scores (fractions of the scale): compact JSON, far below any signal


@dataclass(frozen=True, slots=True)
class SessionDigest:
    session_id: str
    tenant_id: str
    ts_ms: int
    trace_id: str | None
    config_version: str | None
    reviewers: tuple[str, ...]
    models: tuple[str, ...]
    lengths: tuple[float, ...]  # per model: words when known, else characters
    length_unit: str  # "words" | "chars"
    # The scored cells as columns, one entry per score (a window's arrays are built column by
    # column, with no per-cell tuple): reviewer index, model index, display position or -1,
    # score as a fraction of the scale, self-review.
    cell_reviewer: tuple[int, ...]
    cell_model: tuple[int, ...]
    cell_position: tuple[int, ...]
    cell_score: tuple[float, ...]
    cell_own: tuple[bool, ...]
    # For the council biases, each () when unknown (older records, llm-council-core's):
    fingerprints: tuple[str | None, ...] = ()  # per model: keyed hash of its answer's text
    correct: tuple[bool | None, ...] = ()  # per model: the event's responses[].correct
    cell_similarity: tuple[float | None, ...] = ()  # per cell: to the reviewer's own answer

    @classmethod
    def from_cells(cls, cells: Sequence[tuple[int, int, int, float, bool]], **fields: Any) -> SessionDigest:
        """From (reviewer, model, position, score fraction, self) rows."""
        columns = tuple(zip(*cells)) if cells else ((),) * 5
        return cls(
            **fields,
            cell_reviewer=columns[0],
            cell_model=columns[1],
            cell_position=columns[2],
            cell_score=columns[3],
            cell_own=columns[4],
        )

    @property
    def cells(self) -> tuple[tuple[int, int, int, float, bool], ...]:
        """The cells as rows: (reviewer, model, position, score fraction, self)."""
        return tuple(zip(self.cell_reviewer, self.cell_model, self.cell_position, self.cell_score, self.cell_own))

    @property
    def timestamp(self) -> str:
        return iso_ms(self.ts_ms)

    def as_stored(self) -> SessionDigest:
        """The digest as from_dict(to_dict()) reads it back (scores rounded as stored), without
        the dict: what a worker keeps of the sessions it counted."""
        return replace(self, cell_score=tuple(round(y, STORED_DIGITS) for y in self.cell_score))

    def to_dict(self, *, rounded: bool = False) -> dict[str, Any]:
        """Compact form for the Redis window: short keys, cells as flat lists. `rounded`: the
        scores are as_stored()'s already (rounding again gives the same floats, ~25 round()s)."""
        columns = zip(self.cell_reviewer, self.cell_model, self.cell_position, self.cell_score, self.cell_own)
        return {
            "s": self.session_id,
            "t": self.tenant_id,
            "ts": self.ts_ms,
            "tr": self.trace_id,
            "v": self.config_version,
            "r": list(self.reviewers),
            "m": list(self.models),
            "l": list(self.lengths),
            "u": self.length_unit,
            "c": (
                [[r, m, p, y, int(own)] for r, m, p, y, own in columns]
                if rounded
                else [[r, m, p, round(y, STORED_DIGITS), int(own)] for r, m, p, y, own in columns]
            ),
            **({"f": list(self.fingerprints)} if self.fingerprints else {}),
            **({"k": list(self.correct)} if self.correct else {}),
            **({"ss": list(self.cell_similarity)} if self.cell_similarity else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionDigest:
        return cls.from_cells(
            [(int(r), int(m), int(p), float(y), bool(own)) for r, m, p, y, own in data["c"]],
            session_id=data["s"],
            tenant_id=data["t"],
            ts_ms=int(data["ts"]),
            trace_id=data.get("tr"),
            config_version=data.get("v"),
            reviewers=tuple(data["r"]),
            models=tuple(data["m"]),
            lengths=tuple(float(x) for x in data["l"]),
            length_unit=data.get("u", "words"),
            fingerprints=tuple(data.get("f", ())),
            correct=tuple(data.get("k", ())),
            cell_similarity=tuple(data.get("ss", ())),
        )


def iso_ms(ms: int | float) -> str:
    """Epoch ms -> ISO 8601 UTC with Z, the form of every timestamp we publish."""
    return datetime.fromtimestamp(int(ms) / 1000, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def timestamp_ms(value: str | datetime) -> int:
    """ISO 8601 -> epoch ms; a naive timestamp is read as UTC (the reference crashed on them)."""
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(value.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def digest_from_scores(
    scores: SessionScores,
    *,
    session_id: str,
    tenant_id: str,
    timestamp: datetime,
    trace_id: str | None,
    config_version: str | None,
    traits: ResponseTraits | None = None,
) -> SessionDigest:
    low, span = scores.scale_low, scores.scale_span
    flat = scores.cells  # CELL_WIDTH numbers per score: reviewer, model, score, position, self
    return SessionDigest(
        session_id=session_id,
        tenant_id=tenant_id,
        ts_ms=timestamp_ms(timestamp),
        trace_id=trace_id,
        config_version=config_version,
        reviewers=scores.reviewers,
        models=scores.models,
        lengths=tuple(float(scores.candidates[m].words) for m in scores.models),
        length_unit="words",
        cell_reviewer=tuple(map(int, flat[0::5])),
        cell_model=tuple(map(int, flat[1::5])),
        cell_position=tuple(map(int, flat[3::5])),
        cell_score=tuple((score - low) / span for score in flat[2::5]),
        cell_own=tuple(own == 1.0 for own in flat[4::5]),
        fingerprints=traits.fingerprints if traits else (),
        correct=traits.correct if traits else (),
        cell_similarity=traits.similarity if traits and any(v is not None for v in traits.similarity) else (),
    )


class BadRecord(ValueError):
    """A stored record that cannot be read as a scored cell; the message says why."""


class StoredCell(msgspec.Struct, gc=False):
    """One stored record as the report reads it, ours or llm-council-core's. The report's decoder
    builds only these fields and skips the rest of each line; not tracked by the GC."""

    session_id: str
    timestamp: str
    reviewer_id: str
    model_id: str
    score_value: float
    tenant_id: str | None = None
    trace_id: str | None = None
    position: int | None = None
    response_length_words: float | None = None
    response_length_chars: float | None = None
    score_scale: str | None = None
    is_self_review: bool | None = None
    council_config_version: str | None = None
    schema_version: str = ""
    style_similarity: float | None = None
    response_fingerprint: str | None = None
    response_correct: bool | None = None


def digest_from_records(rows: Sequence[StoredCell]) -> SessionDigest:
    """One session's records (ours or llm-council-core's) -> its digest, by the record rules of
    analysis.record_cells (which the report's file reader runs on thousands of sessions at once)."""
    first = rows[0]
    names: dict[str, int] = {}
    scales: dict[str, int] = {}
    versions: dict[str, int] = {}
    fingerprints: dict[str, int] = {}

    def code(table: dict[str, int], value: str | None) -> int:
        return -1 if value is None else table.setdefault(value, len(table))

    def flag(value: bool | None) -> int:
        return -1 if value is None else int(value)

    def number(value: float | None) -> float:
        return np.nan if value is None else value

    records = RecordColumns(
        starts=np.array([0, len(rows)]),
        reviewer=np.array([code(names, row.reviewer_id) for row in rows]),
        model=np.array([code(names, row.model_id) for row in rows]),
        score=np.array([row.score_value for row in rows], dtype=np.float64),
        scale=np.array([code(scales, row.score_scale) for row in rows]),
        position=np.array([number(row.position) for row in rows], dtype=np.float64),
        version=np.array([code(versions, row.schema_version) for row in rows]),
        self_review=np.array([flag(row.is_self_review) for row in rows], dtype=np.int8),
        words=np.array([number(row.response_length_words) for row in rows], dtype=np.float64),
        chars=np.array([number(row.response_length_chars) for row in rows], dtype=np.float64),
        fingerprint=np.array([code(fingerprints, row.response_fingerprint or None) for row in rows]),
        correct=np.array([flag(row.response_correct) for row in rows], dtype=np.int8),
        similarity=np.array([number(row.style_similarity) for row in rows], dtype=np.float64),
    )
    cells = session_cells(records, list(scales), list(versions))
    if cells.unreadable:
        raise BadRecord(f"session {first.session_id!r}: unreadable record ({cells.unreadable[0][1]})")
    try:
        ts = timestamp_ms(first.timestamp)
    except (TypeError, ValueError) as error:
        raise BadRecord(f"session {first.session_id!r}: unreadable record ({type(error).__name__}: {error})") from None
    name = list(names)
    local_reviewer = {index: i for i, index in enumerate(dict.fromkeys(cells.reviewer.tolist()))}
    models = cells.slot_model.tolist()
    fingerprint_names = list(fingerprints)
    return SessionDigest(
        session_id=first.session_id,
        tenant_id=first.tenant_id or "default",
        ts_ms=ts,
        trace_id=first.trace_id,
        config_version=first.council_config_version,
        reviewers=tuple(name[index] for index in local_reviewer),
        models=tuple(name[index] for index in models),
        lengths=tuple(cells.length.tolist()),
        length_unit="words" if bool(cells.words[0]) else "chars",
        cell_reviewer=tuple(local_reviewer[index] for index in cells.reviewer.tolist()),
        cell_model=tuple(cells.slot.tolist()),
        cell_position=tuple(cells.position.tolist()),
        cell_score=tuple(cells.fraction.tolist()),
        cell_own=tuple(cells.own.tolist()),
        # for the council biases: each () when no record carries it (older records, llm-council-core's)
        fingerprints=(
            tuple(None if index < 0 else fingerprint_names[index] for index in cells.slot_fingerprint.tolist())
            if (cells.slot_fingerprint >= 0).any()
            else ()
        ),
        correct=(
            tuple(None if value < 0 else bool(value) for value in cells.slot_correct.tolist())
            if (cells.slot_correct >= 0).any()
            else ()
        ),
        cell_similarity=(
            tuple(None if value != value else value for value in cells.similarity.tolist())
            if not np.isnan(cells.similarity).all()
            else ()
        ),
    )
