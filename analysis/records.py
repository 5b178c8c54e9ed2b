"""Bias metric records for one session, under the consent rules of the contract.

Plain dicts on purpose: this runs for every scored pair on the hot path, and the shape is
checked against schemas.records.BiasMetricRecord in the tests.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any

from bias_audit.schemas.events import CouncilSessionEvent
from bias_audit.schemas.records import RECORD_SCHEMA_VERSION

from .observations import SessionScores
from .response_traits import ResponseTraits

CONSENT_OFF = 0
CONSENT_RESEARCH = 4


def query_hash(query: str, secret: bytes) -> str:
    """HMAC-SHA256 of the whole query (the reference hashed only its first 100 chars)."""
    return hmac.new(secret, query.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def effective_consent(requested: int | None, default: int, secret: bytes | None) -> int:
    """The event's consent level, else the operator's default; RESEARCH without a configured
    secret is stored as ENHANCED: never hash with a guessable key."""
    if requested is None:
        requested = default
    if requested >= CONSENT_RESEARCH and not secret:
        return CONSENT_RESEARCH - 1
    return requested


def _json_bytes(value: Any) -> int:
    """Bytes of a value in a compact UTF-8 JSON record (escapes included)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))


# One record with every per-record string empty and every number one digit: what a record costs
# besides its strings and its numbers' other digits.
_RECORD_FRAME = (
    _json_bytes(
        {
            "schema_version": RECORD_SCHEMA_VERSION,
            "session_id": "",
            "timestamp": "2026-11-20T10:30:00.000000Z",
            "tenant_id": "",
            "trace_id": "",
            "consent_level": 4,
            "reviewer_id": "",
            "model_id": "",
            "position": 0,
            "response_length_chars": 0,
            "response_length_words": 0,
            "score_value": 0,
            "score_scale": "",
            "is_self_review": False,
            "council_config_version": "",
            "query_hash": "0" * 64,
            "query_metadata": None,
            "style_similarity": 0.123456789,
            "response_fingerprint": "0" * 32,
            "response_correct": False,
        }
    )
    - 7 * _json_bytes("")
    - _json_bytes(None)
)  # the seven strings and the metadata are added per record
_POSITION_DIGITS = 3  # a position up to 1000, or null: at most 3 characters more than "0"


_WIDEST_NUMBERS = 3 + 2 * 15 + 23  # position, chars and words (2^53 at most), a score's repr, past one digit each


def stored_bytes_over(event: CouncilSessionEvent, trace_id: str, limit: float) -> tuple[int, int] | None:
    """(records, bytes) when the records one event would write can exceed `limit`, else None.
    First a coarse bound (every string escaped at 6 bytes a character, every number at its
    widest) that costs a few microseconds; the exact bound below only when that one is over."""
    cells = sum(len(review.scores or ()) for review in event.reviews if not review.abstained)
    longest = max(len(name) for name in (*(r.model for r in event.responses), *(r.reviewer for r in event.reviews)))
    strings = (
        len(event.session_id)
        + len(event.tenant_id)
        + len(trace_id)
        + len(event.score_scale)
        + len(event.council_config_version or "")
        + 2 * longest
    )
    fields = {**vars(event.query_metadata), **(event.query_metadata.model_extra or {})} if event.query_metadata else {}
    metadata = 4 + sum(6 * (len(key) + len(str(value))) + 8 for key, value in fields.items())
    if cells * (_RECORD_FRAME + _WIDEST_NUMBERS + 6 * strings + 7 * 2 + metadata) <= limit:
        return None
    records, size = stored_bytes_bound(event, trace_id)
    return (records, size) if size > limit else None


def stored_bytes_bound(event: CouncilSessionEvent, trace_id: str) -> tuple[int, int]:
    """(records, an upper bound of their bytes as JSONL): how much one event can make us write,
    judged before writing it. Every per-session field is repeated in each reviewer x model record."""
    metadata = event.query_metadata.model_dump(exclude_none=True) if event.query_metadata else None
    per_record = (
        _RECORD_FRAME
        + _POSITION_DIGITS
        + _json_bytes(event.session_id)
        + _json_bytes(event.tenant_id)
        + _json_bytes(trace_id)
        + _json_bytes(event.score_scale)
        + _json_bytes(event.council_config_version)
        + _json_bytes(metadata)
    )
    # a model's id and its length in characters and (at most as many) words
    per_model = {r.model: _json_bytes(r.model) + 2 * (len(str(len(r.response))) - 1) for r in event.responses}
    records = total = 0
    for review in event.reviews:
        if review.abstained:
            continue
        labels = review.label_to_model if review.label_to_model is not None else event.label_to_model
        reviewer = _json_bytes(review.reviewer)
        for label, score in (review.scores or {}).items():
            records += 1
            # the score as repr writes it, never shorter than orjson's form ("5.0", "1e+16" for 1e16)
            total += per_record + reviewer + per_model[labels[label]["model"]] + len(repr(float(score)))
    return records, total


@dataclass(frozen=True, slots=True)
class SessionRecords:
    """One session's bias metric records, not yet expanded: `records()` gives the contract's dicts
    (one per reviewer x model, each repeating the session's fields), and a store that keeps one
    row per session reads the fields from here without building them (PostgreSQL)."""

    event: CouncilSessionEvent
    scores: SessionScores
    trace_id: str
    consent: int
    query_hash: str | None
    traits: ResponseTraits | None

    schema_version = RECORD_SCHEMA_VERSION  # of every record

    @property
    def timestamp(self) -> str:
        return self.event.timestamp.isoformat().replace("+00:00", "Z")

    @property
    def query_metadata(self) -> dict[str, Any] | None:
        metadata = self.event.query_metadata
        return metadata.model_dump(exclude_none=True) if metadata else None

    def records(self) -> list[dict[str, Any]]:
        event, scores, traits = self.event, self.scores, self.traits
        metadata = self.query_metadata
        common = {
            "schema_version": self.schema_version,
            "session_id": event.session_id,
            "timestamp": self.timestamp,
            "tenant_id": event.tenant_id,
            "trace_id": self.trace_id,
            "consent_level": self.consent,
        }
        per_model = [(c.model, c.chars, c.words) for c in (scores.candidates[m] for m in scores.models)]
        reviewers = scores.reviewers
        fingerprints = traits.fingerprints if traits else ()
        correct = traits.correct if traits else ()
        similarity = traits.similarity if traits else ()
        records = []
        for index, (r, m, score, shown_at, own) in enumerate(scores.cell_tuples()):
            model, chars, words = per_model[int(m)]
            records.append(
                {
                    **common,
                    "reviewer_id": reviewers[int(r)],
                    "model_id": model,
                    "position": None if shown_at < 0 else int(shown_at),
                    "response_length_chars": chars,
                    "response_length_words": words,
                    "score_value": score,
                    "score_scale": event.score_scale,
                    "is_self_review": own == 1.0,
                    "council_config_version": event.council_config_version,
                    "query_hash": self.query_hash,
                    "query_metadata": metadata,
                    "style_similarity": similarity[index] if similarity else None,
                    "response_fingerprint": fingerprints[int(m)] if fingerprints else None,
                    "response_correct": correct[int(m)] if correct else None,
                }
            )
        return records


def session_records(
    event: CouncilSessionEvent,
    scores: SessionScores,
    *,
    trace_id: str,
    consent: int,
    secret: bytes | None,
    traits: ResponseTraits | None = None,
) -> SessionRecords | None:
    """The session's records under its consent: None at consent 0 (nothing is stored)."""
    if consent <= CONSENT_OFF:
        return None
    hashed = query_hash(event.query, secret) if consent >= CONSENT_RESEARCH and event.query and secret else None
    return SessionRecords(event, scores, trace_id, consent, hashed, traits)
