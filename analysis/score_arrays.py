"""A batch of sessions as padded (session, reviewer, model) arrays, for vectorized audits.

A worker audits sessions in batches; numpy over one (B, R, M) array costs a few microseconds
per session where per-session Python loops cost a hundred. Sessions of different sizes share
the batch: cells no score filled are masked out of every metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from .observations import CELL_WIDTH, SessionScores


@dataclass(frozen=True, slots=True)
class ScoreArrays:
    reviewers: list[tuple[str, ...]]  # per session: row order (first appearance in the reviews)
    score: np.ndarray  # (B, R, M) float64, 0 where no score
    peer: np.ndarray  # (B, R, M) bool: scored, not a self-review
    own: np.ndarray  # (B, R, M) bool: a self-review
    position: np.ndarray  # (B, R, M) int64 display index, -1 where unknown or no score
    words: np.ndarray  # (B, M) float64 words of each model's response
    span: np.ndarray  # (B,) float64 width of each session's score scale


def score_arrays(batch: Sequence[SessionScores]) -> ScoreArrays:
    """Validated sessions score each (reviewer, model) pair at most once (schemas.events)."""
    sessions = len(batch)
    rows = max((len(s.reviewers) for s in batch), default=0) or 1
    cols = max((len(s.models) for s in batch), default=0) or 1
    cells = np.fromiter(chain.from_iterable(s.cells for s in batch), np.float64).reshape(-1, CELL_WIDTH)
    session_of = np.repeat(np.arange(sessions), [len(s.cells) // CELL_WIDTH for s in batch])
    index = (session_of * rows + cells[:, 0].astype(np.int64)) * cols + cells[:, 1].astype(np.int64)
    size = sessions * rows * cols
    score = np.zeros(size)
    score[index] = cells[:, 2]
    kind = np.zeros(size, dtype=np.int8)
    kind[index] = 1 + cells[:, 4].astype(np.int8)  # 1 peer, 2 self
    position = np.full(size, -1, dtype=np.int64)
    position[index] = cells[:, 3].astype(np.int64)
    words = np.zeros((sessions, cols))
    for b, session in enumerate(batch):
        words[b, : len(session.models)] = [c.words for c in session.candidates.values()]
    shape = (sessions, rows, cols)
    kind = kind.reshape(shape)
    return ScoreArrays(
        reviewers=[s.reviewers for s in batch],
        score=score.reshape(shape),
        peer=kind == 1,
        own=kind == 2,
        position=position.reshape(shape),
        words=words,
        span=np.array([s.scale_span for s in batch], dtype=np.float64),
    )
