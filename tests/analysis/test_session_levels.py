"""The anomaly scores' inputs: each session's level (mean peer score, reviewers' offsets against
their peers' median) and the window's baseline (median, 1.4826 MAD), against hand-computed
values and a plain-Python oracle; levels computed a few sessions at a time (as the worker
remembers them) equal to levels computed over the whole window; and a level taken from the
session's audit equal to the one from its digest."""

from __future__ import annotations

import math
import random
import statistics

import numpy as np
import pytest

from bias_audit.analysis.alerts import AlertPolicy, SessionLevel, audited_level, session_levels, window_baseline
from bias_audit.analysis.digest import SessionDigest, digest_from_scores
from bias_audit.analysis.observations import session_scores
from bias_audit.analysis.session_audit import audit_batch
from bias_audit.schemas.events import CouncilSessionEvent
from tests.analysis.test_batch_audit import random_session
from tests.simulate import Corpus


def complete_digest(session_id: str, points: dict[str, list[float]], models: int) -> SessionDigest:
    """Every reviewer scores every answer, no self-reviews; points on the 0..9 span."""
    cells = [(r, m, m, value / 9.0, False) for r, row in enumerate(points.values()) for m, value in enumerate(row)]
    return SessionDigest.from_cells(
        cells,
        session_id=session_id,
        tenant_id="t",
        ts_ms=0,
        trace_id=None,
        config_version=None,
        reviewers=tuple(points),
        models=tuple(f"m{m}" for m in range(models)),
        lengths=(100.0,) * models,
        length_unit="words",
    )


# Complete councils: the two-way fit's reviewer effect is the reviewer's mean less the grand mean,
# so the offset is the reviewer's mean less the median of the other reviewers' means.
TABLE = [
    (  # means 7, 6, 26/3, 3
        {"A": [6, 7, 8], "B": [5, 6, 7], "C": [8, 9, 9], "D": [2, 3, 4]},
        74 / 12,
        {"A": 7 - 6, "B": 6 - 7, "C": 26 / 3 - 6, "D": 3 - 7},
    ),
    (  # two others: the median is their mean
        {"A": [9, 9], "B": [5, 5], "C": [4, 6]},
        38 / 6,
        {"A": 9 - 5, "B": 5 - 7, "C": 5 - 7},
    ),
    (  # everyone agrees: offsets are exactly 0 (below the fit's rounding)
        {"A": [3, 8], "B": [3, 8], "C": [3, 8], "D": [3, 8], "E": [3, 8]},
        5.5,
        {"A": 0.0, "B": 0.0, "C": 0.0, "D": 0.0, "E": 0.0},
    ),
]


@pytest.mark.parametrize("points, mean, offsets", TABLE)
def test_level_of_a_complete_council(points, mean, offsets):
    [level] = session_levels([complete_digest("s", points, len(next(iter(points.values()))))])
    assert level.mean_score == pytest.approx(mean, abs=1e-12)
    assert list(level.offsets) == list(offsets)
    assert [level.offsets[name] for name in offsets] == pytest.approx(list(offsets.values()), abs=1e-12)


def test_a_reviewer_with_one_peer_score_per_answer_has_no_offset():
    # one reviewer alone: no peers to compare with, no offset
    [level] = session_levels([complete_digest("s", {"A": [4, 5]}, 2)])
    assert level.offsets == {} and level.mean_score == pytest.approx(4.5, abs=1e-12)


def oracle_robust(values: list[float], minimum: int) -> tuple[float, float]:
    if len(values) < minimum:
        return math.nan, math.nan
    median = statistics.median(values)
    scale = 1.4826 * statistics.median([abs(v - median) for v in values])
    return (median, scale) if scale > 0 else (math.nan, math.nan)


def close(expected):
    return pytest.approx(expected, abs=1e-12, nan_ok=True)


@pytest.mark.parametrize("seed", range(12))
def test_baseline_against_an_oracle(seed):
    rng = np.random.default_rng(seed)
    names = ["r0", "r1", "r2", "r3"]
    levels = []
    for _ in range(int(rng.integers(0, 60))):
        present = [n for n in names if rng.random() < 0.8]
        mean = round(float(rng.normal(5, 1)), 1) if rng.random() < 0.95 else math.nan
        levels.append(SessionLevel(mean, {n: round(float(rng.normal(0, 1)), 1) for n in present}))
    if seed % 3 == 0 and levels:  # a reviewer who always agrees: no spread, no baseline
        levels = [SessionLevel(level.mean_score, {**level.offsets, "flat": 0.0}) for level in levels]
    policy = AlertPolicy(anomaly_min_sessions=20)
    baseline = window_baseline(levels, policy)
    median, scale = oracle_robust([lv.mean_score for lv in levels if not math.isnan(lv.mean_score)], 20)
    assert (baseline.score_median, baseline.score_scale) == close((median, scale))
    seen = {n for lv in levels for n in lv.offsets}
    assert set(baseline.offsets) == seen
    for name in seen:
        median, scale = oracle_robust([lv.offsets[name] for lv in levels if name in lv.offsets], 20)
        assert baseline.offsets[name] == close((median, scale)), name


def test_levels_in_pieces_equal_levels_over_the_window():
    # the worker computes each session's level once, with whichever sessions are new; a level
    # depends on its session only
    digests = [*Corpus(sessions=60, models=5, seed=4).digests(), *Corpus(sessions=40, models=3, seed=5).digests()]
    np.random.default_rng(0).shuffle(digests)
    whole = session_levels(digests)
    pieces = [level for start in range(0, len(digests), 7) for level in session_levels(digests[start : start + 7])]
    assert len(whole) == len(pieces) == 100
    for a, b in zip(whole, pieces):
        assert list(a.offsets) == list(b.offsets)
        assert a.mean_score == close(b.mean_score)
        assert a.offsets == close(b.offsets)


@pytest.mark.parametrize("batch", [1, 50])
def test_a_level_from_the_audit_equals_the_level_from_the_digest(batch):
    # the worker takes the levels of the sessions it audits from their audits; a session another
    # worker counted gets its level from its digest: the two must agree
    rng = random.Random(3)
    events = [random_session(rng, i) for i in range(100)]
    for i in range(0, 100, 3):  # and on another scale
        event = events[i].model_dump()
        event["score_scale"] = "1-5"
        for review in event["reviews"]:
            for label in review["scores"]:
                review["scores"][label] = 1.0 + (review["scores"][label] - 1.0) * 4.0 / 9.0
        events[i] = CouncilSessionEvent.model_validate(event)
    scores = [session_scores(event) for event in events]
    analyses = [a for start in range(0, 100, batch) for a in audit_batch(scores[start : start + batch])]
    digests = [
        digest_from_scores(
            s, session_id=f"s{i}", tenant_id="t", timestamp=e.timestamp, trace_id=None, config_version=None
        )
        for i, (s, e) in enumerate(zip(scores, events))
    ]
    with_offsets = 0
    for digest, analysis, level in zip(digests, analyses, session_levels(digests)):
        audited = audited_level(digest, analysis.audit.reviewer_offsets, analysis.scores.scale_span)
        assert audited.mean_score == close(level.mean_score)
        assert list(audited.offsets) == list(level.offsets)
        assert audited.offsets == close(level.offsets)
        with_offsets += bool(level.offsets)
    assert with_offsets > 60
