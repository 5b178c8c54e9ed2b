"""Calibrated confidence on simulated reviews whose true confirm probability is known.

    python bench/calibration.py [REVIEWS] [SEED]   # defaults: 4000 7

Evidence uniform on 0-1; a reviewer confirms with probability truth(evidence) for three truths
(reviewers stricter than the analyzers, as strict, and more lenient). Prints, per truth, the Brier
score on held-out reviews (one item in four) when the evidence is read as the probability (the
analyzers' rule) and after `fit_calibration`, and the held-out reliability table after. Record
the tables in bench/RESULTS.md.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console
from rich.table import Table

from bias_audit.analysis.calibration import Reviewed, fit_calibration

TRUTHS = {
    "stricter: evidence^3": lambda s: s**3,
    "as strict: evidence": lambda s: s,
    "more lenient: sqrt(evidence)": lambda s: s**0.5,
}


def main(reviews: int = 4000, seed: int = 7) -> None:
    console = Console(width=140)
    summary = Table(title=f"Brier score on held-out reviews ({reviews} simulated reviews per truth)")
    for column in ("reviewers confirm with p =", "held out", "Brier: evidence as p (rule)", "Brier: calibrated"):
        summary.add_column(column, justify="right")
    details = []
    for name, truth in TRUTHS.items():
        rng = random.Random(seed)
        rows = []
        for index in range(reviews):
            evidence = rng.random()
            rows.append(Reviewed(f"{name}-{index}", "t", evidence, rng.random() < truth(evidence)))
        _, [entry] = fit_calibration(rows)
        summary.add_row(name, str(entry["test"]), f"{entry['brier_before']:.4f}", f"{entry['brier_after']:.4f}")
        table = Table(title=f"reliability after calibration, held out: {name}")
        for column in ("bin", "n", "predicted", "observed"):
            table.add_column(column, justify="right")
        for row in entry["reliability_after"]:
            table.add_row(row["bin"], str(row["n"]), f"{row['predicted']:.3f}", f"{row['observed']:.3f}")
        details.append(table)
    console.print(summary)
    for table in details:
        console.print(table)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
