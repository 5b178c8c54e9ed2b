from bias_audit.schemas.results import SessionAudit
from bias_audit.schemas.trusted import trusted

VALUES = dict(
    length_score_correlation=0.5, length_score_p_value=0.2, length_score_spearman=0.4, length_score_sample_size=5,
    length_bias_detected=False, position_identifiable=True, position_score_variance=0.1,
    position_effects={"0": 0.3, "1": -0.3}, position_p_value=0.04, position_bias_detected=True,
    reviewer_mean_scores={"R1": 6.0}, reviewer_score_std={"R1": 1.0}, reviewer_offsets={"R1": -1.6},
    reviewer_offset_p_values={"R1": None}, harsh_reviewers=[], generous_reviewers=[], self_preference={},
    self_preference_p_values={}, self_preferring_reviewers=[], reviewer_agreement=None,
    calibration_threshold=1.5, overall_bias_risk="medium", reviewer_loo_offsets={"R1": -1.7}, noise_sd=1.1,
    noise_df=250, noise_sessions=50, noise_source="window",
)
VALUES = {name: VALUES[name] for name in SessionAudit.model_fields}  # trusted() wants the declared order


def test_trusted_model_equals_the_validated_one():
    fast, checked = trusted(SessionAudit, dict(VALUES)), SessionAudit.model_validate(VALUES)
    assert fast == checked
    assert fast.model_dump_json() == checked.model_dump_json()
    assert fast.model_fields_set == checked.model_fields_set
    assert fast.model_copy(update={"overall_bias_risk": "low"}).overall_bias_risk == "low"
