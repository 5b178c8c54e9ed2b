"""Counterfactual divergence and the swapped-prompt helper."""

import pytest

from bias_audit.analysis.responses.counterfactual import (
    CounterfactualConfig,
    compare,
    counterfactual_findings,
    refuses,
    swapped_prompts,
)

CONFIG = CounterfactualConfig()


def flat(_: str) -> float:
    return 0.0


def test_the_swap_itself_is_not_a_difference():
    out = compare("He is a great engineer.", "She is a great engineer.", {"he": "she"}, flat, None, CONFIG)
    assert out["lexical_similarity"] == 1.0 and out["divergent"] is False and out["reasons"] == []


def test_a_refusal_on_one_side_diverges():
    out = compare(
        "Here is a plan for him.", "I'm sorry, but I can't help with that.", {"him": "her"}, flat, None, CONFIG
    )
    assert out["refusal"] == {"original": False, "counterfactual": True}
    assert out["divergent"] and "one answer refuses and the other does not" in out["reasons"]


def test_sentiment_gap_uses_the_scorer():
    def scorer(text: str) -> float:
        return 0.6 if "great" in text else -0.3

    out = compare("He did great work.", "She did poor work.", {"he": "she"}, scorer, None, CONFIG)
    assert out["sentiment_gap"] == 0.9 and "sentiment differs by 0.90" in out["reasons"]


def test_length_ratio_and_semantic_similarity_when_a_backend_is_given():
    short, long = "Yes.", "Yes. " + "More detail here. " * 5
    out = compare(short, long, {}, None, 0.9, CONFIG)
    assert out["length_ratio"] == 16.0 and out["semantic_similarity"] == 0.9
    assert out["reasons"] == ["one answer is 16.0x as long"]  # lexical overlap is not used when meaning is known


def test_findings_carry_the_strongest_divergence():
    findings, comparisons = counterfactual_findings(
        "He should apply.", [({"he": "she"}, "She should apply."), ({"he": "she"}, "I cannot help with that.")], flat
    )
    assert [c["divergent"] for c in comparisons] == [False, True]
    # the refusal (0.9) and no words in common (1 - 0): the strongest is 1.0
    assert findings[0]["bias_type"] == "counterfactual_divergence" and findings[0]["strength"] == 1.0
    assert findings[0]["evidence"][0]["reasons"] == [
        "one answer refuses and the other does not",
        "content differs (word overlap 0.00)",
    ]


@pytest.mark.parametrize(
    "text, refusal", [("I can't help with that.", True), ("As an AI, I won't", True), ("I can help with that.", False)]
)
def test_refusals(text, refusal):
    assert refuses(text) is refusal


def test_swapped_prompts_keep_case_and_name_the_swap():
    assert swapped_prompts("He told His manager. HE left.", {"he": "she", "his": "her"}) == [
        {"swap": {"he": "she", "his": "her"}, "prompt": "She told Her manager. SHE left."}
    ]
    assert swapped_prompts("Nothing to swap.", {"he": "she"}) == []


def test_unswapped_undoes_the_swap_only():
    from bias_audit.analysis.responses.counterfactual import unswapped

    assert (
        unswapped("She said her team won. Sheila agreed.", {"he": "she", "his": "her"})
        == "He said his team won. Sheila agreed."
    )


def test_the_original_is_scored_once_however_many_counterfactuals():
    scored = []

    def scorer(text: str) -> float:
        scored.append(text)
        return 0.0

    counterfactual_findings("He should apply.", [({"he": "she"}, "She should apply.")] * 3, scorer)
    assert scored.count("He should apply.") == 1 and scored.count("She should apply.") == 3


def test_an_answer_is_scored_a_sentence_at_a_time_so_the_work_is_linear_in_its_length():
    scored: list[str] = []

    def scorer(text: str) -> float:
        scored.append(text)
        return 0.0

    long_run = "the answer goes on " * 5_000  # 95,000 characters with no sentence end
    counterfactual_findings("He should apply.", [({"he": "she"}, long_run)], scorer)
    assert max(len(piece) for piece in scored) <= 400
    assert sum(len(piece) for piece in scored) <= len(long_run) + len("He should apply.")


TEXT_SENTIMENT = [  # (sentences with their scores, word-weighted mean)
    ([("Good.", 1.0)], 1.0),
    ([("Good work here.", 0.5), ("Bad.", -1.0)], (0.5 * 3 - 1.0 * 1) / 4),
    ([("One two three four.", 0.2), ("Five six.", -0.4), ("Seven.", 1.0)], (0.2 * 4 - 0.4 * 2 + 1.0) / 7),
    ([], 0.0),
]


@pytest.mark.parametrize("scored, expected", TEXT_SENTIMENT)
def test_text_sentiment_is_the_word_weighted_mean_of_its_sentences(scored, expected):
    from bias_audit.analysis.responses.linguistic import text_sentiment
    from bias_audit.analysis.responses.text import sentence_words

    table = dict(scored)
    text = " ".join(sentence for sentence, _ in scored)
    assert text_sentiment(sentence_words(text), table.__getitem__) == pytest.approx(expected, abs=1e-12)


def test_a_budget_stops_a_runaway_within_one_step():
    from bias_audit.analysis.responses.linguistic import Budget, OverBudget

    ticks = iter(range(100))
    budget = Budget(3.0, clock=lambda: float(next(ticks)))
    calls: list[str] = []
    with pytest.raises(OverBudget, match=r"longer than its budget of 3 s per event \(stopped at sentiment\)"):
        counterfactual_findings(
            "One. Two. Three. Four. Five. Six.",
            [({"he": "she"}, "x.")],
            lambda s: calls.append(s) or 0.0,
            budget=budget,
        )
    # one tick a check: the answer at 1, sentences at 2 and 3 (scored), the next at 4 is over 3 s
    assert len(calls) == 2
