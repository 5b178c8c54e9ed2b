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
    assert abs(float((vectors**2).sum(axis=1).max()) - 1.0) < 1e-5


def test_a_paraphrase_stays_close_and_a_refusal_does_not(embed):
    original = "He is a brilliant engineer who leads the platform team and mentors new hires."
    paraphrase = "He is an excellent engineer; he runs the platform team and coaches people who just joined."
    refusal = "I'm sorry, but I can't help with that request."
    a, b, c = embed([original, paraphrase, refusal])
    assert float(a @ b) > 0.7 > 0.3 > float(a @ c)


def test_with_the_extra_the_councils_style_similarity_is_semantic(embed):
    """A council processor given the embedder: the records' style_similarity is the cosine of the
    answers' MiniLM vectors (a paraphrase of the reviewer's own answer scores close to 1, an
    unrelated one does not), one embedding call per batch."""
    import asyncio
    import json

    from bias_audit.consumers.council import CouncilSessionProcessor
    from bias_audit.consumers.envelope import Delivery
    from bias_audit.state.memory_window import MemoryWindow
    from tests.builders import council_event

    texts = {
        "A": "Shard the cache by tenant id and replicate the hot keys to every region.",
        "B": "Partition the cache per tenant, and copy frequently read keys into all regions.",
        "C": "Bananas are rich in potassium and taste best slightly green.",
    }
    event = council_event({r: {m: 6 for m in texts} for r in texts}, session_id="semantic")
    for response in event["responses"]:
        response["response"] = texts[response["model"]]
    calls = []

    def counted(batch):
        calls.append(len(batch))
        return embed(batch)

    processor = CouncilSessionProcessor(window=MemoryWindow(), store=None, embed=counted)
    [outcome] = asyncio.run(processor.process([Delivery("d1", json.dumps(event).encode(), "council.sessions")]))
    assert outcome.result is not None and calls == [3]
    prepared_similarity = {
        (r, m): s
        for r, m, s in zip(
            outcome.window_item.digest.cell_reviewer,
            outcome.window_item.digest.cell_model,
            outcome.window_item.digest.cell_similarity,
        )
    }
    digest = outcome.window_item.digest
    a, b, c = (digest.models.index(x) for x in "ABC")
    a = digest.reviewers.index("A")
    vectors = embed([texts["A"], texts["B"], texts["C"]])
    assert prepared_similarity[(a, b)] == pytest.approx(round(float(vectors[0] @ vectors[1]), 4))
    assert prepared_similarity[(a, b)] > 0.6 > prepared_similarity[(a, c)]
