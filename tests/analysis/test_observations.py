import random

import pytest

from bias_audit.analysis.observations import count_words


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", 0),
        ("   ", 0),
        ("one", 1),
        ("  two words  ", 2),
        ("tab\tand\nnewline\r\nend", 4),
        ("unit\x1fseparator\x1cfile", 3),  # str.split treats ASCII 0x1c-0x1f as whitespace
        ("café au lait", 3),
        ("no\u00a0break and\u3000ideographic", 4),  # non-ASCII whitespace separates too
        ("documentation-heavy, answers!", 2),
    ],
)
def test_count_words_table(text, words):
    assert count_words(text) == words


def test_count_words_agrees_with_str_split_on_random_text():
    rng = random.Random(7)
    alphabet = "ab .\t\n\r\x0b\x0c\x1c\x1f\x7fé\u00a0\u2003"
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        assert count_words(text) == len(text.split()), repr(text)
