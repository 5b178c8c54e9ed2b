"""The compiled paths (analysis/_audit.c) against the Python and numpy ones an install without a C
compiler runs: the same numbers, the same objects."""

import math
import random

import pytest

from bias_audit.analysis import observations, session_audit
from bias_audit.analysis.observations import score_cells_in_python
from bias_audit.analysis.session_audit import audit_batch, audit_scores
from bias_audit.schemas.events import CouncilSessionEvent
from tests.analysis.test_batch_audit import SESSIONS, close, random_session


def test_both_engines_are_there():
    assert session_audit.COMPILED is not None, "setup.py did not build analysis/_audit.c"
    assert observations.score_cells is not score_cells_in_python


def test_the_compiled_audit_equals_the_numpy_one_alone_and_in_batches(monkeypatch):
    compiled = [audit_batch(SESSIONS), [audit_scores(s) for s in SESSIONS]]
    tenants = ["a" if i % 3 else "b" for i in range(len(SESSIONS))]
    history = {"a": [(4.0, 5)] * 30}
    with_noise = audit_batch(SESSIONS, tenants=tenants, history=history)
    monkeypatch.setattr(session_audit, "COMPILED", None)
    numpy_batch = audit_batch(SESSIONS)
    numpy_noise = audit_batch(SESSIONS, tenants=tenants, history=history)
    assert sum(a.audit.noise_source == "window" for a in numpy_noise) > 300
    for ours, theirs in [*((runs, numpy_batch) for runs in compiled), (with_noise, numpy_noise)]:
        for scores, one, other in zip(SESSIONS, ours, theirs):
            assert list(one.audit.model_dump()) == list(other.audit.model_dump())  # same field order
            assert close(one.audit.model_dump(), other.audit.model_dump()), scores
            assert one.noise_contribution[1] == other.noise_contribution[1]
            assert math.isclose(one.noise_contribution[0], other.noise_contribution[0], rel_tol=1e-9, abs_tol=1e-12)
            assert len(one.position_residuals) == len(other.position_residuals)
            for (p, e), (q, f) in zip(one.position_residuals, other.position_residuals):
                assert p == q and math.isclose(e, f, rel_tol=1e-9, abs_tol=1e-12)


def review_events() -> list[CouncilSessionEvent]:
    """The random corpus, and reviews the corpus lacks: abstained, ranking-only, labels of its own
    without display indexes, the event's labels in the legacy form."""
    rng = random.Random(5)
    events = [random_session(rng, i) for i in range(200)]
    responses = [{"model": m, "response": "a few words"} for m in ("M1", "M2", "M3")]
    labels = {"Response A": {"model": "M1", "display_index": 0}, "Response B": {"model": "M2"},
              "Response C": {"model": "M3", "display_index": 2}}
    events.append(CouncilSessionEvent.model_validate({
        "session_id": "edge", "timestamp": "2026-11-25T10:00:00Z", "responses": responses, "label_to_model": labels,
        "reviews": [
            {"reviewer": "M1", "scores": {"Response A": 9, "Response B": 6}},
            {"reviewer": "M2", "scores": {"Response A": 5}, "abstained": True},
            {"reviewer": "M3", "ranking": ["Response B", "Response A"]},
            {"reviewer": "M3", "scores": {}},
            {"reviewer": "outsider", "label_to_model": {"X": {"model": "M3"}, "Y": {"model": "M1"}},
             "scores": {"X": 4, "Y": 7.5}},
            {"reviewer": "M2", "scores": {"Response C": 3, "Response B": 8}},
        ],
    }))
    events.append(CouncilSessionEvent.model_validate({
        "session_id": "legacy", "timestamp": "2026-11-25T10:00:00Z", "responses": responses,
        "label_to_model": {"Response A": "M2", "Response B": "M3", "Response C": "M1"},
        "reviews": [{"reviewer": "M1", "scores": {"Response A": 6, "Response B": 2, "Response C": 10}}],
    }))
    return events


def test_the_compiled_score_cells_are_the_python_loop_s():
    events = review_events()
    edge = 0
    for event in events:
        column = {r.model: float(i) for i, r in enumerate(event.responses)}
        got = observations.score_cells(event.reviews, event.label_to_model, column)
        expected = score_cells_in_python(event.reviews, event.label_to_model, column)
        assert got == expected
        assert [type(v) for v in got[1]] == [type(v) for v in expected[1]]  # a display index stays an int
        edge += event.session_id == "edge"
    reviewers, cells = observations.score_cells(events[-2].reviews, events[-2].label_to_model,
                                               {"M1": 0.0, "M2": 1.0, "M3": 2.0})
    # by hand: M2's abstained review and M3's ranking-only and empty ones give no cells
    assert reviewers == ("M1", "outsider", "M2")
    # (reviewer row, model column, score, display index or -1.0, self-review); "Response B" is
    # shown second by its letter, the outsider's labels X and Y have no position
    assert cells == [0.0, 0.0, 9.0, 0, 1.0, 0.0, 1.0, 6.0, 1, 0.0,
                     1.0, 2.0, 4.0, -1.0, 0.0, 1.0, 0.0, 7.5, -1.0, 0.0,
                     2.0, 2.0, 3.0, 2, 0.0, 2.0, 1.0, 8.0, 1, 1.0]
    assert edge == 1


def test_the_compiled_score_cells_refuse_a_label_without_a_response():
    event = review_events()[-1]
    with pytest.raises(KeyError):
        observations.score_cells(event.reviews, event.label_to_model, {"M1": 0.0})


def test_an_error_in_a_callback_reaches_the_caller():
    from bias_audit.analysis.session_audit import _noise_scales, _tails
    config = (0.3, 1.5, 1.5, 0.05)

    def failing_noise(contributions):
        raise RuntimeError("no noise today")

    with pytest.raises(RuntimeError, match="no noise today"):
        session_audit.COMPILED.audit_sessions(SESSIONS[:20], config, failing_noise, _tails)
    with pytest.raises(ValueError, match="one noise scale per session"):
        session_audit.COMPILED.audit_sessions(SESSIONS[:20], config, lambda c: [], _tails)
    with pytest.raises(ValueError, match="three bytes objects"):
        session_audit.COMPILED.audit_sessions(SESSIONS[:20], config, lambda c: _noise_scales(None, None, c),
                                              lambda *asked: (b"", b"", b""))


def test_the_largest_council_the_limits_accept_gets_the_numpy_audit(monkeypatch):
    """32 responses scored by 64 reviewers in their own orders, display indexes up to 1000 (past
    the C module's cached position keys): the two implementations agree."""
    from tests.builders import council_event

    rng = random.Random(3)
    models = [f"M{i}" for i in range(32)]
    scores = {r: {m: float(rng.randint(1, 10)) for m in models if rng.random() < 0.9}
              for r in models + [f"X{i}" for i in range(32)]}
    event = council_event(scores, orders={r: rng.sample(models, 32) for r in scores})
    for review in event["reviews"]:
        for assignment in review["label_to_model"].values():
            assignment["display_index"] = rng.randint(0, 1000)
    session = observations.session_scores(CouncilSessionEvent.model_validate(event))
    compiled = audit_batch([session])[0]
    monkeypatch.setattr(session_audit, "COMPILED", None)
    expected = audit_batch([session])[0]
    assert len(compiled.audit.position_effects) > 500 and len(compiled.audit.reviewer_offsets) == 64
    assert close(compiled.audit.model_dump(), expected.audit.model_dump())
    assert [p for p, _ in compiled.position_residuals] == [p for p, _ in expected.position_residuals]


@pytest.mark.parametrize("name", ["_audit", "_text"])
def test_the_compiled_modules_are_built_from_the_current_sources(name):
    """setup.py builds them `optional`: a source that no longer compiles leaves the old module in
    place and the install quiet, and the tests would run the stale one. An editable install has
    the source beside the module: the module must be the newer."""
    import importlib
    from pathlib import Path

    module = Path(importlib.import_module(f"bias_audit.analysis.{name}").__file__)
    source = module.with_name(f"{name}.c")
    assert source.exists(), "the editable install keeps analysis/*.c beside the built module"
    assert module.stat().st_mtime >= source.stat().st_mtime, f"{module.name} is older than {source.name}: rebuild (make)"
