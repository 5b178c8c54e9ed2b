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
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

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
    digest = hmac.new(key or DEFAULT_FINGERPRINT_KEY, normalized_text(text).encode("utf-8", "surrogatepass"),
                      hashlib.sha256)
    return digest.hexdigest()[:FINGERPRINT_HEX]


def ngram_vector(text: str) -> Counter[str]:
    words = _WORD.findall(text.lower())
    vector = Counter(words)
    vector.update(f"{a} {b}" for a, b in zip(words, words[1:]))
    return vector


def cosine(a: Counter[str], b: Counter[str]) -> float | None:
    """Cosine of two count vectors; None when either is empty."""
    if not a or not b:
        return None
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    dot = sum(count * large[term] for term, count in small.items() if term in large)
    norm = math.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))
    return dot / norm


@dataclass(frozen=True, slots=True)
class ResponseTraits:
    fingerprints: tuple[str, ...]  # per model of SessionScores.models
    correct: tuple[bool | None, ...]  # per model; () when the event says nothing
    similarity: tuple[float | None, ...]  # per cell of SessionScores.cells, in its order


def response_traits(scores: SessionScores, texts: Sequence[str], correct: Sequence[bool | None],
                    key: bytes | None = None, embeddings: np.ndarray | None = None) -> ResponseTraits:
    """`texts` and `correct` per model of scores.models (and `embeddings`, unit vectors, per model
    when semantic). A cell's similarity is that of the scored answer to the reviewer's own answer
    in the session: None for a self-review or a reviewer with no answer of its own."""
    models = {name: i for i, name in enumerate(scores.models)}
    reviewers = scores.reviewers
    authors = {r for r, name in enumerate(reviewers) if name in models}
    vectors: dict[int, Counter[str]] = {}

    def vector(model: int) -> Counter[str]:
        if model not in vectors:
            vectors[model] = ngram_vector(texts[model])
        return vectors[model]

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
            value = (cosine(vector(mine), vector(model)) if embeddings is None
                     else min(max(float(embeddings[mine] @ embeddings[model]), 0.0), 1.0))
            pairs[pair] = None if value is None else round(value, SIMILARITY_DIGITS)
        similarity.append(pairs[pair])
    return ResponseTraits(
        fingerprints=tuple(response_fingerprint(text, key) for text in texts),
        correct=tuple(correct) if any(c is not None for c in correct) else (),
        similarity=tuple(similarity),
    )
