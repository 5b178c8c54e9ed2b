"""Score cells: a council event flattened into (reviewer, model, score, display index, self) rows,
checked by hand on the reviews a corpus rarely has; and the audit at the limits' largest council."""

import random

import pytest

from bias_audit.analysis import observations
from bias_audit.analysis.session_audit import audit_batch
from bias_audit.schemas.events import CouncilSessionEvent
from tests.analysis.test_batch_audit import random_session


def review_events() -> list[CouncilSessionEvent]:
    """The random corpus, and reviews the corpus lacks: abstained, ranking-only, labels of its own
    without display indexes, the event's labels in the legacy form."""
    rng = random.Random(5)
    events = [random_session(rng, i) for i in range(200)]
    responses = [{"model": m, "response": "a few words"} for m in ("M1", "M2", "M3")]
    labels = {
        "Response A": {"model": "M1", "display_index": 0},
        "Response B": {"model": "M2"},
        "Response C": {"model": "M3", "display_index": 2},
    }
    events.append(
        CouncilSessionEvent.model_validate(
            {
                "session_id": "edge",
                "timestamp": "2026-11-25T10:00:00Z",
                "responses": responses,
                "label_to_model": labels,
                "reviews": [
                    {"reviewer": "M1", "scores": {"Response A": 9, "Response B": 6}},
                    {"reviewer": "M2", "scores": {"Response A": 5}, "abstained": True},
                    {"reviewer": "M3", "ranking": ["Response B", "Response A"]},
                    {"reviewer": "M3", "scores": {}},
                    {
                        "reviewer": "outsider",
                        "label_to_model": {"X": {"model": "M3"}, "Y": {"model": "M1"}},
                        "scores": {"X": 4, "Y": 7.5},
                    },
                    {"reviewer": "M2", "scores": {"Response C": 3, "Response B": 8}},
                ],
            }
        )
    )
    events.append(
        CouncilSessionEvent.model_validate(
            {
                "session_id": "legacy",
                "timestamp": "2026-11-25T10:00:00Z",
                "responses": responses,
                "label_to_model": {"Response A": "M2", "Response B": "M3", "Response C": "M1"},
                "reviews": [{"reviewer": "M1", "scores": {"Response A": 6, "Response B": 2, "Response C": 10}}],
            }
        )
    )
    return events


def test_the_score_cells_by_hand():
    events = review_events()
    reviewers, cells = observations.score_cells(
        events[-2].reviews, events[-2].label_to_model, {"M1": 0.0, "M2": 1.0, "M3": 2.0}
    )
    # by hand: M2's abstained review and M3's ranking-only and empty ones give no cells
    assert reviewers == ("M1", "outsider", "M2")
    # (reviewer row, model column, score, display index or -1.0, self-review); "Response B" is
    # shown second by its letter, the outsider's labels X and Y have no position
    assert cells == [
        0.0,
        0.0,
        9.0,
        0,
        1.0,
        0.0,
        1.0,
        6.0,
        1,
        0.0,
        1.0,
        2.0,
        4.0,
        -1.0,
        0.0,
        1.0,
        0.0,
        7.5,
        -1.0,
        0.0,
        2.0,
        2.0,
        3.0,
        2,
        0.0,
        2.0,
        1.0,
        8.0,
        1,
        1.0,
    ]


def test_the_score_cells_refuse_a_label_without_a_response():
    event = review_events()[-1]
    with pytest.raises(KeyError):
        observations.score_cells(event.reviews, event.label_to_model, {"M1": 0.0})


def test_the_largest_council_the_limits_accept_gets_an_audit():
    """32 responses scored by 64 reviewers in their own orders, display indexes up to 1000."""
    from tests.builders import council_event

    rng = random.Random(3)
    models = [f"M{i}" for i in range(32)]
    scores = {
        r: {m: float(rng.randint(1, 10)) for m in models if rng.random() < 0.9}
        for r in models + [f"X{i}" for i in range(32)]
    }
    event = council_event(scores, orders={r: rng.sample(models, 32) for r in scores})
    for review in event["reviews"]:
        for assignment in review["label_to_model"].values():
            assignment["display_index"] = rng.randint(0, 1000)
    session = observations.session_scores(CouncilSessionEvent.model_validate(event))
    audit = audit_batch([session])[0].audit
    assert len(audit.position_effects) > 500 and len(audit.reviewer_offsets) == 64
    assert audit.length_score_sample_size == 32
