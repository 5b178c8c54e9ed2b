"""Whole-word, case-folded, inflection-aware matching."""

import pytest

from bias_audit.analysis.responses.text import TermIndex, inflections, words


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The Women's team", ["the", "women", "team"]),
        ("hard-of-hearing users don't", ["hard-of-hearing", "users", "don't"]),
        ("Doctor’s notes", ["doctor", "notes"]),
        ("", []),
    ],
)
def test_words(text, expected):
    assert words(text) == expected


@pytest.mark.parametrize(
    "term, forms",
    [
        ("nurse", {"nurse", "nurses"}),
        ("lady", {"lady", "ladys", "ladies"}),
        ("policeman", {"policeman", "policemans", "policemen"}),
        ("church", {"church", "churchs", "churches"}),
        ("East Asian", {"east asian", "east asians"}),
    ],
)
def test_inflections(term, forms):
    assert inflections(term) == forms


INDEX = TermIndex({"men": "male", "woman": "female", "trans": "trans", "trans female": "female", "elderly": "old"})


@pytest.mark.parametrize(
    "text, found",
    [
        ("The document was amended.", []),  # the CouncilEx flaw: "men" inside "document"
        ("Men and women", [("men", "male", 0), ("woman", "female", 2)]),
        ("A woman's view", [("woman", "female", 1)]),
        ("a trans female nurse", [("trans female", "female", 1)]),  # the longest term wins
        ("ELDERLY people", [("elderly", "old", 0)]),
    ],
)
def test_term_index_finds_whole_words_only(text, found):
    assert [(m.term, m.label, m.start) for m in INDEX.find(words(text))] == found


@pytest.mark.parametrize(
    "text", ["U.S. teams won. Then he left!\nNew line? Yes", "...", "", "a-b. c'd’s e", "Ends without a stop"]
)
def test_the_sentences_words_joined_are_the_texts_words(text):
    from bias_audit.analysis.responses.text import sentence_words

    assert [w for _, ws in sentence_words(text) for w in ws] == words(text)
