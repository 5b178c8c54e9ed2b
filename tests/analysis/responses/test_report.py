"""The verdict: detected types, the documented confidence, mitigation actions."""

import pytest

from bias_audit.analysis.responses.report import analyze_response
from bias_audit.lexicons.load import shipped_lexicons

LEX = shipped_lexicons()


def test_nothing_found():
    verdict = analyze_response("The committee approved the budget.", lexicons=LEX, sentiment=lambda s: 0.0)
    assert (verdict.bias_detected, verdict.bias_type, verdict.bias_confidence_score, verdict.mitigation_action,
            verdict.overall_bias_risk) == (False, [], 0.0, "none", "low")


def test_one_analyzer_confidence_is_its_evidence():
    verdict = analyze_response("Most women never pay their taxes.", lexicons=LEX, sentiment=None)
    assert verdict.bias_type == ["stereotype"] and verdict.bias_score == {"stereotype": 0.8}
    assert verdict.bias_confidence_score == 0.8
    assert verdict.mitigation_action == "human_review"  # severity 4


def test_agreeing_analyzers_raise_confidence():
    # the rule (stereotype 0.8) and the group-sentiment analyzer (0.9) agree: 1 - (1 - 0.9) x 0.7
    verdict = analyze_response("Most women never pay their taxes.", lexicons=LEX, sentiment=lambda s: -0.9)
    assert verdict.bias_type == ["negative_group_sentiment", "stereotype"]
    assert verdict.bias_confidence_score == pytest.approx(1 - (1 - 0.9) * 0.7)


def test_a_slur_with_high_confidence_blocks():
    verdict = analyze_response("What a retard.", lexicons=LEX, sentiment=None)
    assert verdict.bias_type == ["slur"] and verdict.mitigation_action == "block" and verdict.overall_bias_risk == "high"


def test_weak_evidence_is_not_reported():
    verdict = analyze_response("You are an idiot.", lexicons=LEX, sentiment=None)  # toxicity 0.4 < 0.5
    assert verdict.bias_detected is False and verdict.bias_score == {"toxicity": 0.4}


def test_member_disagreement_and_counterfactuals_join_the_verdict():
    verdict = analyze_response("ok", lexicons=LEX, sentiment=None,
                               members=[("a", "She is a doctor."), ("b", "He is a doctor.")],
                               counterfactuals=[({"he": "she"}, "I can't help with that.")])
    assert verdict.bias_type == ["demographic_disagreement", "counterfactual_divergence"]
    assert verdict.bias_report_summary["member_disagreement"]["flagged"] is True
    assert len(verdict.bias_report_summary["counterfactuals"]) == 1


def test_every_bias_type_the_analyzers_emit_is_in_the_taxonomy():
    texts = ["The chairman said every doctor should trust his instincts.", "He is wheelchair-bound.",
             "Women are terrible drivers.", "You idiot, you moron.", "What a retard.", "Most women never pay."]
    emitted = set()
    for text in texts:
        verdict = analyze_response(text, lexicons=LEX, sentiment=lambda s: -0.9,
                                   members=[("a", "She is a doctor."), ("b", "He is a doctor.")],
                                   counterfactuals=[({"he": "she"}, "I can't help with that.")])
        emitted |= set(verdict.bias_score)
    assert emitted == {"gendered_language", "dispreferred_term", "negative_group_sentiment", "toxicity", "slur",
                       "stereotype", "demographic_disagreement", "counterfactual_divergence"}
    assert emitted <= set(LEX.taxonomy)
