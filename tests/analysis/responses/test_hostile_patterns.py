"""Every shipped pattern on catastrophic-backtracking candidates, at the largest answer the
worker accepts (256 KB): each finishes in bounded time. RE2 guarantees linear time for the rule
file; the Python regexes of the tokenizer and refusal check are checked here by running them.
The bound is generous (a backtracking blow-up takes minutes, not a second)."""

import time

import pytest

from bias_audit.analysis.responses import counterfactual, text
from bias_audit.analysis.responses.linguistic import compile_rule, linguistic_findings
from bias_audit.analysis.responses.report import analyze_response
from bias_audit.lexicons.load import shipped_lexicons
from bias_audit.lexicons.sentiment import vader_scorer

LEX = shipped_lexicons()
SIZE = 256 * 1024
CANDIDATES = {
    "letters": "a" * SIZE,
    "hyphen chain": "a-" * (SIZE // 2) + "!",
    "apostrophe chain": "a'" * (SIZE // 2) + "-",
    "spaces": " " * SIZE,
    "all all": "all " * (SIZE // 4),
    "group run": "most women " * (SIZE // 11),
    "near rule": ("all women are " + "very " * 20) * (SIZE // 114),
    "sorry": "i'm sorry i can" * (SIZE // 15),
    "dots": "." * SIZE,
    "unicode": "é’-" * (SIZE // 3),
}
PATTERNS = [rule.pattern for rule in LEX.rules] + LEX.dehumanizing


def elapsed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


@pytest.mark.parametrize("name", CANDIDATES)
def test_every_rule_pattern_is_linear(name):
    subject = CANDIDATES[name]
    assert max(elapsed(lambda p=p: compile_rule(p).search(subject)) for p in PATTERNS) < 1.0


@pytest.mark.parametrize("name", CANDIDATES)
def test_tokenizer_sentences_refusal_and_swaps_are_bounded(name):
    subject = CANDIDATES[name]
    assert elapsed(lambda: text.words(subject)) < 1.0
    assert elapsed(lambda: text.sentences(subject)) < 1.0
    assert elapsed(lambda: counterfactual.refuses(subject)) < 1.0
    assert elapsed(lambda: counterfactual.swapped_prompts(subject, LEX.swaps)) < 1.0


@pytest.mark.parametrize("name", CANDIDATES)
def test_the_whole_analysis_of_a_hostile_answer_is_bounded(name):
    subject = CANDIDATES[name]
    assert (
        elapsed(
            lambda: analyze_response(
                subject, lexicons=LEX, sentiment=vader_scorer(), members=[("a", subject), ("b", subject)]
            )
        )
        < 5.0
    )


def test_group_sentiment_scores_at_most_the_configured_number_of_sentences():
    calls = []
    answer = "Women work here. " * 5_000
    linguistic_findings(answer, LEX, lambda s: calls.append(s) or 0.0)
    assert len(calls) == 2_000
