"""A session reduced to what cross-session analytics read: its scored cells.

Built the same way from a live event (SessionScores) and from stored records, and kept in the
Redis window as a compact dict, so a report from records, a report from the live window and
the worker's alerts all compute from equal inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from functools import lru_cache
from operator import attrgetter
from typing import Any

import msgspec

from .observations import SessionScores, score_bounds
from .response_traits import ResponseTraits

# The record schema from which `position` is the display index (llm-council-core #611): older
# records hold the ranking there, which must not be read as position.
DISPLAY_POSITION_SINCE = (1, 2, 0)
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


@lru_cache(maxsize=16)
def position_is_display_order(schema_version: str) -> bool:
    try:
        parts = [int(x) for x in str(schema_version).split(".")[:3]]
    except ValueError:
        return False
    parts += [0] * (3 - len(parts))
    return tuple(parts) >= DISPLAY_POSITION_SINCE


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


# a record's fields as one tuple, in this order: map() over a session's records and zip(*) turn
# them into columns without a Python loop per field
_FIELDS = attrgetter(
    "reviewer_id",
    "model_id",
    "score_value",
    "score_scale",
    "position",
    "schema_version",
    "is_self_review",
    "response_length_words",
    "response_length_chars",
    "response_fingerprint",
    "response_correct",
    "style_similarity",
)


def digest_from_records(rows: Sequence[StoredCell]) -> SessionDigest:
    """One session's records (ours or llm-council-core's) -> its digest. Repeated
    (reviewer, model) records, left by a redelivered batch, count once (the first).
    Column by column rather than record by record: this runs for every reported session."""
    columns = list(zip(*map(_FIELDS, rows)))
    pairs = list(zip(columns[0], columns[1]))
    if len(set(pairs)) < len(pairs):
        first_of_pair = sorted({pair: i for i, pair in reversed(list(enumerate(pairs)))}.values())
        rows = [rows[i] for i in first_of_pair]
        columns = [tuple(column[i] for i in first_of_pair) for column in columns]
    (
        reviewer_ids,
        model_ids,
        values,
        scales,
        positions,
        versions,
        self_flags,
        word_counts,
        char_counts,
        fingerprint_column,
        correct_column,
        similarity,
    ) = columns
    reviewers = {name: i for i, name in enumerate(dict.fromkeys(reviewer_ids))}
    models = {name: i for i, name in enumerate(dict.fromkeys(model_ids))}
    reviewer_column = list(map(reviewers.__getitem__, reviewer_ids))
    model_column = list(map(models.__getitem__, model_ids))
    # one unit per session: words where our records carry them, else characters; a model's first
    # record gives its length (zip over the reversed columns: the first record is assigned last)
    words = word_counts[0] is not None
    first_length = dict(zip(reversed(model_ids), reversed(word_counts if words else char_counts)))
    first = rows[0]
    try:
        # a session's records share their scale and schema version: parse each distinct one once
        distinct_scales = set(scales)
        if len(distinct_scales) == 1:
            low, high = score_bounds(scales[0] or "1-10")
            scores = [(value - low) / (high - low) for value in values]
        else:
            bounds = {scale: score_bounds(scale or "1-10") for scale in distinct_scales}
            scores = [
                (value - bounds[scale][0]) / (bounds[scale][1] - bounds[scale][0])
                for value, scale in zip(values, scales)
            ]
        distinct_versions = set(versions)
        if len(distinct_versions) == 1 and position_is_display_order(versions[0]):
            cell_position = [-1 if position is None else position for position in positions]
        else:
            display = {version: position_is_display_order(version) for version in distinct_versions}
            cell_position = [
                -1 if position is None or not display[version] else position
                for position, version in zip(positions, versions)
            ]
        # llm-council-core does not store is_self_review
        own = (
            self_flags
            if None not in self_flags
            else tuple(r == m if flag is None else flag for r, m, flag in zip(reviewer_ids, model_ids, self_flags))
        )
        ts = timestamp_ms(first.timestamp)
    except (TypeError, ValueError) as error:
        raise BadRecord(f"session {first.session_id!r}: unreadable record ({type(error).__name__}: {error})") from None
    return SessionDigest(
        session_id=first.session_id,
        tenant_id=first.tenant_id or "default",
        ts_ms=ts,
        trace_id=first.trace_id,
        config_version=first.council_config_version,
        reviewers=tuple(reviewers),
        models=tuple(models),
        lengths=tuple(float(first_length[name] or 0) for name in models),
        length_unit="words" if words else "chars",
        cell_reviewer=tuple(reviewer_column),
        cell_model=tuple(model_column),
        cell_position=tuple(cell_position),
        cell_score=tuple(scores),
        cell_own=own,
        # for the council biases: each () when no record carries it (older records, llm-council-core's)
        fingerprints=_first_per_model(model_ids, fingerprint_column, models) if any(fingerprint_column) else (),
        correct=(
            _first_per_model(model_ids, correct_column, models)
            if correct_column.count(None) < len(correct_column)
            else ()
        ),
        cell_similarity=similarity if similarity.count(None) < len(similarity) else (),
    )


def _first_per_model(model_ids: Sequence[str], column: Sequence[Any], models: Mapping[str, int]) -> tuple[Any, ...]:
    """Per model, in the session's model order, the first known value of its records (else None)."""
    first: dict[str, Any] = {}
    for model_id, value in zip(model_ids, column):
        if value is not None and first.get(model_id) is None:
            first[model_id] = value
    return tuple(first.get(m) for m in models)
