"""Detector precision from reviews: a table of items with counts worked out by hand, the Wilson
interval from scipy, and the dismissed evidence ranked."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from bias_audit.analysis.detector_precision import ReviewedItem, detector_precision, evidence_of

CHAIRMAN = {
    "bias_type": "gendered_language",
    "analyzer": "gendered_language",
    "evidence": [{"term": "chairman", "neutral": "chair"}],
}
GENERIC_HE = {
    "bias_type": "gendered_language",
    "analyzer": "generic_he",
    "evidence": [{"role": "every", "sentence": "Every engineer ... he merges."}],
}
RULE = {
    "bias_type": "stereotype",
    "analyzer": "rule:group-generalization",
    "evidence": [{"rule_id": "group-generalization", "matched": "Most women never"}],
}
DISAGREEMENT = {
    "bias_type": "demographic_disagreement",
    "analyzer": "member_disagreement",
    "evidence": [{"axis": "gender", "evidence": [{"member_id": "a", "matched_terms": ["woman"]}]}],
}


def test_evidence_names_terms_and_rules_nested_too():
    assert evidence_of(CHAIRMAN) == ["chairman"]
    assert evidence_of(RULE) == ["most women never", "group-generalization"]
    assert evidence_of(GENERIC_HE) == [] and evidence_of(DISAGREEMENT) == []


def test_precision_per_tenant_type_and_analyzer_by_hand():
    items = [
        ReviewedItem("acme", {"gendered_language": "confirmed"}, [CHAIRMAN, GENERIC_HE]),
        ReviewedItem("acme", {"gendered_language": "dismissed"}, [CHAIRMAN]),
        ReviewedItem("acme", {"gendered_language": "dismissed"}, [CHAIRMAN]),
        ReviewedItem("acme", {"gendered_language": "confirmed", "stereotype": "dismissed"}, [GENERIC_HE, RULE]),
        ReviewedItem("globex", {"stereotype": "confirmed"}, [RULE]),
        ReviewedItem("globex", {"stereotype": "undecided"}, [RULE]),  # not a verdict: not counted
    ]
    precision, dismissed = detector_precision(items)
    got = {(p.tenant_id, p.bias_type, p.analyzer): (p.confirmed, p.reviewed, p.precision) for p in precision}
    assert got == {
        ("acme", "gendered_language", "gendered_language"): (1, 3, pytest.approx(1 / 3)),  # items 1-3
        ("acme", "gendered_language", "generic_he"): (2, 2, 1.0),  # items 1 and 4
        ("acme", "stereotype", "rule:group-generalization"): (0, 1, 0.0),
        ("globex", "stereotype", "rule:group-generalization"): (1, 1, 1.0),
    }
    one_of_three = next(p for p in precision if p.analyzer == "gendered_language")
    oracle = binomtest(1, 3).proportion_ci(method="wilson")
    assert (one_of_three.ci_lower, one_of_three.ci_upper) == pytest.approx((oracle.low, oracle.high), abs=1e-6)
    assert [(d.tenant_id, d.evidence, d.dismissed, d.confirmed) for d in dismissed] == [
        ("acme", "chairman", 2, 1),
        ("acme", "group-generalization", 1, 0),
        ("acme", "most women never", 1, 0),
    ]
