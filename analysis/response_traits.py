"""What the council-bias analytics need of each answer's text, computed at audit time so the text
itself is never stored: a keyed fingerprint (the same content seen again: self-consistency), the
lexical similarity of each scored answer to the reviewer's own answer (style mimicry), and the
answer's correctness when the event knows it.

Similarity is by default the cosine of word 1- and 2-gram count vectors (lower-cased \\w+ words):
lexical, cheap enough for the hot path and with no model to load. With the embedding extra
(BIAS_AUDIT_EMBEDDINGS=true) it is the cosine of the answers' MiniLM sentence embeddings, given
here as vectors (clipped at 0: the store keeps 0-1).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._text import cosine_matrix, normalized_ascii
from .observations import SessionScores

# Used when the operator configured no secret: the fingerprint then only says "same text", and
# whoever holds a candidate text can recompute it (documented in the README).
DEFAULT_FINGERPRINT_KEY = b"bias-audit response fingerprint v1"
# 64 bits: two different answers collide with probability ~N^2 / 2^65 (3e-6 at ten million
# answers), and the store keeps it in 8 bytes
FINGERPRINT_HEX = 16
SIMILARITY_DIGITS = 4  # the store keeps ten-thousandths in two bytes

_WORD = re.compile(r"\w+")


def normalized_text(text: str) -> str:
    """Case and whitespace do not make different content."""
    return " ".join(text.lower().split())


def response_fingerprint(text: str, key: bytes | None = None) -> str:
    """Keyed HMAC-SHA256 of the normalized text, truncated; never reversible to the text."""
    normalized = normalized_ascii(text)
    if normalized is None:  # Unicode's lower() and whitespace
        normalized = normalized_text(text).encode("utf-8", "surrogatepass")
    digest = hmac.new(key or DEFAULT_FINGERPRINT_KEY, normalized, hashlib.sha256)
    return digest.hexdigest()[:FINGERPRINT_HEX]


# ASCII text: every byte that \w does not match -> a space, A-Z -> a-z; bytes.split() then gives
# exactly what \w+ finds in the lower-cased text, without a string per word
_ASCII_WORDS = bytes(
    c + 32 if 65 <= c <= 90 else c if chr(c).isalnum() and c < 128 or c == 95 else 32 for c in range(256)
)


def word_bytes(text: str) -> bytes:
    """The lower-cased text's words (the regular expression \\w+), UTF-8 encoded and separated
    by spaces (no word holds one: UTF-8 continuation bytes are >= 0x80): cosine_matrix's input."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORDS)
    return b" ".join(word.encode("utf-8", "surrogatepass") for word in _WORD.findall(text.lower()))


def similarity_rows(texts: Sequence[str]) -> list[list[float]]:
    """Cosines of every two texts' word 1-2-gram count vectors (scikit-learn's
    CountVectorizer(ngram_range=(1, 2)) counts) as rows of a matrix; nan where a text has no words."""
    return cosine_matrix([word_bytes(text) for text in texts])


@dataclass(frozen=True, slots=True)
class ResponseTraits:
    fingerprints: tuple[str, ...]  # per model of SessionScores.models
    correct: tuple[bool | None, ...]  # per model; () when the event says nothing
    similarity: tuple[float | None, ...]  # per cell of SessionScores.cells, in its order


def response_traits(
    scores: SessionScores,
    texts: Sequence[str],
    correct: Sequence[bool | None],
    key: bytes | None = None,
    embeddings: np.ndarray | None = None,
) -> ResponseTraits:
    """`texts` and `correct` per model of scores.models (and `embeddings`, unit vectors, per model
    when semantic). A cell's similarity is that of the scored answer to the reviewer's own answer
    in the session: None for a self-review or a reviewer with no answer of its own."""
    models = {name: i for i, name in enumerate(scores.models)}
    reviewers = scores.reviewers
    authors = {r for r, name in enumerate(reviewers) if name in models}
    cosines: list[list[float]] | None = None  # of every two answers, when a cell needs one

    similarity: list[float | None] = []
    pairs: dict[tuple[int, int], float | None] = {}
    for r, m, _, _, own in scores.cell_tuples():
        reviewer, model = int(r), int(m)
        if own or reviewer not in authors:
            similarity.append(None)
            continue
        mine = models[reviewers[reviewer]]
        pair = (min(mine, model), max(mine, model))
        if pair not in pairs:
            if embeddings is not None:
                value = min(max(float(embeddings[mine] @ embeddings[model]), 0.0), 1.0)
            else:
                if cosines is None:
                    cosines = similarity_rows(texts)
                value = cosines[mine][model]
            pairs[pair] = None if math.isnan(value) else round(value, SIMILARITY_DIGITS)
        similarity.append(pairs[pair])
    return ResponseTraits(
        fingerprints=tuple(response_fingerprint(text, key) for text in texts),
        correct=tuple(correct) if any(c is not None for c in correct) else (),
        similarity=tuple(similarity),
    )
