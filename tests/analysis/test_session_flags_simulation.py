"""Per-session reviewer flags under simulation (issue 18, item 6): each flag fires in <= 5% of
null sessions at several noise levels and roundings, and finds a -2.5 point reviewer at least as
often as the issue's study (47 / 81 / 94% at M = 3 / 4 / 5). Sessions stream through audit_batch
in batches with the tenant's noise history rolled forward, as the worker does.

Each flag is a family-wise 5% test: its rate under the null is 5% at most in expectation, and
over SESSIONS simulated sessions the observed rate may exceed it by sampling error; the null
tests allow two binomial SEs (0.8 points at 3,000 sessions). bench/session_flags.py measures
the rates on 20,000 sessions per case (bench/RESULTS.md).

Each session: M members answer (quality ~ N(6, 1.5)) and score every answer, their own included:
quality + the reviewer's bias + noise, rounded to the step, clipped to 1-10.
"""

from __future__ import annotations

import numpy as np
import pytest

from bias_audit.analysis.observations import Candidate, SessionScores
from bias_audit.analysis.session_audit import audit_batch

SESSIONS = 3000
BATCH = 100
NULL_LIMIT = 0.05 + 2 * (0.05 * 0.95 / SESSIONS) ** 0.5


def simulated(
    rng: np.random.Generator,
    members: int,
    noise: float,
    step: float,
    bias: dict[int, float],
    self_bias: dict[int, float],
) -> SessionScores:
    names = tuple(f"m{i}" for i in range(members))
    quality = rng.normal(6.0, 1.5, members).tolist()
    cells: list[float] = []
    for r in range(members):
        order = rng.permutation(members)
        for position, m in enumerate(order.tolist()):
            raw = quality[m] + bias.get(r, 0.0) + (self_bias.get(r, 0.0) if r == m else 0.0) + rng.normal(0, noise)
            # Python's round is numpy's (halves to even), without a numpy scalar per cell
            score = min(max(round(raw / step) * step, 1.0), 10.0)
            cells.extend((float(r), float(m), score, float(position), 1.0 if r == m else 0.0))
    candidates = {name: Candidate(name, 100, 600) for name in names}
    return SessionScores(names, names, cells, candidates, 1.0, 10.0)


def flag_rates(
    members: int,
    noise: float,
    step: float,
    bias: dict[int, float] | None = None,
    self_bias: dict[int, float] | None = None,
    seed: int = 1,
) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    history: list[tuple[float, int]] = []
    counts = {
        "harsh": 0,
        "generous": 0,
        "self": 0,
        "target_harsh": 0,
        "bystander_generous": 0,
        "target_self": 0,
        "window": 0,
    }
    for start in range(0, SESSIONS, BATCH):
        batch = [simulated(rng, members, noise, step, bias or {}, self_bias or {}) for _ in range(BATCH)]
        analyses = audit_batch(batch, tenants=["t"] * BATCH, history={"t": history[-49:]})
        history.extend(a.noise_contribution for a in analyses)
        for a in analyses:
            audit = a.audit
            counts["harsh"] += bool(audit.harsh_reviewers)
            counts["generous"] += bool(audit.generous_reviewers)
            counts["self"] += bool(audit.self_preferring_reviewers)
            counts["target_harsh"] += "m0" in audit.harsh_reviewers
            counts["bystander_generous"] += bool(set(audit.generous_reviewers) - {"m0"})
            counts["target_self"] += "m0" in audit.self_preferring_reviewers
            counts["window"] += audit.noise_source == "window"
    return {name: count / SESSIONS for name, count in counts.items()}


@pytest.mark.parametrize("members", [3, 4, 5])
@pytest.mark.parametrize("noise, step", [(0.8, 1.0), (1.2, 1.0), (1.0, 0.5)])
def test_each_flag_fires_in_at_most_5_percent_of_null_sessions(members, noise, step):
    rates = flag_rates(members, noise, step, seed=members)
    assert max(rates["harsh"], rates["generous"], rates["self"]) <= NULL_LIMIT, rates
    assert rates["window"] > 0.98  # after its first sessions the tenant's window gives the noise


@pytest.mark.parametrize("members, recall, ambiguous", [(3, 0.47, 0.15), (4, 0.81, 0.07), (5, 0.94, 0.02)])
def test_a_harsh_reviewer_is_found_as_often_as_the_issues_study_and_its_peers_are_rarely_called_generous(
    members, recall, ambiguous
):
    """A -2.5 point reviewer lifts each peer's leave-one-out offset by 2.5 / (M - 2); only the
    session's largest offset is flagged, so a peer is called generous only where noise carried it
    past the harsh one: at three members one harsh reviewer and two generous ones are the same
    contrast (measured 13 / 6 / 1.4% of sessions at M = 3 / 4 / 5, bench/RESULTS.md)."""
    rates = flag_rates(members, 1.0, 1.0, bias={0: -2.5}, seed=10 + members)
    assert rates["target_harsh"] >= recall, rates
    assert rates["bystander_generous"] <= ambiguous, rates


@pytest.mark.parametrize("members", [3, 5])
def test_a_generous_reviewer_is_not_read_as_self_preferring(members):
    rates = flag_rates(members, 1.0, 1.0, bias={0: 2.0}, seed=20 + members)
    assert rates["target_self"] <= 0.05, rates


def test_self_preference_is_found_where_the_evidence_is():
    rates = flag_rates(5, 1.0, 1.0, self_bias={0: 4.0}, seed=30)
    assert rates["target_self"] >= 0.6, rates
