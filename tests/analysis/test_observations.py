import random

import pytest

from bias_audit.analysis.observations import count_words
from tests import text_oracle

# the compiled counter (analysis/_text.c) and its Python mirror, both against str.split
COUNTERS = pytest.mark.parametrize("counter", [count_words, text_oracle.count_words], ids=["compiled", "mirror"])


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
        ("next\x85line", 2),  # U+0085 is whitespace: a one-byte (Latin-1) string that is not ASCII
        ("emoji \U0001f600 and\u2028line", 4),  # a four-byte string; U+2028 separates
        (" lone", 1),
        ("lone ", 1),
    ],
)
@COUNTERS
def test_count_words_table(counter, text, words):
    assert counter(text) == words


@COUNTERS
def test_every_ascii_character_separates_words_as_str_split_does(counter):
    for code in range(128):
        for text in (chr(code), f"a{chr(code)}b", f"{chr(code) * 3}x", f"x{chr(code)}"):
            assert counter(text) == len(text.split()), (code, text)


@COUNTERS
def test_count_words_agrees_with_str_split_on_random_text(counter):
    rng = random.Random(7)
    alphabets = [
        "ab .\t\n\r\x0b\x0c\x1c\x1f\x7f",
        "ab .\t\x85\xa0é\xff",
        "ab .\t\u00a0\u2003\u3000\u200b",
        "ab .\t\u3000\U0001f600\U00010000",
    ]
    for _ in range(5000):
        alphabet = rng.choice(alphabets)
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        assert counter(text) == len(text.split()), repr(text)


def test_the_compiled_word_counter_refuses_what_is_not_text():
    with pytest.raises(TypeError, match="str"):
        count_words(b"bytes are not text")  # type: ignore[arg-type]
