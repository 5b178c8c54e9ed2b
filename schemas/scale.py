"""A council's score scale, "min-max": parsed without pydantic, so the analysis imports it
without the event models."""

from __future__ import annotations

import re

from .json_tree import MAX_NUMBER

_SCALE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*-\s*(-?\d+(?:\.\d+)?)\s*$")


def parse_score_scale(scale: str) -> tuple[float, float]:
    """ "1-10" -> (1.0, 10.0); raises ValueError with a readable reason."""
    match = _SCALE.match(scale)
    if not match:
        raise ValueError(f"score_scale {scale!r} is not of the form 'min-max', e.g. '1-10'")
    low, high = float(match.group(1)), float(match.group(2))
    if max(abs(low), abs(high)) > MAX_NUMBER:
        raise ValueError(f"score_scale {scale!r} reaches past +-{MAX_NUMBER:.0e}".replace("e+", "e"))
    if not low < high:
        raise ValueError(f"score_scale {scale!r} has min >= max")
    return low, high
