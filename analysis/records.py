"""Bias metric records for one session, under the consent rules of the contract.

Plain dicts on purpose: this runs for every scored pair on the hot path, and the shape is
checked against schemas.records.BiasMetricRecord in the tests.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from schemas.events import CouncilSessionEvent
from schemas.records import RECORD_SCHEMA_VERSION

from .observations import SessionScores

CONSENT_OFF = 0
CONSENT_RESEARCH = 4


def query_hash(query: str, secret: bytes) -> str:
    """HMAC-SHA256 of the whole query (the reference hashed only its first 100 chars)."""
    return hmac.new(secret, query.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def effective_consent(requested: int, secret: bytes | None) -> int:
    """RESEARCH without a configured secret is stored as ENHANCED: never hash with a guessable key."""
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
    records = []
    for obs in scores.observations:
        candidate = scores.candidates[obs.model]
        records.append(
            {
                **common,
                "reviewer_id": obs.reviewer,
                "model_id": obs.model,
                "position": obs.position,
                "response_length_chars": candidate.chars,
                "response_length_words": candidate.words,
                "score_value": obs.score,
                "score_scale": event.score_scale,
                "is_self_review": obs.is_self,
                "council_config_version": event.council_config_version,
                "query_hash": hashed,
                "query_metadata": metadata,
            }
        )
    return records
