"""Seeded council corpora with known biases planted, as digests or as stored records.

score = 5.5 + quality(model) + offset(reviewer) + position effect + noise, in points of 1-10,
clipped to the scale. Quality varies per session too (some questions are harder), so an
analysis that ignores sessions sees extra noise, not a bias.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import numpy as np

from bias_audit.analysis.digest import SessionDigest, timestamp_ms

START = datetime(2026, 11, 1, tzinfo=timezone.utc)


@dataclass
class Corpus:
    sessions: int = 50
    models: int = 5
    seed: int = 0
    reviewer_offsets: dict[int, float] = field(default_factory=dict)  # reviewer index -> points
    position_effects: dict[int, float] = field(default_factory=dict)  # display index -> points
    shuffle: str = "per_reviewer"  # "per_reviewer" | "shared" | "fixed"
    length_slope: float = 0.0  # points per 100 words
    self_bonus: float = 0.0
    noise: float = 1.0
    tenant: str = "acme"
    config_version: str | list[str] = "1.0"
    offset_from: int = 0  # the reviewer offsets apply from this session on
    offset_until: int | None = None

    def digests(self) -> list[SessionDigest]:
        rng = np.random.default_rng(self.seed)
        names = [f"vendor{i}/model-{i}" for i in range(self.models)]
        quality = rng.normal(0, 1.0, self.models)
        out = []
        for s in range(self.sessions):
            words = rng.integers(80, 600, self.models).astype(float)
            session_quality = quality + rng.normal(0, 0.5, self.models)
            base = rng.normal(0, 0.5)
            order = rng.permutation(self.models)
            cells = []
            for r in range(self.models):
                if self.shuffle == "per_reviewer":
                    order = rng.permutation(self.models)
                elif self.shuffle == "fixed":
                    order = np.arange(self.models)
                positions = np.empty(self.models, dtype=int)
                positions[order] = np.arange(self.models)
                active = s >= self.offset_from and (self.offset_until is None or s < self.offset_until)
                # Python floats and ints per cell: the same sums as numpy's scalars, without their overhead
                for m, (position, quality_m, words_m) in enumerate(
                    zip(positions.tolist(), session_quality.tolist(), words.tolist())
                ):
                    score = (
                        5.5
                        + base
                        + quality_m
                        + self.length_slope * words_m / 100
                        + (self.reviewer_offsets.get(r, 0.0) if active else 0.0)
                        + self.position_effects.get(position, 0.0)
                        + (self.self_bonus if r == m else 0.0)
                        + rng.normal(0, self.noise)
                    )
                    score = min(max(score, 1.0), 10.0)
                    cells.append((r, m, position, (score - 1.0) / 9.0, r == m))
            version = self.config_version if isinstance(self.config_version, str) else self.config_version[s]
            out.append(
                SessionDigest.from_cells(
                    cells,
                    session_id=f"{self.tenant}-{self.seed}-{s:06d}",
                    tenant_id=self.tenant,
                    ts_ms=timestamp_ms(START + timedelta(minutes=10 * s)),
                    trace_id=f"{s:032x}",
                    config_version=version,
                    reviewers=tuple(names),
                    models=tuple(names),
                    lengths=tuple(words.tolist()),
                    length_unit="words",
                )
            )
        return out


def biased_council(sessions: int) -> Corpus:
    """The golden files' tenant acme: a harsh reviewer, a first-position effect, a length slope and
    self-preference in a 5x5 council (the report's length and position tests flag; bench/report.py
    --corpus simulated measures the report on it)."""
    return Corpus(
        sessions=sessions,
        models=5,
        seed=47,
        reviewer_offsets={1: -1.0},
        position_effects={0: 0.3},
        length_slope=0.2,
        self_bonus=0.5,
        tenant="acme",
    )


def digest_records(digest: SessionDigest) -> list[dict]:
    """The stored records (contract shape) a worker would have written for this digest."""
    timestamp = digest.timestamp
    return [
        {
            "schema_version": "1.2.0",
            "session_id": digest.session_id,
            "timestamp": timestamp,
            "tenant_id": digest.tenant_id,
            "trace_id": digest.trace_id,
            "consent_level": 1,
            "reviewer_id": digest.reviewers[r],
            "model_id": digest.models[m],
            "position": None if p < 0 else p,
            "response_length_chars": int(digest.lengths[m] * 6),
            "response_length_words": int(digest.lengths[m]),
            "score_value": round(1.0 + 9.0 * y, 6),
            "score_scale": "1-10",
            "is_self_review": own,
            "council_config_version": digest.config_version,
            "query_hash": None,
            "query_metadata": None,
        }
        for r, m, p, y, own in digest.cells
    ]


def digest_event(digest: SessionDigest) -> dict:
    """The council session event (contract shape) that yields this digest: per-reviewer orders,
    responses of the digest's word counts, scores on a 1-10 scale."""
    responses = [
        {"model": model, "response": " ".join(["word"] * int(words))}
        for model, words in zip(digest.models, digest.lengths)
    ]
    reviews: dict[int, dict] = {}
    for r, m, p, y, _ in digest.cells:
        review = reviews.setdefault(r, {"reviewer": digest.reviewers[r], "label_to_model": {}, "scores": {}})
        label = f"Response {chr(65 + p)}"
        review["label_to_model"][label] = {"model": digest.models[m], "display_index": p}
        review["scores"][label] = round(1.0 + 9.0 * y, 6)
    return {
        "schema_version": "1.0",
        "session_id": digest.session_id,
        "tenant_id": digest.tenant_id,
        "trace_id": digest.trace_id,
        "timestamp": digest.timestamp,
        "council_config_version": digest.config_version,
        "score_scale": "1-10",
        "responses": responses,
        "reviews": list(reviews.values()),
    }
