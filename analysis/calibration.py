"""Calibrated confidence: per bias type, a monotone map from an analyzer's evidence (the
verdict's bias_score for the type, 0-1) to the probability that a person confirms the flag,
fitted to reviews by isotonic regression (pool adjacent violators), with the Brier score and a
reliability table before and after on held-out reviews.

`bias_confidence_score` then means "probability a reviewer confirms the strongest detected
type"; a type without enough reviews keeps the analyzers' rule.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

MIN_REVIEWS = 30  # per bias type, before it is calibrated


@dataclass(frozen=True)
class Reviewed:
    key: str  # the item's id: decides, stably, whether it is held out
    bias_type: str
    evidence: float
    confirmed: bool


def isotonic(x: Sequence[float], y: Sequence[float]) -> tuple[list[float], list[float]]:
    """The least-squares non-decreasing fit of y on x (pool adjacent violators), as the points
    (x, fitted) where the fitted step function changes, for linear interpolation between them."""
    order = np.argsort(np.asarray(x, dtype=float), kind="stable")
    xs, ys = np.asarray(x, dtype=float)[order], np.asarray(y, dtype=float)[order]
    # one block per distinct x first: equal x must get one value
    blocks: list[list[float]] = []  # [sum, count, x_first, x_last]
    for xv, yv in zip(xs, ys):
        if blocks and blocks[-1][3] == xv:
            blocks[-1][0] += yv
            blocks[-1][1] += 1
        else:
            blocks.append([yv, 1.0, xv, xv])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, count, _, last = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
            blocks[-1][3] = last
    points_x, points_y = [], []
    for total, count, first, last in blocks:
        value = float(total / count)  # plain floats: they go to JSON
        points_x.append(float(first))
        points_y.append(value)
        if last != first:
            points_x.append(float(last))
            points_y.append(value)
    return points_x, points_y


def brier(probabilities: Sequence[float], outcomes: Sequence[bool]) -> float:
    p, o = np.asarray(probabilities, dtype=float), np.asarray(outcomes, dtype=float)
    return float(np.mean((p - o) ** 2))


def reliability(probabilities: Sequence[float], outcomes: Sequence[bool], bins: int = 5) -> list[dict[str, Any]]:
    """Per equal-width bin of predicted probability: n, mean predicted, observed confirm rate."""
    p, o = np.asarray(probabilities, dtype=float), np.asarray(outcomes, dtype=float)
    rows = []
    for index in range(bins):
        low, high = index / bins, (index + 1) / bins
        inside = (p >= low) & ((p < high) if index < bins - 1 else (p <= high))
        if inside.any():
            rows.append(
                {
                    "bin": f"{low:.1f}-{high:.1f}",
                    "n": int(inside.sum()),
                    "predicted": round(float(p[inside].mean()), 4),
                    "observed": round(float(o[inside].mean()), 4),
                }
            )
    return rows


def with_confirm_probabilities(verdict: Any, probabilities: dict[str, float], source: str, version: str) -> Any:
    """The verdict with its confidence as the strongest probability that a reviewer confirms a
    detected type (types without one keep the confidence the verdict had), the probabilities
    and their version under bias_report_summary[source]."""
    if not probabilities:
        return verdict
    kept = [verdict.bias_confidence_score] if len(probabilities) < len(verdict.bias_type) else []
    summary = {**verdict.bias_report_summary, source: {"version": version, "confirm_probability": probabilities}}
    return replace(
        verdict, bias_confidence_score=round(max([*probabilities.values(), *kept]), 4), bias_report_summary=summary
    )


@dataclass(frozen=True)
class TypeCalibration:
    x: tuple[float, ...]
    y: tuple[float, ...]
    reviews: int

    def probability(self, evidence: float) -> float:
        return float(np.interp(evidence, self.x, self.y))


@dataclass(frozen=True)
class Calibration:
    version: str
    types: dict[str, TypeCalibration]

    def adjust(self, verdict: Any) -> Any:
        """The verdict with its confidence as the probability a reviewer confirms the strongest
        detected type (types without a calibration keep the rule's confidence)."""
        if not verdict.bias_detected:
            return verdict
        calibrated = {
            t: round(self.types[t].probability(verdict.bias_score.get(t, 0.0)), 4)
            for t in verdict.bias_type
            if t in self.types
        }
        return with_confirm_probabilities(verdict, calibrated, "calibration", self.version)

    def to_document(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "types": {t: {"x": list(c.x), "y": list(c.y), "reviews": c.reviews} for t, c in sorted(self.types.items())},
        }

    @staticmethod
    def from_document(document: Any) -> Calibration:
        """From the file's JSON; pydantic's ValidationError (a ValueError) names what does not fit."""
        from bias_audit.schemas.detector_files import CalibrationFile

        checked = CalibrationFile.model_validate(document)
        types = {}
        for name, entry in checked.types.items():
            x, y = entry.x, entry.y
            if not x or len(x) != len(y) or x != sorted(x) or y != sorted(y):
                raise ValueError(f"bias type {name!r}: x and y must be equally long, sorted, y within 0-1")
            types[name] = TypeCalibration(tuple(x), tuple(y), entry.reviews)
        return Calibration(checked.version, types)


def held_out(key: str, every: int = 4) -> bool:
    """One item in `every`, chosen by a hash of its id: the same split on every run."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % every == 0


def fit_calibration(
    rows: Iterable[Reviewed], min_reviews: int = MIN_REVIEWS
) -> tuple[Calibration, list[dict[str, Any]]]:
    """The calibration (fitted on every review) and, per bias type, how it does on the held-out
    reviews when fitted on the rest: Brier score before (the evidence read as a probability) and
    after, and the reliability tables."""
    by_type: dict[str, list[Reviewed]] = {}
    for row in rows:
        by_type.setdefault(row.bias_type, []).append(row)
    types, report = {}, []
    for name, reviewed in sorted(by_type.items()):
        entry: dict[str, Any] = {
            "bias_type": name,
            "reviews": len(reviewed),
            "calibrated": len(reviewed) >= min_reviews,
        }
        if len(reviewed) >= min_reviews:
            train = [r for r in reviewed if not held_out(r.key)]
            test = [r for r in reviewed if held_out(r.key)]
            if train and test:
                x, y = isotonic([r.evidence for r in train], [r.confirmed for r in train])
                fitted = TypeCalibration(tuple(x), tuple(y), len(train))
                before = [r.evidence for r in test]
                after = [fitted.probability(r.evidence) for r in test]
                outcomes = [r.confirmed for r in test]
                entry.update(
                    train=len(train),
                    test=len(test),
                    brier_before=round(brier(before, outcomes), 4),
                    brier_after=round(brier(after, outcomes), 4),
                    reliability_before=reliability(before, outcomes),
                    reliability_after=reliability(after, outcomes),
                )
            x, y = isotonic([r.evidence for r in reviewed], [r.confirmed for r in reviewed])
            types[name] = TypeCalibration(tuple(round(v, 6) for v in x), tuple(round(v, 6) for v in y), len(reviewed))
        report.append(entry)
    digest = hashlib.sha256(repr(sorted((t, c.x, c.y) for t, c in types.items())).encode()).hexdigest()[:12]
    return Calibration(f"cal-{digest}", types), report
