"""Stored records -> a session digest: exact cells for each rule the reader relies on."""

from __future__ import annotations

import pytest

from bias_audit.analysis.digest import BadRecord, StoredCell, digest_from_records


def stored(reviewer_id: str, model_id: str, score_value: float, **fields) -> StoredCell:
    """A stored record with the contract's usual values, as the reader decodes it."""
    defaults = {
        "position": 0,
        "score_scale": "1-10",
        "schema_version": "1.2.0",
        "is_self_review": False,
        "response_length_words": 100.0,
        "response_length_chars": 600.0,
        "session_id": "s1",
        "timestamp": "2026-11-01T00:00:00Z",
    }
    return StoredCell(reviewer_id=reviewer_id, model_id=model_id, score_value=score_value, **{**defaults, **fields})


CASES = [
    (
        "scores become fractions of the scale",
        [stored("a", "x", 4.0), stored("a", "y", 10.0, position=1)],
        ((0, 0, 0, 3 / 9, False), (0, 1, 1, 1.0, False)),
    ),
    (
        "a repeated (reviewer, model) record counts once: the first",
        [stored("a", "x", 4.0), stored("b", "x", 7.0), stored("a", "x", 9.0)],
        ((0, 0, 0, 3 / 9, False), (1, 0, 0, 6 / 9, False)),
    ),
    (
        "each record's own scale",
        [stored("a", "x", 10.0), stored("b", "x", 3.0, score_scale="1-5")],
        ((0, 0, 0, 1.0, False), (1, 0, 0, 0.5, False)),
    ),
    (
        "before schema 1.2.0 position held the ranking: unknown",
        [stored("a", "x", 4.0, position=2, schema_version="1.1.0")],
        ((0, 0, -1, 3 / 9, False),),
    ),
    (
        "models are numbered in the order of their first record, not of their names",
        [stored("x", "y", 4.0), stored("x", "x", 10.0), stored("b", "y", 7.0)],
        ((0, 0, 0, 3 / 9, False), (0, 1, 0, 1.0, False), (1, 0, 0, 6 / 9, False)),
    ),
    ("no position stored: unknown", [stored("a", "x", 4.0, position=None)], ((0, 0, -1, 3 / 9, False),)),
    (
        "llm-council-core stores no is_self_review: the ids decide",
        [stored("x", "x", 4.0, is_self_review=None), stored("x", "y", 4.0, is_self_review=None)],
        ((0, 0, 0, 3 / 9, True), (0, 1, 0, 3 / 9, False)),
    ),
]


@pytest.mark.parametrize("rows, cells", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_cells(rows, cells):
    assert digest_from_records(rows).cells == cells  # exact: (score - low) / (high - low) in floats


def test_session_fields_come_from_its_first_record():
    digest = digest_from_records(
        [
            stored("a", "x", 4.0, tenant_id=None, trace_id="t1", council_config_version="1.1"),
            stored("a", "y", 5.0, response_length_words=50.0),
        ]
    )
    session = (digest.session_id, digest.tenant_id, digest.trace_id, digest.config_version)
    assert session == ("s1", "default", "t1", "1.1")
    assert digest.ts_ms == 1_793_491_200_000  # 2026-11-01T00:00:00Z
    assert (digest.reviewers, digest.models, digest.lengths, digest.length_unit) == (
        ("a",),
        ("x", "y"),
        (100.0, 50.0),
        "words",
    )


def test_characters_when_the_records_carry_no_word_counts():
    digest = digest_from_records([stored("a", "x", 4.0, response_length_words=None)])
    assert (digest.lengths, digest.length_unit) == ((600.0,), "chars")


@pytest.mark.parametrize(
    "row", [stored("a", "x", 4.0, score_scale="ten"), stored("a", "x", 4.0, timestamp="yesterday")]
)
def test_an_unreadable_record_names_its_session(row):
    with pytest.raises(BadRecord, match="session 's1'"):
        digest_from_records([row])


def test_a_digest_as_stored_is_the_one_read_back_from_its_json():
    """What a worker keeps of a session it counted (as_stored) equals what another worker reads
    back from the window's JSON; scores that do not survive 9 digits (1/3, 0.1 + 0.2) included."""
    import json
    import random

    from bias_audit.analysis.digest import SessionDigest, digest_from_scores
    from bias_audit.analysis.observations import session_scores
    from bias_audit.analysis.response_traits import response_traits
    from bias_audit.schemas.events import CouncilSessionEvent
    from bias_audit.worker.samples import generate_sessions

    rng = random.Random(8)
    compared = 0
    for body in generate_sessions(40, seed=2):
        for review in body["reviews"]:  # scores whose scale fractions are not short decimals
            review["scores"] = {
                label: rng.choice([1 + 9 / 3, 0.1 + 0.2 + 1, 10.0, 1.0, rng.uniform(1, 10)])
                for label in review["scores"]
            }
        event = CouncilSessionEvent.model_validate(body)
        scores = session_scores(event)
        traits = response_traits(scores, [r.response for r in event.responses], [None] * len(event.responses), b"k")
        digest = digest_from_scores(
            scores,
            session_id=event.session_id,
            tenant_id=event.tenant_id,
            timestamp=event.timestamp,
            trace_id="t",
            config_version="v",
            traits=traits,
        )
        read_back = SessionDigest.from_dict(json.loads(json.dumps(digest.to_dict())))
        assert digest.as_stored() == read_back
        assert digest.as_stored().to_dict() == digest.to_dict()
        # the window writes as_stored() digests without rounding again: the same JSON
        assert json.dumps(digest.as_stored().to_dict(rounded=True)) == json.dumps(digest.to_dict())
        compared += digest.cell_score != read_back.cell_score  # the rounding mattered here
    assert compared > 20
