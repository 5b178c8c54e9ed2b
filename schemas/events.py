"""Input events: a council session and a single LLM interaction (contracts.md)."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)
from typing_extensions import NotRequired, TypedDict  # pydantic needs typing_extensions' on Python < 3.12

from .json_tree import MAX_NUMBER, bounded_json
from .limits import limits_from
from .scale import parse_score_scale

# Identifiers end up in Redis keys and file names: printable, no braces (cluster hash tags).
Identifier = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^\s{}\x00-\x1f]+$")]
TenantId = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:@/-]+$")]
ModelName = Annotated[str, StringConstraints(min_length=1, max_length=256)]


def _json_integer(value: Any) -> Any:
    """JSON Schema's integer: 2 and 2.0, never "2" or true (pydantic's lax int takes both)."""
    if isinstance(value, (str, bool)):
        raise ValueError("must be a JSON number, not a string or boolean")
    return value


def _iso_text(value: Any) -> Any:
    """The contract's timestamps are ISO 8601 text; pydantic would also read a number as epoch
    seconds, which is not what a producer sending 1700000000000 (ms) meant."""
    if isinstance(value, (int, float)):
        raise ValueError("must be ISO 8601 text with a timezone, e.g. 2026-11-20T10:30:00Z")
    return value


def _within_response_limit(value: str, info: ValidationInfo) -> str:
    limit = limits_from(info).max_response_bytes
    # len(str) <= bytes <= 4*len(str): only encode when it could matter.
    if len(value) * 4 > limit and (size := len(value.encode("utf-8", "surrogatepass"))) > limit:
        raise ValueError(f"the text is {size} bytes, larger than the limit of {limit} bytes")
    return value


Timestamp = Annotated[AwareDatetime, BeforeValidator(_iso_text)]
ResponseText = Annotated[str, AfterValidator(_within_response_limit)]  # any model answer an event carries
# the bounds sit on int itself, so the JSON schema carries them as minimum / maximum
Consent = Annotated[int, Field(ge=0, le=4), BeforeValidator(_json_integer)]
Count = Annotated[int, Field(ge=0, le=2**53), BeforeValidator(_json_integer)]  # exact in every JSON reader
DisplayIndex = Annotated[int, Field(ge=0, le=1000), BeforeValidator(_json_integer)]
# a score or any other free number: finite, and small enough to come back from the store as it went in
Score = Annotated[float, Field(ge=-MAX_NUMBER, le=MAX_NUMBER, allow_inf_nan=False)]

_LETTER_LABEL = re.compile(r"^[Rr]esponse\s+([A-Za-z])$")


def letter_position(label: str) -> int | None:
    match = _LETTER_LABEL.match(label.strip())
    return ord(match.group(1).upper()) - ord("A") if match else None


class _Strictish(BaseModel):
    # Unknown fields are kept (producers add fields freely) but never trusted. Errors never quote
    # input: an event's query must not reach a log line through a ValidationError's text.
    model_config = ConfigDict(extra="allow", frozen=True, hide_input_in_errors=True)


# A label's model and the position it was shown at. A TypedDict, not a model: a session carries
# ~25 of them, and building as many model instances was ~15% of its validation. Unknown keys are
# dropped, as the model ignored them.
class LabelAssignment(TypedDict):
    __pydantic_config__ = ConfigDict(extra="ignore", hide_input_in_errors=True)  # type: ignore[misc]

    model: ModelName
    display_index: NotRequired[Annotated[DisplayIndex | None, Field(default=None)]]


def _normalize_label_map(value: Any) -> Any:
    """Accept the legacy form {"Response A": "model"}: its position is the letter."""
    if not isinstance(value, dict):
        return value
    normalized = {}
    for label, assignment in value.items():
        if isinstance(assignment, str):
            assignment = {"model": assignment, "display_index": letter_position(str(label))}
        elif isinstance(assignment, dict) and assignment.get("display_index") is None:
            assignment = {**assignment, "display_index": letter_position(str(label))}
        normalized[label] = assignment
    return normalized


LabelMap = dict[Annotated[str, StringConstraints(min_length=1, max_length=64)], LabelAssignment]


class CandidateResponse(_Strictish):
    model: ModelName
    response: ResponseText
    # from a benchmark with known answers: the report's length effect among equally correct answers
    correct: bool | None = None


class Review(_Strictish):
    reviewer: ModelName
    label_to_model: LabelMap | None = None
    scores: dict[str, Score] | None = None
    ranking: list[str] | None = None
    abstained: bool = False

    @field_validator("label_to_model", mode="before")
    @classmethod
    def _legacy_labels(cls, value: Any) -> Any:
        return _normalize_label_map(value)


class Synthesis(_Strictish):
    model: ModelName
    response: str = ""


# Copied into every record of a session (one per reviewer x model): bounded so a small event
# cannot write megabytes.
MetadataText = Annotated[str, StringConstraints(max_length=64)]
MAX_METADATA_KEYS = 8


class QueryMetadata(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, hide_input_in_errors=True)
    category: MetadataText | None = None
    token_count_bucket: MetadataText | None = None
    language: MetadataText | None = None

    @model_validator(mode="before")
    @classmethod
    def _flat_and_small(cls, value: Any) -> Any:
        if isinstance(value, dict):
            if len(value) > MAX_METADATA_KEYS:
                raise ValueError(f"has {len(value)} keys, more than the limit of {MAX_METADATA_KEYS}")
            for key, item in value.items():
                if len(key) > 32:
                    raise ValueError(f"a key is {len(key)} characters, more than the limit of 32")
                if isinstance(item, (dict, list)):
                    raise ValueError(f"{key}: must be text, a number, true/false or null, not an object or array")
                if isinstance(item, str) and len(item) > 64:
                    raise ValueError(f"{key}: is {len(item)} characters, more than the limit of 64")
            bounded_json(value)
        return value


class CouncilSessionEvent(_Strictish):
    schema_version: str = "1.0"
    session_id: Identifier
    tenant_id: TenantId = "default"
    trace_id: Annotated[str, StringConstraints(max_length=128)] | None = None
    timestamp: Timestamp
    council_config_version: Annotated[str, StringConstraints(max_length=64)] | None = None  # copied per record
    consent_level: Consent | None = None
    query: str | None = Field(default=None, exclude=True, repr=False)
    query_metadata: QueryMetadata | None = None
    score_scale: Annotated[str, StringConstraints(max_length=32)] = "1-10"
    responses: list[CandidateResponse]
    label_to_model: LabelMap = Field(default_factory=dict)
    reviews: list[Review] = Field(default_factory=list)
    synthesis: Synthesis | None = None

    @field_validator("label_to_model", mode="before")
    @classmethod
    def _legacy_labels(cls, value: Any) -> Any:
        return _normalize_label_map(value)

    @field_validator("score_scale")
    @classmethod
    def _scale(cls, value: str) -> str:
        parse_score_scale(value)
        return value

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> CouncilSessionEvent:
        limits = limits_from(info)
        if len(self.responses) < 2:
            raise ValueError("a council session needs at least 2 responses")
        if len(self.responses) > limits.max_responses:
            raise ValueError(f"{len(self.responses)} responses exceed the limit of {limits.max_responses}")
        if len(self.reviews) > limits.max_reviews:
            raise ValueError(f"{len(self.reviews)} reviews exceed the limit of {limits.max_reviews}")
        models = [r.model for r in self.responses]
        if len(set(models)) != len(models):
            raise ValueError("responses name the same model twice")
        known = set(models)
        low, high = parse_score_scale(self.score_scale)
        scored: dict[tuple[str, str], str] = {}  # one score per (reviewer, model): one record each
        for index, review in enumerate(self.reviews):
            self._check_review(f"review {index} ({review.reviewer})", review, known, (low, high), scored)
        return self

    def _check_review(
        self,
        where: str,
        review: Review,
        known: set[str],
        scale: tuple[float, float],
        scored: dict[tuple[str, str], str],
    ) -> None:
        """Its labels name responses, its scores known labels (each response once) on the scale,
        its ranking known labels."""
        labels = review.label_to_model if review.label_to_model is not None else self.label_to_model
        for label, assignment in labels.items():
            if assignment["model"] not in known:
                raise ValueError(f"{where}: label {label!r} maps to {assignment['model']!r}, which has no response")
        for label, score in (review.scores or {}).items():
            if label not in labels:
                raise ValueError(f"{where}: score for unknown label {label!r}")
            if not review.abstained:
                pair = (review.reviewer, labels[label]["model"])
                if pair in scored:
                    raise ValueError(
                        f"{where}: scores {pair[1]!r} again (label {label!r}; already scored via "
                        f"{scored[pair]!r}); a reviewer scores each response once"
                    )
                scored[pair] = label
            if not math.isfinite(score) or not scale[0] <= score <= scale[1]:
                raise ValueError(f"{where}: score {score!r} for {label!r} is outside score_scale {self.score_scale}")
        for label in review.ranking or []:
            if label not in labels:
                raise ValueError(f"{where}: ranking names unknown label {label!r}")


class Counterfactual(_Strictish):
    swap: dict[str, str]
    llm_response: ResponseText


class Member(_Strictish):
    member_id: Identifier
    response: ResponseText


class LLMResponseEvent(_Strictish):
    schema_version: str = "1.0"
    audit_id: Identifier
    tenant_id: TenantId = "default"
    user_id: str | None = None
    trace_id: Annotated[str, StringConstraints(max_length=128)] | None = None
    timestamp: Timestamp
    llm_provider: str | None = None
    llm_model: str | None = None
    original_query: str | None = Field(default=None, exclude=True, repr=False)
    llm_response: ResponseText
    query_context: Annotated[dict[str, Any], AfterValidator(bounded_json)] = Field(default_factory=dict)
    counterfactuals: list[Counterfactual] = Field(default_factory=list)
    members: list[Member] = Field(default_factory=list)
    consent_level: Consent | None = None
    prompt_tokens: Count | None = None
    completion_tokens: Count | None = None
    total_tokens: Count | None = None

    @model_validator(mode="after")
    def _bounded(self, info: ValidationInfo) -> LLMResponseEvent:
        limits = limits_from(info)
        if len(self.members) > limits.max_members:
            raise ValueError(f"{len(self.members)} members exceed the limit of {limits.max_members}")
        if len(self.counterfactuals) > limits.max_counterfactuals:
            raise ValueError(
                f"{len(self.counterfactuals)} counterfactuals exceed the limit of {limits.max_counterfactuals}"
            )
        return self
