import pytest
from pydantic import ValidationError

from bias_audit.consumers.envelope import describe_validation_error
from bias_audit.schemas.events import CouncilSessionEvent
from bias_audit.schemas.limits import EventLimits
from tests.builders import council_event

VALID = council_event({"R1": {"M1": 8, "M2": 6}, "R2": {"M1": 7, "M2": 5}})


def problem(event, limits=None) -> str:
    with pytest.raises(ValidationError) as caught:
        CouncilSessionEvent.model_validate(event, context={"limits": limits} if limits else None)
    return describe_validation_error(caught.value)


def with_changes(**changes):
    return {**VALID, **changes}


def test_valid_event_parses():
    event = CouncilSessionEvent.model_validate(VALID)
    assert event.session_id == "s-1" and len(event.reviews) == 2


@pytest.mark.parametrize(
    "event, reason",
    [
        (with_changes(timestamp="2026-11-20T10:30:00"), "timestamp: Input should have timezone info"),
        ({k: v for k, v in VALID.items() if k != "session_id"}, "session_id: required field is missing"),
        (with_changes(responses=VALID["responses"][:1]), "a council session needs at least 2 responses"),
        (with_changes(score_scale="ten"), "score_scale 'ten' is not of the form 'min-max'"),
        (with_changes(reviews=[{"reviewer": "R1", "scores": {"Response A": 11}}]), "outside score_scale 1-10"),
        (
            with_changes(reviews=[{"reviewer": "R1", "scores": {"Response Z": 5}}]),
            "score for unknown label 'Response Z'",
        ),
        (
            with_changes(reviews=[{"reviewer": "R1", "scores": {"Response A": "NaN"}}]),
            "reviews.0.scores.Response A: Input should be a finite number",
        ),
        (
            with_changes(label_to_model={"Response A": "ghost", "Response B": "M2"}),
            "maps to 'ghost', which has no response",
        ),
        (with_changes(tenant_id="a b"), "tenant_id: String should match pattern"),
        (with_changes(consent_level=7), "consent_level: Input should be less than or equal to 4"),
        (
            with_changes(
                reviews=[
                    {"reviewer": "R1", "scores": {"Response A": 5}},
                    {"reviewer": "R1", "scores": {"Response A": 6}},
                ]
            ),
            "review 1 (R1): scores 'M1' again (label 'Response A'; already scored via 'Response A')",
        ),
        (
            with_changes(
                reviews=[
                    {
                        "reviewer": "R1",
                        "label_to_model": {"Response A": "M1", "Response B": "M1"},
                        "scores": {"Response A": 5, "Response B": 6},
                    }
                ]
            ),
            "review 0 (R1): scores 'M1' again (label 'Response B'",
        ),
    ],
)
def test_invalid_events_get_one_readable_reason(event, reason):
    assert reason in problem(event)


def test_nan_score_is_rejected_as_not_finite():
    message = problem(with_changes(reviews=[{"reviewer": "R1", "scores": {"Response A": float("nan")}}]))
    assert "Response A: Input should be a finite number" in message


def test_size_limits_come_from_the_validation_context():
    tight = EventLimits(max_response_bytes=8, max_reviews=1)
    big = with_changes(responses=[{"model": "M1", "response": "x" * 9}, {"model": "M2", "response": "y"}])
    assert "larger than the limit of 8 bytes" in problem(big, tight)
    assert "2 reviews exceed the limit of 1" in problem(VALID, EventLimits(max_reviews=1))


def test_query_is_never_serialized():
    event = CouncilSessionEvent.model_validate(with_changes(query="my secret question"))
    assert event.query == "my secret question"
    assert "my secret question" not in event.model_dump_json()


def test_every_problem_is_named_not_only_the_first():
    event = {key: value for key, value in VALID.items() if key not in ("session_id", "timestamp")}
    assert problem(event) == "session_id: required field is missing; timestamp: required field is missing"
    many = {
        **VALID,
        **{
            key: None
            for key in ("session_id", "timestamp", "tenant_id", "reviews", "responses", "score_scale", "label_to_model")
        },
    }
    named = problem(many)
    assert named.count(";") == 4 and " more problem" in named.rsplit(";", 1)[1]  # five named, then a count


def verdict_event(**changes) -> dict:
    return {
        "verdict_id": "v1",
        "timestamp": "2026-11-20T10:30:00Z",
        "judge": {"model": "j"},
        "item_id": "i",
        "candidates": [{"model": "a"}, {"model": "b"}],
        "verdict": {"kind": "pairwise", "preference": "A>B"},
        **changes,
    }


def response_event(**changes) -> dict:
    return {
        "audit_id": "a1",
        "timestamp": "2026-11-20T10:30:00Z",
        "llm_provider": "p",
        "llm_model": "m",
        "llm_response": "An answer.",
        **changes,
    }


@pytest.mark.parametrize(
    "model, document, reason",
    [
        (
            "verdict",
            verdict_event(verdict={"kind": "scores", "scores": [1e19, 0]}),
            "verdict.scores.scores.0: Input should be less than or equal to 1000000000000000",
        ),
        (
            "verdict",
            verdict_event(verdict={"kind": "scores", "scores": [0, -1.5e15]}),
            "verdict.scores.scores.1: Input should be greater than or equal to -1000000000000000",
        ),
        (
            "verdict",
            verdict_event(verdict={"kind": "scores", "scores": [float("inf"), 0]}),
            "verdict.scores.scores.0: Input should be a finite number",
        ),
        ("council", with_changes(score_scale="0-99999999999999999"), "reaches past +-1e15"),
        ("council", with_changes(query_metadata={"weight": 1e19}), "query_metadata: weight: numbers are finite"),
        (
            "response",
            response_event(query_context={"a": {"b": [1, 10**20]}}),
            "query_context: a.b.1: numbers are finite and within +-1e+15",
        ),
        ("response", response_event(query_context={"a": -1e300}), "a: numbers are finite and within +-1e+15"),
        (
            "record",
            {
                "session_id": "s",
                "timestamp": "2026-11-20T10:30:00Z",
                "reviewer_id": "r",
                "model_id": "m",
                "score_value": 1e19,
            },
            "score_value: Input should be less than or equal to 1000000000000000",
        ),
    ],
)
def test_numbers_are_finite_and_within_1e15_so_they_come_back_from_the_store_as_they_went_in(model, document, reason):
    from bias_audit.schemas.events import LLMResponseEvent
    from bias_audit.schemas.judges import JudgeVerdictEvent
    from bias_audit.schemas.records import BiasMetricRecord

    models = {
        "verdict": JudgeVerdictEvent,
        "council": CouncilSessionEvent,
        "response": LLMResponseEvent,
        "record": BiasMetricRecord,
    }
    with pytest.raises(ValidationError) as caught:
        models[model].model_validate(document)
    assert reason in describe_validation_error(caught.value)
    edge = verdict_event(verdict={"kind": "scores", "scores": [1e15, -1e15]})  # the bounds themselves are numbers
    assert JudgeVerdictEvent.model_validate(edge).verdict.scores == [1e15, -1e15]  # type: ignore[union-attr]
