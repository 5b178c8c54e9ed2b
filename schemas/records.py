"""The stored bias metric record: one line per scored (session, reviewer, model).

Field names follow llm-council-core's BiasMetricRecord (schema 1.2.0) so each side reads the
other's files; the extra fields are ignored by its reader.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict

from .events import Score
from .json_tree import bounded_json

RECORD_SCHEMA_VERSION = "1.2.0"


class BiasMetricRecord(BaseModel):
    model_config = ConfigDict(extra="ignore", hide_input_in_errors=True)

    schema_version: str = RECORD_SCHEMA_VERSION
    session_id: str
    timestamp: str
    tenant_id: str = "default"
    trace_id: str | None = None
    consent_level: int = 1
    reviewer_id: str
    model_id: str
    position: int | None = None
    response_length_chars: int = 0
    # Ours: the per-session and cross-session analyses both use words, so they agree.
    response_length_words: int | None = None
    score_value: Score
    score_scale: str = "1-10"
    is_self_review: bool = False
    council_config_version: str | None = None
    query_hash: str | None = None
    query_metadata: Annotated[dict[str, Any] | None, AfterValidator(bounded_json)] = None
    # Ours, for the council biases (never the text): similarity of the scored answer to the
    # reviewer's own answer, a keyed hash of the answer's normalized text, its known correctness.
    style_similarity: Score | None = None
    response_fingerprint: str | None = None
    response_correct: bool | None = None
