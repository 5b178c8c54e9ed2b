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

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bias_audit.analysis.judge_games import JudgedGame  # noqa: E402
from bias_audit.analysis.judges import judge_report  # noqa: E402

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
            games.append(JudgedGame(judge="sim", prompt=None, item=str(i), models=("m", "m"), level=level,
                                    p_first=float(pick_first), game=game,
                                    lengths=(int(lengths[i, shown[0]]), int(lengths[i, shown[1]]))))
    return games


def flag_rates(runs: int, verdicts: int, seed: int, **bias: float) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    counts = dict.fromkeys(TESTS, 0)
    for _ in range(runs):
        [judge] = judge_report(simulate(rng, verdicts, **bias)).judges
        for name in TESTS:
            counts[name] += bool(judge.metrics[name].flagged)
    return {name: counts[name] / runs for name in TESTS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--verdicts", type=int, default=500)
    args = parser.parse_args()
    table = Table(title=f"Judge flags over {args.runs} simulated judges of {args.verdicts} verdicts each "
                        "(share of runs flagged)")
    table.add_column("judge")
    for name in TESTS:
        table.add_column(name, justify="right")
    cases = [("unbiased (the null)", {}), ("first shown 55%", {"first": 0.55}), ("first shown 60%", {"first": 0.60}),
             ("longer answer 60%", {"longer": 0.60})]
    for seed, (label, bias) in enumerate(cases):
        rates = flag_rates(args.runs, args.verdicts, seed, **bias)
        table.add_row(label, *(f"{rates[name]:.1%}" for name in TESTS))
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
