"""Balanced presentation orders (issue 18, item 8): the Williams design's balance counted
directly, determinism per seed, the one-line reasons, the CLI and POST /presentation-orders,
and the report's randomization check recognising the design."""

from __future__ import annotations

import json
from collections import Counter
from itertools import pairwise

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from bias_audit.analysis.cross_session import WindowThresholds, randomization_balance
from bias_audit.analysis.digest import SessionDigest
from bias_audit.analysis.orders import OrdersError, presentation_orders, williams_rows
from bias_audit.analysis.window_cells import window_cells
from bias_audit.worker.cli import app
from bias_audit.worker.composition import api_app
from bias_audit.worker.settings import Settings


@pytest.mark.parametrize("n", range(2, 10))
def test_a_williams_design_puts_each_symbol_at_each_position_and_after_each_other_equally(n):
    rows = williams_rows(n)
    copies = 1 if n % 2 == 0 else 2
    assert len(rows) == copies * n and all(sorted(row) == list(range(n)) for row in rows)
    for position in range(n):
        assert Counter(row[position] for row in rows) == {s: copies for s in range(n)}
    follows = Counter(pair for row in rows for pair in pairwise(row))
    assert follows == {(a, b): copies for a in range(n) for b in range(n) if a != b}


def test_orders_are_deterministic_for_a_seed_and_balanced_over_a_cycle():
    models, reviewers = ["a", "b", "c", "d", "e"], ["x", "y"]
    planned = presentation_orders(models, reviewers, seed=42, sessions=10)  # each reviewer: one cycle of 2 x 5 rows
    assert planned == presentation_orders(models, reviewers, seed=42, sessions=10)
    assert planned != presentation_orders(models, reviewers, seed=43, sessions=10)
    assert [(o.session, o.reviewer) for o in planned] == [(s, r) for s in range(10) for r in reviewers]
    for reviewer in reviewers:
        mine = [o for o in planned if o.reviewer == reviewer]
        for position in range(5):
            assert Counter(o.order[position] for o in mine) == {m: 2 for m in models}
        assert Counter(p for o in mine for p in pairwise(o.order)) == {
            (a, b): 2 for a in models for b in models if a != b
        }
    assert planned[0].label_to_model()["Response A"] == {"model": planned[0].order[0], "display_index": 0}


def test_random_orders_are_seeded_permutations():
    planned = presentation_orders(["a", "b", "c"], ["x"], seed=1, design="random", sessions=20)
    assert all(sorted(o.order) == ["a", "b", "c"] for o in planned)
    assert planned == presentation_orders(["a", "b", "c"], ["x"], seed=1, design="random", sessions=20)
    assert len({o.order for o in planned}) > 1


@pytest.mark.parametrize(
    "models, reviewers, design, sessions, reason",
    [
        (["a"], ["x"], "williams", 1, "at least two models"),
        (["a", "a"], ["x"], "williams", 1, "model 'a' is listed twice"),
        (["a", "b"], [], "williams", 1, "at least one reviewer"),
        (["a", "b"], ["x"], "latin", 1, "design must be one of williams, random"),
        (["a", "b"], ["x"], "williams", 0, "sessions must be 1..10000"),
    ],
)
def test_a_bad_request_gets_its_reason(models, reviewers, design, sessions, reason):
    with pytest.raises(OrdersError, match=reason):
        presentation_orders(models, reviewers, seed=1, design=design, sessions=sessions)


def test_the_cli_prints_json_orders_and_refuses_a_repeated_model_with_exit_2():
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "orders",
            "--models",
            "a,b,c",
            "--reviewers",
            "x",
            "--reviewers",
            "y",
            "--seed",
            "7",
            "--sessions",
            "3",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["design"] == "williams" and document["cycle"] == 6 and len(document["orders"]) == 6
    assert [o.order for o in presentation_orders(["a", "b", "c"], ["x", "y"], 7, sessions=3)] == [
        tuple(o["order"]) for o in document["orders"]
    ]
    refused = runner.invoke(app, ["orders", "--models", "a,b,a", "--reviewers", "x", "--seed", "7"])
    assert refused.exit_code == 2 and "model 'a' is listed twice" in refused.output


def test_the_api_answers_orders_and_problem_json_for_a_bad_request(tmp_path):
    client = TestClient(
        api_app(Settings(data_dir=tmp_path, consumer_name="o")),
        base_url="http://localhost",
    )
    reply = client.post(
        "/presentation-orders", json={"models": ["a", "b", "c", "d"], "reviewers": ["x", "y"], "seed": 3, "sessions": 2}
    )
    assert reply.status_code == 200
    body = reply.json()
    assert body["cycle"] == 4 and [o["order"] for o in body["orders"]] == [
        list(o.order) for o in presentation_orders(["a", "b", "c", "d"], ["x", "y"], 3, sessions=2)
    ]
    bad = client.post("/presentation-orders", json={"models": ["a", "a"], "reviewers": ["x"], "seed": 3})
    assert bad.status_code == 422 and bad.headers["content-type"].startswith("application/problem+json")
    assert "model 'a' is listed twice" in bad.json()["detail"]


def _sessions_from(planned, models: list[str]) -> list[SessionDigest]:
    by_session: dict[int, list] = {}
    for o in planned:
        by_session.setdefault(o.session, []).append(o)
    digests = []
    for session, reviews in by_session.items():
        reviewers = tuple(o.reviewer for o in reviews)
        cells = [
            (r, models.index(m), position, 0.5, False)
            for r, o in enumerate(reviews)
            for position, m in enumerate(o.order)
        ]
        digests.append(
            SessionDigest.from_cells(
                cells,
                session_id=f"s{session}",
                tenant_id="t",
                ts_ms=1_790_000_000_000 + session,
                trace_id=None,
                config_version=None,
                reviewers=reviewers,
                models=tuple(models),
                lengths=(1.0,) * len(models),
                length_unit="words",
            )
        )
    return digests


def test_the_randomization_check_recognises_a_williams_design_and_not_random_orders():
    models, reviewers = ["a", "b", "c", "d"], ["r1", "r2", "r3", "r4"]
    williams = randomization_balance(
        window_cells(_sessions_from(presentation_orders(models, reviewers, seed=5, sessions=12), models)),
        WindowThresholds(),
    )
    assert williams.balanced and williams.carryover_balanced and not williams.shared
    assert williams.counts == [[48 // 4] * 4] * 4  # 12 sessions x 4 reviewers: each model 12 times at each position
    shuffled = randomization_balance(
        window_cells(
            _sessions_from(presentation_orders(models, reviewers, seed=5, design="random", sessions=12), models)
        ),
        WindowThresholds(),
    )
    assert not shuffled.balanced and not shuffled.carryover_balanced


def test_the_report_says_the_design_is_balanced():
    from bias_audit.analysis.tenant_report import tenant_report
    from bias_audit.reports.html import render_html
    from bias_audit.schemas.report import BiasReport, ReportInputs

    models, reviewers = ["a", "b", "c", "d"], ["r1", "r2", "r3", "r4"]
    tenant = tenant_report(_sessions_from(presentation_orders(models, reviewers, seed=5, sessions=12), models))
    report = BiasReport(
        generated_at="2026-11-23T00:00:00Z",
        window_sessions=None,
        window_days=None,
        inputs=ReportInputs(
            sources=[], files=0, lines=0, records=0, sessions_read=12, duplicate_sessions=0, skipped_lines=0
        ),
        tenants=[tenant],
    )
    assert "balanced design (Williams: carryover too)" in render_html(report)


@pytest.mark.parametrize("reviewers", [4, 5, 8])
def test_within_each_reviewer_every_model_takes_every_position_equally_over_a_cycle(reviewers):
    models = ["a", "b", "c", "d"]
    names = models + [f"x{i}" for i in range(reviewers - 4)]  # the first four review their own models too
    planned = presentation_orders(models, names[:reviewers], seed=7, sessions=8)  # two cycles of 4 rows
    for reviewer in names[:reviewers]:
        mine = [o.order for o in planned if o.reviewer == reviewer]
        for position in range(4):
            assert Counter(order[position] for order in mine) == {m: 2 for m in models}
        if reviewer in models:  # its own answer moves: never pinned to one position
            assert len({order.index(reviewer) for order in mine}) == 4


def test_four_members_reviewing_four_answers_no_longer_repeat_the_same_rows():
    planned = presentation_orders(["a", "b", "c", "d"], ["a", "b", "c", "d"], seed=7, sessions=4)
    rows_of_a = [o.order for o in planned if o.reviewer == "a"]
    assert len(set(rows_of_a)) == 4  # each session another row of the design


def _old_rotation(models, reviewers, sessions):
    """The former rule, rows moving on by the number of reviewers: with four reviewers of four
    models each reviewer sees one row every session."""
    from bias_audit.analysis.orders import ReviewerOrder

    rows = williams_rows(len(models))
    return [
        ReviewerOrder(s, r, tuple(models[i] for i in rows[(s * len(reviewers) + k) % len(rows)]))
        for s in range(sessions)
        for k, r in enumerate(reviewers)
    ]


def test_the_randomization_check_sees_position_confounded_within_reviewers():
    models, reviewers = ["a", "b", "c", "d"], ["r1", "r2", "r3", "r4"]
    pinned = randomization_balance(
        window_cells(_sessions_from(_old_rotation(models, reviewers, 12), models)), WindowThresholds()
    )
    assert pinned.balanced  # pooled over reviewers it looks perfect ...
    assert not pinned.reviewers_balanced and pinned.confounded_reviewers == reviewers  # ... within each it is not
    assert pinned.reviewer_degrees_of_freedom == 4 * 9 and pinned.reviewer_p_value < 1e-10
    rotated = randomization_balance(
        window_cells(_sessions_from(presentation_orders(models, reviewers, seed=5, sessions=12), models)),
        WindowThresholds(),
    )
    assert rotated.reviewers_balanced and rotated.confounded_reviewers == [] and rotated.reviewer_chi_square == 0.0
