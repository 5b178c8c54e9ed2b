"""The learned detector: recall at a false-positive rate by hand, and simulated tenants whose
reviewers confirm by a notion the lexicons cannot see (the model is adopted) or by exactly the
lexicons' evidence (it is not)."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("sklearn")

from bias_audit.analysis.learned_detector import LabeledAnswer, LearnedDetector, recall_at_fpr, train  # noqa: E402
from bias_audit.analysis.responses.report import ResponseVerdict  # noqa: E402

BIASED = ["Nurses are naturally better suited to caring work than men.", "Older staff rarely learn new tools.",
          "People from that region are usually late with payments.", "Women tend to avoid technical leadership."]
FINE = ["Staff who completed the training can use the new tool.", "The invoice was paid on the second of May.",
        "Leadership roles are filled by interview and a work sample.", "Caring work is done by trained nurses."]


def test_recall_at_a_false_positive_rate_by_hand():
    # dismissed scores 0.1 .. 1.0 (ten): at 10% one may pass, so the threshold is the second highest (0.9)
    negatives = [i / 10 for i in range(1, 11)]
    positives = [0.95, 0.85, 0.99, 0.5]
    scores = negatives + positives
    labels = [False] * 10 + [True] * 4
    assert recall_at_fpr(scores, labels, 0.10) == pytest.approx(2 / 4)  # 0.95 and 0.99 are above 0.9
    # at 0% the threshold is the highest dismissed score, 1.0: nothing confirmed is above it
    assert recall_at_fpr(scores, labels, 0.0) == 0.0


def tenant(n: int, seed: int, by_text: bool) -> list[LabeledAnswer]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        biased = rng.random() < 0.5
        text = rng.choice(BIASED if biased else FINE) + " " + rng.choice(FINE)
        evidence = round(rng.random(), 3)  # the lexicons flagged every one of these, at random strength
        confirmed = biased if by_text else rng.random() < evidence
        rows.append(LabeledAnswer("stereotype", text, evidence, confirmed))
    return rows


def test_a_notion_the_lexicons_cannot_see_is_learned_and_adopted():
    detector, [entry] = train(tenant(160, 1, by_text=True), min_reviews=40)
    assert entry["adopted"] and entry["auc"] > 0.9 and entry["auc_lexicon"] < 0.7
    assert entry["recall_at_10_fpr"] > entry["recall_at_10_fpr_lexicon"]
    model = detector.types["stereotype"]
    assert model.probability(BIASED[0] + " " + FINE[1]) > 0.5 > model.probability(FINE[0] + " " + FINE[1])
    again = LearnedDetector.from_document(detector.to_document())
    assert again.types["stereotype"].probability(BIASED[1]) == pytest.approx(model.probability(BIASED[1]))


def test_reviewers_who_follow_the_lexicons_keep_the_lexicons():
    detector, [entry] = train(tenant(160, 2, by_text=False), min_reviews=40)
    assert not entry["adopted"] and detector.types == {}  # the text tells nothing the evidence does not
    assert entry["auc_lexicon"] > entry["auc"]


def test_too_few_reviews_train_nothing_and_the_verdict_names_the_version():
    _, [entry] = train(tenant(20, 3, by_text=True), min_reviews=40)
    assert entry["adopted"] is False and "needs 40 reviews" in entry["reason"]
    detector, _ = train(tenant(160, 1, by_text=True), min_reviews=40)
    verdict = ResponseVerdict(bias_detected=True, bias_type=["stereotype"], bias_score={"stereotype": 0.8},
                              bias_confidence_score=0.8, mitigation_action="rewrite", overall_bias_risk="medium",
                              bias_report_summary={})
    adjusted = detector.adjust(verdict, FINE[0])
    assert adjusted.bias_confidence_score < 0.5  # the tenant's reviewers would dismiss this one
    assert adjusted.bias_report_summary["learned"]["version"] == detector.version


def test_the_claim_is_the_sentences_the_findings_point_at():
    from bias_audit.analysis.learned_detector import claims_of

    answer = "The plan is fine. The chairman approved it. Every engineer signs off before he merges."
    findings = [{"bias_type": "gendered_language", "evidence": [{"term": "chairman", "neutral": "chair"}]},
                {"bias_type": "gendered_language", "evidence": [{"role": "every",
                                                                 "sentence": "Every engineer signs off before he merges."}]},
                {"bias_type": "toxicity", "evidence": [{"term": "idiot"}]}]
    assert claims_of(answer, findings, "gendered_language") == (
        "The chairman approved it. Every engineer signs off before he merges.")
    assert claims_of(answer, findings, "toxicity") == answer  # no sentence holds it: the whole answer


def test_with_the_embedding_extra_the_features_are_minilm_sentence_embeddings():
    minilm = pytest.importorskip("bias_audit.embeddings.minilm")
    try:
        embed = minilm.minilm_embedder()
    except minilm.EmbeddingsUnavailable as error:  # pragma: no cover - make test installs the extra
        pytest.skip(str(error))
    detector, [entry] = train(tenant(160, 1, by_text=True), min_reviews=40, embed=embed)
    assert entry["features"] == "minilm" and entry["adopted"] and entry["auc"] > entry["auc_lexicon"]
    model = detector.types["stereotype"]
    assert model.features == "minilm" and len(model.coef) == 384
    assert model.probability(BIASED[2] + " " + FINE[0], embed) > 0.5 > model.probability(FINE[2] + " " + FINE[0], embed)
    again = LearnedDetector.from_document(detector.to_document())
    assert again.needs_embeddings and again.types["stereotype"].probability(BIASED[0], embed) == pytest.approx(
        model.probability(BIASED[0], embed))
    with pytest.raises(ValueError, match="embedding extra"):
        model.probability(BIASED[0])
