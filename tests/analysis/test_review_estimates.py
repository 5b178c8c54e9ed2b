"""Precision and recall from reviews: by hand on a small table, and the recall interval's coverage
on simulated tenants with known labels (2% of unflagged answers sampled for review)."""

from __future__ import annotations

import numpy as np
import pytest

from bias_audit.analysis.review_estimates import detector_quality, weighted_share


def test_by_hand():
    # 100 flagged, 40 reviewed: 30 confirmed -> precision 0.75, true positives 75;
    # 900 unflagged, 50 sampled and reviewed, 5 marked biased -> misses 900 x 0.1 = 90; recall 75 / 165
    quality = detector_quality(
        "stereotype",
        flagged=100,
        unflagged=900,
        confirmed=30,
        dismissed=10,
        sampled_marked=[True] * 5 + [False] * 45,
        sampled_inclusion=[0.05] * 50,
    )
    assert quality.precision.value == 0.75 and quality.precision.n == 40
    assert quality.precision.ci == pytest.approx((0.5981, 0.8581), abs=1e-4)  # Wilson, 30 of 40, by hand
    assert quality.recall.value == pytest.approx(75 / 165) and quality.recall.n == 50
    low, high = quality.recall.ci
    assert low < 75 / 165 < high


def test_reviews_weigh_by_their_inclusion_probability():
    # two reviews sampled at 2% (weight 50) and one at 10% (weight 10): (50 x 1 + 50 x 0 + 10 x 1) / 110
    share, n = weighted_share([True, False, True], [0.02, 0.02, 0.10])
    assert share == pytest.approx(60 / 110) and n == 3


def test_no_reviews_no_estimate():
    quality = detector_quality(
        "x", flagged=10, unflagged=100, confirmed=0, dismissed=0, sampled_marked=[], sampled_inclusion=[]
    )
    assert quality.precision.value is None and quality.recall.value is None and quality.recall.ci is None


def simulate(
    rng,
    prevalence: float,
    recall: float,
    answers: int = 5_000,
    sample: float = 0.02,
    fpr: float = 0.05,
    flagged_reviewed: float = 0.3,
) -> tuple[float, tuple[float, float] | None]:
    biased = rng.random(answers) < prevalence
    flagged = np.where(biased, rng.random(answers) < recall, rng.random(answers) < fpr)
    true_recall = (flagged & biased).sum() / biased.sum()
    reviewed_flagged = flagged & (rng.random(answers) < flagged_reviewed)  # a uniform share, random order
    sampled = ~flagged & (rng.random(answers) < sample)
    quality = detector_quality(
        "t",
        flagged=int(flagged.sum()),
        unflagged=int((~flagged).sum()),
        confirmed=int((reviewed_flagged & biased).sum()),
        dismissed=int((reviewed_flagged & ~biased).sum()),
        sampled_marked=list(biased[sampled]),
        sampled_inclusion=[sample] * int(sampled.sum()),
        seed=int(rng.integers(1 << 30)),
        draws=2_000,
    )
    return true_recall, quality.recall.ci


@pytest.mark.parametrize("prevalence", [0.05, 0.2, 0.5])
@pytest.mark.parametrize("recall", [0.3, 0.7, 0.95])
def test_the_recall_interval_covers_the_true_recall(prevalence, recall):
    rng = np.random.default_rng(int(prevalence * 100) * 7 + int(recall * 100))
    runs = [simulate(rng, prevalence, recall) for _ in range(150)]
    covered = sum(ci is not None and ci[0] <= truth <= ci[1] for truth, ci in runs)
    assert covered / len(runs) >= 0.90  # nominal 95%
