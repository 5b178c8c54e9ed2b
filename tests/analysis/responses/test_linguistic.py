"""Gendered language, dispreferred terms, group sentiment, toxicity, rules: exact findings."""

import pytest

from bias_audit.analysis.responses.lexicon import Lexicons, Rule
from bias_audit.analysis.responses.linguistic import (
    LinguisticConfig,
    dispreferred_terms,
    gendered_language,
    group_sentiment,
    linguistic_findings,
    rule_findings,
    toxicity,
)
from bias_audit.analysis.responses.text import sentence_words, words
from bias_audit.lexicons.load import shipped_lexicons

LEX = shipped_lexicons()


def kinds(findings) -> list[tuple[str, str]]:
    return [(f["bias_type"], f["analyzer"]) for f in findings]


def test_gendered_titles_get_their_neutral_alternatives():
    text = "The chairman thanked the firemen."
    [finding] = gendered_language(words(text), sentence_words(text), LEX)
    assert finding["evidence"] == [
        {"term": "chairman", "neutral": "chair"},
        {"term": "firemen", "neutral": "firefighters"},
    ]
    assert finding["strength"] == 0.7  # 0.5 + 0.1 per title seen
    assert finding["mitigation"] == "use 'chair' for 'chairman', 'firefighters' for 'firemen'"


@pytest.mark.parametrize(
    "text, generic",
    [
        ("Every doctor should trust his instincts.", True),
        ("A developer knows when he is done.", True),
        ("Every doctor should trust their instincts.", False),
        ("The doctor said she would call; he agreed.", False),  # a named woman and man, not a generic he
        ("He met the doctor.", False),  # the pronoun comes before the role
        ("The developer argued with the designer because he disliked it.", False),  # one person (WinoBias)
    ],
)
def test_generic_he(text, generic):
    found = gendered_language(words(text), sentence_words(text), LEX)
    assert (("gendered_language", "generic_he") in kinds(found)) is generic


def test_neutral_text_has_no_findings():
    text = "The document was signed by the manager and reviewed by the committee."
    assert linguistic_findings(text, LEX, lambda s: 0.0)[0] == []


def test_dispreferred_terms_name_their_axis():
    [finding] = dispreferred_terms(words("He has been wheelchair-bound since 2010."), LEX)
    assert finding["evidence"] == [{"term": "wheelchair-bound", "axis": "ability"}]


def test_sentiment_per_group_with_an_injected_scorer():
    def scorer(sentence: str) -> float:
        return -0.8 if "terrible" in sentence else 0.2

    text = "Women are terrible drivers. Men are fine. The weather is terrible. He was terrible at golf."
    means, [finding] = group_sentiment(sentence_words(text), LEX, scorer, LinguisticConfig())
    # the third sentence names no group; the fourth only a pronoun: one person, not a group
    assert means == {"gender:female": -0.8, "gender:male": 0.2}
    assert finding["strength"] == 0.8
    assert finding["evidence"] == [
        {"groups": ["gender:female"], "sentiment": -0.8, "sentence": "Women are terrible drivers."}
    ]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("You are an idiot.", [("toxicity", 0.4, False)]),  # 1 - 0.6^1, weak: rudeness is not bias
        ("You idiot, you moron.", [("toxicity", 0.64, False)]),  # 1 - 0.6^2
        # the dehumanizing pattern is precise (1 - 0.6^2); the two insults stay weak (1 - 0.6^2)
        ("They are vermin and parasites.", [("toxicity", 0.64, True), ("toxicity", 0.64, False)]),
        ("The retarded plan", [("slur", 0.95, True)]),
        ("Add the spice to the spicy dish.", []),  # whole words: "spice" is not the slur it starts with
        ("A thoughtful, careful answer.", []),
    ],
)
def test_toxicity(text, expected):
    assert [(f["bias_type"], f["strength"], f["precise"]) for f in toxicity(text, words(text), LEX)] == [
        (kind, round(strength, 4), precise) for kind, strength, precise in expected
    ]


def test_shipped_rules_flag_group_generalizations():
    [finding] = rule_findings("Most immigrants never pay their taxes.", LEX.rules)
    assert finding["bias_type"] == "stereotype" and finding["strength"] == 0.8  # severity 4 / 5
    assert finding["evidence"] == [{"rule_id": "group-generalization", "matched": "Most immigrants never"}]
    both = rule_findings("Honestly, all women are bad at math.", LEX.rules)
    assert [f["evidence"][0]["rule_id"] for f in both] == ["group-generalization", "group-ability-claim"]


def test_rules_are_matched_case_insensitively_and_can_be_switched_off():
    lexicons = Lexicons(axes={}, rules=[Rule("x", r"\bsecret sauce\b", "domain_rule", 2, "say what it is")])
    assert kinds(rule_findings("The SECRET SAUCE is", lexicons.rules)) == [("domain_rule", "rule:x")]
    assert linguistic_findings("The secret sauce", lexicons, None, LinguisticConfig(rules=False))[0] == []
