"""How often the recall interval estimated from reviews covers the true recall: simulated tenants
with known labels, a share of the flagged answers reviewed in random order and a uniform sample of
the unflagged ones, over a grid of prevalence and detector recall.

    python bench/review_recall.py [--runs 1000] [--answers 5000] [--sample 0.02]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console
from rich.table import Table

from bias_audit.analysis.review_estimates import detector_quality


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--answers", type=int, default=5000)
    parser.add_argument("--sample", type=float, default=0.02)
    parser.add_argument("--fpr", type=float, default=0.05, help="the detector's false-positive rate")
    parser.add_argument("--reviewed", type=float, default=0.3, help="share of flagged answers reviewed")
    args = parser.parse_args()
    table = Table(
        title=f"recall from reviews: {args.answers} answers, {args.sample:.0%} of unflagged sampled, "
        f"{args.reviewed:.0%} of flagged reviewed, {args.runs} runs a cell"
    )
    for column in ("prevalence", "detector recall", "coverage of the 95% interval", "median width", "target"):
        table.add_column(column)
    rng = np.random.default_rng(0)
    for prevalence in (0.02, 0.05, 0.2, 0.5):
        for recall in (0.3, 0.7, 0.95):
            covered, widths = 0, []
            for _ in range(args.runs):
                biased = rng.random(args.answers) < prevalence
                flagged = np.where(biased, rng.random(args.answers) < recall, rng.random(args.answers) < args.fpr)
                truth = (flagged & biased).sum() / max(1, biased.sum())
                reviewed = flagged & (rng.random(args.answers) < args.reviewed)
                sampled = ~flagged & (rng.random(args.answers) < args.sample)
                quality = detector_quality(
                    "t",
                    flagged=int(flagged.sum()),
                    unflagged=int((~flagged).sum()),
                    confirmed=int((reviewed & biased).sum()),
                    dismissed=int((reviewed & ~biased).sum()),
                    sampled_marked=list(biased[sampled]),
                    sampled_inclusion=[args.sample] * int(sampled.sum()),
                    seed=int(rng.integers(1 << 30)),
                    draws=2_000,
                )
                ci = quality.recall.ci
                if ci is not None:
                    covered += ci[0] <= truth <= ci[1]
                    widths.append(ci[1] - ci[0])
            table.add_row(
                f"{prevalence:.0%}",
                f"{recall:.0%}",
                f"{covered / args.runs:.1%}",
                f"{np.median(widths):.2f}" if widths else "-",
                ">= 90%",
            )
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
