"""Python mirrors of analysis/_text.c, the only production path for its loops: the tests compare
the compiled functions with these, line for line in what they compute."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from itertools import count

import numpy as np

# str.split()'s whitespace within ASCII -> b" ", every other byte -> b"x".
_WORD_BYTES = bytes((32 if chr(c).isspace() else 120) if c < 128 else 120 for c in range(256))
_WORD = re.compile(r"\w+")


def count_words(text: str) -> int:
    """len(text.split()), counted from the word starts of the ASCII text."""
    if text.isascii():
        marks = text.encode("ascii").translate(_WORD_BYTES)
        return marks.count(b" x") + (marks[:1] == b"x")
    return len(text.split())


def normalized_ascii(text: str) -> bytes | None:
    """The fingerprint's normalized ASCII text; None for any other (Unicode's rules apply there)."""
    if not text.isascii():
        return None
    return " ".join(text.lower().split()).encode("ascii")


def words_of(text: str) -> list[bytes]:
    return [word.encode("utf-8", "surrogatepass") for word in _WORD.findall(text.lower())]


def pair_similarities(texts: Sequence[str]) -> np.ndarray:
    """Cosines of every two texts' word 1-2-gram count vectors; nan where a text has no words.
    Integer counts and dot products (exact in any order), then dot / sqrt(norm_i * norm_j)."""
    vocabulary: defaultdict[bytes, int] = defaultdict(count().__next__)
    ids = [np.fromiter(map(vocabulary.__getitem__, words_of(text)), dtype=np.int64) for text in texts]
    n, words = len(texts), max(len(vocabulary), 1)
    word_rows = np.repeat(np.arange(n), [len(i) for i in ids])
    unigrams = np.bincount(word_rows * words + np.concatenate(ids), minlength=n * words).reshape(n, words)
    pair_codes = np.concatenate([first[:-1] * words + first[1:] for first in ids])
    pair_rows = np.repeat(np.arange(n), [max(len(i) - 1, 0) for i in ids])
    pair_terms, pair_column = np.unique(pair_codes, return_inverse=True)
    width = max(len(pair_terms), 1)
    bigrams = np.bincount(pair_rows * width + pair_column, minlength=n * width).reshape(n, width)
    unigram_matrix, bigram_matrix = unigrams.astype(np.float64), bigrams.astype(np.float64)
    gram = unigram_matrix @ unigram_matrix.T + bigram_matrix @ bigram_matrix.T
    norms = np.diag(gram)
    with np.errstate(divide="ignore", invalid="ignore"):
        cosines: np.ndarray = gram / np.sqrt(np.outer(norms, norms))
    return cosines
