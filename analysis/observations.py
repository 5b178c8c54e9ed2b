"""Flatten a council session into scored cells, the input of every metric.

A cell is one score a reviewer gave a model, kept as CELL_WIDTH numbers in one flat list (the
batch audit turns a batch's lists into arrays in one call).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from bias_audit.schemas.scale import parse_score_scale

from ._text import count_words  # len(text.split()) without a string per word

if TYPE_CHECKING:  # the event models are not imported to read a window (the report)
    from bias_audit.schemas.events import CouncilSessionEvent, LabelAssignment, Review


class Candidate(NamedTuple):
    model: str
    words: int
    chars: int


# NamedTuple's generated __new__ is Python code; tuple.__new__ builds the same object in C.
_make = tuple.__new__

# reviewer index, model index, score, display index (-1 when unknown), 1.0 for a self-review
CELL_WIDTH = 5


@dataclass(frozen=True, slots=True)
class SessionScores:
    reviewers: tuple[str, ...]  # distinct reviewers with a score, first appearance first
    models: tuple[str, ...]  # the candidates, in the responses' order
    cells: list[float]  # CELL_WIDTH numbers per score, in review order
    candidates: dict[str, Candidate]
    scale_low: float
    scale_high: float

    @property
    def scale_span(self) -> float:
        return self.scale_high - self.scale_low

    def cell_tuples(self) -> Iterator[tuple[float, float, float, float, float]]:
        """(reviewer index, model index, score, display index or -1, self flag) per score."""
        it = iter(self.cells)
        return zip(it, it, it, it, it)


score_bounds = lru_cache(maxsize=64)(parse_score_scale)  # a handful of distinct scales in practice


def score_cells(
    reviews: Sequence[Review], default_labels: dict[str, LabelAssignment], column: dict[str, float]
) -> tuple[tuple[str, ...], list[float]]:
    """The reviewers in order of first appearance and the cells in review order; abstained and
    ranking-only reviews contribute none."""
    cells: list[float] = []
    extend = cells.extend
    reviewers: dict[str, float] = {}
    for review in reviews:
        if review.abstained or not review.scores:
            continue
        labels = review.label_to_model if review.label_to_model is not None else default_labels
        reviewer = review.reviewer
        row = reviewers.setdefault(reviewer, float(len(reviewers)))
        for label, score in review.scores.items():
            assignment = labels[label]
            model = assignment["model"]
            shown_at = assignment.get("display_index")
            # scores are floats already: the event model declares dict[str, float]
            extend(
                (row, column[model], score, -1.0 if shown_at is None else shown_at, 1.0 if reviewer == model else 0.0)
            )
    return tuple(reviewers), cells


def session_scores(event: CouncilSessionEvent) -> SessionScores:
    """Cells in review order; abstained and ranking-only reviews contribute none."""
    low, high = score_bounds(event.score_scale)
    column = {r.model: float(i) for i, r in enumerate(event.responses)}
    reviewers, cells = score_cells(event.reviews, event.label_to_model, column)
    candidates = {
        r.model: _make(Candidate, (r.model, count_words(r.response), len(r.response))) for r in event.responses
    }
    return SessionScores(reviewers, tuple(column), cells, candidates, low, high)
