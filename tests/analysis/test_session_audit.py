"""Known answers from hand computation (shown in comments) and scipy; the reference
implementation (llm-council-core 0.53.0) where it is right, and where it is wrong."""

import pytest
from scipy import stats as sps

from bias_audit.analysis.observations import session_scores
from bias_audit.analysis.session_audit import AuditConfig, audit_scores
from bias_audit.schemas.events import CouncilSessionEvent
from tests.builders import council_event, observations, two_way_prediction


def audit(event_dict, config=AuditConfig()):
    return audit_scores(session_scores(CouncilSessionEvent.model_validate(event_dict)), config).audit


def test_shared_order_quality_differences_are_not_position_bias():
    # Everyone sees M1, M2, M3 in that order and scores quality 9, 7, 5.
    # Reference: variance of position means [9, 7, 5] = 4 -> "detected". Position is not identifiable.
    scores = {r: {"M1": 9, "M2": 7, "M3": 5} for r in ("R1", "R2", "R3")}
    got = audit(council_event(scores, shared_order=["M1", "M2", "M3"]))
    assert got.position_identifiable is False
    assert got.position_score_variance is None
    assert got.position_bias_detected is False


def test_reference_calls_the_same_shared_order_session_position_bias():
    bias_audit = pytest.importorskip("llm_council.bias_audit")
    scores = {r: {"M1": 9, "M2": 7, "M3": 5} for r in ("R1", "R2", "R3")}
    responses = [{"model": m, "response": "w"} for m in ("M1", "M2", "M3")]
    ref = bias_audit.run_bias_audit(responses, scores, {"M1": 0, "M2": 1, "M3": 2})
    assert ref.position_score_variance == 4.0 and ref.position_bias_detected is True


def test_rotated_orders_identify_a_first_position_bonus():
    # Latin square; base quality M1 7, M2 6, M3 5; every reviewer adds +2 at position 0.
    # Model means 23/3, 20/3, 17/3 -> residual +4/3 at position 0, -2/3 at 1 and 2.
    orders = {"R1": ["M1", "M2", "M3"], "R2": ["M2", "M3", "M1"], "R3": ["M3", "M1", "M2"]}
    scores = {"R1": {"M1": 9, "M2": 6, "M3": 5}, "R2": {"M2": 8, "M3": 5, "M1": 7}, "R3": {"M3": 7, "M1": 7, "M2": 6}}
    got = audit(council_event(scores, orders=orders))
    assert got.position_identifiable is True
    assert got.position_effects == pytest.approx({"0": 4 / 3, "1": -2 / 3, "2": -2 / 3})
    assert got.position_score_variance == pytest.approx(4 / 3)  # sample variance of the three effects
    assert got.position_bias_detected is True


def test_leave_one_out_offsets_find_the_harsh_reviewer():
    # R3 scores 2.4 below R1 and R2 on every candidate.
    # R3: each diff = s3 - mean(R1, R2) = -2.4. R1: 8 - (8 + 5.6)/2 = +1.2 on each.
    scores = {
        "R1": {"M1": 8, "M2": 6, "M3": 4},
        "R2": {"M1": 8, "M2": 6, "M3": 4},
        "R3": {"M1": 5.6, "M2": 3.6, "M3": 1.6},
    }
    got = audit(council_event(scores))
    assert got.reviewer_offsets == pytest.approx({"R1": 1.2, "R2": 1.2, "R3": -2.4})
    assert got.harsh_reviewers == ["R3"]
    assert got.generous_reviewers == []
    assert got.reviewer_mean_scores == pytest.approx({"R1": 6.0, "R2": 6.0, "R3": 3.6})


def test_offsets_work_with_two_reviewers_where_the_reference_never_fires():
    bias_audit = pytest.importorskip("llm_council.bias_audit")
    scores = {"R1": {"M1": 8, "M2": 6, "M3": 4}, "R2": {"M1": 5, "M2": 3, "M3": 1}}
    got = audit(council_event(scores))
    assert got.reviewer_offsets == pytest.approx({"R1": 3.0, "R2": -3.0})  # relative, by construction
    assert got.harsh_reviewers == ["R2"] and got.generous_reviewers == ["R1"]
    responses = [{"model": m, "response": "w"} for m in ("M1", "M2", "M3")]
    ref = bias_audit.run_bias_audit(responses, scores, None)
    assert ref.harsh_reviewers == [] and ref.generous_reviewers == []


def test_a_better_candidate_does_not_make_a_reviewer_harsh():
    # Every reviewer agrees: M1 is 3 points better. Reviewer means differ only through which
    # candidates each scored; leave-one-out offsets stay 0.
    scores = {"R1": {"M1": 9, "M2": 6}, "R2": {"M2": 6, "M3": 6}, "R3": {"M1": 9, "M3": 6}}
    got = audit(council_event(scores))
    assert got.reviewer_offsets == pytest.approx({"R1": 0.0, "R2": 0.0, "R3": 0.0})
    assert got.harsh_reviewers == [] and got.generous_reviewers == []


def test_noise_is_not_called_calibration_bias():
    # Offset beyond the threshold, but within the noise: diffs +4, -1, +2 (mean ~1.67). Without
    # a window the noise SD is sigma0 = 1.2: SE = 1.2 sqrt(3 (1 + 1/2)) / 3, one-sided p ~ 0.025,
    # above 0.05 / 3 (Bonferroni over the session's three reviewers).
    scores = {"R1": {"M1": 9, "M2": 4, "M3": 8}, "R2": {"M1": 5, "M2": 5, "M3": 6}, "R3": {"M1": 5, "M2": 5, "M3": 6}}
    got = audit(council_event(scores))
    assert got.reviewer_offsets["R1"] == pytest.approx((4 - 1 + 2) / 3)
    assert got.reviewer_loo_offsets["R1"] == pytest.approx((4 - 1 + 2) / 3)
    se = 1.2 * (3 * 1.5) ** 0.5 / 3
    assert got.reviewer_offset_p_values["R1"] == pytest.approx(sps.norm.sf((4 - 1 + 2) / 3 / se))
    assert 0.05 / 3 < got.reviewer_offset_p_values["R1"] < 0.05
    assert got.generous_reviewers == [] and got.noise_source == "fixed" and got.noise_sd == pytest.approx(1.2)


def self_review_session(**extra):
    # Members M1..M3 review everyone including themselves.
    scores = {"M1": {"M1": 10, "M2": 6, "M3": 5}, "M2": {"M1": 7, "M2": 9, "M3": 5}, "M3": {"M1": 7, "M2": 6, "M3": 5}}
    return council_event(scores, words={"M1": 100, "M2": 50, "M3": 10}, **extra)


def test_self_reviews_are_excluded_and_measured_as_self_preference():
    got = audit(self_review_session())
    # The peer scores are additive with equal reviewers (M1 gets 7, 7; M2 6, 6; M3 5, 5): the
    # two-way predictions of the own cells are 7, 6, 5.
    assert got.self_preference == pytest.approx({"M1": 3.0, "M2": 3.0, "M3": 0.0})
    # One session of three is weak evidence: z = 3 / (1.2 sqrt(2.5)), p ~ 0.057 > 0.05 / 3.
    assert got.self_preference_p_values["M1"] == pytest.approx(sps.norm.sf(3 / (1.2 * 2.5**0.5)))
    assert got.self_preferring_reviewers == []
    # Reviewer means without self-scores: M1 (6+5)/2, M2 (7+5)/2, M3 (7+6)/2.
    assert got.reviewer_mean_scores == pytest.approx({"M1": 5.5, "M2": 6.0, "M3": 6.5})
    expected = sps.pearsonr([100, 50, 10], [7, 6, 5])
    assert got.length_score_correlation == pytest.approx(expected.statistic)
    assert got.length_score_p_value == pytest.approx(expected.pvalue)
    assert got.length_score_spearman == pytest.approx(1.0)
    assert got.length_score_sample_size == 3


def test_abstained_and_ranking_only_reviews_contribute_no_scores():
    extra = [
        {"reviewer": "R9", "ranking": ["Response A", "Response B"]},
        {"reviewer": "R8", "abstained": True, "scores": {"Response A": 1, "Response B": 1}},
    ]
    with_extra = audit(self_review_session(extra_reviews=extra))
    without = audit(self_review_session())
    assert with_extra == without
    assert "R9" not in with_extra.reviewer_mean_scores and "R8" not in with_extra.reviewer_mean_scores


def test_thresholds_scale_with_the_score_scale():
    # 1.5 points on a 1-10 scale (span 9) is 1.5 * 4 / 9 on a 1-5 scale.
    event = council_event({"R1": {"M1": 5, "M2": 4, "M3": 3}, "R2": {"M1": 5, "M2": 4, "M3": 3}})
    event["score_scale"] = "1-5"
    assert audit(event).calibration_threshold == pytest.approx(1.5 * 4 / 9)


def test_length_bias_needs_both_size_and_significance():
    words = {"M1": 10, "M2": 100, "M3": 200, "M4": 300, "M5": 400}
    scores = {r: {"M1": 3, "M2": 4, "M3": 6, "M4": 7, "M5": 9} for r in ("R1", "R2")}
    got = audit(council_event(scores, words=words))
    expected = sps.pearsonr([10, 100, 200, 300, 400], [3, 4, 6, 7, 9])
    assert got.length_score_p_value == pytest.approx(expected.pvalue)
    assert expected.statistic > 0.3 and expected.pvalue < 0.05
    assert got.length_bias_detected is True
    assert got.overall_bias_risk == "medium"
    # Three candidates, r = 0.98 but exact p = 0.11: large, not significant -> not detected.
    few = audit(council_event({"R1": {"M1": 5, "M2": 6.3, "M3": 7}}, words={"M1": 100, "M2": 200, "M3": 300}))
    assert few.length_score_correlation > 0.3 and few.length_score_p_value > 0.05
    assert few.length_bias_detected is False


def test_legacy_labels_take_their_position_from_the_letter():
    event = council_event({"R1": {"M1": 8, "M2": 6}}, shared_order=["M1", "M2"])
    event["label_to_model"] = {"Response A": "M2", "Response B": "M1"}
    event["reviews"][0]["scores"] = {"Response A": 6, "Response B": 8}
    scores = session_scores(CouncilSessionEvent.model_validate(event))
    assert {(o.model, o.position, o.score) for o in observations(scores)} == {("M2", 0, 6.0), ("M1", 1, 8.0)}


def test_self_preference_p_is_the_upper_prediction_tail():
    # M1 gives itself 10; its peers give it 6, 7, 8. The own score against the two-way fit's
    # prediction for that cell (explicit dummies, numpy's lstsq), at sigma0, one-sided.
    scores = {
        "M1": {"M1": 10, "M2": 5, "M3": 5, "M4": 5},
        "M2": {"M1": 6, "M2": 5, "M3": 5, "M4": 5},
        "M3": {"M1": 7, "M2": 5, "M3": 5, "M4": 5},
        "M4": {"M1": 8, "M2": 5, "M3": 5, "M4": 5},
    }
    got = audit(council_event(scores))
    peers = {r: {m: s for m, s in row.items() if m != r} for r, row in scores.items()}
    prediction = two_way_prediction(peers, "M1", "M1")
    assert prediction is not None
    predicted, factor = prediction
    assert got.self_preference["M1"] == pytest.approx(10 - predicted)
    p = sps.norm.sf((10 - predicted) / (1.2 * (1 + factor) ** 0.5))
    assert got.self_preference_p_values["M1"] == pytest.approx(p, rel=1e-9)
    assert p > 0.05 / 4 and got.self_preferring_reviewers == []  # a few points, but weak evidence


def test_a_strong_self_preference_in_a_council_of_five_is_flagged():
    # Everyone scores every peer 6; M1 gives itself 10: 4 points over a prediction of 6,
    # z = 4 / (1.2 sqrt(1 + 7/12)) ~ 2.65, p ~ 0.004 < 0.05 / 5.
    names = ["M1", "M2", "M3", "M4", "M5"]
    scores = {r: {m: 10.0 if r == m == "M1" else 6.0 for m in names} for r in names}
    got = audit(council_event(scores))
    assert got.self_preference["M1"] == pytest.approx(4.0)
    assert got.self_preference_p_values["M1"] == pytest.approx(sps.norm.sf(4 / (1.2 * (1 + 7 / 12) ** 0.5)))
    assert got.self_preferring_reviewers == ["M1"]
