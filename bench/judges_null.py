"""How often the judge report's flags fire: on unbiased judges (the null), and on judges with a
known bias (its power). Prints a table; the figures go in bench/RESULTS.md.

    python bench/judges_null.py [--runs 1000] [--verdicts 500]

A simulated judge sees items of two answers with a quality gap (normal) and independent word
counts, each item in both orders (games 1 and 2). Unbiased: it prefers the first shown with
probability sigmoid(quality gap), nothing else. Position bias b: with probability 2(b - 0.5) it
picks the first shown outright, else as the unbiased judge: a first-position rate of b. Length
bias: the same, picking the longer answer outright.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console
from rich.table import Table

from bias_audit.analysis.judge_games import JudgedGame
from bias_audit.analysis.judges import judge_report

TESTS = ("first_position_rate", "preference_fairness", "length_preference")


def simulate(rng: np.random.Generator, verdicts: int, *, first: float = 0.5, longer: float = 0.5) -> list[JudgedGame]:
    items = verdicts // 2
    gap = rng.normal(0.0, 1.0, items)  # answer A's quality minus B's
    lengths = rng.lognormal(5.0, 0.5, (items, 2)).astype(int) + 1
    games = []
    for i in range(items):
        for game in (1, 2):
            shown = (0, 1) if game == 1 else (1, 0)  # which answer is first
            roll = rng.random()
            if roll < 2 * (first - 0.5):
                pick_first = True
            elif roll < 2 * (first - 0.5) + 2 * (longer - 0.5):
                pick_first = lengths[i, shown[0]] > lengths[i, shown[1]]
            else:
                quality_first = gap[i] if shown[0] == 0 else -gap[i]
                pick_first = rng.random() < 1.0 / (1.0 + math.exp(-quality_first))
            level = 1 if pick_first else -1
            games.append(
                JudgedGame(
                    judge="sim",
                    prompt=None,
                    item=str(i),
                    models=("m", "m"),
                    level=level,
                    p_first=float(pick_first),
                    game=game,
                    lengths=(int(lengths[i, shown[0]]), int(lengths[i, shown[1]])),
                )
            )
    return games


def flag_rates(runs: int, verdicts: int, seed: int, **bias: float) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    counts = dict.fromkeys(TESTS, 0)
    for _ in range(runs):
        [judge] = judge_report(simulate(rng, verdicts, **bias)).judges
        for name in TESTS:
            counts[name] += bool(judge.metrics[name].flagged)
    return {name: counts[name] / runs for name in TESTS}


def drift_alerts(judges: int, verdicts: int, seed: int, *, shift_at: int | None = None) -> tuple[int, list[int]]:
    """Drift alerts on simulated judges through the verdict consumer (in-memory window): the
    firings of steady judges, or with shift_at each judge's verdicts until its first-position rate,
    moved from 0.5 to 0.7 at that verdict, fired."""
    import asyncio
    import json
    import random

    from bias_audit.consumers.envelope import Delivery
    from bias_audit.consumers.verdicts import VerdictProcessor
    from bias_audit.state.alert_state import MemoryAlertState
    from bias_audit.state.base import WindowPolicy
    from bias_audit.state.memory_window import MemoryWindow

    policy = WindowPolicy(max_sessions=2_000, max_days=30, recent_sessions=200, keep_sums=True)
    firings, delays = 0, []
    for j in range(judges):
        rng = random.Random(seed * 1000 + j)
        processor = VerdictProcessor(window=MemoryWindow(policy), store=None, alert_state=MemoryAlertState())
        found = None
        for start in range(0, verdicts, 100):
            batch = []
            for n in range(start, start + 100):
                rate = 0.7 if shift_at is not None and n >= shift_at else 0.5
                first = rng.random() < rate
                event = {
                    "verdict_id": f"v{n}",
                    "timestamp": "2026-11-20T10:30:00Z",
                    "judge": {"model": f"j{j}"},
                    "item_id": f"i{n // 2}",
                    "game": n % 2 + 1,
                    "candidates": [{"model": "a", "length_words": 10}, {"model": "b", "length_words": 10}],
                    "verdict": {"kind": "pairwise", "preference": "A>B" if first else "B>A"},
                }
                batch.append(
                    Delivery(delivery_id=str(n), body=json.dumps(event).encode(), source_topic="judge.verdicts")
                )
            for n, outcome in zip(range(start, start + 100), asyncio.run(processor.process(batch))):
                fired = [a for a in outcome.alerts or () if a.status == "firing"]
                firings += len(fired)
                if fired and found is None and shift_at is not None and n >= shift_at:
                    found = n - shift_at
        if shift_at is not None:
            delays.append(found if found is not None else -1)
    return firings, delays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--verdicts", type=int, default=500)
    args = parser.parse_args()
    table = Table(
        title=f"Judge flags over {args.runs} simulated judges of {args.verdicts} verdicts each (share of runs flagged)"
    )
    table.add_column("judge")
    for name in TESTS:
        table.add_column(name, justify="right")
    cases = [
        ("unbiased (the null)", {}),
        ("first shown 55%", {"first": 0.55}),
        ("first shown 60%", {"first": 0.60}),
        ("longer answer 60%", {"longer": 0.60}),
    ]
    for seed, (label, bias) in enumerate(cases):
        rates = flag_rates(args.runs, args.verdicts, seed, **bias)
        table.add_row(label, *(f"{rates[name]:.1%}" for name in TESTS))
    Console(width=140).print(table)
    judges, verdicts = 20, 5_000
    steady, _ = drift_alerts(judges, verdicts, seed=1)
    _, delays = drift_alerts(judges, 4_000, seed=2, shift_at=2_000)
    caught = sorted(d for d in delays if d >= 0)
    drift = Table(title="Drift alerts (window 2,000 verdicts, recent 200), through the verdict consumer")
    for column in ("case", "result"):
        drift.add_column(column)
    drift.add_row(f"steady judges: firings over {judges} x {verdicts:,} verdicts", str(steady))
    drift.add_row(
        f"first-position rate 0.5 -> 0.7: caught (of {judges}), verdicts until the alert (median, max)",
        f"{len(caught)}; {caught[len(caught) // 2] if caught else '-'}, {caught[-1] if caught else '-'}",
    )
    Console(width=140).print(drift)


if __name__ == "__main__":
    main()
