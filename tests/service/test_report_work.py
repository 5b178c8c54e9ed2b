"""How the API's report work is held to its bounds, as mechanisms: a caller's slot lasts as long
as the work it started, and a report's time budget stops the work at the next step."""

from __future__ import annotations

import asyncio
import threading
import time

import psycopg
import pytest

from bias_audit.analysis.judge_games import JudgedGame
from bias_audit.analysis.judges import judge_report
from bias_audit.reports.budget import Budget, OutOfTime
from bias_audit.service.state import ReportSlots
from bias_audit.storage.postgres import connect


def test_a_slot_is_held_until_the_work_ends_even_when_its_request_is_cancelled():
    async def scenario() -> None:
        slots = ReportSlots()
        release = threading.Event()
        ended = threading.Event()

        def build(budget: Budget) -> str:
            release.wait(10)
            ended.set()
            return "report"

        assert slots.take("audrey")
        request = asyncio.ensure_future(slots.run("audrey", build))
        await asyncio.sleep(0.05)
        request.cancel()  # the client went away; its thread cannot be stopped
        with pytest.raises(asyncio.CancelledError):
            await request
        assert slots.busy == {"audrey"} and not slots.take("audrey")
        release.set()
        for _ in range(200):
            if not slots.busy:
                break
            await asyncio.sleep(0.01)
        assert ended.is_set() and slots.busy == set() and slots.take("audrey")

    asyncio.run(scenario())


def test_a_failed_build_gives_its_slot_back_and_the_server_builds_at_most_its_capacity():
    async def scenario() -> None:
        slots = ReportSlots(capacity=2)

        def broken(budget: Budget) -> None:
            raise ValueError("no window")

        assert slots.take("a")
        with pytest.raises(ValueError, match="no window"):
            await slots.run("a", broken)
        assert slots.busy == set()
        assert slots.take("a") and slots.take("b") and not slots.take("c")

    asyncio.run(scenario())


def games(judges: int) -> list[JudgedGame]:
    return [
        JudgedGame(judge=f"judge-{j}", prompt=None, item=f"i{i}", models=("x", "y"), level=1, game=1)
        for j in range(judges)
        for i in range(3)
    ]


def test_the_judge_report_asks_its_checkpoint_between_steps_and_stops_where_it_raises():
    asked = []
    judge_report(games(3), checkpoint=lambda: asked.append(1))
    assert len(asked) == 3 + 2  # before each judge, before the win rates, before the agreement

    def budget_of_two() -> None:
        asked.append(1)
        if len(asked) > 2:
            raise OutOfTime("spent")

    asked.clear()
    with pytest.raises(OutOfTime):
        judge_report(games(3), checkpoint=budget_of_two)
    assert len(asked) == 3


def test_a_budget_is_spent_once_its_seconds_have_passed():
    budget = Budget(0.05)
    budget.check()
    assert 0 < budget.statement_timeout_ms() <= 50
    time.sleep(0.06)
    with pytest.raises(OutOfTime, match="time budget of 0.05 s"):
        budget.check()
    assert budget.statement_timeout_ms() == 1
    assert Budget().statement_timeout_ms() == 0  # no budget: no statement timeout


@pytest.mark.postgres
def test_the_stores_statements_stop_at_what_is_left_of_the_budget(postgres_url):
    with connect(postgres_url, statement_timeout_ms=100) as connection:
        with pytest.raises(psycopg.errors.QueryCanceled):
            connection.execute("SELECT pg_sleep(2)")
    with connect(postgres_url) as connection:
        assert connection.execute("SELECT pg_sleep(0.2), 1").fetchone()[1] == 1
