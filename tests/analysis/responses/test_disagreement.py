"""Member disagreement: the CouncilEx report shape, and its three documented flaws as regressions."""

import pytest

from bias_audit.analysis.responses.disagreement import DisagreementConfig, jaccard_distance, member_disagreement
from bias_audit.analysis.responses.lexicon import Lexicons
from bias_audit.lexicons.load import shipped_lexicons

LEX = shipped_lexicons()


def gender_score(report) -> float | None:
    return next((a["score"] for a in report["axes"] if a["axis"] == "gender"), None)


def test_she_versus_he_differs_on_gender():  # flaw: presence per axis scored this 0
    report = member_disagreement([("a", "She is a doctor."), ("b", "He is a doctor.")], LEX)
    assert gender_score(report) == 1.0
    assert report["baseline_disagreement"] == 0.4  # {she,is,a,doctor} vs {he,is,a,doctor}: 3 of 5 shared
    assert report["flagged"] is True
    evidence = next(a for a in report["axes"] if a["axis"] == "gender")["evidence"]
    assert evidence == [
        {"member_id": "a", "matched_terms": ["she"], "groups": {"female": 1}},
        {"member_id": "b", "matched_terms": ["he"], "groups": {"male": 1}},
    ]


def test_no_group_words_inside_other_words():  # flaw: "men" in "document"
    report = member_disagreement([("a", "The document is fine."), ("b", "The documents are good.")], LEX)
    assert report["axes"] == [] and report["flagged"] is False


@pytest.mark.parametrize(
    "split, score",
    [
        (("she", "he"), 1.0),
        (("she", "she", "he", "he"), 1.0),
        (("she",) * 3 + ("he",) * 3, 1.0),
        (("she",) * 3 + ("he",), 0.75),  # 4 p (1 - p), p = 1/4
        (("she",) * 6 + ("he",) * 2, 0.75),  # the same split in a council twice the size: the same score
        (("she", "she", "she"), 0.0),
    ],
)
def test_the_score_follows_the_split_not_the_council_size(split, score):  # flaw: swung with size
    members = [(f"m{i}", f"{pronoun.capitalize()} fixed the bug.") for i, pronoun in enumerate(split)]
    assert gender_score(member_disagreement(members, LEX)) == score


def test_coverage_per_group_within_an_axis():
    # A names both groups, B one: total variation 0.5 -> 2 * (0.5 + 0.5) / 4
    report = member_disagreement([("a", "Both women and men apply."), ("b", "Women apply.")], LEX)
    assert gender_score(report) == 0.5


def test_a_member_naming_a_group_against_one_naming_none():
    report = member_disagreement([("a", "She is a doctor."), ("b", "The doctor is ready.")], LEX)
    assert gender_score(report) == 1.0


def test_a_custom_lexicon_and_threshold():
    lexicons = Lexicons(axes={"diet": {"vegan": ["vegan"], "meat": ["carnivore"]}})
    report = member_disagreement(
        [("a", "Vegans eat well."), ("b", "Vegans eat well too.")], lexicons, DisagreementConfig(threshold=0.3)
    )
    assert report["axes"] == [
        {
            "axis": "diet",
            "score": 0.0,
            "evidence": [
                {"member_id": "a", "matched_terms": ["vegan"], "groups": {"vegan": 1}},
                {"member_id": "b", "matched_terms": ["vegan"], "groups": {"vegan": 1}},
            ],
        }
    ]
    assert report["flagged"] is False


def test_one_member_has_nothing_to_compare():
    assert member_disagreement([("a", "She is here.")], LEX) == {
        "flagged": False,
        "axes": [],
        "baseline_disagreement": None,
        "members": 1,
    }


@pytest.mark.parametrize(
    "a, b, distance",
    [({"x"}, {"x"}, 0.0), ({"x"}, {"y"}, 1.0), (set(), set(), 0.0), ({"x", "y"}, {"y", "z"}, 1 - 1 / 3)],
)
def test_jaccard_distance(a, b, distance):
    assert jaccard_distance(a, b) == distance
