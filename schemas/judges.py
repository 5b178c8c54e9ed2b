"""Input: one LLM judge's verdict on one item (`judge.verdicts`, contracts.md)."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BeforeValidator, Field, StringConstraints, ValidationInfo, model_validator

from .events import (
    Consent,
    Count,
    Identifier,
    ModelName,
    ResponseText,
    Score,
    TenantId,
    Timestamp,
    _json_integer,
    _Strictish,
)

Preference = Literal["A>>B", "A>B", "A=B", "B>A", "B>>A"]
ShortText = Annotated[str, StringConstraints(min_length=1, max_length=256)]
GameNumber = Annotated[int, Field(ge=1, le=1000), BeforeValidator(_json_integer)]
Repetition = Annotated[int, Field(ge=0, le=10_000), BeforeValidator(_json_integer)]
MAX_CANDIDATES = 16
MAX_HUMANS = 64


class Judge(_Strictish):
    model: ModelName
    prompt: ShortText | None = None
    version: ShortText | None = None


class Candidate(_Strictish):
    model: ModelName
    response: ResponseText | None = Field(default=None, exclude=True, repr=False)  # read for its length, then dropped
    length_words: Count | None = None
    correct: bool | None = None
    baseline: bool = False


class PairwiseVerdict(_Strictish):
    kind: Literal["pairwise"]
    preference: Preference


class ProbabilityVerdict(_Strictish):
    kind: Literal["probability"]
    p_first: Annotated[float, Field(ge=0.0, le=1.0)]


class ScoresVerdict(_Strictish):
    kind: Literal["scores"]
    scores: list[Score]
    scale: ShortText | None = None


class FailedVerdict(_Strictish):
    kind: Literal["failed"]
    reason: Annotated[str, StringConstraints(max_length=512)] | None = None


Verdict = Annotated[
    Union[PairwiseVerdict, ProbabilityVerdict, ScoresVerdict, FailedVerdict], Field(discriminator="kind")
]


class HumanVerdict(_Strictish):
    annotator: ShortText | None = None
    preference: Preference | None = None
    preferred_model: ModelName | None = None
    tie: bool = False  # a human who saw no difference, in sources that say so without a preference

    @model_validator(mode="after")
    def _one_way(self) -> HumanVerdict:
        given = (self.preference is not None) + (self.preferred_model is not None) + self.tie
        if given != 1:
            raise ValueError("a human verdict gives one of preference, preferred_model or tie")
        return self


class JudgeVerdictEvent(_Strictish):
    schema_version: str = "1.0"
    verdict_id: Identifier
    tenant_id: TenantId = "default"
    trace_id: Annotated[str, StringConstraints(max_length=128)] | None = None
    consent_level: Consent | None = None
    timestamp: Timestamp
    judge: Judge
    item_id: Identifier
    game: GameNumber | None = None
    repetition: Repetition = 0
    order_known: bool = True
    order_randomized: bool = False  # the source drew each item's display order at random (AlpacaEval's)
    query: str | None = Field(default=None, exclude=True, repr=False)  # never stored, logged or forwarded
    task: Annotated[str, StringConstraints(max_length=128)] | None = None
    candidates: list[Candidate]
    verdict: Verdict
    label: Preference | None = None
    human: list[HumanVerdict] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> JudgeVerdictEvent:
        n = len(self.candidates)
        if n > MAX_CANDIDATES:
            raise ValueError(f"{n} candidates exceed the limit of {MAX_CANDIDATES}")
        if len(self.human) > MAX_HUMANS:
            raise ValueError(f"{len(self.human)} human verdicts exceed the limit of {MAX_HUMANS}")
        kind = self.verdict.kind
        if kind in ("pairwise", "probability") and n != 2:
            raise ValueError(f"a {kind} verdict needs exactly 2 candidates, got {n}")
        if kind == "scores" and len(self.verdict.scores) != n:  # type: ignore[union-attr]
            raise ValueError(f"verdict.scores has {len(self.verdict.scores)} scores for {n} candidates")  # type: ignore[union-attr]
        if n < 1:
            raise ValueError("a verdict needs at least 1 candidate")
        if sum(c.baseline for c in self.candidates) > 1:
            raise ValueError("at most one candidate is the baseline")
        models = {c.model for c in self.candidates}
        for index, human in enumerate(self.human):
            if human.preferred_model is not None and human.preferred_model not in models:
                raise ValueError(f"human.{index}.preferred_model {human.preferred_model!r} is not a candidate's model")
            if human.preference is not None and n != 2:
                raise ValueError(f"human.{index}.preference needs exactly 2 candidates")
        if self.label is not None and n != 2:
            raise ValueError("label needs exactly 2 candidates")
        return self


def is_verdict_document(document: object) -> bool:
    """Whether a parsed document is meant as a judge verdict (by its fields)."""
    return isinstance(document, dict) and ("verdict_id" in document or "verdict" in document and "judge" in document)
