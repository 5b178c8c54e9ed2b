"""The council consumer writes each session's PostgreSQL row from its SessionRecords directly;
the row the store builds from the same session's records (what `import` writes) is the oracle."""

from __future__ import annotations

import random

import pytest
from psycopg.types.json import Jsonb

from bias_audit.analysis.observations import session_scores
from bias_audit.analysis.records import session_records
from bias_audit.analysis.response_traits import response_traits
from bias_audit.schemas.events import CouncilSessionEvent
from bias_audit.storage.postgres.rows import _row, session_row
from bias_audit.worker.samples import generate_sessions

SECRET = b"0123456789abcdef-secret"


def comparable(row: tuple) -> list:
    """Jsonb wraps the metadata without an equality of its own."""
    return [value.obj if isinstance(value, Jsonb) else value for value in row]


def varied_sessions() -> list[dict]:
    """Sessions that differ where a row can: metadata, config version, a non-UTC timestamp, an
    outside judge, an abstention, a model nobody scored, unknown positions, correctness."""
    rng = random.Random(5)
    sessions = generate_sessions(30, seed=17)
    for index, session in enumerate(sessions):
        kind = index % 6
        if kind == 0:
            session["query_metadata"] = {"category": "medical", "language": "en"}
            session["council_config_version"] = "v2"
        elif kind == 1:
            session["timestamp"] = "2026-11-02T12:00:00.250000+02:00"
            outsider = dict(session["reviews"][0], reviewer="judge-outside-the-council")
            session["reviews"] = [*session["reviews"], outsider]
        elif kind == 2:
            session["reviews"][1] = {**session["reviews"][1], "abstained": True}
            session["responses"] = [*session["responses"], {"model": "never/scored", "response": "unread answer"}]
        elif kind == 3:  # legacy labels: the letter is the position; other labels have none
            for review in session["reviews"]:
                review["label_to_model"] = {
                    ("Response A" if rng.random() < 0.5 else f"label-{n}"): a["model"]
                    for n, a in enumerate(review["label_to_model"].values())
                }
                review["scores"] = dict(zip(review["label_to_model"], review["scores"].values()))
                review.pop("ranking", None)
        elif kind == 4:
            for response in session["responses"]:
                response["correct"] = rng.choice([True, False, None])
    return sessions


@pytest.mark.parametrize("consent", [1, 3, 4])
@pytest.mark.parametrize("with_traits", [True, False])
def test_the_direct_row_equals_the_row_from_the_records(consent, with_traits):
    compared = 0
    for body in varied_sessions():
        event = CouncilSessionEvent.model_validate({**body, "query": "a private question"})
        scores = session_scores(event)
        traits = (
            response_traits(scores, [r.response for r in event.responses], [r.correct for r in event.responses], SECRET)
            if with_traits
            else None
        )
        session = session_records(
            event, scores, trace_id=f"trace-{event.session_id}", consent=consent, secret=SECRET, traits=traits
        )
        assert session is not None
        assert comparable(session_row(session)) == comparable(_row(session.records()))
        compared += 1
    assert compared == 30


def test_consent_zero_has_no_records():
    event = CouncilSessionEvent.model_validate(generate_sessions(1)[0])
    assert session_records(event, session_scores(event), trace_id="t", consent=0, secret=SECRET) is None


def test_every_stored_similarity_reads_back_as_the_four_digit_value_the_records_hold():
    """A similarity is stored as ten-thousandths in two bytes and read back by a division alone:
    each of the 10,001 values a record can hold (round(x, 4) in [0, 1]) and None come back equal."""
    from bias_audit.storage.postgres.rows import _packed_similarity, _unpacked_traits

    values = [round(i / 10_000, 4) for i in range(10_001)] + [None]
    assert _unpacked_traits(None, _packed_similarity(values)) == (None, values)
