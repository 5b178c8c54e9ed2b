"""Flatten a council session into scored observations, the input of every metric."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from schemas.events import CouncilSessionEvent, parse_score_scale


class Observation(NamedTuple):
    reviewer: str
    model: str
    position: int | None  # display index this reviewer saw
    score: float
    is_self: bool


@dataclass(frozen=True, slots=True)
class Candidate:
    model: str
    words: int
    chars: int


@dataclass(frozen=True, slots=True)
class SessionScores:
    observations: tuple[Observation, ...]
    candidates: dict[str, Candidate]
    scale_low: float
    scale_high: float

    @property
    def scale_span(self) -> float:
        return self.scale_high - self.scale_low


def count_words(text: str) -> int:
    return len(text.split())


def session_scores(event: CouncilSessionEvent) -> SessionScores:
    """Observations in review order; abstained and ranking-only reviews contribute none."""
    low, high = parse_score_scale(event.score_scale)
    observations: list[Observation] = []
    for review in event.reviews:
        if review.abstained or not review.scores:
            continue
        labels = review.label_to_model if review.label_to_model is not None else event.label_to_model
        for label, score in review.scores.items():
            assignment = labels[label]
            model = assignment.model
            observations.append(
                Observation(review.reviewer, model, assignment.display_index, float(score), review.reviewer == model)
            )
    candidates = {
        r.model: Candidate(model=r.model, words=count_words(r.response), chars=len(r.response))
        for r in event.responses
    }
    return SessionScores(tuple(observations), candidates, low, high)
