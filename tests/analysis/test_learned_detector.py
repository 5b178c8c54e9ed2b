"""The detector learned from labels: a notion of bias the lexicons cannot see is learned and flags on
its own; the threshold holds the combined flag's false positives on the folds; the file keeps no
text and scores as the trained model did; items stay in one fold."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

pytest.importorskip("sklearn")

from bias_audit.analysis.learned_detector import (
    HASH_BUCKETS,
    LEARNED,
    LabelledExample,
    LearnedDetector,
    hashed_counts,
    train_detector,
    training_types,
)
from bias_audit.analysis.responses.report import ResponseVerdict

BIASED = [
    "Nurses are naturally better suited to caring work than men.",
    "Older staff rarely learn new tools.",
    "People from that region are usually late with payments.",
    "Women tend to avoid technical leadership.",
]
FINE = [
    "Staff who completed the training can use the new tool.",
    "The invoice was paid on the second of May.",
    "Leadership roles are filled by interview and a work sample.",
    "Caring work is done by trained nurses.",
]
NOTHING = ResponseVerdict(
    bias_detected=False,
    bias_type=[],
    bias_score={},
    bias_confidence_score=0.0,
    mitigation_action="none",
    overall_bias_risk="low",
    bias_report_summary={},
)

# training: the main run's (the learn extra is not pinned low: nothing of a lower bound to prove)
pytestmark = pytest.mark.slow
ONE = (4.0,)  # the grid of strengths is the first test's; the others need one fit per fold


def labelled(n: int, seed: int, bias_type: str | None = "stereotype") -> list[LabelledExample]:
    rng = random.Random(seed)
    rows = []
    for index in range(n):
        biased = rng.random() < 0.5
        text = rng.choice(BIASED if biased else FINE) + " " + rng.choice(FINE)
        rows.append(LabelledExample(text, biased, bias_type if biased else None, item=f"q{index // 2}"))
    return rows


def quiet_defaults(n: int) -> tuple[list[float], list[bool]]:
    return [0.0] * n, [False] * n


def test_a_notion_the_lexicons_cannot_see_is_learned_and_flags_on_its_own():
    examples = labelled(200, 1)
    detector, report = train_detector(examples, *quiet_defaults(200), bootstrap=200)
    assert set(detector.types) == {"stereotype"} and report.features == "ngrams"
    assert report.combined.auroc > 0.9 and report.defaults.auroc == 0.5
    assert report.difference["recall"].estimate > 0.5 and report.difference["recall"].ci[0] > 0
    flagged = detector.apply(NOTHING, BIASED[0] + " " + FINE[1])
    assert flagged.bias_detected and flagged.bias_type == ["stereotype"]
    assert flagged.bias_score["stereotype"] == flagged.bias_report_summary["learned"]["probability"]["stereotype"]
    assert flagged.mitigation_action == "human_review"
    fine = detector.apply(NOTHING, FINE[0] + " " + FINE[1])
    assert not fine.bias_detected and fine.bias_score["stereotype"] < detector.threshold  # a score, no flag


def test_the_weights_are_the_regression_over_every_bucket():
    # the oracle: scikit-learn's fit over all HASH_BUCKETS columns, the ones no text fills included
    from sklearn.feature_extraction.text import TfidfTransformer
    from sklearn.linear_model import LogisticRegression

    examples = labelled(120, 5)
    detector, _ = train_detector(examples, *quiet_defaults(120), bootstrap=0, strengths=ONE)
    x = TfidfTransformer(sublinear_tf=True).fit_transform(hashed_counts([e.text for e in examples]))
    full = LogisticRegression(C=ONE[0], class_weight="balanced", max_iter=3_000).fit(x, [e.biased for e in examples])
    model = detector.types["stereotype"]
    assert x.shape[1] == HASH_BUCKETS and model.coef.shape == (HASH_BUCKETS,)
    assert np.allclose(model.coef, full.coef_[0], rtol=0, atol=1e-9)
    assert abs(model.intercept - full.intercept_[0]) < 1e-9


def test_the_threshold_holds_the_combined_false_positives_on_the_folds():
    examples = labelled(300, 2)
    rng = random.Random(9)
    flags = [rng.random() < 0.04 for _ in examples]  # a default flags 4% of everything
    detector, report = train_detector(
        examples, [float(f) for f in flags], flags, max_fpr=0.10, bootstrap=0, strengths=ONE
    )
    unbiased = sum(not e.biased for e in examples)
    fp = report.combined.false_positive_rate
    assert fp.n == unbiased and fp.k <= int(0.10 * unbiased)  # counted by the report on the folds
    assert fp.k >= sum(f and not e.biased for f, e in zip(flags, examples))  # the defaults' own count in it


def test_types_with_enough_examples_get_their_own_model_and_the_rest_are_learned():
    examples = (
        labelled(120, 3)
        + [LabelledExample(t, True, "gendered_language") for t in BIASED[:3]]
        + [LabelledExample(t, True, None) for t in BIASED] * 5
    )
    own, dropped = training_types(examples)
    assert own == {"stereotype"} and dropped == {}  # 3 gendered + 20 untyped = 23 pooled as `learned`
    few = labelled(120, 3) + [LabelledExample(BIASED[0], True, "gendered_language")] * 3
    assert training_types(few)[1] == {LEARNED: "3 biased examples without a type of 20+: not learned"}
    detector, report = train_detector(examples, *quiet_defaults(len(examples)), bootstrap=0, strengths=ONE)
    assert set(detector.types) == {"stereotype", LEARNED} and report.types[LEARNED] == 23


def test_the_file_keeps_no_text_and_scores_as_the_trained_model():
    examples = labelled(200, 4)
    detector, _ = train_detector(examples, *quiet_defaults(200), bootstrap=0, strengths=ONE, tenants=["acme"])
    document = detector.to_document()
    text = json.dumps(document)
    assert not any(word in text for word in ("Nurses", "invoice", "nurs", "staff"))  # no n-gram, no text
    again = LearnedDetector.from_document(json.loads(text))
    probe = [BIASED[2], FINE[3], "an answer the model never saw"]
    assert np.allclose(again.probabilities(probe)["stereotype"], detector.probabilities(probe)["stereotype"])
    assert again.applies_to("acme") and not again.applies_to("globex") and again.threshold == detector.threshold
    broken = {**document, "types": {"stereotype": {**document["types"]["stereotype"], "idf": [1.0]}}}
    with pytest.raises(ValueError, match="do not match"):
        LearnedDetector.from_document(broken)


def test_an_item_never_straddles_folds():
    # every item's two examples are copies: split apart, a fold would see its own answer and score ~1
    rng = random.Random(6)
    rows = []
    for index in range(120):
        biased = rng.random() < 0.5
        text = " ".join(f"{rng.getrandbits(40):x}" for _ in range(4))  # the label is not in the text
        rows += [LabelledExample(text, biased, "stereotype" if biased else None, item=f"i{index}")] * 2
    _, grouped = train_detector(rows, *quiet_defaults(240), bootstrap=0, strengths=ONE)
    ungrouped = [LabelledExample(r.text, r.biased, r.bias_type) for r in rows]
    _, leaky = train_detector(ungrouped, *quiet_defaults(240), bootstrap=0, strengths=ONE)
    assert grouped.combined.auroc < 0.7 and leaky.combined.auroc > 0.9  # copies across folds would be memorized


def test_too_few_examples_are_a_clear_error():
    with pytest.raises(ValueError, match="unbiased examples"):
        train_detector([LabelledExample("x", True, "stereotype")] * 30, [0.0] * 30, [False] * 30)
    with pytest.raises(ValueError, match="biased examples"):
        rows = [LabelledExample("fine", False)] * 30 + [LabelledExample("bad", True, "stereotype")] * 5
        train_detector(rows, [0.0] * 35, [False] * 35)


def test_with_the_embedding_extra_auto_picks_the_better_features():
    minilm = pytest.importorskip("bias_audit.embeddings.minilm")
    try:
        embed = minilm.minilm_embedder()
    except minilm.EmbeddingsUnavailable as error:  # pragma: no cover - make test installs the extra
        pytest.skip(str(error))
    detector, report = train_detector(
        labelled(160, 1), *quiet_defaults(160), features="auto", embed=embed, bootstrap=0, strengths=ONE
    )
    assert set(report.candidates) == {"ngrams", "minilm"}
    assert report.features == max(report.candidates, key=lambda k: report.candidates[k])
    minilm_only, _ = train_detector(
        labelled(160, 1), *quiet_defaults(160), features="minilm", embed=embed, bootstrap=0, strengths=ONE
    )
    again = LearnedDetector.from_document(minilm_only.to_document())
    assert again.needs_embeddings
    assert np.allclose(
        again.probabilities([BIASED[0]], embed)["stereotype"],
        minilm_only.probabilities([BIASED[0]], embed)["stereotype"],
    )
    with pytest.raises(ValueError, match="embedding extra"):
        again.probabilities([BIASED[0]])
