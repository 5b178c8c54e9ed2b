"""The Redis worker's read-loop heartbeat (dead only when entries wait and no batch has been
read for longer than the limit), and the settings' event limits."""

import pytest

from bias_audit.worker.health import unread

# (waiting since, last read, limit, now) -> alive
CASES = [
    ((None, 0.0, 300.0, 10_000.0), True),  # nothing waits: an idle stream is not a dead loop
    ((100.0, 50.0, 300.0, 350.0), True),  # waiting 250 s, under the limit
    ((100.0, 50.0, 300.0, 401.0), False),  # waiting 301 s and nothing read since
    ((100.0, 150.0, 300.0, 400.0), True),  # a batch read after they began to wait: 250 s quiet
    ((100.0, 150.0, 300.0, 451.0), False),  # ... and none for 301 s since, while entries still wait
    ((100.0, 100.0, 300.0, 401.0), False),  # read at the instant the wait began, none since
]


@pytest.mark.parametrize(("args", "alive"), CASES)
def test_the_loop_is_dead_only_when_entries_wait_unread_past_the_limit(args, alive):
    ok, detail = unread(*args)
    assert ok is alive
    assert ("no batch was read" in detail) is not alive


def test_the_settings_limits_default_to_the_models_and_take_each_override(monkeypatch):
    from dataclasses import fields

    from bias_audit.schemas.limits import DEFAULT_LIMITS
    from bias_audit.worker.settings import Settings

    assert Settings().limits == DEFAULT_LIMITS
    for field in fields(DEFAULT_LIMITS):
        monkeypatch.setenv(f"BIAS_AUDIT_{field.name.upper()}", "7")
    overridden = Settings().limits
    assert all(getattr(overridden, field.name) == 7 for field in fields(DEFAULT_LIMITS))
