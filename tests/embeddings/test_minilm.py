"""The offline MiniLM backend, for real: no network, and similarities that mean something.
`make test` installs the extra; elsewhere these tests skip when it is missing (never under CI)."""

import os

import pytest

from bias_audit.embeddings.minilm import EmbeddingsUnavailable, minilm_embedder


@pytest.fixture(scope="module")
def embed():
    try:
        return minilm_embedder()
    except EmbeddingsUnavailable as error:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(error))


def test_unit_vectors_of_the_model_size(embed):
    vectors = embed(["one sentence", "another one"])
    assert vectors.shape == (2, 384)
    assert abs(float((vectors ** 2).sum(axis=1).max()) - 1.0) < 1e-5


def test_a_paraphrase_stays_close_and_a_refusal_does_not(embed):
    original = "He is a brilliant engineer who leads the platform team and mentors new hires."
    paraphrase = "He is an excellent engineer; he runs the platform team and coaches people who just joined."
    refusal = "I'm sorry, but I can't help with that request."
    a, b, c = embed([original, paraphrase, refusal])
    assert float(a @ b) > 0.7 > 0.3 > float(a @ c)
