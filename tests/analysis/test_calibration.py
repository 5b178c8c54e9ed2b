"""Calibration: pool adjacent violators by hand, and simulated reviews whose true confirm
probability is known: the calibrated confidence beats reading the evidence as a probability."""

from __future__ import annotations

import json
import random

import pytest

from bias_audit.analysis.calibration import Calibration, Reviewed, brier, fit_calibration, isotonic, reliability
from bias_audit.analysis.responses.report import ResponseVerdict


@pytest.mark.parametrize(
    ("x", "y", "expected"),
    [
        ([1, 2, 3, 4], [0, 0, 1, 1], ([1, 2, 3, 4], [0, 0, 1, 1])),  # already monotone: one point each
        ([1, 2, 3, 4], [1, 3, 2, 4], ([1, 2, 3, 4], [1, 2.5, 2.5, 4])),  # 3, 2 pooled to 2.5
        ([1, 2, 3], [1, 0, 0], ([1, 3], [1 / 3, 1 / 3])),  # all pooled: the mean, held over the whole range
        ([2, 1, 2, 1], [1, 0, 0, 1], ([1, 2], [0.5, 0.5])),  # equal x share one value, unsorted input
    ],
)
def test_pool_adjacent_violators_by_hand(x, y, expected):
    got_x, got_y = isotonic(x, y)
    assert (got_x, got_y) == (expected[0], pytest.approx(expected[1]))


def test_brier_and_reliability_by_hand():
    assert brier([0.8, 0.2], [True, False]) == pytest.approx(0.04)  # ((0.2)^2 + (0.2)^2) / 2
    rows = reliability([0.1, 0.15, 0.9], [False, True, True], bins=2)
    assert rows == [
        {"bin": "0.0-0.5", "n": 2, "predicted": 0.125, "observed": 0.5},
        {"bin": "0.5-1.0", "n": 1, "predicted": 0.9, "observed": 1.0},
    ]


def simulated(n: int, seed: int, truth) -> list[Reviewed]:
    rng = random.Random(seed)
    rows = []
    for index in range(n):
        evidence = rng.random()
        rows.append(Reviewed(f"item-{seed}-{index}", "gendered_language", evidence, rng.random() < truth(evidence)))
    return rows


def test_calibrated_confidence_beats_the_rule_on_held_out_reviews():
    truth = lambda s: s**3
    calibration, report = fit_calibration(simulated(2000, 3, truth), min_reviews=30)
    [entry] = report
    assert entry["calibrated"] and entry["test"] > 400
    assert entry["brier_after"] < entry["brier_before"] - 0.03
    for row in entry["reliability_after"]:  # predicted within sampling noise of what reviewers did
        noise = 3 * (row["predicted"] * (1 - row["predicted"]) / row["n"]) ** 0.5
        assert abs(row["predicted"] - row["observed"]) < noise + 0.03, row
    fitted = calibration.types["gendered_language"]
    for evidence in (0.2, 0.5, 0.8, 0.95):
        assert fitted.probability(evidence) == pytest.approx(truth(evidence), abs=0.1)


def test_too_few_reviews_keep_the_rule_and_the_verdict_says_which_version():
    calibration, report = fit_calibration(
        simulated(20, 4, lambda s: s) + [Reviewed(f"t-{i}", "toxicity", 0.9, True) for i in range(40)], min_reviews=30
    )
    assert {e["bias_type"]: e["calibrated"] for e in report} == {"gendered_language": False, "toxicity": True}
    verdict = ResponseVerdict(
        bias_detected=True,
        bias_type=["gendered_language", "toxicity"],
        bias_score={"gendered_language": 0.7, "toxicity": 0.9},
        bias_confidence_score=0.77,
        mitigation_action="rewrite",
        overall_bias_risk="medium",
        bias_report_summary={},
    )
    adjusted = calibration.adjust(verdict)
    # toxicity: every review confirmed -> 1.0; gendered language uncalibrated keeps the rule's 0.77
    assert adjusted.bias_confidence_score == 1.0
    assert adjusted.bias_report_summary["calibration"] == {
        "version": calibration.version,
        "confirm_probability": {"toxicity": 1.0},
    }
    again = Calibration.from_document(calibration.to_document())
    assert again == calibration and again.version.startswith("cal-")
    with pytest.raises(ValueError, match="sorted"):
        Calibration.from_document({"version": "x", "types": {"t": {"x": [0.5, 0.1], "y": [0.1, 0.2]}}})


@pytest.mark.parametrize(
    "document, named",
    [
        ({"version": "1", "types": [1, 2]}, "types: input should be a valid dictionary"),
        ({"version": "1", "types": {"toxicity": {"x": [0, 1], "y": [0, "half"]}}}, "types.toxicity.y.1"),
        ({"version": "1", "types": {"toxicity": {"x": [0, 1], "y": [0, 2]}}}, "types.toxicity.y.1"),
        ({"version": "1", "types": {"toxicity": {"x": [0, float("inf")], "y": [0, 1]}}}, "not valid json"),
        ([1], "input should be a valid dictionary"),
    ],
)
def test_a_calibration_file_of_the_wrong_shape_is_one_line_naming_the_field(tmp_path, document, named):
    from bias_audit.schemas.errors import CommandError
    from bias_audit.worker.composition import load_calibration

    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(document))
    with pytest.raises(CommandError) as refused:
        load_calibration(path)
    assert named in str(refused.value).lower() and "\n" not in str(refused.value)


def test_a_calibration_document_with_infinity_is_refused_naming_the_value():
    with pytest.raises(ValueError, match=r"types\.toxicity\.x\.1"):
        Calibration.from_document({"version": "1", "types": {"toxicity": {"x": [0, float("inf")], "y": [0, 1]}}})


def test_a_learned_detector_file_with_a_map_where_a_list_belongs_is_refused(tmp_path):
    from bias_audit.analysis.learned_detector import LearnedDetector

    with pytest.raises(ValueError, match="coef"):
        LearnedDetector.from_document(
            {"version": "1", "types": {"t": {"vocabulary": {"a": 0}, "idf": [1.0], "coef": {"a": 1}, "intercept": 0.0}}}
        )
    with pytest.raises(ValueError, match="intercept"):
        LearnedDetector.from_document(
            {
                "version": "1",
                "types": {"t": {"vocabulary": {"a": 0}, "idf": [1.0], "coef": [1.0], "intercept": float("nan")}},
            }
        )
