"""What an alert says, written out by hand: the conditions keep a template and its values and
format them only when an alert is sent."""

from __future__ import annotations

import pytest

from bias_audit.analysis.alerts import AlertPolicy, length_condition, reviewer_condition
from bias_audit.schemas.results import CorrelationEstimate, WindowSummary

POLICY = AlertPolicy()


@pytest.mark.parametrize(
    "name, n, mean, p, state, message",
    [
        (
            "judge",
            30,
            -1.234,
            0.0001,
            "firing",
            "reviewer judge scores 1.23 points below its peers over its last 30 sessions (p=0.0001): harsh",
        ),
        (
            "acme/m-1",
            12,
            1.5,
            0.0004567,
            "firing",
            "reviewer acme/m-1 scores 1.50 points above its peers over its last 12 sessions (p=0.00046): generous",
        ),
        (
            "judge",
            30,
            -0.7,
            0.01,
            "hold",
            "reviewer judge scores 0.70 points below its peers over its last 30 sessions (p=0.01): harsh",
        ),
        (
            "judge",
            40,
            0.25,
            0.2,
            "ok",
            "reviewer judge is back within 0.5 points of its peers (+0.25 over its last 40 sessions)",
        ),
        (
            "judge",
            40,
            -0.123,
            0.5,
            "ok",
            "reviewer judge is back within 0.5 points of its peers (-0.12 over its last 40 sessions)",
        ),
    ],
)
def test_reviewer_messages(name, n, mean, p, state, message):
    condition = reviewer_condition(name, n, mean, p, POLICY)
    assert condition is not None and (condition.state, condition.message) == (state, message)


def summary(r, lo, hi, sessions=40, size=200):
    return WindowSummary(
        tenant_id="t",
        sessions=sessions,
        confidence="high",
        window_start=None,
        window_end=None,
        length_correlation=CorrelationEstimate(
            point_estimate=r, ci_lower=lo, ci_upper=hi, sample_size=size, status="ok"
        ),
        reviewer_offsets={},
        position_effects={},
        model_mean_scores={},
    )


@pytest.mark.parametrize(
    "window, state, message",
    [
        (
            summary(0.4321, 0.3, 0.55),
            "firing",
            "scores follow response length across the window: r=+0.43 [+0.30, +0.55] over 200 responses in 40 sessions",
        ),
        (
            summary(-0.25, -0.4, -0.1, sessions=25, size=125),
            "hold",
            "scores follow response length across the window: r=-0.25 [-0.40, -0.10] over 125 responses in 25 sessions",
        ),
        (summary(0.15, -0.05, 0.3), "ok", "length-score correlation back to r=+0.15 over 40 sessions"),
    ],
)
def test_length_messages(window, state, message):
    condition = length_condition(window, POLICY)
    assert condition is not None and (condition.state, condition.message) == (state, message)
