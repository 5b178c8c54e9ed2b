"""analysis/_audit.c: the per-session audit of a batch of council sessions in C."""

from collections.abc import Callable, Sequence
from typing import Any

from .observations import SessionScores
from .session_noise import NoiseScale

FIELDS: tuple[str, ...]  # SessionAudit's fields, in the order the audit dicts hold them

def score_cells(reviews: Sequence[Any], default_labels: dict[str, Any],
                column: dict[str, float]) -> tuple[tuple[str, ...], list[float]]: ...
def audit_sessions(
    batch: Sequence[SessionScores],
    config: tuple[float, float, float, float],  # length threshold, calibration and self points, alpha
    noise_for: Callable[[list[tuple[float, int]]], Sequence[NoiseScale]],
    tails: Callable[[bytes, bytes, bytes, bytes, bytes, bytes], tuple[bytes, bytes, bytes]],
) -> list[tuple[dict[str, Any], list[tuple[int, float]], tuple[float, int]]]: ...
