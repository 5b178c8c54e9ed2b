"""A session reduced to what cross-session analytics read: its scored cells.

Built the same way from a live event (SessionScores) and from stored records, and kept in the
Redis window as a compact dict, so a report from records, a report from the live window and
the worker's alerts all compute from equal inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from .observations import SessionScores, score_bounds

# The record schema from which `position` is the display index (llm-council-core #611): older
# records hold the ranking there, which must not be read as position.
DISPLAY_POSITION_SINCE = (1, 2, 0)


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
    # (reviewer index, model index, display position or -1, score as a fraction of the scale, self)
    cells: tuple[tuple[int, int, int, float, bool], ...]

    @property
    def timestamp(self) -> str:
        return iso_ms(self.ts_ms)

    def to_dict(self) -> dict[str, Any]:
        """Compact form for the Redis window: short keys, cells as flat lists."""
        return {
            "s": self.session_id, "t": self.tenant_id, "ts": self.ts_ms, "tr": self.trace_id,
            "v": self.config_version, "r": list(self.reviewers), "m": list(self.models),
            "l": list(self.lengths), "u": self.length_unit,
            "c": [[r, m, p, round(y, 9), int(own)] for r, m, p, y, own in self.cells],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionDigest:
        return cls(
            session_id=data["s"], tenant_id=data["t"], ts_ms=int(data["ts"]), trace_id=data.get("tr"),
            config_version=data.get("v"), reviewers=tuple(data["r"]), models=tuple(data["m"]),
            lengths=tuple(float(x) for x in data["l"]), length_unit=data.get("u", "words"),
            cells=tuple((int(r), int(m), int(p), float(y), bool(own)) for r, m, p, y, own in data["c"]),
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
) -> SessionDigest:
    low, span = scores.scale_low, scores.scale_span
    cells = tuple(
        (int(r), int(m), int(p), (score - low) / span, own == 1.0) for r, m, score, p, own in scores.cell_tuples()
    )
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
        cells=cells,
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


def digest_from_records(rows: Sequence[Mapping[str, Any]]) -> SessionDigest:
    """One session's records (ours or llm-council-core's) -> its digest. Repeated
    (reviewer, model) records, left by a redelivered batch, count once."""
    first = rows[0]
    reviewers: dict[str, int] = {}
    models: dict[str, int] = {}
    lengths: dict[int, float] = {}
    # one unit per session: words where our records carry them, else characters
    length_field = "response_length_words" if first.get("response_length_words") is not None else "response_length_chars"
    cells = []
    seen: set[tuple[int, int]] = set()
    # per-session caches: a session's records share their scale and schema version
    scales: dict[str, tuple[float, float]] = {}
    displays: dict[str, bool] = {}
    try:
        for row in rows:
            reviewer_id, model_id = row["reviewer_id"], row["model_id"]
            reviewer = reviewers.get(reviewer_id)
            if reviewer is None:
                reviewer = reviewers[reviewer_id] = len(reviewers)
            model = models.get(model_id)
            if model is None:
                model = models[model_id] = len(models)
                lengths[model] = float(row.get(length_field) or 0)
            key = (reviewer, model)
            if key in seen:
                continue
            seen.add(key)
            scale = row.get("score_scale") or "1-10"
            bounds = scales.get(scale)
            if bounds is None:
                bounds = scales[scale] = score_bounds(scale)
            version = row.get("schema_version", "")
            display = displays.get(version)
            if display is None:
                display = displays[version] = position_is_display_order(version)
            position = row.get("position")
            if position is None or not display:
                position = -1
            own = row.get("is_self_review")
            if own is None:  # llm-council-core does not store it
                own = reviewer_id == model_id
            low, high = bounds
            cells.append((reviewer, model, int(position), (float(row["score_value"]) - low) / (high - low), bool(own)))
        ts = timestamp_ms(first["timestamp"])
    except (KeyError, TypeError, ValueError) as error:
        raise BadRecord(f"session {first.get('session_id')!r}: unreadable record ({type(error).__name__}: {error})") from None
    return SessionDigest(
        session_id=str(first["session_id"]),
        tenant_id=first.get("tenant_id") or "default",
        ts_ms=ts,
        trace_id=first.get("trace_id"),
        config_version=first.get("council_config_version"),
        reviewers=tuple(reviewers),
        models=tuple(models),
        lengths=tuple(lengths[i] for i in range(len(models))),
        length_unit="words" if length_field == "response_length_words" else "chars",
        cells=tuple(cells),
    )
