"""AUROC against scikit-learn's roc_auc_score, the false-positive threshold and the flag's rates
by hand, and intervals that cover."""

from __future__ import annotations

import numpy as np
import pytest

from bias_audit.analysis.detection_metrics import auroc, flag_quality, paired_difference, threshold_for_fpr

sklearn_metrics = pytest.importorskip("sklearn.metrics")


@pytest.mark.parametrize("seed", range(5))
def test_auroc_is_scikit_learns_with_ties(seed):
    rng = np.random.default_rng(seed)
    labels = rng.random(300) < 0.4
    scores = np.round(rng.random(300) + labels * 0.3, 1)  # rounded: many ties
    assert auroc(scores, labels) == pytest.approx(sklearn_metrics.roc_auc_score(labels, scores), abs=1e-12)


def test_auroc_by_hand_and_without_a_class():
    # positives 0.9, 0.5; negatives 0.5, 0.1: pairs (0.9>0.5, 0.9>0.1, 0.5=0.5 half, 0.5>0.1) = 3.5 / 4
    assert auroc(np.array([0.9, 0.5, 0.5, 0.1]), np.array([True, True, False, False])) == 0.875
    assert auroc(np.array([0.1, 0.2]), np.array([False, False])) is None


def test_the_threshold_lets_through_at_most_the_allowed_share():
    scores = np.array([i / 10 for i in range(1, 11)] + [0.95, 0.85])  # ten unbiased 0.1..1.0, two biased
    labels = np.array([False] * 10 + [True] * 2)
    # 10% of ten: one may pass; flagging score > 0.9 lets only 1.0 through
    assert threshold_for_fpr(scores, labels, 0.10) == 0.9
    # one unbiased already flagged by a default uses the allowance: flag only above the highest
    already = np.zeros(12, dtype=bool)
    already[0] = True
    assert threshold_for_fpr(scores, labels, 0.10, already) == 1.0
    already[1] = True  # two flagged already: more than allowed, the detector may flag nothing
    assert threshold_for_fpr(scores, labels, 0.10, already) == float("inf")


def test_flag_rates_by_hand():
    labels = [True, True, True, False, False, False, False]
    flags = [True, True, False, True, False, False, False]
    quality = flag_quality([1, 1, 0, 1, 0, 0, 0], flags, labels, bootstrap=0)
    assert (quality.recall.k, quality.recall.n) == (2, 3)
    assert (quality.precision.k, quality.precision.n) == (2, 3)
    assert (quality.false_positive_rate.k, quality.false_positive_rate.n) == (1, 4)
    # Wilson's interval for 2 of 3 (z = 1.96), worked by hand: 0.2077 .. 0.9385
    assert quality.recall.ci == pytest.approx((0.2077, 0.9385), abs=1e-4)


def test_the_auroc_interval_covers_the_truth_and_items_widen_it():
    rng = np.random.default_rng(3)
    covered = 0
    for run in range(40):
        labels = rng.random(200) < 0.5
        scores = rng.normal(labels * 1.0, 1.0)  # binormal, d' = 1: true AUROC = Phi(1 / sqrt 2) = 0.7602
        ci = flag_quality(scores, scores > 0, labels, seed=run, bootstrap=300).auroc_ci
        covered += ci[0] <= 0.7602 <= ci[1]
    assert covered >= 34  # nominal 95% of 40: at least 34 allows for the percentile bootstrap's slack
    labels = rng.random(100) < 0.5
    scores = rng.normal(labels * 1.0, 1.0)
    copies = np.repeat(scores, 5), np.repeat(labels, 5)
    one = flag_quality(copies[0], copies[0] > 0, copies[1], bootstrap=300).auroc_ci
    grouped = flag_quality(
        copies[0], copies[0] > 0, copies[1], [str(i // 5) for i in range(500)], bootstrap=300
    ).auroc_ci
    assert (grouped[1] - grouped[0]) > 1.5 * (one[1] - one[0])  # five copies of an item are one item


def test_the_paired_difference_sees_a_better_detector_and_not_an_equal_one():
    rng = np.random.default_rng(5)
    labels = rng.random(400) < 0.5
    weak, strong = rng.normal(labels * 0.3, 1.0), rng.normal(labels * 1.5, 1.0)
    better = paired_difference(weak, weak > 1, strong, strong > 1, labels)
    assert better["auroc"].estimate > 0.2 and better["auroc"].ci[0] > 0 and better["auroc"].p_value < 0.01
    same = paired_difference(weak, weak > 1, weak, weak > 1, labels)
    assert same["auroc"].estimate == 0 and same["recall"].estimate == 0
