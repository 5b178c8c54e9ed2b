"""Bias metric records for one session, under the consent rules of the contract.

Plain dicts on purpose: this runs for every scored pair on the hot path, and the shape is
checked against schemas.records.BiasMetricRecord in the tests.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from bias_audit.schemas.events import CouncilSessionEvent
from bias_audit.schemas.records import RECORD_SCHEMA_VERSION

from .observations import SessionScores

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


def build_records(
    event: CouncilSessionEvent,
    scores: SessionScores,
    *,
    trace_id: str,
    consent: int,
    secret: bytes | None,
) -> list[dict[str, Any]]:
    if consent <= CONSENT_OFF:
        return []
    hashed = query_hash(event.query, secret) if consent >= CONSENT_RESEARCH and event.query and secret else None
    metadata = event.query_metadata.model_dump(exclude_none=True) if event.query_metadata else None
    timestamp = event.timestamp.isoformat().replace("+00:00", "Z")
    common = {
        "schema_version": RECORD_SCHEMA_VERSION,
        "session_id": event.session_id,
        "timestamp": timestamp,
        "tenant_id": event.tenant_id,
        "trace_id": trace_id,
        "consent_level": consent,
    }
    per_model = [(c.model, c.chars, c.words) for c in (scores.candidates[m] for m in scores.models)]
    reviewers = scores.reviewers
    records = []
    for r, m, score, shown_at, own in scores.cell_tuples():
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
                "query_hash": hashed,
                "query_metadata": metadata,
            }
        )
    return records
