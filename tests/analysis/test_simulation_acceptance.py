"""Issue 4's acceptance on seeded corpora: 50 sessions of 4-5 models each.

A -1.5 point reviewer is flagged in >= 90% of corpora, a +0.5 point primacy effect under
per-reviewer shuffling in >= 80%, and on unbiased corpora no flag fires in more than 5%."""

from __future__ import annotations

from collections import Counter

import pytest

from bias_audit.analysis.cross_session import WindowThresholds
from bias_audit.analysis.tenant_report import tenant_report
from tests.simulate import Corpus

# simulations: the main run's, not the lowest versions' (make test-lowest leaves `slow` out)
pytestmark = pytest.mark.slow

CORPORA = 200
THRESHOLDS = WindowThresholds(bootstrap_replicates=200)  # the flag rates do not hinge on it


def flag_rates(**planted) -> dict[str, float]:
    counts: Counter[str] = Counter()
    for seed in range(CORPORA):
        corpus = Corpus(sessions=50, models=4 + seed % 2, seed=seed, **planted)
        report = tenant_report(corpus.digests(), thresholds=THRESHOLDS)
        counts.update({flag.split(":")[0] for flag in report.flags})
    return {flag: n / CORPORA for flag, n in counts.items()}


def test_harsh_reviewer_is_flagged():
    rates = flag_rates(reviewer_offsets={1: -1.5})
    assert rates.get("HARSH", 0) >= 0.90, rates
    assert rates.get("GENEROUS", 0) <= 0.05, rates  # the others are not made to look generous


def test_primacy_under_per_reviewer_shuffle_is_detected():
    rates = flag_rates(position_effects={0: 0.5}, shuffle="per_reviewer")
    assert rates.get("POSITION_BIAS_PRIMACY", 0) >= 0.80, rates


@pytest.fixture(scope="module")
def unbiased_rates() -> dict[str, float]:
    return flag_rates()


def test_unbiased_corpora_rarely_flag(unbiased_rates):
    position = sum(rate for flag, rate in unbiased_rates.items() if flag.startswith("POSITION_BIAS"))
    assert position <= 0.05, unbiased_rates
    assert all(rate <= 0.05 for rate in unbiased_rates.values()), unbiased_rates
